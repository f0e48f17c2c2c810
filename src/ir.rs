//! The typed kernel IR that the front end produces and the code generator consumes (its
//! canonical byte encoding, the part of the cache key that describes the code, is
//! `cache::key::program`).
//!
//! Everything here is resolved: names are ids, every expression has a concrete type, constants
//! are folded into literals, and captured values are referred to by index into
//! [`Program::captures`]. Spans are kept for diagnostics but never encoded, so comments,
//! formatting and file names cannot change a key.

use std::fmt;
use std::sync::Arc;

use crate::span::Span;

mod aggregate;
mod builtin;
mod generic;
mod tensor;
mod tune;
mod visit;

pub use aggregate::{AggId, AggTy, Elem, SizeAlign, StructDef, Types, UNKNOWN_LEN};
pub use builtin::{Builtin, FenceScope, MathFn, ShflMode};
pub use generic::{Bound, ParamArrayTy, TypeParam};
pub use tensor::{
    FragKind, MmaShape, TENSOR_MAP_FIELD, TENSOR_MAP_MAX_BOX, TensorOp, mma_of_warp_code, tensor_map_box_rule, tensor_map_swizzle,
    tensor_map_type_name, wgmma_acc_coord, wgmma_k, wgmma_of_warp_code, wgmma_swizzle_bytes, wgmma_swizzle_mode,
};
pub use tune::{MAX_CANDIDATES, NoArgs, TuneArgs, TuneBinary, TuneEvalError, TuneExpr, TuneParam, TuneShape, TuneSpace, TuneUnary};
pub use visit::{visit_block, visit_expr};

/// A scalar type of the kernel language.
///
/// Each type's byte in every encoding is its [`tag`](Scalar::tag), the discriminant written on
/// each variant and pinned by a test: adding a type never renumbers the others, so the keys of
/// existing kernels do not change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum Scalar {
    /// `bool` (one byte in memory).
    Bool = 0,
    /// `i8`
    I8 = 8,
    /// `i16`
    I16 = 10,
    /// `i32`
    I32 = 1,
    /// `i64`
    I64 = 2,
    /// `u8`
    U8 = 9,
    /// `u16`
    U16 = 11,
    /// `u32`
    U32 = 3,
    /// `u64`
    U64 = 4,
    /// `usize` (64-bit on every target kache supports)
    Usize = 5,
    /// `f16`: IEEE binary16 (`half::f16` on the host).
    F16 = 12,
    /// `bf16`: bfloat16, the upper half of an `f32` (`half::bf16` on the host).
    Bf16 = 13,
    /// `f32`
    F32 = 6,
    /// `f64`
    F64 = 7,
}

impl Scalar {
    /// Every scalar type, in a fixed order.
    pub const ALL: [Scalar; 14] = [
        Scalar::Bool,
        Scalar::I8,
        Scalar::I16,
        Scalar::I32,
        Scalar::I64,
        Scalar::U8,
        Scalar::U16,
        Scalar::U32,
        Scalar::U64,
        Scalar::Usize,
        Scalar::F16,
        Scalar::Bf16,
        Scalar::F32,
        Scalar::F64,
    ];

