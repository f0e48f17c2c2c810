//! The surface syntax of a kernel module, after `syn` has parsed it and `syntax` has kept only
//! the supported subset. Names are still strings; nothing is typed yet.

use std::sync::Arc;

use super::source::SourceFile;
use crate::ir::{BinOp, Bound, LogicOp, Scalar, UnOp};
use crate::span::Span;

/// A parsed kernel crate: the root file and the modules its `mod` items declare (inline or in
/// files of their own), with every item of every module.
#[derive(Debug)]
pub struct SourceModule {
    /// The root file.
    pub file: Arc<SourceFile>,
    /// Every file read, the root first (their spans do not overlap).
    pub files: Vec<Arc<SourceFile>>,
    /// Every item of every module, each module's in source order.
    pub items: Vec<Item>,
    /// The modules: `ModId` 0 is the root.
    pub modules: Vec<ModuleDecl>,
    /// What each name means in each module (items, child modules, imports).
    pub scopes: crate::lang::names::Scopes,
}

/// Index of a module in [`SourceModule::modules`]; 0 is the crate root.
pub type ModId = usize;

/// A module of the crate.
#[derive(Clone, Debug)]
pub struct ModuleDecl {
    /// Its name (empty for the root).
    pub name: String,
    /// The enclosing module (`None` for the root).
    pub parent: Option<ModId>,
    /// Declared `pub` (visible outside its parent).
    pub public: bool,
    /// Where it is declared (the `mod` item; the whole root file for the root).
    pub span: Span,
    /// Its `use` declarations.
    pub uses: Vec<UseDecl>,
}

/// One name a `use` declaration brings in: `use a::b::c as d;` is the path `a::b::c` bound to
/// `d`; `use a::b::*;` is the path `a::b` with `glob`.
#[derive(Clone, Debug)]
pub struct UseDecl {
    /// The path, as written.
    pub path: Vec<Ident>,
    /// The name bound (the last segment unless renamed with `as`); unused for globs.
    pub alias: Ident,
    /// `use path::*;`
    pub glob: bool,
    /// `pub use`
    pub public: bool,
}

impl SourceModule {
    /// The module path of `m` (`common::inner`; empty for the root).
    pub fn module_path(&self, m: ModId) -> String {
        let mut parts = Vec::new();
        let mut cur = Some(m);
        while let Some(c) = cur {
            if self.modules[c].parent.is_some() {
                parts.push(self.modules[c].name.as_str());
            }
            cur = self.modules[c].parent;
        }
        parts.reverse();
        parts.join("::")
    }

    /// `name` qualified by the path of module `m` (`common::dot`, or `dot` in the root).
    pub fn qualified(&self, m: ModId, name: &str) -> String {
        let p = self.module_path(m);
        if p.is_empty() { name.to_string() } else { format!("{p}::{name}") }
    }

    /// The function item a kernel is looked up by: `name` in the root, `common::name` in a
    /// module (never an associated function).
    pub fn func(&self, path: &str) -> Option<&FnItem> {
        self.items.iter().find_map(|i| match i {
            Item::Fn(f) if f.owner.is_none() && self.qualified(f.module, &f.name.name) == path => Some(f),
            _ => None,
        })
    }

    /// Names of the `#[kernel]` functions (generic ones included; qualified outside the root), in
    /// source order.
    pub fn kernel_names(&self) -> Vec<String> {
        self.items
            .iter()
            .filter_map(|i| match i {
                Item::Fn(f) if f.is_kernel => Some(self.qualified(f.module, &f.name.name)),
                _ => None,
            })
            .collect()
    }

    /// Names of the factories that return `impl Kernel` (qualified outside the root), in source
    /// order.
    pub fn kernel_factory_names(&self) -> Vec<String> {
        self.items
            .iter()
            .filter_map(|i| match i {
                Item::Fn(f) if matches!(f.ret, RetTy::ImplKernel(_)) => Some(self.qualified(f.module, &f.name.name)),
                _ => None,
            })
            .collect()
    }
}

