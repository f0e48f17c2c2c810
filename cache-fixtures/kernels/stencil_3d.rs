// A 7-point Laplacian on a 3-d grid, one thread per interior point (3-d launch).
fn at(u: &Array<f32, 3>, i: usize, j: usize, k: usize) -> f32 {
    u[[i, j, k]]
}

fn is_interior(u: &Array<f32, 3>, i: usize, j: usize, k: usize) -> bool {
    i >= 1 && j >= 1 && k >= 1 && i + 1 < u.shape(0) && j + 1 < u.shape(1) && k + 1 < u.shape(2)
}

#[kernel]
pub fn laplacian_7pt(u: &Array<f32, 3>, out: &mut Array<f32, 3>, h2_inv: f32) {
    let k = global_id_x();
    let j = global_id_y();
    let i = global_id_z();
    if i < out.shape(0) && j < out.shape(1) && k < out.shape(2) {
        out[[i, j, k]] = if is_interior(u, i, j, k) {
            let s = at(u, i - 1, j, k) + at(u, i + 1, j, k) + at(u, i, j - 1, k) + at(u, i, j + 1, k) + at(u, i, j, k - 1) + at(u, i, j, k + 1);
            (s - 6.0 * at(u, i, j, k)) * h2_inv
        } else {
            0.0
        };
    }
}

// Box sum over a 3x3x3 neighbourhood, clamped at the edges, in integers.
#[kernel]
pub fn box_sum_i32(u: &Array<i32, 3>, out: &mut Array<i32, 3>) {
    let k = global_id_x();
    let j = global_id_y();
    let i = global_id_z();
    if i >= u.shape(0) || j >= u.shape(1) || k >= u.shape(2) {
        return;
    }
    let mut s = 0;
    for di in 0..3 {
        for dj in 0..=2 {
            for dk in 0..3usize {
                let ii = i + di;
                let jj = j + dj;
                let kk = k + dk;
                if ii >= 1 && jj >= 1 && kk >= 1 && ii - 1 < u.shape(0) && jj - 1 < u.shape(1) && kk - 1 < u.shape(2) {
                    s += u[[ii - 1, jj - 1, kk - 1]];
                }
            }
        }
    }
    out[[i, j, k]] = s;
}