    /// The Rust spelling of the type.
    pub fn name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I8 => "i8",
            Scalar::I16 => "i16",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::U8 => "u8",
            Scalar::U16 => "u16",
            Scalar::U32 => "u32",
            Scalar::U64 => "u64",
            Scalar::Usize => "usize",
            Scalar::F16 => "f16",
            Scalar::Bf16 => "bf16",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
        }
    }

    /// Parses the Rust spelling of a supported scalar type.
    pub fn from_name(name: &str) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Size in bytes of one element in memory.
    pub const fn size(self) -> usize {
        match self {
            Scalar::Bool | Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 | Scalar::F16 | Scalar::Bf16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::U64 | Scalar::Usize | Scalar::F64 => 8,
        }
    }

    /// Width in bits of the value (1 for `bool`).
    pub fn bits(self) -> u32 {
        match self {
            Scalar::Bool => 1,
            _ => self.size() as u32 * 8,
        }
    }

    /// Integer types (not `bool`).
    pub fn is_int(self) -> bool {
        matches!(
            self,
            Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 | Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64 | Scalar::Usize
        )
    }

    /// Signed integer types.
    pub fn is_signed(self) -> bool {
        matches!(self, Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64)
    }

    /// Floating-point types.
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::Bf16 | Scalar::F32 | Scalar::F64)
    }

    /// The 16-bit float types, which compute through `f32` where the hardware has no
    /// instruction for them.
    pub fn is_half(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::Bf16)
    }

    /// Integer or float.
    pub fn is_numeric(self) -> bool {
        self.is_int() || self.is_float()
    }

    /// Its byte in every encoding (cache keys, entries, serialised kernels); one numbering. It
    /// is the discriminant written on each variant: the eight types of the first language keep
    /// the numbers they always had, so `as u8` anywhere agrees with it.
    pub fn tag(self) -> u8 {
        self as u8
    }

    /// The scalar whose [`tag`](Self::tag) is `t`.
    pub fn from_tag(t: u8) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|s| s.tag() == t)
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An array type: element type, number of dimensions, whether it may be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct ArrayTy {
    /// Element type: a scalar, or a struct of the program's [`Types`].
    pub elem: Elem,
    /// Number of dimensions, 0..=4.
    pub ndim: u8,
    /// `&mut` parameters, shared arrays and writable captured device arrays.
    pub writable: bool,
}

impl fmt::Display for ArrayTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = if self.writable { "&mut " } else { "&" };
        let e = match self.elem {
            Elem::Scalar(s) => s.to_string(),
            Elem::Struct(id) => format!("struct #{id}"),
        };
        if self.ndim == 1 { write!(f, "{m}[{e}]") } else { write!(f, "{m}Array<{e}, {}>", self.ndim) }
    }
}

/// The most dimensions an array may have.
pub const MAX_NDIM: u8 = 4;

/// A type of the kernel language, as it appears in checked IR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum Ty {
    /// `()`
    Unit,
    /// The type of `return`, `break`, `continue` and endless loops.
    Never,
    /// A scalar.
    Scalar(Scalar),
    /// An array reference.
    Array(ArrayTy),
    /// A C-like enum of the source ([`Program::enums`]), represented as its discriminant.
    Enum(EnumTy),
    /// A type parameter, in a generic body checked at its definition (never in a compiled
    /// program).
    Param(TypeParam),
    /// An array of a type parameter's elements, in a generic body checked at its definition
    /// (never in a compiled program).
    ParamArray(ParamArrayTy),
    /// A tuple, a fixed-size array or a struct: a value made of other values, by its id in the
    /// program's [`Types`].
    Agg(AggId),
}

impl Ty {
    /// The scalar a value of this type is: itself, or an enum's discriminant type.
    pub fn scalar(self) -> Option<Scalar> {
        match self {
            Ty::Scalar(s) => Some(s),
            Ty::Enum(e) => Some(e.repr),
            _ => None,
        }
    }
}

/// A C-like enum type: which one (its index in [`Program::enums`], or in the checker's table
/// while checking) and the integer type of its discriminants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct EnumTy {
    /// Index of its definition.
    pub id: u32,
    /// `#[repr(..)]`, or `i32` (C's `int`) without one.
    pub repr: Scalar,
}

/// A C-like enum: its variants' names and discriminants, for launch checks and messages.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct EnumDef {
    /// Its name, qualified by its module outside the root.
    pub name: String,
    /// The integer type of its discriminants.
    pub repr: Scalar,
    /// Variant names and discriminants, in declaration order.
    pub variants: Vec<(String, i128)>,
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Unit => f.write_str("()"),
            Ty::Never => f.write_str("!"),
            Ty::Scalar(s) => write!(f, "{s}"),
            Ty::Array(a) => write!(f, "{a}"),
            Ty::Enum(e) => write!(f, "enum #{} ({})", e.id, e.repr),
            // Diagnostics name type parameters as written; this spelling is for debugging.
            Ty::Param(p) => write!(f, "T{}", p.index),
            Ty::ParamArray(a) => {
                let m = if a.writable { "&mut " } else { "&" };
                if a.ndim == 1 { write!(f, "{m}[T{}]", a.elem.index) } else { write!(f, "{m}Array<T{}, {}>", a.elem.index, a.ndim) }
            }
            // Diagnostics name aggregates through the program's `Types`.
            Ty::Agg(id) => write!(f, "aggregate #{id}"),
        }
    }
}

