// Scoping: shadowing with a new type, inner blocks, `mut` kernel parameters, assignment of a
// `let` declared without a value in both branches of an `if`.
#[kernel]
pub fn shadowing(mut n: usize, x: &[i32], out: &mut [i64]) {
    let i = global_id_x();
    if n > out.len() {
        n = out.len();
    }
    if i < n {
        let v = x[i];            // i32
        let v = v as i64 * 3;    // shadowed as i64
        let w;
        if v > 10 {
            w = v - 10;
        } else {
            w = 10 - v;
        }
        {
            let v = 1000i64;     // inner shadow, gone after the block
            out[i] = v;
        }
        out[i] += v + w;
    }
}

#[kernel]
pub fn mut_params(mut a: f32, mut b: u32, out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        a += i as f32;
        b <<= 1;
        out[i] = a * b as f32;
    }
}
