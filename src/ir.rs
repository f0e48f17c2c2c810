//! The typed kernel IR that the front end produces and the code generator consumes, and its
//! canonical byte encoding (the part of the cache key that describes the code).
//!
//! Everything here is resolved: names are ids, every expression has a concrete type, constants
//! are folded into literals, and captured values are referred to by index into
//! [`Program::captures`]. Spans are kept for diagnostics but never encoded, so comments,
//! formatting and file names cannot change a key.

use std::fmt;
use std::sync::Arc;

use crate::span::Span;

/// A scalar type of the kernel language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum Scalar {
    /// `bool` (one byte in memory).
    Bool,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `u32`
    U32,
    /// `u64`
    U64,
    /// `usize` (64-bit on every target kache supports)
    Usize,
    /// `f32`
    F32,
    /// `f64`
    F64,
}

impl Scalar {
    /// Every scalar type, in a fixed order.
    pub const ALL: [Scalar; 8] =
        [Scalar::Bool, Scalar::I32, Scalar::I64, Scalar::U32, Scalar::U64, Scalar::Usize, Scalar::F32, Scalar::F64];

    /// The Rust spelling of the type.
    pub fn name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::U32 => "u32",
            Scalar::U64 => "u64",
            Scalar::Usize => "usize",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
        }
    }

    /// Parses the Rust spelling of a supported scalar type.
    pub fn from_name(name: &str) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Size in bytes of one element in memory.
    pub fn size(self) -> usize {
        match self {
            Scalar::Bool => 1,
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
        matches!(self, Scalar::I32 | Scalar::I64 | Scalar::U32 | Scalar::U64 | Scalar::Usize)
    }

    /// Signed integer types.
    pub fn is_signed(self) -> bool {
        matches!(self, Scalar::I32 | Scalar::I64)
    }

    /// Floating-point types.
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }

    /// Integer or float.
    pub fn is_numeric(self) -> bool {
        self.is_int() || self.is_float()
    }

    /// Its byte in every encoding (cache keys, entries, serialised kernels); one numbering.
    pub fn tag(self) -> u8 {
        self as u8
    }

    /// The scalar whose [`tag`](Self::tag) is `t`.
    pub fn from_tag(t: u8) -> Option<Scalar> {
        Scalar::ALL.get(t as usize).copied()
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An array type: element type, number of dimensions, whether it may be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArrayTy {
    /// Element type.
    pub elem: Scalar,
    /// Number of dimensions, 0..=4.
    pub ndim: u8,
    /// `&mut` parameters, shared arrays and writable captured device arrays.
    pub writable: bool,
}

impl fmt::Display for ArrayTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = if self.writable { "&mut " } else { "&" };
        if self.ndim == 1 { write!(f, "{m}[{}]", self.elem) } else { write!(f, "{m}Array<{}, {}>", self.elem, self.ndim) }
    }
}

/// The most dimensions an array may have.
pub const MAX_NDIM: u8 = 4;

/// A type of the kernel language, as it appears in checked IR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// `()`
    Unit,
    /// The type of `return`, `break`, `continue` and endless loops.
    Never,
    /// A scalar.
    Scalar(Scalar),
    /// An array reference.
    Array(ArrayTy),
}