/// A name with its span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where.
    pub span: Span,
}

/// A module item.
#[derive(Debug)]
pub enum Item {
    /// `fn`, `#[kernel] fn` or a factory.
    Fn(FnItem),
    /// `const NAME: T = expr;` or `static NAME: T = expr;` (both are constants).
    Const(ConstItem),
    /// A C-like `enum`.
    Enum(EnumItem),
    /// A plain-data `struct`.
    Struct(StructItem),
}

impl Item {
    /// The item's name.
    pub fn name(&self) -> &Ident {
        match self {
            Item::Fn(f) => &f.name,
            Item::Const(c) => &c.name,
            Item::Enum(e) => &e.name,
            Item::Struct(s) => &s.name,
        }
    }

    /// The `impl` block an associated function or constant belongs to (`None` for a module's
    /// own items).
    pub fn owner(&self) -> Option<&ImplOwner> {
        match self {
            Item::Fn(f) => f.owner.as_ref(),
            Item::Const(c) => c.owner.as_ref(),
            Item::Enum(_) | Item::Struct(_) => None,
        }
    }

    /// A type (an enum or a struct): its name is in the type namespace.
    pub fn is_type(&self) -> bool {
        matches!(self, Item::Enum(_) | Item::Struct(_))
    }

    /// The module it is declared in.
    pub fn module(&self) -> ModId {
        match self {
            Item::Fn(f) => f.module,
            Item::Const(c) => c.module,
            Item::Enum(e) => e.module,
            Item::Struct(s) => s.module,
        }
    }

    /// Declared `pub` (any `pub(..)` too).
    pub fn is_pub(&self) -> bool {
        match self {
            Item::Fn(f) => f.public,
            Item::Const(c) => c.public,
            Item::Enum(e) => e.public,
            Item::Struct(s) => s.public,
        }
    }
}

/// A plain-data `struct` with named fields.
#[derive(Debug)]
pub struct StructItem {
    /// Its name.
    pub name: Ident,
    /// The module it is declared in.
    pub module: ModId,
    /// `pub`
    pub public: bool,
    /// The traits of its `#[derive(..)]` attributes.
    pub derives: Vec<String>,
    /// The fields, in declaration order.
    pub fields: Vec<FieldDecl>,
    /// The whole item.
    pub span: Span,
}

/// A field of a struct.
#[derive(Debug)]
pub struct FieldDecl {
    /// Its name.
    pub name: Ident,
    /// Its type.
    pub ty: TypeExpr,
}

/// The `impl` block an associated item belongs to: the type it names (`impl Particle`,
/// `impl common::Mode`), resolved by the checker in the block's module.
#[derive(Clone, Debug, PartialEq)]
pub struct ImplOwner {
    /// The self type's path, as written.
    pub self_ty: Vec<Ident>,
    /// Where the self type is written.
    pub span: Span,
}

/// How a method takes `self`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelfKind {
    /// `self` (or `mut self`): by value.
    Value,
    /// `&self`: read-only; passed as a value (nothing can change it during the call).
    Ref,
    /// `&mut self`: the caller's place, written through.
    RefMut,
}

/// A C-like `enum`: variants without fields, each with an integer discriminant.
#[derive(Debug)]
pub struct EnumItem {
    /// Its name.
    pub name: Ident,
    /// The module it is declared in.
    pub module: ModId,
    /// `pub`
    pub public: bool,
    /// `#[repr(u8)]` and friends (`None`: `#[repr(C)]` or no `repr`, whose discriminants are
    /// `i32`s as C's `int`).
    pub repr: Option<Scalar>,
    /// The traits of its `#[derive(..)]` attributes.
    pub derives: Vec<String>,
    /// The variants, in order.
    pub variants: Vec<VariantDecl>,
    /// The whole item.
    pub span: Span,
}

/// A variant of a C-like enum.
#[derive(Debug)]
pub struct VariantDecl {
    /// Its name.
    pub name: Ident,
    /// `= expr`: an explicit discriminant (else the previous one plus one, from 0).
    pub discriminant: Option<Expr>,
}

