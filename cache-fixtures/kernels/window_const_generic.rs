//! A local array whose length is a const parameter: `[f32; W]` and `[T; W]` windows in
//! generic kernels (a moving average and a moving minimum), instantiated as
//! `moving_average::<4>` and `moving_min::<i32, 3>`.

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
        let mut win = [T::MAX; W];
        for k in 0..W {
            win[k] = x[i + k];
        }
        let mut m = win[0];
        for k in 1..W {
            m = m.min(win[k]);
        }
        out[i] = m;
    }
}