impl Ty {
    /// The scalar inside, if this is one.
    pub fn scalar(self) -> Option<Scalar> {
        match self {
            Ty::Scalar(s) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Unit => f.write_str("()"),
            Ty::Never => f.write_str("!"),
            Ty::Scalar(s) => write!(f, "{s}"),
            Ty::Array(a) => write!(f, "{a}"),
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
pub enum ScalarValue {
    /// A `bool`.
    Bool(bool),
    /// An integer of the given type, as its two's complement bits zero-extended to 64.
    Int(Scalar, u64),
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
            ScalarValue::F32(_) => Scalar::F32,
            ScalarValue::F64(_) => Scalar::F64,
        }
    }

    /// The value's bytes in memory (little-endian).
    pub fn to_le_bytes(self) -> Vec<u8> {
        match self {
            ScalarValue::Bool(b) => vec![b as u8],
            ScalarValue::Int(s, v) => v.to_le_bytes()[..s.size()].to_vec(),
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
            ScalarValue::F32(v) => v.to_bits() as u64,
            ScalarValue::F64(v) => v.to_bits(),
        }
    }

    /// The integer value as i128 (sign-extended for signed types).
    pub fn as_i128(self) -> Option<i128> {
        match self {
            ScalarValue::Int(s, v) => Some(if s.is_signed() {
                match s.bits() {
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
            ScalarValue::F32(v) => write!(f, "{v:?}f32"),
            ScalarValue::F64(v) => write!(f, "{v:?}f64"),
        }
    }
}

/// Host array data known at compile time (a `static` item of the source).
#[derive(Clone, Debug, PartialEq)]
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

/// A checked kernel together with everything it reaches: the unit that is compiled and keyed.
#[derive(Clone, Debug)]
pub struct Program {
    /// The kernel: [`Program::funcs`]`[kernel]`.
    pub kernel: FuncId,
    /// The kernel and the device functions and closures it reaches, in the order the checker
    /// reached them: a `#[kernel]` fn comes first, a factory's kernel closure after the closures
    /// and nested factories it binds.
    pub funcs: Vec<Func>,
    /// Values captured by any function of the program.
    pub captures: Vec<Capture>,
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
pub struct LocalDecl {
    /// The source name (diagnostics only; never keyed).
    pub name: String,
    /// Its type.
    pub ty: Ty,
}

/// A checked function.
#[derive(Clone, Debug)]
pub struct Func {
    /// Source name; the symbol of a kernel.
    pub name: String,
    /// Kernel, device function or closure.
    pub kind: FuncKind,
    /// Parameters: the first `params` locals.
    pub params: usize,
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
    /// Uses `sync_threads` or shared memory (the host backend runs such blocks cooperatively).
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
pub struct Block<T = Ty> {
    /// Statements.
    pub stmts: Vec<Stmt<T>>,
    /// The value of the block.
    pub tail: Option<Box<Expr<T>>>,
}

/// A statement.
#[derive(Clone, Debug)]
pub enum Stmt<T = Ty> {
    /// `let x = init;` (without an initialiser, the checker has proved every read comes after an
    /// assignment; code generation still starts the local at zero).
    Let(LocalId, Option<Expr<T>>),
    /// An expression evaluated for its effect.
    Expr(Expr<T>),
}

/// A typed expression.
#[derive(Clone, Debug)]
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
pub enum UnOp {
    /// `-x`
    Neg,
    /// `!x`
    Not,
}

/// Binary operators (short-circuit logic is [`ExprKind::Logic`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
pub enum LogicOp {
    /// `&&`
    And,
    /// `||`
    Or,
}

/// A place that can be assigned.
#[derive(Clone, Debug)]
pub enum Place<T = Ty> {
    /// A local variable.
    Local(LocalId),
    /// An array element: array, indices (one per dimension).
    Index(Box<Expr<T>>, Vec<Expr<T>>),
}

/// Builtin operations; the list of builtins and their signatures lives in `lang::builtins`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `thread_idx_x/y/z()`
    ThreadIdx(u8),
    /// `block_idx_x/y/z()`
    BlockIdx(u8),
    /// `block_dim_x/y/z()`
    BlockDim(u8),
    /// `grid_dim_x/y/z()`
    GridDim(u8),
    /// `global_id_x/y/z()`
    GlobalId(u8),
    /// `sync_threads()`
    SyncThreads,
    /// `atomic_add(&mut a[i], v)`: the first argument is an [`ExprKind::Index`] expression naming
    /// the element.
    AtomicAdd,
    /// `atomic_max`
    AtomicMax,
    /// `atomic_min`
    AtomicMin,
    /// `atomic_cas(&mut a[i], expected, new)`
    AtomicCas,
    /// `a.len()`: number of elements.
    Len,
    /// `a.shape(d)`
    Shape,
    /// `a.stride(d)`, in elements.
    Stride,
    /// Float and integer methods.
    Math(MathFn),
}

/// Math methods on scalars. Names, arities and which types take them live in one table,
/// `lang::builtins::METHODS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum MathFn {
    Abs,
    Sqrt,
    Floor,
    Ceil,
    Round,
    Trunc,
    Min,
    Max,
    MulAdd,
    Exp,
    Exp2,
    Ln,
    Log2,
    Log10,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Atan2,
    Sinh,
    Cosh,
    Tanh,
    Powf,
    Powi,
    Cbrt,
    Hypot,
    WrappingAdd,
    WrappingSub,
    WrappingMul,
    CountOnes,
    LeadingZeros,
    TrailingZeros,
}

/// Expression kinds.
#[derive(Clone, Debug)]
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
    /// Array element read.
    Index(Box<Expr<T>>, Vec<Expr<T>>),
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
        elem: Scalar,
        /// Number of elements.
        len: u64,
        /// Call site number within the function.
        site: usize,
    },
    /// `dynamic_shared_array::<T>()`: the launch's dynamic shared memory.
    DynSharedArray(Scalar),
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
}

/// Calls `f` on every expression of a block, outer expressions before inner ones.
pub fn visit_block<T>(b: &Block<T>, f: &mut impl FnMut(&Expr<T>)) {
    for s in &b.stmts {
        match s {
            Stmt::Let(_, Some(e)) | Stmt::Expr(e) => visit_expr(e, f),
            Stmt::Let(_, None) => {}
        }
    }
    if let Some(t) = &b.tail {
        visit_expr(t, f);
    }
}

/// Calls `f` on `e` and every expression inside it, outer before inner.
pub fn visit_expr<T>(e: &Expr<T>, f: &mut impl FnMut(&Expr<T>)) {
    f(e);
    let place = |p: &Place<T>, f: &mut dyn FnMut(&Expr<T>)| {
        if let Place::Index(a, i) = p {
            f(a);
            for x in i {
                f(x);
            }
        }
    };
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::PendingLit(_) | ExprKind::Unit | ExprKind::Local(_) | ExprKind::Capture(_) => {}
        ExprKind::SharedArray { .. } | ExprKind::DynSharedArray(_) | ExprKind::Continue(_) => {}
        ExprKind::Unary(_, x) | ExprKind::Cast(x) => visit_expr(x, f),
        ExprKind::Binary(_, a, b) | ExprKind::Logic(_, a, b) => {
            visit_expr(a, f);
            visit_expr(b, f);
        }
        ExprKind::Index(a, i) => {
            visit_expr(a, f);
            i.iter().for_each(|x| visit_expr(x, f));
        }
        ExprKind::Assign(p, v) | ExprKind::CompoundAssign(_, p, v) => {
            place(p, &mut |x| visit_expr(x, f));
            visit_expr(v, f);
        }
        ExprKind::Call(_, a) | ExprKind::Builtin(_, a) => a.iter().for_each(|x| visit_expr(x, f)),
        ExprKind::If(c, t, e2) => {
            visit_expr(c, f);
            visit_block(t, f);
            if let Some(b) = e2 {
                visit_block(b, f);
            }
        }
        ExprKind::Block(b) | ExprKind::Loop(_, b) => visit_block(b, f),
        ExprKind::While(_, c, b) => {
            visit_expr(c, f);
            visit_block(b, f);
        }
        ExprKind::For { start, end, step, body, .. } => {
            visit_expr(start, f);
            visit_expr(end, f);
            if let Some(s) = step {
                visit_expr(s, f);
            }
            visit_block(body, f);
        }
        ExprKind::Break(_, v) | ExprKind::Return(v) => {
            if let Some(v) = v {
                visit_expr(v, f);
            }
        }
    }
}

/// A literal before type inference: its value at every precision it may take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PendingLit {
    /// Integer magnitude (`None` for float literals).
    pub int: Option<u128>,
    /// Written with a leading `-`.
    pub neg: bool,
    /// Value parsed as `f64`.
    pub f64: f64,
    /// Value parsed as `f32`.
    pub f32: f32,
}