/// Memory layout of an array argument or captured array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum Layout {
    /// Row-major contiguous.
    C,
    /// Column-major contiguous.
    F,
    /// Any strides.
    A,
}

impl Layout {
    /// Its byte in every encoding (cache keys, entries, serialised kernels); one numbering, with
    /// 0 left for "not an array".
    pub fn tag(self) -> u8 {
        match self {
            Layout::C => 1,
            Layout::F => 2,
            Layout::A => 3,
        }
    }

    /// The layout whose [`tag`](Self::tag) is `t`.
    pub fn from_tag(t: u8) -> Option<Layout> {
        match t {
            1 => Some(Layout::C),
            2 => Some(Layout::F),
            3 => Some(Layout::A),
            _ => None,
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layout::C => "C",
            Layout::F => "F",
            Layout::A => "A",
        })
    }
}

/// A constant value of a scalar type.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum ScalarValue {
    /// A `bool`.
    Bool(bool),
    /// An integer of the given type, as its two's complement bits zero-extended to 64.
    Int(Scalar, u64),
    /// An `f16`.
    F16(half::f16),
    /// A `bf16`.
    Bf16(half::bf16),
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
}

impl ScalarValue {
    /// The type of the value.
    pub fn ty(self) -> Scalar {
        match self {
            ScalarValue::Bool(_) => Scalar::Bool,
            ScalarValue::Int(s, _) => s,
            ScalarValue::F16(_) => Scalar::F16,
            ScalarValue::Bf16(_) => Scalar::Bf16,
            ScalarValue::F32(_) => Scalar::F32,
            ScalarValue::F64(_) => Scalar::F64,
        }
    }

    /// The value's bytes in memory (little-endian).
    pub fn to_le_bytes(self) -> Vec<u8> {
        match self {
            ScalarValue::Bool(b) => vec![b as u8],
            ScalarValue::Int(s, v) => v.to_le_bytes()[..s.size()].to_vec(),
            ScalarValue::F16(v) => v.to_le_bytes().to_vec(),
            ScalarValue::Bf16(v) => v.to_le_bytes().to_vec(),
            ScalarValue::F32(v) => v.to_le_bytes().to_vec(),
            ScalarValue::F64(v) => v.to_le_bytes().to_vec(),
        }
    }

    /// Reads a value of type `ty` from its little-endian bytes (`bytes.len() == ty.size()`).
    pub fn from_le_bytes(ty: Scalar, bytes: &[u8]) -> Option<ScalarValue> {
        if bytes.len() != ty.size() {
            return None;
        }
        let mut b8 = [0u8; 8];
        b8[..bytes.len()].copy_from_slice(bytes);
        let raw = u64::from_le_bytes(b8);
        Some(match ty {
            Scalar::Bool => ScalarValue::Bool(raw != 0),
            Scalar::F16 => ScalarValue::F16(half::f16::from_bits(raw as u16)),
            Scalar::Bf16 => ScalarValue::Bf16(half::bf16::from_bits(raw as u16)),
            Scalar::F32 => ScalarValue::F32(f32::from_bits(raw as u32)),
            Scalar::F64 => ScalarValue::F64(f64::from_bits(raw)),
            s => ScalarValue::Int(s, raw),
        })
    }

    /// Bits for hashing: the exact representation (so `-0.0` and `0.0` differ, like the code).
    pub fn bits(self) -> u64 {
        match self {
            ScalarValue::Bool(b) => b as u64,
            ScalarValue::Int(_, v) => v,
            ScalarValue::F16(v) => v.to_bits() as u64,
            ScalarValue::Bf16(v) => v.to_bits() as u64,
            ScalarValue::F32(v) => v.to_bits() as u64,
            ScalarValue::F64(v) => v.to_bits(),
        }
    }

