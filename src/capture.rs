//! Captured values and the array interface.
//!
//! What a kernel captures decides how it is lowered (`docs/captures.md`): host scalars
//! become immediates, host arrays are copied into the module as constant data, device arrays
//! are captured by pointer. [`ArrayInterface`] is how arrays from any library come in: the Rust
//! counterpart of the CUDA Array Interface.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ir::{ArrayTy, CaptureTy, Elem, Layout, MAX_NDIM, Scalar, ScalarValue};

/// A Rust type whose values are elements of kernel arrays: a scalar of the kernel language.
///
/// Arrays of elements are moved between the host and devices as bytes, so the bound says what
/// that takes: [`NoUninit`](bytemuck::NoUninit) (every byte of a value is initialised, so a value
/// may be copied out as bytes) and [`CheckedBitPattern`](bytemuck::CheckedBitPattern) (bytes read
/// back are validated before they become a value: a `bool` byte that a kernel or a foreign array
/// left at 2 is an error, never an invalid `bool`). Both are bytemuck's traits, which its derives
/// implement for plain-data structs after checking their layout, so the trait is not sealed:
/// any type that bytemuck vouches for and whose size is its kernel type's can be an element. A
/// type whose size differs from `SCALAR`'s is refused when kache is compiled against it.
///
/// ```
/// use kache::bytemuck::{Pod, Zeroable};
/// // A newtype that bytemuck vouches for is an element of its kernel type.
/// #[derive(Clone, Copy, Debug, Default, PartialEq)]
/// #[repr(transparent)]
/// struct Meters(f32);
/// // SAFETY: a transparent wrapper of an f32, which is Pod.
/// unsafe impl Zeroable for Meters {}
/// // SAFETY: as above.
/// unsafe impl Pod for Meters {}
/// impl kache::Element for Meters {
///     const SCALAR: kache::Scalar = kache::Scalar::F32;
///     fn to_value(self) -> kache::ir::ScalarValue { kache::ir::ScalarValue::F32(self.0) }
/// }
/// let a = kache::Device::host().upload(&[Meters(1.5), Meters(2.0)])?;
/// assert_eq!(a.download()?, vec![Meters(1.5), Meters(2.0)]);
/// # Ok::<(), kache::Error>(())
/// ```
///
/// A size that is not its kernel type's does not compile (`u32` bytes read as `u64` elements):
///
/// ```compile_fail,E0080
/// use kache::bytemuck::{Pod, Zeroable};
/// #[derive(Clone, Copy, Debug, Default, PartialEq)]
/// #[repr(transparent)]
/// struct Short(u32);
/// // SAFETY: a transparent wrapper of a u32, which is Pod.
/// unsafe impl Zeroable for Short {}
/// // SAFETY: as above.
/// unsafe impl Pod for Short {}
/// impl kache::Element for Short {
///     const SCALAR: kache::Scalar = kache::Scalar::U64;
///     fn to_value(self) -> kache::ir::ScalarValue { kache::ir::ScalarValue::Int(kache::Scalar::U64, self.0 as u64) }
/// }
/// let _ = kache::Device::host().upload(&[Short(1)]);
/// ```
pub trait Element: bytemuck::NoUninit + bytemuck::CheckedBitPattern + Send + Sync + PartialEq + fmt::Debug + Default {
    /// The kernel type.
    const SCALAR: Scalar;
    /// This value as a kernel constant.
    fn to_value(self) -> ScalarValue;
}

/// The size of one `T` in device memory: `size_of::<T>()`, which must equal the size of its
/// kernel type (checked when this is instantiated, so a mismatched `Element` impl does not build).
pub(crate) const fn elem_size<T: Element>() -> usize {
    const { assert!(std::mem::size_of::<T>() == T::SCALAR.size(), "an Element's size must equal the size of its kernel type (Element::SCALAR)") };
    std::mem::size_of::<T>()
}

macro_rules! element {
    ($t:ty, $s:ident, $v:expr) => {
        impl Element for $t {
            const SCALAR: Scalar = Scalar::$s;
            fn to_value(self) -> ScalarValue {
                #[allow(clippy::redundant_closure_call)]
                ($v)(self)
            }
        }
    };
}

