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

/// A Rust type that is a scalar of the kernel language.
pub trait Element: Copy + Send + Sync + PartialEq + fmt::Debug + Default + 'static {
    /// The kernel type.
    const SCALAR: Scalar;
    /// This value as a kernel constant.
    fn to_value(self) -> ScalarValue;
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

/// Where an array's memory lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Location {
    /// Ordinary host memory that no kache device owns: captured as a constant (copied when
    /// bound), passed as an argument only to kernels on the host backend.
    Host,
    /// Memory of the host backend device with this id (a "device array" of the CPU device).
    HostDevice(u64),
    /// Memory of CUDA device `ordinal`.
    Cuda(usize),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Host => f.write_str("host memory"),
            Location::HostDevice(_) => f.write_str("the host device"),
            Location::Cuda(o) => write!(f, "CUDA device {o}"),
        }
    }
}

/// Anything that can keep an array's memory alive.
pub type Owner = Arc<dyn Any + Send + Sync>;

/// An array from any library: the Rust counterpart of the CUDA Array Interface. kache's
/// [`DeviceArray`](crate::DeviceArray) implements it, and so does cudarc's `CudaSlice<T>`;
/// implement it for your own arrays to pass them to kernels or let kernels capture them.
pub trait ArrayInterface: Send + Sync {
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

/// A description of an array taken from an [`ArrayInterface`], checked and normalised.
#[derive(Clone)]
pub struct ArrayDesc {
    /// Element type.
    pub elem: Scalar,
    /// Extents.
    pub shape: Vec<usize>,
    /// Strides in elements.
    pub strides: Vec<isize>,
    /// C, F or A.
    pub layout: Layout,
    /// Address of the first element.
    pub ptr: u64,
    /// Read-only.
    pub read_only: bool,
    /// Where it lives.
    pub location: Location,
    /// Keeps it alive.
    pub owner: Owner,
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
    /// size, non-null data for non-empty arrays.
    pub fn from_interface(a: &dyn ArrayInterface) -> Result<ArrayDesc> {
        let elem = a.elem();
        let shape = a.shape();
        if shape.len() > MAX_NDIM as usize {
            return Err(Error::BadArray(format!("{} dimensions; kernels take at most {MAX_NDIM}", shape.len())));
        }
        let itemsize = elem.size();
        let raw = a.strides();
        if let Some(s) = &raw {
            if s.len() != shape.len() {
                return Err(Error::BadArray(format!("{} strides for {} dimensions", s.len(), shape.len())));
            }
            if let Some(bad) = s.iter().find(|s| **s % itemsize as isize != 0) {
                return Err(Error::BadArray(format!("stride {bad} is not a multiple of the element size {itemsize}")));
            }
        }
        let layout = layout_of(&shape, raw.as_deref(), itemsize);
        let bytes = raw.unwrap_or_else(|| strides_from_shape(&shape, itemsize, Order::C));
        let strides = bytes.iter().map(|b| b / itemsize as isize).collect();
        let ptr = a.data_ptr();
        if ptr == 0 && shape.iter().product::<usize>() != 0 {
            return Err(Error::BadArray("null data pointer".into()));
        }
        Ok(ArrayDesc { elem, shape, strides, layout, ptr, read_only: a.read_only(), location: a.location(), owner: a.owner() })
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
pub struct HostData {
    /// Element type.
    pub elem: Scalar,
    /// Extents.
    pub shape: Vec<usize>,
    /// Strides in elements of the copied data (C or F contiguous).
    pub strides: Vec<isize>,
    /// C or F.
    pub layout: Layout,
    /// The elements.
    pub bytes: Arc<[u8]>,
    /// blake3 of `bytes`.
    pub hash: [u8; 32],
}

impl fmt::Debug for HostData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HostData({} {:?} {}, {} bytes)", self.elem, self.shape, self.layout, self.bytes.len())
    }
}

impl HostData {
    /// Copies `data` (C order, `shape`) into a constant.
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Result<HostData> {
        let n: usize = shape.iter().product();
        if n != data.len() {
            return Err(Error::BadArray(format!("shape {shape:?} holds {n} elements but {} were given", data.len())));
        }
        if shape.len() > MAX_NDIM as usize {
            return Err(Error::BadArray(format!("{} dimensions; kernels take at most {MAX_NDIM}", shape.len())));
        }
        let (hash, bytes): ([u8; 32], Arc<[u8]>) = match element_bytes(data) {
            // Large arrays: hash the caller's bytes on another thread while copying them, so
            // binding costs about one pass over the data.
            Some(view) if view.len() >= 4 << 20 => std::thread::scope(|s| {
                let h = s.spawn(|| hash_bytes(view));
                // Straight into the shared buffer: one allocation, one copy.
                let bytes: Arc<[u8]> = Arc::from(view);
                let hash = h.join().unwrap_or_else(|_| hash_bytes(&bytes));
                (hash, bytes)
            }),
            Some(view) => (hash_bytes(view), Arc::from(view)),
            None => {
                let v = elements_to_bytes(data);
                (hash_bytes(&v), Arc::from(v))
            }
        };
        let strides = strides_from_shape(shape, 1, Order::C);
        Ok(HostData { elem: T::SCALAR, shape: shape.to_vec(), strides, layout: Layout::C, bytes, hash })
    }

