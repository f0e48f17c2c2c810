//! The tensor-copy test kernel and its reference, shared by the host tests (tests/it/tma.rs)
//! and the GPU tests (tests/gpu.rs): one box a block, from a tiled tensor map, written out as
//! it lies in shared memory, against the hardware's rules for where each element lands.
#![allow(dead_code)]

use kache::{Device, Grid, Order, TensorMap};

/// A kernel copying one box a block (at `xs[b]`, `ys[b]`) and writing the shared tile as it
/// lies, element by element, to `out[b * W * H ..]`. The tile is declared at least 1 KiB long,
/// so that it starts 1024-byte aligned (docs/language.md: a box's destination is aligned to
/// 8 S bytes, 128 unswizzled), whatever order the GPU's linker lays shared arrays in.
pub fn box_source(elem: &str, w: usize, h: usize, sw: usize) -> String {
    let n = w * h;
    let size = match elem {
        "f32" | "u32" | "i32" => 4,
        "bf16" | "f16" | "u16" => 2,
        "u8" => 1,
        _ => 8,
    };
    let tile = n.max(1024 / size);
    format!(
        r#"
#[kernel]
pub fn boxes(map: &TensorMap<{elem}, {w}, {h}, {sw}>, xs: &[i32], ys: &[i32], out: &mut [{elem}]) {{
    let tile = shared_array::<{elem}, {tile}>();
    let bar = shared_array::<u64, 1>();
    let b = block_idx_x() as usize;
    if thread_idx_x() == 0 {{
        mbarrier_init(&mut bar[0], 1);
        fence_proxy_async();
        mbarrier_arrive_expect_tx(&mut bar[0], {bytes});
        cp_async_bulk_tensor_2d(&mut tile[0], map, xs[b], ys[b], &mut bar[0]);
    }}
    sync_threads();
    while !mbarrier_try_wait_parity(&bar[0], 0) {{}}
    let mut e = thread_idx_x() as usize;
    while e < {n} {{
        out[b * {n} + e] = tile[e];
        e += block_dim_x() as usize;
    }}
}}
"#,
        bytes = n * size
    )
}

/// The box at (`x`, `y`) of a `rows` x `cols` array whose rows are `pitch` elements apart, as
/// the tensor memory accelerator lays it in shared memory: element (r, c) of the box at byte
/// offset `o = (r W + c) size`, moved to `o ^ (((o >> 7) & (S / 16 - 1)) << 4)`, zeros outside.
pub fn box_reference<T: Copy + Default>(
    data: &[T],
    (rows, cols, pitch): (usize, usize, usize),
    (w, h, sw): (usize, usize, usize),
    (x, y): (i32, i32),
) -> Vec<T> {
    let size = std::mem::size_of::<T>();
    let mut out = vec![T::default(); w * h];
    for r in 0..h {
        for c in 0..w {
            let (gy, gx) = (y as i64 + r as i64, x as i64 + c as i64);
            let v = if gy >= 0 && (gy as usize) < rows && gx >= 0 && (gx as usize) < cols {
                data[gy as usize * pitch + gx as usize]
            } else {
                T::default()
            };
            let o = (r * w + c) * size;
            let to = if sw == 0 { o } else { o ^ (((o >> 7) & (sw / 16 - 1)) << 4) };
            out[to / size] = v;
        }
    }
    out
}

/// Box origins that cover the inside, the edges and the outside of a `rows` x `cols` array, each
/// column a multiple of `per` elements (16 bytes: where a box may start).
pub fn origins(rows: usize, cols: usize, w: usize, h: usize, per: usize) -> Vec<(i32, i32)> {
    let (r, w, h, p) = (rows as i32, w as i32, h as i32, per as i32);
    let c = (cols / per * per) as i32;
    vec![(0, 0), (w, h), (c - w + p, 1), (-p, -2), (c - p, r - 1), (c + p, 0), (0, r), (p, -h + 1)]
}

fn run_boxes<T: kache::Element + Copy + Default + PartialEq + std::fmt::Debug>(
    dev: &Device,
    jit: &kache::Jit,
    elem: &str,
    (w, h, sw): (usize, usize, usize),
    (rows, cols, pitch): (usize, usize, usize),
    make: impl Fn(usize) -> T,
) {
    let m = jit.load_source("boxes.rs", &box_source(elem, w, h, sw)).unwrap();
    let data: Vec<T> = (0..rows * pitch).map(make).collect();
    let whole = dev.upload_nd(&data, &[rows, pitch], Order::C).unwrap();
    let a = whole.view(0, &[rows, cols], &[pitch as isize, 1]).unwrap();
    let map = TensorMap::tiled(&a, w, h, sw).unwrap();
    assert_eq!(map.kernel_type(), format!("TensorMap<{elem}, {w}, {h}, {sw}>"));
    let at = origins(rows, cols, w, h, 16 / std::mem::size_of::<T>());
    let xs = dev.upload(&at.iter().map(|p| p.0).collect::<Vec<_>>()).unwrap();
    let ys = dev.upload(&at.iter().map(|p| p.1).collect::<Vec<_>>()).unwrap();
    let mut out = dev.alloc::<T>(&[at.len() * w * h]).unwrap();
    m.kernel("boxes").unwrap().launch(dev, Grid::new(at.len() as u32, 64u32), (&map, &xs, &ys, &mut out)).unwrap();
    let got = out.download().unwrap();
    for (b, p) in at.iter().enumerate() {
        let want = box_reference(&data, (rows, cols, pitch), (w, h, sw), *p);
        assert_eq!(&got[b * w * h..(b + 1) * w * h], &want[..], "{elem} box {w} x {h} swizzle {sw} at {p:?}");
    }
}

/// Every swizzle with its row width, and unswizzled boxes of 16 bytes a row, of several element
/// types; a row pitch wider than the row (a view of a wider array) in each.
pub fn all_boxes(dev: &Device, jit: &kache::Jit) {
    run_boxes::<f32>(dev, jit, "f32", (32, 8, 128), (37, 50, 56), |i| i as f32);
    run_boxes::<f32>(dev, jit, "f32", (8, 5, 32), (20, 30, 32), |i| i as f32 * 0.5);
    run_boxes::<f32>(dev, jit, "f32", (4, 16, 0), (19, 9, 12), |i| -(i as f32));
    run_boxes::<half::bf16>(dev, jit, "bf16", (32, 16, 64), (40, 70, 72), |i| half::bf16::from_f32((i % 200) as f32));
    run_boxes::<half::bf16>(dev, jit, "bf16", (64, 12, 128), (30, 100, 104), |i| half::bf16::from_f32((i % 250) as f32));
    run_boxes::<u8>(dev, jit, "u8", (16, 4, 0), (9, 21, 32), |i| (i % 251) as u8);
    run_boxes::<f64>(dev, jit, "f64", (16, 3, 128), (7, 20, 20), |i| i as f64 * 1.25);
}
