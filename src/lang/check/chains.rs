//! Iterator chains consumed where they are written, as Rust code writes them over arrays and
//! ranges: a source (`a.iter()`, `a.into_iter()`, `&a`, `(0..n)`, `(a..=b)`), adapters
//! (`map`, `filter`, `filter_map`, `enumerate`, `zip`, `take`, `skip`, `rev`, `step_by`,
//! `copied`, `cloned`) and a consumer (`sum`, `count`, `fold`, `any`, `all`, `position`,
//! `find`, `max`, `min`, `last`, `for_each`). There are no iterator values: the chain is the
//! loop it stands for, `{ let mut acc = ..; for k in .. { let v = a[k]; ..adapters..; acc = .. }
//! acc }`, written out and checked in the caller's body (closures written in the chain are
//! written out where they are called, so their parameters take the elements' types).

use crate::ir::*;
use crate::lang::ast::{self, Block, Expr as AExpr, ExprKind as A, Ident, Stmt as AStmt};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::body::{CExpr, FnCx};

use crate::lang::ast::RANGE_SOURCE as RANGE;

/// Where the elements come from.
enum Src<'a> {
    /// An array (a fixed-size array or an array reference): its elements in order.
    Array(&'a AExpr),
    /// `start..end` (`inclusive`: `..=`).
    Range(&'a AExpr, &'a AExpr, bool),
}

