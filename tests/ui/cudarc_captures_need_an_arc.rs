//! A CudaSlice is not reference counted and a CudaView borrows one: a kernel that captured either
//! could outlive it. Captures take an Arc<CudaSlice<T>> or a CudaSliceView (which holds one);
//! launch arguments may be borrowed (the launch orders the slice's stream after the kernel).
use cudarc::driver::CudaSlice;
use kache::{Device, Grid, Kernel, Module};

fn borrowed(m: &Module, k: &Kernel, dev: &Device, slice: &CudaSlice<f32>) {
    let _ = m.with_global("G", slice);
    let _ = m.with_global("G", &slice.slice(1..));
    let _: &dyn kache::ArrayInterface = slice;
    // Accepted: a borrowed slice or view as a launch argument.
    let _ = k.launch(dev, Grid::linear(1, 1), (slice, &slice.slice(1..)));
}

fn main() {}
