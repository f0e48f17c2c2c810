//! The examples of docs/language.md and docs/captures.md compile: every ```kache block must
//! type-check and give PTX that ptxas accepts; every ```kache,fail block must be rejected with a
//! located diagnostic.

use kache::{Arch, Layout, Specialization, Target};

fn blocks(doc: &str) -> Vec<(String, bool, usize)> {
    let text = std::fs::read_to_string(crate::common::root().join("docs").join(doc)).unwrap();
    let mut out = Vec::new();
    let mut cur: Option<(String, bool, usize)> = None;
    for (n, line) in text.lines().enumerate() {
        match &mut cur {
            None => {
                if let Some(info) = line.trim_start().strip_prefix("```kache") {
                    cur = Some((String::new(), info.contains("fail"), n + 1));
                }
            }
            Some((body, fail, at)) => {
                if line.trim_start().starts_with("```") {
                    out.push((std::mem::take(body), *fail, *at));
                    cur = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    out
}

fn check_doc(doc: &str) {
    let ptxas = crate::common::ptxas();
    let bs = blocks(doc);
    assert!(!bs.is_empty(), "{doc} has no kache examples");
    for (src, fail, line) in bs {
        let name = format!("{doc}:{line}");
        let jit = crate::common::memory_jit();
        let m = jit.load_source(&name, &src);
        if fail {
            let failed = match &m {
                Err(_) => true,
                Ok(m) => m.check().is_err(),
            };
            assert!(failed, "{name}: the example marked `fail` compiles");
            continue;
        }
        let m = m.unwrap_or_else(|e| panic!("{name}: {e}"));
        m.check().unwrap_or_else(|e| panic!("{name}:\n{e:?}"));
        // Every kernel, and every instance of each generic kernel with only type parameters
        // (one with a const parameter is checked above, at its definition).
        for k in m.kernels_to_compile().unwrap_or_else(|e| panic!("{name}: {e}")).names {
            let kern = m.kernel(&k).unwrap();
            // sm_90a for a kernel with an instruction only sm_90a has (`wgmma`).
            let arch = if kache::lang::needs_accelerated(kern.program()) { "sm_90a" } else { "sm_90" };
            let c = kern
                .compile(Target::Nvptx(Arch::parse(arch).unwrap()), &Specialization::uniform(kern.program(), Layout::C))
                .unwrap_or_else(|e| panic!("{name} {k}: {e}"));
            if let Some(p) = &ptxas {
                crate::common::assemble(p, c.ptx().unwrap(), &format!("{name} {k}"));
            }
        }
    }
}

#[test]
fn language_reference_examples_compile() {
    check_doc("language.md");
}

#[test]
fn captures_guide_examples_compile() {
    check_doc("captures.md");
}

/// Every feature of Cargo.toml has its row in docs/features.md, and the table names no other.
#[test]
fn every_feature_is_documented() {
    let root = crate::common::root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let section = manifest.split("\n[features]\n").nth(1).expect("Cargo.toml has a [features] table");
    let section = section.split("\n[").next().unwrap_or(section);
    let features: std::collections::BTreeSet<String> = section
        .lines()
        .filter_map(|l| l.split_once(" = ").map(|(k, _)| k.trim().to_string()))
        .filter(|k| !k.starts_with('#') && k != "default")
        .collect();
    assert!(features.contains("compiler") && features.contains("cuda"), "{features:?}");
    let doc = std::fs::read_to_string(root.join("docs/features.md")).unwrap();
    let rows: std::collections::BTreeSet<String> =
        doc.lines().filter_map(|l| l.strip_prefix("| `")).filter_map(|l| l.split_once('`').map(|(name, _)| name.to_string())).collect();
    assert_eq!(rows, features, "docs/features.md's table against Cargo.toml's [features]");
}
