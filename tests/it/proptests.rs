//! Tests: proptests. The front end and the code generator never panic: thousands of mutated and
//! generated sources go through `parse_bytes` and `check_module`, each inside `catch_unwind`,
//! and must come back `Ok` or as a typed error with a location. A few hundred of those that
//! check go on through the code generator for the host and for NVPTX, which must return `Ok` or
//! a typed error too (never an internal LLVM error).
//!
//! The seeds are the good kernels of `examples/kernels/` and `cache-fixtures/kernels/` plus a
//! few written here; the mutations delete, duplicate, swap and replace tokens and characters,
//! insert random bytes and truncate. Generated sources are random expression trees (well typed
//! most of the time, ill typed some of the time) and random token soups inside a kernel body.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use kache::ir::Ty;
use kache::lang::{Env, ModuleSummary, check_module, parse_bytes};
use kache::{Arch, CaptureValue, HostArray, IntoCapture, Layout, Scalar, Specialization, Target};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config as ProptestConfig;

use crate::common;

// ---- seeds ------------------------------------------------------------------------------------

/// Good kernels written here, covering what the example kernels do not: factories, closures,
/// labels, statics, constants, shared memory, atomics, N-d arrays, casts and math methods.
const INLINE_SEEDS: &[&str] = &[
    r#"const N: u32 = 4;
static TABLE: [f32; 4] = [0.0, 1.0, 2.0, 4.0];
static GRID: [[i32; 2]; 3] = [[1, 2], [3, 4], [5, 6]];

/// Squares.
#[inline]
fn sq(v: f32) -> f32 {
    v * v
}

fn clamp01(v: f32) -> f32 {
    v.max(0.0).min(1.0)
}

#[kernel]
pub fn mixed(out: &mut [f32], inp: &[f32], n: u32, flag: bool) {
    let i = global_id_x();
    if i >= out.len() {
        return;
    }
    let mut acc = 0.0f32;
    'outer: for r in 0..3 {
        for c in (0..2).step_by(1) {
            if GRID[[r, c]] > 4 {
                break 'outer;
            }
            acc += GRID[[r, c]] as f32;
        }
    }
    let mut k = 0u32;
    while k < N.min(n) {
        k += 1;
        if k % 2 == 0 {
            continue;
        }
        acc = acc.mul_add(0.5, TABLE[(k as usize) % 4]);
    }
    let v = loop {
        break sq(inp[i % inp.len()]) + acc;
    };
    out[i] = if flag { clamp01(v) } else { -v.abs().sqrt() };
}
"#,
    r#"const BLOCK: usize = 128;

#[kernel]
pub fn block_max(x: &[i32], best: &mut [i32], counts: &mut [u32]) {
    let tile = shared_array::<i32, BLOCK>();
    let t = thread_idx_x() as usize;
    let i = block_idx_x() as usize * BLOCK + t;
    tile[t] = if i < x.len() { x[i] } else { i32::MIN };
    sync_threads();
    let mut s = BLOCK / 2;
    while s > 0 {
        if t < s {
            tile[t] = tile[t].max(tile[t + s]);
        }
        sync_threads();
        s >>= 1;
    }
    if t == 0 {
        atomic_max(&mut best[0], tile[0]);
        atomic_add(&mut counts[0], 1);
        let old = atomic_cas(&mut counts[1], 0, 1u32);
        counts[2] = old.wrapping_add(grid_dim_x()) ^ (block_dim_x() << 1);
    }
}
"#,
    r#"#[kernel]
pub fn transpose(a: &Array<f64, 2>, b: &mut Array<f64, 2>, z: &Array<f64, 0>, w: &mut Array<u64, 3>) {
    let r = global_id_y();
    let c = global_id_x();
    if r < a.shape(0) && c < a.shape(1) {
        b[[c, r]] = a[[r, c]] * z[[]] + (a.stride(0) as f64).ln();
    }
    if r == 0 && c == 0 && w.shape(2) > 0 {
        w[[0, 0, 0]] = (u64::MAX >> 3) | (w.len() as u64);
    }
}
"#,
    r#"pub fn make_read(table: &[f32], factor: f32) -> impl Fn(usize) -> f32 {
    move |i: usize| table[i % table.len()] * factor
}

