#[derive(Clone, Copy)]
enum Mode {
    Add,
    Mul,
}

#[kernel]
pub fn k(out: &mut [u32], x: u32) {
    let m = x as Mode;
    out[0] = m as u32;
}
