#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Add,
    Mul,
}

#[kernel]
pub fn k(out: &mut [u32]) {
    out[0] = Mode::Sub as u32;
}