/// A `const` or `static` item.
#[derive(Debug)]
pub struct ConstItem {
    /// Its name.
    pub name: Ident,
    /// The module it is declared in.
    pub module: ModId,
    /// `pub`
    pub public: bool,
    /// Written `static` rather than `const`; the checker treats both as constants.
    pub is_static: bool,
    /// An associated constant: the `impl` block it is declared in.
    pub owner: Option<ImplOwner>,
    /// Declared type.
    pub ty: TypeExpr,
    /// Initialiser.
    pub value: Expr,
    /// The whole item.
    pub span: Span,
}

/// Options given to `#[kernel(..)]`; each overrides the compile's setting for that kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelOptions {
    /// `fmad = true|false`: contract `a * b + c` into a fused multiply-add.
    pub fmad: Option<bool>,
    /// `max_threads = N`: no launch has more than N threads per block (CUDA's
    /// `__launch_bounds__`), so the code may use the registers that leaves.
    pub max_threads: Option<u32>,
    /// `min_blocks = M` (with `max_threads`): fit M blocks of `max_threads` threads on one
    /// multiprocessor at once.
    pub min_blocks: Option<u32>,
}

/// A function item.
#[derive(Debug)]
pub struct FnItem {
    /// Its name.
    pub name: Ident,
    /// The module it is declared in.
    pub module: ModId,
    /// `pub`
    pub public: bool,
    /// `#[kernel]`
    pub is_kernel: bool,
    /// The options of `#[kernel(..)]`.
    pub options: KernelOptions,
    /// Parameters.
    pub params: Vec<Param>,
    /// Return type.
    pub ret: RetTy,
    /// Body.
    pub body: Block,
    /// The signature, for messages.
    pub sig_span: Span,
    /// Generic parameters (`<T: Float, const N: usize>`, with the `where` clause's bounds
    /// merged in), in order; empty for a function that is not generic.
    pub generics: Vec<GenericParamDef>,
    /// An associated function or method: the `impl` block it is declared in.
    pub owner: Option<ImplOwner>,
    /// A method: how it takes `self`, which is then its first parameter (named `self`, of type
    /// `Self`).
    pub receiver: Option<SelfKind>,
    /// `#[tune(..)]` of a kernel: its tuning space.
    pub tune: Option<crate::ir::TuneSpace>,
}

impl FnItem {
    /// Whether the function has generic parameters.
    pub fn is_generic(&self) -> bool {
        !self.generics.is_empty()
    }
}

/// A generic parameter of a function.
#[derive(Clone, Debug, PartialEq)]
pub struct GenericParamDef {
    /// Its name.
    pub name: Ident,
    /// A type or a constant.
    pub kind: GenericParamKind,
    /// The whole parameter (with its bounds).
    pub span: Span,
}

/// What a generic parameter stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum GenericParamKind {
    /// A type parameter with its bound (`T: Float`).
    Type(Bound),
    /// A const parameter of a scalar type (`const N: usize`).
    Const(Scalar),
}

/// A parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Its name.
    pub name: Ident,
    /// `mut x: T`
    pub mutable: bool,
    /// Its type (`None` only for closure parameters left to inference).
    pub ty: Option<TypeExpr>,
    /// The whole parameter.
    pub span: Span,
}

/// A function's return type.
#[derive(Clone, Debug)]
pub enum RetTy {
    /// None written.
    Unit,
    /// `-> T`
    Ty(TypeExpr),
    /// `-> impl Kernel`: a factory returning a kernel closure.
    ImplKernel(Span),
    /// `-> impl Fn(A, B) -> R`: a factory returning a device closure.
    ImplFn {
        /// Parameter types.
        params: Vec<TypeExpr>,
        /// Return type (`None`: unit).
        ret: Option<TypeExpr>,
        /// The whole type.
        span: Span,
    },
}

