// C = A * B: a naive kernel over any layout, and a tiled kernel with shared-memory tiles.
const TILE: usize = 8;

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

#[kernel]
pub fn matmul_tiled(a: &Array<f64, 2>, b: &Array<f64, 2>, c: &mut Array<f64, 2>) {
    let ta = shared_array::<f64, 64>();
    let tb = shared_array::<f64, 64>();
    let tx = thread_idx_x() as usize;
    let ty = thread_idx_y() as usize;
    let row = block_idx_y() as usize * TILE + ty;
    let col = block_idx_x() as usize * TILE + tx;
    let n = a.shape(1);
    let mut acc: f64 = 0.0;
    let tiles = (n + TILE - 1) / TILE;
    for t in 0..tiles {
        let ka = t * TILE + tx;
        let kb = t * TILE + ty;
        ta[ty * TILE + tx] = if row < a.shape(0) && ka < n { a[[row, ka]] } else { 0.0 };
        tb[ty * TILE + tx] = if kb < n && col < b.shape(1) { b[[kb, col]] } else { 0.0 };
        sync_threads();
        for k in 0..TILE {
            acc += ta[ty * TILE + k] * tb[k * TILE + tx];
        }
        sync_threads();
    }
    if row < c.shape(0) && col < c.shape(1) {
        c[[row, col]] = acc;
    }
}

// Integer matrix-vector product, y = M x.
#[kernel]
pub fn matvec_i64(m: &Array<i64, 2>, x: &[i64], y: &mut [i64]) {
    let r = global_id_x();
    if r < m.shape(0) {
        let mut s = 0;
        for k in 0..m.shape(1) {
            s += m[[r, k]] * x[k];
        }
        y[r] = s;
    }
}
