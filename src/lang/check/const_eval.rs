//! `const fn` called in a constant expression (a `const` item, an array length): the function
//! is checked as any function is (in a context of its own, so nothing of it joins the program
//! being built), then its checked body is run here, on the values the arguments fold to, with
//! Rust's constant semantics (an overflow is an error, as rustc's is) and a bound on the steps.

use crate::ir::*;
use crate::lang::ast::{self, Item};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::fold::{fold_binary, fold_cast, fold_unary};
use super::items::ModuleCx;

/// Steps a constant's evaluation may take (each expression evaluated is one).
const FUEL: u64 = 10_000_000;

/// A value while a constant is evaluated.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Unit,
    Scalar(ScalarValue),
    Agg(Vec<Val>),
}

/// How evaluation leaves an expression other than by its value.
enum Flow {
    Break(LoopId, Val),
    Continue(LoopId),
    Return(Val),
    Error(String, Span),
}

type Ev<T> = Result<T, Flow>;

struct Interp<'a> {
    funcs: &'a [Option<Func>],
    types: &'a Types,
    fuel: u64,
    depth: u32,
}

impl<'m> ModuleCx<'m> {
    /// The value of a call of the function named `path` (a `const fn`) on `args`, in a
    /// constant expression of `module`; `expected` types the result.
    pub(super) fn eval_const_call(
        &mut self,
        path: &[ast::Ident],
        args: &[ast::Expr],
        module: ast::ModId,
        span: Span,
    ) -> CResult<ScalarValue> {
        let res = if path.len() == 1 { self.m.scopes.value(module, &path[0].name) } else { self.m.scopes.path(self.m, module, path)?.0 };
        let name = path.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::");
        let Some(crate::lang::names::Res::Item(i)) = res else {
            return Err(Diagnostic::error(span, format!("cannot find function `{name}`")).label("not found").into());
        };
        let Item::Fn(f) = &self.m.items[i] else {
            return Err(Diagnostic::error(span, format!("`{name}` is not a function")).label("not callable").into());
        };
        if !f.is_const {
            return Err(Diagnostic::error(span, format!("cannot call non-const fn `{name}` in constants"))
                .label("not a `const fn`")
                .secondary(f.sig_span, "declared here")
                .help(format!("declare it `const fn {}(..)`", f.name.name))
                .note("calls in constants are limited to constant functions")
                .into());
        }
        if f.is_generic() {
            return Err(Diagnostic::error(span, format!("a generic `const fn` (`{name}`) is not supported in a constant"))
                .label("generic")
                .into());
        }
        if f.params.len() != args.len() {
            return Err(Diagnostic::error(span, format!("`{name}` takes {} arguments but {} were supplied", f.params.len(), args.len()))
                .label("here")
                .into());
        }
        let mut values = Vec::with_capacity(args.len());
        for (a, p) in args.iter().zip(&f.params) {
            let expected = match &p.ty {
                Some(ast::TypeExpr::Scalar(s, _)) => Some(*s),
                _ => None,
            };
            values.push(Val::Scalar(self.eval_const(a, expected, module)?));
        }
        let mut sub = ModuleCx::new(self.m, self.env);
        sub.in_progress.clone_from(&self.in_progress);
        let id = sub.ensure_fn(f, Some(span))?;
        let types = sub.types.borrow().clone();
        let mut it = Interp { funcs: &sub.funcs, types: &types, fuel: FUEL, depth: 0 };
        match it.call(id, values, span) {
            Ok(Val::Scalar(v)) => Ok(v),
            Ok(_) => Err(Diagnostic::error(span, format!("`{name}` does not give a number")).label("expected a scalar").into()),
            Err(Flow::Error(msg, at)) => Err(Diagnostic::error(span, format!("evaluation of constant value failed: {msg}"))
                .label("in this call")
                .secondary(at, "here")
                .into()),
            Err(_) => Err(Diagnostic::error(span, "evaluation of constant value failed").label("here").into()),
        }
    }
}

