//! Tests: kernels across files. `mod name;` reads `name.rs` or `name/mod.rs` beside the file
//! (from the disk through `Jit::load_file`, from memory through `Jit::load_sources`), paths and
//! `use` name their items, diagnostics point into the file at fault, and keys follow the items
//! a kernel reaches, not the files they are in.

// A failed unwrap in a test is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use kache::lang::MemorySources;
use kache::{Device, Grid, Layout, Specialization, Target};

use crate::common;

const ROOT: &str = r#"
mod common;
use common::{Mode, scale as s};

#[kernel]
pub fn k(x: &[f32], out: &mut [f32], m: Mode) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = common::apply(m, x[i], s(2.0)) + common::inner::BIAS;
    }
}
"#;

const COMMON: &str = r#"pub mod inner;

#[derive(Clone, Copy)]
#[repr(u8)]
pub enum Mode {
    Add,
    Mul,
}

pub fn scale(x: f32) -> f32 {
    x * 3.0
}

pub fn apply(m: Mode, a: f32, b: f32) -> f32 {
    match m {
        Mode::Add => a + b,
        Mode::Mul => a * b,
    }
}

pub fn unused(x: f32) -> f32 {
    x - 1.0
}
"#;

const INNER: &str = "pub const BIAS: f32 = 0.5;\n";

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (p, t) in files {
        let p = dir.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, t).unwrap();
    }
}

fn run(m: &kache::Module, mode: u8) -> Vec<f32> {
    let dev = Device::host();
    let x = dev.upload(&[1.0f32, 2.0, 4.0]).unwrap();
    let mut out = dev.alloc::<f32>(&[3]).unwrap();
    m.kernel("k").unwrap().launch(&dev, Grid::linear(3, 32), (&x, &mut out, mode)).unwrap();
    out.download().unwrap()
}

fn key(m: &kache::Module) -> kache::cache::Key {
    let k = m.kernel("k").unwrap();
    k.compile(Target::Host, &Specialization::uniform(k.program(), Layout::C)).unwrap().key()
}

#[test]
fn a_kernel_split_across_files_loads_from_disk_and_from_memory() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[("k.rs", ROOT), ("common.rs", COMMON), ("common/inner.rs", INNER)]);
    let jit = common::memory_jit();
    let m = jit.load_file(dir.path().join("k.rs")).unwrap();
    assert_eq!(m.files().len(), 3, "the root, common.rs and common/inner.rs");
    assert_eq!(m.module_files().iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(), vec!["common.rs", "common/inner.rs"]);
    assert_eq!(run(&m, 0), vec![7.5, 8.5, 10.5]);
    assert_eq!(run(&m, 1), vec![6.5, 12.5, 24.5]);
    let e = m.kernel("k").unwrap().launch(
        &Device::host(),
        Grid::linear(3, 32),
        (&Device::host().upload(&[1.0f32]).unwrap(), &mut Device::host().alloc::<f32>(&[1]).unwrap(), 2u8),
    );
    let e = e.unwrap_err().to_string();
    assert!(e.contains("2 is not a discriminant of `common::Mode`"), "{e}");

    let mem = jit.load_sources("k.rs", ROOT, MemorySources::new().with("common.rs", COMMON).with("common/inner.rs", INNER)).unwrap();
    assert_eq!(run(&mem, 1), vec![6.5, 12.5, 24.5]);
    assert_eq!(key(&m), key(&mem), "where the files come from is not keyed");

    // `common/mod.rs` is as good as `common.rs`.
    let nested = jit.load_sources("k.rs", ROOT, MemorySources::new().with("common/mod.rs", COMMON).with("common/inner.rs", INNER)).unwrap();
    assert_eq!(key(&nested), key(&m));
}

#[test]
fn keys_follow_the_items_reached_whatever_file_they_are_in() {
    let jit = common::memory_jit();
    let load = |common: &str| {
        jit.load_sources("k.rs", ROOT, MemorySources::new().with("common.rs", common).with("common/inner.rs", INNER)).unwrap()
    };
    let base = key(&load(COMMON));
    assert_eq!(key(&load(&COMMON.replace("x - 1.0", "x - 2.0"))), base, "an edit to an unreached item keeps the key");
    assert_eq!(key(&load(&format!("{COMMON}\n// a comment\npub fn more() -> i32 {{ 1 }}\n"))), base, "a new unreached item keeps it too");
    assert_ne!(key(&load(&COMMON.replace("x * 3.0", "x * 4.0"))), base, "an edit to a reached item changes it");
    // The module renamed (its file with it): the same code, the same key.
    let renamed = ROOT.replace("common", "util");
    let m = jit.load_sources("k.rs", &renamed, MemorySources::new().with("util.rs", COMMON).with("util/inner.rs", INNER)).unwrap();
    assert_eq!(key(&m), base, "file and module names are not keyed");
}

