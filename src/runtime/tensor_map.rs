//! Tiled tensor maps: the host side of the tensor memory accelerator (TMA). A [`TensorMap`]
//! describes boxes of a 2-d array that a kernel copies to shared memory with
//! `cp_async_bulk_tensor_2d`; it is passed to a kernel parameter `map: &TensorMap<T, W, H, S>`
//! of the same element type, box and swizzle. On a GPU it is the driver's `CUtensorMap`
//! (`cuTensorMapEncodeTiled`) in a 128-byte device allocation of its own, whose address the
//! launch passes; on the host backend an [`host_calls::HostTensorMap`](crate::host_calls::HostTensorMap) in
//! host memory. Either way the map keeps its array alive and is checked, in full, when it is
//! made: a kernel can read only the array it was made of, and only inside it (a box that
//! reaches outside reads zeros).

use std::fmt;
use std::sync::Arc;

use super::{Buffer, DeviceArray, DeviceImpl, Element};
use crate::capture::ArrayDesc;
use crate::error::{Error, Result};
use crate::host_calls::HostTensorMap;
use crate::ir::{Scalar, tensor_map_box_rule, tensor_map_type_name};
use crate::location::Location;

/// A tiled tensor map of a 2-d array: boxes of `box_h` rows of `box_w` elements, copied to
/// shared memory swizzled by `swizzle` bytes. Pass `&map` for a kernel parameter
/// `map: &TensorMap<T, W, H, S>` with `T`, `W`, `H` and `S` the map's.
///
/// ```
/// use kache::{Device, TensorMap};
///
/// let dev = Device::host();
/// let a = dev.upload_nd(&vec![1.0f32; 64 * 100], &[100, 64], kache::Order::C)?;
/// // Boxes of 32 rows of 32 `f32`s (128 bytes a row, swizzled by 128 bytes).
/// let map = TensorMap::tiled(&a, 32, 32, 128)?;
/// assert_eq!(map.kernel_type(), "TensorMap<f32, 32, 32, 128>");
/// # Ok::<(), kache::Error>(())
/// ```
#[derive(Clone)]
pub struct TensorMap {
    pub(crate) arg: TensorMapArg,
}

/// A tensor map as a launch argument ([`ArgValue::TensorMap`](super::ArgValue::TensorMap)).
/// Its fields are kache's: only [`TensorMap::tiled`] makes one, so safe code cannot forge the
/// address a kernel's tensor copies read through.
#[derive(Clone)]
pub struct TensorMapArg {
    /// The kernel type it is (`TensorMap<bf16, 64, 128, 128>`).
    pub(crate) type_name: String,
    /// The parameter slot: the descriptor's address.
    pub(crate) slot: u64,
    /// The array the map reads (kept alive, checked for aliasing as a read-only argument).
    pub(crate) array: ArrayDesc,
    /// The descriptor's memory.
    _desc: Arc<Descriptor>,
}

enum Descriptor {
    Host(Box<HostTensorMap>),
    // Held for its memory.
    #[allow(dead_code)]
    Device(Arc<Buffer>),
}

impl fmt::Debug for TensorMapArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} of {:?}", self.type_name, self.array)
    }
}

impl fmt::Debug for TensorMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.arg.fmt(f)
    }
}

impl TensorMap {
    /// The tensor map of `array` (2-d, rows of contiguous elements, row `r` at
    /// `r * strides[0]`) in boxes of `box_h` rows of `box_w` elements, swizzled by `swizzle`
    /// bytes (0 for none, or 32, 64 or 128). The rules are the hardware's: `box_w` and `box_h`
    /// from 1 to 256, a box row a multiple of 16 bytes (and exactly `swizzle` bytes when
    /// swizzled), the array's start and its row pitch multiples of 16 bytes, at most 2^32
    /// elements a dimension; each broken rule is an [`Error::BadArray`] that names it.
    pub fn tiled<T: Element>(array: &DeviceArray<T>, box_w: usize, box_h: usize, swizzle: usize) -> Result<TensorMap> {
        let bad = |m: String| Error::BadArray(format!("tensor map: {m}"));
        let elem = T::SCALAR;
        let es = elem.size() as u64;
        if elem == Scalar::Bool {
            return Err(bad("a tensor map's elements are numbers, not `bool`".into()));
        }
        let [height, width] = array.shape() else {
            return Err(bad(format!("the array has {} dimensions; a tiled tensor map is of a 2-d array", array.ndim())));
        };
        let (width, height) = (*width as u64, *height as u64);
        let strides = array.strides();
        if width == 0 || height == 0 {
            return Err(bad("the array is empty".into()));
        }
        if width > u32::MAX as u64 || height > u32::MAX as u64 {
            return Err(bad(format!("the array is {height} x {width}; a dimension is at most 2^32 - 1 elements")));
        }
        if strides[1] != 1 && width > 1 {
            return Err(bad(format!("the array's rows are not contiguous (element stride {}): take a C-order array", strides[1])));
        }
        let pitch = strides[0] as i64 * es as i64;
        if height > 1 && pitch % 16 != 0 {
            return Err(bad(format!(
                "rows {pitch} bytes apart: the row pitch must be a multiple of 16 bytes (pad the rows: a view of a wider array)"
            )));
        }
        if height > 1 && (pitch < (width * es) as i64 || pitch >= 1 << 40) {
            return Err(bad(format!(
                "rows {pitch} bytes apart: the row pitch must be at least a row ({} bytes) and below 2^40",
                width * es
            )));
        }
        let pitch = if height > 1 { pitch as u64 } else { (width * es).next_multiple_of(16) };
        let base = array.device_ptr();
        if !base.is_multiple_of(16) {
            return Err(bad(format!("the array starts at {base:#x}, not at a multiple of 16 bytes")));
        }
        let (bw, bh, sw) = (box_w as u64, box_h as u64, swizzle as u64);
        tensor_map_box_rule(bw, bh, sw, Some(es)).map_err(bad)?;
        let host =
            HostTensorMap { base, width, height, pitch, elem_size: es as u32, box_w: bw as u32, box_h: bh as u32, swizzle: sw as u32 };
        let desc = match &*array.device().inner {
            DeviceImpl::Host(_) => Descriptor::Host(Box::new(host)),
            DeviceImpl::Cuda(c) => {
                let bytes = super::cuda::encode_tiled_2d(c, elem, &host)?;
                let buf = array.device().alloc_buffer(bytes.len())?;
                buf.write(0, &bytes)?;
                Descriptor::Device(buf)
            }
        };
        let slot = match &desc {
            Descriptor::Host(h) => &**h as *const HostTensorMap as u64,
            Descriptor::Device(b) => b.ptr(),
        };
        let mut array_desc = ArrayDesc::from_interface(array)?;
        array_desc.read_only = true;
        Ok(TensorMap {
            arg: TensorMapArg { type_name: tensor_map_type_name(elem.name(), bw, bh, sw), slot, array: array_desc, _desc: Arc::new(desc) },
        })
    }

    /// The kernel parameter type this map is passed to (`TensorMap<bf16, 64, 128, 128>`).
    pub fn kernel_type(&self) -> &str {
        &self.arg.type_name
    }

    /// Where the map's array lives.
    pub fn location(&self) -> Location {
        self.arg.array.location()
    }
}

impl super::KernelArg for &TensorMap {
    fn arg(&self) -> Result<super::ArgValue> {
        Ok(super::ArgValue::TensorMap(self.arg.clone()))
    }
}
