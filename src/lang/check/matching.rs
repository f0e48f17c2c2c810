//! `match`: the scrutinee (an integer, a `bool` or a C-like enum), each arm's pattern as
//! ranges of constants of its type, bindings and guards, and the arms' common type; once types
//! are settled, the patterns' values, exhaustiveness as rustc checks it (E0004, located at the
//! scrutinee, naming what is not covered) and unreachable arms (warnings).

use crate::ir::*;
use crate::lang::ast::{self, Pat};
use crate::lang::diag::Diagnostic;
use crate::lang::names::Res;
use crate::span::Span;

use super::CResult;
use super::body::{CExpr, FnCx};
use super::fold::int_range;
use super::unify::H;

type Ranges = Vec<(CExpr, CExpr)>;

impl<'c, 'm> FnCx<'c, 'm> {
    pub(super) fn match_expr(&mut self, scrutinee: &ast::Expr, arms: &[ast::Arm], span: Span) -> CResult<CExpr> {
        if let Some((p, h)) = self.mut_ref_place(scrutinee)?
            && self.needs_pattern_match(h, arms)
        {
            // `match self` in a `&mut self` method: the arms' bindings are its parts.
            let whole = self.operand_value(super::aggregates::Operand::Place(p, h), scrutinee.span);
            return self.pattern_match_in(None, whole, arms, span);
        }
        let s = self.expr(scrutinee)?;
        if self.needs_pattern_match(s.ty, arms) {
            return self.pattern_match(s, arms, span);
        }
        match self.u.ty(s.ty) {
            Some(Ty::Enum(_) | Ty::Never) => {}
            Some(Ty::Scalar(sc)) if sc.is_int() || sc == Scalar::Bool => {}
            Some(t @ (Ty::Scalar(_) | Ty::Array(_) | Ty::Unit | Ty::Param(_) | Ty::ParamArray(_) | Ty::Agg(_))) => {
                let name = self.u.ty_name(t);
                return Err(Diagnostic::error(scrutinee.span, format!("`match` on a value of type `{name}` is not supported"))
                    .label(format!("`{name}`"))
                    .help("kernels match on integers, `bool` and C-like enums; compare other values with `if`")
                    .into());
            }
            None => self.need(s.ty, super::unify::Class::IntOrBool, scrutinee.span, "`match`")?,
        }
        let mut out = Vec::new();
        let mut ty: Option<H> = None;
        for arm in arms {
            let mark = self.scope.len();
            let r = self.arm(arm, s.ty);
            self.scope.truncate(mark);
            let a = r?;
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
            out.push(a);
        }
        let ty = ty.unwrap_or_else(|| self.u.known(Ty::Never));
        Ok(Expr { kind: ExprKind::Match(Box::new(s), out), ty, span })
    }

    fn arm(&mut self, arm: &ast::Arm, sty: H) -> CResult<MatchArm<H>> {
        let (ranges, binding) = self.pattern(&arm.pat, sty, true)?;
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
        Ok(MatchArm { ranges, binding, guard, body, pat_span: arm.pat.span() })
    }