pub fn make_scale(table: &[f32], factor: f32, offset: i64) -> impl Kernel {
    let read = make_read(table, factor);
    let shift = move |v: f32| v + offset as f32;
    move |out: &mut [f32]| {
        let i = global_id_x();
        if i < out.len() {
            out[i] = shift(read(i));
        }
    }
}
"#,
    r#"fn poly(x: f64) -> f64 {
    let a = 1.0;
    let b = -2.5e-3;
    (a * x + b).powi(3) + x.exp() - f64::consts::PI.sin() + x.atan2(0.5)
}

#[kernel]
pub fn eval(x: &[f64], y: &mut [f64], lo: i64, hi: u64, scale: f32) {
    let i = global_id_x();
    if i < x.len() {
        let clamp = (lo as f64).max(x[i]).min(hi as f64);
        let s = scale as f64;
        y[i] = { let t = poly(clamp); t * s } + (i as f64).floor();
    }
}
"#,
];

fn read_kernels(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .filter_map(|p| std::fs::read(&p).ok().map(|b| (p.display().to_string(), b)))
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// A good kernel source to mutate.
struct Seed {
    /// File path, or `inline N`.
    origin: String,
    bytes: Vec<u8>,
    /// Whether it must check and compile with no globals bound (the example and inline
    /// kernels); the cache fixtures belong to other tests and may need a host to bind globals.
    strict: bool,
}

/// Every seed: example kernels, cache fixture kernels, then the inline ones.
static SEEDS: LazyLock<Vec<Seed>> = LazyLock::new(|| {
    let seed = |strict| move |(origin, bytes)| Seed { origin, bytes, strict };
    let mut v: Vec<Seed> = read_kernels(&common::root().join("examples").join("kernels")).into_iter().map(seed(true)).collect();
    v.extend(read_kernels(&common::fixture("kernels")).into_iter().map(seed(false)));
    v.extend(INLINE_SEEDS.iter().enumerate().map(|(i, s)| Seed {
        origin: format!("inline {i}"),
        bytes: s.as_bytes().to_vec(),
        strict: true,
    }));
    v
});

// ---- running the front end and the code generator without panicking ---------------------------

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "(no message)".into())
}

fn show(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => format!("--- source ({} bytes) ---\n{s}\n--- as a Rust string ---\n{s:?}", s.len()),
        Err(_) => format!("--- source ({} bytes, not UTF-8) ---\n{bytes:?}", bytes.len()),
    }
}

/// Parses and checks `bytes`: `Ok(Some(summary))` when it checks, `Ok(None)` on a located typed
/// error, `Err(description)` when the front end panicked or gave a bad location.
fn front_end(bytes: &[u8], env: &Env) -> Result<Option<ModuleSummary>, String> {
    let name = "fuzz.rs";
    let r = catch_unwind(AssertUnwindSafe(|| {
        let m = parse_bytes(name, bytes)?;
        check_module(&m, env)
    }));
    match r {
        Ok(Ok(summary)) => Ok(Some(summary)),
        Ok(Err(d)) => {
            let loc = d.location();
            let ok = loc
                .strip_prefix("fuzz.rs:")
                .map(|rest| {
                    let parts: Vec<&str> = rest.split(':').collect();
                    parts.len() == 2 && parts.iter().all(|p| p.parse::<usize>().is_ok_and(|n| n >= 1))
                })
                .unwrap_or(false);
            if !ok {
                return Err(format!("diagnostic location `{loc}` is not `fuzz.rs:line:col`\n{}", show(bytes)));
            }
            // Rendering must not panic either.
            match catch_unwind(AssertUnwindSafe(|| d.render(false))) {
                Ok(text) if !text.is_empty() => Ok(None),
                Ok(_) => Err(format!("empty rendered diagnostic\n{}", show(bytes))),
                Err(p) => Err(format!("rendering the diagnostic panicked: {}\n{}", panic_text(&*p), show(bytes))),
            }
        }
        Err(p) => Err(format!("the front end panicked: {}\n{}", panic_text(&*p), show(bytes))),
    }
}

/// A host array of `elem` and `ndim` dimensions (each of extent 4), as a capture.
fn host_array(elem: Scalar, ndim: u8) -> Option<CaptureValue> {
    let shape = vec![4usize; ndim as usize];
    let n: usize = shape.iter().product();
    fn arr<T: kache::Element>(v: T, n: usize, shape: &[usize]) -> Option<CaptureValue> {
        HostArray::new(vec![v; n], shape).ok()?.into_capture().ok()
    }
    match elem {
        Scalar::F32 => arr(1.5f32, n, &shape),
        Scalar::F64 => arr(2.5f64, n, &shape),
        Scalar::I32 => arr(-3i32, n, &shape),
        Scalar::I64 => arr(7i64, n, &shape),
        Scalar::U32 => arr(3u32, n, &shape),
        Scalar::U64 => arr(9u64, n, &shape),
        Scalar::Usize => arr(2usize, n, &shape),
        Scalar::Bool => arr(true, n, &shape),
        Scalar::I8 => arr(-5i8, n, &shape),
        Scalar::I16 => arr(-300i16, n, &shape),
        Scalar::U8 => arr(200u8, n, &shape),
        Scalar::U16 => arr(60000u16, n, &shape),
        Scalar::F16 => arr(half::f16::from_f32(1.5), n, &shape),
        Scalar::Bf16 => arr(half::bf16::from_f32(-2.5), n, &shape),
    }
}

