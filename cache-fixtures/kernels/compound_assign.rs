// Every compound assignment, on locals and on array elements.
#[kernel]
pub fn compound_i32(a: &mut [i32], b: &[i32]) {
    let i = global_id_x();
    if i < a.len() {
        let y = b[i];
        let mut x = a[i];
        x += y;
        x -= 3;
        x *= y;
        x /= 2;
        x %= 1000;
        x &= 0x7fff;
        x |= 0x100;
        x ^= y;
        x <<= 2;
        x >>= 1;
        a[i] = x;
    }
}

#[kernel]
pub fn compound_elements_u32(a: &mut Array<u32, 2>, b: &[u32]) {
    let i = global_id_x();
    if i < a.shape(0) {
        let y = b[i];
        a[[i, 0]] += y;
        a[[i, 1]] -= y;
        a[[i, 2]] *= y;
        a[[i, 3]] /= y;
        a[[i, 4]] %= y;
        a[[i, 5]] &= y;
        a[[i, 6]] |= y;
        a[[i, 7]] ^= y;
        a[[i, 8]] <<= y;
        a[[i, 9]] >>= y;
    }
}

#[kernel]
pub fn compound_float(a: &mut [f32], b: &[f32]) {
    let i = global_id_x();
    if i < a.len() {
        a[i] += b[i];
        a[i] *= 2.0;
        a[i] -= 1.0;
        a[i] /= 4.0;
        a[i] %= 3.0;
    }
}

#[kernel]
pub fn compound_bool(a: &mut [bool], b: &[bool]) {
    let i = global_id_x();
    if i < a.len() {
        let mut x = a[i];
        x &= b[i];
        a[i] = x;
        a[i] |= !b[i];
        a[i] ^= true;
    }
}
