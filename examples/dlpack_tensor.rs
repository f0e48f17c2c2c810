//! Kernels on tensors of another library: ndarray arrays exported through DLPack (dlpark's
//! producer), taken by kache as `DlpackArray`s. A weight matrix is captured as a global (host
//! memory: copied in as a constant, so the kernel is cached like any other), an input batch is
//! passed as a read-only argument, and a second ndarray tensor is written in place. On the host
//! backend, as CI runs it (`cargo test --example dlpack_tensor`); `cargo run --example
//! dlpack_tensor` prints the result.

use dlpark::allocation::dynamic;
use dlpark::ffi::DLManagedTensorVersioned;
use dlpark::versioned;
use kache::{Config, Device, DlpackArray, Grid, Jit};

/// A matrix-vector product per row of a batch: `out[b][r] = sum_c W[r][c] * x[b][c]`, with the
/// weights `W` captured from the host.
const SOURCE: &str = r#"
#[kernel]
pub fn project(x: &Array<f32, 2>, out: &mut Array<f32, 2>) {
    let b = global_id_x();
    if b < x.shape(0) {
        for r in 0..out.shape(1) {
            let mut acc = 0.0f32;
            for c in 0..x.shape(1) {
                acc += W[[r, c]] * x[[b, c]];
            }
            out[[b, r]] = acc;
        }
    }
}
"#;

/// Hands an ndarray over to DLPack and DLPack over to kache.
fn to_kache<D: ndarray::Dimension + 'static>(a: ndarray::Array<f32, D>) -> Result<DlpackArray, Box<dyn std::error::Error>> {
    let init: dynamic::Initialized<DLManagedTensorVersioned> = Box::new(a).try_into()?;
    // SAFETY: dlpark's ndarray producer hands over the owned array, shape and strides included.
    let tensor: versioned::Dlpack = unsafe { init.finish() };
    // SAFETY: the tensor owns its memory (the ndarray), and nothing else reads or writes it.
    Ok(unsafe { DlpackArray::new(tensor) }?)
}

/// Runs the projection on the host backend; returns the output tensor's values, read back
/// through a kache array.
fn run() -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    let weights = to_kache(ndarray::arr2(&[[1.0f32, 0.0, 1.0], [0.0, 2.0, 0.0]]))?; // 2 x 3
    let batch = to_kache(ndarray::arr2(&[[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]))?; // 2 x 3
    let mut out = to_kache(ndarray::Array2::<f32>::zeros((2, 2)))?;

    let jit = Jit::new(Config::in_memory())?;
    let project = jit.load_source("project.rs", SOURCE)?.with_global("W", &weights)?.kernel("project")?;
    drop(weights); // copied in when bound: the kernel does not need the tensor any more
    let dev = Device::host();
    project.launch(&dev, Grid::linear(2, 32), (&batch, &mut out))?;

    // The output tensor's memory was written in place; copy it into a kache array to read it.
    let copy = jit
        .load_source("copy.rs", "#[kernel] pub fn copy(x: &Array<f32, 2>, o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = x[[i / 2, i % 2]]; } }")?
        .kernel("copy")?;
    let mut flat = dev.alloc::<f32>(&[4])?;
    copy.launch(&dev, Grid::linear(4, 32), (&out, &mut flat))?;
    Ok(flat.download()?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("W·x for each row of the batch: {:?}", run()?);
    Ok(())
}

#[test]
fn runs_on_the_host_backend() {
    // Row 0: [1+3, 2*2] = [4, 4]; row 1: [4+6, 2*5] = [10, 10].
    assert_eq!(run().unwrap(), vec![4.0, 4.0, 10.0, 10.0]);
}
