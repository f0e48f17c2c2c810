// bool arrays: predicates written to `&mut [bool]`, masks read from `&[bool]`, and stream
// compaction of the selected elements (order fixed afterwards by position).
#[kernel]
pub fn predicate(x: &[f32], lo: f32, hi: f32, mask: &mut [bool]) {
    let i = global_id_x();
    if i < x.len() {
        mask[i] = x[i] >= lo && x[i] < hi;
    }
}

#[kernel]
pub fn masked_fill(x: &mut [f32], mask: &[bool], value: f32) {
    let i = global_id_x();
    if i < x.len() && mask[i] {
        x[i] = value;
    }
}

// Each selected element takes a slot with an atomic counter; slots hold (position + 1).
#[kernel]
pub fn compact(mask: &[bool], count: &mut [u32], slots: &mut [u32]) {
    let i = global_id_x();
    if i < mask.len() && mask[i] {
        let s = atomic_add(&mut count[0], 1);
        slots[s as usize] = i as u32 + 1;
    }
}

#[kernel]
pub fn all_any(mask: &Array<bool, 2>, all: &mut [bool], any: &mut [bool]) {
    let r = global_id_x();
    if r < mask.shape(0) {
        let mut a = true;
        let mut b = false;
        for c in 0..mask.shape(1) {
            a = a && mask[[r, c]];
            b = b || mask[[r, c]];
        }
        all[r] = a;
        any[r] = b;
    }
}
