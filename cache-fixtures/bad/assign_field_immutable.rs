struct P { x: f32 }
#[kernel]
pub fn k(out: &mut [f32]) {
    let p = P { x: 1.0 };
    p.x = 2.0;
    out[0] = p.x;
}
