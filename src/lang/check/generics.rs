//! Generic functions: what each generic parameter stands for while a body is checked (a type
//! parameter at the definition, a concrete type in an instance), the canonical names of
//! instances, checking a definition once against its bounds, and checking each instance.
//!
//! A generic body is checked twice, as rustc does it and then as a monomorphising compiler
//! does: once at its definition, with each type parameter an opaque type ([`Ty::Param`]) that
//! allows only what its bound allows, so a mistake is reported in the body whether or not any
//! instance exists; and once per instance, with the concrete types and constants substituted,
//! which gives the concrete program that is compiled and keyed (an instance is its own
//! program: its key depends on nothing but what it reaches).

use std::fmt;

use crate::ir::*;
use crate::lang::ast::{self, GenericArg, GenericParamKind, TypeExpr};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::items::ModuleCx;
use super::traits::TraitRef;
use super::{CResult, plural};

/// A generic argument of an instance: a concrete type or a constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GenericValue {
    /// A type (`f32`).
    Type(Ty),
    /// A constant of an integer type or `bool` (`16`, `true`).
    Const(ScalarValue),
}

impl fmt::Display for GenericValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenericValue::Type(t) => write!(f, "{t}"),
            GenericValue::Const(ScalarValue::Bool(b)) => write!(f, "{b}"),
            GenericValue::Const(v) => match v.as_i128() {
                Some(i) => write!(f, "{i}"),
                None => write!(f, "{v}"),
            },
        }
    }
}

/// A generic parameter of a kernel or device function, as the host sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct GenericParam {
    /// Its name (`T`, `TILE`).
    pub name: String,
    /// A type with its bound, or a constant of a scalar type.
    pub kind: GenericParamKind,
}

impl fmt::Display for GenericParam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            GenericParamKind::Type(b) => match b.name() {
                Some(b) => write!(f, "{}: {b}", self.name),
                None => write!(f, "{}", self.name),
            },
            GenericParamKind::Const(s) => write!(f, "const {}: {s}", self.name),
        }
    }
}

/// The generic parameters of a function, as the host sees them.
pub(super) fn params_of(f: &ast::FnItem) -> Vec<GenericParam> {
    f.generics.iter().map(|g| GenericParam { name: g.name.name.clone(), kind: g.kind }).collect()
}

/// The name of an instance: `axpy::<f32>`, `conv1d::<f32, 3>` (one space after each comma, as
/// rustc prints them). Instances are told apart and looked up by this name.
pub fn instance_name(base: &str, args: &[GenericValue]) -> String {
    if args.is_empty() {
        return base.to_string();
    }
    format!("{base}::<{}>", args.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", "))
}

/// What one generic parameter stands for in the body being checked.
#[derive(Clone, Debug)]
enum Binding {
    /// A type parameter: [`Ty::Param`] at the definition, a concrete type in an instance.
    Type(Ty),
    /// A const parameter: its type, and its value in an instance (`None` at the definition).
    Const(Scalar, Option<ScalarValue>),
}

/// The index of the type parameter that stands for `Self` in a trait's provided method
/// checked at its definition.
pub(super) const SELF_INDEX: u8 = 255;

/// The generic parameters of the function being checked and what each stands for.
#[derive(Clone, Debug, Default)]
pub(super) struct GenericEnv {
    params: Vec<(String, Binding)>,
    definition: bool,
    /// What `Self` stands for (an `impl` block's type, or the type a trait's method is called
    /// on), when the function has one.
    pub(super) self_ty: Option<Ty>,
    /// The traits each type parameter (and `Self`) is known to implement: its bounds with their
    /// supertraits. At a definition they are all a body may rely on; in an instance they say
    /// which trait's method a call on the parameter's value means.
    pub(super) bounds: Vec<(Ty, TraitRef)>,
    /// The names of type parameters that are not declared ones (`Self`, `<T as Add>::Output`),
    /// by index.
    pub(super) extra_names: Vec<(u8, String)>,
    /// While a template (a generic struct or enum) is made: the lengths of its arrays that
    /// depend on its const parameters, which its instances evaluate.
    pub(super) template_lens: Option<std::rc::Rc<std::cell::RefCell<Vec<super::adt::LenExpr>>>>,
}

