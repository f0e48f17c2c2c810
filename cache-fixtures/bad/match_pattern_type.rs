#[derive(Clone, Copy)]
enum Mode {
    Add,
    Mul,
}

#[kernel]
pub fn k(out: &mut [u32], x: u32) {
    out[0] = match x {
        Mode::Add => 1,
        _ => 2,
    };
}
