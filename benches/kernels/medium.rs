// A medium kernel (about 100 lines) for the benchmarks: a 2-d heat-diffusion step with
// boundary handling, a flux limiter and a few transcendental terms, spread over device
// functions.
const ALPHA: f32 = 0.24;
const EPS: f32 = 1e-6;
static WEIGHTS: [f32; 5] = [0.1, 0.2, 0.4, 0.2, 0.1];

fn clamp_index(i: i64, n: usize) -> usize {
    if i < 0 {
        0
    } else if i as usize >= n {
        n - 1
    } else {
        i as usize
    }
}

fn at(u: &Array<f32, 2>, i: i64, j: i64) -> f32 {
    let r = clamp_index(i, u.shape(0));
    let c = clamp_index(j, u.shape(1));
    u[[r, c]]
}

fn laplacian(u: &Array<f32, 2>, i: i64, j: i64) -> f32 {
    at(u, i - 1, j) + at(u, i + 1, j) + at(u, i, j - 1) + at(u, i, j + 1) - 4.0 * at(u, i, j)
}

fn minmod(a: f32, b: f32) -> f32 {
    if a * b <= 0.0 {
        0.0
    } else if a.abs() < b.abs() {
        a
    } else {
        b
    }
}

fn limited_gradient(u: &Array<f32, 2>, i: i64, j: i64) -> f32 {
    let dx = minmod(at(u, i + 1, j) - at(u, i, j), at(u, i, j) - at(u, i - 1, j));
    let dy = minmod(at(u, i, j + 1) - at(u, i, j), at(u, i, j) - at(u, i, j - 1));
    (dx * dx + dy * dy + EPS).sqrt()
}

fn smoothed(u: &Array<f32, 2>, i: i64, j: i64) -> f32 {
    let mut acc = 0.0;
    for k in 0..5 {
        let off = k as i64 - 2;
        acc += WEIGHTS[k] * 0.5 * (at(u, i + off, j) + at(u, i, j + off));
    }
    acc
}

fn source_term(x: f32, y: f32, t: f32) -> f32 {
    let r2 = x * x + y * y;
    (-r2 * 8.0).exp() * (t * 3.0).sin() * 0.01
}

fn coordinate(i: usize, n: usize) -> f32 {
    (i as f32 + 0.5) / n as f32 * 2.0 - 1.0
}

#[kernel]
pub fn heat_step(u: &Array<f32, 2>, next: &mut Array<f32, 2>, t: f32, dt: f32) {
    let j = global_id_x();
    let i = global_id_y();
    let rows = u.shape(0);
    let cols = u.shape(1);
    if i >= rows || j >= cols {
        return;
    }
    let si = i as i64;
    let sj = j as i64;
    let lap = laplacian(u, si, sj);
    let grad = limited_gradient(u, si, sj);
    let diffusivity = ALPHA / (1.0 + grad * grad);
    let smooth = smoothed(u, si, sj);
    let x = coordinate(j, cols);
    let y = coordinate(i, rows);
    let mut value = u[[i, j]] + dt * diffusivity * lap;
    value = value * 0.95 + smooth * 0.05;
    value += dt * source_term(x, y, t);
    if value != value {
        value = 0.0;
    }
    next[[i, j]] = value.max(-10.0).min(10.0);
}