    /// The integer value as i128 (sign-extended for signed types).
    pub fn as_i128(self) -> Option<i128> {
        match self {
            ScalarValue::Int(s, v) => Some(if s.is_signed() {
                match s.bits() {
                    8 => v as u8 as i8 as i128,
                    16 => v as u16 as i16 as i128,
                    32 => v as u32 as i32 as i128,
                    _ => v as i64 as i128,
                }
            } else {
                v as i128
            }),
            ScalarValue::Bool(b) => Some(b as i128),
            _ => None,
        }
    }

    /// The value as f64 (integers and `bool` converted, exact up to 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            ScalarValue::F16(v) => v.to_f64(),
            ScalarValue::Bf16(v) => v.to_f64(),
            ScalarValue::F32(v) => v as f64,
            ScalarValue::F64(v) => v,
            other => other.as_i128().unwrap_or(0) as f64,
        }
    }
}

impl fmt::Display for ScalarValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ScalarValue::Bool(b) => write!(f, "{b}"),
            ScalarValue::Int(s, _) => write!(f, "{}{}", self.as_i128().unwrap_or(0), s),
            ScalarValue::F16(v) => write!(f, "{:?}f16", v.to_f32()),
            ScalarValue::Bf16(v) => write!(f, "{:?}bf16", v.to_f32()),
            ScalarValue::F32(v) => write!(f, "{v:?}f32"),
            ScalarValue::F64(v) => write!(f, "{v:?}f64"),
        }
    }
}

/// Host array data known at compile time (a `static` item of the source).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct ConstArray {
    /// Element type.
    pub elem: Scalar,
    /// Shape, row-major.
    pub shape: Vec<usize>,
    /// Little-endian element bytes, C order.
    pub bytes: Arc<[u8]>,
}

/// Index of a function in [`Program::funcs`].
pub type FuncId = usize;
/// Index of a local variable in [`Func::locals`].
pub type LocalId = usize;
/// Index of a capture in [`Program::captures`].
pub type CaptureId = usize;
/// Identifies a loop within a function, for `break` and `continue`.
pub type LoopId = usize;

/// A kernel's launch bounds, as CUDA's `__launch_bounds__(max_threads, min_blocks)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct LaunchBounds {
    /// The most threads a block of any launch has.
    pub max_threads: u32,
    /// Blocks of `max_threads` threads that should fit on one multiprocessor at once.
    pub min_blocks: Option<u32>,
}

/// A checked kernel together with everything it reaches: the unit that is compiled and keyed.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct Program {
    /// The kernel: [`Program::funcs`]`[kernel]`.
    pub kernel: FuncId,
    /// The kernel and the device functions and closures it reaches, in the order the checker
    /// reached them: a `#[kernel]` fn comes first, a factory's kernel closure after the closures
    /// and nested factories it binds.
    pub funcs: Vec<Func>,
    /// Values captured by any function of the program.
    pub captures: Vec<Capture>,
    /// `#[kernel(fmad = ..)]`: the kernel's own choice of floating-point contraction, which
    /// overrides the compile's [`Options`](crate::target::Options).
    pub fmad: Option<bool>,
    /// `#[kernel(max_threads = N, min_blocks = M)]`: launch bounds (`.maxntid`,
    /// `.minnctapersm`); a launch with a larger block is refused.
    pub launch_bounds: Option<LaunchBounds>,
    /// The C-like enums of its types, by [`EnumTy::id`]. Not part of the code: enum values are
    /// their discriminants; the definitions name them and check kernel arguments at launch.
    pub enums: Vec<EnumDef>,
    /// What the checker warns about (an unreachable `match` arm): where, and the message.
    /// Diagnostics only, never keyed.
    pub warnings: Vec<(Span, String)>,
    /// The tuples, fixed-size arrays and structs of its types, by [`AggId`].
    pub types: Types,
    /// `#[tune(..)]`: what the kernel may be tuned over. Set on a kernel as declared (a generic
    /// kernel's definition), not on its instances. Not part of the code: tuning results are
    /// keyed by it (`cache::key::tuning`), compiled code is not.
    pub tune: Option<TuneSpace>,
}

