// Every binary and unary operator, on signed, unsigned, float and bool operands. Defined
// behaviour: x / 0 == 0, x % 0 == 0, MIN / -1 wraps, shift amounts are masked, arithmetic wraps.
#[kernel]
pub fn int_ops_i32(a: &[i32], b: &[i32], out: &mut Array<i32, 2>) {
    let i = global_id_x();
    if i < a.len() {
        let x = a[i];
        let y = b[i];
        out[[i, 0]] = x + y;
        out[[i, 1]] = x - y;
        out[[i, 2]] = x * y;
        out[[i, 3]] = x / y;
        out[[i, 4]] = x % y;
        out[[i, 5]] = x & y;
        out[[i, 6]] = x | y;
        out[[i, 7]] = x ^ y;
        out[[i, 8]] = x << y;
        out[[i, 9]] = x >> y;
        out[[i, 10]] = -x;
        out[[i, 11]] = !x;
    }
}

#[kernel]
pub fn int_ops_u64(a: &[u64], b: &[u64], out: &mut Array<u64, 2>) {
    let i = global_id_x();
    if i < a.len() {
        let x = a[i];
        let y = b[i];
        out[[i, 0]] = x + y;
        out[[i, 1]] = x - y;
        out[[i, 2]] = x * y;
        out[[i, 3]] = x / y;
        out[[i, 4]] = x % y;
        out[[i, 5]] = x & y;
        out[[i, 6]] = x | y;
        out[[i, 7]] = x ^ y;
        out[[i, 8]] = x << y;
        out[[i, 9]] = x >> y;
        out[[i, 10]] = !x;
    }
}

// Shifts whose left and right operands have different types (allowed in Rust).
#[kernel]
pub fn mixed_shifts(a: &[i64], s: &[u32], out: &mut [i64], out_u: &mut [u32]) {
    let i = global_id_x();
    if i < a.len() {
        out[2 * i] = a[i] << s[i];
        out[2 * i + 1] = a[i] >> s[i];
        out_u[i] = 0x8000_0000u32 >> (a[i] & 31);
    }
}

#[kernel]
pub fn float_ops(a: &[f64], b: &[f64], out: &mut Array<f64, 2>) {
    let i = global_id_x();
    if i < a.len() {
        let x = a[i];
        let y = b[i];
        out[[i, 0]] = x + y;
        out[[i, 1]] = x - y;
        out[[i, 2]] = x * y;
        out[[i, 3]] = x / y;
        out[[i, 4]] = x % y;
        out[[i, 5]] = -x;
    }
}

// Comparisons produce bools; bools have ! & | ^ == != and short-circuit && ||.
#[kernel]
pub fn comparisons(a: &[f32], b: &[f32], out: &mut Array<bool, 2>) {
    let i = global_id_x();
    if i < a.len() {
        let x = a[i];
        let y = b[i];
        out[[i, 0]] = x == y;
        out[[i, 1]] = x != y;
        out[[i, 2]] = x < y;
        out[[i, 3]] = x <= y;
        out[[i, 4]] = x > y;
        out[[i, 5]] = x >= y;
        let p = x > 0.0;
        let q = y > 0.0;
        out[[i, 6]] = !p;
        out[[i, 7]] = p & q;
        out[[i, 8]] = p | q;
        out[[i, 9]] = p ^ q;
        out[[i, 10]] = p && q;
        out[[i, 11]] = p || q;
        out[[i, 12]] = p == q;
    }
}

// Short-circuit: the right operand must not run (it would index out of bounds or divide).
#[kernel]
pub fn short_circuit(idx: &[usize], data: &[i32], out: &mut [i32]) {
    let i = global_id_x();
    if i < idx.len() {
        let j = idx[i];
        let in_range = j < data.len() && data[j] > 0;
        let either = j >= data.len() || data[j] % 2 == 0;
        out[i] = (in_range as i32) + 2 * (either as i32);
    }
}
