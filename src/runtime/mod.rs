//! Devices, arrays and launches, on CUDA (cudarc) and on the host backend.
//!
//! Synchronisation, as seen from the host: on CUDA a launch is asynchronous, and every copy
//! between host and device ([`DeviceArray::download`], [`DeviceArray::copy_from`],
//! [`Device::upload`]) waits for the launches before it, so a download always sees the results
//! of earlier launches. On the host backend a launch returns when the grid has finished.
//! [`Device::synchronize`] waits explicitly. A bounds check that failed in a CUDA kernel is
//! reported by the first of these operations that waits for it (`docs/runtime.md`, "Bounds
//! checks"); the host device reports it from the launch.

#[cfg(feature = "cuda")]
pub(crate) mod cuda;
// Without the `cuda` feature: the same interface, and no device can be opened.
#[cfg(not(feature = "cuda"))]
#[path = "no_cuda.rs"]
pub(crate) mod cuda;
#[cfg(feature = "cuda")]
mod cudarc_arrays;
#[cfg(feature = "dlpack")]
mod dlpack;
pub(crate) mod fault;
pub(crate) mod host;
mod host_sync;
mod host_tensor;
pub(crate) mod launch;
pub(crate) mod modules;
mod structs;
mod tensor_map;
pub mod tune;

pub use structs::{ByValue, FieldKind, FieldType, HostField, HostStruct, PlainStruct, StructArray, StructsArg};
pub(crate) use structs::{check_layout, check_value, describe_kind, struct_slots};
pub use tensor_map::{TensorMap, TensorMapArg};
pub use tune::DeviceModel;

#[cfg(feature = "cuda")]
pub use cudarc_arrays::CudaSliceView;
#[cfg(feature = "dlpack")]
pub use dlpack::DlpackArray;

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock};

use crate::capture::{
    ArrayDesc, ArrayInterface, Element, Location, Order, Owner, countable, elem_size, element_bytes, layout_of, strides_from_shape,
};
use crate::error::{Error, Result};
use crate::ir::{Layout, MAX_NDIM, Scalar, ScalarValue};
use crate::target::{Arch, Target};

/// Whether the NVIDIA driver library (`libcuda.so`) can be loaded on this machine.
pub fn cuda_driver_present() -> bool {
    cuda::driver_present()
}

pub(crate) enum DeviceImpl {
    /// Host device `index` (the CPU backend).
    Host(u64),
    Cuda(cuda::CudaDevice),
}

/// A device kernels run on: a CUDA GPU or the host CPU. A clone is another handle to the same
/// device; every handle to CUDA device `n` shares its one context.
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Arc<DeviceImpl>,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({})", self.describe())
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Self) -> bool {
        self.location() == other.location()
    }
}

impl Device {
    /// The host backend: kernels are JIT-compiled for this CPU and the grid is run by threads.
    pub fn host() -> Device {
        static HOST: OnceLock<Device> = OnceLock::new();
        HOST.get_or_init(|| Device { inner: Arc::new(DeviceImpl::Host(0)) }).clone()
    }

    /// Host device `index`: the host backend as a device of its own, so that code written for
    /// several GPUs runs on a machine without any (as JAX's forced host device count does);
    /// `host_device(0)` is [`Device::host()`]. Every host device runs the same host code (one
    /// architecture, loaded once per process) on the same CPU and they share one stream, but
    /// each one's arrays are its own, as a GPU's are: a launch on host device 1 refuses an
    /// array of host device 0, argument or capture, with [`Error::WrongDevice`].
    pub fn host_device(index: usize) -> Device {
        if index == 0 {
            return Device::host();
        }
        static HOSTS: OnceLock<Mutex<HashMap<usize, Device>>> = OnceLock::new();
        let mut hosts = HOSTS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        hosts.entry(index).or_insert_with(|| Device { inner: Arc::new(DeviceImpl::Host(index as u64)) }).clone()
    }