/// One adapter of the chain.
enum Stage<'a> {
    Map(&'a AExpr),
    Filter(&'a AExpr),
    FilterMap(&'a AExpr),
    Enumerate,
    Zip(&'a AExpr),
    Take(&'a AExpr),
    Skip(&'a AExpr),
}

const CONSUMERS: &[(&str, usize)] = &[
    ("sum", 0),
    ("count", 0),
    ("fold", 2),
    ("any", 1),
    ("all", 1),
    ("position", 1),
    ("find", 1),
    ("max", 0),
    ("min", 0),
    ("last", 0),
    ("for_each", 1),
];

struct G {
    span: Span,
}

impl G {
    fn id(&self, n: &str) -> Ident {
        Ident { name: n.into(), span: self.span }
    }
    fn path(&self, n: &str) -> AExpr {
        AExpr { kind: A::Path(self.id(n)), span: self.span }
    }
    fn e(&self, kind: A) -> AExpr {
        AExpr { kind, span: self.span }
    }
    fn int(&self, v: u128, s: Option<Scalar>) -> AExpr {
        self.e(A::Lit(ast::Lit::Int(v, s)))
    }
    fn bin(&self, op: BinOp, a: AExpr, b: AExpr) -> AExpr {
        self.e(A::Binary(op, Box::new(a), Box::new(b)))
    }
    fn method(&self, r: AExpr, m: &str, args: Vec<AExpr>) -> AExpr {
        self.e(A::MethodCall { receiver: Box::new(r), method: self.id(m), generics: Vec::new(), args })
    }
    fn index(&self, a: AExpr, i: AExpr) -> AExpr {
        self.e(A::Index { array: Box::new(a), indices: vec![i], multi: false })
    }
    fn let_(&self, n: &str, mutable: bool, init: AExpr) -> AStmt {
        AStmt::Let { name: self.id(n), mutable, ty: None, init: Some(init), span: self.span }
    }
    fn stmt(&self, e: AExpr) -> AStmt {
        AStmt::Expr(e, true)
    }
    fn block(&self, stmts: Vec<AStmt>, tail: Option<AExpr>) -> Block {
        Block { stmts, tail: tail.map(Box::new), span: self.span }
    }
    fn if_(&self, c: AExpr, then: Vec<AStmt>) -> AExpr {
        self.e(A::If(Box::new(c), self.block(then, None), None))
    }
    fn not(&self, x: AExpr) -> AExpr {
        self.e(A::Unary(UnOp::Not, Box::new(x)))
    }
    fn assign(&self, n: &str, v: AExpr) -> AStmt {
        self.stmt(self.e(A::Assign(Box::new(self.path(n)), Box::new(v))))
    }
    fn add_one(&self, n: &str) -> AStmt {
        self.stmt(self.e(A::CompoundAssign(BinOp::Add, Box::new(self.path(n)), Box::new(self.int(1, None)))))
    }
    fn option(&self, v: &str, args: Vec<AExpr>) -> AExpr {
        if args.is_empty() {
            return self.e(A::QPath(vec![self.id("#option"), self.id(v)]));
        }
        self.e(A::Call {
            qualifier: vec![self.id("#option")],
            qual_args: Vec::new(),
            qself: None,
            func: self.id(v),
            generics: Vec::new(),
            args,
        })
    }
    /// `f(args)` of a closure written in the chain (its body, its parameters bound to `args`)
    /// or of a function value.
    fn call(&self, f: &AExpr, args: Vec<AExpr>) -> AExpr {
        if let A::Closure { params, body, ret: None, .. } = &f.kind
            && params.len() == args.len()
            && !body.any(&mut |e| matches!(e.kind, A::Return(_) | A::Try(_)))
        {
            let stmts = params
                .iter()
                .zip(args)
                .map(|(p, a)| AStmt::Let { name: p.name.clone(), mutable: p.mutable, ty: p.ty.clone(), init: Some(a), span: self.span })
                .collect();
            return self.e(A::Block(self.block(stmts, Some((**body).clone()))));
        }
        match &f.kind {
            A::Path(n) => {
                self.e(A::Call { qualifier: Vec::new(), qual_args: Vec::new(), qself: None, func: n.clone(), generics: Vec::new(), args })
            }
            A::QPath(p) if p.len() >= 2 => {
                let (q, last) = p.split_at(p.len() - 1);
                self.e(A::Call {
                    qualifier: q.to_vec(),
                    qual_args: Vec::new(),
                    qself: None,
                    func: last[0].clone(),
                    generics: Vec::new(),
                    args,
                })
            }
            // Refused before (`fn_arg_ok`).
            _ => self.e(A::Unit),
        }
    }
}

fn method_parts(e: &AExpr) -> Option<(&AExpr, &str, &[AExpr])> {
    match &e.kind {
        A::MethodCall { receiver, method, args, .. } => Some((receiver, method.name.as_str(), args)),
        _ => None,
    }
}

/// The range a `#range(..)` call stands for.
fn range_src(e: &AExpr) -> Option<Src<'_>> {
    let A::Call { qualifier, func, args, .. } = &e.kind else { return None };
    if !qualifier.is_empty() || func.name != RANGE || args.len() != 3 {
        return None;
    }
    let inclusive = matches!(args[2].kind, A::Lit(ast::Lit::Bool(true)));
    Some(Src::Range(&args[0], &args[1], inclusive))
}

/// The array or range a source expression walks (`a.iter()`, `&a`, `(0..n)`).
fn source(e: &AExpr) -> Option<Src<'_>> {
    if let Some(r) = range_src(e) {
        return Some(r);
    }
    if let Some((r, m, [])) = method_parts(e)
        && matches!(m, "iter" | "into_iter")
    {
        return Some(range_src(r).unwrap_or(Src::Array(r)));
    }
    match &e.kind {
        A::Ref(x) => Some(Src::Array(x)),
        _ => None,
    }
}

impl<'c, 'm> FnCx<'c, 'm> {
    /// `chain.consumer(args)` (see the module's doc): the loop it stands for, checked; `None`
    /// where `receiver` is no iterator chain or `name` no consumer.
    pub(super) fn iter_chain(&mut self, receiver: &AExpr, name: &str, args: &[AExpr], span: Span) -> CResult<Option<CExpr>> {
        let Some(&(_, arity)) = CONSUMERS.iter().find(|(n, _)| *n == name) else { return Ok(None) };
        // The adapters, innermost first, down to the source.
        let mut stages = Vec::new();
        let mut rev = false;
        let mut step = None;
        let mut at = receiver;
        let src = loop {
            if let Some(s) = source(at) {
                break s;
            }
            let Some((r, m, a)) = method_parts(at) else { return Ok(None) };
            let stage = match (m, a) {
                ("map", [f]) => Stage::Map(f),
                ("filter", [f]) => Stage::Filter(f),
                ("filter_map", [f]) => Stage::FilterMap(f),
                ("enumerate", []) => Stage::Enumerate,
                ("zip", [o]) => Stage::Zip(o),
                ("take", [n]) => Stage::Take(n),
                ("skip", [n]) => Stage::Skip(n),
                ("copied" | "cloned", []) => {
                    at = r;
                    continue;
                }
                ("rev", []) if source(r).is_some() => {
                    rev = true;
                    at = r;
                    continue;
                }
                ("step_by", [s]) if matches!(source(r), Some(Src::Range(..))) => {
                    step = Some(s);
                    at = r;
                    continue;
                }
                _ => return Ok(None),
            };
            stages.push(stage);
            at = r;
        };
        stages.reverse();
        if args.len() != arity {
            return Err(Diagnostic::error(span, format!("`{name}` takes {arity} argument{}", super::plural(arity))).label("here").into());
        }
        if rev && step.is_some() {
            return Err(Diagnostic::error(span, "`rev()` of a `step_by` range is not supported")
                .label("here")
                .help("write the loop out")
                .into());
        }
        // The functions the chain calls: closures written out where they are called, or
        // functions and closures by name.
        let fns: Vec<&AExpr> = match name {
            "fold" => vec![&args[1]],
            "any" | "all" | "position" | "find" | "for_each" => vec![&args[0]],
            _ => Vec::new(),
        };
        for f in fns.into_iter().chain(stages_fns(&stages)) {
            if !fn_arg_ok(f) {
                return Err(Diagnostic::error(f.span, "this function cannot be used in an iterator chain")
                    .label("expected a closure written here (without `return`, `?` or a declared result type), or a function's name")
                    .help("write the loop out: `for x in a.iter() { .. }`")
                    .into());
            }
        }
        let g = G { span };
        let mut pre = Vec::new();
        let mut body = Vec::new();
        // The loop over `#k`, and the first element.
        let (start, end, inclusive) = match &src {
            Src::Array(a) => {
                pre.push(g.let_("#len", false, g.method((*a).clone(), "len", Vec::new())));
                let i = if rev { g.bin(BinOp::Sub, g.bin(BinOp::Sub, g.path("#len"), g.int(1, None)), g.path("#k")) } else { g.path("#k") };
                body.push(g.let_("#v", false, g.index((*a).clone(), i)));
                (g.int(0, Some(Scalar::Usize)), g.path("#len"), false)
            }
            Src::Range(lo, hi, inc) => {
                pre.push(g.let_("#lo", false, (*lo).clone()));
                pre.push(g.let_("#hi", false, (*hi).clone()));
                let v = if rev {
                    let top = if *inc { g.path("#hi") } else { g.bin(BinOp::Sub, g.path("#hi"), g.int(1, None)) };
                    g.bin(BinOp::Add, g.bin(BinOp::Sub, top, g.path("#k")), g.path("#lo"))
                } else {
                    g.path("#k")
                };
                body.push(g.let_("#v", false, v));
                (g.path("#lo"), g.path("#hi"), *inc)
            }
        };
        for (j, s) in stages.iter().enumerate() {
            let cnt = format!("#n{j}");
            match s {
                Stage::Map(f) => body.push(g.let_("#v", false, g.call(f, vec![g.path("#v")]))),
                Stage::Filter(f) => body.push(g.stmt(g.if_(g.not(g.call(f, vec![g.path("#v")])), vec![g.stmt(g.e(A::Continue(None)))]))),
                Stage::FilterMap(f) => {
                    let pat = ast::Pat::TupleStruct {
                        path: vec![g.id("#option"), g.id("Some")],
                        elems: vec![ast::Pat::Bind { name: g.id("#v"), mutable: false, sub: None }],
                        rest: None,
                        span,
                    };
                    let els = g.block(vec![g.stmt(g.e(A::Continue(None)))], None);
                    body.push(AStmt::LetElse { pat, ty: None, init: g.call(f, vec![g.path("#v")]), els, span });
                }
                Stage::Enumerate => {
                    pre.push(g.let_(&cnt, true, g.int(0, Some(Scalar::Usize))));
                    body.push(g.let_("#v", false, g.e(A::Tuple(vec![g.path(&cnt), g.path("#v")]))));
                    body.push(g.add_one(&cnt));
                }
                Stage::Zip(o) => {
                    let Some(Src::Array(b)) = source(o).or(Some(Src::Array(o))) else {
                        return Err(Diagnostic::error(o.span, "`zip` of a range is not supported")
                            .label("here")
                            .help("zip with an array: `a.iter().zip(b.iter())`")
                            .into());
                    };
                    if !matches!(src, Src::Array(_)) || j != 0 || rev {
                        return Err(Diagnostic::error(o.span, "`zip` is supported right after an array's `iter()`")
                            .label("here")
                            .help("write the loop out")
                            .into());
                    }
                    pre.push(g.assign_len_min(b));
                    body.push(g.let_("#v", false, g.e(A::Tuple(vec![g.path("#v"), g.index(b.clone(), g.path("#k"))]))));
                }
                Stage::Take(n) => {
                    pre.push(g.let_(&format!("{cnt}max"), false, (*n).clone()));
                    pre.push(g.let_(&cnt, true, g.int(0, Some(Scalar::Usize))));
                    body.push(g.stmt(
                        g.if_(g.bin(BinOp::Ge, g.path(&cnt), g.path(&format!("{cnt}max"))), vec![g.stmt(g.e(A::Break(None, None)))]),
                    ));
                    body.push(g.add_one(&cnt));
                }
                Stage::Skip(n) => {
                    pre.push(g.let_(&format!("{cnt}max"), false, (*n).clone()));
                    pre.push(g.let_(&cnt, true, g.int(0, Some(Scalar::Usize))));
                    body.push(g.stmt(g.if_(
                        g.bin(BinOp::Lt, g.path(&cnt), g.path(&format!("{cnt}max"))),
                        vec![g.add_one(&cnt), g.stmt(g.e(A::Continue(None)))],
                    )));
                }
            }
        }
        let brk = || g.stmt(g.e(A::Break(None, None)));
        let v = || g.path("#v");
        let result = match name {
            "sum" => {
                pre.push(g.let_(
                    "#acc",
                    true,
                    g.e(A::Call {
                        qualifier: vec![g.id("Default")],
                        qual_args: Vec::new(),
                        qself: None,
                        func: g.id("default"),
                        generics: Vec::new(),
                        args: Vec::new(),
                    }),
                ));
                body.push(g.assign("#acc", g.bin(BinOp::Add, g.path("#acc"), v())));
                Some(g.path("#acc"))
            }
            "count" => {
                pre.push(g.let_("#acc", true, g.int(0, Some(Scalar::Usize))));
                body.push(g.add_one("#acc"));
                Some(g.path("#acc"))
            }
            "fold" => {
                pre.push(g.let_("#acc", true, args[0].clone()));
                body.push(g.assign("#acc", g.call(&args[1], vec![g.path("#acc"), v()])));
                Some(g.path("#acc"))
            }
            "any" | "all" => {
                let any = name == "any";
                pre.push(g.let_("#acc", true, g.e(A::Lit(ast::Lit::Bool(!any)))));
                let test = g.call(&args[0], vec![v()]);
                let test = if any { test } else { g.not(test) };
                body.push(g.stmt(g.if_(test, vec![g.assign("#acc", g.e(A::Lit(ast::Lit::Bool(any)))), brk()])));
                Some(g.path("#acc"))
            }
            "position" => {
                pre.push(g.let_("#acc", true, g.option("None", Vec::new())));
                pre.push(g.let_("#pos", true, g.int(0, Some(Scalar::Usize))));
                body.push(
                    g.stmt(g.if_(g.call(&args[0], vec![v()]), vec![g.assign("#acc", g.option("Some", vec![g.path("#pos")])), brk()])),
                );
                body.push(g.add_one("#pos"));
                Some(g.path("#acc"))
            }
            "find" => {
                pre.push(g.let_("#acc", true, g.option("None", Vec::new())));
                body.push(g.stmt(g.if_(g.call(&args[0], vec![v()]), vec![g.assign("#acc", g.option("Some", vec![v()])), brk()])));
                Some(g.path("#acc"))
            }
            "max" | "min" => {
                pre.push(g.let_("#acc", true, g.option("None", Vec::new())));
                let keep = if name == "max" { g.bin(BinOp::Ge, v(), g.path("#m")) } else { g.bin(BinOp::Lt, v(), g.path("#m")) };
                let other = g.e(A::Block(g.block(Vec::new(), Some(g.path("#m")))));
                let pick = g.e(A::If(Box::new(keep), g.block(Vec::new(), Some(v())), Some(Box::new(other))));
                let pat = ast::Pat::TupleStruct {
                    path: vec![g.id("#option"), g.id("Some")],
                    elems: vec![ast::Pat::Bind { name: g.id("#m"), mutable: false, sub: None }],
                    rest: None,
                    span,
                };
                let arms = vec![
                    ast::Arm { pat, guard: None, body: g.option("Some", vec![pick]), span },
                    ast::Arm { pat: ast::Pat::Wild(span), guard: None, body: g.option("Some", vec![v()]), span },
                ];
                body.push(g.assign("#acc", g.e(A::Match(Box::new(g.path("#acc")), arms))));
                Some(g.path("#acc"))
            }
            "last" => {
                pre.push(g.let_("#acc", true, g.option("None", Vec::new())));
                body.push(g.assign("#acc", g.option("Some", vec![v()])));
                Some(g.path("#acc"))
            }
            _ => {
                body.push(g.stmt(g.call(&args[0], vec![v()])));
                None
            }
        };
        let for_ = g.e(A::For {
            label: None,
            var: g.id("#k"),
            start: Box::new(start),
            end: Box::new(end),
            inclusive,
            step: step.map(|s| Box::new(s.clone())),
            body: g.block(body, None),
        });
        pre.push(g.stmt(for_));
        let whole = g.e(A::Block(g.block(pre, Some(result.unwrap_or_else(|| g.e(A::Unit))))));
        self.expr(&whole).map(Some)
    }
}

impl G {
    /// `let #len = #len.min(b.len());` for `zip(b)`.
    fn assign_len_min(&self, b: &AExpr) -> AStmt {
        self.let_("#len", false, self.method(self.path("#len"), "min", vec![self.method(b.clone(), "len", Vec::new())]))
    }
}

/// The function arguments of the adapters.
fn stages_fns<'a>(stages: &[Stage<'a>]) -> Vec<&'a AExpr> {
    stages
        .iter()
        .filter_map(|s| match s {
            Stage::Map(f) | Stage::Filter(f) | Stage::FilterMap(f) => Some(*f),
            _ => None,
        })
        .collect()
}

/// Whether `f` may be called by the chain: a closure that can be written out where it is
/// called, or a name (`f32::max`, a local closure).
fn fn_arg_ok(f: &AExpr) -> bool {
    match &f.kind {
        A::Closure { body, ret: None, .. } => !body.any(&mut |e| matches!(e.kind, A::Return(_) | A::Try(_))),
        A::Path(_) => true,
        A::QPath(p) => p.len() >= 2,
        _ => false,
    }
}
