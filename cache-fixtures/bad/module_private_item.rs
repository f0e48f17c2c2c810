mod helpers {
    fn secret() -> f32 {
        1.0
    }
}

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = helpers::secret();
}