    /// CUDA device `ordinal`, each opened once per process (its primary context) and shared
    /// by every handle: any GPU of the machine, from any thread. Without an NVIDIA driver this
    /// is [`Error::NoCudaDriver`]; with the driver but no such device, [`Error::NoCudaDevice`]
    /// (saying how many there are). Never panics. Threads opening different devices do not
    /// wait for each other.
    pub fn cuda(ordinal: usize) -> Result<Device> {
        // Each device's slot, held while it opens.
        type Opening = Arc<Mutex<Option<Device>>>;
        static DEVICES: OnceLock<Mutex<HashMap<usize, Opening>>> = OnceLock::new();
        let slot = DEVICES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner()).entry(ordinal).or_default().clone();
        // Held while the device opens (context creation takes a while), so it opens once; a
        // failure is not kept, and the next call tries again.
        let mut device = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = &*device {
            return Ok(d.clone());
        }
        let d = Device { inner: Arc::new(DeviceImpl::Cuda(cuda::open(ordinal)?)) };
        *device = Some(d.clone());
        Ok(d)
    }

    /// How many CUDA devices the driver reports: [`Device::cuda`] opens each ordinal below it.
    /// Without an NVIDIA driver [`Error::NoCudaDriver`]; a driver that finds no GPU, 0.
    ///
    /// ```
    /// use kache::Device;
    ///
    /// let gpus: Vec<Device> = match Device::cuda_count() {
    ///     Ok(n) => (0..n).map(Device::cuda).collect::<kache::Result<_>>()?,
    ///     Err(_) => Vec::new(), // no driver here
    /// };
    /// for gpu in &gpus {
    ///     println!("{}", gpu.describe());
    /// }
    /// # Ok::<(), kache::Error>(())
    /// ```
    pub fn cuda_count() -> Result<usize> {
        cuda::device_count()
    }

    /// A CUDA device if one is usable, else the host backend.
    pub fn best() -> Device {
        Device::cuda(0).unwrap_or_else(|_| Device::host())
    }

    /// Whether this is a CUDA device.
    pub fn is_cuda(&self) -> bool {
        matches!(*self.inner, DeviceImpl::Cuda(_))
    }

    /// "host (x86_64 CPU)" or "CUDA 0: NVIDIA H200 (sm_90)".
    pub fn describe(&self) -> String {
        match &*self.inner {
            DeviceImpl::Host(0) => "host backend (CPU)".to_string(),
            DeviceImpl::Host(index) => format!("host backend (CPU), host device {index}"),
            DeviceImpl::Cuda(c) => format!(
                "CUDA {}: {} (compute capability {}.{}, code for {}, driver {})",
                c.ordinal, c.name, c.compute_capability.0, c.compute_capability.1, c.arch, c.driver_version
            ),
        }
    }

    /// The code generation target for this device.
    pub fn target(&self) -> Target {
        match &*self.inner {
            DeviceImpl::Host(_) => Target::Host,
            DeviceImpl::Cuda(c) => Target::Nvptx(c.arch),
        }
    }

    /// The GPU architecture (CUDA only).
    pub fn arch(&self) -> Option<Arch> {
        match &*self.inner {
            DeviceImpl::Cuda(c) => Some(c.arch),
            DeviceImpl::Host(_) => None,
        }
    }

    /// The compute capability, `(9, 0)` for an H200 (CUDA only): GPUs of one compute
    /// capability run the same machine code, which a kernel builds or fetches once for all of
    /// them.
    pub fn compute_capability(&self) -> Option<(i32, i32)> {
        self.cuda_impl().map(|c| c.compute_capability)
    }

    /// The CUDA driver version, e.g. 13000 (CUDA only).
    pub fn driver_version(&self) -> Option<i32> {
        match &*self.inner {
            DeviceImpl::Cuda(c) => Some(c.driver_version),
            DeviceImpl::Host(_) => None,
        }
    }

    /// Where arrays of this device live.
    pub fn location(&self) -> Location {
        match &*self.inner {
            DeviceImpl::Host(index) => Location::HostBackend(*index),
            DeviceImpl::Cuda(c) => Location::Cuda(c.ordinal),
        }
    }

    pub(crate) fn cuda_impl(&self) -> Option<&cuda::CudaDevice> {
        match &*self.inner {
            DeviceImpl::Cuda(c) => Some(c),
            DeviceImpl::Host(_) => None,
        }
    }

    /// Waits for every launch on this device to finish. On CUDA, a bounds check that failed in
    /// a kernel since the last such report is [`Error::Launch`] (reported once).
    pub fn synchronize(&self) -> Result<()> {
        match &*self.inner {
            DeviceImpl::Host(_) => {
                // Launches hold the stream while they run: taking it waits for any in flight.
                drop(host::stream());
                Ok(())
            }
            DeviceImpl::Cuda(c) => c.synchronize(),
        }
    }

    /// On CUDA, reports a bounds check that failed in a kernel launched before the operation
    /// that just waited for the device (see `docs/runtime.md`, "Bounds checks"); on the host
    /// backend faults are reported by the launch itself.
    fn check_faults(&self) -> Result<()> {
        match &*self.inner {
            DeviceImpl::Host(_) => Ok(()),
            DeviceImpl::Cuda(c) => c.check_faults(),
        }
    }

    fn alloc_buffer(&self, bytes: usize) -> Result<Arc<Buffer>> {
        Ok(Arc::new(match &*self.inner {
            DeviceImpl::Host(_) => Buffer::Host(host::HostBuffer::zeroed(bytes)?),
            DeviceImpl::Cuda(c) => Buffer::Cuda(c.alloc(bytes)?),
        }))
    }

    /// A zeroed C-order array of `shape` (0 to 4 dimensions).
    pub fn alloc<T: Element>(&self, shape: &[usize]) -> Result<DeviceArray<T>> {
        self.alloc_with_order(shape, Order::C)
    }

    /// A zeroed array of `shape` in `order`.
    pub fn alloc_with_order<T: Element>(&self, shape: &[usize], order: Order) -> Result<DeviceArray<T>> {
        if shape.len() > MAX_NDIM as usize {
            return Err(Error::BadArray(format!("{} dimensions; arrays have at most {MAX_NDIM}", shape.len())));
        }
        let n = shape.iter().try_fold(1usize, |a, d| a.checked_mul(*d)).ok_or_else(|| Error::BadArray("size overflows".into()))?;
        let bytes = n.checked_mul(elem_size::<T>()).ok_or_else(|| Error::BadArray("size overflows".into()))?;
        let buf = self.alloc_buffer(bytes)?;
        let strides = strides_from_shape(shape, 1, order);
        Ok(DeviceArray { buf, device: self.clone(), offset: 0, shape: shape.to_vec(), strides, read_only: false, _t: PhantomData })
    }

    /// Copies `data` to a new 1-d array on this device.
    pub fn upload<T: Element>(&self, data: &[T]) -> Result<DeviceArray<T>> {
        self.upload_nd(data, &[data.len()], Order::C)
    }

    /// Copies `data`, laid out in `order`, to a new array of `shape` on this device.
    pub fn upload_nd<T: Element>(&self, data: &[T], shape: &[usize], order: Order) -> Result<DeviceArray<T>> {
        let a = self.alloc_with_order::<T>(shape, order)?;
        if data.len() != a.len() {
            return Err(Error::BadArray(format!("shape {shape:?} holds {} elements but {} were given", a.len(), data.len())));
        }
        a.buf.write(0, element_bytes(data))?;
        self.check_faults()?;
        Ok(a)
    }

    /// Copies a 0-d array holding `value` to this device.
    pub fn upload_scalar<T: Element>(&self, value: T) -> Result<DeviceArray<T>> {
        self.upload_nd(&[value], &[], Order::C)
    }
}

