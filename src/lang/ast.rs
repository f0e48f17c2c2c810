//! The surface syntax of a kernel module, after `syn` has parsed it and `syntax` has kept only
//! the supported subset. Names are still strings; nothing is typed yet.

use std::sync::Arc;

use super::source::SourceFile;
use crate::ir::{Bound, Scalar};
use crate::span::Span;

mod expr;
pub use expr::*;

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
    /// Every `impl` block (inherent and trait), in source order: their associated functions and
    /// constants are items whose [`ImplOwner`] names the block.
    pub impls: Vec<ImplDecl>,
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
    /// A `trait` declaration (its methods and constants are items owned by it).
    Trait(TraitItem),
}

impl Item {
    /// The item's name.
    pub fn name(&self) -> &Ident {
        match self {
            Item::Fn(f) => &f.name,
            Item::Const(c) => &c.name,
            Item::Enum(e) => &e.name,
            Item::Struct(s) => &s.name,
            Item::Trait(t) => &t.name,
        }
    }

    /// The `impl` block an associated function or constant belongs to (`None` for a module's
    /// own items).
    pub fn owner(&self) -> Option<&ImplOwner> {
        match self {
            Item::Fn(f) => f.owner.as_ref(),
            Item::Const(c) => c.owner.as_ref(),
            Item::Enum(_) | Item::Struct(_) | Item::Trait(_) => None,
        }
    }

    /// A type (an enum or a struct): its name is in the type namespace.
    pub fn is_type(&self) -> bool {
        matches!(self, Item::Enum(_) | Item::Struct(_))
    }

    /// A name in the type namespace: a type or a trait.
    pub fn in_type_namespace(&self) -> bool {
        matches!(self, Item::Enum(_) | Item::Struct(_) | Item::Trait(_))
    }

    /// A name in the value namespace too: a tuple or unit struct names its constructor (as in
    /// Rust), besides functions and constants.
    pub fn in_value_namespace(&self) -> bool {
        match self {
            Item::Fn(_) | Item::Const(_) => true,
            Item::Struct(s) => s.kind != StructKind::Named,
            Item::Enum(_) | Item::Trait(_) => false,
        }
    }

    /// The module it is declared in.
    pub fn module(&self) -> ModId {
        match self {
            Item::Fn(f) => f.module,
            Item::Const(c) => c.module,
            Item::Enum(e) => e.module,
            Item::Struct(s) => s.module,
            Item::Trait(t) => t.module,
        }
    }

    /// Declared `pub` (any `pub(..)` too).
    pub fn is_pub(&self) -> bool {
        match self {
            Item::Fn(f) => f.public,
            Item::Const(c) => c.public,
            Item::Enum(e) => e.public,
            Item::Struct(s) => s.public,
            Item::Trait(t) => t.public,
        }
    }
}

/// How a struct is written: with named fields, as a tuple struct (`struct M(f32);`, its
/// fields named `0`, `1`, ..), or as a unit struct (`struct Relu;`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StructKind {
    /// `struct S { a: f32 }`
    Named,
    /// `struct S(f32, u32);`
    Tuple,
    /// `struct S;`
    Unit,
}

/// A bound on a type as written: a trait path with its generic arguments (`Add<f32>`),
/// associated type constraints (`Add<Output = T>`) or the parenthesised form of the closure
/// traits (`Fn(f32) -> f32`).
#[derive(Clone, Debug, PartialEq)]
pub struct TraitBound {
    /// The trait's path (`Add`, `std::ops::Add`, `shapes::Shape`).
    pub path: Vec<Ident>,
    /// Its generic arguments.
    pub args: Vec<GenericArg>,
    /// `Name = Type` constraints on its associated types.
    pub assoc: Vec<(Ident, TypeExpr)>,
    /// `Fn(A, B) -> R`: the parameter types and the result (`None`: `()`).
    pub fn_sugar: Option<(Vec<TypeExpr>, Option<Box<TypeExpr>>)>,
    /// Where.
    pub span: Span,
}

impl TraitBound {
    /// The path as written (`std::ops::Add`).
    pub fn path_text(&self) -> String {
        self.path.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::")
    }

    /// The trait's own name: the path's last segment.
    pub fn name(&self) -> &str {
        self.path.last().map(|i| i.name.as_str()).unwrap_or("")
    }
}

/// A `where` predicate on a type that is not a plain type parameter (`T::Output: Copy`,
/// `Vec2<T>: Add`).
#[derive(Clone, Debug, PartialEq)]
pub struct WherePred {
    /// The bounded type.
    pub ty: TypeExpr,
    /// Its bounds.
    pub bounds: Vec<TraitBound>,
    /// Where.
    pub span: Span,
}

/// An associated type declared by a trait (`type Output;`).
#[derive(Clone, Debug, PartialEq)]
pub struct AssocTypeDecl {
    /// Its name.
    pub name: Ident,
    /// Its bounds (`type Output: Copy;`).
    pub bounds: Vec<TraitBound>,
}

/// A `trait` declaration: its generic parameters, supertraits and associated types. Its
/// methods and constants are items of the module whose owner is the trait.
#[derive(Debug)]
pub struct TraitItem {
    /// Its name.
    pub name: Ident,
    /// The module it is declared in.
    pub module: ModId,
    /// `pub`
    pub public: bool,
    /// Generic parameters (`trait Scale<Rhs>`).
    pub generics: Vec<GenericParamDef>,
    /// Supertraits (`trait Shape: Copy + Default`).
    pub supertraits: Vec<TraitBound>,
    /// Associated types.
    pub assoc_types: Vec<AssocTypeDecl>,
    /// The whole item's name span.
    pub span: Span,
}