element!(bool, Bool, ScalarValue::Bool);
element!(i8, I8, |x: i8| ScalarValue::Int(Scalar::I8, x as u8 as u64));
element!(i16, I16, |x: i16| ScalarValue::Int(Scalar::I16, x as u16 as u64));
element!(u8, U8, |x: u8| ScalarValue::Int(Scalar::U8, x as u64));
element!(u16, U16, |x: u16| ScalarValue::Int(Scalar::U16, x as u64));
element!(half::f16, F16, ScalarValue::F16);
element!(half::bf16, Bf16, ScalarValue::Bf16);
element!(i32, I32, |x: i32| ScalarValue::Int(Scalar::I32, x as u32 as u64));
element!(i64, I64, |x: i64| ScalarValue::Int(Scalar::I64, x as u64));
element!(u32, U32, |x: u32| ScalarValue::Int(Scalar::U32, x as u64));
element!(u64, U64, |x: u64| ScalarValue::Int(Scalar::U64, x));
element!(usize, Usize, |x: usize| ScalarValue::Int(Scalar::Usize, x as u64));
element!(f32, F32, ScalarValue::F32);
element!(f64, F64, ScalarValue::F64);

/// Memory order for creating arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Row-major (C).
    C,
    /// Column-major (Fortran).
    F,
}

/// Whether the number of elements of `shape` can be counted in any order: the product of its
/// non-zero extents fits in a `usize` (a zero makes the array empty; it does not make a count
/// that overflowed before reaching it any smaller).
pub(crate) fn countable(shape: &[usize]) -> bool {
    shape.iter().filter(|d| **d > 0).try_fold(1usize, |n, d| n.checked_mul(*d)).is_some()
}

/// Byte strides of a contiguous array of `shape` in `order`. A 0-d array has no strides: the
/// result is empty (Rust's `()` in the shape of a slice).
///
/// ```
/// use kache::{strides_from_shape, Order};
/// assert_eq!(strides_from_shape(&[2, 3], 4, Order::C), vec![12, 4]);
/// assert_eq!(strides_from_shape(&[2, 3], 4, Order::F), vec![4, 8]);
/// assert!(strides_from_shape(&[], 8, Order::C).is_empty());
/// ```
pub fn strides_from_shape(shape: &[usize], itemsize: usize, order: Order) -> Vec<isize> {
    let n = shape.len();
    let mut strides = vec![0isize; n];
    let mut acc = itemsize as isize;
    match order {
        Order::C => {
            for d in (0..n).rev() {
                strides[d] = acc;
                acc *= shape[d].max(1) as isize;
            }
        }
        Order::F => {
            for d in 0..n {
                strides[d] = acc;
                acc *= shape[d].max(1) as isize;
            }
        }
    }
    strides
}

/// The layout of an array from its byte strides: C if they match row-major order, F if they
/// match column-major order, else A. Dimensions of extent 1 do not count (their stride is
/// never used); a 0-d array, an empty array and an array given without strides are C.
///
/// ```
/// use kache::{layout_of, Layout};
/// assert_eq!(layout_of(&[2, 3], Some(&[12, 4]), 4), Layout::C);
/// assert_eq!(layout_of(&[2, 3], Some(&[4, 8]), 4), Layout::F);
/// assert_eq!(layout_of(&[2, 3], Some(&[24, 8]), 4), Layout::A);
/// assert_eq!(layout_of(&[], None, 4), Layout::C);
/// ```
pub fn layout_of(shape: &[usize], strides: Option<&[isize]>, itemsize: usize) -> Layout {
    let Some(strides) = strides else { return Layout::C };
    if shape.is_empty() || shape.contains(&0) {
        return Layout::C;
    }
    let matches = |order: Order| {
        let want = strides_from_shape(shape, itemsize, order);
        shape.iter().zip(strides.iter().zip(&want)).all(|(&n, (s, w))| n == 1 || s == w)
    };
    if matches(Order::C) {
        Layout::C
    } else if matches(Order::F) {
        Layout::F
    } else {
        Layout::A
    }
}

pub use crate::location::Location;

/// Anything that can keep an array's memory alive.
pub type Owner = Arc<dyn Any + Send + Sync>;