/// A type as written.
#[derive(Clone, Debug, PartialEq)]
pub enum TypeExpr {
    /// `()`
    Unit(Span),
    /// A scalar.
    Scalar(Scalar, Span),
    /// A type parameter of the enclosing generic function (`T`).
    Param(Ident),
    /// `&[T]`, `&mut [T]`, `&Array<T, N>`, `&mut Array<T, N>`.
    ArrayRef {
        /// Element type: a scalar or a type parameter.
        elem: Box<TypeExpr>,
        /// Dimensions.
        ndim: u8,
        /// `&mut`
        mutable: bool,
        /// Where.
        span: Span,
    },
    /// A named type: an enum or a struct of the kernel's modules (`Mode`, `common::Mode`),
    /// or `Self` in an `impl` block.
    Named(Vec<Ident>, Span),
    /// `(A, B, ..)`: a tuple of at least one element.
    Tuple(Vec<TypeExpr>, Span),
    /// A builtin generic type with its arguments: a tensor-core fragment
    /// (`FragA<bf16, 16, 8, 16>`, `lang::builtins::TYPES`).
    Builtin {
        /// Its name.
        name: Ident,
        /// Its generic arguments, as written.
        args: Vec<GenericArg>,
        /// Where.
        span: Span,
    },
    /// `[T; N]`: a fixed-size array (a `static` or `const` item is a read-only array in
    /// memory; anywhere else, a value).
    Fixed {
        /// Element type (may itself be fixed-size).
        elem: Box<TypeExpr>,
        /// Length: a constant expression (a literal, a `const` item, `{ N * 2 }`), evaluated
        /// as a `usize` by the checker.
        len: Box<Expr>,
        /// Where.
        span: Span,
    },
}

impl TypeExpr {
    /// Where.
    pub fn span(&self) -> Span {
        match self {
            TypeExpr::Unit(s)
            | TypeExpr::Scalar(_, s)
            | TypeExpr::Named(_, s)
            | TypeExpr::Tuple(_, s)
            | TypeExpr::Builtin { span: s, .. } => *s,
            TypeExpr::Param(i) => i.span,
            TypeExpr::ArrayRef { span, .. } | TypeExpr::Fixed { span, .. } => *span,
        }
    }
}

/// A block.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Statements.
    pub stmts: Vec<Stmt>,
    /// Tail expression (no semicolon).
    pub tail: Option<Box<Expr>>,
    /// Where.
    pub span: Span,
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `let [mut] name[: T] [= init];`
    Let {
        /// Bound name (`_` allowed).
        name: Ident,
        /// `mut`
        mutable: bool,
        /// Annotation.
        ty: Option<TypeExpr>,
        /// Initialiser.
        init: Option<Expr>,
        /// The whole statement.
        span: Span,
    },
    /// An expression statement (`has_semi`: followed by `;`).
    Expr(Expr, bool),
    /// `let pattern[: T] = init;` with a tuple or struct pattern that takes the value apart.
    LetPat {
        /// The pattern.
        pat: LetPat,
        /// Annotation.
        ty: Option<TypeExpr>,
        /// Initialiser.
        init: Expr,
        /// The whole statement.
        span: Span,
    },
}

/// A pattern of a destructuring `let`.
#[derive(Clone, Debug, PartialEq)]
pub enum LetPat {
    /// A binding (`x`, `mut x`).
    Bind {
        /// The name.
        name: Ident,
        /// `mut`
        mutable: bool,
    },
    /// `_`
    Wild(Span),
    /// `(a, b, ..)`; `rest` is the position of `..`, which stands for the elements not named.
    Tuple {
        /// The element patterns.
        elems: Vec<LetPat>,
        /// Where `..` is among them.
        rest: Option<usize>,
        /// Where.
        span: Span,
    },
    /// `Path { field: pat, field, .. }`
    Struct {
        /// The struct's path (`Particle`, `Self`).
        path: Vec<Ident>,
        /// Each named field and its pattern (`field` alone binds `field`).
        fields: Vec<(Ident, LetPat)>,
        /// Written with `..`.
        rest: bool,
        /// Where.
        span: Span,
    },
}

