//! The speed corpus's compute kernels in kache (benches/speed/): all-pairs n-body,
//! Black-Scholes and the Mandelbrot set; their CUDA C twins are in science.cu beside this file.

/// Bodies per block, and per shared-memory tile of the n-body kernel.
const NB: usize = 256;

#[derive(Clone, Copy)]
pub struct Body {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub m: f32,
}

#[derive(Clone, Copy)]
pub struct Accel {
    pub x: f32,
    pub y: f32,
    pub z: f32,
}

// The acceleration of each body from all the others (softened gravity, G = 1), a thread per
// body: the block walks the bodies a tile of NB at a time through shared memory.
#[kernel]
pub fn nbody(bodies: &[Body], acc: &mut [Accel], soft2: f32) {
    let tile = shared_array::<Body, NB>();
    let i = global_id_x();
    let t = thread_idx_x() as usize;
    let n = bodies.len();
    let none = Body { x: 0.0, y: 0.0, z: 0.0, m: 0.0 };
    let me = if i < n { bodies[i] } else { none };
    let (mut ax, mut ay, mut az) = (0.0f32, 0.0f32, 0.0f32);
    for base in (0..n).step_by(NB) {
        tile[t] = if base + t < n { bodies[base + t] } else { none };
        sync_threads();
        for k in 0..NB {
            let b = tile[k];
            let (dx, dy, dz) = (b.x - me.x, b.y - me.y, b.z - me.z);
            let inv = (dx * dx + dy * dy + dz * dz + soft2).rsqrt();
            let s = b.m * inv * inv * inv;
            ax += dx * s;
            ay += dy * s;
            az += dz * s;
        }
        sync_threads();
    }
    if i < n {
        acc[i] = Accel { x: ax, y: ay, z: az };
    }
}

// The standard normal distribution function.
fn cnd(d: f32) -> f32 {
    0.5 * (-d * std::f32::consts::FRAC_1_SQRT_2).erfc()
}

// European call and put prices (Black-Scholes) of each option: spot s, strike k, years t, at
// the riskless rate r and volatility v.
#[kernel]
pub fn black_scholes(s: &[f32], k: &[f32], t: &[f32], r: f32, v: f32, call: &mut [f32], put: &mut [f32]) {
    let i = global_id_x();
    if i < call.len() {
        let (s, k, t) = (s[i], k[i], t[i]);
        let sq = t.sqrt();
        let d1 = ((s / k).ln() + (r + 0.5 * v * v) * t) / (v * sq);
        let d2 = d1 - v * sq;
        let e = (-r * t).exp();
        call[i] = s * cnd(d1) - k * e * cnd(d2);
        put[i] = k * e * cnd(-d2) - s * cnd(-d1);
    }
}

// The escape count of each pixel's point c = (x0 + col dx, y0 + row dy) under z = z² + c, up
// to `max_iter`.
#[kernel]
pub fn mandelbrot(out: &mut Array<u32, 2>, x0: f32, y0: f32, dx: f32, dy: f32, max_iter: u32) {
    let col = global_id_x();
    let row = global_id_y();
    if row < out.shape(0) && col < out.shape(1) {
        let cx = x0 + col as f32 * dx;
        let cy = y0 + row as f32 * dy;
        let (mut x, mut y) = (0.0f32, 0.0f32);
        let mut it = 0;
        while it < max_iter && x * x + y * y <= 4.0 {
            let xt = x * x - y * y + cx;
            y = 2.0 * x * y + cy;
            x = xt;
            it += 1;
        }
        out[[row, col]] = it;
    }
}
