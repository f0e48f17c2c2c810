struct Point { x: f32, y: f32 }
impl Point { fn shift(&mut self, d: f32) { self.x += d; } }
#[kernel]
pub fn k(out: &mut [f32]) {
    let p = Point { x: 1.0, y: 2.0 };
    p.shift(1.0);
    out[0] = p.x;
}