/// A queue of device work that orders a foreign producer's use of its memory (a cudarc stream,
/// as `Arc<cudarc::driver::CudaStream>`): a launch that uses the memory waits for the work
/// queued there before it, and work queued there later waits for the launch. Only the CUDA
/// runtime makes and reads these.
pub(crate) type ForeignQueue = Arc<dyn Any + Send + Sync>;

/// An array from any library: the Rust counterpart of the CUDA Array Interface. kache's
/// [`DeviceArray`](crate::DeviceArray) implements it; implement it for your own arrays to pass
/// them to kernels (as `&dyn ArrayInterface`) or let kernels capture them. (cudarc's arrays
/// come in through their own conversions: `Arc<CudaSlice<T>>` and `CudaSliceView<T>` as
/// captures; those, `&CudaSlice<T>`, `&mut CudaSlice<T>`, `&CudaView<T>` and
/// `&mut CudaViewMut<T>` as launch arguments; see `docs/runtime.md`.)
///
/// # Safety
///
/// kache hands the description to kernels, which read the memory and, unless
/// [`read_only`](ArrayInterface::read_only) says otherwise, write it, possibly after the call
/// that took the description has returned (a CUDA launch is asynchronous; a capture lives as
/// long as its kernel). Safe code must not be able to turn a wrong description into undefined
/// behaviour, so an implementation promises, for the values its methods return:
///
/// - **Extent.** For every index `[i, j, ..]` with each index below its extent in
///   [`shape`](ArrayInterface::shape), the element at `data_ptr + i*strides[0] + j*strides[1] +
///   ..` bytes ([`strides`](ArrayInterface::strides), or C-contiguous ones when `None`) lies
///   inside one live allocation, in the address space of [`location`](ArrayInterface::location):
///   a device address of the primary context of CUDA device `n` for `Location::Cuda(n)`, a
///   host address for `Location::HostBackend` and `Location::HostMemory`.
/// - **Type.** That memory may be read as elements of [`elem`](ArrayInterface::elem) (any bit
///   pattern of the element's size is accepted; kernels read a `bool` byte as `!= 0`).
/// - **Lifetime.** The memory stays allocated while the object returned by
///   [`owner`](ArrayInterface::owner), or a clone of it, is alive, and on CUDA until the work
///   that kache queued on the device's legacy default stream before the owner was dropped has
///   finished: free it with an operation that waits for the device (`cuMemFree` does; a
///   stream-ordered free must first make its stream wait for the legacy stream).
/// - **Access.** Nothing but kache reads or writes the memory while a launch that uses it may
///   be running (on CUDA: until a `download`, `copy_from`, `upload` or `Device::synchronize`
///   on that device has returned after the launch), and nothing writes it through any path
///   while a kernel reads it, unless every such access is itself ordered on kache's stream.
///   On the host device this means no other thread touches the memory during a launch.
/// - **Writes.** If `read_only` is false, kernels may write the memory (it is not mapped
///   read-only, and no reader outside kache assumes it constant); kache never writes through an
///   array whose `read_only` is true.
/// - **Stability.** Every method returns the same value each time it is called on the same
///   object.
///
/// kache checks what it can: at most 4 dimensions, strides a multiple of the element size, a
/// non-null pointer aligned for the element type, extents and strides whose byte offsets cannot
/// overflow, and, when launching, that the array lives on the device and that no array written
/// by the kernel overlaps another array of the launch.
pub unsafe trait ArrayInterface: Send + Sync {
    /// Address of the first element (a device address for device memory).
    fn data_ptr(&self) -> u64;
    /// Extent of each dimension (empty for a 0-d array).
    fn shape(&self) -> Vec<usize>;
    /// Byte stride of each dimension; `None` means C-contiguous.
    fn strides(&self) -> Option<Vec<isize>>;
    /// Element type.
    fn elem(&self) -> Scalar;
    /// Whether kernels must not write through this array.
    fn read_only(&self) -> bool;
    /// Where the memory is.
    fn location(&self) -> Location;
    /// An object that keeps the memory alive; kache holds it for as long as a compiled kernel
    /// references the array.
    fn owner(&self) -> Owner;
}

