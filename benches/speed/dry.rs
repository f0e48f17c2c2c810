//! The dry run's compiles (no GPU): every kache kernel to PTX for sm_90, bounds-checked and
//! unchecked (ptxas assembles each where there is one), and every CUDA source through NVRTC on
//! the CPU; each PTX written to `--ptx DIR` when given, for comparing kache's code with NVRTC's.

use kache::{Layout, Module, Specialization, Target};

use super::gpu::nvrtc_ptx;
use super::{Options, Row};

/// Compiles everything; what fails is a failed row (the rest still compiles and runs).
pub fn compile(opts: &Options, kache: &[Module], cuda: &[(&str, String)]) -> Vec<Row> {
    let mut failed = Vec::new();
    let ptxas = kache::toolchain::find_ptxas();
    let target = match kache::Arch::parse("sm_90") {
        Ok(a) => Target::Nvptx(a),
        Err(e) => return vec![Row::failed("sm_90", "-", e.to_string())],
    };
    let target_a = match kache::Arch::parse("sm_90a") {
        Ok(a) => Target::Nvptx(a),
        Err(e) => return vec![Row::failed("sm_90a", "-", e.to_string())],
    };
    let write = |file: String, text: &str| -> Result<(), String> {
        match &opts.ptx_dir {
            Some(dir) => std::fs::write(dir.join(&file), text).map_err(|e| format!("{file}: {e}")),
            None => Ok(()),
        }
    };
    if let Some(dir) = &opts.ptx_dir
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        failed.push(Row::failed("--ptx", "-", format!("{}: {e}", dir.display())));
    }
    let mut kernels = 0;
    for module in kache {
        // Every kernel, and every instance of a kernel generic over types (`gemm::<bf16>`).
        let names = module.kernels_to_compile().map(|k| k.names).unwrap_or_else(|_| module.kernel_names());
        for name in names {
            for checked in [true, false] {
                let one = || -> Result<(), String> {
                    let k = module.kernel(&name).map_err(|e| e.to_string())?;
                    let spec = Specialization::uniform(k.program(), Layout::C);
                    let build = |t| if checked { k.compile(t, &spec) } else { k.compile_unchecked(t, &spec) };
                    // A kernel of sm_90a's instructions (`wgmma`) compiles for sm_90a, as a
                    // launch on a Hopper GPU does; every other for sm_90.
                    let (c, arch) = match build(target) {
                        Err(e) if e.to_string().contains("needs sm_90a") => (build(target_a), "sm_90a"),
                        c => (c, "sm_90"),
                    };
                    let c = c.map_err(|e| e.to_string())?;
                    let ptx = c.ptx().ok_or("no PTX")?;
                    if let Some(p) = &ptxas {
                        kache::toolchain::ptxas(p, ptx, arch).map_err(|e| format!("ptxas rejected it: {e}"))?;
                    }
                    write(format!("kache-{name}{}.ptx", if checked { "" } else { "-unchecked" }), ptx)
                };
                if let Err(e) = one() {
                    failed.push(Row::failed(&name, if checked { "kache-ptx" } else { "unchk-ptx" }, e));
                }
            }
            kernels += 1;
        }
    }
    let mut entries = 0;
    for (file, source) in cuda {
        let stem = std::path::Path::new(file).file_stem().and_then(|s| s.to_str()).unwrap_or("cuda");
        match nvrtc_ptx(source, "sm_90").and_then(|ptx| {
            write(format!("nvrtc-{stem}.ptx"), &ptx)?;
            Ok(ptx.matches(".entry").count())
        }) {
            Ok(0) => failed.push(Row::failed(file, "nvrtc", "no kernel in NVRTC's PTX".into())),
            Ok(n) => entries += n,
            Err(e) => failed.push(Row::failed(file, "nvrtc", e)),
        }
    }
    eprintln!(
        "dry run: {kernels} kache kernels compiled for sm_90, checked and unchecked (ptxas: {}), NVRTC compiled {} CUDA sources ({entries} kernels), {} failures",
        if ptxas.is_some() { "found" } else { "not found" },
        cuda.len(),
        failed.len()
    );
    failed
}

/// `ptx` with the `.pragma "nounroll"` removed from each loop of more than one global load
/// (the unrolled ones; remainder loops keep theirs): what kache emitted before grid-strided
/// loops kept LLVM's `nounroll`. An error if there was none to remove.
pub fn free_unrolled_loops(ptx: &str) -> Result<String, String> {
    let lines: Vec<&str> = ptx.lines().collect();
    let mut drop = Vec::new();
    let mut start = 0;
    for i in 0..=lines.len() {
        if i == lines.len() || lines[i].starts_with("$L__") {
            let block = &lines[start..i];
            let loads = block.iter().filter(|l| l.contains("ld.global")).count();
            if loads > 1 {
                drop.extend(block.iter().position(|l| l.contains(".pragma \"nounroll\"")).map(|p| start + p));
            }
            start = i;
        }
    }
    if drop.is_empty() {
        return Err("no unrolled loop marked nounroll".into());
    }
    let kept: Vec<&str> = lines.iter().enumerate().filter(|(i, _)| !drop.contains(i)).map(|(_, l)| *l).collect();
    Ok(kept.join("\n") + "\n")
}