    /// A pattern as ranges of the scrutinee's type (`None`: every value) and the local it binds.
    fn pattern(&mut self, p: &Pat, sty: H, top: bool) -> CResult<(Option<Ranges>, Option<LocalId>)> {
        match p {
            Pat::Wild(_) => Ok((None, None)),
            Pat::Bind { name, mutable, sub } => {
                // A name that is a constant or a unit variant in scope is that value, as in Rust.
                if sub.is_none() && !*mutable && self.lookup_local(&name.name).is_none() {
                    let res = self.mcx.m.scopes.value(self.module, &name.name);
                    let is_const = |i: usize| matches!(self.mcx.m.items[i], ast::Item::Const(_));
                    if matches!(res, Some(Res::Variant(..))) || matches!(res, Some(Res::Item(i)) if is_const(i)) {
                        let e = ast::Expr { kind: ast::ExprKind::Path(name.clone()), span: name.span };
                        return Ok((Some(self.const_pattern(&e, sty)?), None));
                    }
                }
                if !top {
                    return Err(Diagnostic::error(name.span, "bindings inside `|` or `@` patterns are not supported")
                        .label("binds a name here")
                        .help(format!("bind the whole pattern: `{} @ (a | b)`", name.name))
                        .into());
                }
                let ranges = match sub {
                    Some(s) => self.pattern(s, sty, false)?.0,
                    None => None,
                };
                let l = self.declare(name, sty, *mutable, false);
                Ok((ranges, Some(l)))
            }
            Pat::Const(e) => Ok((Some(self.const_pattern(e, sty)?), None)),
            Pat::Range { lo, hi, inclusive, span } => {
                if let Some(Ty::Enum(_)) = self.u.ty(sty) {
                    return Err(Diagnostic::error(*span, "range patterns are not allowed on enums")
                        .label("a range")
                        .help("list the variants with `|`: `Mode::A | Mode::B`")
                        .into());
                }
                let bound = |me: &mut Self, b: &Option<Box<ast::Expr>>| -> CResult<CExpr> {
                    match b {
                        Some(e) => {
                            let x = me.expr(e)?;
                            me.unify_or(x.span, sty, x.ty, " (the type of the value matched)")?;
                            Ok(x)
                        }
                        // An open end: the type's limit, filled in once the type is settled.
                        None => Ok(Expr { kind: ExprKind::Unit, ty: sty, span: *span }),
                    }
                };
                let l = bound(self, lo)?;
                let mut h = bound(self, hi)?;
                if !*inclusive && hi.is_some() {
                    // `a..b` is `a..=b - 1`, folded with the other bounds.
                    let one = Expr {
                        kind: ExprKind::PendingLit(PendingLit {
                            int: Some(1),
                            neg: false,
                            f64: 1.0,
                            f32: 1.0,
                            f16: crate::float16::f16::ONE,
                            bf16: crate::float16::bf16::ONE,
                        }),
                        ty: sty,
                        span: h.span,
                    };
                    let sp = h.span;
                    h = Expr { kind: ExprKind::Binary(BinOp::Sub, Box::new(h), Box::new(one)), ty: sty, span: sp };
                }
                Ok((Some(vec![(l, h)]), None))
            }
            Pat::TupleStruct { span, .. } | Pat::Struct { span, .. } | Pat::Tuple { span, .. } | Pat::Ref(_, span) => {
                let d = self.u.describe(sty);
                Err(Diagnostic::error(
                    *span,
                    format!("mismatched types: this pattern takes a value apart, but the value matched is a `{d}`"),
                )
                .label("expected a constant, a range or a name")
                .into())
            }
            Pat::Or(alts, _) => {
                let mut all = Vec::new();
                for a in alts {
                    match self.pattern(a, sty, false)? {
                        (Some(r), _) => all.extend(r),
                        (None, _) => return Ok((None, None)),
                    }
                }
                Ok((Some(all), None))
            }
        }
    }

    fn const_pattern(&mut self, e: &ast::Expr, sty: H) -> CResult<Ranges> {
        let x = self.expr(e)?;
        if !self.u.unify(sty, x.ty) {
            let (want, got) = (self.u.describe(sty), self.u.describe(x.ty));
            return Err(Diagnostic::error(e.span, format!("mismatched types: expected `{want}`, found `{got}`"))
                .label(format!("this pattern is a `{got}`"))
                .note(format!("the value matched is a `{want}`"))
                .into());
        }
        Ok(vec![(x.clone(), x)])
    }
}

/// The values of a resolved pattern bound: a literal, `a - 1` of literals (an exclusive end),
/// or an open end (`None`).
fn bound_value(e: &Expr) -> Result<Option<i128>, Span> {
    match &e.kind {
        ExprKind::Lit(v) => v.as_i128().map(Some).ok_or(e.span),
        ExprKind::Unit => Ok(None),
        ExprKind::Binary(BinOp::Sub, a, b) => match (bound_value(a)?, bound_value(b)?) {
            (Some(x), Some(y)) => Ok(Some(x - y)),
            _ => Err(e.span),
        },
        _ => Err(e.span),
    }
}