impl LetPat {
    /// Where.
    pub fn span(&self) -> Span {
        match self {
            LetPat::Bind { name, .. } => name.span,
            LetPat::Wild(s) | LetPat::Tuple { span: s, .. } | LetPat::Struct { span: s, .. } => *s,
        }
    }
}

/// A literal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lit {
    /// An integer with an optional suffix type.
    Int(u128, Option<Scalar>),
    /// A float with an optional suffix type, parsed at every precision (each rounded once).
    Float {
        /// The value as `f64`.
        f64: f64,
        /// The value as `f32`.
        f32: f32,
        /// The value as `f16`.
        f16: half::f16,
        /// The value as `bf16`.
        bf16: half::bf16,
        /// Suffix type.
        suffix: Option<Scalar>,
    },
    /// `true`/`false`
    Bool(bool),
}

/// A generic argument of a builtin (`shared_array::<f32, 256>`).
#[derive(Clone, Debug, PartialEq)]
pub enum GenericArg {
    /// A type.
    Type(TypeExpr),
    /// A constant expression.
    Const(Expr),
    /// `_`: inferred.
    Infer(Span),
}

impl GenericArg {
    /// Where.
    pub fn span(&self) -> Span {
        match self {
            GenericArg::Type(t) => t.span(),
            GenericArg::Const(e) => e.span,
            GenericArg::Infer(s) => *s,
        }
    }
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where.
    pub span: Span,
}

/// Expression kinds of the surface syntax.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A literal.
    Lit(Lit),
    /// A name.
    Path(Ident),
    /// An associated constant of a type parameter: `T::ZERO`, `T::MAX`.
    ParamConst {
        /// The type parameter.
        param: Ident,
        /// The constant's name.
        name: Ident,
    },
    /// A path of two or more segments: `Mode::Add`, `common::SCALE`, `crate::common::dot`
    /// (associated constants such as `f32::MAX` are literals already).
    QPath(Vec<Ident>),
    /// `match scrutinee { arms }`
    Match(Box<Expr>, Vec<Arm>),
    /// `()`
    Unit,
    /// `-x`, `!x`
    Unary(UnOp, Box<Expr>),
    /// `a op b`
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `a && b`, `a || b`
    Logic(LogicOp, Box<Expr>, Box<Expr>),
    /// `a = b`
    Assign(Box<Expr>, Box<Expr>),
    /// `a op= b`
    CompoundAssign(BinOp, Box<Expr>, Box<Expr>),
    /// `x as T`
    Cast(Box<Expr>, TypeExpr),
    /// `a[i]` (`multi` false) or `a[[i, j]]` (`multi` true).
    Index {
        /// The array.
        array: Box<Expr>,
        /// Indices.
        indices: Vec<Expr>,
        /// Written with the `[[..]]` form.
        multi: bool,
    },
    /// `f(args)`, `f::<G>(args)` or `path::to::f(args)`.
    Call {
        /// The module path before the function's name (`common` in `common::dot(..)`; empty
        /// for a plain name).
        qualifier: Vec<Ident>,
        /// The function's name.
        func: Ident,
        /// Turbofish arguments.
        generics: Vec<GenericArg>,
        /// Arguments.
        args: Vec<Expr>,
    },
    /// `x.m(args)`
    MethodCall {
        /// Receiver.
        receiver: Box<Expr>,
        /// Method.
        method: Ident,
        /// Arguments.
        args: Vec<Expr>,
    },
    /// `if c { } else ..`
    If(Box<Expr>, Block, Option<Box<Expr>>),
    /// `while c { }`
    While(Option<Ident>, Box<Expr>, Block),
    /// `loop { }`
    Loop(Option<Ident>, Block),
    /// `for v in range { }`
    For {
        /// Label.
        label: Option<Ident>,
        /// Loop variable.
        var: Ident,
        /// First value.
        start: Box<Expr>,
        /// Bound.
        end: Box<Expr>,
        /// `..=`
        inclusive: bool,
        /// `.step_by(s)`
        step: Option<Box<Expr>>,
        /// Body.
        body: Block,
    },
    /// `break ['label] [value]`
    Break(Option<Ident>, Option<Box<Expr>>),
    /// `continue ['label]`
    Continue(Option<Ident>),
    /// `return [value]`
    Return(Option<Box<Expr>>),
    /// `{ }`
    Block(Block),
    /// `[move] |params| body`
    Closure {
        /// Parameters.
        params: Vec<Param>,
        /// Declared return type.
        ret: Option<TypeExpr>,
        /// Body.
        body: Box<Expr>,
    },
    /// `&a[i]` (only as the first argument of `atomic_load`).
    Ref(Box<Expr>),
    /// `&mut a[i]` (only as the first argument of an atomic).
    RefMut(Box<Expr>),
    /// `[a, b, c]`
    ArrayLit(Vec<Expr>),
    /// `[x; n]`
    ArrayRepeat(Box<Expr>, Box<Expr>),
    /// `(a, b, ..)`: a tuple of at least one element.
    Tuple(Vec<Expr>),
    /// `x.name` or `x.0`.
    Field(Box<Expr>, Member),
    /// `Path { field: value, field, ..base }` (`field` alone is `field: field`).
    StructLit {
        /// The struct's path (`Particle`, `common::Particle`, `Self`).
        path: Vec<Ident>,
        /// Each field and its value, in source order.
        fields: Vec<(Ident, Expr)>,
        /// `..base`
        base: Option<Box<Expr>>,
    },
    /// `for var in array { }`: each element of a fixed-size array, in order.
    ForEach {
        /// Label.
        label: Option<Ident>,
        /// The loop's pattern.
        var: LetPat,
        /// The array.
        array: Box<Expr>,
        /// Body.
        body: Block,
    },
}

