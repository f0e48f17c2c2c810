//! Plain-data structs on the host side: the layout a `#[repr(C)]` Rust struct has
//! ([`HostStruct`], declared through [`plain_struct!`](crate::plain_struct)), arrays of them
//! in a device's memory ([`StructArray`]), structs passed by value, and the check, before any
//! launch, that the host's size, alignment and every field's offset and type are the kernel's.
//!
//! Values cross as bytes field by field (never padding, which Rust leaves uninitialised); a
//! value read back is checked (a `bool` field holds 0 or 1) before it becomes a `T`.

use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::sync::Arc;

use super::{ArgValue, Buffer, Device, KernelArg};
use crate::capture::{Element, Location};
use crate::error::{Error, Result};
use crate::ir::{AggId, AggTy, Scalar, Ty, Types};

/// What one field of a host struct holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// A scalar.
    Scalar(Scalar),
    /// `[T; N]`: the element's kind and `N`.
    Array(Box<FieldKind>, usize),
    /// A nested plain-data struct.
    Struct(HostStruct),
}

/// One field of a host struct: its name, byte offset and kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostField {
    /// The field's name.
    pub name: &'static str,
    /// Its byte offset in the struct (`core::mem::offset_of!`).
    pub offset: usize,
    /// What it holds.
    pub kind: FieldKind,
}

/// The layout of a `#[repr(C)]` Rust struct, as the host compiler laid it out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostStruct {
    /// The struct's name (messages only).
    pub name: &'static str,
    /// `size_of`.
    pub size: usize,
    /// `align_of`.
    pub align: usize,
    /// Every field, in declaration order.
    pub fields: Vec<HostField>,
}

/// A Rust type that may be a field of a plain-data struct: a scalar, `[T; N]` of such, or
/// another plain-data struct.
///
/// # Safety
///
/// [`kind`](Self::kind) describes the type truly (size, and for a struct every field at its
/// offset), and every bit pattern that the kind's scalars allow is a valid value of the type
/// (no references, no enums, no `char`). [`plain_struct!`](crate::plain_struct) implements it
/// for the structs it declares.
pub unsafe trait FieldType: Copy + Send + Sync + 'static {
    /// What the type holds.
    fn kind() -> FieldKind;
}

macro_rules! scalar_fields {
    ($($t:ty),*) => {$(
        // SAFETY: a scalar of the kernel language: its kind is its `Element::SCALAR`, and every
        // bit pattern of its size is a value (bool aside, which the reader checks).
        unsafe impl FieldType for $t {
            fn kind() -> FieldKind {
                FieldKind::Scalar(<$t as Element>::SCALAR)
            }
        }
    )*};
}
scalar_fields!(bool, i8, i16, i32, i64, u8, u16, u32, u64, usize, half::f16, half::bf16, f32, f64);

// SAFETY: an array is `N` elements of `T` back to back, with `T`'s guarantees.
unsafe impl<T: FieldType, const N: usize> FieldType for [T; N] {
    fn kind() -> FieldKind {
        FieldKind::Array(Box::new(T::kind()), N)
    }
}

/// A `#[repr(C)]` struct of scalars, fixed-size arrays and other such structs: an element of
/// a [`StructArray`] and a kernel argument by value. Declare it with
/// [`plain_struct!`](crate::plain_struct), which implements this trait.
///
/// # Safety
///
/// [`layout`](Self::layout) gives the type's true size, alignment, and every field with its
/// true offset and a [`FieldType`] kind; the struct has no other fields.
pub unsafe trait PlainStruct: FieldType {
    /// The struct's layout on the host.
    fn layout() -> HostStruct;
}

