//! `match` expressions and their patterns: literals, constants and enum variants, ranges
//! (`a..=b`, `a..b`, `a..`, `..=b`), `|` alternatives, `_`, bindings (`n`, `n @ 1..=9`) and
//! guards; the explanation for every other pattern.

use crate::ir::UnOp;
use crate::lang::ast::*;
use crate::lang::diag::Diagnostic;

use super::expr::ident;
use super::items::check_attr;
use super::literals::lit;
use super::spans::{expr_span, spn};
use super::{Lower, PResult, unsupported};

impl Lower {
    pub(super) fn match_expr(&mut self, m: &syn::ExprMatch) -> PResult<ExprKind> {
        let scrutinee = self.expr(&m.expr)?;
        let mut arms = Vec::new();
        for a in &m.arms {
            for at in &a.attrs {
                check_attr(at, false)?;
            }
            let pat = self.pattern(&a.pat)?;
            let guard = match &a.guard {
                Some((_, g)) => Some(self.expr(g)?),
                None => None,
            };
            let body = self.expr(&a.body)?;
            let span = pat.span().to(body.span);
            arms.push(Arm { pat, guard, body, span });
        }
        Ok(ExprKind::Match(Box::new(scrutinee), arms))
    }

    /// `matches!(value, pattern)` and `matches!(value, pattern if guard)`: a `match` giving
    /// `true` for the pattern and `false` otherwise.
    pub(super) fn matches_macro(&mut self, mac: &syn::Macro, span: crate::span::Span) -> PResult<ExprKind> {
        let parsed = mac.parse_body_with(|input: syn::parse::ParseStream| {
            let value: syn::Expr = input.parse()?;
            input.parse::<syn::Token![,]>()?;
            let pat = syn::Pat::parse_multi_with_leading_vert(input)?;
            let guard = if input.peek(syn::Token![if]) {
                input.parse::<syn::Token![if]>()?;
                Some(input.parse::<syn::Expr>()?)
            } else {
                None
            };
            if input.peek(syn::Token![,]) {
                input.parse::<syn::Token![,]>()?;
            }
            Ok((value, pat, guard))
        });
        let (value, pat, guard) = parsed.map_err(|e| {
            Diagnostic::error(super::spans::sp(e.span()), format!("malformed `matches!`: {e}"))
                .label("here")
                .help("write `matches!(value, pattern)`")
        })?;
        let scrutinee = self.expr(&value)?;
        let pat = self.pattern(&pat)?;
        let guard = match &guard {
            Some(g) => Some(self.expr(g)?),
            None => None,
        };
        let lit = |b: bool| Expr { kind: ExprKind::Lit(Lit::Bool(b)), span };
        let arms =
            vec![Arm { span: pat.span(), pat, guard, body: lit(true) }, Arm { pat: Pat::Wild(span), guard: None, body: lit(false), span }];
        Ok(ExprKind::Match(Box::new(scrutinee), arms))
    }

    pub(super) fn pattern(&mut self, p: &syn::Pat) -> PResult<Pat> {
        let span = spn(p);
        self.enter(span)?;
        let r = self.pattern_inner(p);
        self.depth -= 1;
        r
    }

