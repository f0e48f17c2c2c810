// atomic_max / atomic_min / atomic_add on every numeric element type, all threads contending
// for element 0; the old values are written out per thread.
#[kernel]
pub fn minmax_i32(x: &[i32], mx: &mut [i32], mn: &mut [i32], old: &mut [i32]) {
    let i = global_id_x();
    if i < x.len() {
        old[i] = atomic_max(&mut mx[0], x[i]);
        atomic_min(&mut mn[0], x[i]);
    }
}

#[kernel]
pub fn minmax_u32(x: &[u32], mx: &mut [u32], mn: &mut [u32]) {
    let i = global_id_x();
    if i < x.len() {
        atomic_max(&mut mx[0], x[i]);
        atomic_min(&mut mn[0], x[i]);
    }
}

#[kernel]
pub fn minmax_i64(x: &[i64], mx: &mut [i64], mn: &mut [i64]) {
    let i = global_id_x();
    if i < x.len() {
        atomic_max(&mut mx[0], x[i]);
        atomic_min(&mut mn[0], x[i]);
    }
}

#[kernel]
pub fn minmax_u64(x: &[u64], mx: &mut [u64], mn: &mut [u64]) {
    let i = global_id_x();
    if i < x.len() {
        atomic_max(&mut mx[0], x[i]);
        atomic_min(&mut mn[0], x[i]);
    }
}

#[kernel]
pub fn minmax_f32(x: &[f32], mx: &mut [f32], mn: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() {
        atomic_max(&mut mx[0], x[i]);
        atomic_min(&mut mn[0], x[i]);
    }
}

#[kernel]
pub fn minmax_f64(x: &[f64], mx: &mut [f64], mn: &mut [f64]) {
    let i = global_id_x();
    if i < x.len() {
        atomic_max(&mut mx[0], x[i]);
        atomic_min(&mut mn[0], x[i]);
    }
}

// Sums on every type that atomic_add takes (integers are summed exactly; floats hold
// integer values so any order gives the same sum).
#[kernel]
pub fn add_all_types(n: usize, si32: &mut [i32], su32: &mut [u32], si64: &mut [i64], su64: &mut [u64], sf32: &mut [f32], sf64: &mut [f64], susize: &mut [usize]) {
    let i = global_id_x();
    if i < n {
        atomic_add(&mut si32[0], i as i32 - 50);
        atomic_add(&mut su32[0], i as u32);
        atomic_add(&mut si64[0], -(i as i64));
        atomic_add(&mut su64[0], (i as u64) << 33);
        atomic_add(&mut sf32[0], (i % 7) as f32);
        atomic_add(&mut sf64[0], i as f64 * 0.5);
        atomic_add(&mut susize[i % susize.len()], 1);
    }
}