/// Declares a `#[repr(C)]` plain-data struct that kernels can take: as the elements of a
/// `&[S]` / `&mut [S]` parameter ([`StructArray`]) or by value. The runtime compares its size,
/// alignment and each field's offset and type with the kernel's struct of the same shape
/// before every launch.
///
/// ```
/// use kache::{Config, Device, Grid, Jit};
///
/// kache::plain_struct! {
///     #[derive(Clone, Copy, Debug, PartialEq)]
///     pub struct Particle {
///         pub pos: [f32; 3],
///         pub mass: f32,
///     }
/// }
///
/// let src = r#"
/// #[derive(Clone, Copy)]
/// struct Particle { pos: [f32; 3], mass: f32 }
///
/// #[kernel]
/// pub fn fall(ps: &mut [Particle], dt: f32) {
///     let i = global_id_x();
///     if i < ps.len() {
///         ps[i].pos[2] -= 9.75 * dt * ps[i].mass;
///     }
/// }
/// "#;
/// let jit = Jit::new(Config::in_memory())?;
/// let dev = Device::host();
/// let mut ps = dev.upload_structs(&[Particle { pos: [0.0, 0.0, 10.0], mass: 2.0 }])?;
/// jit.load_source("fall.rs", src)?.kernel("fall")?.launch(&dev, Grid::linear(1, 32), (&mut ps, 0.5f32))?;
/// assert_eq!(ps.download()?[0].pos, [0.0, 0.0, 0.25]);
/// # Ok::<(), kache::Error>(())
/// ```
#[macro_export]
macro_rules! plain_struct {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($(#[$fmeta:meta])* $fvis:vis $field:ident : $fty:ty),* $(,)? }) => {
        $(#[$meta])*
        #[repr(C)]
        $vis struct $name { $($(#[$fmeta])* $fvis $field: $fty),* }

        // SAFETY: the struct is declared just above, `#[repr(C)]`, with exactly these fields;
        // each field's type is a `FieldType`.
        unsafe impl $crate::FieldType for $name {
            fn kind() -> $crate::FieldKind {
                $crate::FieldKind::Struct(<$name as $crate::PlainStruct>::layout())
            }
        }

        // SAFETY: size, alignment and offsets come from the compiler (`size_of`, `align_of`,
        // `offset_of!`) for the struct declared above, and every field is listed.
        unsafe impl $crate::PlainStruct for $name {
            fn layout() -> $crate::HostStruct {
                $crate::HostStruct {
                    name: stringify!($name),
                    size: ::core::mem::size_of::<$name>(),
                    align: ::core::mem::align_of::<$name>(),
                    fields: ::std::vec![$($crate::HostField {
                        name: stringify!($field),
                        offset: ::core::mem::offset_of!($name, $field),
                        kind: <$fty as $crate::FieldType>::kind(),
                    }),*],
                }
            }
        }
    };
}

/// The scalars a host struct is made of, with their byte offsets, in memory order.
fn leaves(kind: &FieldKind, base: usize, out: &mut Vec<(usize, Scalar)>) {
    match kind {
        FieldKind::Scalar(s) => out.push((base, *s)),
        FieldKind::Array(e, n) => {
            let size = kind_size(e);
            for i in 0..*n {
                leaves(e, base + i * size, out);
            }
        }
        FieldKind::Struct(s) => {
            for f in &s.fields {
                leaves(&f.kind, base + f.offset, out);
            }
        }
    }
}

fn kind_size(kind: &FieldKind) -> usize {
    match kind {
        FieldKind::Scalar(s) => s.size(),
        FieldKind::Array(e, n) => kind_size(e) * n,
        FieldKind::Struct(s) => s.size,
    }
}

/// The bytes of `values` laid out as their type's memory (`kind`), padding zeroed.
fn to_bytes<T: FieldType>(values: &[T], kind: &FieldKind) -> Vec<u8> {
    let mut scalars = Vec::new();
    leaves(kind, 0, &mut scalars);
    let size = kind_size(kind);
    let mut out = vec![0u8; values.len() * size];
    for (i, v) in values.iter().enumerate() {
        let src = v as *const T as *const u8;
        for (off, s) in &scalars {
            let at = i * size + off;
            // SAFETY: `kind` is `T`'s true layout (the `FieldType` promise), so `off` is the
            // offset of an initialised scalar field of `s.size()` bytes inside `*v`; the
            // destination range is inside `out`, which holds `values.len()` values.
            unsafe { std::ptr::copy_nonoverlapping(src.add(*off), out.as_mut_ptr().add(at), s.size()) }
        }
    }
    out
}

/// The structs in `bytes` (laid out as the struct's memory), each field checked: a `bool` holds
/// 0 or 1.
fn from_bytes<T: PlainStruct>(bytes: &[u8], layout: &HostStruct) -> Result<Vec<T>> {
    let mut scalars = Vec::new();
    leaves(&FieldKind::Struct(layout.clone()), 0, &mut scalars);
    let n = bytes.len() / layout.size.max(1);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let mut v = MaybeUninit::<T>::zeroed();
        let dst = v.as_mut_ptr() as *mut u8;
        for (off, s) in &scalars {
            let at = i * layout.size + off;
            if *s == Scalar::Bool && bytes[at] > 1 {
                return Err(Error::BadArray(format!("element {i} of a `{}` array holds {} in a bool field", layout.name, bytes[at])));
            }
            // SAFETY: `off..off + size` is a scalar field inside `T` (the `PlainStruct`
            // promise) and `at..at + size` is inside `bytes`, which holds `n` structs.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr().add(at), dst.add(*off), s.size()) }
        }
        // SAFETY: every field is written with a valid value of its scalar type (bools checked
        // above; every other scalar accepts any bits), the rest is zeroed padding.
        out.push(unsafe { v.assume_init() });
    }
    Ok(out)
}

/// A 1-d array of plain-data structs in a device's memory, for `&[S]` and `&mut [S]` kernel
/// parameters.
pub struct StructArray<T> {
    buf: Arc<Buffer>,
    device: Device,
    len: usize,
    layout: Arc<HostStruct>,
    _t: PhantomData<T>,
}

impl<T> fmt::Debug for StructArray<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StructArray<{}>({} elements on {})", self.layout.name, self.len, self.device.describe())
    }
}

impl Device {
    /// Copies `data` to a new array of structs on this device.
    pub fn upload_structs<T: PlainStruct>(&self, data: &[T]) -> Result<StructArray<T>> {
        let layout = T::layout();
        let bytes = to_bytes(data, &FieldKind::Struct(layout.clone()));
        let buf = self.alloc_buffer(bytes.len())?;
        buf.write(0, &bytes)?;
        Ok(StructArray { buf, device: self.clone(), len: data.len(), layout: Arc::new(layout), _t: PhantomData })
    }

    /// A new array of `len` structs whose bytes are all zero.
    pub fn alloc_structs<T: PlainStruct>(&self, len: usize) -> Result<StructArray<T>> {
        let layout = T::layout();
        let bytes = len.checked_mul(layout.size).ok_or_else(|| Error::BadArray("size overflows".into()))?;
        let buf = self.alloc_buffer(bytes)?;
        Ok(StructArray { buf, device: self.clone(), len, layout: Arc::new(layout), _t: PhantomData })
    }
}

impl<T: PlainStruct> StructArray<T> {
    /// Number of structs.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No structs.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies the structs back to the host.
    pub fn download(&self) -> Result<Vec<T>> {
        let mut bytes = vec![0u8; self.len * self.layout.size];
        self.buf.read(0, &mut bytes)?;
        from_bytes(&bytes, &self.layout)
    }

    fn arg_value(&self, writable: bool) -> ArgValue {
        ArgValue::Structs(StructsArg {
            ptr: self.buf.ptr(),
            len: self.len,
            location: self.device.location(),
            layout: self.layout.clone(),
            writable,
            _owner: self.buf.clone(),
        })
    }
}

impl<T: PlainStruct> KernelArg for &StructArray<T> {
    fn arg(&self) -> Result<ArgValue> {
        Ok(self.arg_value(false))
    }
}

impl<T: PlainStruct> KernelArg for &mut StructArray<T> {
    fn arg(&self) -> Result<ArgValue> {
        Ok(self.arg_value(true))
    }
}

/// An array of structs as a kernel argument: where it is, how many, their host layout.
#[derive(Clone)]
pub struct StructsArg {
    pub(crate) ptr: u64,
    pub(crate) len: usize,
    pub(crate) location: Location,
    pub(crate) layout: Arc<HostStruct>,
    pub(crate) writable: bool,
    /// Keeps the memory alive while the argument is.
    _owner: Arc<Buffer>,
}

impl fmt::Debug for StructsArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} `{}` structs at {:#x} in {}{}",
            self.len,
            self.layout.name,
            self.ptr,
            self.location,
            if self.writable { " (writable)" } else { "" }
        )
    }
}

