//! A plain-data struct with an `impl` block: complex numbers with associated functions
//! (`Complex::new`, `Self::ZERO`), `&self` and `self` methods returning `Self`, a `&mut self`
//! method, field-init shorthand and struct update syntax, used for a Julia set and for
//! rotating a signal by twiddle factors from `sin_cos`.

#[derive(Clone, Copy)]
pub struct Complex {
    pub re: f32,
    pub im: f32,
}

impl Complex {
    const ZERO: Complex = Complex { re: 0.0, im: 0.0 };

    fn new(re: f32, im: f32) -> Self {
        Complex { re, im }
    }

    fn from_angle(theta: f32) -> Complex {
        let (im, re) = theta.sin_cos();
        Self { re, im }
    }

    fn add(self, o: Complex) -> Complex {
        Complex::new(self.re + o.re, self.im + o.im)
    }

    fn mul(&self, o: Complex) -> Self {
        Self { re: self.re * o.re - self.im * o.im, im: self.re * o.im + self.im * o.re }
    }

    fn norm_sqr(&self) -> f32 {
        self.re * self.re + self.im * self.im
    }

    fn conj_in_place(&mut self) {
        self.im = -self.im;
    }
}

#[kernel]
pub fn julia(counts: &mut Array<u32, 2>, c_re: f32, c_im: f32, x0: f32, y0: f32, step: f32, max_iter: u32) {
    let x = global_id_x();
    let y = global_id_y();
    if y < counts.shape(0) && x < counts.shape(1) {
        let c = Complex::new(c_re, c_im);
        let mut z = Complex { re: x0 + x as f32 * step, ..Complex::ZERO };
        z.im = y0 + y as f32 * step;
        let mut n = 0;
        while n < max_iter && z.norm_sqr() <= 4.0 {
            z = z.mul(z).add(c);
            n += 1;
        }
        counts[[y, x]] = n;
    }
}

#[kernel]
pub fn twiddle(re: &mut [f32], im: &mut [f32], conjugate: bool) {
    let i = global_id_x();
    let n = re.len();
    if i < n {
        let mut w = Complex::from_angle(-2.0 * core::f32::consts::PI * i as f32 / n as f32);
        if conjugate {
            w.conj_in_place();
        }
        let v = Complex::new(re[i], im[i]).mul(w);
        re[i] = v.re;
        im[i] = v.im;
    }
}
