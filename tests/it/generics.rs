//! Tests: generic kernels and device functions.

use kache::{Device, Grid};

use crate::common;

const AXPY: &str = r#"
#[kernel]
pub fn axpy<T: Float>(a: T, x: &[T], y: &mut [T]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

fn add<U: Num>(a: U, b: U) -> U { a + b }

#[kernel]
pub fn sum_pairs<T: Num>(x: &[T], out: &mut [T]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = add(x[2 * i], x[2 * i + 1]) + T::ZERO;
    }
}
"#;

#[test]
fn smoke() {
    let jit = common::memory_jit();
    let m = jit.load_source("g.rs", AXPY).unwrap_or_else(|e| panic!("{e}"));
    m.check().unwrap_or_else(|e| panic!("{e:?}"));
    let dev = Device::host();
    let k = m.kernel("axpy").unwrap_or_else(|e| panic!("{e:?}"));
    let x = dev.upload(&[1.0f32, 2.0]).unwrap();
    let mut y = dev.upload(&[10.0f32, 20.0]).unwrap();
    k.launch(&dev, Grid::linear(2, 64), (2.0f32, &x, &mut y)).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(y.download().unwrap(), vec![12.0, 24.0]);
    let x = dev.upload(&[1.0f64, 2.0]).unwrap();
    let mut y = dev.upload(&[10.0f64, 20.0]).unwrap();
    k.launch(&dev, Grid::linear(2, 64), (2.0f64, &x, &mut y)).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(y.download().unwrap(), vec![12.0, 24.0]);
    assert_eq!(k.instances(), vec!["axpy::<f32>".to_string(), "axpy::<f64>".to_string()]);
    let s = m.kernel("sum_pairs").unwrap_or_else(|e| panic!("{e:?}"));
    let x = dev.upload(&[1u32, 2, 3, 4]).unwrap();
    let mut o = dev.alloc::<u32>(&[2]).unwrap();
    s.launch(&dev, Grid::linear(2, 64), (&x, &mut o)).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(o.download().unwrap(), vec![3, 7]);
    let e = k.launch(&dev, Grid::linear(2, 64), (2.0f32, &dev.upload(&[1.0f64]).unwrap(), &mut y)).unwrap_err();
    eprintln!("{e:?}");
    let e = m.kernel("axpy::<i32>").unwrap_err();
    eprintln!("{e}");
    if let kache::Error::Source(d) = &e {
        eprintln!("{}", d.render(false));
    }
}
