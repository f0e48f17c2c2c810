#[derive(Clone, Copy)]
enum Mode {
    Add,
    Mul,
}

#[kernel]
pub fn k(out: &mut [u32], m: Mode) {
    if m == Mode::Add {
        out[0] = 1;
    }
}
