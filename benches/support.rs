//! Kernels shared by the benchmarks: small (saxpy), medium (about 100 lines), large (about
//! 1,000 lines, generated).
#![allow(dead_code)]

pub const SMALL: &str = include_str!("../examples/kernels/saxpy.rs");

pub const MEDIUM: &str = include_str!("kernels/medium.rs");

/// About 1,000 lines: 64 device functions of about 15 lines each and a kernel calling them.
pub fn large() -> String {
    let mut s = String::new();
    for f in 0..64 {
        s.push_str(&format!(
            "fn stage{f}(x: f32, i: usize) -> f32 {{\n    let mut acc = x;\n    let k = (i % {m}) as f32;\n    for j in 0..{r} {{\n        if j % 2 == 0 {{\n            acc = acc * 1.0001 + k;\n        }} else {{\n            acc = acc - 0.5 * k;\n        }}\n    }}\n    let y = acc.max(-1e6).min(1e6);\n    if y > {f}.0 {{\n        y - {f}.0\n    }} else {{\n        y + 1.0\n    }}\n}}\n\n",
            m = f % 7 + 2,
            r = f % 5 + 1
        ));
    }
    s.push_str("#[kernel]\npub fn large(x: &[f32], y: &mut [f32]) {\n    let i = global_id_x();\n    if i < y.len() {\n        let mut v = x[i];\n");
    for f in 0..64 {
        s.push_str(&format!("        v = stage{f}(v, i);\n"));
    }
    s.push_str("        y[i] = v;\n    }\n}\n");
    s
}

pub fn sources() -> Vec<(&'static str, String, &'static str)> {
    vec![("small", SMALL.to_string(), "saxpy"), ("medium", MEDIUM.to_string(), "heat_step"), ("large", large(), "large")]
}
