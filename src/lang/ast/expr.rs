//! The surface syntax of statements, expressions and patterns (the items that hold them are in
//! the parent module).

use super::{Ident, Param, TypeExpr};
use crate::ir::{BinOp, LogicOp, Scalar, UnOp};
use crate::span::Span;

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

/// The hidden function a range that is an iterator chain's source is written as:
/// `#range(start, end, inclusive)` (`check/chains.rs` reads it).
pub const RANGE_SOURCE: &str = "#range";

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
    /// `let PATTERN = init else { .. };`: the pattern may fail, the `else` block diverges.
    LetElse {
        /// The pattern.
        pat: Pat,
        /// Annotation.
        ty: Option<TypeExpr>,
        /// Initialiser.
        init: Expr,
        /// What runs when the pattern does not match (it must diverge).
        els: Block,
        /// The whole statement.
        span: Span,
    },
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
    /// `Path(a, b, ..)`: a tuple struct taken apart.
    TupleStruct {
        /// The struct's path.
        path: Vec<Ident>,
        /// The element patterns.
        elems: Vec<LetPat>,
        /// Where `..` is among them.
        rest: Option<usize>,
        /// Where.
        span: Span,
    },
}

impl LetPat {
    /// Where.
    pub fn span(&self) -> Span {
        match self {
            LetPat::Bind { name, .. } => name.span,
            LetPat::Wild(s) | LetPat::Tuple { span: s, .. } | LetPat::Struct { span: s, .. } | LetPat::TupleStruct { span: s, .. } => *s,
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
    /// An associated item of a type written with generic arguments or as a qualified path:
    /// `Tile::<4>::LEN`, `<T as Dim>::N`, `<f32>::MAX`.
    AssocPath {
        /// The type.
        ty: Box<TypeExpr>,
        /// The trait named with `as`.
        trait_: Option<Vec<Ident>>,
        /// The item's name.
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
        /// Generic arguments written on the qualifier's last segment (`Vec2::<f32>::new`).
        qual_args: Vec<GenericArg>,
        /// `<T as Trait>::f(..)` and `<T>::f(..)`: the self type (the qualifier is then the
        /// trait's path, or empty).
        qself: Option<Box<TypeExpr>>,
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
        /// Turbofish arguments (`x.into::<f32>()`).
        generics: Vec<GenericArg>,
        /// Arguments.
        args: Vec<Expr>,
    },
    /// `if let PATTERN = value { } else ..`
    IfLet {
        /// The pattern.
        pat: Box<Pat>,
        /// The value matched.
        value: Box<Expr>,
        /// Where the pattern matches.
        then: Block,
        /// Where it does not.
        els: Option<Box<Expr>>,
    },
    /// `while let PATTERN = value { }`
    WhileLet {
        /// Label.
        label: Option<Ident>,
        /// The pattern.
        pat: Box<Pat>,
        /// The value matched, evaluated before each iteration.
        value: Box<Expr>,
        /// Body.
        body: Block,
    },
    /// `*x`: the value a reference refers to.
    Deref(Box<Expr>),
    /// `x?`: the value of `Some(v)`, or `return None`.
    Try(Box<Expr>),
    /// A string literal (only as the message of `expect`).
    Str(String),
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
        /// Written `move`.
        is_move: bool,
        /// Parameters.
        params: Vec<Param>,
        /// Declared return type.
        ret: Option<TypeExpr>,
        /// Body.
        body: Box<Expr>,
    },
    /// `&x`: the first argument of `atomic_load`, or a value passed as a `&T`.
    Ref(Box<Expr>),
    /// `&mut x`: the first argument of an atomic, or a place passed as a `&mut T`.
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
    /// `Some(x)`, `Shape::Circle(r)`, `Meters(m)`: a tuple variant or tuple struct.
    TupleStruct {
        /// The variant's or struct's path.
        path: Vec<Ident>,
        /// The element patterns.
        elems: Vec<Pat>,
        /// Where `..` is among them.
        rest: Option<usize>,
        /// Where.
        span: Span,
    },
    /// `Shape::Rect { w, h: 2, .. }`: a struct variant or struct.
    Struct {
        /// The variant's or struct's path.
        path: Vec<Ident>,
        /// Each named field and its pattern.
        fields: Vec<(Ident, Pat)>,
        /// Written with `..`.
        rest: bool,
        /// Where.
        span: Span,
    },
    /// `(a, b, ..)`
    Tuple {
        /// The element patterns.
        elems: Vec<Pat>,
        /// Where `..` is among them.
        rest: Option<usize>,
        /// Where.
        span: Span,
    },
    /// `&pat`: matches what a reference refers to (references are values in kernels).
    Ref(Box<Pat>, Span),
}

impl Pat {
    /// Where.
    pub fn span(&self) -> Span {
        match self {
            Pat::Wild(s)
            | Pat::Range { span: s, .. }
            | Pat::Or(_, s)
            | Pat::TupleStruct { span: s, .. }
            | Pat::Struct { span: s, .. }
            | Pat::Tuple { span: s, .. }
            | Pat::Ref(_, s) => *s,
            Pat::Bind { name, sub, .. } => match sub {
                Some(p) => name.span.to(p.span()),
                None => name.span,
            },
            Pat::Const(e) => e.span,
        }
    }
}

impl Block {
    /// Whether `f` holds for an expression of the block (its statements' and its tail's, and
    /// any inside them).
    pub fn any(&self, f: &mut dyn FnMut(&Expr) -> bool) -> bool {
        self.stmts.iter().any(|s| match s {
            Stmt::Let { init, .. } => init.as_ref().is_some_and(|e| e.any(f)),
            Stmt::Expr(e, _) => e.any(f),
            Stmt::LetElse { init, els, .. } => init.any(f) || els.any(f),
            Stmt::LetPat { init, .. } => init.any(f),
        }) || self.tail.as_ref().is_some_and(|t| t.any(f))
    }
}

impl Expr {
    /// Whether `f` holds for this expression or any expression inside it (patterns aside).
    pub fn any(&self, f: &mut dyn FnMut(&Expr) -> bool) -> bool {
        if f(self) {
            return true;
        }
        use ExprKind as K;
        match &self.kind {
            K::Lit(_) | K::Path(_) | K::ParamConst { .. } | K::AssocPath { .. } | K::QPath(_) | K::Unit | K::Str(_) | K::Continue(_) => {
                false
            }
            K::Match(s, arms) => s.any(f) || arms.iter().any(|a| a.guard.as_ref().is_some_and(|g| g.any(f)) || a.body.any(f)),
            K::Unary(_, x) | K::Cast(x, _) | K::Deref(x) | K::Try(x) | K::Ref(x) | K::RefMut(x) | K::Field(x, _) => x.any(f),
            K::Binary(_, a, b) | K::Logic(_, a, b) | K::Assign(a, b) | K::CompoundAssign(_, a, b) | K::ArrayRepeat(a, b) => {
                a.any(f) || b.any(f)
            }
            K::Index { array, indices, .. } => array.any(f) || indices.iter().any(|i| i.any(f)),
            K::Call { args, .. } | K::ArrayLit(args) | K::Tuple(args) => args.iter().any(|a| a.any(f)),
            K::MethodCall { receiver, args, .. } => receiver.any(f) || args.iter().any(|a| a.any(f)),
            K::IfLet { value, then, els, .. } => value.any(f) || then.any(f) || els.as_ref().is_some_and(|e| e.any(f)),
            K::WhileLet { value, body, .. } => value.any(f) || body.any(f),
            K::If(c, then, els) => c.any(f) || then.any(f) || els.as_ref().is_some_and(|e| e.any(f)),
            K::While(_, c, b) => c.any(f) || b.any(f),
            K::Loop(_, b) | K::Block(b) => b.any(f),
            K::For { start, end, step, body, .. } => start.any(f) || end.any(f) || step.as_ref().is_some_and(|s| s.any(f)) || body.any(f),
            K::Break(_, x) | K::Return(x) => x.as_ref().is_some_and(|x| x.any(f)),
            K::Closure { body, .. } => body.any(f),
            K::StructLit { fields, base, .. } => fields.iter().any(|(_, e)| e.any(f)) || base.as_ref().is_some_and(|b| b.any(f)),
            K::ForEach { array, body, .. } => array.any(f) || body.any(f),
        }
    }
}
