// Float constants and special values: MAX/MIN/EPSILON/INFINITY/NAN, math constants, NaN
// comparisons, and saturating conversions of special values.
#[kernel]
pub fn float_constants(out32: &mut [f32], out64: &mut [f64]) {
    if global_id_x() == 0 {
        out32[0] = f32::MAX;
        out32[1] = f32::MIN;
        out32[2] = f32::EPSILON;
        out32[3] = f32::MIN_POSITIVE;
        out32[4] = f32::INFINITY;
        out32[5] = f32::NEG_INFINITY;
        out32[6] = f32::consts::PI;
        out32[7] = f32::consts::E;
        out64[0] = f64::MAX;
        out64[1] = f64::consts::TAU;
        out64[2] = f64::consts::SQRT_2;
        out64[3] = f64::consts::LN_2;
        out64[4] = f64::consts::FRAC_PI_4;
        out64[5] = std::f64::consts::LOG2_E;
        out64[6] = core::f64::consts::FRAC_1_SQRT_2;
        out64[7] = f64::EPSILON;
    }
}

#[kernel]
pub fn int_constants(oi32: &mut [i32], ou32: &mut [u32], oi64: &mut [i64], ou64: &mut [u64], ousize: &mut [usize]) {
    if global_id_x() == 0 {
        oi32[0] = i32::MIN;
        oi32[1] = i32::MAX;
        ou32[0] = u32::MAX;
        ou32[1] = u32::BITS;
        oi64[0] = i64::MIN;
        oi64[1] = i64::MAX;
        ou64[0] = u64::MAX;
        ou64[1] = u64::MIN;
        ousize[0] = usize::MAX;
        ousize[1] = usize::BITS as usize;
    }
}

// NaN: every ordered comparison is false and != is true; NaN as an int is 0.
#[kernel]
pub fn nan_behaviour(x: &[f32], flags: &mut Array<bool, 2>, ints: &mut [i32]) {
    let i = global_id_x();
    if i < x.len() {
        let v = x[i];
        let nan = f32::NAN;
        flags[[i, 0]] = v == nan;
        flags[[i, 1]] = v != nan;
        flags[[i, 2]] = v < nan;
        flags[[i, 3]] = v != v;
        ints[i] = (v * nan) as i32;
    }
}
