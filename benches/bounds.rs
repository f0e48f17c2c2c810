//! The cost of bounds checks: host-backend launches of corpus kernels, checked (what the safe
//! `launch` runs) against unchecked (`unsafe launch_unchecked`), and, printed once, the PTX
//! instruction counts of the same kernels both ways. Run with `cargo bench --bench bounds`.
// A benchmark that cannot set up has nothing to measure: it stops there.
#![allow(clippy::unwrap_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use kache::{Arch, Config, Device, Grid, Jit, Kernel, Layout, Order, Specialization, Target};

const SAXPY: &str = include_str!("../examples/kernels/saxpy.rs");
const MATMUL: &str = include_str!("../cache-fixtures/kernels/matmul_2d.rs");

fn kernel(src: &str, name: &str) -> Kernel {
    let jit = Jit::new(Config::in_memory()).unwrap();
    jit.load_source("k.rs", src).unwrap().kernel(name).unwrap()
}

/// Instructions in the PTX of a kernel (lines that end in `;` and are not directives).
fn ptx_instructions(ptx: &str) -> usize {
    ptx.lines().map(str::trim).filter(|l| l.ends_with(';') && !l.starts_with('.') && !l.starts_with("//")).count()
}

fn ptx_counts() {
    let sm80 = Target::Nvptx(Arch::parse("sm_80").unwrap());
    for (src, name) in [(SAXPY, "saxpy"), (MATMUL, "matmul"), (MATMUL, "matmul_tiled")] {
        let k = kernel(src, name);
        let spec = Specialization::uniform(k.program(), Layout::C);
        let checked = ptx_instructions(k.compile(sm80, &spec).unwrap().ptx().unwrap());
        let unchecked = ptx_instructions(k.compile_unchecked(sm80, &spec).unwrap().ptx().unwrap());
        eprintln!("PTX instructions, {name} (sm_80, C layouts): checked {checked}, unchecked {unchecked}");
    }
}

fn host_launches(c: &mut Criterion) {
    ptx_counts();
    let dev = Device::host();
    let mut g = c.benchmark_group("host_launch");
    g.sample_size(10);

    let saxpy = kernel(SAXPY, "saxpy");
    let n = 1 << 22;
    let x = dev.upload(&vec![1.0f32; n]).unwrap();
    let mut y = dev.upload(&vec![2.0f32; n]).unwrap();
    g.bench_function("saxpy 2^22 checked", |b| b.iter(|| saxpy.launch(&dev, Grid::linear(n, 256), (2.0f32, &x, &mut y)).unwrap()));
    g.bench_function("saxpy 2^22 unchecked", |b| {
        b.iter(|| {
            // SAFETY: saxpy guards every access with `i < y.len()`, and x is as long as y.
            unsafe { saxpy.launch_unchecked(&dev, Grid::linear(n, 256), (2.0f32, &x, &mut y)) }.unwrap()
        })
    });

    let m = 192;
    let a = dev.upload_nd(&vec![1.0f32; m * m], &[m, m], Order::C).unwrap();
    let bm = dev.upload_nd(&vec![0.5f32; m * m], &[m, m], Order::C).unwrap();
    let mut cm = dev.alloc::<f32>(&[m, m]).unwrap();
    let grid = Grid::new(((m / 16) as u32, (m / 16) as u32), (16u32, 16u32));
    let matmul = kernel(MATMUL, "matmul");
    g.bench_function("matmul 192 checked", |b| b.iter(|| matmul.launch(&dev, grid, (&a, &bm, &mut cm)).unwrap()));
    g.bench_function("matmul 192 unchecked", |b| {
        b.iter(|| {
            // SAFETY: every access is guarded by the shapes (row, col below c's extents, k below a.shape(1)).
            unsafe { matmul.launch_unchecked(&dev, grid, (&a, &bm, &mut cm)) }.unwrap()
        })
    });

    let d = |v: f64| vec![v; m * m];
    let a = dev.upload_nd(&d(1.0), &[m, m], Order::C).unwrap();
    let bm = dev.upload_nd(&d(0.5), &[m, m], Order::C).unwrap();
    let mut cm = dev.alloc::<f64>(&[m, m]).unwrap();
    let grid = Grid::new(((m / 8) as u32, (m / 8) as u32), (8u32, 8u32));
    let tiled = kernel(MATMUL, "matmul_tiled");
    g.bench_function("matmul_tiled 192 checked", |b| b.iter(|| tiled.launch(&dev, grid, (&a, &bm, &mut cm)).unwrap()));
    g.bench_function("matmul_tiled 192 unchecked", |b| {
        b.iter(|| {
            // SAFETY: tile indices are below 64 (tx, ty below 8), and global reads are guarded by the shapes.
            unsafe { tiled.launch_unchecked(&dev, grid, (&a, &bm, &mut cm)) }.unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, host_launches);
criterion_main!(benches);
