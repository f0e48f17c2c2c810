//! Cold-process cache hits measured from outside kache's workspace: this crate depends on kache
//! the way a user's crate does, so what it measures is what users get (the sled cargo resolves
//! for a dependent, kache's release code, the user's own profile).
//!
//! `cargo run --release` (from `benches/downstream`) prints the table of docs/benchmarks.md,
//! "Cold processes: a crate that depends on kache". Each figure is a whole process of this
//! binary, timed from spawn to exit by the parent: `probe FILE` builds a JIT from the
//! environment, loads FILE and compiles its first kernel to PTX for sm_80 (a miss in an empty
//! cache folder, a hit once the entry is there); `start` exits at once (the process start, with
//! LLVM's static constructors, for reference).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use kache::{Arch, Jit, Layout, Origin, Specialization, Target};

/// Fresh processes per figure.
const REPS: usize = 30;

/// Hit-only processes in a row on one store (parked bookkeeping is folded every 64).
const IN_A_ROW: usize = 200;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("start") => Ok(()),
        Some("probe") => probe(Path::new(args.get(1).ok_or("probe FILE")?)),
        None => measure(),
        Some(other) => Err(format!("unknown command {other:?}: `probe FILE`, `start`, or nothing").into()),
    }
}

/// One measured process: compile FILE's first kernel through the cache; print where the code
/// came from.
fn probe(file: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let jit = Jit::from_env()?;
    let module = jit.load_file(file)?;
    let name = module.kernel_names().first().cloned().ok_or("no kernel in the file")?;
    let kernel = module.kernel(&name)?;
    let spec = Specialization::uniform(kernel.program(), Layout::C);
    let compiled = kernel.compile(Target::Nvptx(Arch::parse("sm_80")?), &spec)?;
    match compiled.origin() {
        Origin::Compiled { .. } => println!("miss"),
        Origin::Cache(_) => println!("hit"),
        other => println!("{other:?}"),
    }
    Ok(())
}

/// Runs this binary once with `args` against the cache folder `dir`; its wall time and output.
fn run(dir: &Path, args: &[&str]) -> Result<(Duration, String), Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let t = Instant::now();
    let o = Command::new(exe).args(args).env("KACHE_DIR", dir).env("KACHE_QUIET", "1").env_remove("KACHE_REMOTE").output()?;
    let elapsed = t.elapsed();
    if !o.status.success() {
        return Err(format!("{args:?}: {}", String::from_utf8_lossy(&o.stderr)).into());
    }
    Ok((elapsed, String::from_utf8_lossy(&o.stdout).trim().to_string()))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A fresh, empty cache folder.
fn fresh(root: &Path, name: &str) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let d = root.join(name);
    if d.exists() {
        std::fs::remove_dir_all(&d)?;
    }
    Ok(d)
}

fn measure() -> Result<(), Box<dyn std::error::Error>> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = std::env::temp_dir().join(format!("kache-downstream-{}", std::process::id()));
    std::fs::create_dir_all(&root)?;
    let mut start = Vec::new();
    for _ in 0..REPS {
        start.push(run(&root, &["start"])?.0);
    }
    println!("process start (exits at once): {:.2} ms, median of {REPS}", ms(median(start)));
    println!("| kernel | cold-process miss | cold-process hit | {IN_A_ROW} hits in a row: median, slowest |");
    println!("|---|---:|---:|---:|");
    for (name, file) in [("saxpy", "examples/kernels/saxpy.rs"), ("medium", "benches/kernels/medium.rs")] {
        let file = repo.join(file);
        let file = file.to_str().ok_or("path not UTF-8")?;
        let (mut miss, mut hit) = (Vec::new(), Vec::new());
        for i in 0..REPS {
            let dir = fresh(&root, &format!("{name}-{i}"))?;
            let (t, origin) = run(&dir, &["probe", file])?;
            assert_eq!(origin, "miss", "an empty cache folder");
            miss.push(t);
            let (t, origin) = run(&dir, &["probe", file])?;
            assert_eq!(origin, "hit", "the entry the miss stored");
            hit.push(t);
            std::fs::remove_dir_all(&dir)?;
        }
        let dir = fresh(&root, &format!("{name}-row"))?;
        run(&dir, &["probe", file])?;
        let mut row = Vec::new();
        for _ in 0..IN_A_ROW {
            let (t, origin) = run(&dir, &["probe", file])?;
            assert_eq!(origin, "hit");
            row.push(t);
        }
        let slowest = row.iter().max().copied().unwrap_or_default();
        println!("| {name} | {:.1} ms | {:.1} ms | {:.1} ms, {:.1} ms |", ms(median(miss)), ms(median(hit)), ms(median(row)), ms(slowest));
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::remove_dir_all(&root)?;
    Ok(())
}
