//! Generic structs and enums with fields, the module's side: each item's template entered in
//! the [`Adts`] table on first use (its fields' types resolved with its parameters opaque, a
//! type that contains itself refused), `Option` (the language's own generic enum, named
//! `Option`, `Some` and `None` wherever the crate does not name something else so), and the
//! instances that types name (`Vec2<f32>`, `Option<u32>`).

use std::cell::RefCell;
use std::rc::Rc;

use crate::ir::*;
use crate::lang::ast::{self, ExprKind as A, GenericArg, GenericParamKind, Item, ModId, StructKind, TypeExpr, VariantFields};
use crate::lang::diag::Diagnostic;
use crate::lang::names::Res;
use crate::span::Span;

use super::CResult;
use super::adt::{AdtDef, AdtId, AdtShape, Adts, GArg, LenExpr, VariantShape};
use super::generics::GenericEnv;
use super::items::ModuleCx;

/// The item of `Option` in [`AdtDef::item`] terms: it has none.
pub(super) const OPTION: &str = "Option";

impl<'m> ModuleCx<'m> {
    /// The template of the language's `Option<T>`: `None` (tag 0) and `Some(T)` (tag 1).
    pub(super) fn option_adt(&mut self) -> AdtId {
        if let Some(id) = self.option {
            return id;
        }
        let t = Ty::Param(TypeParam { index: 0, bound: Bound::Any });
        let def = AdtDef {
            item: None,
            name: OPTION.into(),
            params: vec![("T".into(), None)],
            shape: AdtShape::Enum {
                variants: vec![
                    VariantShape { name: "None".into(), kind: StructKind::Unit, fields: Vec::new(), payload: None },
                    VariantShape { name: "Some".into(), kind: StructKind::Tuple, fields: vec![("0".into(), t)], payload: Some(1) },
                ],
            },
            len_exprs: Vec::new(),
            derives: ["Clone", "Copy", "PartialEq", "Eq", "PartialOrd", "Ord", "Debug", "Default", "Hash"].map(String::from).to_vec(),
        };
        let id = self.adts.borrow_mut().add(def);
        self.option = Some(id);
        id
    }

    /// `std::cmp::Ordering`, the language's own C-like enum (`Less = -1`, `Equal`, `Greater`), as
    /// `partial_cmp` gives it.
    pub(super) fn ordering_ty(&mut self) -> CResult<EnumTy> {
        if let Some(t) = self.ordering {
            return Ok(t);
        }
        let id = self.enums.len() as u32;
        self.enums.push(EnumDef {
            name: "Ordering".into(),
            repr: Scalar::I8,
            variants: vec![("Less".into(), -1), ("Equal".into(), 0), ("Greater".into(), 1)],
        });
        self.enum_names.borrow_mut().push("Ordering".into());
        let t = EnumTy { id, repr: Scalar::I8 };
        self.ordering = Some(t);
        Ok(t)
    }

    /// Whether the item `i` is a template: a generic struct, or an enum that is generic or has
    /// a variant with fields.
    pub(super) fn is_template(&self, i: usize) -> bool {
        match &self.m.items[i] {
            Item::Struct(s) => !s.generics.is_empty(),
            Item::Enum(e) => !e.is_c_like(),
            _ => false,
        }
    }

    /// The template of item `i` (a generic struct or an enum with fields), entered on first use.
    pub(super) fn adt_of_item(&mut self, i: usize, used: Span) -> CResult<AdtId> {
        if let Some(id) = self.adts.borrow().by_item.get(&i) {
            return Ok(*id);
        }
        if self.structs_in_progress.contains(&i) {
            return Err(self.recursive_type(i, used));
        }
        self.structs_in_progress.push(i);
        let r = self.make_template(i);
        self.structs_in_progress.pop();
        let def = r?;
        Ok(self.adts.borrow_mut().add(def))
    }