/// Inclusive ranges of values, sorted and merged.
fn normalize(mut v: Vec<(i128, i128)>) -> Vec<(i128, i128)> {
    v.sort();
    let mut out: Vec<(i128, i128)> = Vec::new();
    for (lo, hi) in v {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// `have` minus `take`, both normalized.
fn subtract(have: &[(i128, i128)], take: &[(i128, i128)]) -> Vec<(i128, i128)> {
    let mut out = Vec::new();
    for &(mut lo, hi) in have {
        for &(a, b) in take {
            if b < lo || a > hi {
                continue;
            }
            if a > lo {
                out.push((lo, a - 1));
            }
            lo = b.saturating_add(1);
            if lo > hi {
                break;
            }
        }
        if lo <= hi {
            out.push((lo, hi));
        }
    }
    out
}

/// What a `match` of type `ty` may see: inclusive ranges (an enum's discriminants one by one).
pub(super) fn domain(ty: Ty, enums: &[EnumDef]) -> Vec<(i128, i128)> {
    match ty {
        Ty::Scalar(Scalar::Bool) => vec![(0, 1)],
        Ty::Scalar(s) if s.is_int() => vec![int_range(s)],
        Ty::Enum(e) => normalize(enums.get(e.id as usize).map(|d| d.variants.iter().map(|(_, v)| (*v, *v)).collect()).unwrap_or_default()),
        _ => Vec::new(),
    }
}

/// A value or range as rustc prints it in E0004: `5_u8`, `i32::MIN..=-1_i32`, `false`,
/// `Mode::Mul`.
fn show(ty: Ty, lo: i128, hi: i128, enums: &[EnumDef]) -> Vec<String> {
    match ty {
        Ty::Scalar(Scalar::Bool) => (lo..=hi).map(|v| (v != 0).to_string()).collect(),
        Ty::Enum(e) => {
            let def = &enums[e.id as usize];
            def.variants
                .iter()
                .filter(|(_, v)| *v >= lo && *v <= hi)
                .map(|(n, _)| format!("{}::{n}", def.name.rsplit("::").next().unwrap_or(&def.name)))
                .collect()
        }
        Ty::Scalar(s) => {
            let (min, max) = int_range(s);
            let one = |v: i128| {
                if v == min && s.is_signed() || v == max {
                    format!("{s}::{}", if v == min { "MIN" } else { "MAX" })
                } else {
                    format!("{v}_{s}")
                }
            };
            if lo == hi { vec![one(lo)] } else { vec![format!("{}..={}", one(lo), one(hi))] }
        }
        _ => Vec::new(),
    }
}

/// Once types are settled: turns each pattern's bounds into literals, checks that the arms
/// cover every value (E0004 at the scrutinee) and warns about arms no value reaches.
pub(super) fn check_match(scrutinee: &Expr, arms: &mut [MatchArm], enums: &[EnumDef], warnings: &mut Vec<(Span, String)>) -> CResult<()> {
    let ty = scrutinee.ty;
    if ty == Ty::Never {
        return Ok(());
    }
    let dom = domain(ty, enums);
    let Some(s) = ty.scalar() else { return Ok(()) };
    let (tmin, tmax) = if s == Scalar::Bool { (0, 1) } else { int_range(s) };
    let mut covered: Vec<(i128, i128)> = Vec::new();
    for arm in arms.iter_mut() {
        let mut values: Vec<(i128, i128)> = Vec::new();
        let first_span = arm.pat_span;
        if let Some(ranges) = &mut arm.ranges {
            for (lo, hi) in ranges.iter_mut() {
                let bad = |at: Span| -> Box<Diagnostic> {
                    Diagnostic::error(at, "expected a constant in this pattern").label("not a constant").into()
                };
                let a = bound_value(lo).map_err(bad)?;
                let b = bound_value(hi).map_err(bad)?;
                let exclusive = matches!(hi.kind, ExprKind::Binary(..));
                let (a, b) = (a.unwrap_or(tmin), b.unwrap_or(tmax));
                if a > b || b < tmin || a > tmax {
                    let span = lo.span.to(hi.span);
                    let d = if exclusive {
                        Diagnostic::error(span, "lower range bound must be less than upper").label("empty range")
                    } else {
                        Diagnostic::error(span, "lower range bound must be less than or equal to upper")
                            .label("lower bound larger than upper bound")
                    };
                    return Err(d.into());
                }
                values.push((a, b));
                *lo = Expr { kind: ExprKind::Lit(value_of(s, a)), ty, span: lo.span };
                *hi = Expr { kind: ExprKind::Lit(value_of(s, b)), ty, span: hi.span };
            }
        } else {
            values = vec![(tmin, tmax)];
        }
        let values = normalize(values);
        let reachable = subtract(&subtract(&values, &covered), &subtract(&[(tmin, tmax)], &dom));
        if reachable.is_empty() {
            warnings.push((first_span, "unreachable pattern: every value it matches is matched by an earlier arm".to_string()));
        }
        if arm.guard.is_none() {
            covered = normalize(covered.into_iter().chain(values).collect());
        }
    }
    let missing = subtract(&dom, &covered);
    if missing.is_empty() {
        return Ok(());
    }
    let mut shown: Vec<String> = Vec::new();
    for (lo, hi) in &missing {
        shown.extend(show(ty, *lo, *hi, enums));
    }
    let quoted: Vec<String> = shown.iter().take(3).map(|x| format!("`{x}`")).collect();
    let list = match (quoted.len(), shown.len()) {
        (1, 1) => quoted[0].clone(),
        (_, n) if n <= 3 => format!("{} and {}", quoted[..quoted.len() - 1].join(", "), quoted[quoted.len() - 1]),
        (_, n) => format!("{} and {} more", quoted.join(", "), n - 3),
    };
    let plural = if shown.len() == 1 { "pattern" } else { "patterns" };
    Err(Diagnostic::error(scrutinee.span, format!("non-exhaustive patterns: {list} not covered"))
        .label(format!("{plural} {list} not covered"))
        .note(format!("the matched value is of type `{}`", type_name(ty, enums)))
        .help("ensure that all possible cases are being handled by adding a match arm with a wildcard pattern, a match arm with multiple or-patterns as shown, or multiple match arms")
        .into())
}

fn type_name(ty: Ty, enums: &[EnumDef]) -> String {
    match ty {
        Ty::Enum(e) => enums.get(e.id as usize).map(|d| d.name.clone()).unwrap_or_else(|| ty.to_string()),
        t => t.to_string(),
    }
}

fn value_of(s: Scalar, v: i128) -> ScalarValue {
    if s == Scalar::Bool { ScalarValue::Bool(v != 0) } else { super::fold::int_value(s, v) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_subtract_and_merge() {
        assert_eq!(normalize(vec![(5, 9), (0, 3), (4, 4), (20, 30)]), vec![(0, 9), (20, 30)]);
        assert_eq!(subtract(&[(0, 255)], &[(0, 9), (20, 30)]), vec![(10, 19), (31, 255)]);
        assert_eq!(subtract(&[(0, 10)], &[(0, 10)]), Vec::<(i128, i128)>::new());
        assert_eq!(subtract(&[(-5, 5)], &[(-10, -3), (3, 10)]), vec![(-2, 2)]);
    }

    #[test]
    fn uncovered_values_print_as_rustc_does() {
        assert_eq!(show(Ty::Scalar(Scalar::I32), i32::MIN as i128, -1, &[]), vec!["i32::MIN..=-1_i32"]);
        assert_eq!(show(Ty::Scalar(Scalar::U8), 5, 255, &[]), vec!["5_u8..=u8::MAX"]);
        assert_eq!(show(Ty::Scalar(Scalar::U8), 7, 7, &[]), vec!["7_u8"]);
        assert_eq!(show(Ty::Scalar(Scalar::Bool), 0, 0, &[]), vec!["false"]);
    }
}
