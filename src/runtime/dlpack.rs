//! DLPack tensors as kache arrays (feature `dlpack`, through the `dlpark` crate): a tensor that
//! another library exported is passed to kernels and captured by them like any array, the
//! tensor's deleter running when the last kernel or argument using it is gone.

use std::sync::Arc;

use dlpark::ffi::{DLDataTypeCode, DLDeviceType};
use dlpark::{DlpackFlags, Managed, ManagedTensorBase};

use super::{ArgValue, KernelArg};
use crate::capture::{ArrayDesc, ArrayInterface, CaptureValue, IntoCapture, Location, Owner};
use crate::error::{Error, Result};
use crate::ir::Scalar;

/// A DLPack tensor (legacy or versioned ABI, as `dlpark` imports it) described for kache:
/// element type, extents, strides, device and read-only flag read once and checked, the tensor
/// kept alive by every kernel and argument that uses it.
///
/// | DLPack | kache |
/// |---|---|
/// | `kDLInt` 8/16/32/64, `kDLUInt` 8/16/32/64 | `i8`..`i64`, `u8`..`u64` |
/// | `kDLFloat` 16/32/64, `kDLBfloat` 16, `kDLBool` 8 | `f16`, `f32`, `f64`, `bf16`, `bool` |
/// | `kDLCPU`, `kDLCUDAHost` | host memory: captured as a constant, an argument on the host backend |
/// | `kDLCUDA`, `kDLCUDAManaged` (device `n`) | CUDA device `n` |
/// | strides (elements), `byte_offset` | strides (bytes), data pointer past the offset |
/// | `READ_ONLY` flag (versioned ABI) | read-only: kernels cannot write it |
///
/// ```
/// use dlpark::{allocation::dynamic, ffi::DLManagedTensorVersioned, versioned};
/// use kache::{Config, Device, DlpackArray, Grid, Jit};
///
/// // A tensor made by another library (ndarray), exported through DLPack.
/// let table = ndarray::arr1(&[1.0f32, 2.0, 3.0]);
/// let init: dynamic::Initialized<DLManagedTensorVersioned> = Box::new(table).try_into().unwrap();
/// // SAFETY: dlpark's ndarray producer hands over an owned array; nothing else uses it.
/// let tensor: versioned::Dlpack = unsafe { init.finish() };
/// // SAFETY: the tensor owns its memory and nothing else reads or writes it.
/// let table = unsafe { DlpackArray::new(tensor) }?;
///
/// let jit = Jit::new(Config::in_memory())?;
/// let k = jit
///     .load_source("t.rs", "#[kernel] pub fn k(o: &mut [f32]) { let i = global_id_x(); if i < 3 { o[i] = T[i] * 2.0; } }")?
///     .with_global("T", &table)?   // host memory: copied in as a constant
///     .kernel("k")?;
/// let dev = Device::host();
/// let mut out = dev.alloc::<f32>(&[3])?;
/// k.launch(&dev, Grid::linear(3, 32), (&mut out,))?;
/// assert_eq!(out.download()?, vec![2.0, 4.0, 6.0]);
/// # Ok::<(), kache::Error>(())
/// ```
pub struct DlpackArray {
    elem: Scalar,
    shape: Vec<usize>,
    strides: Vec<isize>,
    ptr: u64,
    read_only: bool,
    location: Location,
    owner: Owner,
}

impl std::fmt::Debug for DlpackArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DlpackArray")
            .field("elem", &self.elem)
            .field("shape", &self.shape)
            .field("strides", &self.strides)
            .field("location", &self.location)
            .field("read_only", &self.read_only)
            .finish()
    }
}

/// The kernel type of a DLPack element type, if kache has one.
fn scalar_of(code: DLDataTypeCode, bits: u8, lanes: u16) -> Option<Scalar> {
    if lanes != 1 {
        return None;
    }
    Some(match (code, bits) {
        (DLDataTypeCode::INT, 8) => Scalar::I8,
        (DLDataTypeCode::INT, 16) => Scalar::I16,
        (DLDataTypeCode::INT, 32) => Scalar::I32,
        (DLDataTypeCode::INT, 64) => Scalar::I64,
        (DLDataTypeCode::UINT, 8) => Scalar::U8,
        (DLDataTypeCode::UINT, 16) => Scalar::U16,
        (DLDataTypeCode::UINT, 32) => Scalar::U32,
        (DLDataTypeCode::UINT, 64) => Scalar::U64,
        (DLDataTypeCode::FLOAT, 16) => Scalar::F16,
        (DLDataTypeCode::FLOAT, 32) => Scalar::F32,
        (DLDataTypeCode::FLOAT, 64) => Scalar::F64,
        (DLDataTypeCode::BFLOAT, 16) => Scalar::Bf16,
        (DLDataTypeCode::BOOL, 8) => Scalar::Bool,
        _ => return None,
    })
}

/// Where a DLPack device's memory is, for kache.
fn location_of(device_type: DLDeviceType, id: i32) -> Option<Location> {
    let ordinal = usize::try_from(id).ok();
    match device_type {
        DLDeviceType::CPU | DLDeviceType::CUDAHOST => Some(Location::HostMemory),
        DLDeviceType::CUDA | DLDeviceType::CUDAMANAGED => ordinal.map(Location::Cuda),
        _ => None,
    }
}