/// A description of an array taken from an [`ArrayInterface`], checked and normalised. Its
/// fields are private to kache: a description can only come from an implementation of the (unsafe)
/// interface, so safe code cannot forge a pointer for a kernel to use.
#[derive(Clone)]
pub struct ArrayDesc {
    pub(crate) elem: Scalar,
    pub(crate) shape: Vec<usize>,
    pub(crate) strides: Vec<isize>,
    pub(crate) layout: Layout,
    pub(crate) ptr: u64,
    pub(crate) read_only: bool,
    pub(crate) location: Location,
    pub(crate) owner: Owner,
    pub(crate) queue: Option<ForeignQueue>,
}

impl fmt::Debug for ArrayDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArrayDesc")
            .field("elem", &self.elem)
            .field("shape", &self.shape)
            .field("strides", &self.strides)
            .field("layout", &self.layout)
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("read_only", &self.read_only)
            .field("location", &self.location)
            .finish()
    }
}

impl ArrayDesc {
    /// Reads and checks an interface: at most 4 dimensions, strides a multiple of the element
    /// size, a non-null data pointer aligned for the element type (for non-empty arrays), and
    /// extents and strides whose byte offsets fit in an `isize`.
    pub fn from_interface(a: &dyn ArrayInterface) -> Result<ArrayDesc> {
        let elem = a.elem();
        let shape = a.shape();
        let raw = a.strides();
        let ptr = a.data_ptr();
        ArrayDesc::checked(elem, shape, raw, ptr, a.read_only(), a.location(), a.owner(), None)
    }

    /// The checks of [`from_interface`](ArrayDesc::from_interface), on values given directly
    /// (the CUDA runtime's conversions of cudarc arrays use it with their stream).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn checked(
        elem: Scalar,
        shape: Vec<usize>,
        raw: Option<Vec<isize>>,
        ptr: u64,
        read_only: bool,
        location: Location,
        owner: Owner,
        queue: Option<ForeignQueue>,
    ) -> Result<ArrayDesc> {
        if shape.len() > MAX_NDIM as usize {
            return Err(Error::BadArray(format!("{} dimensions; kernels take at most {MAX_NDIM}", shape.len())));
        }
        let itemsize = elem.size();
        if let Some(s) = &raw {
            if s.len() != shape.len() {
                return Err(Error::BadArray(format!("{} strides for {} dimensions", s.len(), shape.len())));
            }
            if let Some(bad) = s.iter().find(|s| **s % itemsize as isize != 0) {
                return Err(Error::BadArray(format!("stride {bad} is not a multiple of the element size {itemsize}")));
            }
        }
        let too_big = || Error::BadArray(format!("shape {shape:?} with strides {raw:?} spans more bytes than an address holds"));
        let len = shape.iter().try_fold(1usize, |n, d| n.checked_mul(*d)).ok_or_else(too_big)?;
        let bytes = match &raw {
            Some(s) => s.clone(),
            None => {
                // C-contiguous: the strides of `strides_from_shape`, computed without overflow.
                let mut strides = vec![0isize; shape.len()];
                let mut acc = itemsize as isize;
                for d in (0..shape.len()).rev() {
                    strides[d] = acc;
                    acc = acc.checked_mul(isize::try_from(shape[d].max(1)).map_err(|_| too_big())?).ok_or_else(too_big)?;
                }
                strides
            }
        };
        if len > 0 {
            // The farthest byte from the first element, either way, must be addressable: kernels
            // compute `index * stride` in 64 bits and must not wrap.
            let reach = shape.iter().zip(&bytes).try_fold(itemsize as isize, |acc, (d, s)| {
                isize::try_from(d - 1).ok().and_then(|d| d.checked_mul(s.checked_abs()?)).and_then(|x| acc.checked_add(x))
            });
            if reach.is_none() {
                return Err(too_big());
            }
            if ptr == 0 {
                return Err(Error::BadArray("null data pointer".into()));
            }
            if !ptr.is_multiple_of(itemsize as u64) {
                return Err(Error::BadArray(format!("data pointer {ptr:#x} is not aligned for `{elem}` ({itemsize} bytes)")));
            }
        }
        let layout = layout_of(&shape, raw.as_deref(), itemsize);
        let strides = bytes.iter().map(|b| b / itemsize as isize).collect();
        Ok(ArrayDesc { elem, shape, strides, layout, ptr, read_only, location, owner, queue })
    }

    /// Element type.
    pub fn elem(&self) -> Scalar {
        self.elem
    }

    /// Extents.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Strides in elements.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// C, F or A.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Address of the first element.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Whether kernels must not write it.
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// Where it lives.
    pub fn location(&self) -> Location {
        self.location
    }

    /// What keeps it alive.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The foreign queue that orders its producer's work, if any.
    pub(crate) fn queue(&self) -> Option<&ForeignQueue> {
        self.queue.as_ref()
    }

    /// The bytes the array touches, as `[lo, hi)` addresses (empty for an empty array): what
    /// two arrays of one launch must not share when either is written.
    pub(crate) fn byte_range(&self) -> (u64, u64) {
        if self.is_empty() {
            return (self.ptr, self.ptr);
        }
        let size = self.elem.size() as i128;
        let (mut lo, mut hi) = (self.ptr as i128, self.ptr as i128 + size);
        for (d, s) in self.shape.iter().zip(&self.strides) {
            let ext = (*d as i128 - 1) * *s as i128 * size;
            if ext < 0 { lo += ext } else { hi += ext }
        }
        (lo.max(0) as u64, hi.min(u64::MAX as i128) as u64)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// No elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Kernel array type.
    pub fn array_ty(&self) -> ArrayTy {
        ArrayTy { elem: Elem::Scalar(self.elem), ndim: self.shape.len() as u8, writable: !self.read_only }
    }

    /// `elem` `N`-d, for messages.
    pub fn describe(&self) -> String {
        format!("{}-d `{}` array on {}{}", self.shape.len(), self.elem, self.location, if self.read_only { " (read-only)" } else { "" })
    }
}

