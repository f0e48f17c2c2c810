struct Point { x: f32, y: f32 }
#[kernel]
pub fn k(out: &mut [f32]) {
    let p = Point { x: 1.0, z: 2.0 };
    out[0] = p.x;
}
