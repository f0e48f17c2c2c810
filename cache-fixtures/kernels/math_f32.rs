// Every float math method on `f32`; column k of `out` holds function k (see the list in the
// semantics test). Inputs are in (0, 1) so that every function is defined.
#[kernel]
pub fn math_f32(x: &[f32], y: &[f32], out: &mut Array<f32, 2>) {
    let i = global_id_x();
    if i < x.len() {
        let a = x[i];
        let b = y[i];
        out[[i, 0]] = (a - b).abs();
        out[[i, 1]] = a.sqrt();
        out[[i, 2]] = (a * 10.0).floor();
        out[[i, 3]] = (a * 10.0).ceil();
        out[[i, 4]] = (a * 10.0).round();
        out[[i, 5]] = (a * -10.0).trunc();
        out[[i, 6]] = a.min(b);
        out[[i, 7]] = a.max(b);
        out[[i, 8]] = a.mul_add(b, 0.25);
        out[[i, 9]] = a.exp();
        out[[i, 10]] = a.exp2();
        out[[i, 11]] = a.ln();
        out[[i, 12]] = a.log2();
        out[[i, 13]] = a.log10();
        out[[i, 14]] = a.sin();
        out[[i, 15]] = a.cos();
        out[[i, 16]] = a.tan();
        out[[i, 17]] = a.asin();
        out[[i, 18]] = a.acos();
        out[[i, 19]] = a.atan();
        out[[i, 20]] = a.atan2(b - 0.5);
        out[[i, 21]] = a.sinh();
        out[[i, 22]] = a.cosh();
        out[[i, 23]] = a.tanh();
        out[[i, 24]] = a.powf(b);
        out[[i, 25]] = (a + 1.0).powi(i as i32 % 5 - 2);
        out[[i, 26]] = (a - 0.5).cbrt();
        out[[i, 27]] = a.hypot(b);
    }
}