/// Host array data captured as a constant: element bytes and their content hash, taken once
/// when the value is bound.
#[derive(Clone)]
///
/// Its fields are private to kache so that they always agree: the bytes hold exactly the elements the
/// shape says (code generation copies them into the module and kernels index them by the
/// shape), and the hash is theirs (the cache key names them by it).
pub struct HostData {
    pub(crate) elem: Scalar,
    pub(crate) shape: Vec<usize>,
    pub(crate) strides: Vec<isize>,
    pub(crate) layout: Layout,
    pub(crate) bytes: Arc<[u8]>,
    pub(crate) hash: [u8; 32],
}

impl fmt::Debug for HostData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HostData({} {:?} {}, {} bytes)", self.elem, self.shape, self.layout, self.bytes.len())
    }
}

impl HostData {
    /// Copies `data` (C order, `shape`) into a constant.
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Result<HostData> {
        if shape.iter().try_fold(1usize, |n, d| n.checked_mul(*d)) != Some(data.len()) {
            return Err(Error::BadArray(format!("shape {shape:?} does not hold the {} elements given", data.len())));
        }
        if shape.len() > MAX_NDIM as usize {
            return Err(Error::BadArray(format!("{} dimensions; kernels take at most {MAX_NDIM}", shape.len())));
        }
        let view = element_bytes(data);
        let (hash, bytes): ([u8; 32], Arc<[u8]>) = if view.len() >= 4 << 20 {
            // Large arrays: hash the caller's bytes on another thread while copying them, so
            // binding costs about one pass over the data.
            std::thread::scope(|s| {
                let h = s.spawn(|| hash_bytes(view));
                // Straight into the shared buffer: one allocation, one copy.
                let bytes: Arc<[u8]> = Arc::from(view);
                let hash = h.join().unwrap_or_else(|_| hash_bytes(&bytes));
                (hash, bytes)
            })
        } else {
            (hash_bytes(view), Arc::from(view))
        };
        let strides = strides_from_shape(shape, 1, Order::C);
        Ok(HostData { elem: T::SCALAR, shape: shape.to_vec(), strides, layout: Layout::C, bytes, hash })
    }

    /// Wraps little-endian element bytes laid out contiguously in `order`.
    pub fn from_bytes(elem: Scalar, shape: &[usize], order: Order, bytes: &[u8]) -> Result<HostData> {
        let n = shape.iter().try_fold(elem.size(), |n, d| n.checked_mul(*d));
        if n != Some(bytes.len()) || shape.len() > MAX_NDIM as usize {
            return Err(Error::BadArray(format!("{} bytes for a `{elem}` array of shape {shape:?}", bytes.len())));
        }
        let layout = if order == Order::F { Layout::F } else { Layout::C };
        Ok(HostData::new(elem, shape.to_vec(), layout, bytes.to_vec()))
    }

