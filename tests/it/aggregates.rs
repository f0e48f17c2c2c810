//! Tests: tuples, fixed-size local arrays and structs in kernels: their values on the host
//! backend against Rust, places and methods, the located errors for their misuse (snapshots),
//! and their PTX accepted by ptxas.

use kache::{Config, Device, Grid, Jit};

fn jit() -> Jit {
    Jit::new(Config::in_memory()).unwrap()
}

const VALUES: &str = r#"
fn argmin(x: &[f32]) -> (usize, f32) {
    let mut best = (0, x[0]);
    for i in 1..x.len() {
        if x[i] < best.1 {
            best = (i, x[i]);
        }
    }
    best
}

fn swap(p: (u32, u32)) -> (u32, u32) {
    let (a, b) = p;
    (b, a)
}

fn rev3(a: [i32; 3]) -> [i32; 3] {
    [a[2], a[1], a[0]]
}

#[kernel]
pub fn tuples(x: &[f32], out: &mut [f32], idx: &mut [u32]) {
    if global_id_x() == 0 {
        let (i, v) = argmin(x);
        out[0] = v;
        idx[0] = i as u32;
        let ((a, _), (c, d)) = ((1u32, 2u32), swap((3, 4)));
        idx[1] = a * 100 + c * 10 + d;
        let mut t: (f32, (u8, bool)) = (0.5, (7, true));
        t.1.0 += 1;
        t.0 *= 4.0;
        out[1] = t.0 + t.1.0 as f32 + if t.1.1 { 1000.0 } else { 0.0 };
        let (s, co) = 0.5f32.sin_cos();
        out[2] = s;
        out[3] = co;
    }
}

#[kernel]
pub fn arrays(x: &[i32], out: &mut [i32]) {
    let i = global_id_x();
    if i < out.len() {
        let mut w = [0i32; 5];
        for k in 0..5 {
            w[k] = x[(i + k) % x.len()];
        }
        let m = [[1, 2, 3], [4, 5, 6], [7, 8, 9]];
        let mut acc = 0;
        for row in m {
            for v in row {
                acc += v;
            }
        }
        let r = rev3([w[0], w[1], w[2]]);
        let mut s = 0;
        for v in w {
            s += v;
        }
        let j = (i % 7) as usize;
        out[i] = s * 1000 + acc + r[0] * 100000 + w[j] * 0 + w.len() as i32 + m[1][2] * 10;
    }
}
"#;

#[test]
fn tuples_and_local_arrays_compute_as_rust_does() {
    let jit = jit();
    let dev = Device::host();
    let m = jit.load_source("values.rs", VALUES).unwrap_or_else(|e| panic!("{e}"));
    let x = dev.upload(&[3.0f32, -1.5, 2.0, -7.25, 9.0]).unwrap();
    let mut out = dev.alloc::<f32>(&[4]).unwrap();
    let mut idx = dev.alloc::<u32>(&[2]).unwrap();
    m.kernel("tuples").unwrap().launch(&dev, Grid::linear(1, 32), (&x, &mut out, &mut idx)).unwrap();
    let o = out.download().unwrap();
    let (s, c) = 0.5f32.sin_cos();
    assert_eq!(o, vec![-7.25, 2.0 + 8.0 + 1000.0, s, c]);
    assert_eq!(idx.download().unwrap(), vec![3, 100 + 40 + 3]);

    let xs: Vec<i32> = (1..=9).map(|v| v * 3 - 7).collect();
    let x = dev.upload(&xs).unwrap();
    let mut out = dev.alloc::<i32>(&[9]).unwrap();
    m.kernel("arrays").unwrap().launch(&dev, Grid::linear(9, 4), (&x, &mut out)).unwrap();
    let want: Vec<i32> = (0..9)
        .map(|i| {
            let w: Vec<i32> = (0..5).map(|k| xs[(i + k) % xs.len()]).collect();
            let s: i32 = w.iter().sum();
            s * 1000 + 45 + w[2] * 100000 + 5 + 60
        })
        .collect();
    assert_eq!(out.download().unwrap(), want);
}
