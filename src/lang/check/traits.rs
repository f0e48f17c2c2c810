//! Traits, the module's side: which trait a bound names (one of the crate's, or one of Rust's
//! standard traits: the operators of `core::ops`, `PartialEq`, `PartialOrd`, `Copy`, `Clone`,
//! `Default`, the closure traits, ...), the bounds of generic parameters with supertraits
//! included, and the `impl` blocks of each trait.

use std::collections::HashMap;

use crate::ir::*;
use crate::lang::ast::{self, GenericArg, Item, ModId, OwnerKind, TraitBound};
use crate::lang::diag::Diagnostic;
use crate::lang::names::Res;

use super::CResult;
use super::generics::GenericEnv;
use super::items::ModuleCx;

/// A trait of Rust's standard library that kernels may name and implement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum StdTrait {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Neg,
    Not,
    AddAssign,
    SubAssign,
    MulAssign,
    DivAssign,
    RemAssign,
    BitAndAssign,
    BitOrAssign,
    BitXorAssign,
    ShlAssign,
    ShrAssign,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Copy,
    Clone,
    Default,
    Debug,
    Hash,
    Send,
    Sync,
    Sized,
    Index,
    IndexMut,
    Fn,
    FnMut,
    FnOnce,
    From,
    Into,
}

use StdTrait as S;

/// Each standard trait with its name.
const STD: &[(StdTrait, &str)] = &[
    (S::Add, "Add"),
    (S::Sub, "Sub"),
    (S::Mul, "Mul"),
    (S::Div, "Div"),
    (S::Rem, "Rem"),
    (S::BitAnd, "BitAnd"),
    (S::BitOr, "BitOr"),
    (S::BitXor, "BitXor"),
    (S::Shl, "Shl"),
    (S::Shr, "Shr"),
    (S::Neg, "Neg"),
    (S::Not, "Not"),
    (S::AddAssign, "AddAssign"),
    (S::SubAssign, "SubAssign"),
    (S::MulAssign, "MulAssign"),
    (S::DivAssign, "DivAssign"),
    (S::RemAssign, "RemAssign"),
    (S::BitAndAssign, "BitAndAssign"),
    (S::BitOrAssign, "BitOrAssign"),
    (S::BitXorAssign, "BitXorAssign"),
    (S::ShlAssign, "ShlAssign"),
    (S::ShrAssign, "ShrAssign"),
    (S::PartialEq, "PartialEq"),
    (S::Eq, "Eq"),
    (S::PartialOrd, "PartialOrd"),
    (S::Ord, "Ord"),
    (S::Copy, "Copy"),
    (S::Clone, "Clone"),
    (S::Default, "Default"),
    (S::Debug, "Debug"),
    (S::Hash, "Hash"),
    (S::Send, "Send"),
    (S::Sync, "Sync"),
    (S::Sized, "Sized"),
    (S::Index, "Index"),
    (S::IndexMut, "IndexMut"),
    (S::Fn, "Fn"),
    (S::FnMut, "FnMut"),
    (S::FnOnce, "FnOnce"),
    (S::From, "From"),
    (S::Into, "Into"),
];

