#[derive(Clone, Copy)]
struct Pair {
    a: u32,
    b: u32,
}

#[kernel]
pub fn k(pairs: &mut [Pair], out: &mut [u32]) {
    let p = atomic_load(&pairs[0]);
    out[0] = p.a + p.b;
}
