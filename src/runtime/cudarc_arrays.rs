//! cudarc's arrays as kernel arrays: slices and views as launch arguments, `Arc<CudaSlice<T>>`
//! and [`CudaSliceView`] (a range of one) as captures, each described with the stream its
//! memory is ordered by, so that a launch waits for the work queued there before it and that
//! stream waits for the launch before anything queued on it later, the free of a dropped slice
//! included.

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DeviceRepr};

use super::{ArgValue, KernelArg};
use crate::capture::{ArrayDesc, CaptureValue, Element, ForeignQueue, IntoCapture, Location, Owner};
use crate::error::{Error, Result};

/// The description of `len` elements at `ptr` of a cudarc array whose memory `stream` orders:
/// 1-d, C-contiguous, on the stream's device, kept alive by `owner`.
fn cudarc_desc<T: Element>(ptr: u64, len: usize, stream: &Arc<CudaStream>, read_only: bool, owner: Owner) -> Result<ArrayDesc> {
    let queue: ForeignQueue = stream.clone();
    let location = Location::Cuda(stream.context().ordinal());
    ArrayDesc::checked(T::SCALAR, vec![len], None, ptr, read_only, location, owner, Some(queue))
}

/// The address of a cudarc array, read through cudarc so that the context's default (legacy)
/// stream, which kache launches on, waits for the array's last tracked write on any stream.
fn address<T, A: DevicePtr<T>>(array: &A) -> u64 {
    let legacy = array.stream().context().default_stream();
    let (ptr, tracked) = array.device_ptr(&legacy);
    drop(tracked);
    ptr
}

/// A slice held by `Arc`: the `Arc` is the owner.
fn slice_desc<T: Element + DeviceRepr>(slice: &Arc<CudaSlice<T>>, read_only: bool) -> Result<ArrayDesc> {
    cudarc_desc::<T>(address(&**slice), slice.len(), slice.stream(), read_only, slice.clone())
}

/// A borrowed array as a launch argument. Nothing is kept after the launch, and nothing needs to
/// be: the borrow keeps the memory alive while the launch is queued, and the launch makes the
/// array's stream, where cudarc queues the free of a dropped slice, wait for the kernel.
fn borrowed_desc<T: Element, A: DevicePtr<T>>(array: &A, read_only: bool) -> Result<ArrayDesc> {
    let owner: Owner = array.stream().clone();
    cudarc_desc::<T>(address(array), array.len(), array.stream(), read_only, owner)
}

/// A cudarc slice as a read-only kernel argument (see [`borrowed_desc`] for why a borrow is
/// enough for an argument; a capture needs the slice's `Arc`).
impl<T: Element + DeviceRepr> KernelArg for &CudaSlice<T> {
    fn arg(&self) -> Result<ArgValue> {
        Ok(ArgValue::Array { desc: borrowed_desc(*self, true)?, writable: false })
    }
}

/// A cudarc slice as a writable kernel argument.
impl<T: Element + DeviceRepr> KernelArg for &mut CudaSlice<T> {
    fn arg(&self) -> Result<ArgValue> {
        Ok(ArgValue::Array { desc: borrowed_desc(&**self, false)?, writable: true })
    }
}

/// A cudarc view (`slice.slice(range)`) as a read-only kernel argument.
impl<T: Element + DeviceRepr> KernelArg for &CudaView<'_, T> {
    fn arg(&self) -> Result<ArgValue> {
        Ok(ArgValue::Array { desc: borrowed_desc(*self, true)?, writable: false })
    }
}

/// A mutable cudarc view (`slice.slice_mut(range)`) as a writable kernel argument.
impl<T: Element + DeviceRepr> KernelArg for &mut CudaViewMut<'_, T> {
    fn arg(&self) -> Result<ArgValue> {
        Ok(ArgValue::Array { desc: borrowed_desc(&**self, false)?, writable: true })
    }
}

/// A cudarc slice held by `Arc` as a read-only kernel argument.
impl<T: Element + DeviceRepr> KernelArg for &Arc<CudaSlice<T>> {
    fn arg(&self) -> Result<ArgValue> {
        Ok(ArgValue::Array { desc: slice_desc(self, true)?, writable: false })
    }
}

/// A cudarc slice held by `Arc` as a writable kernel argument.
impl<T: Element + DeviceRepr> KernelArg for &mut Arc<CudaSlice<T>> {
    fn arg(&self) -> Result<ArgValue> {
        Ok(ArgValue::Array { desc: slice_desc(self, false)?, writable: true })
    }
}

/// A cudarc slice captured by a kernel (by address, writable): the compiled kernel holds the
/// `Arc`, so the slice lives as long as any kernel that references it. A borrowed slice or a
/// `CudaView` cannot be captured (nothing would keep it alive); a [`CudaSliceView`] can.
impl<T: Element + DeviceRepr> IntoCapture for &Arc<CudaSlice<T>> {
    fn into_capture(self) -> Result<CaptureValue> {
        Ok(CaptureValue::Device(slice_desc(self, false)?))
    }
}

