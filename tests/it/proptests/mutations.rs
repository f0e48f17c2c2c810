//! Mutations of seed sources: tokens and characters deleted, duplicated, swapped and replaced,
//! random bytes inserted, truncation.

use super::*;

/// Splits source bytes into rough tokens: identifier/number runs, whitespace runs, single bytes.
pub(super) fn tokens(src: &[u8]) -> Vec<Vec<u8>> {
    let class = |b: u8| -> u8 {
        if b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80 {
            0
        } else if b.is_ascii_whitespace() {
            1
        } else {
            2
        }
    };
    let mut out: Vec<Vec<u8>> = Vec::new();
    for &b in src {
        match out.last_mut() {
            Some(t) if class(b) != 2 && class(t[0]) == class(b) => t.push(b),
            _ => out.push(vec![b]),
        }
    }
    out
}

/// Tokens worth inserting: keywords, punctuation, builtins, and pieces of unsupported syntax.
pub(super) const VOCAB: &[&str] = &[
    "fn",
    "let",
    "mut",
    "if",
    "else",
    "while",
    "loop",
    "for",
    "in",
    "break",
    "continue",
    "return",
    "as",
    "move",
    "pub",
    "const",
    "static",
    "struct",
    "enum",
    "impl",
    "trait",
    "match",
    "unsafe",
    "async",
    "await",
    "dyn",
    "ref",
    "where",
    "type",
    "mod",
    "use",
    "self",
    "Self",
    "crate",
    "super",
    "#[kernel]",
    "#[inline]",
    "#![allow(unused)]",
    "#[derive(Debug)]",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "[[",
    "]]",
    "<",
    ">",
    "::",
    ":",
    ";",
    ",",
    ".",
    "..",
    "..=",
    "=",
    "==",
    "!=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "&",
    "&&",
    "|",
    "||",
    "^",
    "!",
    "<<",
    ">>",
    "+=",
    "-=",
    "*=",
    "/=",
    "%=",
    "<<=",
    ">>=",
    "->",
    "=>",
    "?",
    "@",
    "#",
    "$",
    "~",
    "'a",
    "'outer:",
    "_",
    "0",
    "1",
    "-1",
    "255",
    "1.5",
    "0.0",
    "1e38",
    "1e400",
    "2u32",
    "3i64",
    "4usize",
    "5f32",
    "6.0f64",
    "7u8",
    "0x7fffffff",
    "0b101",
    "1_000",
    "18446744073709551615",
    "340282366920938463463374607431768211455",
    "170141183460469231731687303715884105727",
    "true",
    "false",
    "\"s\"",
    "'c'",
    "b'x'",
    "f32",
    "f64",
    "i32",
    "i64",
    "u32",
    "u64",
    "usize",
    "bool",
    "u8",
    "char",
    "String",
    "Vec<f32>",
    "&[f32]",
    "&mut [f32]",
    "&Array<f32, 2>",
    "Array<f64, 0>",
    "[f32; 4]",
    "impl Kernel",
    "impl Fn(f32) -> f32",
    "x",
    "i",
    "out",
    "a",
    "b",
    "PRICES",
    "RATE",
    "N",
    "BLOCK",
    "TABLE",
    "global_id_x()",
    "thread_idx_x()",
    "block_idx_y()",
    "sync_threads()",
    "shared_array::<f32, 16>()",
    "dynamic_shared_array::<u32>()",
    "atomic_add",
    "atomic_cas",
    "len()",
    "shape(0)",
    "stride(1)",
    "sqrt()",
    "abs()",
    "powi(2)",
    "mul_add",
    "f32::MAX",
    "i64::MIN",
    "f64::consts::PI",
    "println!",
    "vec![1]",
    "|x| x",
    "move |i: usize| i",
    "\u{feff}",
    "é",
    "\t",
    "\r\n",
    "//",
    "/*",
    "*/",
    "\n",
];

#[derive(Clone, Debug)]
pub(super) enum Mutation {
    DeleteChars(Index, usize),
    DuplicateChars(Index, usize, Index),
    SwapChars(Index, Index),
    InsertBytes(Index, Vec<u8>),
    FlipByte(Index, u8),
    Truncate(Index),
    DeleteToken(Index),
    DuplicateToken(Index, Index),
    SwapTokens(Index, Index),
    ReplaceToken(Index, Index),
    InsertToken(Index, Index),
    DeleteTokenRun(Index, usize),
}

