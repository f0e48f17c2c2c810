//! Computes KACHE_BUILD_ID: a hash of the compiler's own source, part of every cache key, so a
//! development build that changes code generation never reuses another build's entries.
use std::path::Path;

fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, files);
        } else if p.extension().is_some_and(|x| x == "rs") {
            files.push(p);
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=src");
    let mut files = Vec::new();
    walk(Path::new("src"), &mut files);
    files.sort();
    let mut h = blake3::Hasher::new();
    for f in &files {
        h.update(f.to_string_lossy().as_bytes());
        if let Ok(b) = std::fs::read(f) {
            h.update(&(b.len() as u64).to_le_bytes());
            h.update(&b);
        }
    }
    let id = h.finalize().to_hex();
    println!("cargo:rustc-env=KACHE_BUILD_ID={}", &id[..16]);
}