impl GenericEnv {
    /// A function that is not generic.
    pub(super) fn none() -> GenericEnv {
        GenericEnv::default()
    }

    /// The definition of `f`: each type parameter opaque, each constant unknown (its bounds are
    /// entered by [`ModuleCx::definition_env`]).
    pub(super) fn definition(f: &ast::FnItem) -> GenericEnv {
        let params = f
            .generics
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let b = match g.kind {
                    GenericParamKind::Type(bound) => Binding::Type(Ty::Param(TypeParam { index: i as u8, bound })),
                    GenericParamKind::Const(s) => Binding::Const(s, None),
                };
                (g.name.name.clone(), b)
            })
            .collect();
        GenericEnv { params, definition: true, ..GenericEnv::default() }
    }

    /// The parameters of a template (a generic struct or enum): each type opaque, each
    /// constant unknown.
    pub(super) fn template(generics: &[ast::GenericParamDef]) -> GenericEnv {
        let params = generics
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let b = match g.kind {
                    GenericParamKind::Type(bound) => Binding::Type(Ty::Param(TypeParam { index: i as u8, bound })),
                    GenericParamKind::Const(s) => Binding::Const(s, None),
                };
                (g.name.name.clone(), b)
            })
            .collect();
        GenericEnv { params, definition: true, ..GenericEnv::default() }
    }

    /// A trait's generic parameters bound to `args` (missing ones stand for `Self`), with
    /// `Self` standing for `self_ty`.
    pub(super) fn trait_env(t: &ast::TraitItem, args: &[Ty], self_ty: Ty) -> GenericEnv {
        let params = t
            .generics
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let b = match g.kind {
                    GenericParamKind::Type(_) => Binding::Type(args.get(i).copied().unwrap_or(self_ty)),
                    GenericParamKind::Const(s) => Binding::Const(s, None),
                };
                (g.name.name.clone(), b)
            })
            .collect();
        GenericEnv { params, definition: false, self_ty: Some(self_ty), ..GenericEnv::default() }
    }

    /// The instance of `f` for `args` (already checked against its parameters).
    pub(super) fn instance(f: &ast::FnItem, args: &[GenericValue]) -> GenericEnv {
        let params = f
            .generics
            .iter()
            .zip(args)
            .map(|(g, a)| {
                let b = match a {
                    GenericValue::Type(t) => Binding::Type(*t),
                    GenericValue::Const(v) => Binding::Const(v.ty(), Some(*v)),
                };
                (g.name.name.clone(), b)
            })
            .collect();
        GenericEnv { params, definition: false, ..GenericEnv::default() }
    }

    /// Some of `generics` known, at a call whose arguments settled them: a type parameter
    /// `None` is left out (a type naming it is not known yet), a constant `None` is unknown.
    pub(super) fn settled(generics: &[ast::GenericParamDef], values: &[Option<GenericValue>]) -> GenericEnv {
        let params = generics
            .iter()
            .zip(values)
            .filter_map(|(g, v)| {
                let b = match (g.kind, v) {
                    (_, Some(GenericValue::Type(t))) => Binding::Type(*t),
                    (_, Some(GenericValue::Const(v))) => Binding::Const(v.ty(), Some(*v)),
                    (GenericParamKind::Const(s), None) => Binding::Const(s, None),
                    (GenericParamKind::Type(_), None) => return None,
                };
                Some((g.name.name.clone(), b))
            })
            .collect();
        GenericEnv { params, definition: false, ..GenericEnv::default() }
    }

    /// Whether this is a generic body checked at its definition.
    pub(super) fn is_definition(&self) -> bool {
        self.definition
    }

    /// The names of the type parameters, by index, for messages.
    pub(super) fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.params.iter().map(|(n, _)| n.clone()).collect();
        for (i, n) in &self.extra_names {
            let i = *i as usize;
            if names.len() <= i {
                names.resize(i + 1, String::new());
            }
            names[i] = n.clone();
        }
        names
    }

    /// What the type parameter `name` stands for.
    pub(super) fn type_param(&self, name: &str) -> Option<Ty> {
        self.params.iter().find_map(|(n, b)| match b {
            Binding::Type(t) if n == name => Some(*t),
            _ => None,
        })
    }

    /// The const parameter `name`: its type, and its value in an instance.
    pub(super) fn const_param(&self, name: &str) -> Option<(Scalar, Option<ScalarValue>)> {
        self.params.iter().find_map(|(n, b)| match b {
            Binding::Const(s, v) if n == name => Some((*s, *v)),
            _ => None,
        })
    }

    /// The const parameters with their types and values, for constant expressions.
    pub(super) fn const_scope(&self) -> Vec<(String, Scalar, Option<ScalarValue>)> {
        self.params
            .iter()
            .filter_map(|(n, b)| match b {
                Binding::Const(s, v) => Some((n.clone(), *s, *v)),
                Binding::Type(_) => None,
            })
            .collect()
    }

    /// The traits `t` is known to implement here (its bounds, with supertraits).
    pub(super) fn bounds_of(&self, t: Ty) -> impl Iterator<Item = &TraitRef> {
        self.bounds.iter().filter(move |(s, _)| *s == t).map(|(_, r)| r)
    }

    /// The position of generic parameter `name`.
    pub(super) fn param_index(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|(n, _)| n == name)
    }

    /// The type parameters with their values, by name.
    pub(super) fn type_params(&self) -> impl Iterator<Item = (&str, Ty)> {
        self.params.iter().filter_map(|(n, b)| match b {
            Binding::Type(t) => Some((n.as_str(), *t)),
            Binding::Const(..) => None,
        })
    }
}