pub(crate) enum Buffer {
    Host(host::HostBuffer),
    Cuda(cuda::CudaBuffer),
}

impl Buffer {
    fn ptr(&self) -> u64 {
        match self {
            Buffer::Host(b) => b.ptr(),
            Buffer::Cuda(b) => b.ptr(),
        }
    }
    fn len(&self) -> usize {
        match self {
            Buffer::Host(b) => b.len(),
            Buffer::Cuda(b) => b.len(),
        }
    }
    fn write(&self, at: usize, src: &[u8]) -> Result<()> {
        match self {
            Buffer::Host(b) => b.write(at, src),
            Buffer::Cuda(b) => b.write(at, src),
        }
    }
    fn read(&self, at: usize, dst: &mut [u8]) -> Result<()> {
        match self {
            Buffer::Host(b) => b.read(at, dst),
            Buffer::Cuda(b) => b.read(at, dst),
        }
    }
    /// Reads bytes `at..at + len`, lets `f` change them and writes them back. On the host device
    /// nothing comes between; on CUDA a launch from another thread can (documented at
    /// [`DeviceArray::copy_from`]).
    fn modify(&self, at: usize, len: usize, f: impl FnOnce(&mut [u8])) -> Result<()> {
        match self {
            Buffer::Host(b) => b.modify(at, len, f),
            Buffer::Cuda(b) => {
                let mut raw = vec![0u8; len];
                b.read(at, &mut raw)?;
                f(&mut raw);
                b.write(at, &raw)
            }
        }
    }
}