pub(super) fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        2 => (any::<Index>(), 1..8usize).prop_map(|(a, n)| Mutation::DeleteChars(a, n)),
        1 => (any::<Index>(), 1..40usize, any::<Index>()).prop_map(|(a, n, b)| Mutation::DuplicateChars(a, n, b)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::SwapChars(a, b)),
        1 => (any::<Index>(), proptest::collection::vec(any::<u8>(), 1..6)).prop_map(|(a, v)| Mutation::InsertBytes(a, v)),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(a, v)| Mutation::FlipByte(a, v)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
        3 => any::<Index>().prop_map(Mutation::DeleteToken),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::DuplicateToken(a, b)),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::SwapTokens(a, b)),
        3 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::ReplaceToken(a, b)),
        3 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::InsertToken(a, b)),
        1 => (any::<Index>(), 2..12usize).prop_map(|(a, n)| Mutation::DeleteTokenRun(a, n)),
    ]
}

pub(super) fn apply(src: &mut Vec<u8>, m: &Mutation) {
    let vocab = |i: &Index| VOCAB[i.index(VOCAB.len())].as_bytes().to_vec();
    // Byte positions `0..=len`.
    let pos = |i: &Index, len: usize| i.index(len + 1);
    match m {
        Mutation::DeleteChars(a, n) => {
            if !src.is_empty() {
                let at = a.index(src.len());
                let end = (at + n).min(src.len());
                src.drain(at..end);
            }
        }
        Mutation::DuplicateChars(a, n, b) => {
            if !src.is_empty() {
                let at = a.index(src.len());
                let piece = src[at..(at + n).min(src.len())].to_vec();
                let to = pos(b, src.len());
                src.splice(to..to, piece);
            }
        }
        Mutation::SwapChars(a, b) => {
            if !src.is_empty() {
                let (x, y) = (a.index(src.len()), b.index(src.len()));
                src.swap(x, y);
            }
        }
        Mutation::InsertBytes(a, v) => {
            let at = pos(a, src.len());
            src.splice(at..at, v.iter().copied());
        }
        Mutation::FlipByte(a, v) => {
            if !src.is_empty() {
                let at = a.index(src.len());
                src[at] ^= v | 1;
            }
        }
        Mutation::Truncate(a) => {
            let at = pos(a, src.len());
            src.truncate(at);
        }
        _ => {
            let mut t = tokens(src);
            match m {
                Mutation::DeleteToken(a) if !t.is_empty() => {
                    t.remove(a.index(t.len()));
                }
                Mutation::DuplicateToken(a, b) if !t.is_empty() => {
                    let x = t[a.index(t.len())].clone();
                    let to = pos(b, t.len());
                    t.insert(to, x);
                }
                Mutation::SwapTokens(a, b) if !t.is_empty() => {
                    let (x, y) = (a.index(t.len()), b.index(t.len()));
                    t.swap(x, y);
                }
                Mutation::ReplaceToken(a, b) if !t.is_empty() => {
                    let at = a.index(t.len());
                    t[at] = vocab(b);
                }
                Mutation::InsertToken(a, b) => {
                    let at = pos(a, t.len());
                    let mut v = vocab(b);
                    v.insert(0, b' ');
                    v.push(b' ');
                    t.insert(at, v);
                }
                Mutation::DeleteTokenRun(a, n) if !t.is_empty() => {
                    let at = a.index(t.len());
                    let end = (at + n).min(t.len());
                    t.drain(at..end);
                }
                _ => {}
            }
            *src = t.concat();
        }
    }
}

pub(super) fn mutated_source() -> impl Strategy<Value = Vec<u8>> {
    (any::<Index>(), proptest::collection::vec(mutation(), 1..6)).prop_map(|(seed, ms)| {
        let seeds = &*SEEDS;
        let mut src = seeds[seed.index(seeds.len())].bytes.clone();
        for m in &ms {
            apply(&mut src, m);
        }
        src
    })
}
