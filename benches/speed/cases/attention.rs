//! Fused attention on the tensor cores (benches/speed/kernels/attention.rs): bf16, head dimensions 64
//! and 128, causal and not, each checked against float64 on sampled rows. torch's
//! `scaled_dot_product_attention` (flash backend) and Triton's fused-attention tutorial kernel
//! measure the same rows in triton_tensor.py.

use half::bf16;
use kache::Grid;

use super::super::harness::*;

pub fn attention(run: &mut Run) -> Result<(), String> {
    let (batch, seq) = if run.full_size() { (4usize, 4096usize) } else { (1, 128) };
    for d in [64usize, 128] {
        for causal in [false, true] {
            let heads = if run.full_size() { 2048 / d } else { 2 };
            let len = batch * heads * seq * d;
            let draw = |seed| -> Vec<bf16> { uniform_f32(len, seed).into_iter().map(|v| bf16::from_f32(2.0 * v - 1.0)).collect() };
            let (q, k, v) = (draw(31), draw(32), draw(33));
            let (qd, kd, vd) = (
                run.dev.upload(&q).map_err(|e| e.to_string())?,
                run.dev.upload(&k).map_err(|e| e.to_string())?,
                run.dev.upload(&v).map_err(|e| e.to_string())?,
            );
            let od = run.dev.alloc::<bf16>(&[len]).map_err(|e| e.to_string())?;
            let scale = 1.0 / (d as f32).sqrt();
            let verify = |_: &Run| -> Result<String, String> {
                let o = od.download().map_err(|e| e.to_string())?;
                let mut worst = 0f64;
                for s in 0..32usize {
                    let (bh, i) = ((s * 7) % (batch * heads), (s * 977) % seq);
                    let base = bh * seq * d;
                    let keys = if causal { i + 1 } else { seq };
                    let scores: Vec<f64> = (0..keys)
                        .map(|j| (0..d).map(|x| q[base + i * d + x].to_f64() * k[base + j * d + x].to_f64()).sum::<f64>() * scale as f64)
                        .collect();
                    let mx = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let w: Vec<f64> = scores.iter().map(|x| (x - mx).exp()).collect();
                    let total: f64 = w.iter().sum();
                    for x in 0..d {
                        let want: f64 = (0..keys).map(|j| w[j] * v[base + j * d + x].to_f64()).sum::<f64>() / total;
                        // The scale of the weighted sum: what rounding its terms can reach.
                        let scale: f64 = (0..keys).map(|j| w[j] * v[base + j * d + x].to_f64().abs()).sum::<f64>() / total;
                        let got = o[base + i * d + x].to_f64();
                        worst = worst.max((got - want).abs() / scale.max(1e-30));
                    }
                }
                if worst > 1e-2 {
                    Err(format!("error {worst:.2e} of sum p |v|, tolerance 1e-2"))
                } else {
                    Ok(format!("max err {worst:.1e} of sum p |v|, 32 rows"))
                }
            };
            let name = format!("attn_d{d}{}", if causal { "_causal" } else { "" });
            let kernel = run.k(&name)?;
            let grid = Grid::new(((seq / 128) as u32, (batch * heads) as u32), 128u32).with_shared_mem((128 * d * 2 + 32768) as u32);
            let flops = Some(4.0 * (batch * heads) as f64 * (seq as f64).powi(2) * d as f64 / if causal { 2.0 } else { 1.0 });
            let mut o = od.clone();
            run.measure(
                &name,
                None,
                flops,
                "kache",
                |r| kernel.launch(&r.dev, grid, (&qd, &kd, &vd, &mut o, seq, scale)).map_err(|e| e.to_string()),
                &verify,
            )?;
            run.measure(
                &name,
                None,
                flops,
                UNCHECKED,
                // SAFETY: the checked launch of the same arguments above passed its checks and
                // matched the reference.
                |r| unsafe { kernel.launch_unchecked(&r.dev, grid, (&qd, &kd, &vd, &mut o, seq, scale)) }.map_err(|e| e.to_string()),
                &verify,
            )?;
        }
    }
    Ok(())
}