/// An `impl` block: inherent (`impl Particle`) or of a trait (`impl Add for Vec2<T>`).
#[derive(Clone, Debug)]
pub struct ImplDecl {
    /// The module it is declared in.
    pub module: ModId,
    /// Its generic parameters (`impl<T: Float>`).
    pub generics: Vec<GenericParamDef>,
    /// The type it is for.
    pub self_ty: TypeExpr,
    /// The trait it implements, if any.
    pub trait_: Option<TraitBound>,
    /// `type Output = ..;` definitions.
    pub assoc_types: Vec<(Ident, TypeExpr)>,
    /// `where` predicates on types other than its parameters.
    pub where_preds: Vec<WherePred>,
    /// The items it defines, by index into [`SourceModule::items`].
    pub items: Vec<usize>,
    /// The `impl .. for ..` header, for messages.
    pub span: Span,
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
    /// Named, tuple or unit struct.
    pub kind: StructKind,
    /// Generic parameters (`struct Vec2<T>`, `struct Tile<const N: usize>`).
    pub generics: Vec<GenericParamDef>,
    /// The fields, in declaration order (a tuple struct's are named `0`, `1`, ..).
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

/// What an associated item belongs to: an `impl` block ([`SourceModule::impls`]) or a trait
/// (an item).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerKind {
    /// `impl` block number `.0`.
    Impl(usize),
    /// The trait item `.0` (a required or provided method, an associated constant).
    Trait(usize),
}

/// The `impl` block or trait an associated item belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct ImplOwner {
    /// Which.
    pub kind: OwnerKind,
    /// Where the self type (or the trait's name) is written.
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
    /// Generic parameters (`enum Either<A, B>`).
    pub generics: Vec<GenericParamDef>,
    /// The variants, in order.
    pub variants: Vec<VariantDecl>,
    /// The whole item.
    pub span: Span,
}

impl EnumItem {
    /// A C-like enum: no variant has fields and the enum is not generic (its values are its
    /// discriminants).
    pub fn is_c_like(&self) -> bool {
        self.generics.is_empty() && self.variants.iter().all(|v| matches!(v.fields, VariantFields::Unit))
    }
}

/// The fields of an enum variant.
#[derive(Debug)]
pub enum VariantFields {
    /// `A`
    Unit,
    /// `A(f32, u32)`
    Tuple(Vec<TypeExpr>),
    /// `A { x: f32 }`
    Named(Vec<FieldDecl>),
}

/// A variant of an enum.
#[derive(Debug)]
pub struct VariantDecl {
    /// Its name.
    pub name: Ident,
    /// `= expr`: an explicit discriminant (else the previous one plus one, from 0).
    pub discriminant: Option<Expr>,
    /// Its fields.
    pub fields: VariantFields,
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
    /// Initialiser (`()` for a trait's constant without a default).
    pub value: Expr,
    /// A trait's constant without a default (each `impl` gives its value).
    pub required: bool,
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
#[derive(Clone, Debug)]
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
    /// How many of `generics` come from the `impl` block or trait (they come first).
    pub impl_generics: usize,
    /// `where` predicates on types other than plain type parameters.
    pub where_preds: Vec<WherePred>,
    /// A trait's method without a body (each `impl` gives one).
    pub required: bool,
    /// `const fn`: callable in constant expressions.
    pub is_const: bool,
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
    /// A type parameter's bounds as written (in `<..>` and the `where` clause), the kernel
    /// bounds (`Float`, `Int`, `Num`) included.
    pub bounds: Vec<TraitBound>,
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
    /// A named type with generic arguments: `Vec2<f32>`, `Option<T>`, `Tile<16>`.
    Generic {
        /// The type's path.
        path: Vec<Ident>,
        /// Its arguments.
        args: Vec<GenericArg>,
        /// Where.
        span: Span,
    },
    /// `&T` or `&mut T` of a value type (not an array): a parameter passed by value (`&T`)
    /// or written through (`&mut T`).
    Ref {
        /// The referenced type.
        inner: Box<TypeExpr>,
        /// `&mut`
        mutable: bool,
        /// Where.
        span: Span,
    },
    /// An associated type: `T::Output`, `Self::Output`, `<T as Add>::Output`.
    Assoc {
        /// The type it belongs to.
        base: Box<TypeExpr>,
        /// The trait named with `as` (`None`: found through the base's bounds or impls).
        trait_: Option<Vec<Ident>>,
        /// The associated type's name.
        name: Ident,
        /// Where.
        span: Span,
    },
    /// `_`: left to inference (in a `let` annotation or a generic argument).
    Infer(Span),
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
            | TypeExpr::Infer(s)
            | TypeExpr::Builtin { span: s, .. } => *s,
            TypeExpr::Param(i) => i.span,
            TypeExpr::ArrayRef { span, .. }
            | TypeExpr::Fixed { span, .. }
            | TypeExpr::Generic { span, .. }
            | TypeExpr::Ref { span, .. }
            | TypeExpr::Assoc { span, .. } => *span,
        }
    }
}