/// The array type with elements of type `elem` (a scalar, a struct or a type parameter).
pub(super) fn array_of(types: &Types, elem: Ty, ndim: u8, writable: bool) -> Option<Ty> {
    match elem {
        Ty::Param(p) => Some(Ty::ParamArray(ParamArrayTy { elem: p, ndim, writable })),
        t => Some(Ty::Array(ArrayTy { elem: types.elem_of(t)?, ndim, writable })),
    }
}

/// An array type seen while checking: its element type is a scalar or a type parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ArrayView {
    pub(super) elem: Ty,
    pub(super) ndim: u8,
    pub(super) writable: bool,
}

/// The array `t` is, if it is one.
pub(super) fn array_view(t: Ty) -> Option<ArrayView> {
    match t {
        Ty::Array(a) => Some(ArrayView { elem: a.elem.ty(), ndim: a.ndim, writable: a.writable }),
        Ty::ParamArray(a) => Some(ArrayView { elem: Ty::Param(a.elem), ndim: a.ndim, writable: a.writable }),
        _ => None,
    }
}

/// Whether `t` satisfies `bound`: a scalar the bound admits, or a type parameter whose own bound
/// implies it.
pub(super) fn satisfies(t: Ty, bound: Bound) -> bool {
    match t {
        Ty::Scalar(s) => bound.admits(s),
        Ty::Param(p) => p.bound.implies(bound),
        Ty::Never => true,
        Ty::Array(_) | Ty::ParamArray(_) | Ty::Unit => false,
        // Structs, enums, tuples, arrays, closures: a type parameter without a kernel bound
        // stands for any value (its traits are checked on their own).
        Ty::Agg(_) | Ty::Enum(_) => bound == Bound::Any,
    }
}

/// `T: Float`, or `T` without a bound.
pub(super) fn describe_param(name: &str, bound: Bound) -> String {
    match bound.name() {
        Some(b) => format!("{name}: {b}"),
        None => name.to_string(),
    }
}

/// The error for a generic argument of the wrong kind, count or bound.
fn arg_error(span: Span, f: &ast::FnItem, msg: String, label: &str) -> Box<Diagnostic> {
    let generics: Vec<String> = params_of(f).iter().map(|p| p.to_string()).collect();
    Diagnostic::error(span, msg)
        .label(label.to_string())
        .secondary(f.name.span, format!("`{}<{}>` declared here", f.name.name, generics.join(", ")))
        .into()
}

impl<'m> ModuleCx<'m> {
    /// Checks the generic function `f` at its definition, once per module context; the result
    /// is not part of any program (a separate context is used, so nothing it reserves or
    /// captures leaks into the instance being built).
    pub(super) fn ensure_definition(&mut self, f: &'m ast::FnItem, call: Option<Span>) -> CResult<()> {
        let item = f as *const ast::FnItem as usize;
        if self.definitions_checked.contains(&item) || f.required {
            return Ok(());
        }
        let mut sub = ModuleCx::new(self.m, self.env);
        sub.in_progress.clone_from(&self.in_progress);
        let env = sub.definition_env(f)?;
        sub.ensure_checked(f, env, f.name.name.clone(), call)?;
        self.definitions_checked.insert(item);
        Ok(())
    }