/// An N-d array (0 to 4 dimensions) in a device's memory. Cloning makes another handle to the
/// same memory; views share it too.
pub struct DeviceArray<T> {
    buf: Arc<Buffer>,
    device: Device,
    offset: usize,
    shape: Vec<usize>,
    strides: Vec<isize>,
    read_only: bool,
    _t: PhantomData<T>,
}

impl<T> Clone for DeviceArray<T> {
    fn clone(&self) -> Self {
        DeviceArray {
            buf: self.buf.clone(),
            device: self.device.clone(),
            offset: self.offset,
            shape: self.shape.clone(),
            strides: self.strides.clone(),
            read_only: self.read_only,
            _t: PhantomData,
        }
    }
}

impl<T: Element> fmt::Debug for DeviceArray<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DeviceArray<{}>({:?}, strides {:?}, {}, on {})",
            T::SCALAR,
            self.shape,
            self.strides,
            self.layout(),
            self.device.describe()
        )
    }
}

impl<T: Element> DeviceArray<T> {
    /// Extents.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Strides in elements.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// No elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// C, F or A.
    pub fn layout(&self) -> Layout {
        let size = elem_size::<T>();
        let bytes: Vec<isize> = self.strides.iter().map(|s| s * size as isize).collect();
        layout_of(&self.shape, Some(&bytes), size)
    }

    /// The device it lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Device address of the first element.
    pub fn device_ptr(&self) -> u64 {
        self.buf.ptr() + (self.offset * elem_size::<T>()) as u64
    }

    /// Whether kernels may not write it.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// A read-only handle to the same memory: kernels that capture it cannot write it.
    pub fn read_only(&self) -> DeviceArray<T> {
        let mut a = self.clone();
        a.read_only = true;
        a
    }

    /// A strided view: element `[i, j, ..]` of the view is element
    /// `offset + i*strides[0] + j*strides[1] + ..` of this array's memory (strides in elements,
    /// signed, counted from this array's first element): `a.view(n - 1, &[n], &[-1])` is `a`
    /// reversed. Every element the view reaches must lie in the array's memory.
    pub fn view(&self, offset: usize, shape: &[usize], strides: &[isize]) -> Result<DeviceArray<T>> {
        if shape.len() != strides.len() || shape.len() > MAX_NDIM as usize {
            return Err(Error::BadArray("a view needs one stride per dimension, at most 4".into()));
        }
        let outside = || {
            Error::BadArray(format!("the view (offset {offset}, shape {shape:?}, strides {strides:?}) reaches outside the array's memory"))
        };
        // Even an empty view's extents are counted (`len`, `download`) and its strides taken in
        // bytes (`layout`, the array interface): both must be representable.
        if !countable(shape) || strides.iter().any(|s| s.checked_mul(elem_size::<T>() as isize).is_none()) {
            return Err(Error::BadArray(format!(
                "the view's extents {shape:?} and strides {strides:?} count more elements or bytes than an address holds"
            )));
        }
        let size = elem_size::<T>() as i128;
        let start = (self.offset as i128).checked_add(offset as i128).ok_or_else(outside)?;
        if shape.iter().all(|d| *d > 0) {
            // Lowest and highest elements it touches, in checked i128 arithmetic: a view that
            // wraps around would otherwise pass for one inside the memory.
            let (mut lo, mut hi) = (start, start);
            for (d, s) in shape.iter().zip(strides) {
                let reach = (*d as i128 - 1).checked_mul(*s as i128).ok_or_else(outside)?;
                if reach < 0 {
                    lo = lo.checked_add(reach).ok_or_else(outside)?;
                } else {
                    hi = hi.checked_add(reach).ok_or_else(outside)?;
                }
            }
            let end = hi.checked_add(1).and_then(|n| n.checked_mul(size));
            if lo < 0 || end.is_none_or(|e| e > self.buf.len() as i128) {
                return Err(outside());
            }
        }
        // An empty view touches nothing, but its first element's address is still computed.
        if start.checked_mul(size).is_none_or(|b| usize::try_from(b).is_err()) {
            return Err(outside());
        }
        Ok(DeviceArray {
            buf: self.buf.clone(),
            device: self.device.clone(),
            offset: usize::try_from(start).map_err(|_| outside())?,
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            read_only: self.read_only,
            _t: PhantomData,
        })
    }

