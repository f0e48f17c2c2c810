//! Patterns that take values apart: `match` on enums with fields, structs and tuples (nested,
//! with literals, ranges, `|`, bindings and guards), and the pattern tests and coverage check
//! that `if let`, `while let` and `let .. else` (`let_patterns.rs`) use too.
//!
//! Each is checked as rustc checks it (every value covered, else an error that shows one that
//! is not, as E0004 does; an arm no value reaches is a warning) and becomes plain IR: the value
//! in a hidden local, each arm's bindings read from its parts (every part of a value is
//! initialised, so a read that the arm's test would not reach is harmless and LLVM drops it),
//! and a chain of `if`s on the arms' tests, the last arm that every value left reaches taken
//! without one. A `match` on an integer, a `bool` or a C-like enum whose patterns are all
//! constants, ranges and names stays the integer `match` of `matching.rs`.

use crate::ir::*;
use crate::lang::ast::{self, Pat};
use crate::lang::diag::Diagnostic;
use crate::lang::names::Res;
use crate::span::Span;

use super::CResult;
use super::body::{CBlock, CExpr, FnCx};
use super::unify::{Compound, H, Kind};
use super::variants::VariantRef;

/// A pattern as exhaustiveness sees it.
#[derive(Clone, Debug)]
pub(super) enum Pt {
    /// Matches every value.
    Wild,
    /// Constructor `.0` of the column's type (a variant, `true`/`false`, a C-like enum's
    /// variant, the one constructor of a struct or tuple), with its fields' patterns.
    Ctor(usize, Vec<Pt>),
    /// Some values of a type with too many to list (an integer, a float): covers nothing whole.
    Opaque,
    /// `a | b`
    Or(Vec<Pt>),
}

/// The constructors of a type: names (for messages) and field types; `None` where there are
/// too many to list.
type Ctors = Option<Vec<(String, Vec<H>)>>;

/// One alternative of `a | b`: its test, the names it binds (each with its local and its value)
/// and where it is.
type AltBinds = (CExpr, Vec<(String, LocalId, CExpr)>, Span);

/// One arm to lower: its test, its bindings' statements, guard and body.
struct LoweredArm {
    test: Option<CExpr>,
    binds: Vec<Stmt<H>>,
    guard: Option<CExpr>,
    body: CExpr,
    span: Span,
}

impl<'c, 'm> FnCx<'c, 'm> {
    /// Whether a `match` needs this file: its value is an enum with fields, a struct or a
    /// tuple, or a pattern takes one apart.
    pub(super) fn needs_pattern_match(&mut self, scrutinee: H, arms: &[ast::Arm]) -> bool {
        let t = self.u.ty(scrutinee);
        matches!(t, Some(Ty::Agg(_)))
            || self.u.adt_of(scrutinee).is_some()
            || self.u.compound(scrutinee).is_some()
            || arms.iter().any(|a| self.takes_apart(&a.pat))
    }

    fn takes_apart(&mut self, p: &Pat) -> bool {
        match p {
            Pat::TupleStruct { .. } | Pat::Struct { .. } | Pat::Tuple { .. } | Pat::Ref(..) => true,
            Pat::Or(alts, _) => alts.iter().any(|a| self.takes_apart(a)),
            Pat::Bind { sub: Some(s), .. } => self.takes_apart(s),
            Pat::Bind { name, sub: None, .. } => {
                self.lookup_local(&name.name).is_none() && self.variant_path(std::slice::from_ref(name), name.span).ok().flatten().is_some()
            }
            Pat::Const(ast::Expr { kind: ast::ExprKind::Path(n), .. }) => {
                self.variant_path(std::slice::from_ref(n), n.span).ok().flatten().is_some()
            }
            Pat::Const(ast::Expr { kind: ast::ExprKind::QPath(p), span }) => self.variant_path(p, *span).ok().flatten().is_some(),
            _ => false,
        }
    }

    /// `match` on an enum with fields, a struct or a tuple.
    pub(super) fn pattern_match(&mut self, s: CExpr, arms: &[ast::Arm], span: Span) -> CResult<CExpr> {
        let (sty, sspan) = (s.ty, s.span);
        let tmp = self.declare(&ast::Ident { name: "_".into(), span: sspan }, sty, false, false);
        let whole = Expr { kind: ExprKind::Local(tmp), ty: sty, span: sspan };
        self.pattern_match_in(Some((tmp, s)), whole, arms, span)
    }