    fn new(elem: Scalar, shape: Vec<usize>, layout: Layout, bytes: Vec<u8>) -> HostData {
        HostData::from_shared(elem, shape, layout, bytes.into())
    }

    /// Wraps bytes already shared (a `static` of the source), C or F order; the caller has
    /// checked that they hold exactly the shape's elements.
    pub(crate) fn from_shared(elem: Scalar, shape: Vec<usize>, layout: Layout, bytes: Arc<[u8]>) -> HostData {
        let order = if layout == Layout::F { Order::F } else { Order::C };
        let strides = strides_from_shape(&shape, 1, order);
        let hash = hash_bytes(&bytes);
        HostData { elem, shape, strides, layout, bytes, hash }
    }

    /// Element type.
    pub fn elem(&self) -> Scalar {
        self.elem
    }

    /// Extents.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Strides in elements of the copied data (C or F contiguous).
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// C or F.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The elements' bytes.
    pub fn bytes(&self) -> &Arc<[u8]> {
        &self.bytes
    }

    /// blake3 of the bytes.
    pub fn hash(&self) -> [u8; 32] {
        self.hash
    }
}

/// blake3 of a byte string (SIMD; several GB/s on one core).
pub fn hash_bytes(bytes: &[u8]) -> [u8; 32] {
    *blake3::hash(bytes).as_bytes()
}

/// The elements' bytes as device memory holds them (kache's devices, NVIDIA GPUs and the host,
/// are little-endian, like every host kache builds for).
pub fn elements_to_bytes<T: Element>(data: &[T]) -> Vec<u8> {
    element_bytes(data).to_vec()
}

/// The elements' bytes, borrowed.
pub(crate) fn element_bytes<T: Element>(data: &[T]) -> &[u8] {
    let _ = elem_size::<T>();
    bytemuck::cast_slice(data)
}

/// A captured value: what [`Module::with_global`](crate::Module::with_global) and factory
/// arguments take.
#[derive(Clone, Debug)]
pub enum CaptureValue {
    /// A host scalar, compiled in as an immediate.
    Scalar(ScalarValue),
    /// A host array, copied into the module as constant data.
    Host(Arc<HostData>),
    /// A device array, captured by pointer.
    Device(ArrayDesc),
}

impl CaptureValue {
    /// The type the front end sees.
    pub fn ty(&self) -> CaptureTy {
        match self {
            CaptureValue::Scalar(v) => CaptureTy::Scalar(v.ty()),
            CaptureValue::Host(h) => CaptureTy::Array {
                ty: ArrayTy { elem: Elem::Scalar(h.elem), ndim: h.shape.len() as u8, writable: false },
                device: false,
                layout: h.layout,
            },
            CaptureValue::Device(d) => CaptureTy::Array { ty: d.array_ty(), device: true, layout: d.layout },
        }
    }
}

/// Values that can be captured by a kernel: scalars, host slices and vectors, [`HostArray`]s
/// and array interfaces in [`Location::HostMemory`] (copied in as constants), and device arrays
/// (captured by address).
pub trait IntoCapture {
    /// Converts the value.
    fn into_capture(self) -> Result<CaptureValue>;
}

macro_rules! scalar_capture {
    ($($t:ty),*) => {$(
        impl IntoCapture for $t {
            fn into_capture(self) -> Result<CaptureValue> {
                Ok(CaptureValue::Scalar(self.to_value()))
            }
        }
    )*};
}
scalar_capture!(bool, i8, i16, i32, i64, u8, u16, u32, u64, usize, half::f16, half::bf16, f32, f64);

impl<T: Element> IntoCapture for &[T] {
    fn into_capture(self) -> Result<CaptureValue> {
        Ok(CaptureValue::Host(Arc::new(HostData::from_slice(self, &[self.len()])?)))
    }
}

impl<T: Element, const N: usize> IntoCapture for &[T; N] {
    fn into_capture(self) -> Result<CaptureValue> {
        self.as_slice().into_capture()
    }
}

impl<T: Element> IntoCapture for Vec<T> {
    fn into_capture(self) -> Result<CaptureValue> {
        self.as_slice().into_capture()
    }
}

impl<T: Element> IntoCapture for &Vec<T> {
    fn into_capture(self) -> Result<CaptureValue> {
        self.as_slice().into_capture()
    }
}