    /// The transpose: dimensions reversed (a C-order array becomes F-order).
    pub fn transpose(&self) -> DeviceArray<T> {
        let mut a = self.clone();
        a.shape.reverse();
        a.strides.reverse();
        a
    }

    fn span(&self) -> (usize, usize) {
        // Lowest and one-past-highest element offsets the array touches.
        if self.is_empty() {
            return (self.offset, self.offset);
        }
        let mut lo = self.offset as isize;
        let mut hi = self.offset as isize;
        for (d, s) in self.shape.iter().zip(&self.strides) {
            let ext = (*d as isize - 1) * s;
            if ext < 0 { lo += ext } else { hi += ext }
        }
        (lo.max(0) as usize, hi as usize + 1)
    }

    /// The elements in logical C order (waits for earlier launches on CUDA). Each element's bytes
    /// are validated as a `T` ([`Element`]): a `bool` stored as anything but 0 or 1 (by a foreign
    /// producer) is [`Error::BadArray`], never an invalid value. On CUDA, a bounds check that
    /// failed in an earlier kernel on the device is [`Error::Launch`] instead of the data.
    pub fn download(&self) -> Result<Vec<T>> {
        let size = elem_size::<T>();
        let (lo, hi) = self.span();
        let mut raw = vec![0u8; (hi - lo) * size];
        self.buf.read(lo * size, &mut raw)?;
        self.device.check_faults()?;
        let n = self.len();
        if self.layout() == Layout::C && self.offset == lo {
            return raw.chunks_exact(size).take(n).map(read_element::<T>).collect();
        }
        let mut out = Vec::with_capacity(n);
        let mut idx = vec![0usize; self.shape.len()];
        for _ in 0..n {
            let at = self.element_offset(&idx, lo) * size;
            out.push(read_element::<T>(&raw[at..at + size])?);
            next_index(&mut idx, &self.shape);
        }
        Ok(out)
    }

    /// Offset of element `idx` from element `lo` of the memory.
    fn element_offset(&self, idx: &[usize], lo: usize) -> usize {
        (self.offset as isize + idx.iter().zip(&self.strides).map(|(i, s)| *i as isize * s).sum::<isize>() - lo as isize) as usize
    }

    /// Overwrites the array in place with `data` (logical C order); kernels that captured the
    /// array see the new values at their next launch. A strided view is written by reading the
    /// memory it spans, changing its elements and writing the span back: on the host device
    /// nothing can come between, on CUDA a launch from another thread that writes memory between
    /// the view's elements meanwhile can be undone (copy into a contiguous array and let a kernel
    /// scatter it if threads share such memory).
    pub fn copy_from(&self, data: &[T]) -> Result<()> {
        if data.len() != self.len() {
            return Err(Error::BadArray(format!("{} elements given for an array of {}", data.len(), self.len())));
        }
        let size = elem_size::<T>();
        let (lo, hi) = self.span();
        if self.layout() == Layout::C && self.offset == lo {
            self.buf.write(lo * size, element_bytes(data))?;
            return self.device.check_faults();
        }
        // A strided view: the bytes between its elements belong to others, so they are read
        // and written back unchanged.
        self.buf.modify(lo * size, (hi - lo) * size, |raw| {
            let mut idx = vec![0usize; self.shape.len()];
            for x in data {
                let at = self.element_offset(&idx, lo) * size;
                raw[at..at + size].copy_from_slice(bytemuck::bytes_of(x));
                next_index(&mut idx, &self.shape);
            }
        })?;
        self.device.check_faults()
    }
}

/// Advances a C-order multi-index over `shape`.
fn next_index(idx: &mut [usize], shape: &[usize]) {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < shape[d] {
            return;
        }
        idx[d] = 0;
    }
}