/// What a field access names: a struct's field or a tuple's element.
#[derive(Clone, Debug, PartialEq)]
pub enum Member {
    /// `x.name`
    Named(Ident),
    /// `x.0`
    Index(u32, Span),
}

impl Member {
    /// Where.
    pub fn span(&self) -> Span {
        match self {
            Member::Named(i) => i.span,
            Member::Index(_, s) => *s,
        }
    }
}

/// An arm of a `match`.
#[derive(Clone, Debug, PartialEq)]
pub struct Arm {
    /// The pattern (alternatives of `|` are [`Pat::Or`]).
    pub pat: Pat,
    /// `if guard`
    pub guard: Option<Expr>,
    /// `=> body`
    pub body: Expr,
    /// The whole arm.
    pub span: Span,
}

/// A pattern of a `match` arm.
#[derive(Clone, Debug, PartialEq)]
pub enum Pat {
    /// `_`
    Wild(Span),
    /// A name: a binding of the value, unless it names a constant or a unit variant in scope.
    /// `name @ pattern` binds and tests `sub`.
    Bind {
        /// The name.
        name: Ident,
        /// `mut name`
        mutable: bool,
        /// `name @ sub`
        sub: Option<Box<Pat>>,
    },
    /// A literal, a constant or a variant: a constant expression (`3`, `-1`, `true`,
    /// `Mode::Add`, `LIMIT`, `i32::MIN`).
    Const(Expr),
    /// `lo..=hi`, `lo..hi`, `lo..`, `..=hi`: bounds are constant expressions.
    Range {
        /// Lower bound (`None`: the type's minimum).
        lo: Option<Box<Expr>>,
        /// Upper bound (`None`: the type's maximum).
        hi: Option<Box<Expr>>,
        /// `..=`
        inclusive: bool,
        /// Where.
        span: Span,
    },
    /// `a | b | c`
    Or(Vec<Pat>, Span),
}

impl Pat {
    /// Where.
    pub fn span(&self) -> Span {
        match self {
            Pat::Wild(s) | Pat::Range { span: s, .. } | Pat::Or(_, s) => *s,
            Pat::Bind { name, sub, .. } => match sub {
                Some(p) => name.span.to(p.span()),
                None => name.span,
            },
            Pat::Const(e) => e.span,
        }
    }
}
