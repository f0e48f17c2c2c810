//! Image processing on `u8` pixels: RGB to grayscale with integer weights, brightness and
//! contrast through `f32` with Rust's saturating cast back to `u8`, a 3x3 box blur over a 2-d
//! image, a threshold mask with a pixel count, and centring into `i8`.

// BT.601 luma weights in 8.8 fixed point (they sum to 256).
const R_W: u32 = 77;
const G_W: u32 = 150;
const B_W: u32 = 29;

#[kernel]
pub fn grayscale(rgb: &[u8], gray: &mut [u8]) {
    let i = global_id_x();
    if i < gray.len() {
        let r = rgb[3 * i] as u32;
        let g = rgb[3 * i + 1] as u32;
        let b = rgb[3 * i + 2] as u32;
        gray[i] = ((R_W * r + G_W * g + B_W * b + 128) >> 8) as u8;
    }
}

#[kernel]
pub fn brightness_contrast(img: &mut Array<u8, 2>, gain: f32, bias: f32) {
    let y = global_id_y();
    let x = global_id_x();
    if y < img.shape(0) && x < img.shape(1) {
        let v = img[[y, x]] as f32 * gain + bias;
        // `as u8` saturates: below 0 gives 0, above 255 gives 255, NaN gives 0.
        img[[y, x]] = v.round() as u8;
    }
}

#[kernel]
pub fn box_blur_3x3(src: &Array<u8, 2>, dst: &mut Array<u8, 2>) {
    let y = global_id_y();
    let x = global_id_x();
    let h = src.shape(0);
    let w = src.shape(1);
    if y < h && x < w {
        let mut sum: u16 = 0;
        let mut n: u16 = 0;
        // Neighbours at y - 1 ..= y + 1, written with an offset of one to stay unsigned.
        for yy in y..y + 3 {
            for xx in x..x + 3 {
                if yy >= 1 && yy <= h && xx >= 1 && xx <= w {
                    sum += src[[yy - 1, xx - 1]] as u16;
                    n += 1;
                }
            }
        }
        dst[[y, x]] = ((sum + n / 2) / n) as u8;
    }
}

#[kernel]
pub fn threshold(gray: &[u8], level: u8, mask: &mut [bool], count: &mut [u32]) {
    let i = global_id_x();
    if i < gray.len() {
        let on = gray[i] >= level;
        mask[i] = on;
        if on {
            atomic_add(&mut count[0], 1);
        }
    }
}

#[kernel]
pub fn centre_i8(img: &[u8], centred: &mut [i8]) {
    let i = global_id_x();
    if i < img.len() {
        centred[i] = (img[i] as i16 - 128) as i8;
    }
}
