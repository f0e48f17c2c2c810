//! The table the suite prints.

use super::Report;

/// The table the suite prints: per kernel, kache and NVRTC side by side, and each
/// memory-bound kernel's bandwidth against the copy roofline; then the summary (`summary`).
pub fn table(report: &Report) -> String {
    let mut out = format!(
        "device: {}
",
        report.device
    );
    if let (Some(c), Some(f)) = (report.copy_gbs, report.fma_tflops) {
        out += &format!("rooflines: device-to-device copy {c:.0} GB/s, FP32 FMA {f:.1} TFLOP/s\n");
    }
    out += &format!(
        "{:<14} {:<7} {:>11} {:>11} {:>10} {:>8} {:>12}  check\n",
        "kernel", "impl", "median ms", "min ms", "GB/s", "% copy", "vs nvrtc"
    );
    for r in &report.rows {
        let nv = report.rows.iter().find(|o| o.kernel == r.kernel && o.implementation == "nvrtc").map(|o| o.median_ms);
        let ratio = match nv {
            Some(t) if r.median_ms > 0.0 => format!("{:.3}x", t / r.median_ms),
            _ => "-".into(),
        };
        let gbs = r.gbs.map(|g| format!("{g:.0}")).or(r.gflops.map(|g| format!("{:.0} GF", g))).unwrap_or_else(|| "-".into());
        let pct = match (r.gbs, report.copy_gbs) {
            (Some(g), Some(c)) => format!("{:.1}%", 100.0 * g / c),
            _ => "-".into(),
        };
        out += &format!(
            "{:<14} {:<7} {:>11.4} {:>11.4} {:>10} {:>8} {:>12}  {}\n",
            r.kernel, r.implementation, r.median_ms, r.min_ms, gbs, pct, ratio, r.check
        );
    }
    out += &summary(report);
    out
}

/// The geometric mean of NVRTC's time over kache's (safe launches) across the kernels both
/// ran, the slowest of them, how many memory-bound kache kernels reach 90% of the copy
/// roofline, and the failed rows.
pub fn summary(report: &Report) -> String {
    let mut ratios = Vec::new();
    let (mut bound, mut at_roof) = (0, 0);
    for r in report.rows.iter().filter(|r| r.implementation == "kache" && r.ok && r.median_ms > 0.0) {
        let nv = report.rows.iter().find(|o| o.kernel == r.kernel && o.implementation == "nvrtc" && o.ok && o.median_ms > 0.0);
        if let Some(nv) = nv {
            ratios.push((nv.median_ms / r.median_ms, r.kernel.as_str()));
        }
        if let (Some(g), Some(c)) = (r.gbs, report.copy_gbs) {
            bound += 1;
            at_roof += usize::from(g >= 0.9 * c);
        }
    }
    let failed: Vec<String> = report.rows.iter().filter(|r| !r.ok).map(|r| format!("{} ({})", r.kernel, r.implementation)).collect();
    let mut out = String::new();
    if !ratios.is_empty() {
        let geomean = (ratios.iter().map(|(x, _)| x.ln()).sum::<f64>() / ratios.len() as f64).exp();
        let (worst, name) = ratios.iter().copied().fold((f64::INFINITY, ""), |a, b| if b.0 < a.0 { b } else { a });
        out += &format!("summary: kache (safe) vs nvrtc: geomean {geomean:.3}x over {} kernels, lowest {worst:.3}x ({name})", ratios.len());
        out += &format!("; memory-bound kernels at >= 90% of copy: {at_roof} of {bound}\n");
    }
    out += &format!("failed rows: {}\n", if failed.is_empty() { "none".into() } else { failed.join(", ") });
    out
}