fn scalar_value(s: Scalar) -> Option<CaptureValue> {
    match s {
        Scalar::F32 => 0.5f32.into_capture(),
        Scalar::F64 => 0.25f64.into_capture(),
        Scalar::I32 => (-2i32).into_capture(),
        Scalar::I64 => 5i64.into_capture(),
        Scalar::U32 => 3u32.into_capture(),
        Scalar::U64 => 11u64.into_capture(),
        Scalar::Usize => 4usize.into_capture(),
        Scalar::Bool => true.into_capture(),
        Scalar::I8 => (-7i8).into_capture(),
        Scalar::I16 => 1234i16.into_capture(),
        Scalar::U8 => 255u8.into_capture(),
        Scalar::U16 => 7u16.into_capture(),
        Scalar::F16 => half::f16::from_f32(0.75).into_capture(),
        Scalar::Bf16 => half::bf16::from_f32(3.0).into_capture(),
    }
    .ok()
}

/// The NVPTX target the fuzzed kernels are compiled for.
fn sm70() -> Target {
    Target::Nvptx(Arch::parse("sm_70").expect("sm_70 is supported"))
}

/// Compiles every kernel and kernel factory of a source that checked, for the host and for
/// NVPTX. Typed errors are fine; a panic or an internal (LLVM) error is not.
fn compile_checked(bytes: &[u8], summary: &ModuleSummary, with_globals: bool) -> Result<usize, String> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(_) => return Ok(0),
    };
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<usize, String> {
        let jit = common::memory_jit();
        let mut m = match jit.load_source("fuzz.rs", text) {
            Ok(m) => m,
            Err(e) => return Err(format!("a source that checked failed to load: {e}")),
        };
        if with_globals {
            m = m.with_global("RATE", 0.5f32).map_err(|e| e.to_string())?;
            m = m.with_global("PRICES", vec![1.0f32, 2.0, 3.0, 4.0]).map_err(|e| e.to_string())?;
        }
        let mut kernels = Vec::new();
        for k in &summary.kernels {
            // Host-array globals are read-only where the front-end test bound device arrays:
            // a typed error here is fine.
            if let Ok(kernel) = m.kernel(&k.name) {
                kernels.push(kernel);
            }
        }
        for f in &summary.kernel_factories {
            let args: Option<Vec<CaptureValue>> = f
                .params
                .iter()
                .map(|(_, ty)| match ty {
                    Ty::Scalar(s) => scalar_value(*s),
                    Ty::Array(a) => host_array(a.elem, a.ndim),
                    _ => None,
                })
                .collect();
            if let Some(args) = args
                && let Ok(kernel) = m.closure(&f.name, args)
            {
                kernels.push(kernel);
            }
        }
        let mut n = 0;
        for kernel in kernels {
            let spec = Specialization::uniform(kernel.program(), Layout::C);
            for target in [Target::Host, sm70()] {
                match kernel.compile(target, &spec) {
                    Ok(_) => n += 1,
                    Err(kache::Error::Codegen(kache::codegen::CodegenError::Llvm(e))) => {
                        return Err(format!("internal code generation error for `{}` on {target}: {e}", kernel.name()));
                    }
                    Err(_) => {}
                }
            }
        }
        Ok(n)
    }));
    match r {
        Ok(Ok(n)) => Ok(n),
        Ok(Err(e)) => Err(format!("{e}\n{}", show(bytes))),
        Err(p) => Err(format!("the code generator panicked: {}\n{}", panic_text(&*p), show(bytes))),
    }
}

// ---- mutations --------------------------------------------------------------------------------

