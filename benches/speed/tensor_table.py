#!/usr/bin/env python3
"""The tensor-core table of the speed suite: kache's GEMM and attention rows (safe launch and
`unchk`) beside torch (cuBLAS, SDPA flash) and Triton (tutorial kernels), from all.json of a
run (benches/speed/run.sh writes it): TFLOP/s, the fraction of the dense peak measured in the
same run (cuBLAS at 8192^3: bf16 for the 16-bit rows, TF32 for the tf32 rows; the FP32 FMA
roofline for sgemm), and the ratio to torch and to Triton (their time over the row's: above 1
is faster). The issue's targets are checked at the end, each with the faster of kache's GEMMs
(`gemm`, mma.sync; `gemm_wg`, `gemm_tma` and `gemm_ws`, sm_90a's warpgroup MMA, tiles by
cp.async or by the tensor memory accelerator, the last warp-specialised; the tf32 rows `gemm_tf32`
on mma.sync and `gemm_tma_tf32`, `gemm_ws_tf32` on the warpgroup MMA).

usage: tensor_table.py OUT_DIR
"""
import json
import os
import sys


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
    data = json.load(open(os.path.join(out, "all.json")))
    rows = [r for r in data["rows"] if r["kernel"].startswith(("gemm_", "sgemm_", "attn_", "mma_peak"))]
    if not rows:
        print("tensor table: no tensor-core rows in %s/all.json" % out)
        return 0

    def find(kernel, impl):
        return next((r for r in rows if r["kernel"] == kernel and r["implementation"] == impl and r.get("ok", True)
                     and r["median_ms"] > 0), None)

    def tflops(r):
        return (r.get("gflops") or 0) / 1e3

    peak16 = find("gemm_bf16_8192", "torch")
    peak32 = find("gemm_tf32_8192", "torch")
    mma = find("mma_peak", "kache")
    fma = (data.get("rust") or {}).get("fma_tflops")
    print("tensor cores on %s" % (data.get("rust") or {}).get("device", "?"))
    print("dense peak measured here: cuBLAS bf16 8192^3 %s TFLOP/s, cuBLAS TF32 8192^3 %s TFLOP/s; kache mma.sync m16n8k16 peak %s; FP32 FMA %s"
          % tuple("%.1f" % v if v else "-" for v in (peak16 and tflops(peak16), peak32 and tflops(peak32), mma and tflops(mma), fma)))
    print("%-26s %-7s %10s %9s %7s %9s %9s  %s" % ("kernel", "impl", "median ms", "TFLOP/s", "% peak", "vs torch", "vs triton", "check"))
    for k in dict.fromkeys(r["kernel"] for r in rows):
        if k == "mma_peak":
            continue
        # gemm_wg_* (the warpgroup MMA, C = A·Bᵀ) is measured against torch's and Triton's
        # gemm_* of the same type and size.
        twin = k.replace("gemm_wg_", "gemm_").replace("gemm_tma_", "gemm_").replace("gemm_ws_", "gemm_")
        torch, triton = find(twin, "torch"), find(twin, "triton")
        if k.startswith("sgemm"):
            peak = fma
        elif "tf32" in k:
            peak = peak32 and tflops(peak32)
        else:
            peak = peak16 and tflops(peak16)
        for r in (r for r in rows if r["kernel"] == k):
            ok = r.get("ok", True) and r["median_ms"] > 0
            tf = tflops(r) if ok else 0
            pct = "%.1f%%" % (100 * tf / peak) if ok and peak else "-"
            vs_t = "%.3fx" % (torch["median_ms"] / r["median_ms"]) if ok and torch else "-"
            vs_tr = "%.3fx" % (triton["median_ms"] / r["median_ms"]) if ok and triton else "-"
            print("%-26s %-7s %10.4f %9.1f %7s %9s %9s  %s" % (k, r["implementation"], r["median_ms"], tf, pct, vs_t, vs_tr, r["check"]))
    print("targets (kache's safe launch; unchk in brackets):")

    def ratio(k, other, impl="kache"):
        # The fastest of kache's kernels for the row: `gemm` (mma.sync), `gemm_wg` (wgmma, tiles
        # by cp_async) or `gemm_tma` (wgmma, tiles by tensor copies).
        twins = (k, k.replace("gemm_", "gemm_wg_", 1), k.replace("gemm_", "gemm_tma_", 1), k.replace("gemm_", "gemm_ws_", 1))
        mine = [r for r in (find(t, impl) for t in twins) if r]
        b = find(k, other)
        return b["median_ms"] / min(r["median_ms"] for r in mine) if mine and b else None

    def line(what, k, other, want):
        got, raw = ratio(k, other), ratio(k, other, "unchk")
        verdict = "-" if got is None else ("met" if got >= want else "NOT met")
        print("  %-44s %-22s %s (%s) -> %s" % (what, "%s vs %s >= %.2fx:" % (k, other, want),
                                               "-" if got is None else "%.3fx" % got, "-" if raw is None else "%.3fx" % raw, verdict))
    for n in (4096, 8192):
        line("bf16 GEMM at least 0.8x cuBLAS", "gemm_bf16_%d" % n, "torch", 0.8)
        line("f16 GEMM at least 0.8x cuBLAS", "gemm_f16_%d" % n, "torch", 0.8)
        line("bf16 GEMM + bias + GELU vs torch", "gemm_bias_gelu_bf16_%d" % n, "torch", 0.8)
        line("tf32 GEMM at least 0.8x cuBLAS (TF32)", "gemm_tf32_%d" % n, "torch", 0.8)
    line("fp32 GEMM at least Triton tl.dot ieee", "sgemm_4096", "triton", 1.0)
    for d in (64, 128):
        for c in ("", "_causal"):
            line("attention at least 0.7x SDPA flash", "attn_d%d%s" % (d, c), "torch", 0.7)
            line("attention faster than Triton's tutorial", "attn_d%d%s" % (d, c), "triton", 1.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
