#[kernel]
pub fn k(out: &mut [f32]) {
    let i = global_id_x();
    println!("thread {}", i);
    out[i] = 1.0;
}