/// Splits source bytes into rough tokens: identifier/number runs, whitespace runs, single bytes.
fn tokens(src: &[u8]) -> Vec<Vec<u8>> {
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
const VOCAB: &[&str] = &[
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
enum Mutation {
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

fn mutation() -> impl Strategy<Value = Mutation> {
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

fn apply(src: &mut Vec<u8>, m: &Mutation) {
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

fn mutated_source() -> impl Strategy<Value = Vec<u8>> {
    (any::<Index>(), proptest::collection::vec(mutation(), 1..6)).prop_map(|(seed, ms)| {
        let seeds = &*SEEDS;
        let mut src = seeds[seed.index(seeds.len())].bytes.clone();
        for m in &ms {
            apply(&mut src, m);
        }
        src
    })
}

// ---- generated expressions --------------------------------------------------------------------

/// The scalar types of generated expressions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum T {
    F32,
    F64,
    U32,
    I32,
    Usize,
    Bool,
}

const TYPES: [T; 6] = [T::F32, T::F64, T::U32, T::I32, T::Usize, T::Bool];

impl T {
    fn name(self) -> &'static str {
        match self {
            T::F32 => "f32",
            T::F64 => "f64",
            T::U32 => "u32",
            T::I32 => "i32",
            T::Usize => "usize",
            T::Bool => "bool",
        }
    }
    fn idx(self) -> usize {
        TYPES.iter().position(|t| *t == self).unwrap()
    }
    fn is_float(self) -> bool {
        matches!(self, T::F32 | T::F64)
    }
    fn is_int(self) -> bool {
        matches!(self, T::U32 | T::I32 | T::Usize)
    }
}

/// The kernel generated expressions live in: parameters and items of each type.
const EXPR_PRELUDE: &str = "const C: u32 = 3;
static TABLE: [f32; 4] = [0.0, 1.0, 2.0, 3.0];

fn sq(v: f32) -> f32 {
    v * v
}

#[kernel]
pub fn k(out: &mut [f32], inp: &[f32], a2: &Array<f64, 2>, x: f32, y: f64, n: u32, m: i32, b: bool) {
    let i = global_id_x();
    let j = 0usize;
    if i < out.len() {
";

fn leaves(t: T, globals: bool) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = match t {
        T::F32 => vec!["x", "inp[i]", "1.5", "2.0f32", "TABLE[1]", "f32::EPSILON", "0.25", "out[i]"],
        T::F64 => vec!["y", "a2[[i, j]]", "0.5f64", "1e-3", "f64::consts::PI", "3.0"],
        T::U32 => vec!["n", "C", "thread_idx_x()", "block_dim_x()", "7u32", "0", "u32::MAX"],
        T::I32 => vec!["m", "3", "i32::MAX", "42i32", "-7"],
        T::Usize => vec!["i", "j", "out.len()", "a2.shape(1)", "global_id_x()", "3usize", "inp.len()"],
        T::Bool => vec!["b", "true", "false"],
    };
    if globals && t == T::F32 {
        v.extend(["RATE", "PRICES[i % PRICES.len()]"]);
    }
    v
}

/// Well-typed expressions of each type, up to `depth` levels: `table[d][t]`.
fn typed_exprs(depth: usize, globals: bool) -> Vec<Vec<SBoxedStrategy<String>>> {
    let mut table: Vec<Vec<SBoxedStrategy<String>>> = Vec::new();
    let leaf = |t: T| proptest::sample::select(leaves(t, globals)).prop_map(str::to_string).sboxed();
    table.push(TYPES.iter().map(|t| leaf(*t)).collect());
    for d in 1..=depth {
        let prev = table[d - 1].clone();
        let sub = |t: T| prev[t.idx()].clone();
        let mut row = Vec::new();
        for &t in &TYPES {
            let mut alts: Vec<(u32, SBoxedStrategy<String>)> = vec![(3, leaf(t))];
            let s = sub(t);
            let c = sub(T::Bool);
            alts.push((1, (c.clone(), s.clone(), s.clone()).prop_map(|(c, a, b)| format!("(if {c} {{ {a} }} else {{ {b} }})")).sboxed()));
            alts.push((1, (s.clone(), s.clone()).prop_map(|(a, b)| format!("{{ let t = {a}; let _u = t; {b} }}")).sboxed()));
            if t == T::Bool {
                for &u in &TYPES[..5] {
                    let e = sub(u);
                    let ops = proptest::sample::select(vec!["<", "<=", ">", ">=", "==", "!="]);
                    alts.push((1, (e.clone(), ops, e).prop_map(|(a, op, b)| format!("({a} {op} {b})")).sboxed()));
                }
                let ops = proptest::sample::select(vec!["&&", "||", "&", "|", "^", "==", "!="]);
                alts.push((2, (s.clone(), ops, s.clone()).prop_map(|(a, op, b)| format!("({a} {op} {b})")).sboxed()));
                alts.push((1, s.clone().prop_map(|a| format!("!{a}")).sboxed()));
            } else {
                let mut ops = vec!["+", "-", "*", "/", "%"];
                if t.is_int() {
                    ops.extend(["&", "|", "^", "<<", ">>"]);
                }
                let ops = proptest::sample::select(ops);
                alts.push((4, (s.clone(), ops, s.clone()).prop_map(|(a, op, b)| format!("({a} {op} {b})")).sboxed()));
                if matches!(t, T::F32 | T::F64 | T::I32) {
                    alts.push((1, s.clone().prop_map(|a| format!("(-{a})")).sboxed()));
                }
                // Casts from any numeric type (and from bool to integers).
                let name = t.name();
                for &u in &TYPES {
                    if u == T::Bool && !t.is_int() {
                        continue;
                    }
                    alts.push((1, sub(u).prop_map(move |a| format!("({a} as {name})")).sboxed()));
                }
                let methods: Vec<&'static str> = if t.is_float() {
                    vec![
                        "abs()", "sqrt()", "floor()", "ceil()", "round()", "trunc()", "exp()", "ln()", "sin()", "cos()", "tanh()",
                        "log2()", "cbrt()",
                    ]
                } else if t == T::I32 {
                    vec!["abs()", "count_ones() as i32", "leading_zeros() as i32"]
                } else {
                    vec!["count_ones() as NAME", "trailing_zeros() as NAME"]
                };
                let methods = proptest::sample::select(methods);
                alts.push((1, (s.clone(), methods).prop_map(move |(a, mth)| format!("(({a}).{})", mth.replace("NAME", name))).sboxed()));
                let binary_methods: Vec<&'static str> = if t.is_float() {
                    vec!["min", "max", "powf", "atan2", "hypot"]
                } else {
                    vec!["min", "max", "wrapping_add", "wrapping_sub", "wrapping_mul"]
                };
                let bm = proptest::sample::select(binary_methods);
                alts.push((1, (s.clone(), bm, s.clone()).prop_map(|(a, mth, b)| format!("({a}).{mth}({b})")).sboxed()));
                if t.is_float() {
                    alts.push((1, (s.clone(), s.clone(), s.clone()).prop_map(|(a, b, c)| format!("({a}).mul_add({b}, {c})")).sboxed()));
                    alts.push((1, (s.clone(), sub(T::I32)).prop_map(|(a, p)| format!("({a}).powi({p})")).sboxed()));
                }
                if t == T::F32 {
                    alts.push((1, s.clone().prop_map(|a| format!("sq({a})")).sboxed()));
                    alts.push((1, sub(T::Usize).prop_map(|u| format!("inp[({u}) % inp.len()]")).sboxed()));
                }
            }
            row.push(proptest::strategy::Union::new_weighted(alts).sboxed());
        }
        table.push(row);
    }
    table
}

static EXPRS: LazyLock<Vec<Vec<SBoxedStrategy<String>>>> = LazyLock::new(|| typed_exprs(4, false));
static EXPRS_GLOBALS: LazyLock<Vec<Vec<SBoxedStrategy<String>>>> = LazyLock::new(|| typed_exprs(4, true));

/// Wraps an expression of type `t` in a statement; with `target != t` the statement is ill typed.
fn statement(form: usize, e: &str, t: T, target: T) -> String {
    let tn = target.name();
    // `as f32` for numbers; bools go through `u32`.
    let to_f32 = if target == T::Bool { "as u32 as f32" } else { "as f32" };
    match form % 9 {
        0 => format!("let v: {tn} = {e};\n        out[i] = v {to_f32};"),
        1 => format!("let v = {e};\n        out[i] = v {to_f32};"),
        2 => format!("out[i] = ({e}) {to_f32};"),
        3 if t == T::Bool => format!("if {e} {{ out[i] = 1.0; }} else {{ out[i] = 2.0; }}"),
        3 => format!("out[i] += ({e}) as {tn} {to_f32};"),
        4 if t == T::Bool => format!("while {e} {{ out[i] = 1.0; break; }}"),
        4 => format!("let mut v: {tn} = {e};\n        v = v;\n        out[i] = v {to_f32};"),
        5 if t.is_int() => format!("for q in 0..(({e}) as usize % 4) {{ out[i] = q as f32; }}"),
        5 => format!("let w = loop {{ break {e}; }};\n        out[i] = w {to_f32};"),
        6 if t == T::F32 => format!("atomic_add(&mut out[i], {e});"),
        6 => format!("let v: {tn} = {{ {e} }};\n        out[i] = v {to_f32};"),
        7 => format!("out[i] = sq(({e}) {to_f32});"),
        _ => format!("let z: {tn} = if b {{ {e} }} else {{ {e} }};\n        out[i] = z {to_f32};"),
    }
}

fn expr_kernel(globals: bool) -> impl Strategy<Value = (String, bool)> {
    let table = if globals { &*EXPRS_GLOBALS } else { &*EXPRS };
    let per_type: Vec<SBoxedStrategy<(T, String)>> = TYPES
        .iter()
        .map(|t| {
            let t = *t;
            table[4][t.idx()].clone().prop_map(move |e| (t, e)).sboxed()
        })
        .collect();
    (proptest::strategy::Union::new(per_type), 0..9usize, any::<Index>(), 0..10u32).prop_map(move |((t, e), form, other, wrong)| {
        // Mostly well typed; one case in five assigns to another type.
        let target = if wrong < 2 { TYPES[other.index(TYPES.len())] } else { t };
        (format!("{EXPR_PRELUDE}        {}\n    }}\n}}\n", statement(form, &e, t, target)), globals)
    })
}

/// Random control flow (nested `if`, `while`, `loop`, `for`, labelled loops, `break`,
/// `continue`, `return`, `break` with a value) around simple statements: always well typed.
fn control_flow_kernel() -> impl Strategy<Value = String> {
    let simple = proptest::sample::select(vec![
        "acc += 1.0;",
        "acc = acc * x;",
        "k += 1;",
        "out[i] = acc;",
        "if k > 5 { return; }",
        "atomic_add(&mut out[0], acc);",
        "sync_threads();",
        "let w = if b { acc } else { x }; acc += w;",
        "let w = loop { if k > 2 { break acc; } k += 1; }; acc = w;",
        "k = k.wrapping_mul(3) % 7;",
    ])
    .prop_map(str::to_string);
    let cond = proptest::sample::select(vec!["b", "k < 4", "acc > x", "!b && k != 2", "(k as usize) < out.len()"]);
    simple.prop_recursive(4, 40, 4, move |inner| {
        let body = proptest::collection::vec(inner.clone(), 0..4).prop_map(|v| v.join(" "));
        let exit = proptest::sample::select(vec!["", "break;", "continue;", "if b { break; }", "if k == 3 { continue; }", "break 'outer;", "continue 'outer;", "return;"]);
        prop_oneof![
            (cond.clone(), body.clone(), body.clone()).prop_map(|(c, a, e)| format!("if {c} {{ {a} }} else {{ {e} }}")),
            (cond.clone(), body.clone(), exit.clone()).prop_map(|(c, a, x)| format!("while {c} {{ {a} {x} k += 1; }}")),
            (body.clone(), exit.clone()).prop_map(|(a, x)| format!("loop {{ {a} {x} break; }}")),
            (body.clone(), exit.clone(), 0..4u32, any::<bool>()).prop_map(|(a, x, n, inc)| {
                format!("for q in 0..{}{n} {{ acc += q as f32; {a} {x} }}", if inc { "=" } else { "" })
            }),
            (body.clone(), exit).prop_map(|(a, x)| format!("for q in (0..9).step_by(2) {{ k += q; {a} {x} }}")),
            body.prop_map(|a| format!("{{ {a} }}")),
        ]
    })
    .prop_map(|stmt| {
        format!(
            "#[kernel]\npub fn k(out: &mut [f32], x: f32, b: bool) {{\n    let i = global_id_x();\n    let mut acc = 0.0f32;\n    let mut k = 0u32;\n    'outer: loop {{\n        {stmt}\n        break;\n    }}\n    if i < out.len() {{\n        out[i] = acc + k as f32;\n    }}\n}}\n"
        )
    })
}

/// Random token soup inside a kernel body: mostly garbage, sometimes valid.
fn token_soup() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(VOCAB), 0..40).prop_map(|toks| {
        format!("#[kernel]\npub fn k(out: &mut [f32], x: f32, i: usize, a: &[f32], b: bool) {{\n    {}\n}}\n", toks.join(" "))
    })
}

