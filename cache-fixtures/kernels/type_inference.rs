// Types inferred from later use: integer literals and unannotated `let`s take their type from
// how the value is used afterwards.
#[kernel]
pub fn infer_from_later_use(x: &[i64], out: &mut [i64]) {
    let i = global_id_x();
    if i < x.len() {
        let s: i64 = x[i];
        let mut j = 0;        // i64, from `s + j` below
        let mut k = 1;        // i64 as well
        while j < 5 {
            j += 1;
            k *= 2;
        }
        out[i] = s + j + k;
    }
}

#[kernel]
pub fn infer_float(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() {
        let mut acc = 0.0;   // f32, from the use below
        let one = 1.0;
        let two;             // declared without a value, assigned later
        two = one + one;
        acc += x[i] * two;
        let three: f32 = 3.0;
        out[i] = acc + three;
    }
}

fn takes_u64(v: u64) -> u64 {
    v + 1
}

#[kernel]
pub fn infer_through_calls(out: &mut [u64], shifts: &mut [u32]) {
    let i = global_id_x();
    if i < out.len() {
        let base = 40;       // u64, from the call
        let r = takes_u64(base);
        let sh = 3;          // u32, from the element type
        shifts[i] = sh;
        out[i] = r << i;
    }
}

// An unsuffixed literal with no other constraint is i32 / f64.
#[kernel]
pub fn default_literal_types(out_i: &mut [i32], out_f: &mut [f64]) {
    let i = global_id_x();
    if i < out_i.len() {
        let a = 7;
        let b = 2.5;
        out_i[i] = a;
        out_f[i] = b;
    }
}