    fn make_template(&mut self, i: usize) -> CResult<AdtDef> {
        let m = self.m;
        let (name, module, generics, derives) = match &m.items[i] {
            Item::Struct(s) => (&s.name, s.module, &s.generics, &s.derives),
            Item::Enum(e) => (&e.name, e.module, &e.generics, &e.derives),
            other => return Err(Diagnostic::error(other.name().span, "expected a struct or an enum").label("here").into()),
        };
        let lens = Rc::new(RefCell::new(Vec::new()));
        let mut env = GenericEnv::template(generics);
        env.template_lens = Some(lens.clone());
        let saved = self.self_ty.take();
        let r = (|| -> CResult<AdtShape> {
            let field = |me: &mut Self, t: &TypeExpr| -> CResult<Ty> {
                let ty = me.ty_in(t, module, &env)?;
                me.component_ty(ty, t.span(), "a field")?;
                Ok(ty)
            };
            Ok(match &m.items[i] {
                Item::Struct(s) => {
                    let mut fields = Vec::new();
                    for f in &s.fields {
                        fields.push((f.name.name.clone(), field(self, &f.ty)?));
                    }
                    AdtShape::Struct { kind: s.kind, fields }
                }
                Item::Enum(e) => {
                    let mut variants = Vec::new();
                    let mut next = 1;
                    for v in &e.variants {
                        let (kind, fields) = match &v.fields {
                            VariantFields::Unit => (StructKind::Unit, Vec::new()),
                            VariantFields::Tuple(ts) => {
                                let mut out = Vec::new();
                                for (k, t) in ts.iter().enumerate() {
                                    out.push((k.to_string(), field(self, t)?));
                                }
                                (StructKind::Tuple, out)
                            }
                            VariantFields::Named(fs) => {
                                let mut out = Vec::new();
                                for f in fs {
                                    out.push((f.name.name.clone(), field(self, &f.ty)?));
                                }
                                (StructKind::Named, out)
                            }
                        };
                        let payload = (kind != StructKind::Unit).then(|| {
                            next += 1;
                            next - 1
                        });
                        variants.push(VariantShape { name: v.name.name.clone(), kind, fields, payload });
                    }
                    AdtShape::Enum { variants }
                }
                _ => AdtShape::Struct { kind: StructKind::Unit, fields: Vec::new() },
            })
        })();
        self.self_ty = saved;
        let shape = r?;
        let params = generics
            .iter()
            .map(|g| {
                (
                    g.name.name.clone(),
                    match g.kind {
                        GenericParamKind::Const(s) => Some(s),
                        GenericParamKind::Type(_) => None,
                    },
                )
            })
            .collect();
        let len_exprs = lens.borrow().clone();
        Ok(AdtDef { item: Some(i), name: m.qualified(module, &name.name), params, shape, len_exprs, derives: derives.clone() })
    }

    pub(super) fn recursive_type(&self, i: usize, used: Span) -> Box<Diagnostic> {
        let name = &self.m.items[i].name().name;
        Diagnostic::error(self.m.items[i].name().span, format!("recursive type `{name}` has infinite size"))
            .label("recursive type")
            .secondary(used, "recursive without indirection")
            .help("a struct or enum cannot contain itself, directly or through other types")
            .into()
    }

    /// The instance of template `adt` for `args`, entered in the program's types.
    pub(super) fn adt_instance(&mut self, adt: AdtId, args: &[GArg], span: Span) -> CResult<Ty> {
        let id = self.adts.borrow_mut().instantiate(&mut self.types.borrow_mut(), adt, args);
        let Some(id) = id else {
            let name = self.adts.borrow().def(adt).name.clone();
            return Err(Diagnostic::error(span, format!("recursive type `{name}` has infinite size")).label("here").into());
        };
        self.check_size(Ty::Agg(id), span)?;
        Ok(Ty::Agg(id))
    }

    /// The template a type names, when its path names a generic struct, an enum with fields
    /// or `Option`.
    pub(super) fn template_named(&mut self, path: &[ast::Ident], module: ModId, span: Span) -> CResult<Option<AdtId>> {
        let res =
            if path.len() == 1 { self.m.scopes.type_name(module, &path[0].name) } else { self.m.scopes.path(self.m, module, path)?.1 };
        match res {
            Some(Res::Item(i)) if self.is_template(i) => Ok(Some(self.adt_of_item(i, span)?)),
            Some(_) => Ok(None),
            None if is_option_path(path) => Ok(Some(self.option_adt())),
            None => Ok(None),
        }
    }