/// Writes the canonical encoding of a program's code (not of captured values, which the key
/// hashes by content) into `out`. Spans and local names are not encoded.
pub fn encode_program(p: &Program, out: &mut Vec<u8>) {
    let mut e = Encoder { out };
    e.tag(b'P');
    e.u64(p.kernel as u64);
    e.u64(p.funcs.len() as u64);
    for f in &p.funcs {
        e.func(f);
    }
    e.u64(p.captures.len() as u64);
    for c in &p.captures {
        e.capture_decl(c);
    }
}

struct Encoder<'a> {
    out: &'a mut Vec<u8>,
}

impl Encoder<'_> {
    fn tag(&mut self, t: u8) {
        self.out.push(t);
    }
    fn u64(&mut self, v: u64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    fn bool(&mut self, b: bool) {
        self.out.push(b as u8);
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.out.extend_from_slice(s.as_bytes());
    }
    fn scalar(&mut self, s: Scalar) {
        self.out.push(s.tag());
    }
    fn ty(&mut self, t: Ty) {
        match t {
            Ty::Unit => self.tag(0),
            Ty::Never => self.tag(1),
            Ty::Scalar(s) => {
                self.tag(2);
                self.scalar(s)
            }
            Ty::Array(a) => {
                self.tag(3);
                self.array_ty(a)
            }
        }
    }
    fn array_ty(&mut self, a: ArrayTy) {
        self.scalar(a.elem);
        self.out.push(a.ndim);
        self.bool(a.writable);
    }
    fn value(&mut self, v: ScalarValue) {
        self.scalar(v.ty());
        self.u64(v.bits());
    }
    fn func(&mut self, f: &Func) {
        self.tag(b'F');
        self.str(&f.name);
        match &f.kind {
            FuncKind::Kernel => self.tag(0),
            FuncKind::Device => self.tag(1),
            FuncKind::Closure { factory } => {
                self.tag(2);
                self.str(factory)
            }
            FuncKind::KernelClosure { factory } => {
                self.tag(3);
                self.str(factory)
            }
        }
        self.u64(f.params as u64);
        self.ty(f.ret);
        self.u64(f.locals.len() as u64);
        for l in &f.locals {
            self.ty(l.ty);
        }
        self.block(&f.body);
    }
    fn capture_decl(&mut self, c: &Capture) {
        self.tag(b'C');
        match &c.origin {
            CaptureOrigin::Global(n) => {
                self.tag(0);
                self.str(n)
            }
            CaptureOrigin::FactoryArg { factory, param } => {
                self.tag(1);
                self.str(factory);
                self.str(param)
            }
            CaptureOrigin::Static(n) => {
                self.tag(2);
                self.str(n)
            }
        }
        match c.ty {
            CaptureTy::Scalar(s) => {
                self.tag(0);
                self.scalar(s)
            }
            CaptureTy::Array { ty, device, layout } => {
                self.tag(1);
                self.array_ty(ty);
                self.bool(device);
                self.tag(layout as u8);
            }
        }
        match &c.source {
            // The binding number is only where the value is looked up (it depends on the order
            // the host bound globals in); the origin above names the value.
            CaptureSource::Binding(_) => self.tag(0),
            CaptureSource::Scalar(v) => {
                self.tag(1);
                self.value(*v)
            }
            CaptureSource::Static(a) => {
                self.tag(2);
                self.scalar(a.elem);
                self.u64(a.shape.len() as u64);
                for d in &a.shape {
                    self.u64(*d as u64);
                }
                self.out.extend_from_slice(blake3::hash(&a.bytes).as_bytes());
            }
        }
    }
    fn block(&mut self, b: &Block) {
        self.tag(b'{');
        self.u64(b.stmts.len() as u64);
        for s in &b.stmts {
            match s {
                Stmt::Let(l, init) => {
                    self.tag(b'L');
                    self.u64(*l as u64);
                    match init {
                        Some(e) => {
                            self.tag(1);
                            self.expr(e)
                        }
                        None => self.tag(0),
                    }
                }
                Stmt::Expr(e) => {
                    self.tag(b'E');
                    self.expr(e)
                }
            }
        }
        match &b.tail {
            Some(e) => {
                self.tag(1);
                self.expr(e)
            }
            None => self.tag(0),
        }
    }
    fn opt(&mut self, e: &Option<Box<Expr>>) {
        match e {
            Some(e) => {
                self.tag(1);
                self.expr(e)
            }
            None => self.tag(0),
        }
    }
    fn exprs(&mut self, es: &[Expr]) {
        self.u64(es.len() as u64);
        for e in es {
            self.expr(e);
        }
    }
    fn place(&mut self, p: &Place) {
        match p {
            Place::Local(l) => {
                self.tag(0);
                self.u64(*l as u64)
            }
            Place::Index(a, idx) => {
                self.tag(1);
                self.expr(a);
                self.exprs(idx)
            }
        }
    }
    fn binop(&mut self, op: BinOp) {
        self.tag(op as u8);
    }
    fn expr(&mut self, e: &Expr) {
        self.ty(e.ty);
        match &e.kind {
            ExprKind::Lit(v) => {
                self.tag(1);
                self.value(*v)
            }
            ExprKind::PendingLit(l) => {
                // Not produced by a successful check; encoded anyway so the function is total.
                self.tag(24);
                self.bool(l.neg);
                self.u64(l.f64.to_bits());
            }
            ExprKind::Unit => self.tag(2),
            ExprKind::Local(l) => {
                self.tag(3);
                self.u64(*l as u64)
            }
            ExprKind::Capture(c) => {
                self.tag(4);
                self.u64(*c as u64)
            }
            ExprKind::Unary(op, x) => {
                self.tag(5);
                self.tag(*op as u8);
                self.expr(x)
            }
            ExprKind::Binary(op, a, b) => {
                self.tag(6);
                self.binop(*op);
                self.expr(a);
                self.expr(b)
            }
            ExprKind::Logic(op, a, b) => {
                self.tag(7);
                self.tag(*op as u8);
                self.expr(a);
                self.expr(b)
            }
            ExprKind::Cast(x) => {
                self.tag(8);
                self.expr(x)
            }
            ExprKind::Index(a, idx) => {
                self.tag(9);
                self.expr(a);
                self.exprs(idx)
            }
            ExprKind::Assign(p, v) => {
                self.tag(10);
                self.place(p);
                self.expr(v)
            }
            ExprKind::CompoundAssign(op, p, v) => {
                self.tag(11);
                self.binop(*op);
                self.place(p);
                self.expr(v)
            }
            ExprKind::Call(f, args) => {
                self.tag(12);
                self.u64(*f as u64);
                self.exprs(args)
            }
            ExprKind::Builtin(b, args) => {
                self.tag(13);
                self.builtin(*b);
                self.exprs(args)
            }
            ExprKind::SharedArray { elem, len, site } => {
                self.tag(14);
                self.scalar(*elem);
                self.u64(*len);
                self.u64(*site as u64)
            }
            ExprKind::DynSharedArray(s) => {
                self.tag(15);
                self.scalar(*s)
            }
            ExprKind::If(c, t, f) => {
                self.tag(16);
                self.expr(c);
                self.block(t);
                match f {
                    Some(b) => {
                        self.tag(1);
                        self.block(b)
                    }
                    None => self.tag(0),
                }
            }
            ExprKind::Block(b) => {
                self.tag(17);
                self.block(b)
            }
            ExprKind::While(id, c, b) => {
                self.tag(18);
                self.u64(*id as u64);
                self.expr(c);
                self.block(b)
            }
            ExprKind::Loop(id, b) => {
                self.tag(19);
                self.u64(*id as u64);
                self.block(b)
            }
            ExprKind::For { id, var, start, end, inclusive, step, body } => {
                self.tag(20);
                self.u64(*id as u64);
                self.u64(*var as u64);
                self.expr(start);
                self.expr(end);
                self.bool(*inclusive);
                self.opt(step);
                self.block(body)
            }
            ExprKind::Break(id, v) => {
                self.tag(21);
                self.u64(*id as u64);
                self.opt(v)
            }
            ExprKind::Continue(id) => {
                self.tag(22);
                self.u64(*id as u64)
            }
            ExprKind::Return(v) => {
                self.tag(23);
                self.opt(v)
            }
        }
    }
    fn builtin(&mut self, b: Builtin) {
        let (t, sub) = match b {
            Builtin::ThreadIdx(d) => (0, d),
            Builtin::BlockIdx(d) => (1, d),
            Builtin::BlockDim(d) => (2, d),
            Builtin::GridDim(d) => (3, d),
            Builtin::GlobalId(d) => (4, d),
            Builtin::SyncThreads => (5, 0),
            Builtin::AtomicAdd => (6, 0),
            Builtin::AtomicMax => (7, 0),
            Builtin::AtomicMin => (8, 0),
            Builtin::AtomicCas => (9, 0),
            Builtin::Len => (10, 0),
            Builtin::Shape => (11, 0),
            Builtin::Stride => (12, 0),
            Builtin::Math(m) => (13, m as u8),
        };
        self.tag(t);
        self.tag(sub);
    }
}
