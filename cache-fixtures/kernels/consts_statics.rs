// `const` items (scalars of several types, built from other constants) and `static` arrays
// (1-d and 2-d) used as lookup tables.
const SCALE: f32 = 0.5;
const OFFSET: f32 = SCALE * 4.0 + 1.0; // 3.0
const N_COEF: usize = 4;
const MASK: u32 = (1 << 4) - 1;
const BIG: i64 = -(1i64 << 40);
const HALF_PI: f64 = f64::consts::PI / 2.0;
const ENABLED: bool = true && !false;
const U64_MAX_HALF: u64 = u64::MAX / 2;

static COEF: [f32; 4] = [1.0, -2.0, 0.5, 0.25];
static PRIMES: [u32; 8] = [2, 3, 5, 7, 11, 13, 17, 19];
static ROT: [[f64; 2]; 2] = [[0.0, -1.0], [1.0, 0.0]];
static ZEROS: [i64; 3] = [0; 3];
static GRID: [[[i32; 2]; 2]; 2] = [[[1, 2], [3, 4]], [[5, 6], [7, 8]]];

fn poly(x: f32) -> f32 {
    let mut acc = 0.0;
    let mut p = 1.0;
    for k in 0..N_COEF {
        acc += COEF[k] * p;
        p *= x;
    }
    acc
}

#[kernel]
pub fn lookup(x: &[f32], idx: &[u32], out_f: &mut [f32], out_u: &mut [u32], out_i: &mut [i64]) {
    let i = global_id_x();
    if i < x.len() {
        out_f[i] = if ENABLED { poly(x[i]) * SCALE + OFFSET } else { 0.0 };
        out_u[i] = PRIMES[(idx[i] & MASK) as usize % 8];
        out_i[i] = BIG + ZEROS[i % 3] + GRID[[i % 2, (i / 2) % 2, 1]] as i64;
    }
}

#[kernel]
pub fn rotate(p: &Array<f64, 2>, out: &mut Array<f64, 2>, half: &mut [u64]) {
    let i = global_id_x();
    if i < p.shape(0) {
        for r in 0..2 {
            let mut s = 0.0;
            for c in 0..2 {
                s += ROT[[r, c]] * p[[i, c]];
            }
            out[[i, r]] = s + HALF_PI.sin() - 1.0;
        }
        if i == 0 {
            half[0] = U64_MAX_HALF;
        }
    }
}
