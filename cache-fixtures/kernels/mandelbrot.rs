// Mandelbrot escape counts on a 2-d launch; `loop` returns the count with `break value`.
const MAX_ITER: u32 = 64;

fn escape(cr: f64, ci: f64) -> u32 {
    let mut zr = 0.0;
    let mut zi = 0.0;
    let mut k = 0;
    loop {
        if k == MAX_ITER || zr * zr + zi * zi > 4.0 {
            break k;
        }
        let t = zr * zr - zi * zi + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        k += 1;
    }
}

#[kernel]
pub fn mandelbrot(counts: &mut Array<u32, 2>, x0: f64, y0: f64, dx: f64, dy: f64) {
    let c = global_id_x();
    let r = global_id_y();
    if r < counts.shape(0) && c < counts.shape(1) {
        counts[[r, c]] = escape(x0 + c as f64 * dx, y0 + r as f64 * dy);
    }
}