impl DlpackArray {
    /// Describes `tensor` for kache, taking it over: its deleter runs when the last kernel or
    /// argument that uses it is gone. Refused with [`Error::BadArray`]: an element type kache
    /// has no kernel type for (vectors of lanes included), a device other than the CPU or
    /// CUDA, more than 4 dimensions, negative extents, or strides that do not verify.
    ///
    /// # Safety
    ///
    /// The tensor's memory must meet [`ArrayInterface`]'s promises, which DLPack itself does not
    /// make: the data pointer, extents and strides describe live memory of the tensor's device;
    /// nothing but kache reads or writes it while a kernel that uses it may be running, and
    /// nothing writes it while a kernel reads it (for a CUDA tensor: the producer's stream has
    /// finished its work on the tensor before it was exported, and does nothing with it until
    /// `Device::synchronize` after the last launch); kernels may write it unless the tensor is
    /// flagged read-only; and the tensor's deleter does not free device memory before the work
    /// kache queued on it has finished.
    pub unsafe fn new<M: ManagedTensorBase + 'static>(tensor: Managed<M>) -> Result<DlpackArray> {
        let bad = |m: String| Error::BadArray(format!("DLPack tensor: {m}"));
        let (elem, shape, strides, ptr, location) = {
            let t = tensor.validate().map_err(|e| bad(e.to_string()))?;
            let dt = t.dtype();
            let elem = scalar_of(dt.code, dt.bits, dt.lanes).ok_or_else(|| {
                bad(format!("element type (code {}, {} bits, {} lanes) has no kernel type", dt.code.0, dt.bits, dt.lanes))
            })?;
            let dev = t.device();
            let location = location_of(dev.device_type, dev.device_id).ok_or_else(|| {
                bad(format!("memory on DLPack device type {} ({}), neither the CPU nor CUDA", dev.device_type.0, dev.device_id))
            })?;
            let shape = t.shape().iter().map(|d| usize::try_from(*d)).collect::<std::result::Result<Vec<usize>, _>>();
            let shape = shape.map_err(|_| bad(format!("negative extent in {:?}", t.shape())))?;
            let size = elem.size() as i64;
            let strides = t.strides_or_compact().map_err(|e| bad(e.to_string()))?;
            let strides = strides
                .iter()
                .map(|s| s.checked_mul(size).and_then(|b| isize::try_from(b).ok()))
                .collect::<Option<Vec<isize>>>()
                .ok_or_else(|| bad(format!("strides {strides:?} overflow in bytes")))?;
            let ptr = (t.data_ptr() as u64).checked_add(t.byte_offset()).ok_or_else(|| bad("data pointer overflows".into()))?;
            (elem, shape, strides, ptr, location)
        };
        let read_only = tensor.flags().contains(DlpackFlags::READ_ONLY);
        let owner: Owner = Arc::new(tensor);
        let a = DlpackArray { elem, shape, strides, ptr, read_only, location, owner };
        // The checks every interface gets (dimensions, alignment, offsets), at once.
        ArrayDesc::from_interface(&a)?;
        Ok(a)
    }

    /// The tensor's element type.
    pub fn elem(&self) -> Scalar {
        self.elem
    }

    /// Extents.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Strides in bytes, as every foreign interface gives them.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// Where the memory is.
    pub fn location(&self) -> Location {
        self.location
    }
}

// SAFETY: the values are read once from a validated tensor and never change (stability); the
// promises about the memory (extent, type, access, writes) are the ones the caller of the
// `unsafe` `DlpackArray::new` made; the owner is the tensor, whose deleter runs only when the
// last clone of it is dropped (lifetime).
unsafe impl ArrayInterface for DlpackArray {
    fn data_ptr(&self) -> u64 {
        self.ptr
    }
    fn shape(&self) -> Vec<usize> {
        self.shape.clone()
    }
    fn strides(&self) -> Option<Vec<isize>> {
        Some(self.strides.clone())
    }
    fn elem(&self) -> Scalar {
        self.elem
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn location(&self) -> Location {
        self.location
    }
    fn owner(&self) -> Owner {
        self.owner.clone()
    }
}

/// A DLPack tensor as a read-only kernel argument.
impl KernelArg for &DlpackArray {
    fn arg(&self) -> Result<ArgValue> {
        Ok(ArgValue::Array { desc: ArrayDesc::from_interface(*self)?, writable: false })
    }
}

/// A DLPack tensor as a writable kernel argument (refused at launch if it is read-only).
impl KernelArg for &mut DlpackArray {
    fn arg(&self) -> Result<ArgValue> {
        let desc = ArrayDesc::from_interface(&**self)?;
        let writable = !self.read_only;
        Ok(ArgValue::Array { desc, writable })
    }
}

/// A DLPack tensor captured by a kernel: by pointer (device memory) or as a constant (host
/// memory), as any array interface.
impl IntoCapture for &DlpackArray {
    fn into_capture(self) -> Result<CaptureValue> {
        (self as &dyn ArrayInterface).into_capture()
    }
}
