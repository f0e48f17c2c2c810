//! Capture scenarios (globals and closures, host constants and device pointers), device-generic:
//! run on the host backend by tests/it/captures.rs and on CUDA by tests/gpu.rs. Each scenario
//! runs once with a kache `DeviceArray` and once with a `ForeignArray` that exposes only the
//! array interface.
#![allow(dead_code)]

use kache::{CaptureValue, Device, DeviceArray, Element, Grid, IntoCapture, Jit, Order};

use super::foreign::ForeignArray;

/// How a device array is handed to kache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrap {
    /// As kache's own `DeviceArray`.
    Kache,
    /// Through a `ForeignArray` exposing only `ArrayInterface`.
    Foreign,
}

pub type R = Result<(), String>;

fn e<E: std::fmt::Display>(x: E) -> String {
    x.to_string()
}

thread_local! {
    /// The JIT scenarios use on this thread (tests of the cache put a disk-backed one here).
    pub static JIT: std::cell::RefCell<Option<Jit>> = const { std::cell::RefCell::new(None) };
    /// Device addresses of every array a scenario captured on this thread.
    pub static POINTERS: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The capture value of a device array, kache's or foreign.
pub fn cap<T: Element>(a: &DeviceArray<T>, w: Wrap) -> Result<CaptureValue, String> {
    POINTERS.with(|p| p.borrow_mut().push(a.device_ptr()));
    match w {
        Wrap::Kache => a.into_capture().map_err(e),
        Wrap::Foreign => ForeignArray::wrap(a).iface().into_capture().map_err(e),
    }
}

/// Runs `f` with a JIT that compiles device captures relocatably (in memory) on this thread.
pub fn with_relocatable_jit(f: impl FnOnce() -> R) -> R {
    let jit = Jit::new(kache::Config::in_memory().relocatable_captures(true)).map_err(e)?;
    JIT.with(|j| *j.borrow_mut() = Some(jit));
    let r = f();
    JIT.with(|j| *j.borrow_mut() = None);
    r
}

fn jit() -> Jit {
    JIT.with(|j| j.borrow().clone()).unwrap_or_else(|| Jit::new(kache::Config::in_memory()).expect("jit"))
}

fn check<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> R {
    if got == want { Ok(()) } else { Err(format!("{what}: got {got:?}, want {want:?}")) }
}

const SHOP: &str = r#"
fn price(i: usize) -> f32 {
    PRICES[i]
}

fn price_times_two(i: usize) -> f32 {
    price(i) * 2.0
}

#[kernel]
pub fn read_through_device_fn(out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() { out[i] = price(i); }
}

#[kernel]
pub fn compute_times_two(out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() { out[i] = price_times_two(i); }
}

#[kernel]
pub fn direct_access(out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() { out[i] = PRICES[i] + 1.0; }
}
"#;

/// A device function reads a captured global device array.
pub fn read_through_device_function(dev: &Device, w: Wrap) -> R {
    let prices = dev.upload(&[10.0f32, 25.0, 5.0, 7.5]).map_err(e)?;
    let m = jit().load_source("shop.rs", SHOP).map_err(e)?.with_global("PRICES", cap(&prices, w)?).map_err(e)?;
    let mut out = dev.alloc::<f32>(&[4]).map_err(e)?;
    m.kernel("read_through_device_fn").map_err(e)?.launch(dev, Grid::linear(4, 32), (&mut out,)).map_err(e)?;
    check("read", out.download().map_err(e)?, vec![10.0, 25.0, 5.0, 7.5])
}

/// Computes with the captured array (times 2) through nested device functions.
pub fn compute_with_it(dev: &Device, w: Wrap) -> R {
    let prices = dev.upload(&[1.0f32, 2.0, 3.0]).map_err(e)?;
    let m = jit().load_source("shop.rs", SHOP).map_err(e)?.with_global("PRICES", cap(&prices, w)?).map_err(e)?;
    let mut out = dev.alloc::<f32>(&[3]).map_err(e)?;
    m.kernel("compute_times_two").map_err(e)?.launch(dev, Grid::linear(3, 32), (&mut out,)).map_err(e)?;
    check("times two", out.download().map_err(e)?, vec![2.0, 4.0, 6.0])
}

/// The kernel reads the captured global directly, no device function.
pub fn direct_access_from_kernel(dev: &Device, w: Wrap) -> R {
    let prices = dev.upload(&[1.0f32, 2.0, 3.0]).map_err(e)?;
    let m = jit().load_source("shop.rs", SHOP).map_err(e)?.with_global("PRICES", cap(&prices, w)?).map_err(e)?;
    let mut out = dev.alloc::<f32>(&[3]).map_err(e)?;
    m.kernel("direct_access").map_err(e)?.launch(dev, Grid::linear(3, 32), (&mut out,)).map_err(e)?;
    check("direct", out.download().map_err(e)?, vec![2.0, 3.0, 4.0])
}

/// The kernel writes into a captured device array; the host reads it back.
pub fn write_into_captured_array(dev: &Device, w: Wrap) -> R {
    let src = r#"
        fn record(i: usize, v: i32) { LOG[i] = v; }
        #[kernel]
        pub fn fill(n: usize) {
            let i = global_id_x();
            if i < n { record(i, (i * i) as i32); }
        }
    "#;
    let log = dev.alloc::<i32>(&[6]).map_err(e)?;
    let m = jit().load_source("log.rs", src).map_err(e)?.with_global("LOG", cap(&log, w)?).map_err(e)?;
    m.kernel("fill").map_err(e)?.launch(dev, Grid::linear(6, 4), (6usize,)).map_err(e)?;
    check("written", log.download().map_err(e)?, vec![0, 1, 4, 9, 16, 25])
}

/// Two captured arrays summed.
pub fn two_arrays_summed(dev: &Device, w: Wrap) -> R {
    let src = r#"
        #[kernel]
        pub fn sum2(out: &mut [f64]) {
            let i = global_id_x();
            if i < out.len() { out[i] = A[i] + B[i]; }
        }
    "#;
    let a = dev.upload(&[1.0f64, 2.0, 3.0]).map_err(e)?;
    let b = dev.upload(&[10.0f64, 20.0, 30.0]).map_err(e)?;
    let m =
        jit().load_source("sum2.rs", src).map_err(e)?.with_global("A", cap(&a, w)?).map_err(e)?.with_global("B", cap(&b, w)?).map_err(e)?;
    let mut out = dev.alloc::<f64>(&[3]).map_err(e)?;
    m.kernel("sum2").map_err(e)?.launch(dev, Grid::linear(3, 32), (&mut out,)).map_err(e)?;
    check("sum", out.download().map_err(e)?, vec![11.0, 22.0, 33.0])
}

const GRID2D: &str = r#"
fn at(i: usize, j: usize) -> f32 { GRID[[i, j]] }
#[kernel]
pub fn read2d(out: &mut Array<f32, 2>) {
    let i = global_id_y();
    let j = global_id_x();
    if i < out.shape(0) && j < out.shape(1) { out[[i, j]] = at(i, j) * 10.0; }
}
"#;

fn grid_2d(dev: &Device, w: Wrap, order: Order) -> R {
    // Logical 3x4 matrix m[i][j] = i*4 + j, stored in `order`.
    let (r, c) = (3usize, 4usize);
    let logical: Vec<f32> = (0..r * c).map(|k| k as f32).collect();
    let stored: Vec<f32> = match order {
        Order::C => logical.clone(),
        Order::F => (0..c).flat_map(|j| (0..r).map(move |i| (i * c + j) as f32)).collect(),
    };
    let g = dev.upload_nd(&stored, &[r, c], order).map_err(e)?;
    let m = jit().load_source("grid.rs", GRID2D).map_err(e)?.with_global("GRID", cap(&g, w)?).map_err(e)?;
    let mut out = dev.alloc::<f32>(&[r, c]).map_err(e)?;
    m.kernel("read2d").map_err(e)?.launch(dev, Grid::new((4u32, 4u32), (2u32, 2u32)), (&mut out,)).map_err(e)?;
    check("2-d", out.download().map_err(e)?, logical.iter().map(|x| x * 10.0).collect::<Vec<_>>())
}

/// A 2-d C-order array read through a device function.
pub fn c_order_2d_through_device_function(dev: &Device, w: Wrap) -> R {
    grid_2d(dev, w, Order::C)
}

/// A 2-d F-order captured array.
pub fn f_order_2d_captured(dev: &Device, w: Wrap) -> R {
    grid_2d(dev, w, Order::F)
}

/// A strided captured view (every other element, and a column of a matrix).
pub fn strided_captured(dev: &Device, w: Wrap) -> R {
    let src = r#"
        #[kernel]
        pub fn copy_view(out: &mut [i64]) {
            let i = global_id_x();
            if i < out.len() { out[i] = V[i]; }
        }
    "#;
    let base = dev.upload(&(0..20).map(|x| x as i64 * 3).collect::<Vec<_>>()).map_err(e)?;
    let view = base.view(1, &[6], &[3]).map_err(e)?; // elements 1, 4, 7, ..
    if view.layout() != kache::Layout::A {
        return Err(format!("expected layout A, got {}", view.layout()));
    }
    let m = jit().load_source("view.rs", src).map_err(e)?.with_global("V", cap(&view, w)?).map_err(e)?;
    let mut out = dev.alloc::<i64>(&[6]).map_err(e)?;
    m.kernel("copy_view").map_err(e)?.launch(dev, Grid::linear(6, 32), (&mut out,)).map_err(e)?;
    check("strided", out.download().map_err(e)?, vec![3, 12, 21, 30, 39, 48])
}

/// A 0-d captured array: 42 becomes 84.
pub fn zero_d_array(dev: &Device, w: Wrap) -> R {
    let src = r#"
        #[kernel]
        pub fn double_it() {
            if global_id_x() == 0 { X[[]] = X[[]] * 2; }
        }
    "#;
    let x = dev.upload_scalar(42i32).map_err(e)?;
    let m = jit().load_source("zero_d.rs", src).map_err(e)?.with_global("X", cap(&x, w)?).map_err(e)?;
    m.kernel("double_it").map_err(e)?.launch(dev, Grid::linear(1, 1), ()).map_err(e)?;
    check("0-d", x.download().map_err(e)?, vec![84])
}

fn typed_roundtrip<T: Element + std::fmt::Debug>(dev: &Device, w: Wrap, ty: &str, vals: &[T]) -> R {
    let src = format!(
        r#"
        fn get(i: usize) -> {ty} {{ VALS[i] }}
        #[kernel]
        pub fn copy(out: &mut [{ty}]) {{
            let i = global_id_x();
            if i < out.len() {{ out[i] = get(i); }}
        }}
    "#
    );
    let a = dev.upload(vals).map_err(e)?;
    let m = jit().load_source("typed.rs", &src).map_err(e)?.with_global("VALS", cap(&a, w)?).map_err(e)?;
    let mut out = dev.alloc::<T>(&[vals.len()]).map_err(e)?;
    m.kernel("copy").map_err(e)?.launch(dev, Grid::linear(vals.len(), 32), (&mut out,)).map_err(e)?;
    check(ty, out.download().map_err(e)?, vals.to_vec())
}

/// int32, float64 and every other scalar type.
pub fn every_scalar_type(dev: &Device, w: Wrap) -> R {
    typed_roundtrip(dev, w, "i32", &[-7i32, 0, i32::MAX, i32::MIN])?;
    typed_roundtrip(dev, w, "f64", &[1.5f64, -0.0, 1e300, f64::MIN_POSITIVE])?;
    typed_roundtrip(dev, w, "i64", &[-1i64, i64::MAX, i64::MIN])?;
    typed_roundtrip(dev, w, "u32", &[0u32, u32::MAX, 17])?;
    typed_roundtrip(dev, w, "u64", &[0u64, u64::MAX, 1 << 40])?;
    typed_roundtrip(dev, w, "usize", &[0usize, 12345, usize::MAX])?;
    typed_roundtrip(dev, w, "f32", &[0.25f32, -3.5, f32::MAX])?;
    typed_roundtrip(dev, w, "bool", &[true, false, true])
}

/// A read-only device array: a write is a compile error at the write.
pub fn read_only_device_array(dev: &Device, w: Wrap) -> R {
    let src = r#"
        #[kernel]
        pub fn scribble() { RO[0] = 1.0; }
        #[kernel]
        pub fn read(out: &mut [f32]) { out[0] = RO[0]; }
    "#;
    let a = dev.upload(&[5.0f32]).map_err(e)?;
    POINTERS.with(|p| p.borrow_mut().push(a.device_ptr()));
    let ro = a.read_only();
    let value = match w {
        Wrap::Kache => (&ro).into_capture().map_err(e)?,
        Wrap::Foreign => ForeignArray::wrap(&a).read_only().iface().into_capture().map_err(e)?,
    };
    let m = jit().load_source("ro.rs", src).map_err(e)?.with_global("RO", value).map_err(e)?;
    match m.kernel("scribble") {
        Err(kache::Error::Source(d)) => {
            let text = d.render(false);
            if !text.contains("read-only") || !text.contains("ro.rs:3:") {
                return Err(format!("unexpected diagnostic:\n{text}"));
            }
        }
        other => return Err(format!("writing a read-only captured array compiled: {other:?}")),
    }
    let mut out = dev.alloc::<f32>(&[1]).map_err(e)?;
    m.kernel("read").map_err(e)?.launch(dev, Grid::linear(1, 1), (&mut out,)).map_err(e)?;
    check("read-only read", out.download().map_err(e)?, vec![5.0])
}

/// Host scalar and host array are captured as constants: changing them on the host afterwards
/// does not change the compiled kernel.
pub fn host_values_are_constants(dev: &Device, _w: Wrap) -> R {
    let src = r#"
        #[kernel]
        pub fn apply(out: &mut [f32]) {
            let i = global_id_x();
            if i < out.len() { out[i] = TABLE[i] * SCALE; }
        }
    "#;
    let mut table = vec![1.0f32, 2.0, 3.0];
    let mut scale = 10.0f32;
    let m =
        jit().load_source("consts.rs", src).map_err(e)?.with_global("TABLE", &table).map_err(e)?.with_global("SCALE", scale).map_err(e)?;
    let k = m.kernel("apply").map_err(e)?;
    let mut out = dev.alloc::<f32>(&[3]).map_err(e)?;
    k.launch(dev, Grid::linear(3, 32), (&mut out,)).map_err(e)?;
    check("first", out.download().map_err(e)?, vec![10.0, 20.0, 30.0])?;
    table[0] = 100.0;
    scale = -1.0;
    let _ = (&table, scale);
    k.launch(dev, Grid::linear(3, 32), (&mut out,)).map_err(e)?;
    check("after host change", out.download().map_err(e)?, vec![10.0, 20.0, 30.0])
}

/// A device array changed in place on the host: the next launch sees the new values.
pub fn device_array_changed_in_place(dev: &Device, w: Wrap) -> R {
    let prices = dev.upload(&[1.0f32, 2.0, 3.0]).map_err(e)?;
    let m = jit().load_source("shop.rs", SHOP).map_err(e)?.with_global("PRICES", cap(&prices, w)?).map_err(e)?;
    let k = m.kernel("compute_times_two").map_err(e)?;
    let mut out = dev.alloc::<f32>(&[3]).map_err(e)?;
    k.launch(dev, Grid::linear(3, 32), (&mut out,)).map_err(e)?;
    check("before", out.download().map_err(e)?, vec![2.0, 4.0, 6.0])?;
    prices.copy_from(&[5.0, 6.0, 7.0]).map_err(e)?;
    k.launch(dev, Grid::linear(3, 32), (&mut out,)).map_err(e)?;
    check("after in-place change", out.download().map_err(e)?, vec![10.0, 12.0, 14.0])
}

const FACTORIES: &str = r#"
pub fn make_scale(table: &[f32], factor: f32) -> impl Kernel {
    let read = move |i: usize| table[i] * factor;
    move |out: &mut [f32]| {
        let i = global_id_x();
        if i < out.len() { out[i] = read(i); }
    }
}

pub fn make_reader(t: &[f32]) -> impl Fn(usize) -> f32 {
    move |i| t[i]
}

pub fn make_sum(a: &[f32], b: &[f32]) -> impl Kernel {
    let ra = make_reader(a);
    let rb = make_reader(b);
    move |out: &mut [f32]| {
        let i = global_id_x();
        if i < out.len() { out[i] = ra(i) + rb(i); }
    }
}

pub fn make_writer(log: &mut [i32]) -> impl Kernel {
    move |n: usize| {
        let i = global_id_x();
        if i < n { log[i] = (i * 10) as i32; }
    }
}

pub fn make_zero_d(x: &mut Array<i32, 0>) -> impl Kernel {
    move || {
        if global_id_x() == 0 { x[[]] = x[[]] * 2; }
    }
}

pub fn make_2d(g: &Array<f32, 2>) -> impl Kernel {
    let at = move |i: usize, j: usize| g[[i, j]];
    move |out: &mut Array<f32, 2>| {
        let i = global_id_y();
        let j = global_id_x();
        if i < out.shape(0) && j < out.shape(1) { out[[i, j]] = at(i, j) * 10.0; }
    }
}

pub fn make_scribble(ro: &[f32]) -> impl Kernel {
    move |out: &mut [f32]| { out[0] = ro[0]; }
}

pub fn make_bad_scribble(ro: &[f32]) -> impl Kernel {
    move || { ro[0] = 1.0; }
}
"#;

/// A device closure captures an array; the kernel closure captures that closure.
pub fn closure_device_closure_captured_by_kernel_closure(dev: &Device, w: Wrap) -> R {
    let table = dev.upload(&[1.0f32, 2.0, 3.0]).map_err(e)?;
    let m = jit().load_source("factories.rs", FACTORIES).map_err(e)?;
    let k = m.closure("make_scale", (cap(&table, w)?, 3.0f32)).map_err(e)?;
    let mut out = dev.alloc::<f32>(&[3]).map_err(e)?;
    k.launch(dev, Grid::linear(3, 32), (&mut out,)).map_err(e)?;
    check("closure", out.download().map_err(e)?, vec![3.0, 6.0, 9.0])?;
    // In place on the device: followed. The scalar factor is a constant.
    table.copy_from(&[2.0, 2.0, 2.0]).map_err(e)?;
    k.launch(dev, Grid::linear(3, 32), (&mut out,)).map_err(e)?;
    check("closure after change", out.download().map_err(e)?, vec![6.0, 6.0, 6.0])
}

/// Two captured arrays through closures from a nested factory.
pub fn closure_two_arrays(dev: &Device, w: Wrap) -> R {
    let a = dev.upload(&[1.0f32, 2.0]).map_err(e)?;
    let b = dev.upload(&[10.0f32, 20.0]).map_err(e)?;
    let k = jit().load_source("factories.rs", FACTORIES).map_err(e)?.closure("make_sum", (cap(&a, w)?, cap(&b, w)?)).map_err(e)?;
    let mut out = dev.alloc::<f32>(&[2]).map_err(e)?;
    k.launch(dev, Grid::linear(2, 32), (&mut out,)).map_err(e)?;
    check("closure sum", out.download().map_err(e)?, vec![11.0, 22.0])
}

/// A kernel closure writes into a captured device array.
pub fn closure_write(dev: &Device, w: Wrap) -> R {
    let log = dev.alloc::<i32>(&[4]).map_err(e)?;
    let k = jit().load_source("factories.rs", FACTORIES).map_err(e)?.closure("make_writer", (cap(&log, w)?,)).map_err(e)?;
    k.launch(dev, Grid::linear(4, 32), (4usize,)).map_err(e)?;
    check("closure write", log.download().map_err(e)?, vec![0, 10, 20, 30])
}

/// A 0-d array through a closure: 42 becomes 84.
pub fn closure_zero_d(dev: &Device, w: Wrap) -> R {
    let x = dev.upload_scalar(42i32).map_err(e)?;
    let k = jit().load_source("factories.rs", FACTORIES).map_err(e)?.closure("make_zero_d", (cap(&x, w)?,)).map_err(e)?;
    k.launch(dev, Grid::linear(1, 1), ()).map_err(e)?;
    check("closure 0-d", x.download().map_err(e)?, vec![84])
}

/// 2-d C and F arrays through a device closure.
pub fn closure_2d_layouts(dev: &Device, w: Wrap) -> R {
    for order in [Order::C, Order::F] {
        let (r, c) = (2usize, 3usize);
        let logical: Vec<f32> = (0..r * c).map(|k| k as f32).collect();
        let stored: Vec<f32> = match order {
            Order::C => logical.clone(),
            Order::F => (0..c).flat_map(|j| (0..r).map(move |i| (i * c + j) as f32)).collect(),
        };
        let g = dev.upload_nd(&stored, &[r, c], order).map_err(e)?;
        let k = jit().load_source("factories.rs", FACTORIES).map_err(e)?.closure("make_2d", (cap(&g, w)?,)).map_err(e)?;
        let mut out = dev.alloc::<f32>(&[r, c]).map_err(e)?;
        k.launch(dev, Grid::new((4u32, 4u32), (2u32, 2u32)), (&mut out,)).map_err(e)?;
        check(&format!("closure 2-d {order:?}"), out.download().map_err(e)?, logical.iter().map(|x| x * 10.0).collect::<Vec<_>>())?;
    }
    Ok(())
}

/// A host array and scalar through a closure are constants.
pub fn closure_host_values_are_constants(dev: &Device, _w: Wrap) -> R {
    let mut table = vec![1.0f32, 2.0];
    let k = jit().load_source("factories.rs", FACTORIES).map_err(e)?.closure("make_scale", (&table, 2.0f32)).map_err(e)?;
    let mut out = dev.alloc::<f32>(&[2]).map_err(e)?;
    k.launch(dev, Grid::linear(2, 32), (&mut out,)).map_err(e)?;
    table[0] = 50.0;
    let _ = &table;
    k.launch(dev, Grid::linear(2, 32), (&mut out,)).map_err(e)?;
    check("closure host constants", out.download().map_err(e)?, vec![2.0, 4.0])
}

/// A closure variable bound to a read-only array: writing it is a compile error; reading works.
pub fn closure_read_only(dev: &Device, w: Wrap) -> R {
    let a = dev.upload(&[9.0f32]).map_err(e)?;
    POINTERS.with(|p| p.borrow_mut().push(a.device_ptr()));
    let value = match w {
        Wrap::Kache => (&a.read_only()).into_capture().map_err(e)?,
        Wrap::Foreign => ForeignArray::wrap(&a).read_only().iface().into_capture().map_err(e)?,
    };
    let m = jit().load_source("factories.rs", FACTORIES).map_err(e)?;
    match m.closure("make_bad_scribble", (value.clone(),)) {
        Err(kache::Error::Source(d)) if d.render(false).contains("read-only") => {}
        other => return Err(format!("writing a read-only closure variable compiled: {other:?}")),
    }
    let k = m.closure("make_scribble", (value,)).map_err(e)?;
    let mut out = dev.alloc::<f32>(&[1]).map_err(e)?;
    k.launch(dev, Grid::linear(1, 1), (&mut out,)).map_err(e)?;
    check("closure read-only read", out.download().map_err(e)?, vec![9.0])
}

/// A scenario: runs on a device with its arrays wrapped one way.
pub type Scenario = fn(&Device, Wrap) -> R;

/// Every scenario.
pub const ALL: &[(&str, Scenario)] = &[
    ("read_through_device_function", read_through_device_function),
    ("compute_with_it", compute_with_it),
    ("direct_access_from_kernel", direct_access_from_kernel),
    ("write_into_captured_array", write_into_captured_array),
    ("two_arrays_summed", two_arrays_summed),
    ("c_order_2d_through_device_function", c_order_2d_through_device_function),
    ("f_order_2d_captured", f_order_2d_captured),
    ("strided_captured", strided_captured),
    ("zero_d_array", zero_d_array),
    ("every_scalar_type", every_scalar_type),
    ("read_only_device_array", read_only_device_array),
    ("host_values_are_constants", host_values_are_constants),
    ("device_array_changed_in_place", device_array_changed_in_place),
    ("closure_device_closure_captured_by_kernel_closure", closure_device_closure_captured_by_kernel_closure),
    ("closure_two_arrays", closure_two_arrays),
    ("closure_write", closure_write),
    ("closure_zero_d", closure_zero_d),
    ("closure_2d_layouts", closure_2d_layouts),
    ("closure_host_values_are_constants", closure_host_values_are_constants),
    ("closure_read_only", closure_read_only),
];
