// Gravitational accelerations (softened), all pairs, with positions staged through shared
// memory one tile at a time. Positions are an [n, 3] array; masses 1-d.
const TILE: usize = 32;
const SOFT2: f32 = 0.01;

fn accumulate(ax: f32, dx: f32, m: f32, inv_r3: f32) -> f32 {
    ax + dx * m * inv_r3
}

#[kernel]
pub fn nbody_accel(pos: &Array<f32, 2>, mass: &[f32], acc: &mut Array<f32, 2>) {
    let sx = shared_array::<f32, TILE>();
    let sy = shared_array::<f32, TILE>();
    let sz = shared_array::<f32, TILE>();
    let sm = shared_array::<f32, TILE>();
    let n = pos.shape(0);
    let i = global_id_x();
    let t = thread_idx_x() as usize;
    let px = if i < n { pos[[i, 0]] } else { 0.0 };
    let py = if i < n { pos[[i, 1]] } else { 0.0 };
    let pz = if i < n { pos[[i, 2]] } else { 0.0 };
    let mut ax = 0.0;
    let mut ay = 0.0;
    let mut az = 0.0;
    let mut base = 0;
    while base < n {
        let j = base + t;
        sx[t] = if j < n { pos[[j, 0]] } else { 0.0 };
        sy[t] = if j < n { pos[[j, 1]] } else { 0.0 };
        sz[t] = if j < n { pos[[j, 2]] } else { 0.0 };
        sm[t] = if j < n { mass[j] } else { 0.0 };
        sync_threads();
        for k in 0..TILE {
            let dx = sx[k] - px;
            let dy = sy[k] - py;
            let dz = sz[k] - pz;
            let r2 = dx * dx + dy * dy + dz * dz + SOFT2;
            let inv = 1.0 / r2.sqrt();
            let inv3 = inv * inv * inv;
            ax = accumulate(ax, dx, sm[k], inv3);
            ay = accumulate(ay, dy, sm[k], inv3);
            az = accumulate(az, dz, sm[k], inv3);
        }
        sync_threads();
        base += TILE;
    }
    if i < n {
        acc[[i, 0]] = ax;
        acc[[i, 1]] = ay;
        acc[[i, 2]] = az;
    }
}
