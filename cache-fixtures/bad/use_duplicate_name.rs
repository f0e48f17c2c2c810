mod helpers {
    pub fn one() -> f32 {
        1.0
    }
}

use helpers::one;

fn one() -> f32 {
    2.0
}

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = one();
}
