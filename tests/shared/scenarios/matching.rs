//! Scenarios: `match` on integers, `bool` and enums; enum parameters (passed as their
//! discriminant, checked at launch); a kernel split across files.

use kache::{Device, Grid};

use super::helpers::*;

/// state_machine.rs: a tokenizer per line with an enum state, and an enum parameter.
pub fn state_machine(dev: &Device) -> Outcome {
    let m = module("state_machine.rs")?;
    let lines = ["12 abc  x9 9x", "hello world 42", "a_b 0 7 __ 5a!", "!!!! 123 45 6z"];
    let width = 14;
    let text: Vec<u8> = lines.iter().flat_map(|l| format!("{l:width$}").into_bytes()).collect();
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum S {
        Start,
        Number,
        Word,
        Space,
        Error,
    }
    let class = |c: u8| match c {
        b'0'..=b'9' => 0,
        b'a'..=b'z' | b'A'..=b'Z' | b'_' => 1,
        b' ' | b'\t' | b'\n' => 2,
        _ => 3,
    };
    let step = |s: S, c: u8| match s {
        S::Error => S::Error,
        S::Number if class(c) == 1 => S::Error,
        _ => match class(c) {
            0 if s == S::Word => S::Word,
            0 => S::Number,
            1 => S::Word,
            2 => S::Space,
            _ => S::Error,
        },
    };
    let disc = |s: S| match s {
        S::Start => 0u8,
        S::Number => 1,
        S::Word => 2,
        S::Space => 10,
        S::Error => 255,
    };
    for (what, want_kind) in [(0u32, S::Number), (1, S::Word), (7, S::Error)] {
        let mut counts = zeros::<u32>(dev, &[lines.len()])?;
        let mut last = zeros::<u8>(dev, &[lines.len()])?;
        launch(&m, "count_tokens", dev, Grid::linear(lines.len(), 32), (&up(dev, &text)?, width, what as i32, &mut counts, &mut last))?;
        let mut want_counts = Vec::new();
        let mut want_last = Vec::new();
        for l in 0..lines.len() {
            let (mut s, mut n) = (S::Start, 0u32);
            for &c in &text[l * width..(l + 1) * width] {
                let next = step(s, c);
                if next != s && s != S::Start && s != S::Space && s == want_kind {
                    n += 1;
                }
                s = next;
            }
            want_counts.push(n + (s == want_kind) as u32);
            want_last.push(disc(s));
        }
        eq(&format!("count_tokens (Count = {what})"), &dl(&counts)?, &want_counts)?;
        eq("count_tokens final states", &dl(&last)?, &want_last)?;
    }
    // A discriminant no variant has is refused before anything runs.
    let mut counts = zeros::<u32>(dev, &[lines.len()])?;
    let mut last = zeros::<u8>(dev, &[lines.len()])?;
    let e = m
        .kernel("count_tokens")
        .ctx("kernel")?
        .launch(dev, Grid::linear(4, 32), (&up(dev, &text)?, width, 3i32, &mut counts, &mut last))
        .err()
        .ok_or("count_tokens accepted 3, which is no discriminant of `Count`")?
        .to_string();
    if !e.contains("3 is not a discriminant of `Count`") || !e.contains("Errors = 7") {
        return Err(format!("count_tokens: unclear error for a bad discriminant: {e}"));
    }
    let e = m
        .kernel("count_tokens")
        .ctx("kernel")?
        .launch(dev, Grid::linear(4, 32), (&up(dev, &text)?, width, 1u8, &mut counts, &mut last))
        .err()
        .ok_or("count_tokens accepted a `u8` for an `i32` enum")?
        .to_string();
    if !e.contains("passed as its discriminant, a `i32`") {
        return Err(format!("count_tokens: unclear error for a discriminant of the wrong type: {e}"));
    }

    let lights: Vec<i32> = (0..40).map(|i| [-1, 1, 2][i % 3]).collect();
    let mut ld = up(dev, &lights)?;
    let mut stops = zeros::<u32>(dev, &[40])?;
    launch(&m, "traffic", dev, Grid::linear(40, 32), (&mut ld, 5u32, &mut stops))?;
    let (mut want_l, mut want_s) = (Vec::new(), Vec::new());
    for &l0 in &lights {
        let (mut l, mut s) = (l0, 0u32);
        for _ in 0..5 {
            l = match l {
                -1 => 1,
                1 => 2,
                _ => -1,
            };
            s += (l < 1) as u32;
        }
        want_l.push(l);
        want_s.push(s);
    }
    eq("traffic lights", &dl(&ld)?, &want_l)?;
    eq("traffic stops", &dl(&stops)?, &want_s)
}

