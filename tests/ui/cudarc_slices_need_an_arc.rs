//! A CudaSlice is not reference counted: a kernel (asynchronous, or holding a capture) could
//! outlive a borrow of it. Only Arc<CudaSlice<T>> is accepted.
use cudarc::driver::CudaSlice;
use kache::{Device, Grid, Kernel, Module};

fn borrowed(m: &Module, k: &Kernel, dev: &Device, slice: &CudaSlice<f32>) {
    let _ = m.with_global("G", slice);
    let _ = k.launch(dev, Grid::linear(1, 1), (slice,));
    let _: &dyn kache::ArrayInterface = slice;
}

fn main() {}
