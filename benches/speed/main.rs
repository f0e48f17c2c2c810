//! `speed`: the execution-speed suite (see `suite.rs` and docs/benchmarks.md). On the GPU
//! machine, from the repository root: `.gpu/speed --json OUT.json` (or `benches/speed/run.sh`,
//! one process per part); without a GPU: `cargo run --release --example speed -- --dry-run`.

mod suite;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!(
            "usage: speed [--dry-run [--ptx DIR]] [--reps N] [--batches N] [--json FILE] [--root DIR] [--only PART,..] [--small] [--list]"
        );
        return ExitCode::SUCCESS;
    }
    if args.iter().any(|a| a == "--list") {
        for p in suite::PARTS {
            println!("{}", p.name);
        }
        return ExitCode::SUCCESS;
    }
    let opts = suite::Options {
        dry_run: args.iter().any(|a| a == "--dry-run"),
        reps: value("--reps").and_then(|v| v.parse().ok()).unwrap_or(10),
        batches: value("--batches").and_then(|v| v.parse().ok()).unwrap_or(15),
        root: value("--root").map(Into::into).unwrap_or_else(|| ".".into()),
        ptx_dir: value("--ptx").map(Into::into),
        small: args.iter().any(|a| a == "--small"),
        only: value("--only").map(|v| v.split(',').filter(|s| !s.is_empty()).map(String::from).collect()).unwrap_or_default(),
    };
    match suite::run(&opts) {
        Ok(report) => {
            print!("{}", suite::table(&report));
            if let Some(path) = value("--json") {
                let text = serde_json::to_string_pretty(&report).unwrap_or_default();
                if let Err(e) = std::fs::write(&path, text) {
                    eprintln!("error: {path}: {e}");
                    return ExitCode::from(2);
                }
            }
            if report.failures().next().is_some() { ExitCode::from(1) } else { ExitCode::SUCCESS }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