    /// The place a `match` or `if let` on `e` takes apart where it is, when `e` is a `&mut`
    /// value: `self` of a `&mut self` method, a `&mut T` parameter, `&mut place`, a name bound
    /// by reference; `None` for any other value (matched as a copy).
    pub(super) fn mut_ref_place(&mut self, e: &ast::Expr) -> CResult<Option<(Place<H>, H)>> {
        match &e.kind {
            ast::ExprKind::RefMut(x) => {
                let super::aggregates::Operand::Place(p, h) = self.operand(x)? else { return Ok(None) };
                if matches!(p, Place::Index(..)) {
                    return Ok(None);
                }
                self.check_borrow_mut_at(&p, x)?;
                Ok(Some((p, h)))
            }
            ast::ExprKind::Path(n) => match self.lookup_local(&n.name) {
                Some(l) if self.locals[l].mut_ref && self.locals[l].alias.is_none() => {
                    self.use_local(l);
                    Ok(Some((Place::Local(l), self.locals[l].ty)))
                }
                Some(l) if self.locals[l].alias.is_some() && self.locals[l].mutable => {
                    let p = self.locals[l].alias.clone().unwrap_or(Place::Local(l));
                    self.use_local(super::refs::place_root(&p));
                    Ok(Some((p, self.locals[l].ty)))
                }
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// A `match` taking apart `whole` (a read of a hidden local holding the value `held`, or of
    /// a `&mut` place, whose bindings are then names for its parts).
    pub(super) fn pattern_match_in(
        &mut self,
        held: Option<(LocalId, CExpr)>,
        whole: CExpr,
        arms: &[ast::Arm],
        span: Span,
    ) -> CResult<CExpr> {
        let (sty, sspan) = (whole.ty, whole.span);
        let saved = std::mem::replace(&mut self.bind_by_ref, held.is_none());
        let r = self.match_arms(held, whole, arms, span, sty, sspan);
        self.bind_by_ref = saved;
        r
    }

    fn match_arms(
        &mut self,
        held: Option<(LocalId, CExpr)>,
        whole: CExpr,
        arms: &[ast::Arm],
        span: Span,
        sty: H,
        sspan: Span,
    ) -> CResult<CExpr> {
        let mut lowered = Vec::new();
        let mut rows: Vec<(Pt, bool, Span)> = Vec::new();
        let mut ty: Option<H> = None;
        for arm in arms {
            let mark = self.scope.len();
            let r = self.lower_arm(arm, &whole);
            self.scope.truncate(mark);
            let (a, pt) = r?;
            let bt = a.body.ty;
            match (ty, self.u.ty(bt)) {
                (_, Some(Ty::Never)) => {}
                (None, _) => ty = Some(bt),
                (Some(t), _) => {
                    if !self.u.unify(t, bt) {
                        let (x, y) = (self.u.describe(t), self.u.describe(bt));
                        return Err(Diagnostic::error(arm.body.span, format!("`match` arms have incompatible types: `{x}` and `{y}`"))
                            .label(format!("expected `{x}`, found `{y}`"))
                            .note("every arm of a `match` gives a value of one type")
                            .into());
                    }
                }
            }
            rows.push((pt, a.guard.is_some(), arm.pat.span()));
            lowered.push(a);
        }
        let ty = ty.unwrap_or_else(|| self.u.known(Ty::Never));
        self.check_coverage(&rows, sty, sspan, true)?;
        let mut stmts = match held {
            Some((tmp, s)) => vec![Stmt::Let(tmp, Some(s))],
            None => Vec::new(),
        };
        for a in &mut lowered {
            stmts.append(&mut a.binds);
        }
        let chain = self.arm_chain(lowered, ty, span)?;
        Ok(Expr { kind: ExprKind::Block(Block { stmts, tail: Some(Box::new(chain)) }), ty, span })
    }

    /// `if` on the arms' tests in turn; the last arm without a guard, which every value left
    /// reaches (exhaustiveness), is taken without one; arms after it are never reached.
    fn arm_chain(&mut self, arms: Vec<LoweredArm>, ty: H, span: Span) -> CResult<CExpr> {
        let last = arms.iter().rposition(|a| a.guard.is_none()).unwrap_or(arms.len().saturating_sub(1));
        let mut arms: Vec<LoweredArm> = arms.into_iter().take(last + 1).collect();
        let Some(tail) = arms.pop() else {
            return Ok(self.mk(ExprKind::Unit, Ty::Unit, span));
        };
        let mut out = match tail.guard {
            // Only in a chain that is not exhaustive (`if let`): its test and guard decide.
            Some(g) => {
                let c = match tail.test {
                    Some(t) => self.and(t, g),
                    None => g,
                };
                let unit = self.mk(ExprKind::Unit, Ty::Unit, span);
                Expr { kind: ExprKind::If(Box::new(c), block_of(tail.body), Some(block_of(unit))), ty, span: tail.span }
            }
            None => tail.body,
        };
        while let Some(a) = arms.pop() {
            let cond = match (a.test, a.guard) {
                (Some(t), Some(g)) => self.and(t, g),
                (Some(t), None) => t,
                (None, Some(g)) => g,
                (None, None) => self.mk(ExprKind::Lit(ScalarValue::Bool(true)), Ty::Scalar(Scalar::Bool), a.span),
            };
            out = Expr { kind: ExprKind::If(Box::new(cond), block_of(a.body), Some(block_of(out))), ty, span: a.span };
        }
        Ok(out)
    }

    fn and(&mut self, a: CExpr, b: CExpr) -> CExpr {
        let span = a.span.to(b.span);
        self.mk(ExprKind::Logic(LogicOp::And, Box::new(a), Box::new(b)), Ty::Scalar(Scalar::Bool), span)
    }

    fn lower_arm(&mut self, arm: &ast::Arm, whole: &CExpr) -> CResult<(LoweredArm, Pt)> {
        let mut binds = Vec::new();
        let (test, pt) = self.pat_test(&arm.pat, whole, &mut binds)?;
        let guard = match &arm.guard {
            Some(g) => {
                let g = self.expr(g)?;
                let b = self.u.known(Ty::Scalar(Scalar::Bool));
                self.unify_or(g.span, b, g.ty, " (a `match` guard)")?;
                Some(g)
            }
            None => None,
        };
        let body = self.expr(&arm.body)?;
        Ok((LoweredArm { test, binds, guard, body, span: arm.span }, pt))
    }

    /// What pattern `p` tests of `value` (an expression that only reads locals: it is
    /// repeated), the statements binding its names, and the pattern as exhaustiveness sees it.
    pub(super) fn pat_test(&mut self, p: &Pat, value: &CExpr, binds: &mut Vec<Stmt<H>>) -> CResult<(Option<CExpr>, Pt)> {
        let vty = value.ty;
        match p {
            Pat::Wild(_) => Ok((None, Pt::Wild)),
            Pat::Ref(inner, _) => self.pat_test(inner, value, binds),
            Pat::Bind { name, mutable, sub } => {
                if sub.is_none()
                    && !*mutable
                    && let Some(t) = self.const_like(name, value, binds)?
                {
                    return Ok(t);
                }
                let r = match sub {
                    Some(s) => self.pat_test(s, value, binds)?,
                    None => (None, Pt::Wild),
                };
                let l = self.declare(name, vty, *mutable, false);
                match super::refs::expr_place(value).filter(|_| self.bind_by_ref) {
                    // A part of a `&mut` place: the name is a `&mut` reference to it.
                    Some(p) => {
                        self.locals[l].alias = Some(p);
                        self.locals[l].mutable = true;
                    }
                    None => binds.push(Stmt::Let(l, Some(value.clone()))),
                }
                Ok(r)
            }
            Pat::Const(e) => {
                let path = match &e.kind {
                    ast::ExprKind::Path(n) => Some(vec![n.clone()]),
                    ast::ExprKind::QPath(p) => Some(p.clone()),
                    _ => None,
                };
                if let Some(path) = path
                    && let Some(v) = self.variant_path(&path, e.span)?
                {
                    return self.variant_test(v, &[], None, value, e.span, binds, true);
                }
                let x = self.expr(e)?;
                self.unify_pat(vty, x.ty, e.span)?;
                let pt = self.const_pt(&x, vty);
                let t = self.compare(BinOp::Eq, value.clone(), x, e.span);
                Ok((Some(t), pt))
            }
            Pat::Range { lo, hi, inclusive, span } => {
                let mut test: Option<CExpr> = None;
                if let Some(lo) = lo {
                    let x = self.expr(lo)?;
                    self.unify_pat(vty, x.ty, lo.span)?;
                    test = Some(self.compare(BinOp::Ge, value.clone(), x, *span));
                }
                if let Some(hi) = hi {
                    let x = self.expr(hi)?;
                    self.unify_pat(vty, x.ty, hi.span)?;
                    let op = if *inclusive { BinOp::Le } else { BinOp::Lt };
                    let t = self.compare(op, value.clone(), x, *span);
                    test = Some(match test {
                        Some(a) => self.and(a, t),
                        None => t,
                    });
                }
                Ok((test, Pt::Opaque))
            }
            Pat::Or(alts, span) => {
                let mut test: Option<CExpr> = None;
                let mut pts = Vec::new();
                let mut alt_binds = Vec::new();
                for a in alts {
                    let mark = self.scope.len();
                    let mut own = Vec::new();
                    let r = self.pat_test(a, value, &mut own);
                    let names: Vec<(String, LocalId)> = self.scope[mark.min(self.scope.len())..].to_vec();
                    self.scope.truncate(mark);
                    let (t, pt) = r?;
                    let mut vals = Vec::new();
                    for (n, l) in names {
                        let v = own.iter().find_map(|s| match s {
                            Stmt::Let(x, Some(v)) if *x == l => Some(v.clone()),
                            _ => None,
                        });
                        let Some(v) = v.filter(|_| self.locals[l].alias.is_none()) else {
                            return Err(Diagnostic::error(a.span(), "bindings by reference inside `|` patterns are not supported")
                                .label("binds a name here")
                                .help("write one arm per alternative")
                                .into());
                        };
                        vals.push((n, l, v));
                    }
                    pts.push(pt);
                    let t = match t {
                        Some(t) => t,
                        None => self.mk(ExprKind::Lit(ScalarValue::Bool(true)), Ty::Scalar(Scalar::Bool), *span),
                    };
                    alt_binds.push((t.clone(), vals, a.span()));
                    test = Some(match test {
                        Some(x) => {
                            let sp = x.span.to(t.span);
                            self.mk(ExprKind::Logic(LogicOp::Or, Box::new(x), Box::new(t)), Ty::Scalar(Scalar::Bool), sp)
                        }
                        None => t,
                    });
                }
                if alt_binds.iter().any(|(_, v, _)| !v.is_empty()) {
                    self.or_bindings(alt_binds, binds)?;
                }
                Ok((test, Pt::Or(pts)))
            }
            Pat::Tuple { elems, rest, span } => {
                let hs = match self.u.compound(vty) {
                    Some(Compound::Tuple(hs)) if fits(elems.len(), *rest, hs.len()) => hs,
                    Some(Compound::Tuple(hs)) => {
                        return Err(Diagnostic::error(
                            *span,
                            format!("mismatched types: expected a tuple with {} elements, found one with {}", hs.len(), elems.len()),
                        )
                        .label(format!("expected {} elements", hs.len()))
                        .into());
                    }
                    None if self.u.ty(vty).is_none() && self.u.adt_of(vty).is_none() => {
                        let hs: Vec<H> = (0..elems.len()).map(|_| self.u.var(Kind::Any)).collect();
                        let t = self.u.tuple(hs.clone());
                        self.unify_pat(vty, t, *span)?;
                        hs
                    }
                    _ => {
                        let d = self.u.describe(vty);
                        return Err(Diagnostic::error(*span, format!("mismatched types: expected `{d}`, found a tuple"))
                            .label(format!("this pattern takes apart a tuple, but the value is `{d}`"))
                            .into());
                    }
                };
                self.fields_test(elems, *rest, &hs, value, None, binds, 0)
            }
            Pat::TupleStruct { path, elems, rest, span } => {
                if let Some(v) = self.variant_path(path, *span)? {
                    let pats: Vec<(Option<&ast::Ident>, &Pat)> = elems.iter().map(|p| (None, p)).collect();
                    return self.variant_test(v, &pats, *rest, value, *span, binds, false);
                }
                let (h, view) = self.struct_named(path, *span)?;
                self.unify_pat(vty, h, *span)?;
                if view.kind != ast::StructKind::Tuple {
                    return Err(Diagnostic::error(
                        *span,
                        format!("expected a tuple struct or a tuple variant, found struct `{}`", view.name),
                    )
                    .label("not a tuple struct")
                    .help(format!("take it apart by its fields' names: `{} {{ .. }}`", view.name))
                    .into());
                }
                let hs: Vec<H> = view.fields.iter().map(|(_, h)| *h).collect();
                if !fits(elems.len(), *rest, hs.len()) {
                    return Err(Diagnostic::error(
                        *span,
                        format!("this pattern has {} fields, but `{}` has {}", elems.len(), view.name, hs.len()),
                    )
                    .label(format!("expected {} fields", hs.len()))
                    .into());
                }
                self.fields_test(elems, *rest, &hs, value, None, binds, 0)
            }
            Pat::Struct { path, fields, rest, span } => {
                if let Some(v) = self.variant_path(path, *span)? {
                    let pats: Vec<(Option<&ast::Ident>, &Pat)> = fields.iter().map(|(n, p)| (Some(n), p)).collect();
                    return self.variant_test(v, &pats, if *rest { Some(pats.len()) } else { None }, value, *span, binds, false);
                }
                let (h, view) = self.struct_named(path, *span)?;
                self.unify_pat(vty, h, *span)?;
                let mut ordered: Vec<Pat> = vec![Pat::Wild(*span); view.fields.len()];
                let mut seen = vec![false; view.fields.len()];
                for (n, p) in fields {
                    let Some(k) = view.fields.iter().position(|(f, _)| *f == n.name) else {
                        return Err(self.no_field(&view, &n.name, n.span));
                    };
                    seen[k] = true;
                    ordered[k] = p.clone();
                }
                if !rest && seen.contains(&false) {
                    let missing: Vec<String> =
                        view.fields.iter().zip(&seen).filter(|(_, s)| !**s).map(|((n, _), _)| format!("`{n}`")).collect();
                    return Err(Diagnostic::error(
                        *span,
                        format!("pattern does not mention field{} {}", super::plural(missing.len()), missing.join(", ")),
                    )
                    .label(format!("missing {}", missing.join(", ")))
                    .help("name every field, or ignore the rest with `..`")
                    .into());
                }
                let hs: Vec<H> = view.fields.iter().map(|(_, h)| *h).collect();
                self.fields_test(&ordered, None, &hs, value, None, binds, 0)
            }
        }
    }

    /// The names every alternative of `a | b` binds (rustc's E0408 where one does not): each
    /// the value of the alternative that matched.
    fn or_bindings(&mut self, alts: Vec<AltBinds>, binds: &mut Vec<Stmt<H>>) -> CResult<()> {
        let names: Vec<String> = alts[0].1.iter().map(|(n, _, _)| n.clone()).collect();
        for (_, vals, at) in &alts {
            let missing = names.iter().find(|n| !vals.iter().any(|(m, _, _)| m == *n));
            let extra = vals.iter().map(|(m, _, _)| m).find(|m| !names.contains(m));
            if let Some(n) = missing.or(extra) {
                return Err(Diagnostic::error(*at, format!("variable `{n}` is not bound in all patterns"))
                    .label(format!("pattern doesn't bind `{n}`"))
                    .into());
            }
        }
        for n in names {
            let (_, l0, _) = alts[0]
                .1
                .iter()
                .find(|(m, _, _)| *m == n)
                .cloned()
                .ok_or_else(|| Diagnostic::error(alts[0].2, "internal error: a binding went missing").label("here"))?;
            let (h, mutable, span) = (self.locals[l0].ty, self.locals[l0].mutable, self.locals[l0].span);
            let mut chosen: Option<CExpr> = None;
            for (t, vals, _) in alts.iter().rev() {
                let Some((_, l, v)) = vals.iter().find(|(m, _, _)| *m == n) else { continue };
                let lh = self.locals[*l].ty;
                if !self.u.unify(h, lh) {
                    let (a, b) = (self.u.describe(h), self.u.describe(lh));
                    return Err(Diagnostic::error(self.locals[*l].span, format!("mismatched types: expected `{a}`, found `{b}`"))
                        .label(format!("`{n}` is `{a}` in the first alternative"))
                        .note("a name bound by every alternative of `|` has one type")
                        .into());
                }
                chosen = Some(match chosen {
                    None => v.clone(),
                    Some(other) => {
                        let then = Block { stmts: Vec::new(), tail: Some(Box::new(v.clone())) };
                        let els = Block { stmts: Vec::new(), tail: Some(Box::new(other)) };
                        Expr { kind: ExprKind::If(Box::new(t.clone()), then, Some(els)), ty: h, span }
                    }
                });
            }
            let l = self.declare(&ast::Ident { name: n.clone(), span }, h, mutable, false);
            binds.push(Stmt::Let(l, chosen));
        }
        Ok(())
    }

    /// A name in a pattern that is a constant, a unit variant or a unit struct in scope (as in
    /// Rust, it is that value, not a binding): its test of `value`.
    fn const_like(&mut self, name: &ast::Ident, value: &CExpr, binds: &mut Vec<Stmt<H>>) -> CResult<Option<(Option<CExpr>, Pt)>> {
        if let Some(v) = self.variant_path(std::slice::from_ref(name), name.span)? {
            return self.variant_test(v, &[], None, value, name.span, binds, true).map(Some);
        }
        let vty = value.ty;
        let res = self.mcx.m.scopes.value(self.module, &name.name);
        let is_const = |me: &Self, i: usize| matches!(me.mcx.m.items[i], ast::Item::Const(_));
        let is_unit_struct = |me: &Self, i: usize| matches!(&me.mcx.m.items[i], ast::Item::Struct(s) if s.kind == ast::StructKind::Unit);
        match res {
            Some(Res::Variant(..)) => {
                let e = ast::Expr { kind: ast::ExprKind::Path(name.clone()), span: name.span };
                let x = self.expr(&e)?;
                self.unify_pat(vty, x.ty, name.span)?;
                let pt = self.const_pt(&x, vty);
                Ok(Some((Some(self.compare(BinOp::Eq, value.clone(), x, name.span)), pt)))
            }
            Some(Res::Item(i)) if is_const(self, i) => {
                let e = ast::Expr { kind: ast::ExprKind::Path(name.clone()), span: name.span };
                let x = self.expr(&e)?;
                self.unify_pat(vty, x.ty, name.span)?;
                let pt = self.const_pt(&x, vty);
                Ok(Some((Some(self.compare(BinOp::Eq, value.clone(), x, name.span)), pt)))
            }
            Some(Res::Item(i)) if is_unit_struct(self, i) => Ok(Some((None, Pt::Ctor(0, Vec::new())))),
            _ => Ok(None),
        }
    }

    /// The test of variant `v` (its tag) and of its fields' patterns.
    #[allow(clippy::too_many_arguments)]
    fn variant_test(
        &mut self,
        v: VariantRef,
        pats: &[(Option<&ast::Ident>, &Pat)],
        rest: Option<usize>,
        value: &CExpr,
        span: Span,
        binds: &mut Vec<Stmt<H>>,
        unit: bool,
    ) -> CResult<(Option<CExpr>, Pt)> {
        let (ty, args) = self.fresh_instance_args(v.adt);
        self.unify_pat(value.ty, ty, span)?;
        let def = self.mcx.adts.borrow().def(v.adt).clone();
        let shape = def.variants()[v.index].clone();
        let vname = format!("{}::{}", def.name, shape.name);
        if unit && shape.kind != ast::StructKind::Unit {
            return Err(Diagnostic::error(span, format!("expected unit struct, unit variant or constant, found tuple variant `{vname}`"))
                .label(format!("not a unit variant: write `{}(..)`", shape.name))
                .into());
        }
        let tag_h = self.u.known(Ty::Scalar(Scalar::U32));
        let tag = Expr { kind: ExprKind::Field(Box::new(value.clone()), 0), ty: tag_h, span };
        let lit = self.mk(ExprKind::Lit(ScalarValue::Int(Scalar::U32, v.index as u64)), Ty::Scalar(Scalar::U32), span);
        let mut test = self.compare(BinOp::Eq, tag, lit, span);
        let hs: Vec<H> = shape.fields.iter().map(|(_, t)| self.u.inst_h(*t, &args, &def.len_exprs)).collect();
        let mut sub = vec![Pt::Wild; hs.len()];
        if let Some(p) = shape.payload {
            let th = self.u.tuple(hs.clone());
            let payload = Expr { kind: ExprKind::Field(Box::new(value.clone()), p), ty: th, span };
            let ordered: Vec<Pat> = match pats.first() {
                Some((Some(_), _)) => {
                    let mut o = vec![Pat::Wild(span); hs.len()];
                    let mut seen = vec![false; hs.len()];
                    for (n, p) in pats {
                        let n = n.map(|n| n.name.clone()).unwrap_or_default();
                        let Some(k) = shape.fields.iter().position(|(f, _)| *f == n) else {
                            return Err(Diagnostic::error(span, format!("variant `{vname}` does not have a field named `{n}`"))
                                .label("unknown field")
                                .into());
                        };
                        seen[k] = true;
                        o[k] = (*p).clone();
                    }
                    if rest.is_none() && seen.contains(&false) {
                        let missing: Vec<String> =
                            shape.fields.iter().zip(&seen).filter(|(_, s)| !**s).map(|((n, _), _)| format!("`{n}`")).collect();
                        return Err(Diagnostic::error(
                            span,
                            format!("pattern does not mention field{} {}", super::plural(missing.len()), missing.join(", ")),
                        )
                        .label(format!("missing {}", missing.join(", ")))
                        .help("name every field, or ignore the rest with `..`")
                        .into());
                    }
                    o
                }
                _ => {
                    let elems: Vec<Pat> = pats.iter().map(|(_, p)| (*p).clone()).collect();
                    if shape.kind == ast::StructKind::Named && !elems.is_empty() {
                        return Err(Diagnostic::error(span, format!("`{vname}` has named fields"))
                            .label(format!("write `{} {{ .. }}`", shape.name))
                            .into());
                    }
                    if !fits(elems.len(), rest, hs.len()) {
                        return Err(Diagnostic::error(
                            span,
                            format!(
                                "this pattern has {} field{}, but the corresponding tuple variant has {} field{}",
                                elems.len(),
                                super::plural(elems.len()),
                                hs.len(),
                                super::plural(hs.len())
                            ),
                        )
                        .label(format!("expected {} field{}", hs.len(), super::plural(hs.len())))
                        .into());
                    }
                    spread(&elems, rest, hs.len(), span)
                }
            };
            let (t, pt) = self.fields_test(&ordered, None, &hs, &payload, None, binds, 0)?;
            if let Some(t) = t {
                test = self.and(test, t);
            }
            if let Pt::Ctor(_, s) = pt {
                sub = s;
            }
        } else if !pats.is_empty() {
            return Err(Diagnostic::error(span, format!("`{vname}` has no fields")).label(format!("write `{}`", shape.name)).into());
        }
        Ok((Some(test), Pt::Ctor(v.index, sub)))
    }

    /// The tests of patterns `elems` (with `..` at `rest`) against the components `hs` of
    /// `value`: one constructor with those fields.
    #[allow(clippy::too_many_arguments)]
    fn fields_test(
        &mut self,
        elems: &[Pat],
        rest: Option<usize>,
        hs: &[H],
        value: &CExpr,
        _tag: Option<usize>,
        binds: &mut Vec<Stmt<H>>,
        _depth: u32,
    ) -> CResult<(Option<CExpr>, Pt)> {
        let span = value.span;
        let all = spread(elems, rest, hs.len(), span);
        let mut test: Option<CExpr> = None;
        let mut pts = Vec::with_capacity(hs.len());
        for (k, p) in all.iter().enumerate() {
            let part = Expr { kind: ExprKind::Field(Box::new(value.clone()), k as u32), ty: hs[k], span: p.span() };
            let (t, pt) = self.pat_test(p, &part, binds)?;
            pts.push(pt);
            if let Some(t) = t {
                test = Some(match test {
                    Some(a) => self.and(a, t),
                    None => t,
                });
            }
        }
        Ok((test, Pt::Ctor(0, pts)))
    }

    fn unify_pat(&mut self, want: H, got: H, span: Span) -> CResult<()> {
        if self.u.unify(want, got) {
            return Ok(());
        }
        let (w, g) = (self.u.describe(want), self.u.describe(got));
        Err(Diagnostic::error(span, format!("mismatched types: expected `{w}`, found `{g}`"))
            .label(format!("this pattern is a `{g}`"))
            .note(format!("the value matched is a `{w}`"))
            .into())
    }

    /// `value op x` on scalars (integers, floats, `bool`, C-like enums).
    fn compare(&mut self, op: BinOp, value: CExpr, x: CExpr, span: Span) -> CExpr {
        let b = self.u.known(Ty::Scalar(Scalar::Bool));
        Expr { kind: ExprKind::Binary(op, Box::new(value), Box::new(x)), ty: b, span }
    }

    /// A constant pattern as exhaustiveness sees it: `true`/`false` and C-like variants are
    /// constructors of their finite types.
    fn const_pt(&mut self, x: &CExpr, vty: H) -> Pt {
        match (self.u.ty(vty), &x.kind) {
            (Some(Ty::Scalar(Scalar::Bool)), ExprKind::Lit(ScalarValue::Bool(b))) => Pt::Ctor(*b as usize, Vec::new()),
            (Some(Ty::Enum(e)), ExprKind::Lit(v)) => {
                let d = v.as_i128().unwrap_or(0);
                let k = self.mcx.enums.get(e.id as usize).and_then(|def| def.variants.iter().position(|(_, x)| *x == d));
                k.map(|k| Pt::Ctor(k, Vec::new())).unwrap_or(Pt::Opaque)
            }
            _ => Pt::Opaque,
        }
    }

    /// The constructors of a type, for exhaustiveness.
    fn ctors(&mut self, h: H) -> Ctors {
        if let Some((adt, args)) = self.u.adt_of(h) {
            let def = self.mcx.adts.borrow().def(adt).clone();
            return match &def.shape {
                super::adt::AdtShape::Enum { variants } => Some(
                    variants
                        .iter()
                        .map(|v| {
                            let hs = v.fields.iter().map(|(_, t)| self.u.inst_h(*t, &args, &def.len_exprs)).collect();
                            (variant_text(&def.name, adt_is_option(&def), v), hs)
                        })
                        .collect(),
                ),
                super::adt::AdtShape::Struct { fields, .. } => {
                    let hs = fields.iter().map(|(_, t)| self.u.inst_h(*t, &args, &def.len_exprs)).collect();
                    Some(vec![(format!("{} {{ .. }}", def.name), hs)])
                }
            };
        }
        if let Some(Compound::Tuple(hs)) = self.u.compound(h) {
            return Some(vec![(String::new(), hs)]);
        }
        if let Some(v) = self.struct_view(h) {
            return Some(vec![(format!("{} {{ .. }}", v.name), v.fields.iter().map(|(_, h)| *h).collect())]);
        }
        match self.u.ty(h) {
            Some(Ty::Scalar(Scalar::Bool)) => Some(vec![("false".into(), Vec::new()), ("true".into(), Vec::new())]),
            Some(Ty::Enum(e)) => {
                let def = self.mcx.enums.get(e.id as usize)?.clone();
                let short = def.name.rsplit("::").next().unwrap_or(&def.name).to_string();
                Some(def.variants.iter().map(|(n, _)| (format!("{short}::{n}"), Vec::new())).collect())
            }
            _ => None,
        }
    }

    /// Checks that the arms without guards cover every value of `sty` (an error at the value
    /// naming one that is not, when `exhaustive`), and warns about arms no value reaches.
    pub(super) fn check_coverage(&mut self, rows: &[(Pt, bool, Span)], sty: H, at: Span, exhaustive: bool) -> CResult<()> {
        let mut seen: Vec<Vec<Pt>> = Vec::new();
        for (pt, guarded, span) in rows {
            if self.useful(&seen, std::slice::from_ref(pt), &[sty], 0).is_none() {
                self.mcx.warnings.push((*span, "unreachable pattern: every value it matches is matched by an earlier arm".to_string()));
            }
            if !guarded {
                seen.push(vec![pt.clone()]);
            }
        }
        if !exhaustive {
            return Ok(());
        }
        if let Some(w) = self.useful(&seen, &[Pt::Wild], &[sty], 0) {
            let shown = self.show(&w[0], sty, 0);
            let ty = self.u.describe(sty);
            return Err(Diagnostic::error(at, format!("non-exhaustive patterns: `{shown}` not covered"))
                .label(format!("pattern `{shown}` not covered"))
                .note(format!("the matched value is of type `{ty}`"))
                .help(format!("ensure that all possible cases are being handled by adding a match arm with a wildcard pattern or an explicit pattern as shown: `{shown} => todo!()`"))
                .into());
        }
        Ok(())
    }

    /// Whether `v` matches a value no row matches: such a value's pattern, or `None`
    /// (Maranget's usefulness, with witnesses).
    fn useful(&mut self, rows: &[Vec<Pt>], v: &[Pt], tys: &[H], depth: u32) -> Option<Vec<Pt>> {
        if depth > 64 {
            return None;
        }
        let Some((first, rest)) = v.split_first() else {
            return if rows.is_empty() { Some(Vec::new()) } else { None };
        };
        let ty = tys[0];
        // Rows with an `|` first are one row per alternative.
        let mut expanded: Vec<Vec<Pt>> = Vec::new();
        for r in rows {
            match r.first() {
                Some(Pt::Or(alts)) => {
                    for a in alts {
                        let mut row = vec![a.clone()];
                        row.extend_from_slice(&r[1..]);
                        expanded.push(row);
                    }
                }
                _ => expanded.push(r.clone()),
            }
        }
        let rows = expanded;
        match first {
            Pt::Or(alts) => alts.iter().find_map(|a| {
                let mut vv = vec![a.clone()];
                vv.extend_from_slice(rest);
                self.useful(&rows, &vv, tys, depth + 1)
            }),
            Pt::Ctor(c, args) => {
                let ctors = self.ctors(ty);
                let fields = ctors.as_ref().and_then(|cs| cs.get(*c)).map(|(_, f)| f.clone()).unwrap_or_default();
                let spec = specialize(&rows, *c, fields.len());
                let mut vv = args.clone();
                vv.resize(fields.len(), Pt::Wild);
                vv.extend_from_slice(rest);
                let mut ts = fields.clone();
                ts.extend_from_slice(&tys[1..]);
                let w = self.useful(&spec, &vv, &ts, depth + 1)?;
                let (head, tail) = w.split_at(fields.len());
                let mut out = vec![Pt::Ctor(*c, head.to_vec())];
                out.extend_from_slice(tail);
                Some(out)
            }
            Pt::Opaque => {
                let def: Vec<Vec<Pt>> = rows.iter().filter(|r| matches!(r[0], Pt::Wild)).map(|r| r[1..].to_vec()).collect();
                let w = self.useful(&def, rest, &tys[1..], depth + 1)?;
                let mut out = vec![Pt::Opaque];
                out.extend(w);
                Some(out)
            }
            Pt::Wild => {
                let ctors = self.ctors(ty);
                let used: Vec<usize> = rows.iter().filter_map(|r| if let Pt::Ctor(c, _) = &r[0] { Some(*c) } else { None }).collect();
                match &ctors {
                    Some(cs) if !cs.is_empty() && (0..cs.len()).all(|c| used.contains(&c)) => {
                        for (c, (_, fields)) in cs.iter().enumerate() {
                            let spec = specialize(&rows, c, fields.len());
                            let mut vv = vec![Pt::Wild; fields.len()];
                            vv.extend_from_slice(rest);
                            let mut ts = fields.clone();
                            ts.extend_from_slice(&tys[1..]);
                            if let Some(w) = self.useful(&spec, &vv, &ts, depth + 1) {
                                let (head, tail) = w.split_at(fields.len());
                                let mut out = vec![Pt::Ctor(c, head.to_vec())];
                                out.extend_from_slice(tail);
                                return Some(out);
                            }
                        }
                        None
                    }
                    _ => {
                        let def: Vec<Vec<Pt>> = rows.iter().filter(|r| matches!(r[0], Pt::Wild)).map(|r| r[1..].to_vec()).collect();
                        let w = self.useful(&def, rest, &tys[1..], depth + 1)?;
                        let head = match &ctors {
                            Some(cs) if !cs.is_empty() => {
                                let c = (0..cs.len()).find(|c| !used.contains(c)).unwrap_or(0);
                                Pt::Ctor(c, vec![Pt::Wild; cs[c].1.len()])
                            }
                            _ => Pt::Wild,
                        };
                        let mut out = vec![head];
                        out.extend(w);
                        Some(out)
                    }
                }
            }
        }
    }

    /// A witness pattern as rustc shows it: `None`, `Some(_)`, `Shape::Circle(_)`, `(true, _)`.
    fn show(&mut self, p: &Pt, h: H, depth: u32) -> String {
        if depth > 16 {
            return "_".into();
        }
        match p {
            Pt::Wild | Pt::Opaque | Pt::Or(_) => "_".into(),
            Pt::Ctor(c, args) => {
                let Some(cs) = self.ctors(h) else { return "_".into() };
                let Some((name, fields)) = cs.get(*c).cloned() else { return "_".into() };
                if let Some(Compound::Tuple(_)) = self.u.compound(h) {
                    let parts: Vec<String> = args.iter().zip(&fields).map(|(a, f)| self.show(a, *f, depth + 1)).collect();
                    return format!("({})", parts.join(", "));
                }
                if name.ends_with("{ .. }") || fields.is_empty() || name.ends_with(" { .. }") {
                    return name;
                }
                let parts: Vec<String> = args.iter().zip(&fields).map(|(a, f)| self.show(a, *f, depth + 1)).collect();
                format!("{name}({})", parts.join(", "))
            }
        }
    }
}

/// Whether `n` patterns (with `..` at `rest`) fit `len` components.
fn fits(n: usize, rest: Option<usize>, len: usize) -> bool {
    match rest {
        Some(_) => n <= len,
        None => n == len,
    }
}

/// Patterns `elems` with `..` at `rest` spread over `len` components, `_` for those `..` skips.
fn spread(elems: &[Pat], rest: Option<usize>, len: usize, span: Span) -> Vec<Pat> {
    let mut out = vec![Pat::Wild(span); len];
    for (j, p) in elems.iter().enumerate() {
        let k = match rest {
            Some(r) if j >= r => len - (elems.len() - j),
            _ => j,
        };
        if k < len {
            out[k] = p.clone();
        }
    }
    out
}

/// The rows of `rows` that constructor `c` (of `arity` fields) matches, with its fields in
/// place of the first column.
fn specialize(rows: &[Vec<Pt>], c: usize, arity: usize) -> Vec<Vec<Pt>> {
    let mut out = Vec::new();
    for r in rows {
        match &r[0] {
            Pt::Ctor(d, args) if *d == c => {
                let mut row = args.clone();
                row.resize(arity, Pt::Wild);
                row.extend_from_slice(&r[1..]);
                out.push(row);
            }
            Pt::Wild => {
                let mut row = vec![Pt::Wild; arity];
                row.extend_from_slice(&r[1..]);
                out.push(row);
            }
            _ => {}
        }
    }
    out
}

fn block_of(e: CExpr) -> CBlock {
    Block { stmts: Vec::new(), tail: Some(Box::new(e)) }
}

fn adt_is_option(def: &super::adt::AdtDef) -> bool {
    def.item.is_none()
}

/// How a variant is shown in a witness: `None`, `Some`, `Shape::Circle`, `Shape::Rect { .. }`.
fn variant_text(enum_name: &str, option: bool, v: &super::adt::VariantShape) -> String {
    let short = enum_name.rsplit("::").next().unwrap_or(enum_name);
    let base = if option { v.name.clone() } else { format!("{short}::{}", v.name) };
    if v.kind == ast::StructKind::Named { format!("{base} {{ .. }}") } else { base }
}
