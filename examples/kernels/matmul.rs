// C = A * B for 2-d arrays of any layout, one thread per output element.
fn dot(a: &Array<f32, 2>, b: &Array<f32, 2>, row: usize, col: usize) -> f32 {
    let mut acc = 0.0;
    for k in 0..a.shape(1) {
        acc = a[[row, k]].mul_add(b[[k, col]], acc);
    }
    acc
}

#[kernel]
pub fn matmul(a: &Array<f32, 2>, b: &Array<f32, 2>, c: &mut Array<f32, 2>) {
    let row = global_id_y();
    let col = global_id_x();
    if row < c.shape(0) && col < c.shape(1) {
        c[[row, col]] = dot(a, b, row, col);
    }
}
