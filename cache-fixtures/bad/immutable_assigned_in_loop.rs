// A `let` without `mut`, assigned again in the next iteration of the loop.
#[kernel]
pub fn k(out: &mut [u32]) {
    let last;
    for i in 0..out.len() {
        last = out[i];
        out[i] = last + 1;
    }
}
