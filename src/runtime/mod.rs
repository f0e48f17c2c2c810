//! Devices, arrays and launches, on CUDA (cudarc) and on the host backend.
//!
//! Synchronisation, as seen from the host: on CUDA a launch is asynchronous, and every copy
//! between host and device ([`DeviceArray::download`], [`DeviceArray::copy_from`],
//! [`Device::upload`]) waits for the launches before it, so a download always sees the results
//! of earlier launches. On the host backend a launch returns when the grid has finished.
//! [`Device::synchronize`] waits explicitly.

#[cfg(feature = "cuda")]
pub(crate) mod cuda;
// Without the `cuda` feature: the same interface, and no device can be opened.
#[cfg(not(feature = "cuda"))]
#[path = "no_cuda.rs"]
pub(crate) mod cuda;
#[cfg(feature = "dlpack")]
mod dlpack;
pub(crate) mod host;
mod host_sync;
pub(crate) mod launch;
mod structs;

pub use structs::{ByValue, FieldKind, FieldType, HostField, HostStruct, PlainStruct, StructArray, StructsArg};
pub(crate) use structs::{check_layout, check_value, describe_kind, struct_slots};

#[cfg(feature = "dlpack")]
pub use dlpack::DlpackArray;

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock};

use crate::capture::{ArrayDesc, ArrayInterface, Element, Location, Order, Owner, layout_of, strides_from_shape};
use crate::error::{Error, Result};
use crate::ir::{Layout, MAX_NDIM, Scalar, ScalarValue};
use crate::target::{Arch, Target};

/// Whether the NVIDIA driver library (`libcuda.so`) can be loaded on this machine.
pub fn cuda_driver_present() -> bool {
    cuda::driver_present()
}

pub(crate) enum DeviceImpl {
    Host,
    Cuda(cuda::CudaDevice),
}

/// A device kernels run on: a CUDA GPU or the host CPU.
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

/// The id of the (single) host device.
const HOST_DEVICE_ID: u64 = 1;

impl Device {
    /// The host backend: kernels are JIT-compiled for this CPU and the grid is run by threads.
    pub fn host() -> Device {
        static HOST: OnceLock<Device> = OnceLock::new();
        HOST.get_or_init(|| Device { inner: Arc::new(DeviceImpl::Host) }).clone()
    }