impl IntoCapture for CaptureValue {
    fn into_capture(self) -> Result<CaptureValue> {
        Ok(self)
    }
}

impl IntoCapture for &CaptureValue {
    fn into_capture(self) -> Result<CaptureValue> {
        Ok(self.clone())
    }
}

/// An N-d array in host memory, to be captured as a constant (C or F order, or any strides,
/// which are packed into C order when captured).
#[derive(Clone, Debug, PartialEq)]
pub struct HostArray<T> {
    data: Vec<T>,
    shape: Vec<usize>,
    strides: Vec<isize>,
    offset: usize,
}

impl<T: Element> HostArray<T> {
    /// A C-order array of `shape` holding `data`.
    pub fn new(data: Vec<T>, shape: &[usize]) -> Result<HostArray<T>> {
        Self::with_order(data, shape, Order::C)
    }

    /// An array of `shape` whose `data` is in `order`.
    pub fn with_order(data: Vec<T>, shape: &[usize], order: Order) -> Result<HostArray<T>> {
        if shape.iter().try_fold(1usize, |n, d| n.checked_mul(*d)) != Some(data.len()) {
            return Err(Error::BadArray(format!("shape {shape:?} does not hold the {} elements given", data.len())));
        }
        Ok(HostArray { data, shape: shape.to_vec(), strides: strides_from_shape(shape, 1, order), offset: 0 })
    }

    /// A strided view of `data`: element `[i, j, ..]` is `data[offset + i*strides[0] + ..]`
    /// (strides in elements, not negative).
    pub fn strided(data: Vec<T>, shape: &[usize], strides: &[usize], offset: usize) -> Result<HostArray<T>> {
        if shape.len() != strides.len() {
            return Err(Error::BadArray("one stride per dimension".into()));
        }
        // Even an empty array's extents are counted and its strides taken in bytes: both must
        // be representable.
        if !countable(shape)
            || strides.iter().any(|s| isize::try_from(*s).ok().and_then(|s| s.checked_mul(elem_size::<T>() as isize)).is_none())
        {
            return Err(Error::BadArray(format!(
                "extents {shape:?} and strides {strides:?} count more elements or bytes than an address holds"
            )));
        }
        if shape.iter().all(|d| *d > 0) {
            let last = shape.iter().zip(strides).try_fold(offset, |acc, (d, s)| (d - 1).checked_mul(*s).and_then(|x| acc.checked_add(x)));
            if last.is_none_or(|l| l >= data.len()) {
                return Err(Error::BadArray(format!("the view reaches past element {} of the data", data.len())));
            }
        }
        Ok(HostArray { data, shape: shape.to_vec(), strides: strides.iter().map(|s| *s as isize).collect(), offset })
    }

