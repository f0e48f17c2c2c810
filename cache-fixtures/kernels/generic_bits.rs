//! Bit manipulation over any integer type: a mixing step with shifts, `^`, `&`, `|` and `!`,
//! counting the ones of each element (`T::BITS` wide), and a parity mask.

#[kernel]
pub fn mix<T: Int>(x: &mut [T], s: u32) {
    let i = global_id_x();
    if i < x.len() {
        let v = x[i];
        x[i] = (v << s) ^ (v >> (T::BITS - s)) ^ (!v & (v | T::ONE));
    }
}

#[kernel]
pub fn ones<T: Int>(x: &[T], counts: &mut [u32]) {
    let i = global_id_x();
    if i < x.len() {
        let mut n = 0u32;
        for b in 0..T::BITS {
            if (x[i] >> b) & T::ONE == T::ONE {
                n += 1;
            }
        }
        counts[i] = n;
    }
}

#[kernel]
pub fn parity_mask<T: Int>(x: &[T], mask: &mut [T]) {
    let i = global_id_x();
    if i < x.len() {
        mask[i] = if x[i].count_ones() % 2 == 1 { T::MAX } else { T::ZERO };
    }
}
