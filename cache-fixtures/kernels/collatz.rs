// Collatz stopping times: data-dependent `while` loops in u64, capped with a labelled loop.
const CAP: u32 = 1000;

#[kernel]
pub fn collatz_steps(start: &[u64], steps: &mut [u32], peak: &mut [u64]) {
    let i = global_id_x();
    if i < start.len() {
        let mut n = start[i];
        let mut s = 0u32;
        let mut top = n;
        'walk: while n > 1 {
            if s == CAP {
                break 'walk;
            }
            n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
            top = top.max(n);
            s += 1;
        }
        steps[i] = s;
        peak[i] = top;
    }
}
