//! A local array whose length is a const parameter: `[f32; W]` and `[T; W]` windows in
//! generic kernels (a moving average and a moving minimum), passed to and returned from
//! generic device functions, instantiated as `moving_average::<4>` and `moving_min::<i32, 3>`.

fn min_of<T: Num, const W: usize>(w: [T; W]) -> T {
    let mut m = w[0];
    for k in 1..W {
        m = m.min(w[k]);
    }
    m
}

fn gather<T: Num, const W: usize>(x: &[T], start: usize) -> [T; W] {
    let mut win = [T::MAX; W];
    for k in 0..W {
        win[k] = x[start + k];
    }
    win
}

#[kernel]
pub fn moving_average<const W: usize>(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i + W <= x.len() && i < out.len() {
        let mut win = [0.0f32; W];
        for k in 0..W {
            win[k] = x[i + k];
        }
        let mut s = 0.0;
        for v in win {
            s += v;
        }
        out[i] = s / W as f32;
    }
}

#[kernel]
pub fn moving_min<T: Num, const W: usize>(x: &[T], out: &mut [T]) {
    let i = global_id_x();
    if i + W <= x.len() && i < out.len() {
        let win = gather::<T, W>(x, i);
        out[i] = min_of(win);
    }
}
