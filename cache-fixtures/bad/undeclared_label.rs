#[kernel]
pub fn k(out: &mut [f32]) {
    'rows: for i in 0..out.len() {
        for j in 0..4 {
            if j == 2 {
                continue 'cols;
            }
        }
        out[i] = 1.0;
    }
}
