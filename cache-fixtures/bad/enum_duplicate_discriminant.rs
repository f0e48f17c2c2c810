#[repr(u8)]
enum Level {
    Low = 1,
    Mid,
    High = 2,
}

#[kernel]
pub fn k(out: &mut [u8]) {
    out[0] = Level::High as u8;
}