// ---- the tests --------------------------------------------------------------------------------

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, failure_persistence: None, max_shrink_iters: 2000, ..ProptestConfig::default() }
}

/// How many mutated sources that check are also compiled (the rest only check).
const MUTANT_COMPILE_LIMIT: usize = 120;
static MUTANTS_COMPILED: AtomicUsize = AtomicUsize::new(0);

#[test]
fn seeds_check_and_compile() {
    assert!(SEEDS.iter().filter(|s| s.strict).count() > INLINE_SEEDS.len(), "no example kernels found");
    for seed in SEEDS.iter() {
        let origin = &seed.origin;
        match front_end(&seed.bytes, &Env::default()).unwrap_or_else(|e| panic!("{origin}: {e}")) {
            Some(summary) => {
                let compiled = compile_checked(&seed.bytes, &summary, false).unwrap_or_else(|e| panic!("{origin}: {e}"));
                assert!(compiled > 0 || !seed.strict, "{origin}: nothing compiled");
            }
            None if seed.strict => {
                let d = parse_bytes("seed.rs", &seed.bytes).and_then(|m| check_module(&m, &Env::default()).map(|_| m)).err().unwrap();
                panic!("{origin} is rejected:\n{}", d.render(false))
            }
            None => eprintln!("{origin}: does not check without globals; used as a mutation seed only"),
        }
    }
}

