//! Scans: the single-pass inclusive scan (decoupled look-back).

use std::cell::Cell;

use kache::Grid;

/// The kache source of the scan, which the variants edit.
const KERNELS: &str = "benches/speed/kernels.rs";

use super::super::gpu::{arg, ptr};
use super::super::harness::*;

/// Elements per thread of the single-pass scan (`SCAN_ITEMS` in kernels.rs and cuda.cu), its
/// kernel attribute in kernels.rs, and the alternatives measured beside it (kache's source with
/// another `SCAN_ITEMS`, or another attribute): row name, elements per thread, attribute (empty:
/// the suite's).
const SCAN_ITEMS: usize = 16;
const SCAN_ATTRIBUTE: &str = "#[kernel(max_threads = 256, min_blocks = 8)]";
const SCAN_VARIANTS: [(&str, usize, &str); 2] = [("k-nolb", 16, "#[kernel]"), ("k-t2048", 8, "")];

/// kache's `scan` of row `row` with `items` elements per thread and `attribute` on it: the
/// suite's own, or compiled from kernels.rs so changed.
pub fn scan_kernel(run: &Run, row: &str, items: usize, attribute: &str) -> Result<kache::Kernel, String> {
    if items == SCAN_ITEMS && attribute.is_empty() {
        return run.k("scan");
    }
    let path = run.opts.root.join(KERNELS);
    let source = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let ours = format!("const SCAN_ITEMS: usize = {SCAN_ITEMS};");
    let entry = format!("{SCAN_ATTRIBUTE}\npub fn scan(");
    if !source.contains(&ours) || !source.contains(&entry) {
        return Err(format!("{KERNELS} does not say `{ours}` and `{SCAN_ATTRIBUTE} pub fn scan(`"));
    }
    let mut variant = source.replace(&ours, &format!("const SCAN_ITEMS: usize = {items};"));
    if !attribute.is_empty() {
        variant = variant.replace(&entry, &format!("{attribute}\npub fn scan("));
    }
    let m = run.jit.load_source(&format!("kernels_scan_{row}.rs"), &variant).map_err(|e| e.to_string())?;
    m.kernel("scan").map_err(|e| e.to_string())
}

/// The next of a scan's launch counts (1, 2, ...): its epoch.
pub fn next_epoch(launches: &Cell<u64>) -> u64 {
    launches.set(launches.get() + 1);
    launches.get()
}

/// An inclusive scan of `n` u32 in one pass (decoupled look-back): a block of 256 per tile of
/// 256 * SCAN_ITEMS, each implementation with its own tile statuses, zeroed once, and its own
/// launch count, passed as the launch's epoch (1, 2, ...). The result is checked after the
/// first launch and again after the timed ones (later epochs).
pub fn scan(run: &mut Run) -> Result<(), String> {
    let n = run.size(1 << 28, 100_000);
    let mut r = rng(9);
    let x: Vec<u32> = (0..n).map(|_| (r() % 4) as u32).collect();
    let xd = run.dev.upload(&x).map_err(|e| e.to_string())?;
    let yd = run.dev.alloc::<u32>(&[n]).map_err(|e| e.to_string())?;
    let verify = |_: &Run| -> Result<String, String> {
        let got = yd.download().map_err(|e| e.to_string())?;
        let mut acc = 0u32;
        for i in 0..n {
            acc = acc.wrapping_add(x[i]);
            if got[i] != acc {
                return Err(format!("y[{i}] = {}, expected {acc}", got[i]));
            }
        }
        Ok("exact".into())
    };
    // Measures one implementation: zeroed output, the checked first launch and the timing
    // (`measure`), then one more launch checked (on the host, after two unchecked ones: the
    // host times nothing), so later epochs are checked too.
    let bytes = Some(8.0 * n as f64);
    let one = |run: &mut Run, imp: &str, launch: &dyn Fn(&Run) -> Result<(), String>| -> Result<(), String> {
        yd.copy_from(&vec![0u32; n]).map_err(|e| e.to_string())?;
        run.measure("scan", bytes, None, imp, launch, &verify)?;
        if run.gpu.is_none() {
            launch(run)?;
            launch(run)?;
        }
        yd.copy_from(&vec![0u32; n]).map_err(|e| e.to_string())?;
        launch(run)?;
        verify(run).map(|_| ()).map_err(|e| format!("scan ({imp}), a later launch: {e}"))
    };
    let mut kache_rows = vec![("kache", SCAN_ITEMS, true, ""), (UNCHECKED, SCAN_ITEMS, false, "")];
    kache_rows.extend(SCAN_VARIANTS.iter().map(|(name, items, attribute)| (*name, *items, true, *attribute)));
    for (imp, items, checked, attribute) in kache_rows {
        let k = scan_kernel(run, imp, items, attribute)?;
        let tiles = n.div_ceil(256 * items);
        let grid = Grid::new(tiles as u32, 256u32);
        let status = run.dev.alloc::<u64>(&[tiles]).map_err(|e| e.to_string())?;
        let epochs = Cell::new(0u64);
        let launch = |r: &Run| -> Result<(), String> {
            let (mut y, mut st, epoch) = (yd.clone(), status.clone(), next_epoch(&epochs));
            if checked {
                k.launch(&r.dev, grid, (&xd, &mut y, &mut st, epoch)).map_err(|e| e.to_string())
            } else {
                // SAFETY: the checked launch of the same kernel and arguments (the row before)
                // stayed in bounds (a fault would have failed it) and matched the reference.
                unsafe { k.launch_unchecked(&r.dev, grid, (&xd, &mut y, &mut st, epoch)) }.map_err(|e| e.to_string())
            }
        };
        one(run, imp, &launch)?;
    }
    // NVRTC: cuda.cu's `scan_lb6` (SCAN_ITEMS per thread under launch bounds (256, 6): the row
    // kache is compared with, NVRTC's fastest: its code spills 152 bytes under kache's (256, 8)
    // and 8 here), `scan` (kache's bounds) and `scan_t2048` (8 per thread, k-t2048's twin).
    let nvrtc_rows = if run.gpu.is_some() {
        &[("nvrtc", "scan_lb6", SCAN_ITEMS), ("nv-lb8", "scan", SCAN_ITEMS), ("nv-t2048", "scan_t2048", 8)][..]
    } else {
        &[]
    };
    for &(imp, function, items) in nvrtc_rows {
        let tiles = n.div_ceil(256 * items);
        let status = run.dev.alloc::<u64>(&[tiles]).map_err(|e| e.to_string())?;
        let (px, pn, py, ps) = (ptr(&xd), n as i32, ptr(&yd), ptr(&status));
        let epochs = Cell::new(0u64);
        let launch = |r: &Run| -> Result<(), String> {
            let (mut px, mut pn, mut py, mut ps, mut epoch) = (px, pn, py, ps, next_epoch(&epochs));
            r.nvrtc()?.launch(
                function,
                (tiles as u32, 1),
                (256, 1),
                &mut [arg(&mut px), arg(&mut pn), arg(&mut py), arg(&mut ps), arg(&mut epoch)],
            )
        };
        one(run, imp, &launch)?;
    }
    Ok(())
}