    /// The instance of generic `f` for `args` (checked against its parameters first), checked
    /// once per module context; `self_ty` is `Self` of a trait's provided method.
    pub(super) fn ensure_instance(
        &mut self,
        f: &'m ast::FnItem,
        args: &[GenericValue],
        self_ty: Option<Ty>,
        call: Option<Span>,
    ) -> CResult<FuncId> {
        self.ensure_definition(f, call)?;
        let name = self.instance_label(f, args, self_ty);
        // The definition checked, what fails now depends on the arguments: say which.
        let note = format!("in the instance `{name}`");
        let env = self.instance_env(f, args, self_ty)?;
        self.ensure_checked(f, env, name, call).map_err(|d| {
            let d = *d;
            if d.notes.contains(&note) { d.into() } else { d.note(note).into() }
        })
    }

    /// The name of an instance: `axpy::<f32>`, `Vec2<f32>::len`, `<Circle as Shape>::describe`.
    pub(super) fn instance_label(&self, f: &ast::FnItem, args: &[GenericValue], self_ty: Option<Ty>) -> String {
        let show = |t: Ty| {
            let adts = self.adts.borrow();
            adts.ty_name(&self.types.borrow(), t)
        };
        let own_args: Vec<GenericValue> = args.iter().skip(f.impl_generics).copied().collect();
        let shown: Vec<String> = own_args
            .iter()
            .map(|a| match a {
                GenericValue::Type(t) => show(*t),
                c => c.to_string(),
            })
            .collect();
        let own = if shown.is_empty() { f.name.name.clone() } else { format!("{}::<{}>", f.name.name, shown.join(", ")) };
        match &f.owner {
            Some(ast::ImplOwner { kind: ast::OwnerKind::Trait(t), .. }) => {
                let tr = &self.m.items[*t].name().name;
                match self_ty {
                    Some(s) => format!("<{} as {tr}>::{own}", show(s)),
                    None => format!("{tr}::{own}"),
                }
            }
            Some(ast::ImplOwner { kind: ast::OwnerKind::Impl(i), .. }) if f.impl_generics > 0 => {
                let d = &self.m.impls[*i];
                let head = match &d.self_ty {
                    ast::TypeExpr::Named(p, _) | ast::TypeExpr::Generic { path: p, .. } => {
                        p.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::")
                    }
                    _ => String::new(),
                };
                let impl_args: Vec<String> = args
                    .iter()
                    .take(f.impl_generics)
                    .map(|a| match a {
                        GenericValue::Type(t) => show(*t),
                        c => c.to_string(),
                    })
                    .collect();
                format!("{head}<{}>::{own}", impl_args.join(", "))
            }
            _ if args.iter().all(|a| matches!(a, GenericValue::Const(_) | GenericValue::Type(Ty::Scalar(_)))) => {
                instance_name(&f.name.name, args)
            }
            _ => own,
        }
    }