impl Program {
    /// The kernel function.
    pub fn kernel(&self) -> &Func {
        &self.funcs[self.kernel]
    }

    /// Whether any function uses a builtin that needs libdevice on NVPTX.
    pub fn uses_libdevice(&self) -> bool {
        self.funcs.iter().any(|f| f.uses_libdevice)
    }
}

/// What kind of function this is.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum FuncKind {
    /// A `#[kernel] fn`.
    Kernel,
    /// A device function (`fn` item).
    Device,
    /// A device closure bound by `let` in a factory.
    Closure {
        /// The factory that defines it.
        factory: String,
    },
    /// The kernel closure a factory returns.
    KernelClosure {
        /// The factory that returns it.
        factory: String,
    },
}

/// A parameter or local variable.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct LocalDecl {
    /// The source name (diagnostics only; never keyed).
    pub name: String,
    /// Its type.
    pub ty: Ty,
}

/// A checked function.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct Func {
    /// Source name; the symbol of a kernel.
    pub name: String,
    /// Kernel, device function or closure.
    pub kind: FuncKind,
    /// Parameters: the first `params` locals.
    pub params: usize,
    /// A method with a `&mut self` receiver: its first parameter is passed by reference (see
    /// [`ExprKind::CallRef`]), so its writes to `self` are the caller's.
    pub ref_self: bool,
    /// Return type.
    pub ret: Ty,
    /// Parameters first, then every `let` and loop variable.
    pub locals: Vec<LocalDecl>,
    /// Body; its value is the return value.
    pub body: Block,
    /// Functions called from the body.
    pub callees: Vec<FuncId>,
    /// Captures named in the body.
    pub captures: Vec<CaptureId>,
    /// Uses a builtin that is implemented by libdevice on NVPTX.
    pub uses_libdevice: bool,
    /// Uses `sync_threads`, shared memory or a warp-level collective (the host backend runs such
    /// blocks cooperatively).
    pub uses_block_sync: bool,
    /// Span of the function's name.
    pub span: Span,
}

impl Func {
    /// Parameter declarations.
    pub fn param_decls(&self) -> &[LocalDecl] {
        &self.locals[..self.params]
    }
}

/// Where a captured value comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum CaptureOrigin {
    /// A global bound by the host on the module.
    Global(String),
    /// A parameter of a factory, bound when the factory is instantiated.
    FactoryArg {
        /// The factory.
        factory: String,
        /// The parameter.
        param: String,
    },
    /// A `static` item of the source.
    Static(String),
}

impl fmt::Display for CaptureOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureOrigin::Global(n) => write!(f, "global '{n}'"),
            CaptureOrigin::FactoryArg { factory, param } => {
                write!(f, "closure variable '{param}' of factory '{factory}'")
            }
            CaptureOrigin::Static(n) => write!(f, "static '{n}'"),
        }
    }
}

/// Where the value of a capture is found at code generation time.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum CaptureSource {
    /// The host's binding number `n` (globals and top-level factory arguments, in the order the
    /// binding environment listed them).
    Binding(usize),
    /// A scalar known to the front end (a literal passed to a nested factory).
    Scalar(ScalarValue),
    /// A `static` array of the source.
    Static(ConstArray),
}

/// The type of a captured value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum CaptureTy {
    /// A host scalar: lowered as an immediate.
    Scalar(Scalar),
    /// An array.
    Array {
        /// Element type, dimensions, writability.
        ty: ArrayTy,
        /// Device arrays are captured by pointer; host arrays are copied in as constants.
        device: bool,
        /// The array's layout, from its strides.
        layout: Layout,
    },
}

/// A value captured by the program.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct Capture {
    /// Global, factory argument or static.
    pub origin: CaptureOrigin,
    /// Its type.
    pub ty: CaptureTy,
    /// Where its value is found.
    pub source: CaptureSource,
}

/// A block: statements, then an optional tail expression that is its value.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct Block<T = Ty> {
    /// Statements.
    pub stmts: Vec<Stmt<T>>,
    /// The value of the block.
    pub tail: Option<Box<Expr<T>>>,
}