impl Interp<'_> {
    fn err<T>(&self, msg: impl Into<String>, at: Span) -> Ev<T> {
        Err(Flow::Error(msg.into(), at))
    }

    fn call(&mut self, id: FuncId, args: Vec<Val>, span: Span) -> Ev<Val> {
        if self.depth > 64 {
            return self.err("calls nest too deeply", span);
        }
        let Some(Some(f)) = self.funcs.get(id) else { return self.err("a call of a function that is not a `const fn`", span) };
        let mut locals = vec![Val::Unit; f.locals.len()];
        for (k, a) in args.into_iter().enumerate() {
            locals[k] = a;
        }
        self.depth += 1;
        let r = self.block(&f.body, &mut locals);
        self.depth -= 1;
        match r {
            Ok(v) | Err(Flow::Return(v)) => Ok(v),
            Err(e) => Err(e),
        }
    }

    fn block(&mut self, b: &Block, l: &mut [Val]) -> Ev<Val> {
        for s in &b.stmts {
            match s {
                Stmt::Let(id, Some(e)) => l[*id] = self.expr(e, l)?,
                Stmt::Let(_, None) => {}
                Stmt::Expr(e) => {
                    self.expr(e, l)?;
                }
            }
        }
        match &b.tail {
            Some(t) => self.expr(t, l),
            None => Ok(Val::Unit),
        }
    }

    fn scalar(&mut self, e: &Expr, l: &mut [Val]) -> Ev<ScalarValue> {
        match self.expr(e, l)? {
            Val::Scalar(v) => Ok(v),
            _ => self.err("expected a number", e.span),
        }
    }

    fn zero(&self, t: Ty, depth: u32) -> Val {
        if depth > 64 {
            return Val::Unit;
        }
        match t {
            Ty::Scalar(Scalar::Bool) => Val::Scalar(ScalarValue::Bool(false)),
            Ty::Scalar(s) => Val::Scalar(ScalarValue::from_le_bytes(s, &vec![0; s.size()]).unwrap_or(ScalarValue::Bool(false))),
            Ty::Enum(e) => Val::Scalar(ScalarValue::Int(e.repr, 0)),
            Ty::Agg(id) => Val::Agg(self.types.components(id).into_iter().map(|c| self.zero(c, depth + 1)).collect()),
            _ => Val::Unit,
        }
    }

    fn expr(&mut self, e: &Expr, l: &mut [Val]) -> Ev<Val> {
        if self.fuel == 0 {
            return self.err(format!("it took more than {FUEL} steps"), e.span);
        }
        self.fuel -= 1;
        let span = e.span;
        use ExprKind as K;
        Ok(match &e.kind {
            K::Lit(v) => Val::Scalar(*v),
            K::Unit => Val::Unit,
            K::Zeroed => self.zero(e.ty, 0),
            K::Local(x) => l[*x].clone(),
            K::Unary(op, x) => {
                let v = self.scalar(x, l)?;
                match fold_unary(*op, v) {
                    Some(r) => Val::Scalar(r),
                    None => return self.err("attempt to negate with overflow", span),
                }
            }
            K::Binary(op, a, b) => {
                let (x, y) = (self.scalar(a, l)?, self.scalar(b, l)?);
                match fold_binary(*op, x, y) {
                    Ok(r) => Val::Scalar(r),
                    Err(m) => return self.err(m, span),
                }
            }
            K::Logic(op, a, b) => {
                let x = self.scalar(a, l)? == ScalarValue::Bool(true);
                let v = match op {
                    LogicOp::And => x && self.scalar(b, l)? == ScalarValue::Bool(true),
                    LogicOp::Or => x || self.scalar(b, l)? == ScalarValue::Bool(true),
                };
                Val::Scalar(ScalarValue::Bool(v))
            }
            K::Cast(x) => {
                let v = self.scalar(x, l)?;
                let Some(to) = e.ty.scalar() else { return self.err("a cast to a non-number", span) };
                match fold_cast(v, to) {
                    Some(r) => Val::Scalar(r),
                    None => return self.err("an invalid cast", span),
                }
            }
            K::Aggregate { parts, base } => {
                let mut out = match base {
                    Some(b) => match self.expr(b, l)? {
                        Val::Agg(v) => v,
                        _ => return self.err("a struct update of a non-struct", span),
                    },
                    None => match self.zero(e.ty, 0) {
                        Val::Agg(v) => v,
                        _ => Vec::new(),
                    },
                };
                for (k, x) in parts {
                    let v = self.expr(x, l)?;
                    if let Some(slot) = out.get_mut(*k as usize) {
                        *slot = v;
                    }
                }
                Val::Agg(out)
            }
            K::Repeat(x) => {
                let v = self.expr(x, l)?;
                let n = match e.ty {
                    Ty::Agg(id) => self.types.components(id).len(),
                    _ => 0,
                };
                Val::Agg(vec![v; n])
            }
            K::Field(x, k) => match self.expr(x, l)? {
                Val::Agg(v) => v.get(*k as usize).cloned().unwrap_or(Val::Unit),
                _ => return self.err("a field of a non-struct", span),
            },
            K::Elem(a, i) => {
                let arr = self.expr(a, l)?;
                let i = self.scalar(i, l)?.as_i128().unwrap_or(0);
                match arr {
                    Val::Agg(v) if !v.is_empty() => {
                        let k = (i.max(0) as usize).min(v.len() - 1);
                        v[k].clone()
                    }
                    _ => return self.err("an element of a non-array", span),
                }
            }
            K::Assign(p, v) => {
                let v = self.expr(v, l)?;
                self.store(p, v, l)?;
                Val::Unit
            }
            K::CompoundAssign(op, p, v) => {
                let y = self.scalar(v, l)?;
                let x = match self.load(p, l)? {
                    Val::Scalar(x) => x,
                    _ => return self.err("expected a number", span),
                };
                match fold_binary(*op, x, y) {
                    Ok(r) => self.store(p, Val::Scalar(r), l)?,
                    Err(m) => return self.err(m, span),
                }
                Val::Unit
            }
            K::Call(id, args) => {
                let mut vs = Vec::with_capacity(args.len());
                for a in args {
                    vs.push(self.expr(a, l)?);
                }
                self.call(*id, vs, span)?
            }
            K::If(c, t, f) => {
                if self.scalar(c, l)? == ScalarValue::Bool(true) {
                    self.block(t, l)?
                } else {
                    match f {
                        Some(f) => self.block(f, l)?,
                        None => Val::Unit,
                    }
                }
            }
            K::Block(b) => self.block(b, l)?,
            K::While(id, c, b) => {
                while self.scalar(c, l)? == ScalarValue::Bool(true) {
                    match self.block(b, l) {
                        Ok(_) => {}
                        Err(Flow::Break(x, _)) if x == *id => break,
                        Err(Flow::Continue(x)) if x == *id => {}
                        Err(f) => return Err(f),
                    }
                }
                Val::Unit
            }
            K::Loop(id, b) => loop {
                match self.block(b, l) {
                    Ok(_) => {}
                    Err(Flow::Break(x, v)) if x == *id => break v,
                    Err(Flow::Continue(x)) if x == *id => {}
                    Err(f) => return Err(f),
                }
            },
            K::For { id, var, start, end, inclusive, step, body } => {
                let s = self.scalar(start, l)?;
                let t = self.scalar(end, l)?;
                let st = match step {
                    Some(x) => self.scalar(x, l)?.as_i128().unwrap_or(1).max(1),
                    None => 1,
                };
                let (lo, hi) = (s.as_i128().unwrap_or(0), t.as_i128().unwrap_or(0));
                let mut v = lo;
                while if *inclusive { v <= hi } else { v < hi } {
                    l[*var] = Val::Scalar(super::fold::int_value(s.ty(), v));
                    match self.block(body, l) {
                        Ok(_) => {}
                        Err(Flow::Break(x, _)) if x == *id => break,
                        Err(Flow::Continue(x)) if x == *id => {}
                        Err(f) => return Err(f),
                    }
                    v += st;
                }
                Val::Unit
            }
            K::Break(id, v) => {
                let v = match v {
                    Some(v) => self.expr(v, l)?,
                    None => Val::Unit,
                };
                return Err(Flow::Break(*id, v));
            }
            K::Continue(id) => return Err(Flow::Continue(*id)),
            K::Return(v) => {
                let v = match v {
                    Some(v) => self.expr(v, l)?,
                    None => Val::Unit,
                };
                return Err(Flow::Return(v));
            }
            K::Match(s, arms) => {
                let v = self.scalar(s, l)?.as_i128().unwrap_or(0);
                for a in arms {
                    let hit = match &a.ranges {
                        None => true,
                        Some(rs) => rs.iter().any(|(lo, hi)| match (&lo.kind, &hi.kind) {
                            (K::Lit(x), K::Lit(y)) => x.as_i128().is_some_and(|x| x <= v) && y.as_i128().is_some_and(|y| v <= y),
                            _ => false,
                        }),
                    };
                    if !hit {
                        continue;
                    }
                    if let Some(b) = a.binding {
                        l[b] = Val::Scalar(super::fold::int_value(s.ty.scalar().unwrap_or(Scalar::I32), v));
                    }
                    if let Some(g) = &a.guard
                        && self.scalar(g, l)? != ScalarValue::Bool(true)
                    {
                        continue;
                    }
                    return self.expr(&a.body, l);
                }
                return self.err("no arm matched", span);
            }
            K::Builtin(Builtin::Unwrap, args) => {
                if self.scalar(&args[0], l)? != ScalarValue::Bool(true) {
                    return self.err("called `Option::unwrap()` on a `None` value", span);
                }
                self.expr(&args[1], l)?
            }
            _ => return self.err("this is not supported in a constant", span),
        })
    }

    fn load(&mut self, p: &Place, l: &mut [Val]) -> Ev<Val> {
        Ok(match p {
            Place::Local(x) => l[*x].clone(),
            Place::Field(inner, k) => match self.load(inner, l)? {
                Val::Agg(v) => v.get(*k as usize).cloned().unwrap_or(Val::Unit),
                _ => Val::Unit,
            },
            Place::Elem(inner, i) => {
                let i = self.scalar(i, l)?.as_i128().unwrap_or(0);
                match self.load(inner, l)? {
                    Val::Agg(v) if !v.is_empty() => v[(i.max(0) as usize).min(v.len() - 1)].clone(),
                    _ => Val::Unit,
                }
            }
            Place::Index(a, _) => return self.err("arrays are not read in a constant", a.span),
        })
    }

    fn store(&mut self, p: &Place, v: Val, l: &mut [Val]) -> Ev<()> {
        match p {
            Place::Local(x) => l[*x] = v,
            Place::Field(inner, k) => {
                let mut whole = self.load(inner, l)?;
                if let Val::Agg(parts) = &mut whole
                    && let Some(s) = parts.get_mut(*k as usize)
                {
                    *s = v;
                }
                self.store(inner, whole, l)?;
            }
            Place::Elem(inner, i) => {
                let i = self.scalar(i, l)?.as_i128().unwrap_or(0);
                let mut whole = self.load(inner, l)?;
                if let Val::Agg(parts) = &mut whole
                    && !parts.is_empty()
                {
                    let k = (i.max(0) as usize).min(parts.len() - 1);
                    parts[k] = v;
                }
                self.store(inner, whole, l)?;
            }
            Place::Index(a, _) => return self.err("arrays are not written in a constant", a.span),
        }
        Ok(())
    }
}
