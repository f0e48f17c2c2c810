// Float remainder `%` (and `%=`): Rust's `%` on floats is fmod, exact, with the sign of the
// dividend (so a zero result keeps the dividend's sign), NaN for x % 0 and inf % y, and x
// itself for finite x % inf.
#[kernel]
pub fn rem_f64(a: &[f64], b: &[f64], out: &mut [f64]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = a[i] % b[i];
    }
}

#[kernel]
pub fn rem_f32(a: &[f32], b: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = a[i] % b[i];
    }
}

#[kernel]
pub fn rem_assign_f32(a: &mut [f32], by: f32) {
    let i = global_id_x();
    if i < a.len() {
        a[i] %= by;
    }
}