/// A plain-data struct (or a fixed-size array, `[f32; 3]`) passed to a kernel by value
/// (`p: Particle`): `ByValue(p)`.
#[derive(Clone, Copy, Debug)]
pub struct ByValue<T>(pub T);

impl<T: FieldType> KernelArg for ByValue<T> {
    fn arg(&self) -> Result<ArgValue> {
        let kind = T::kind();
        let bytes = to_bytes(std::slice::from_ref(&self.0), &kind);
        Ok(ArgValue::Struct { bytes, kind: Arc::new(kind) })
    }
}

/// Checks that a host value of kind `host` is laid out as the kernel's type `t` (of `types`):
/// for a struct or tuple its size, alignment, and every field's name, offset and type,
/// recursively; for an array its element and length.
pub(crate) fn check_value(types: &Types, t: Ty, host: &FieldKind) -> std::result::Result<(), String> {
    match host {
        FieldKind::Struct(s) => check_layout(types, t, s),
        other => check_kind(types, t, other, "the value"),
    }
}

/// Checks that the host struct `host` is laid out as the kernel's struct or tuple `t`.
pub(crate) fn check_layout(types: &Types, t: Ty, host: &HostStruct) -> std::result::Result<(), String> {
    let Ty::Agg(id) = t else {
        return Err(format!("the kernel's type is `{}`, the host passes the struct `{}`", types.name(t), host.name));
    };
    check_struct(types, id, host, host.name)
}