    /// Wraps little-endian element bytes laid out contiguously in `order`.
    pub fn from_bytes(elem: Scalar, shape: &[usize], order: Order, bytes: &[u8]) -> Result<HostData> {
        let n: usize = shape.iter().product();
        if n * elem.size() != bytes.len() || shape.len() > MAX_NDIM as usize {
            return Err(Error::BadArray(format!("{} bytes for a `{elem}` array of shape {shape:?}", bytes.len())));
        }
        let layout = if order == Order::F { Layout::F } else { Layout::C };
        Ok(HostData::new(elem, shape.to_vec(), layout, bytes.to_vec()))
    }

    fn new(elem: Scalar, shape: Vec<usize>, layout: Layout, bytes: Vec<u8>) -> HostData {
        let order = if layout == Layout::F { Order::F } else { Order::C };
        let strides = strides_from_shape(&shape, 1, order);
        let hash = hash_bytes(&bytes);
        HostData { elem, shape, strides, layout, bytes: bytes.into(), hash }
    }
}

/// blake3 of a byte string (SIMD; several GB/s on one core).
pub fn hash_bytes(bytes: &[u8]) -> [u8; 32] {
    *blake3::hash(bytes).as_bytes()
}

/// The elements' little-endian bytes, without copying, where memory already holds exactly that.
fn element_bytes<T: Element>(data: &[T]) -> Option<&[u8]> {
    #[cfg(target_endian = "little")]
    {
        if std::mem::size_of::<T>() == T::SCALAR.size() {
            // SAFETY: every Element is a plain integer, float or bool (or `half`'s f16 and bf16,
            // `repr(transparent)` over their u16 bits) whose in-memory representation on a
            // little-endian machine is exactly its little-endian bytes (bool is one byte, 0 or
            // 1), with no padding; the slice is read-only and the
            // returned view borrows it.
            return Some(unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, std::mem::size_of_val(data)) });
        }
    }
    None
}

/// Little-endian bytes of a slice of elements.
pub fn elements_to_bytes<T: Element>(data: &[T]) -> Vec<u8> {
    if let Some(view) = element_bytes(data) {
        return view.to_vec();
    }
    let mut out = Vec::with_capacity(data.len() * T::SCALAR.size());
    for x in data {
        out.extend_from_slice(&x.to_value().to_le_bytes());
    }
    out
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

/// Values that can be captured by a kernel: scalars, host slices and vectors (copied in as
/// constants), [`HostArray`]s, and device arrays (captured by pointer).
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
        let n: usize = shape.iter().product();
        if n != data.len() {
            return Err(Error::BadArray(format!("shape {shape:?} holds {n} elements but {} were given", data.len())));
        }
        Ok(HostArray { data, shape: shape.to_vec(), strides: strides_from_shape(shape, 1, order), offset: 0 })
    }

    /// A strided view of `data`: element `[i, j, ..]` is `data[offset + i*strides[0] + ..]`
    /// (strides in elements, not negative).
    pub fn strided(data: Vec<T>, shape: &[usize], strides: &[usize], offset: usize) -> Result<HostArray<T>> {
        if shape.len() != strides.len() {
            return Err(Error::BadArray("one stride per dimension".into()));
        }
        let n: usize = shape.iter().product();
        if n > 0 {
            let last = offset + shape.iter().zip(strides).map(|(d, s)| (d - 1) * s).sum::<usize>();
            if last >= data.len() {
                return Err(Error::BadArray(format!("the view reaches element {last} of {}", data.len())));
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
        let bytes: Vec<isize> = self.strides.iter().map(|s| s * T::SCALAR.size() as isize).collect();
        layout_of(&self.shape, Some(&bytes), T::SCALAR.size())
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
/// memory is plain host memory ([`Location::Host`]), which is copied in as a constant when it is
/// bound, as a `&[T]` is: a kernel cannot write it, and later changes to it are not seen.
impl IntoCapture for &dyn ArrayInterface {
    fn into_capture(self) -> Result<CaptureValue> {
        let d = ArrayDesc::from_interface(self)?;
        if d.location == Location::Host {
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
        // shape and strides lies in live host memory for `Location::Host`, readable as `elem`;
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