/// One element from its bytes, validated: bytes that are no valid `T` are an error.
fn read_element<T: Element>(bytes: &[u8]) -> Result<T> {
    bytemuck::checked::try_pod_read_unaligned(bytes).map_err(|_| {
        Error::BadArray(format!("the bytes {bytes:02x?} in device memory are not a valid `{}`: a foreign producer wrote them", T::SCALAR))
    })
}

// SAFETY: a DeviceArray describes memory kache allocated for it: `view` checks, in overflow-free
// arithmetic, that every element of a view is inside the buffer, and allocation, transposition
// and `read_only` keep that true. The base is 64-byte aligned (host) or 256-byte aligned (CUDA)
// and offsets are whole elements, so the pointer is aligned for `T`. The owner is the buffer's
// `Arc`: host memory is freed when the last holder drops it, and CUDA memory by `cuMemFree`,
// which waits for the device's work. Every access to it goes through kache (the host device's
// stream, or the legacy CUDA stream). The memory is always writable, and every method returns
// the same values each time.
unsafe impl<T: Element> ArrayInterface for DeviceArray<T> {
    fn data_ptr(&self) -> u64 {
        self.device_ptr()
    }
    fn shape(&self) -> Vec<usize> {
        self.shape.clone()
    }
    fn strides(&self) -> Option<Vec<isize>> {
        Some(self.strides.iter().map(|s| s * elem_size::<T>() as isize).collect())
    }
    fn elem(&self) -> Scalar {
        T::SCALAR
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn location(&self) -> Location {
        self.device.location()
    }
    fn owner(&self) -> Owner {
        self.buf.clone()
    }
}

impl<T: Element> crate::capture::IntoCapture for &DeviceArray<T> {
    fn into_capture(self) -> Result<crate::capture::CaptureValue> {
        Ok(crate::capture::CaptureValue::Device(ArrayDesc::from_interface(self)?))
    }
}

/// Launch dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3(pub u32, pub u32, pub u32);

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3(x, 1, 1)
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Dim3 {
        Dim3(x, y, 1)
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Dim3 {
        Dim3(x, y, z)
    }
}

/// A launch configuration: grid and block dimensions and dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in a block.
    pub block: Dim3,
    /// Bytes of dynamic shared memory per block (`dynamic_shared_array`).
    pub shared_mem: u32,
}

impl Grid {
    /// Enough blocks of `block` threads to cover `n` threads in x.
    pub fn linear(n: usize, block: u32) -> Grid {
        let block = block.max(1);
        let blocks = n.div_ceil(block as usize).clamp(1, u32::MAX as usize) as u32;
        Grid { grid: Dim3(blocks, 1, 1), block: Dim3(block, 1, 1), shared_mem: 0 }
    }

    /// Explicit grid and block dimensions.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Grid {
        Grid { grid: grid.into(), block: block.into(), shared_mem: 0 }
    }

    /// Sets the dynamic shared memory per block.
    pub fn with_shared_mem(mut self, bytes: u32) -> Grid {
        self.shared_mem = bytes;
        self
    }

    /// Threads in one block.
    pub fn threads_per_block(&self) -> u64 {
        self.block.0 as u64 * self.block.1 as u64 * self.block.2 as u64
    }

    pub(crate) fn check(&self) -> Result<()> {
        let g = [self.grid.0, self.grid.1, self.grid.2];
        let b = [self.block.0, self.block.1, self.block.2];
        if g.contains(&0) || b.contains(&0) {
            return Err(Error::BadLaunch(format!("grid {g:?} and block {b:?} must have no zero dimension")));
        }
        let threads = self.threads_per_block();
        if threads > 1024 {
            return Err(Error::BadLaunch(format!("{threads} threads per block; the limit is 1024")));
        }
        if b[2] > 64 {
            return Err(Error::BadLaunch(format!("block z is {}; the limit is 64", b[2])));
        }
        if g[1] > 65535 || g[2] > 65535 {
            return Err(Error::BadLaunch(format!("grid y and z are limited to 65535, got {g:?}")));
        }
        if self.shared_mem > 227 << 10 {
            return Err(Error::BadLaunch(format!("{} bytes of dynamic shared memory; the limit is 227 KiB", self.shared_mem)));
        }
        Ok(())
    }
}