    /// Extents.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The elements in logical C order.
    pub fn to_vec(&self) -> Vec<T> {
        let n: usize = self.shape.iter().product();
        let mut out = Vec::with_capacity(n);
        let mut idx = vec![0usize; self.shape.len()];
        for _ in 0..n {
            let off = self.offset as isize + idx.iter().zip(&self.strides).map(|(i, s)| *i as isize * s).sum::<isize>();
            out.push(self.data[off as usize]);
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < self.shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        out
    }

    fn layout(&self) -> Layout {
        let size = elem_size::<T>();
        let bytes: Vec<isize> = self.strides.iter().map(|s| s * size as isize).collect();
        layout_of(&self.shape, Some(&bytes), size)
    }
}

impl<T: Element> IntoCapture for &HostArray<T> {
    fn into_capture(self) -> Result<CaptureValue> {
        let layout = self.layout();
        let contiguous = self.offset == 0 && self.data.len() == self.shape.iter().product::<usize>();
        let data = match layout {
            Layout::F if contiguous => {
                return Ok(CaptureValue::Host(Arc::new(HostData::new(
                    T::SCALAR,
                    self.shape.clone(),
                    Layout::F,
                    elements_to_bytes(&self.data),
                ))));
            }
            Layout::C if contiguous => elements_to_bytes(&self.data),
            _ => elements_to_bytes(&self.to_vec()),
        };
        Ok(CaptureValue::Host(Arc::new(HostData::new(T::SCALAR, self.shape.clone(), Layout::C, data))))
    }
}

impl<T: Element> IntoCapture for HostArray<T> {
    fn into_capture(self) -> Result<CaptureValue> {
        (&self).into_capture()
    }
}

/// Any array interface given by reference is a device array (captured by pointer), unless its
/// memory is plain host memory ([`Location::HostMemory`]), which is copied in as a constant when it is
/// bound, as a `&[T]` is: a kernel cannot write it, and later changes to it are not seen.
impl IntoCapture for &dyn ArrayInterface {
    fn into_capture(self) -> Result<CaptureValue> {
        let d = ArrayDesc::from_interface(self)?;
        if d.location == Location::HostMemory {
            return Ok(CaptureValue::Host(Arc::new(copy_host_array(&d)?)));
        }
        Ok(CaptureValue::Device(d))
    }
}

/// The elements of an array in plain host memory, copied in logical C order.
fn copy_host_array(d: &ArrayDesc) -> Result<HostData> {
    let size = d.elem.size();
    let n = d.len();
    let mut bytes = Vec::with_capacity(n * size);
    let mut idx = vec![0usize; d.shape.len()];
    for _ in 0..n {
        let off: isize = idx.iter().zip(&d.strides).map(|(i, s)| *i as isize * s).sum();
        let at = (d.ptr as isize).wrapping_add(off * size as isize) as usize as *const u8;
        let start = bytes.len();
        bytes.resize(start + size, 0);
        // SAFETY: the interface promises (`ArrayInterface`, "Extent") that every element of its
        // shape and strides lies in live host memory for `Location::HostMemory`, readable as `elem`;
        // the owner in `d` keeps it alive during the copy; the destination is our own buffer.
        unsafe { std::ptr::copy_nonoverlapping(at, bytes[start..].as_mut_ptr(), size) };
        for k in (0..idx.len()).rev() {
            idx[k] += 1;
            if idx[k] < d.shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    HostData::from_bytes(d.elem, &d.shape, Order::C, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_detection_covers_1d_0d_size1_and_strided_views() {
        assert_eq!(layout_of(&[5], Some(&[4]), 4), Layout::C);
        assert_eq!(layout_of(&[5], Some(&[8]), 4), Layout::A);
        assert_eq!(layout_of(&[], Some(&[]), 4), Layout::C);
        assert_eq!(layout_of(&[3, 1], Some(&[4, 100]), 4), Layout::C);
        assert_eq!(layout_of(&[1, 3], Some(&[100, 4]), 4), Layout::C);
        assert_eq!(layout_of(&[3, 4], Some(&[4, 12]), 4), Layout::F);
        assert_eq!(layout_of(&[3, 4], Some(&[32, 4]), 4), Layout::A);
        assert_eq!(layout_of(&[2, 3, 4], Some(&[48, 16, 4]), 4), Layout::C);
        assert_eq!(layout_of(&[2, 3, 4], Some(&[4, 8, 24]), 4), Layout::F);
        assert_eq!(layout_of(&[0, 3], Some(&[12, 4]), 4), Layout::C);
        assert_eq!(layout_of(&[4, 4], None, 8), Layout::C);
    }

    #[test]
    fn strides_from_shape_is_empty_for_0d() {
        assert_eq!(strides_from_shape(&[], 4, Order::C), Vec::<isize>::new());
        assert_eq!(strides_from_shape(&[], 4, Order::F), Vec::<isize>::new());
        assert_eq!(strides_from_shape(&[7], 8, Order::C), vec![8]);
        assert_eq!(strides_from_shape(&[2, 3, 4], 4, Order::C), vec![48, 16, 4]);
        assert_eq!(strides_from_shape(&[2, 3, 4], 4, Order::F), vec![4, 8, 24]);
    }

    #[test]
    fn strided_host_arrays_are_packed_in_c_order() {
        let a = HostArray::strided((0..12).collect::<Vec<i32>>(), &[2, 3], &[6, 2], 0).unwrap();
        assert_eq!(a.to_vec(), vec![0, 2, 4, 6, 8, 10]);
        let CaptureValue::Host(h) = (&a).into_capture().unwrap() else { panic!() };
        assert_eq!(h.layout, Layout::C);
        assert_eq!(h.bytes.len(), 24);
    }
}
