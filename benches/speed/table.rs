//! The table the suite prints (one process's rows; benches/speed/table.py prints the complete
//! table of a run.sh run, numba-cuda and Triton included, the same way).

use super::{Report, Row};

/// A row's kind, rate and share of its roofline: memory-bound rows (bytes counted) against the
/// copy bandwidth, compute-bound rows (flops counted) against the FP32 FMA peak.
fn rate(report: &Report, r: &Row) -> (&'static str, String, String) {
    let pct = |x: f64, roof: Option<f64>| roof.map(|c| format!("{:.1}%", 100.0 * x / c)).unwrap_or_else(|| "-".into());
    match (r.gbs, r.gflops) {
        (Some(g), _) => ("mem", format!("{g:.0} GB/s"), pct(g, report.copy_gbs)),
        (None, Some(f)) => ("comp", format!("{f:.0} GF/s"), pct(f, report.fma_tflops.map(|t| 1000.0 * t))),
        (None, None) => ("-", "-".into(), "-".into()),
    }
}

/// The table the suite prints: per kernel, every implementation's row with its kind
/// (memory- or compute-bound), rate, share of the roofline and NVRTC's time over its own; then
/// the summary (`summary`).
pub fn table(report: &Report) -> String {
    let mut out = format!("device: {}\n", report.device);
    if let (Some(c), Some(f)) = (report.copy_gbs, report.fma_tflops) {
        out += &format!("rooflines: device-to-device copy {c:.0} GB/s, FP32 FMA {f:.1} TFLOP/s\n");
    }
    out += &format!(
        "{:<16} {:<7} {:<4} {:>11} {:>11} {:>12} {:>8} {:>9}  check\n",
        "kernel", "impl", "kind", "median ms", "min ms", "rate", "% roof", "nvrtc/x"
    );
    for r in &report.rows {
        let nv = nvrtc_ms(report, &r.kernel);
        let ratio = match nv {
            Some(t) if r.ok && r.median_ms > 0.0 => format!("{:.3}x", t / r.median_ms),
            _ => "-".into(),
        };
        let (kind, rate, pct) = rate(report, r);
        out += &format!(
            "{:<16} {:<7} {:<4} {:>11.4} {:>11.4} {:>12} {:>8} {:>9}  {}\n",
            r.kernel, r.implementation, kind, r.median_ms, r.min_ms, rate, pct, ratio, r.check
        );
    }
    out += &summary(report);
    out
}

/// NVRTC's median time for `kernel`, where its row ran and matched.
fn nvrtc_ms(report: &Report, kernel: &str) -> Option<f64> {
    report.rows.iter().find(|o| o.kernel == kernel && o.implementation == "nvrtc" && o.ok && o.median_ms > 0.0).map(|o| o.median_ms)
}

/// The geometric mean of NVRTC's time over kache's (safe launches) across the kernels both
/// ran, overall and for the memory- and compute-bound ones, the slowest of them, how many
/// memory-bound kache kernels reach 90% of the copy roofline, and the failed rows.
pub fn summary(report: &Report) -> String {
    let (mut all, mut mem, mut comp) = (Vec::new(), Vec::new(), Vec::new());
    let mut below = Vec::new();
    let mut bound = 0;
    for r in report.rows.iter().filter(|r| r.implementation == "kache" && r.ok && r.median_ms > 0.0) {
        if let Some(nv) = nvrtc_ms(report, &r.kernel) {
            let x = nv / r.median_ms;
            all.push((x, r.kernel.as_str()));
            if r.gbs.is_some() { mem.push(x) } else { comp.push(x) }
        }
        if let (Some(g), Some(c)) = (r.gbs, report.copy_gbs) {
            bound += 1;
            if g < 0.9 * c {
                below.push(format!("{} {:.1}%", r.kernel, 100.0 * g / c));
            }
        }
    }
    let geomean = |xs: &[f64]| (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp();
    let failed: Vec<String> = report.rows.iter().filter(|r| !r.ok).map(|r| format!("{} ({})", r.kernel, r.implementation)).collect();
    let mut out = String::new();
    if !all.is_empty() {
        let xs: Vec<f64> = all.iter().map(|(x, _)| *x).collect();
        let (worst, name) = all.iter().copied().fold((f64::INFINITY, ""), |a, b| if b.0 < a.0 { b } else { a });
        out +=
            &format!("summary: kache (safe) vs nvrtc: geomean {:.3}x over {} kernels, lowest {worst:.3}x ({name})", geomean(&xs), xs.len());
        for (what, xs) in [("memory", &mem), ("compute", &comp)] {
            if !xs.is_empty() {
                out += &format!("; {what}-bound {:.3}x over {}", geomean(xs), xs.len());
            }
        }
        out += "\n";
    }
    if bound > 0 {
        out += &format!("summary: memory-bound kache kernels at >= 90% of the copy roofline: {} of {bound}", bound - below.len());
        if !below.is_empty() {
            out += &format!("; below: {}", below.join(", "));
        }
        out += "\n";
    }
    out += &format!("failed rows: {}\n", if failed.is_empty() { "none".into() } else { failed.join(", ") });
    out
}