/// A kernel argument, checked against the kernel's signature before anything runs.
#[derive(Clone, Debug)]
pub enum ArgValue {
    /// A scalar.
    Scalar(ScalarValue),
    /// An array; `writable` if passed as `&mut` (or through an interface that allows writes).
    Array {
        /// The array.
        desc: ArrayDesc,
        /// May the kernel write it.
        writable: bool,
    },
    /// An array of plain-data structs ([`StructArray`]).
    Structs(StructsArg),
    /// A plain-data struct or fixed-size array by value ([`ByValue`]): its bytes as the host
    /// lays it out.
    Struct {
        /// The value's bytes (padding zeroed).
        bytes: Vec<u8>,
        /// The host's layout of its type.
        kind: Arc<FieldKind>,
    },
    /// A tiled tensor map ([`TensorMap`]), for a `&TensorMap<T, W, H, S>` parameter.
    TensorMap(TensorMapArg),
}

/// Something that can be passed to a kernel: scalars by value, `&DeviceArray` (read-only),
/// `&mut DeviceArray` (writable), and any `&dyn ArrayInterface`.
pub trait KernelArg {
    /// The argument.
    fn arg(&self) -> Result<ArgValue>;
}

macro_rules! scalar_arg {
    ($($t:ty),*) => {$(
        impl KernelArg for $t {
            fn arg(&self) -> Result<ArgValue> {
                Ok(ArgValue::Scalar(self.to_value()))
            }
        }
    )*};
}
scalar_arg!(bool, i8, i16, i32, i64, u8, u16, u32, u64, usize, half::f16, half::bf16, f32, f64);

impl<T: Element> KernelArg for &DeviceArray<T> {
    fn arg(&self) -> Result<ArgValue> {
        Ok(ArgValue::Array { desc: ArrayDesc::from_interface(*self)?, writable: false })
    }
}

impl<T: Element> KernelArg for &mut DeviceArray<T> {
    fn arg(&self) -> Result<ArgValue> {
        let desc = ArrayDesc::from_interface(&**self)?;
        let writable = !desc.read_only;
        Ok(ArgValue::Array { desc, writable })
    }
}

impl KernelArg for &dyn ArrayInterface {
    fn arg(&self) -> Result<ArgValue> {
        let desc = ArrayDesc::from_interface(*self)?;
        let writable = !desc.read_only;
        Ok(ArgValue::Array { desc, writable })
    }
}

impl KernelArg for ArgValue {
    fn arg(&self) -> Result<ArgValue> {
        Ok(self.clone())
    }
}

/// A list of kernel arguments: a tuple of [`KernelArg`]s (up to 12), or a `Vec<ArgValue>`.
pub trait KernelArgs {
    /// The arguments, in order.
    fn args(&self) -> Result<Vec<ArgValue>>;
}

impl KernelArgs for () {
    fn args(&self) -> Result<Vec<ArgValue>> {
        Ok(Vec::new())
    }
}

impl KernelArgs for Vec<ArgValue> {
    fn args(&self) -> Result<Vec<ArgValue>> {
        Ok(self.clone())
    }
}

impl KernelArgs for [ArgValue] {
    fn args(&self) -> Result<Vec<ArgValue>> {
        Ok(self.to_vec())
    }
}

macro_rules! tuple_args {
    ($($n:ident),+) => {
        impl<$($n: KernelArg),+> KernelArgs for ($($n,)+) {
            #[allow(non_snake_case)]
            fn args(&self) -> Result<Vec<ArgValue>> {
                let ($($n,)+) = self;
                Ok(vec![$($n.arg()?),+])
            }
        }
    };
}
tuple_args!(A);
tuple_args!(A, B);
tuple_args!(A, B, C);
tuple_args!(A, B, C, D);
tuple_args!(A, B, C, D, E);
tuple_args!(A, B, C, D, E, F);
tuple_args!(A, B, C, D, E, F, G);
tuple_args!(A, B, C, D, E, F, G, H);
tuple_args!(A, B, C, D, E, F, G, H, I);
tuple_args!(A, B, C, D, E, F, G, H, I, J);
tuple_args!(A, B, C, D, E, F, G, H, I, J, K);
tuple_args!(A, B, C, D, E, F, G, H, I, J, K, L);