/// A statement.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum Stmt<T = Ty> {
    /// `let x = init;` (without an initialiser, the checker has proved every read comes after an
    /// assignment; code generation still starts the local at zero).
    Let(LocalId, Option<Expr<T>>),
    /// An expression evaluated for its effect.
    Expr(Expr<T>),
}

/// A typed expression.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct Expr<T = Ty> {
    /// What it does.
    pub kind: ExprKind<T>,
    /// Its type.
    pub ty: T,
    /// Where it is in the source.
    pub span: Span,
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum UnOp {
    /// `-x`
    Neg,
    /// `!x`
    Not,
}

/// Binary operators (short-circuit logic is [`ExprKind::Logic`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl BinOp {
    /// The operator's token.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
        }
    }

    /// Comparison operators produce `bool`.
    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
    }

    /// Shifts take any integer on the right.
    pub fn is_shift(self) -> bool {
        matches!(self, BinOp::Shl | BinOp::Shr)
    }
}

/// Short-circuit logic operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum LogicOp {
    /// `&&`
    And,
    /// `||`
    Or,
}

/// A place that can be assigned.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum Place<T = Ty> {
    /// A local variable.
    Local(LocalId),
    /// An array element: array, indices (one per dimension).
    Index(Box<Expr<T>>, Vec<Expr<T>>),
    /// Component `k` of the tuple or struct at a place (`p.mass = ..`, `t.0 = ..`).
    Field(Box<Place<T>>, u32),
    /// An element of the fixed-size array at a place (`a[i] = ..` for a local `a: [T; N]`).
    Elem(Box<Place<T>>, Box<Expr<T>>),
}

/// Expression kinds.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum ExprKind<T = Ty> {
    /// A constant of the expression's type.
    Lit(ScalarValue),
    /// A literal whose type the checker has not settled yet (never in a checked [`Program`]).
    PendingLit(PendingLit),
    /// `()`
    Unit,
    /// A local variable's value.
    Local(LocalId),
    /// A captured value: a scalar immediate or an array.
    Capture(CaptureId),
    /// `-x`, `!x`
    Unary(UnOp, Box<Expr<T>>),
    /// Arithmetic, bitwise and comparison operators.
    Binary(BinOp, Box<Expr<T>>, Box<Expr<T>>),
    /// `&&`, `||`
    Logic(LogicOp, Box<Expr<T>>, Box<Expr<T>>),
    /// `x as T`, T being the expression's type.
    Cast(Box<Expr<T>>),
    /// Array element read (of an array reference; [`ExprKind::Elem`] reads a fixed-size array).
    Index(Box<Expr<T>>, Vec<Expr<T>>),
    /// A tuple, struct or fixed-size array built from its parts (`(a, b)`, `S { x, y }`,
    /// `[a, b, c]`): each part is its component's index and value, in the order the source
    /// evaluates them; the components not listed come from `base` (`S { x, ..base }`), which is
    /// evaluated after them.
    Aggregate {
        /// Component index and value, in evaluation order.
        parts: Vec<(u32, Expr<T>)>,
        /// `..base`: the value of every component not in `parts`.
        base: Option<Box<Expr<T>>>,
    },
    /// `[value; n]`: `n` copies of one value, `n` given by the expression's type.
    Repeat(Box<Expr<T>>),
    /// The value of the expression's type whose every byte is zero: what the variants of an
    /// enum with fields other than the one a value is hold (`Some(x)` holds no `None` part, and
    /// `None` a zero where `Some`'s value would be), so every value is wholly initialised.
    Zeroed,
    /// Component `k` of a tuple or struct value (`t.0`, `p.mass`).
    Field(Box<Expr<T>>, u32),
    /// Element `i` of a fixed-size array value (`a[i]`): an index past the end is clamped to
    /// the last element, as the language reference says (a literal one is an error).
    Elem(Box<Expr<T>>, Box<Expr<T>>),
    /// A call of a method with a `&mut self` receiver: the receiver is a place, passed by
    /// reference; the other arguments are values.
    CallRef(FuncId, Place<T>, Vec<Expr<T>>),
    /// `place = value`
    Assign(Place<T>, Box<Expr<T>>),
    /// `place op= value`
    CompoundAssign(BinOp, Place<T>, Box<Expr<T>>),
    /// Call of a device function or closure.
    Call(FuncId, Vec<Expr<T>>),
    /// A builtin.
    Builtin(Builtin, Vec<Expr<T>>),
    /// `shared_array::<T, N>()`: a block-shared array; `site` numbers the call sites of the
    /// function.
    SharedArray {
        /// Element type.
        elem: Elem,
        /// Number of elements.
        len: u64,
        /// Call site number within the function.
        site: usize,
    },
    /// `dynamic_shared_array::<T>()`: the launch's dynamic shared memory.
    DynSharedArray(Elem),
    /// `if cond { .. } else { .. }`
    If(Box<Expr<T>>, Block<T>, Option<Block<T>>),
    /// `{ .. }`
    Block(Block<T>),
    /// `while cond { .. }`
    While(LoopId, Box<Expr<T>>, Block<T>),
    /// `loop { .. }`
    Loop(LoopId, Block<T>),
    /// `for var in start..end` / `start..=end` / `(start..end).step_by(step)`
    For {
        /// Loop id.
        id: LoopId,
        /// The loop variable.
        var: LocalId,
        /// First value.
        start: Box<Expr<T>>,
        /// Bound.
        end: Box<Expr<T>>,
        /// `..=`
        inclusive: bool,
        /// `step_by(step)`, a `usize`.
        step: Option<Box<Expr<T>>>,
        /// Body.
        body: Block<T>,
    },
    /// `break` (with a value only out of `loop`).
    Break(LoopId, Option<Box<Expr<T>>>),
    /// `continue`
    Continue(LoopId),
    /// `return`
    Return(Option<Box<Expr<T>>>),
    /// `match scrutinee { arms }`: the first arm whose pattern holds the value and whose guard
    /// is true runs. The arms cover every value (the checker proved it); the last arm without
    /// a guard that every value left reaches is taken without a test.
    Match(Box<Expr<T>>, Vec<MatchArm<T>>),
}

