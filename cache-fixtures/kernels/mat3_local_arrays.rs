//! Fixed-size local arrays: 3x3 matrices as `[[f32; 3]; 3]` values (literals, repeats,
//! parameters and return values of device functions, `for` over rows), with literal and
//! computed indices; each thread transforms one point by a product of rotation and scale.

const N: usize = 3;

fn matmul3(a: [[f32; N]; N], b: [[f32; N]; N]) -> [[f32; N]; N] {
    let mut c = [[0.0f32; N]; N];
    for i in 0..N {
        for j in 0..N {
            let mut s = 0.0;
            for k in 0..N {
                s += a[i][k] * b[k][j];
            }
            c[i][j] = s;
        }
    }
    c
}

fn apply(m: [[f32; 3]; 3], v: [f32; 3]) -> [f32; 3] {
    let mut out = [0.0; 3];
    let mut i = 0;
    for row in m {
        out[i] = row[0] * v[0] + row[1] * v[1] + row[2] * v[2];
        i += 1;
    }
    out
}

fn trace(m: [[f32; 3]; 3]) -> f32 {
    m[0][0] + m[1][1] + m[2][2]
}

#[kernel]
pub fn transform_points(pts: &mut Array<f32, 2>, sx: f32, sy: f32, sz: f32, traces: &mut [f32]) {
    let i = global_id_x();
    if i < pts.shape(0) {
        // A quarter turn about z, then a per-axis scale.
        let rot = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]];
        let scale = [sx, sy, sz];
        let mut s = [[0.0f32; 3]; 3];
        for k in 0..3 {
            s[k][k] = scale[k];
        }
        let m = matmul3(s, rot);
        let p = [pts[[i, 0]], pts[[i, 1]], pts[[i, 2]]];
        let q = apply(m, p);
        for k in 0..3 {
            pts[[i, k]] = q[k];
        }
        traces[i] = trace(m);
    }
}

#[kernel]
pub fn sliding_max(x: &[i32], out: &mut [i32]) {
    let i = global_id_x();
    if i < out.len() {
        // The window, gathered with a computed index into a local array.
        let mut w = [i32::MIN; 5];
        for k in 0..w.len() {
            let j = i + k;
            if j < x.len() {
                w[k] = x[j];
            }
        }
        let mut best = w[0];
        for v in w {
            best = best.max(v);
        }
        out[i] = best;
    }
}