proptest! {
    #![proptest_config(config(6000))]

    /// Mutated good kernels: Ok or a located typed error, never a panic.
    #[test]
    fn mutated_kernels_never_panic(src in mutated_source(), globals in any::<bool>()) {
        let env = if globals { common::globals_env() } else { Env::default() };
        match front_end(&src, &env) {
            Err(e) => prop_assert!(false, "{}", e),
            Ok(Some(summary)) => {
                if MUTANTS_COMPILED.fetch_add(1, Ordering::Relaxed) < MUTANT_COMPILE_LIMIT
                    && let Err(e) = compile_checked(&src, &summary, globals)
                {
                    prop_assert!(false, "{}", e);
                }
            }
            Ok(None) => {}
        }
    }
}

proptest! {
    #![proptest_config(config(1500))]

    /// Arbitrary bytes, and arbitrary bytes after a valid prefix.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600), prefix in any::<bool>()) {
        let mut src = if prefix { b"#[kernel]\npub fn k(out: &mut [f32]) {\n".to_vec() } else { Vec::new() };
        src.extend_from_slice(&bytes);
        if let Err(e) = front_end(&src, &Env::default()) {
            prop_assert!(false, "{}", e);
        }
    }

    /// Random tokens inside a kernel body.
    #[test]
    fn token_soup_never_panics(src in token_soup(), globals in any::<bool>()) {
        let env = if globals { common::globals_env() } else { Env::default() };
        match front_end(src.as_bytes(), &env) {
            Err(e) => prop_assert!(false, "{}", e),
            Ok(Some(summary)) => {
                if let Err(e) = compile_checked(src.as_bytes(), &summary, globals) {
                    prop_assert!(false, "{}", e);
                }
            }
            Ok(None) => {}
        }
    }
}