/// An arm of a `match`.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct MatchArm<T = Ty> {
    /// The values it takes, as inclusive ranges of constants of the scrutinee's type (`None`:
    /// every value: `_` or a plain binding).
    pub ranges: Option<Vec<(Expr<T>, Expr<T>)>>,
    /// `name` or `name @ pattern`: the local bound to the value for the guard and the body.
    pub binding: Option<LocalId>,
    /// `if guard`
    pub guard: Option<Expr<T>>,
    /// The arm's value.
    pub body: Expr<T>,
    /// Where its pattern is (diagnostics only).
    pub pat_span: Span,
}

/// A literal before type inference: its value at every precision it may take.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct PendingLit {
    /// Integer magnitude (`None` for float literals).
    pub int: Option<u128>,
    /// Written with a leading `-`.
    pub neg: bool,
    /// Value parsed as `f64`.
    pub f64: f64,
    /// Value parsed as `f32`.
    pub f32: f32,
    /// Value parsed as `f16`.
    pub f16: half::f16,
    /// Value parsed as `bf16`.
    pub bf16: half::bf16,
}

impl PendingLit {
    /// The float value of type `s` (negated if written with `-`), each precision rounded once
    /// from the literal's text; `None` if `s` is not a float type.
    pub fn float_value(&self, s: Scalar) -> Option<ScalarValue> {
        Some(match (s, self.neg) {
            (Scalar::F64, n) => ScalarValue::F64(if n { -self.f64 } else { self.f64 }),
            (Scalar::F32, n) => ScalarValue::F32(if n { -self.f32 } else { self.f32 }),
            (Scalar::F16, n) => ScalarValue::F16(if n { -self.f16 } else { self.f16 }),
            (Scalar::Bf16, n) => ScalarValue::Bf16(if n { -self.bf16 } else { self.bf16 }),
            _ => return None,
        })
    }

    /// A finite literal that rounds to infinity as type `s`.
    pub fn overflows(&self, s: Scalar) -> bool {
        self.f64.is_finite() && self.float_value(s).is_some_and(|v| v.as_f64().is_infinite())
    }
}
