//! A 3x3 median filter over `u8` pixels: the neighbourhood gathered into a local `[u8; 9]`
//! (edges clamped), sorted in place with computed indices, the middle element kept.

fn sort9(mut v: [u8; 9]) -> [u8; 9] {
    for i in 1..9 {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] > x {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
    v
}

#[kernel]
pub fn median_3x3(img: &Array<u8, 2>, out: &mut Array<u8, 2>) {
    let x = global_id_x();
    let y = global_id_y();
    let (h, w) = (img.shape(0), img.shape(1));
    if x < w && y < h {
        let mut win = [0u8; 9];
        let mut k = 0;
        for dy in 0..3 {
            for dx in 0..3 {
                let yy = (y + dy).max(1).min(h) - 1;
                let xx = (x + dx).max(1).min(w) - 1;
                win[k] = img[[yy, xx]];
                k += 1;
            }
        }
        out[[y, x]] = sort9(win)[4];
    }
}
