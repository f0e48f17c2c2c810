// Transcendental math through libdevice: GELU (tanh approximation) and softplus.
const SQRT_2_OVER_PI: f32 = 0.7978845608;

fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)).tanh())
}

#[kernel]
pub fn gelu_inplace(x: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() {
        x[i] = gelu(x[i]);
    }
}

#[kernel]
pub fn softplus(x: &[f64], y: &mut [f64]) {
    let i = global_id_x();
    if i < x.len() {
        y[i] = (1.0 + x[i].exp()).ln();
    }
}
