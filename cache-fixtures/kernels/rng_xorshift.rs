// Counter-based random numbers: xorshift32 and splitmix64, bit-exact integer arithmetic with
// shifts, xors and wrapping multiplies.
fn xorshift32(mut x: u32) -> u32 {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    x
}

fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

#[kernel]
pub fn random_u32(seed: u32, rounds: u32, out: &mut [u32]) {
    let i = global_id_x();
    if i < out.len() {
        let mut x = seed ^ (i as u32 + 1);
        for _ in 0..rounds {
            x = xorshift32(x);
        }
        out[i] = x;
    }
}

#[kernel]
pub fn random_u64_unit(seed: u64, out: &mut [u64], unit: &mut [f64]) {
    let i = global_id_x();
    if i < out.len() {
        let r = splitmix64(seed + i as u64);
        out[i] = r;
        unit[i] = (r >> 11) as f64 * (1.0 / 9007199254740992.0);
    }
}