    /// CUDA device `ordinal`. Without an NVIDIA driver this is [`Error::NoCudaDriver`]; with
    /// the driver but no such device, [`Error::NoCudaDevice`]. Never panics.
    pub fn cuda(ordinal: usize) -> Result<Device> {
        static DEVICES: OnceLock<Mutex<Vec<(usize, Device)>>> = OnceLock::new();
        let devices = DEVICES.get_or_init(|| Mutex::new(Vec::new()));
        let mut list = devices.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, d)) = list.iter().find(|(o, _)| *o == ordinal) {
            return Ok(d.clone());
        }
        let d = Device { inner: Arc::new(DeviceImpl::Cuda(cuda::open(ordinal)?)) };
        list.push((ordinal, d.clone()));
        Ok(d)
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
            DeviceImpl::Host => "host backend (CPU)".to_string(),
            DeviceImpl::Cuda(c) => format!(
                "CUDA {}: {} (compute capability {}.{}, code for {}, driver {})",
                c.ordinal, c.name, c.compute_capability.0, c.compute_capability.1, c.arch, c.driver_version
            ),
        }
    }

    /// The code generation target for this device.
    pub fn target(&self) -> Target {
        match &*self.inner {
            DeviceImpl::Host => Target::Host,
            DeviceImpl::Cuda(c) => Target::Nvptx(c.arch),
        }
    }

    /// The GPU architecture (CUDA only).
    pub fn arch(&self) -> Option<Arch> {
        match &*self.inner {
            DeviceImpl::Cuda(c) => Some(c.arch),
            DeviceImpl::Host => None,
        }
    }

    /// The CUDA driver version, e.g. 13000 (CUDA only).
    pub fn driver_version(&self) -> Option<i32> {
        match &*self.inner {
            DeviceImpl::Cuda(c) => Some(c.driver_version),
            DeviceImpl::Host => None,
        }
    }

    /// Where arrays of this device live.
    pub fn location(&self) -> Location {
        match &*self.inner {
            DeviceImpl::Host => Location::HostDevice(HOST_DEVICE_ID),
            DeviceImpl::Cuda(c) => Location::Cuda(c.ordinal),
        }
    }

    pub(crate) fn cuda_impl(&self) -> Option<&cuda::CudaDevice> {
        match &*self.inner {
            DeviceImpl::Cuda(c) => Some(c),
            DeviceImpl::Host => None,
        }
    }

    /// Waits for every launch on this device to finish.
    pub fn synchronize(&self) -> Result<()> {
        match &*self.inner {
            DeviceImpl::Host => Ok(()),
            DeviceImpl::Cuda(c) => c.synchronize(),
        }
    }

    fn alloc_buffer(&self, bytes: usize) -> Result<Arc<Buffer>> {
        Ok(Arc::new(match &*self.inner {
            DeviceImpl::Host => Buffer::Host(host::HostBuffer::zeroed(bytes)?),
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
        let bytes = n.checked_mul(T::SCALAR.size()).ok_or_else(|| Error::BadArray("size overflows".into()))?;
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
        a.buf.write(0, &crate::capture::elements_to_bytes(data))?;
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
        let bytes: Vec<isize> = self.strides.iter().map(|s| s * T::SCALAR.size() as isize).collect();
        layout_of(&self.shape, Some(&bytes), T::SCALAR.size())
    }

    /// The device it lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Device address of the first element.
    pub fn device_ptr(&self) -> u64 {
        self.buf.ptr() + (self.offset * T::SCALAR.size()) as u64
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
        let start = self.offset as i128 + offset as i128;
        if shape.iter().all(|d| *d > 0) {
            // Lowest and highest elements it touches, in i128: no sum of at most 4 products of
            // 64-bit values can overflow it.
            let (mut lo, mut hi) = (start, start);
            for (d, s) in shape.iter().zip(strides) {
                let reach = (*d as i128 - 1) * *s as i128;
                if reach < 0 { lo += reach } else { hi += reach }
            }
            if lo < 0 || (hi + 1) * T::SCALAR.size() as i128 > self.buf.len() as i128 {
                return Err(outside());
            }
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

    /// The elements in logical C order (waits for earlier launches on CUDA).
    pub fn download(&self) -> Result<Vec<T>> {
        let size = T::SCALAR.size();
        let (lo, hi) = self.span();
        let mut raw = vec![0u8; (hi - lo) * size];
        self.buf.read(lo * size, &mut raw)?;
        let n = self.len();
        let mut out = Vec::with_capacity(n);
        let mut idx = vec![0usize; self.shape.len()];
        for _ in 0..n {
            let off = self.offset as isize + idx.iter().zip(&self.strides).map(|(i, s)| *i as isize * s).sum::<isize>() - lo as isize;
            let at = off as usize * size;
            let v = ScalarValue::from_le_bytes(T::SCALAR, &raw[at..at + size]).ok_or_else(|| Error::BadArray("element decode".into()))?;
            out.push(from_value::<T>(v)?);
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < self.shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        Ok(out)
    }

    /// Overwrites the array in place with `data` (logical C order); kernels that captured the
    /// array see the new values at their next launch.
    pub fn copy_from(&self, data: &[T]) -> Result<()> {
        if data.len() != self.len() {
            return Err(Error::BadArray(format!("{} elements given for an array of {}", data.len(), self.len())));
        }
        let size = T::SCALAR.size();
        if self.layout() == Layout::C && self.strides.iter().all(|s| *s >= 0) {
            return self.buf.write(self.offset * size, &crate::capture::elements_to_bytes(data));
        }
        let (lo, hi) = self.span();
        let mut raw = vec![0u8; (hi - lo) * size];
        self.buf.read(lo * size, &mut raw)?;
        let mut idx = vec![0usize; self.shape.len()];
        for x in data {
            let off = self.offset as isize + idx.iter().zip(&self.strides).map(|(i, s)| *i as isize * s).sum::<isize>() - lo as isize;
            let at = off as usize * size;
            raw[at..at + size].copy_from_slice(&x.to_value().to_le_bytes());
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < self.shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        self.buf.write(lo * size, &raw)
    }
}

fn from_value<T: Element>(v: ScalarValue) -> Result<T> {
    // Every Element round-trips through its ScalarValue; compare the encodings.
    let any: Box<dyn Any> = match v {
        ScalarValue::Bool(b) => Box::new(b),
        ScalarValue::F32(x) => Box::new(x),
        ScalarValue::F64(x) => Box::new(x),
        ScalarValue::F16(x) => Box::new(x),
        ScalarValue::Bf16(x) => Box::new(x),
        ScalarValue::Int(Scalar::I8, b) => Box::new(b as u8 as i8),
        ScalarValue::Int(Scalar::I16, b) => Box::new(b as u16 as i16),
        ScalarValue::Int(Scalar::U8, b) => Box::new(b as u8),
        ScalarValue::Int(Scalar::U16, b) => Box::new(b as u16),
        ScalarValue::Int(Scalar::I32, b) => Box::new(b as u32 as i32),
        ScalarValue::Int(Scalar::I64, b) => Box::new(b as i64),
        ScalarValue::Int(Scalar::U32, b) => Box::new(b as u32),
        ScalarValue::Int(Scalar::U64, b) => Box::new(b),
        ScalarValue::Int(_, b) => Box::new(b as usize),
    };
    any.downcast::<T>().map(|b| *b).map_err(|_| Error::BadArray("element type".into()))
}

impl<T: Element> ArrayInterface for DeviceArray<T> {
    fn data_ptr(&self) -> u64 {
        self.device_ptr()
    }
    fn shape(&self) -> Vec<usize> {
        self.shape.clone()
    }
    fn strides(&self) -> Option<Vec<isize>> {
        Some(self.strides.iter().map(|s| s * T::SCALAR.size() as isize).collect())
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

    pub(crate) fn check(&self) -> Result<()> {
        let g = [self.grid.0, self.grid.1, self.grid.2];
        let b = [self.block.0, self.block.1, self.block.2];
        if g.contains(&0) || b.contains(&0) {
            return Err(Error::BadLaunch(format!("grid {g:?} and block {b:?} must have no zero dimension")));
        }
        let threads: u64 = b.iter().map(|x| *x as u64).product();
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
