//! The surface syntax of a kernel module, after `syn` has parsed it and `syntax` has kept only
//! the supported subset. Names are still strings; nothing is typed yet.

use std::sync::Arc;

use super::source::SourceFile;
use crate::ir::{BinOp, Bound, LogicOp, Scalar, UnOp};
use crate::span::Span;

/// A parsed kernel module.
#[derive(Debug)]
pub struct SourceModule {
    /// The file it came from.
    pub file: Arc<SourceFile>,
    /// Its items, in source order.
    pub items: Vec<Item>,
}

impl SourceModule {
    /// The function item called `name`.
    pub fn func(&self, name: &str) -> Option<&FnItem> {
        self.items.iter().find_map(|i| match i {
            Item::Fn(f) if f.name.name == name => Some(f),
            _ => None,
        })
    }

    /// Names of the `#[kernel]` functions (generic ones included), in source order.
    pub fn kernel_names(&self) -> Vec<String> {
        self.items
            .iter()
            .filter_map(|i| match i {
                Item::Fn(f) if f.is_kernel => Some(f.name.name.clone()),
                _ => None,
            })
            .collect()
    }

    /// Names of the factories that return `impl Kernel`, in source order.
    pub fn kernel_factory_names(&self) -> Vec<String> {
        self.items
            .iter()
            .filter_map(|i| match i {
                Item::Fn(f) if matches!(f.ret, RetTy::ImplKernel(_)) => Some(f.name.name.clone()),
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
}

/// A `const` or `static` item.
#[derive(Debug)]
pub struct ConstItem {
    /// Its name.
    pub name: Ident,
    /// Written `static` rather than `const`; the checker treats both as constants.
    pub is_static: bool,
    /// Declared type.
    pub ty: TypeExpr,
    /// Initialiser.
    pub value: Expr,
    /// The whole item.
    pub span: Span,
}

/// A function item.
#[derive(Debug)]
pub struct FnItem {
    /// Its name.
    pub name: Ident,
    /// `#[kernel]`
    pub is_kernel: bool,
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
    /// `[T; N]` (only in `static` and `const` items).
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
            TypeExpr::Unit(s) | TypeExpr::Scalar(_, s) => *s,
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
    /// `f(args)` or `f::<G>(args)`.
    Call {
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
    /// `&mut a[i]` (only as the first argument of an atomic).
    RefMut(Box<Expr>),
    /// `[a, b, c]` (only in `static`/`const` initialisers).
    ArrayLit(Vec<Expr>),
    /// `[x; n]` (only in `static`/`const` initialisers).
    ArrayRepeat(Box<Expr>, Box<Expr>),
}
