//! `match` on integers of every width and on `bool`: literal, `|` and range patterns (closed,
//! half-open and open-ended, with constants and `MIN`/`MAX` as bounds), bindings with `@`,
//! guards, `match` as an expression and as a statement.

const SMALL: i64 = 10;
const LARGE: i64 = 1_000_000;

fn bucket(x: i64) -> u32 {
    match x {
        i64::MIN..=-1 => 0,
        0 => 1,
        1..SMALL => 2,
        SMALL..LARGE => 3,
        LARGE.. => 4,
    }
}

fn digits(x: u8) -> u32 {
    match x {
        0..=9 => 1,
        10..=99 => 2,
        100..=u8::MAX => 3,
    }
}

#[kernel]
pub fn classify(xs: &[i64], out: &mut [u32]) {
    let i = global_id_x();
    if i < xs.len() {
        out[i] = bucket(xs[i]) * 10 + digits(xs[i] as u8);
    }
}

#[kernel]
pub fn collatz_steps(n: &[u32], steps: &mut [u16]) {
    let i = global_id_x();
    if i < n.len() {
        let mut v = n[i] as u64;
        let mut k: u16 = 0;
        loop {
            match v {
                0 | 1 => break,
                even if even % 2 == 0 => v = even / 2,
                odd => v = 3 * odd + 1,
            }
            k += 1;
        }
        steps[i] = k;
    }
}

#[kernel]
pub fn fizzbuzz(out: &mut [i16]) {
    let i = global_id_x();
    if i < out.len() {
        let n = i as i16 + 1;
        let by3 = n % 3 == 0;
        let by5 = n % 5 == 0;
        out[i] = match by3 {
            true => match by5 {
                true => -15,
                false => -3,
            },
            false if by5 => -5,
            false => n,
        };
    }
}

#[kernel]
pub fn opcodes(code: &[u8], acc: &mut [i32]) {
    if global_id_x() == 0 {
        let mut a: i32 = 0;
        for pc in 0..code.len() {
            match code[pc] {
                0x00 => {}
                0x01..=0x0f => a += code[pc] as i32,
                0x10 | 0x11 => a *= 2,
                op @ 0x20..=0x2f => a -= (op - 0x20) as i32,
                0xff => {
                    a = -a;
                }
                _ => a ^= 1,
            }
        }
        acc[0] = a;
    }
}

#[kernel]
pub fn sign_usize(xs: &[i8], ys: &mut [usize]) {
    let i = global_id_x();
    if i < xs.len() {
        let k = i % 4;
        ys[i] = match k {
            0 => match xs[i] {
                i8::MIN..=-1 => 0,
                0 => 1,
                1..=i8::MAX => 2,
            },
            1 | 2 => usize::MAX,
            _ => k,
        };
    }
}

#[kernel]
pub fn vowels(text: &[u8], count: &mut [u32]) {
    let i = global_id_x();
    if i < text.len() && matches!(text[i], b'a' | b'e' | b'i' | b'o' | b'u' | b'A'..=b'Z' if text[i] != b'Q') {
        atomic_add(&mut count[0], 1);
    }
}