/// As for `&Arc<CudaSlice<T>>`.
impl<T: Element + DeviceRepr> IntoCapture for Arc<CudaSlice<T>> {
    fn into_capture(self) -> Result<CaptureValue> {
        (&self).into_capture()
    }
}

/// A range of a cudarc slice that holds the slice's `Arc`: cudarc's `CudaView` in a form a
/// kernel can keep. A `CudaView` borrows its slice, so a kernel that captured one could outlive
/// it; a `CudaSliceView` is captured (or passed) like the `Arc<CudaSlice<T>>` it holds, as the
/// elements `range` of it.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use kache::{Config, CudaSliceView, Device, Grid, Jit};
///
/// let dev = Device::cuda(0)?;
/// let stream = cudarc::driver::CudaContext::new(0)?.default_stream();
/// let table = Arc::new(stream.clone_htod(&[1.0f32, 2.0, 3.0, 4.0])?);
/// let k = Jit::new(Config::in_memory())?
///     .load_source("t.rs", "#[kernel] pub fn k(o: &mut [f32]) { let i = global_id_x(); if i < 2 { o[i] = T[i]; } }")?
///     .with_global("T", CudaSliceView::new(&table, 2..)?)? // the kernel keeps `table`
///     .kernel("k")?;
/// drop(table);
/// let mut out = dev.alloc::<f32>(&[2])?;
/// k.launch(&dev, Grid::linear(2, 32), (&mut out,))?;
/// assert_eq!(out.download()?, vec![3.0, 4.0]);
/// # Ok(()) }
/// ```
pub struct CudaSliceView<T> {
    slice: Arc<CudaSlice<T>>,
    start: usize,
    len: usize,
}

impl<T> Clone for CudaSliceView<T> {
    fn clone(&self) -> Self {
        CudaSliceView { slice: self.slice.clone(), start: self.start, len: self.len }
    }
}

impl<T> std::fmt::Debug for CudaSliceView<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaSliceView").field("start", &self.start).field("len", &self.len).field("of", &self.slice.len()).finish()
    }
}

impl<T: Element + DeviceRepr> CudaSliceView<T> {
    /// The elements `range` of `slice` (as `slice.slice(range)` would take them), holding a
    /// clone of the `Arc`. A range that does not lie in the slice is [`Error::BadArray`].
    pub fn new(slice: &Arc<CudaSlice<T>>, range: impl RangeBounds<usize>) -> Result<CudaSliceView<T>> {
        let start = match range.start_bound() {
            Bound::Included(&s) => Some(s),
            Bound::Excluded(&s) => s.checked_add(1),
            Bound::Unbounded => Some(0),
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e.checked_add(1),
            Bound::Excluded(&e) => Some(e),
            Bound::Unbounded => Some(slice.len()),
        };
        match (start, end) {
            (Some(start), Some(end)) if start <= end && end <= slice.len() => {
                Ok(CudaSliceView { slice: slice.clone(), start, len: end - start })
            }
            _ => Err(Error::BadArray(format!(
                "the range ({:?}, {:?}) is not in a cudarc slice of {} elements",
                range.start_bound(),
                range.end_bound(),
                slice.len()
            ))),
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the range is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slice it is a range of.
    pub fn slice(&self) -> &Arc<CudaSlice<T>> {
        &self.slice
    }

    fn desc(&self, read_only: bool) -> Result<ArrayDesc> {
        // `new` checked that start + len <= the slice's length, so the byte offset fits.
        let at = (self.start * std::mem::size_of::<T>()) as u64;
        cudarc_desc::<T>(address(&*self.slice) + at, self.len, self.slice.stream(), read_only, self.slice.clone())
    }
}

/// A range of a slice captured by a kernel (by address, writable): the kernel holds the
/// slice's `Arc`.
impl<T: Element + DeviceRepr> IntoCapture for &CudaSliceView<T> {
    fn into_capture(self) -> Result<CaptureValue> {
        Ok(CaptureValue::Device(self.desc(false)?))
    }
}

/// As for `&CudaSliceView<T>`.
impl<T: Element + DeviceRepr> IntoCapture for CudaSliceView<T> {
    fn into_capture(self) -> Result<CaptureValue> {
        (&self).into_capture()
    }
}

/// A range of a slice as a read-only kernel argument.
impl<T: Element + DeviceRepr> KernelArg for &CudaSliceView<T> {
    fn arg(&self) -> Result<ArgValue> {
        Ok(ArgValue::Array { desc: self.desc(true)?, writable: false })
    }
}

/// A range of a slice as a writable kernel argument.
impl<T: Element + DeviceRepr> KernelArg for &mut CudaSliceView<T> {
    fn arg(&self) -> Result<ArgValue> {
        Ok(ArgValue::Array { desc: self.desc(false)?, writable: true })
    }
}
