// A generic kernel: build.rs lists the instances to prebuild (Builder::instances), and each
// becomes a typed launch function (`generic::scale_f32`, `generic::scale_i64`).
#[kernel]
pub fn scale<T: Num>(x: &mut [T], by: T) {
    let i = global_id_x();
    if i < x.len() {
        x[i] *= by;
    }
}