/// Random expression trees in a kernel body; those that check are compiled for the host and
/// for NVPTX, and a few hundred must get that far.
#[test]
fn generated_expressions_check_and_compile() {
    let mut runner = proptest::test_runner::TestRunner::new(config(600));
    let checked = AtomicUsize::new(0);
    let compiled = AtomicUsize::new(0);
    let strategy = prop_oneof![3 => expr_kernel(false), 1 => expr_kernel(true)];
    let result = runner.run(&strategy, |(src, globals)| {
        let env = if globals { common::globals_env() } else { Env::default() };
        match front_end(src.as_bytes(), &env) {
            Err(e) => prop_assert!(false, "{}", e),
            Ok(Some(summary)) => {
                checked.fetch_add(1, Ordering::Relaxed);
                match compile_checked(src.as_bytes(), &summary, globals) {
                    Ok(n) => {
                        compiled.fetch_add(n, Ordering::Relaxed);
                    }
                    Err(e) => prop_assert!(false, "{}", e),
                }
            }
            Ok(None) => {}
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (checked, compiled) = (checked.into_inner(), compiled.into_inner());
    eprintln!("generated expressions: {checked} of 600 checked, {compiled} compilations succeeded");
    assert!(checked >= 300, "only {checked} generated kernels checked");
    assert!(compiled >= 300, "only {compiled} compilations succeeded");
}

/// Random control flow: everything generated is valid (a rejection is a checker bug) and is
/// compiled for the host and for NVPTX.
#[test]
fn generated_control_flow_checks_and_compiles() {
    let mut runner = proptest::test_runner::TestRunner::new(config(250));
    let result = runner.run(&control_flow_kernel(), |src| {
        match front_end(src.as_bytes(), &Env::default()) {
            Err(e) => prop_assert!(false, "{}", e),
            Ok(None) => {
                let d = parse_bytes("fuzz.rs", src.as_bytes()).and_then(|m| check_module(&m, &Env::default()).map(|_| ())).err();
                prop_assert!(false, "valid control flow rejected:\n{}\n{}", src, d.map(|d| d.render(false)).unwrap_or_default());
            }
            Ok(Some(summary)) => {
                let n = compile_checked(src.as_bytes(), &summary, false);
                prop_assert!(matches!(n, Ok(2)), "{:?}", n);
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The expression generator is useful only if most of what it writes checks: a guard against
/// the generator (or the checker) silently drifting to rejecting everything.
#[test]
fn generated_expressions_mostly_check() {
    let mut runner = proptest::test_runner::TestRunner::new(config(150));
    let ok = AtomicUsize::new(0);
    let total = AtomicUsize::new(0);
    let rejected = std::sync::Mutex::new(Vec::<String>::new());
    runner
        .run(&expr_kernel(false), |(src, _)| {
            total.fetch_add(1, Ordering::Relaxed);
            let m = parse_bytes("gen.rs", src.as_bytes()).expect("generated source parses");
            match check_module(&m, &Env::default()) {
                Ok(_) => {
                    ok.fetch_add(1, Ordering::Relaxed);
                }
                Err(d) => rejected.lock().unwrap().push(format!("{src}\n{}", d.render(false))),
            }
            Ok(())
        })
        .unwrap();
    let rejected = rejected.into_inner().unwrap();
    let (ok, total) = (ok.load(Ordering::Relaxed), total.load(Ordering::Relaxed));
    assert!(
        ok * 2 >= total,
        "only {ok} of {total} generated kernels check; first rejections:\n{}",
        rejected.iter().take(3).cloned().collect::<Vec<_>>().join("\n")
    );
}

// ---- bugs found while fuzzing -----------------------------------------------------------------

/// A kernel around `body`, with a device function `f`.
fn never_kernel(body: &str) -> String {
    format!("fn f(v: f32) -> f32 {{\n    v\n}}\n\n#[kernel]\npub fn k(out: &mut [f32], x: f32, b: bool) {{\n    {body}\n}}\n")
}

/// Checks `src` (it must check) and compiles it for the host and NVPTX; panics with what went
/// wrong if the code generator panicked or failed internally.
fn assert_compiles_cleanly(src: &str) {
    let summary = front_end(src.as_bytes(), &Env::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("rejected by the front end:\n{src}"));
    if let Err(e) = compile_checked(src.as_bytes(), &summary, false) {
        panic!("{e}");
    }
}

/// Diverging expressions (`return`, `break`, `loop {}`) used as operands type-check (their type
/// is `!`), but code generation keeps emitting instructions with a placeholder `i32 0` for their
/// value, so LLVM sees invalid IR and inkwell panics (or LLVM reports an internal error).
#[test]
fn bug_diverging_operand_panics_in_codegen() {
    for body in [
        "out[0] = f(return);",
        "out[0] = f(loop {});",
        "let t = b && return;",
        "let t = (return) || b;",
        "atomic_add(&mut out[0], return);",
        "out[0] = x.max(return);",
        "out[0] = (return).max(x);",
    ] {
        assert_compiles_cleanly(&never_kernel(body));
    }
}

/// Same root cause, reported as an internal code generation error rather than a panic.
#[test]
fn bug_break_as_assigned_value_is_an_internal_codegen_error() {
    assert_compiles_cleanly(&never_kernel("loop { out[0] = { break; }; }"));
}

/// Diverging expressions that already compile (kept so a fix of the above keeps them working).
#[test]
fn diverging_expressions_that_compile() {
    for body in [
        "out[0] = if b { return; } else { 1.0 };",
        "let v: f32 = return;",
        "out[0] = (return) as f32;",
        "out[0] = -(return);",
        "let v = { return; 1.0 }; out[0] = v;",
        "loop { let v: f32 = break; }",
        "for q in 0..(return) {}",
        "atomic_add(&mut out[return], 1.0);",
        "let v = loop { break loop { break 3.0; }; }; out[0] = v;",
        "'a: loop { 'b: loop { break 'a; } }",
        "out[0] = loop {};",
        "if b { return } else { return }",
    ] {
        assert_compiles_cleanly(&never_kernel(body));
    }
}