    /// `Vec2<f32>`, `Tile<16>`, `Option<u32>`: the instance a type with arguments names.
    pub(super) fn generic_named_ty(
        &mut self,
        path: &[ast::Ident],
        args: &[GenericArg],
        span: Span,
        module: ModId,
        env: &GenericEnv,
    ) -> CResult<Ty> {
        let name = path.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::");
        let Some(adt) = self.template_named(path, module, span)? else {
            return match self.named_ty_in(path, span, module, env) {
                Ok(_) => Err(Diagnostic::error(span, format!("type `{name}` takes no generic arguments"))
                    .label("unexpected generic arguments")
                    .help(format!("write `{name}`"))
                    .into()),
                Err(e) => Err(e),
            };
        };
        let params = self.adts.borrow().def(adt).params.clone();
        if params.len() != args.len() {
            return Err(Diagnostic::error(
                span,
                format!(
                    "`{name}` takes {} generic argument{} but {} {} supplied",
                    params.len(),
                    super::plural(params.len()),
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            )
            .label(format!("expected {} generic argument{}", params.len(), super::plural(params.len())))
            .into());
        }
        let mut out = Vec::with_capacity(args.len());
        for ((pname, kind), a) in params.iter().zip(args) {
            out.push(self.generic_value(pname, *kind, a, module, env)?);
        }
        self.adt_instance(adt, &out, span)
    }

    /// One argument of a template's instance, of the parameter's kind.
    fn generic_value(&mut self, pname: &str, kind: Option<Scalar>, a: &GenericArg, module: ModId, env: &GenericEnv) -> CResult<GArg> {
        Ok(match (kind, a) {
            (None, GenericArg::Type(t)) => GArg::Ty(self.ty_in(t, module, env)?),
            (None, GenericArg::Const(e)) => match &e.kind {
                A::Path(n) => GArg::Ty(self.ty_in(&TypeExpr::Named(vec![n.clone()], n.span), module, env)?),
                _ => return Err(Diagnostic::error(e.span, format!("expected a type for `{pname}`")).label("a constant").into()),
            },
            (Some(s), GenericArg::Const(e)) => {
                let v = self.const_in(e, s, module, env)?;
                GArg::Const(s, v)
            }
            (Some(s), GenericArg::Type(TypeExpr::Param(p))) => {
                let e = ast::Expr { kind: A::Path(p.clone()), span: p.span };
                let v = self.const_in(&e, s, module, env)?;
                GArg::Const(s, v)
            }
            (Some(s), GenericArg::Type(t)) => {
                return Err(Diagnostic::error(t.span(), format!("expected a `{s}` constant for `{pname}`, found a type"))
                    .label("a type")
                    .into());
            }
            (_, GenericArg::Infer(at)) => {
                return Err(Diagnostic::error(*at, "the type placeholder `_` is not allowed here")
                    .label("not allowed in this type")
                    .help("write the argument out")
                    .into());
            }
        })
    }

    /// A constant argument: its value, `None` where it depends on a const parameter without one
    /// (a definition), marked in a template being made.
    fn const_in(&mut self, e: &ast::Expr, s: Scalar, module: ModId, env: &GenericEnv) -> CResult<Option<u64>> {
        let scope = env.const_scope();
        if scope.iter().any(|(_, _, v)| v.is_none()) && super::consts::mentions(e, &scope) {
            self.const_type(e, Some(s), &scope, module)?;
            if let Some(lens) = &env.template_lens
                && let Some(x) = len_expr(e, &|n| env.param_index(n))
            {
                // A template's argument that names its own parameter: kept as an expression.
                let mut l = lens.borrow_mut();
                l.push(x);
                return Ok(Some(Adts::len_marker(l.len() - 1)));
            }
            return Ok(None);
        }
        let saved = std::mem::replace(&mut self.const_scope, scope);
        let r = self.eval_const(e, Some(s), module);
        self.const_scope = saved;
        let v = r?;
        Ok(match v {
            ScalarValue::Bool(b) => Some(b as u64),
            ScalarValue::Int(_, x) => Some(x),
            _ => None,
        })
    }

    /// The struct or enum item an aggregate type is, or `None` (a tuple, an array, `Option`).
    pub(super) fn item_of_agg(&self, id: AggId) -> Option<usize> {
        if let Some((adt, _)) = self.adts.borrow().instance_of(id) {
            return self.adts.borrow().def(adt).item;
        }
        self.struct_ids.iter().find(|(_, s)| **s == id).map(|(i, _)| *i)
    }
}

/// Whether a path names the language's `Option` (`Option`, `std::option::Option`).
pub(super) fn is_option_path(path: &[ast::Ident]) -> bool {
    match path {
        [o] => o.name == OPTION,
        [first, .., last] => last.name == OPTION && matches!(first.name.as_str(), "std" | "core"),
        [] => false,
    }
}

/// A length of a template's array as an expression of its const parameters (`N`, `N * 2`,
/// `{ N + 1 }`), for the instances to evaluate.
pub(super) fn len_expr(e: &ast::Expr, index: &dyn Fn(&str) -> Option<usize>) -> Option<LenExpr> {
    match &e.kind {
        A::Path(n) => index(&n.name).map(LenExpr::Param),
        A::Lit(ast::Lit::Int(v, _)) => u64::try_from(*v).ok().map(LenExpr::Lit),
        A::Binary(op, a, b) => Some(LenExpr::Bin(*op, Box::new(len_expr(a, index)?), Box::new(len_expr(b, index)?))),
        A::Block(b) if b.stmts.is_empty() => len_expr(b.tail.as_ref()?, index),
        A::Cast(x, _) => len_expr(x, index),
        _ => None,
    }
}

/// Whether a path names `std::cmp::Ordering` (`Ordering`, `cmp::Ordering`, `std::cmp::Ordering`).
pub(super) fn is_ordering_path(path: &[ast::Ident]) -> bool {
    match path {
        [o] => o.name == "Ordering",
        [.., c, o] => o.name == "Ordering" && c.name == "cmp",
        [] => false,
    }
}