fn load_err(files: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), files);
    let e = common::memory_jit().load_file(dir.path().join("k.rs")).and_then(|m| m.kernel("k").map(|_| ())).unwrap_err();
    let root = dir.path().display().to_string();
    e.to_string().replace(&root, "DIR")
}

#[test]
fn module_errors_name_the_file_and_place() {
    // A type error inside the module file is located there.
    let bad = COMMON.replace("x * 3.0", "x * 3");
    let e = load_err(&[("k.rs", ROOT), ("common.rs", &bad), ("common/inner.rs", INNER)]);
    assert!(e.starts_with("DIR/common.rs:11:9: mismatched types"), "{e}");
    // Missing, and found twice.
    let e = load_err(&[("k.rs", ROOT)]);
    assert!(e.starts_with("DIR/k.rs:2:5: file not found for module `common`"), "{e}");
    let e = load_err(&[("k.rs", ROOT), ("common.rs", COMMON), ("common/mod.rs", COMMON), ("common/inner.rs", INNER)]);
    assert!(e.contains("file for module `common` found at both `common.rs` and `common/mod.rs`"), "{e}");
    // A cycle through `#[path]`.
    let e =
        load_err(&[("k.rs", "mod a;\n#[kernel] pub fn k(o: &mut [f32]) { o[0] = 1.0; }\n"), ("a.rs", "#[path = \"a.rs\"]\nmod again;\n")]);
    assert!(e.contains("circular modules: `a.rs` includes itself"), "{e}");
    // A private item, an unresolved import, a name defined twice in a module file.
    let e = load_err(&[("k.rs", ROOT), ("common.rs", &COMMON.replace("pub fn scale", "fn scale")), ("common/inner.rs", INNER)]);
    assert!(e.starts_with("DIR/k.rs:3:20: `scale` is private"), "{e}");
    let e = load_err(&[("k.rs", ROOT), ("common.rs", &format!("{COMMON}\npub fn apply() {{}}\n")), ("common/inner.rs", INNER)]);
    assert!(e.starts_with("DIR/common.rs:") && e.contains("the name `apply` is defined more than once"), "{e}");
    let e = load_err(&[("k.rs", &ROOT.replace("scale as s", "scale2 as s")), ("common.rs", COMMON), ("common/inner.rs", INNER)]);
    assert!(e.contains("unresolved import `common::scale2`"), "{e}");
    // Text with `mod name;` and no files around it.
    let e = common::memory_jit().load_source("k.rs", ROOT).unwrap_err().to_string();
    assert!(e.starts_with("k.rs:2:5: `mod common;` needs the file `common.rs`"), "{e}");
}

#[test]
fn inline_modules_paths_and_globs_resolve_as_in_rust() {
    let src = r#"
mod math {
    pub mod consts {
        pub const TWO: i32 = 2;
    }
    pub fn double(x: i32) -> i32 {
        x * consts::TWO + super::OFFSET - crate::OFFSET
    }
    #[derive(Clone, Copy, PartialEq)]
    pub enum Sign { Neg = -1, Zero = 0, Pos = 1 }
}

const OFFSET: i32 = 100;
use math::Sign::*;
use math::*;

#[kernel]
pub fn k(x: &[i32], out: &mut [i32]) {
    let i = global_id_x();
    if i < x.len() {
        let s = match x[i] { i32::MIN..=-1 => Neg, 0 => Zero, _ => Pos };
        out[i] = double(x[i]) * 10 + s as i32 + if s == Sign::Pos { 1000 } else { 0 };
    }
}
"#;
    let m = common::memory_jit().load_source("inline.rs", src).unwrap();
    let dev = Device::host();
    let x = dev.upload(&[-3, 0, 5]).unwrap();
    let mut out = dev.alloc::<i32>(&[3]).unwrap();
    m.kernel("k").unwrap().launch(&dev, Grid::linear(3, 32), (&x, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), vec![-61, 0, 1101]);
}

#[test]
fn unreachable_arms_are_warnings() {
    let src = "#[kernel]\npub fn k(o: &mut [u32], x: bool) {\n    o[0] = match x {\n        true => 1,\n        false => 2,\n        _ => 3,\n    };\n}\n";
    let m = common::memory_jit().load_source("w.rs", src).unwrap();
    let s = m.check().unwrap();
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    assert!(s.warnings[0].starts_with("w.rs:6:9: unreachable pattern"), "{:?}", s.warnings);
    assert_eq!(m.kernel("k").unwrap().program().warnings.len(), 1);
}
