//! The kernels of benches/speed/experiments/div_exp.py: a / b, 1.0 / b, and a chain of 64
//! dependent divisions, compiled by `kache compile div_exp.rs --kernel K --arch sm_90`.

#[kernel]
pub fn div(a: &[f32], b: &[f32], q: &mut [f32]) {
    let i = global_id_x();
    if i < q.len() && i < a.len() && i < b.len() {
        q[i] = a[i] / b[i];
    }
}

#[kernel]
pub fn rcp(b: &[f32], q: &mut [f32]) {
    let i = global_id_x();
    if i < q.len() && i < b.len() {
        q[i] = 1.0 / b[i];
    }
}

// Throughput: 64 dependent divisions per element.
#[kernel]
pub fn div_chain(a: &[f32], b: &[f32], q: &mut [f32]) {
    let i = global_id_x();
    if i < q.len() && i < a.len() && i < b.len() {
        let mut x = a[i];
        let d = b[i];
        for _ in 0..64 {
            x = x / d + 1.0;
        }
        q[i] = x;
    }
}