    fn pattern_inner(&mut self, p: &syn::Pat) -> PResult<Pat> {
        use syn::Pat as P;
        let span = spn(p);
        Ok(match p {
            P::Wild(_) => Pat::Wild(span),
            P::Paren(x) => return self.pattern(&x.pat),
            P::Or(o) => Pat::Or(o.cases.iter().map(|c| self.pattern(c)).collect::<PResult<_>>()?, span),
            P::Ident(i) => {
                if let Some(r) = &i.by_ref {
                    return Err(unsupported(spn(r), "`ref` bindings", "bind by value").into());
                }
                let sub = match &i.subpat {
                    Some((_, s)) => Some(Box::new(self.pattern(s)?)),
                    None => None,
                };
                Pat::Bind { name: ident(&i.ident), mutable: i.mutability.is_some(), sub }
            }
            P::Lit(l) => Pat::Const(self.pat_lit(l)?),
            P::Path(path) => Pat::Const(self.expr(&syn::Expr::Path(path.clone()))?),
            P::Range(r) => {
                let bound = |me: &mut Self, e: &Option<Box<syn::Expr>>| -> PResult<Option<Box<Expr>>> {
                    Ok(match e.as_deref() {
                        Some(syn::Expr::Lit(l)) => Some(Box::new(me.pat_lit(l)?)),
                        Some(x) => Some(Box::new(me.expr(x)?)),
                        None => None,
                    })
                };
                let lo = bound(self, &r.start)?;
                let hi = bound(self, &r.end)?;
                Pat::Range { lo, hi, inclusive: matches!(r.limits, syn::RangeLimits::Closed(_)), span }
            }
            P::Const(c) => Pat::Const(self.expr(&syn::Expr::Const(c.clone()))?),
            P::Tuple(t) => {
                let (elems, rest) = self.pattern_list(t.elems.iter(), Self::pattern)?;
                Pat::Tuple { elems, rest, span }
            }
            P::TupleStruct(t) => {
                if t.qself.is_some() {
                    return Err(unsupported(span, "qualified paths", "write the variant's path").into());
                }
                let (elems, rest) = self.pattern_list(t.elems.iter(), Self::pattern)?;
                Pat::TupleStruct { path: pattern_path(&t.path)?, elems, rest, span }
            }
            P::Struct(st) => {
                if st.qself.is_some() {
                    return Err(unsupported(span, "qualified paths", "write the variant's path").into());
                }
                let mut fields = Vec::new();
                for f in &st.fields {
                    let syn::Member::Named(name) = &f.member else {
                        return Err(unsupported(spn(&f.member), "numbered fields", "name the field").into());
                    };
                    fields.push((ident(name), self.pattern(&f.pat)?));
                }
                Pat::Struct { path: pattern_path(&st.path)?, fields, rest: st.rest.is_some(), span }
            }
            P::Reference(r) => Pat::Ref(Box::new(self.pattern(&r.pat)?), span),
            P::Slice(_) | P::Rest(_) => return Err(unsupported(span, "slice patterns", "match on one value").into()),
            P::Type(_) => {
                return Err(Diagnostic::error(span, "type ascription is not allowed in patterns").label("remove the type").into());
            }
            P::Macro(m) => return Err(unsupported(spn(&m.mac.path), "macros", "write the pattern out").into()),
            _ => return Err(unsupported(span, "this pattern", "use literals, ranges, `|`, `_`, names and enum variants").into()),
        })
    }

    /// The patterns of a tuple or tuple struct, each lowered by `one` (`pattern` in a `match`,
    /// `let_pat` in a `let`), and where `..` is among them.
    fn pattern_list<'p, T>(
        &mut self,
        list: impl Iterator<Item = &'p syn::Pat>,
        one: fn(&mut Self, &syn::Pat) -> PResult<T>,
    ) -> PResult<(Vec<T>, Option<usize>)> {
        let mut elems = Vec::new();
        let mut rest = None;
        for e in list {
            if let syn::Pat::Rest(r) = e {
                if rest.is_some() {
                    return Err(Diagnostic::error(spn(r), "`..` can only be used once per tuple pattern")
                        .label("can only be used once per tuple pattern")
                        .into());
                }
                rest = Some(elems.len());
                continue;
            }
            elems.push(one(self, e)?);
        }
        Ok((elems, rest))
    }

    /// A literal pattern; syn keeps the `-` of a negative number inside the literal's digits.
    fn pat_lit(&mut self, l: &syn::ExprLit) -> PResult<Expr> {
        for a in &l.attrs {
            check_attr(a, false)?;
        }
        let span = expr_span(&syn::Expr::Lit(l.clone()));
        let digits = match &l.lit {
            syn::Lit::Int(i) => Some(i.base10_digits().to_string()),
            syn::Lit::Float(f) => Some(f.base10_digits().to_string()),
            _ => None,
        };
        if let Some(d) = digits
            && let Some(abs) = d.strip_prefix('-')
        {
            let positive: syn::Lit = match &l.lit {
                syn::Lit::Int(i) => syn::Lit::Int(syn::LitInt::new(&format!("{abs}{}", i.suffix()), i.span())),
                syn::Lit::Float(f) => syn::Lit::Float(syn::LitFloat::new(&format!("{abs}{}", f.suffix()), f.span())),
                other => other.clone(),
            };
            let inner = Expr { kind: ExprKind::Lit(lit(&positive)?), span };
            return Ok(Expr { kind: ExprKind::Unary(UnOp::Neg, Box::new(inner)), span });
        }
        Ok(Expr { kind: ExprKind::Lit(lit(&l.lit)?), span })
    }
}