fn check_struct(types: &Types, id: AggId, host: &HostStruct, path: &str) -> std::result::Result<(), String> {
    // A tuple is laid out as a struct of its elements; its elements have no names to compare.
    let (kname, fields): (String, Vec<(Option<&str>, Ty)>) = match types.get(id) {
        Some(AggTy::Struct(def)) => (def.name.clone(), def.fields.iter().map(|(n, t)| (Some(n.as_str()), *t)).collect()),
        Some(AggTy::Tuple(ts)) => (types.name(Ty::Agg(id)), ts.iter().map(|t| (None, *t)).collect()),
        _ => return Err(format!("`{path}`: the kernel's type is not a struct or a tuple")),
    };
    let Some((offsets, sa)) = types.layout(id) else { return Err(format!("`{path}`: the kernel's struct has no layout")) };
    if fields.len() != host.fields.len() {
        return Err(format!("`{path}` has {} fields on the host, the kernel's `{kname}` has {}", host.fields.len(), fields.len()));
    }
    if (sa.size, sa.align) != (host.size as u64, host.align as u64) {
        return Err(format!(
            "`{path}` is {} bytes aligned to {} on the host, the kernel's `{kname}` is {} bytes aligned to {}",
            host.size, host.align, sa.size, sa.align
        ));
    }
    for (((name, ty), off), hf) in fields.iter().zip(&offsets).zip(&host.fields) {
        let at = format!("{path}.{}", hf.name);
        if let Some(name) = name
            && *name != hf.name
        {
            return Err(format!("field `{at}` on the host is `{name}` in the kernel's `{kname}` (fields must come in the same order)"));
        }
        if *off != hf.offset as u64 {
            return Err(format!("field `{at}` is at byte {} on the host and at byte {off} in the kernel", hf.offset));
        }
        check_kind(types, *ty, &hf.kind, &at)?;
    }
    Ok(())
}

fn check_kind(types: &Types, t: Ty, kind: &FieldKind, at: &str) -> std::result::Result<(), String> {
    match (t, kind) {
        (Ty::Scalar(s), FieldKind::Scalar(h)) if s == *h => Ok(()),
        (Ty::Agg(id), FieldKind::Array(e, n)) => match types.get(id) {
            Some(AggTy::Array { elem, len }) if *len == *n as u64 => check_kind(types, *elem, e, &format!("{at}[..]")),
            _ => Err(format!("field `{at}` is `{}` in the kernel and an array of {n} on the host", types.name(t))),
        },
        (Ty::Agg(id), FieldKind::Struct(s)) => check_struct(types, id, s, at),
        (t, k) => Err(format!("field `{at}` is `{}` in the kernel and {} on the host", types.name(t), describe_kind(k))),
    }
}

/// A host value's kind, for messages.
pub(crate) fn describe_kind(k: &FieldKind) -> String {
    match k {
        FieldKind::Scalar(s) => format!("`{s}`"),
        FieldKind::Array(e, n) => format!("an array of {n} ({})", describe_kind(e)),
        FieldKind::Struct(s) => format!("the struct `{}`", s.name),
    }
}

/// The scalars of a struct argument, each in its 8-byte parameter slot, for the kernel ABI's
/// leaves (`ParamAbi::Aggregate`): each leaf's bytes at its offset, zero-extended.
pub(crate) fn struct_slots(bytes: &[u8], leaves: &[(u64, Scalar)]) -> Option<Vec<u64>> {
    leaves
        .iter()
        .map(|(off, s)| {
            let at = usize::try_from(*off).ok()?;
            let b = bytes.get(at..at + s.size())?;
            let mut word = [0u8; 8];
            word[..b.len()].copy_from_slice(b);
            Some(u64::from_le_bytes(word))
        })
        .collect()
}