impl StdTrait {
    pub(super) fn name(self) -> &'static str {
        STD.iter().find(|(t, _)| *t == self).map(|(_, n)| *n).unwrap_or("?")
    }

    pub(super) fn by_name(name: &str) -> Option<StdTrait> {
        STD.iter().find(|(_, n)| *n == name).map(|(t, _)| *t)
    }

    /// Its path in `std`, for messages (`std::ops::Add`).
    pub(super) fn path(self) -> String {
        let module = match self {
            S::PartialEq | S::Eq | S::PartialOrd | S::Ord => "cmp",
            S::Copy | S::Send | S::Sync | S::Sized => "marker",
            S::Clone => "clone",
            S::Default => "default",
            S::Debug => "fmt",
            S::Hash => "hash",
            S::From | S::Into => "convert",
            _ => "ops",
        };
        format!("std::{module}::{}", self.name())
    }

    /// The operator trait of a binary operator, and of its compound assignment.
    pub(super) fn of_binop(op: BinOp) -> (StdTrait, StdTrait) {
        match op {
            BinOp::Add => (S::Add, S::AddAssign),
            BinOp::Sub => (S::Sub, S::SubAssign),
            BinOp::Mul => (S::Mul, S::MulAssign),
            BinOp::Div => (S::Div, S::DivAssign),
            BinOp::Rem => (S::Rem, S::RemAssign),
            BinOp::BitAnd => (S::BitAnd, S::BitAndAssign),
            BinOp::BitOr => (S::BitOr, S::BitOrAssign),
            BinOp::BitXor => (S::BitXor, S::BitXorAssign),
            BinOp::Shl => (S::Shl, S::ShlAssign),
            BinOp::Shr => (S::Shr, S::ShrAssign),
            BinOp::Eq | BinOp::Ne => (S::PartialEq, S::PartialEq),
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => (S::PartialOrd, S::PartialOrd),
        }
    }

    /// The method an operator trait's impl defines (`add`, `add_assign`, `neg`, `index`).
    pub(super) fn method(self) -> Option<&'static str> {
        Some(match self {
            S::Add => "add",
            S::Sub => "sub",
            S::Mul => "mul",
            S::Div => "div",
            S::Rem => "rem",
            S::BitAnd => "bitand",
            S::BitOr => "bitor",
            S::BitXor => "bitxor",
            S::Shl => "shl",
            S::Shr => "shr",
            S::Neg => "neg",
            S::Not => "not",
            S::AddAssign => "add_assign",
            S::SubAssign => "sub_assign",
            S::MulAssign => "mul_assign",
            S::DivAssign => "div_assign",
            S::RemAssign => "rem_assign",
            S::BitAndAssign => "bitand_assign",
            S::BitOrAssign => "bitor_assign",
            S::BitXorAssign => "bitxor_assign",
            S::ShlAssign => "shl_assign",
            S::ShrAssign => "shr_assign",
            S::Index => "index",
            S::IndexMut => "index_mut",
            S::Default => "default",
            S::Clone => "clone",
            _ => return None,
        })
    }

    /// The binary operator traits with a right-hand side type parameter `Rhs` (default `Self`)
    /// and an `Output`.
    pub(super) fn is_binary_op(self) -> bool {
        matches!(self, S::Add | S::Sub | S::Mul | S::Div | S::Rem | S::BitAnd | S::BitOr | S::BitXor | S::Shl | S::Shr)
    }

    pub(super) fn is_assign_op(self) -> bool {
        matches!(
            self,
            S::AddAssign
                | S::SubAssign
                | S::MulAssign
                | S::DivAssign
                | S::RemAssign
                | S::BitAndAssign
                | S::BitOrAssign
                | S::BitXorAssign
                | S::ShlAssign
                | S::ShrAssign
        )
    }

    /// The traits it implies (its supertraits).
    fn supertraits(self) -> &'static [StdTrait] {
        match self {
            S::Copy => &[S::Clone],
            S::Eq => &[S::PartialEq],
            S::PartialOrd => &[S::PartialEq],
            S::Ord => &[S::Eq, S::PartialOrd, S::PartialEq],
            S::Fn => &[S::FnMut, S::FnOnce],
            S::FnMut => &[S::FnOnce],
            S::IndexMut => &[S::Index],
            _ => &[],
        }
    }

    /// The traits every kernel value type has (all are plain data).
    pub(super) fn is_marker(self) -> bool {
        matches!(self, S::Copy | S::Clone | S::Send | S::Sync | S::Sized | S::Debug)
    }
}

/// Which trait: one of Rust's standard traits, or a `trait` item of the crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum TraitId {
    Std(StdTrait),
    User(usize),
}

/// A trait with its generic arguments (without `Self`): `Add<f32>`, `Fn<(f32,)>`, `Shape`.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct TraitRef {
    pub(super) id: TraitId,
    /// The trait's generic arguments, `Rhs` of the operators (`Self` unless given) and the
    /// parameters of the closure traits (one tuple type), included.
    pub(super) args: Vec<Ty>,
    /// Associated types given: `Output = T`.
    pub(super) assoc: Vec<(String, Ty)>,
}