impl Lower {
    /// The pattern of a `let` or a `for` over an array: a binding, `_`, or a tuple or struct
    /// pattern that takes the value apart (nested).
    pub(super) fn let_pat(&mut self, p: &syn::Pat) -> PResult<LetPat> {
        match p {
            syn::Pat::Ident(_) => {
                let (name, mutable) = self.binding_pat(p)?;
                Ok(LetPat::Bind { name, mutable })
            }
            syn::Pat::Wild(w) => Ok(LetPat::Wild(spn(w))),
            syn::Pat::Paren(pp) => self.let_pat(&pp.pat),
            // `&x`, `&(a, b)`: the value behind a reference is the value.
            syn::Pat::Reference(r) if r.mutability.is_none() => self.let_pat(&r.pat),
            syn::Pat::Tuple(t) => {
                let (elems, rest) = self.pattern_list(t.elems.iter(), Self::let_pat)?;
                Ok(LetPat::Tuple { elems, rest, span: spn(t) })
            }
            syn::Pat::Struct(s) => {
                if s.qself.is_some() {
                    return Err(unsupported(spn(s), "qualified paths", "write the struct's name").into());
                }
                let path = pattern_path(&s.path)?;
                let mut fields = Vec::new();
                for f in &s.fields {
                    let name = match &f.member {
                        syn::Member::Named(name) => ident(name),
                        syn::Member::Unnamed(i) => Ident { name: i.index.to_string(), span: spn(i) },
                    };
                    fields.push((name, self.let_pat(&f.pat)?));
                }
                Ok(LetPat::Struct { path, fields, rest: s.rest.is_some(), span: spn(s) })
            }
            syn::Pat::TupleStruct(t) => {
                if t.qself.is_some() {
                    return Err(unsupported(spn(t), "qualified paths", "write the struct's name").into());
                }
                let (elems, rest) = self.pattern_list(t.elems.iter(), Self::let_pat)?;
                Ok(LetPat::TupleStruct { path: pattern_path(&t.path)?, elems, rest, span: spn(t) })
            }
            syn::Pat::Slice(s) => Err(unsupported(spn(s), "slice patterns", "index the array: `let a = xs[0];`").into()),
            // `&x`: references are values in kernels.
            syn::Pat::Reference(r) => self.let_pat(&r.pat),
            other => Err(unsupported(spn(other), "this pattern", "bind a name, `_`, or take a tuple or struct apart").into()),
        }
    }
}

/// The path of a struct or variant pattern (`Some`, `Shape::Circle`); generic arguments on it
/// change nothing (the scrutinee's type gives them).
fn pattern_path(p: &syn::Path) -> PResult<Vec<Ident>> {
    if p.leading_colon.is_some() {
        return Err(unsupported(spn(p), "paths from the crate root `::`", "write the path from a name in scope").into());
    }
    Ok(p.segments.iter().map(|s| ident(&s.ident)).collect())
}
