// Température en °C, «ñ» — les colonnes comptent des caractères, pas des octets.
#[kernel]
pub fn k(out: &mut [f32]) {
    /* é */ let t: f32 = 1.5; /* ü */ let n: i32 = t;
    out[0] = t;
}
