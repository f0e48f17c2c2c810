mod helpers {
    pub fn one() -> f32 {
        1.0
    }
}

use helpers::two;

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = two();
}