    /// Checks generic arguments against `f`'s parameters: their count, their kinds, each type
    /// against its bound and each constant against its type. `at` is where the arguments were
    /// written, `written` how (for messages).
    pub(super) fn check_generic_args(&self, f: &ast::FnItem, args: &[GenericValue], at: Span, written: &str) -> CResult<()> {
        let want = f.generics.len();
        if args.len() != want {
            return Err(arg_error(
                at,
                f,
                format!(
                    "`{}` takes {want} generic argument{} but {} {} supplied",
                    f.name.name,
                    plural(want),
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
                &format!("expected {want} generic argument{} in `{written}`", plural(want)),
            ));
        }
        for (g, a) in f.generics.iter().zip(args) {
            match (g.kind, a) {
                (GenericParamKind::Type(bound), GenericValue::Type(t)) => {
                    if !satisfies(*t, bound) || (f.is_kernel && !matches!(t, Ty::Scalar(_) | Ty::Param(_))) {
                        let what = describe_param(&g.name.name, bound);
                        let mut d = Diagnostic::error(at, format!("the type `{t}` in `{written}` does not satisfy the bound `{what}`"))
                            .label(format!("`{}` = `{t}`, which is not {}", g.name.name, bound_admits(bound)));
                        if g.span.lo < at.lo || g.span.hi > at.hi {
                            d = d.secondary(g.span, format!("`{}` is bounded here", g.name.name));
                        }
                        return Err(d.help(format!("`{}` is {}", bound.name().unwrap_or("_"), bound_members(bound))).into());
                    }
                }
                (GenericParamKind::Const(s), GenericValue::Const(v)) => {
                    if v.ty() != s {
                        return Err(Diagnostic::error(
                            at,
                            format!("the constant `{a}` in `{written}` does not have the type `{s}` of `{}`", g.name.name),
                        )
                        .label(format!("expected `{s}`"))
                        .into());
                    }
                }
                (GenericParamKind::Type(_), GenericValue::Const(_)) => {
                    return Err(arg_error(
                        at,
                        f,
                        format!("`{}` is a type parameter, but `{a}` is a constant", g.name.name),
                        &format!("expected a type for `{}`", g.name.name),
                    ));
                }
                (GenericParamKind::Const(s), GenericValue::Type(_)) => {
                    return Err(arg_error(
                        at,
                        f,
                        format!("`{}` is a const parameter, but `{a}` is a type", g.name.name),
                        &format!("expected a `{s}` constant for `{}`", g.name.name),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The generic arguments the host wrote in an instance name (`conv1d::<f32, { 2 + 1 }>`):
    /// types as written, constants evaluated (they may name `const` items), typed by `f`'s
    /// parameters.
    pub(super) fn host_generic_args(&mut self, f: &ast::FnItem, args: &[GenericArg]) -> CResult<Vec<GenericValue>> {
        let mut out = Vec::new();
        for (i, a) in args.iter().enumerate() {
            let want = f.generics.get(i).map(|g| g.kind);
            out.push(match (a, want) {
                (GenericArg::Type(t), Some(GenericParamKind::Type(_)) | None) => GenericValue::Type(self.ty_of(t, f.module)?),
                (GenericArg::Type(TypeExpr::Scalar(s, span)), Some(GenericParamKind::Const(_))) => {
                    return Err(Diagnostic::error(*span, format!("expected a constant, found the type `{s}`")).label("a type").into());
                }
                (GenericArg::Type(t), Some(GenericParamKind::Const(_))) => {
                    return Err(Diagnostic::error(t.span(), "expected a constant").label("a type").into());
                }
                (GenericArg::Const(e), Some(GenericParamKind::Const(s))) => GenericValue::Const(self.eval_const(e, Some(s), f.module)?),
                (GenericArg::Const(e), Some(GenericParamKind::Type(_))) => match &e.kind {
                    ast::ExprKind::Path(n) => {
                        return Err(Diagnostic::error(e.span, format!("cannot find type `{}`", n.name))
                            .label("not a type")
                            .help(format!("types of instances are scalars: {}", crate::lang::syntax::SCALAR_LIST))
                            .into());
                    }
                    _ => {
                        return Err(Diagnostic::error(e.span, format!("expected a type for `{}`", f.generics[i].name.name))
                            .label("a constant")
                            .into());
                    }
                },
                (GenericArg::Const(e), None) => GenericValue::Const(self.eval_const(e, None, f.module)?),
                (GenericArg::Infer(s), _) => {
                    return Err(Diagnostic::error(*s, "an instance names every generic argument").label("`_` is not allowed here").into());
                }
            });
        }
        Ok(out)
    }
}

/// "a float type", for messages about bounds.
pub(super) fn bound_admits(b: Bound) -> &'static str {
    match b {
        Bound::Any => "a scalar type",
        Bound::Num => "a number type",
        Bound::Int => "an integer type",
        Bound::Float => "a float type",
        Bound::Half => "a 16-bit float type",
    }
}

/// The members of a bound, for messages.
pub(super) fn bound_members(b: Bound) -> String {
    let list: Vec<&str> = Scalar::ALL.iter().filter(|s| b.admits(**s)).map(|s| s.name()).collect();
    format!("one of `{}`", list.join("`, `"))
}