/// match_ints.rs: integer and bool matches of every kind of pattern.
pub fn match_ints(dev: &Device) -> Outcome {
    let m = module("match_ints.rs")?;
    let xs: Vec<i64> = vec![i64::MIN, -5, -1, 0, 1, 9, 10, 99, 100, 255, 256, 999_999, 1_000_000, i64::MAX, 300, 42];
    let mut out = zeros::<u32>(dev, &[xs.len()])?;
    launch(&m, "classify", dev, Grid::linear(xs.len(), 32), (&up(dev, &xs)?, &mut out))?;
    let bucket = |x: i64| match x {
        i64::MIN..=-1 => 0,
        0 => 1,
        1..10 => 2,
        10..1_000_000 => 3,
        1_000_000.. => 4,
    };
    let digits = |x: u8| match x {
        0..=9 => 1,
        10..=99 => 2,
        100..=u8::MAX => 3,
    };
    eq("classify", &dl(&out)?, &xs.iter().map(|&x| bucket(x) * 10 + digits(x as u8)).collect::<Vec<_>>())?;

    let ns: Vec<u32> = (0..200).chain([27, 97, 871]).collect();
    let mut steps = zeros::<u16>(dev, &[ns.len()])?;
    launch(&m, "collatz_steps", dev, Grid::linear(ns.len(), 64), (&up(dev, &ns)?, &mut steps))?;
    let collatz = |n: u32| {
        let (mut v, mut k) = (n as u64, 0u16);
        while v > 1 {
            v = if v % 2 == 0 { v / 2 } else { 3 * v + 1 };
            k += 1;
        }
        k
    };
    eq("collatz_steps", &dl(&steps)?, &ns.iter().map(|&n| collatz(n)).collect::<Vec<_>>())?;

    let mut fb = zeros::<i16>(dev, &[100])?;
    launch(&m, "fizzbuzz", dev, Grid::linear(100, 32), (&mut fb,))?;
    let want: Vec<i16> = (1..=100i16)
        .map(|n| {
            if n % 15 == 0 {
                -15
            } else if n % 3 == 0 {
                -3
            } else if n % 5 == 0 {
                -5
            } else {
                n
            }
        })
        .collect();
    eq("fizzbuzz", &dl(&fb)?, &want)?;

    let code: Vec<u8> = vec![0x01, 0x05, 0x10, 0x00, 0x2a, 0xff, 0x30, 0x11, 0x0f, 0x25, 0x80];
    let mut acc = zeros::<i32>(dev, &[1])?;
    launch(&m, "opcodes", dev, Grid::linear(1, 32), (&up(dev, &code)?, &mut acc))?;
    let mut a: i32 = 0;
    for &c in &code {
        match c {
            0x00 => {}
            0x01..=0x0f => a += c as i32,
            0x10 | 0x11 => a *= 2,
            0x20..=0x2f => a -= (c - 0x20) as i32,
            0xff => a = -a,
            _ => a ^= 1,
        }
    }
    eq("opcodes", &dl(&acc)?, &[a])?;

    let s8: Vec<i8> = vec![-128, -1, 0, 1, 127, -7, 5, 0, 9, -9, 100, -100];
    let mut ys = zeros::<usize>(dev, &[s8.len()])?;
    launch(&m, "sign_usize", dev, Grid::linear(s8.len(), 32), (&up(dev, &s8)?, &mut ys))?;
    let want: Vec<usize> = (0..s8.len())
        .map(|i| match i % 4 {
            0 => match s8[i] {
                i8::MIN..=-1 => 0,
                0 => 1,
                1..=i8::MAX => 2,
            },
            1 | 2 => usize::MAX,
            k => k,
        })
        .collect();
    eq("sign_usize", &dl(&ys)?, &want)?;

    let text = b"Quick brown foxes jump over THE lazy dog, QED.".to_vec();
    let mut count = zeros::<u32>(dev, &[1])?;
    launch(&m, "vowels", dev, Grid::linear(text.len(), 32), (&up(dev, &text)?, &mut count))?;
    let want = text.iter().filter(|&&c| matches!(c, b'a' | b'e' | b'i' | b'o' | b'u' | b'A'..=b'Z' if c != b'Q')).count() as u32;
    eq("vowels (matches!)", &dl(&count)?, &[want])
}

/// split_kernels.rs with split_geometry/: a kernel whose helpers and enum live in other files.
pub fn split_kernels(dev: &Device) -> Outcome {
    let m = module("split_kernels.rs")?;
    let n = 50;
    let w: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let h: Vec<f32> = (0..n).map(|i| (n - i) as f32 * 0.25).collect();
    for (kind, f) in [(0u8, 1.0f32), (1, 0.5), (2, std::f32::consts::FRAC_PI_4)] {
        let mut out = zeros::<f32>(dev, &[n])?;
        launch(&m, "areas", dev, Grid::linear(n, 32), (&up(dev, &w)?, &up(dev, &h)?, kind, &mut out))?;
        let want: Vec<f32> = (0..n).map(|i| if kind == 0 { w[i] * h[i] } else { f * w[i] * h[i] } * 2.0).collect();
        exact(&format!("areas (Shape = {kind})"), &dl(&out)?, &want)?;
    }
    let mut out = zeros::<f32>(dev, &[n])?;
    launch(&m, "projections", dev, Grid::linear(n, 32), (&up(dev, &w)?, &up(dev, &h)?, &mut out))?;
    exact("projections", &dl(&out)?, &(0..n).map(|i| (w[i] + h[i]) * 0.5 + (w[i] * w[i] + h[i] * h[i]) / 2.0).collect::<Vec<_>>())
}