impl<'m> ModuleCx<'m> {
    /// The trait item `i`.
    pub(super) fn trait_decl(&self, i: usize) -> Option<&'m ast::TraitItem> {
        match &self.m.items[i] {
            Item::Trait(t) => Some(t),
            _ => None,
        }
    }

    /// The trait a path names in `module`: a trait item in scope, else a standard trait by its
    /// name (`Add`, `std::ops::Add`, `core::cmp::PartialOrd`). `Ok(None)`: the kernel bounds
    /// `Float`, `Half`, `Int` and `Num`, which are not traits.
    pub(super) fn trait_named(&self, b: &TraitBound, module: ModId) -> CResult<Option<TraitId>> {
        let path = &b.path;
        let res = if path.len() == 1 {
            self.m.scopes.type_name(module, &path[0].name)
        } else {
            self.m.scopes.path(self.m, module, path).ok().and_then(|r| r.1)
        };
        if let Some(Res::Item(i)) = res {
            if matches!(self.m.items[i], Item::Trait(_)) {
                return Ok(Some(TraitId::User(i)));
            }
            return Err(Diagnostic::error(b.span, format!("expected trait, found {} `{}`", item_kind(&self.m.items[i]), b.path_text()))
                .label("not a trait")
                .into());
        }
        let std_path = path.len() == 1 || matches!(path[0].name.as_str(), "std" | "core");
        let kache_path = path.len() == 1 || (path.len() == 2 && path[0].name == "kache");
        if kache_path && matches!(b.name(), "Float" | "Half" | "Int" | "Num") {
            return Ok(None);
        }
        if std_path && let Some(t) = StdTrait::by_name(b.name()) {
            return Ok(Some(TraitId::Std(t)));
        }
        let mut d = Diagnostic::error(b.span, format!("cannot find trait `{}` in this scope", b.path_text())).label("not found");
        let mut names: Vec<&str> = STD.iter().map(|(_, n)| *n).collect();
        names.extend(["Float", "Half", "Int", "Num"]);
        let user: Vec<String> = self.m.items.iter().filter(|i| matches!(i, Item::Trait(_))).map(|i| i.name().name.clone()).collect();
        names.extend(user.iter().map(String::as_str));
        match super::close_matches(b.name(), names.into_iter()).first() {
            Some(c) => d = d.help(format!("a trait with a similar name exists: `{c}`")),
            None => {
                d = d.help(format!(
                    "bound type parameters with the crate's traits, Rust's operator and comparison traits (`Add<Output = T>`, `PartialOrd`, ..), the closure traits (`Fn(f32) -> f32`), or kache's {}",
                    crate::lang::syntax::BOUND_LIST
                ))
            }
        }
        Err(d.into())
    }

    /// The trait a bound names with its arguments, resolved with `env`'s generic parameters
    /// and `self_ty` as `Self` (`None` for a kernel bound).
    pub(super) fn trait_ref(&mut self, b: &TraitBound, module: ModId, env: &GenericEnv, self_ty: Ty) -> CResult<Option<TraitRef>> {
        let Some(id) = self.trait_named(b, module)? else { return Ok(None) };
        let mut args = Vec::new();
        for a in &b.args {
            match a {
                GenericArg::Type(t) => args.push(self.ty_in(t, module, env)?),
                GenericArg::Const(e) => {
                    // `Add<Vec2>` parses the name as a constant: it is a type here.
                    if let ast::ExprKind::Path(n) = &e.kind {
                        let t = ast::TypeExpr::Named(vec![n.clone()], n.span);
                        args.push(self.ty_in(&t, module, env)?);
                    } else {
                        return Err(Diagnostic::error(e.span, "expected a type").label("a constant").into());
                    }
                }
                GenericArg::Infer(s) => return Err(Diagnostic::error(*s, "the type must be written in a bound").label("`_`").into()),
            }
        }
        let mut assoc = Vec::new();
        for (n, t) in &b.assoc {
            assoc.push((n.name.clone(), self.ty_in(t, module, env)?));
        }
        match id {
            // `Rhs = Self`.
            TraitId::Std(t) if (t.is_binary_op() || t.is_assign_op() || t == S::PartialEq || t == S::PartialOrd) && args.is_empty() => {
                args.push(self_ty);
            }
            TraitId::Std(t) if t.is_binary_op() || t.is_assign_op() || t == S::PartialEq || t == S::PartialOrd => {}
            TraitId::Std(t @ (S::Fn | S::FnMut | S::FnOnce)) => {
                let Some((params, ret)) = &b.fn_sugar else {
                    return Err(Diagnostic::error(b.span, format!("write the closure trait's signature: `{}(f32) -> f32`", t.name()))
                        .label("no signature")
                        .into());
                };
                let mut ps = Vec::new();
                for p in params {
                    ps.push(self.ty_in(p, module, env)?);
                }
                let tuple = if ps.is_empty() { Ty::Unit } else { Ty::Agg(self.types.borrow_mut().intern(AggTy::Tuple(ps))) };
                args = vec![tuple];
                let r = match ret {
                    Some(r) => self.ty_in(r, module, env)?,
                    None => Ty::Unit,
                };
                assoc.push(("Output".into(), r));
            }
            _ => {}
        }
        Ok(Some(TraitRef { id, args, assoc }))
    }

    /// The `impl` blocks of trait `t`, by index (built once per context, from the traits'
    /// paths alone: nothing is entered in the program's types).
    pub(super) fn impls_of(&mut self, t: TraitId) -> Vec<usize> {
        if self.impl_index.is_none() {
            let mut index: HashMap<TraitId, Vec<usize>> = HashMap::new();
            let m = self.m;
            for (k, imp) in m.impls.iter().enumerate() {
                if let Some(b) = &imp.trait_
                    && let Ok(Some(id)) = self.trait_named(b, imp.module)
                {
                    index.entry(id).or_default().push(k);
                }
            }
            self.impl_index = Some(index);
        }
        self.impl_index.as_ref().and_then(|i| i.get(&t).cloned()).unwrap_or_default()
    }

    /// The trait an `impl` block implements, if it names one.
    pub(super) fn impl_trait(&self, imp: usize) -> Option<TraitId> {
        let d = &self.m.impls[imp];
        self.trait_named(d.trait_.as_ref()?, d.module).ok().flatten()
    }

    /// The function or constant `name` an item of trait `t` declares (required or provided).
    pub(super) fn trait_member(&self, t: usize, name: &str) -> Option<usize> {
        self.m
            .items
            .iter()
            .position(|i| i.name().name == name && matches!(i.owner(), Some(ast::ImplOwner { kind: OwnerKind::Trait(x), .. }) if *x == t))
    }

    /// The user traits that declare a member called `name`.
    pub(super) fn traits_with_member(&self, name: &str) -> Vec<usize> {
        let mut out = Vec::new();
        for i in &self.m.items {
            if i.name().name == name
                && let Some(ast::ImplOwner { kind: OwnerKind::Trait(t), .. }) = i.owner()
                && !out.contains(t)
            {
                out.push(*t);
            }
        }
        out
    }

    /// The member `name` an `impl` block defines.
    pub(super) fn impl_member(&self, imp: usize, name: &str) -> Option<usize> {
        self.m.impls[imp].items.iter().copied().find(|i| self.m.items[*i].name().name == name)
    }

    /// `bound` and everything it implies, with `Self` standing for `self_ty`: the standard
    /// traits' supertraits, and the supertraits of the crate's traits (resolved in the
    /// trait's module, their `Self` the bounded type).
    pub(super) fn with_supertraits(&mut self, bound: TraitRef, self_ty: Ty, out: &mut Vec<TraitRef>, depth: u32) -> CResult<()> {
        if depth > 32 || out.iter().any(|b| b.id == bound.id && b.args == bound.args) {
            return Ok(());
        }
        let id = bound.id;
        out.push(bound.clone());
        match id {
            TraitId::Std(t) => {
                for s in t.supertraits() {
                    let args = match s {
                        S::PartialEq | S::PartialOrd if matches!(t, S::Eq | S::Ord | S::PartialOrd) => vec![self_ty],
                        S::FnMut | S::FnOnce => bound.args.clone(),
                        _ => Vec::new(),
                    };
                    let assoc = if matches!(s, S::FnMut | S::FnOnce) { bound.assoc.clone() } else { Vec::new() };
                    self.with_supertraits(TraitRef { id: TraitId::Std(*s), args, assoc }, self_ty, out, depth + 1)?;
                }
            }
            TraitId::User(i) => {
                let Some(t) = self.trait_decl(i) else { return Ok(()) };
                let env = GenericEnv::trait_env(t, &bound.args, self_ty);
                for b in &t.supertraits {
                    if let Some(r) = self.trait_ref(b, t.module, &env, self_ty)? {
                        self.with_supertraits(r, self_ty, out, depth + 1)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// How a trait is named in messages: `Shape`, `Add<f32>`, `Fn(f32) -> f32`.
    pub(super) fn trait_text(&self, r: &TraitRef, name: &dyn Fn(Ty) -> String) -> String {
        match r.id {
            TraitId::Std(t @ (S::Fn | S::FnMut | S::FnOnce)) => {
                let params = match r.args.first() {
                    Some(Ty::Agg(id)) => match self.types.borrow().get(*id) {
                        Some(AggTy::Tuple(ts)) => ts.iter().map(|t| name(*t)).collect::<Vec<_>>().join(", "),
                        _ => String::new(),
                    },
                    _ => String::new(),
                };
                let ret = r.assoc.iter().find(|(n, _)| n == "Output").map(|(_, t)| *t).unwrap_or(Ty::Unit);
                if ret == Ty::Unit { format!("{}({params})", t.name()) } else { format!("{}({params}) -> {}", t.name(), name(ret)) }
            }
            TraitId::Std(t) => t.name().to_string(),
            TraitId::User(i) => self.m.items[i].name().name.clone(),
        }
    }
}

fn item_kind(i: &Item) -> &'static str {
    match i {
        Item::Fn(_) => "function",
        Item::Const(_) => "constant",
        Item::Enum(_) => "enum",
        Item::Struct(_) => "struct",
        Item::Trait(_) => "trait",
    }
}
