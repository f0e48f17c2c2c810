//! `impl IndexMut`: its `index_mut(&mut self, i) -> &mut T` returns a reference to a place of
//! `self` (`&mut self.v[i]`, one per branch). Kernels have no such references, so the method
//! becomes two functions of the block: `index_mut` gives the place's value (each `&mut P` is
//! `P`), and a hidden `#index_set(&mut self, i, v: T)` stores `v` there (each `&mut P` is
//! `P = v`). The checker calls the setter for `x[i] = v` and `x[i] op= v` (`ops.rs`).

use crate::lang::ast::*;
use crate::lang::diag::Diagnostic;

use super::PResult;

/// The hidden setter's name; `#` keeps it out of the source's reach.
pub(crate) const SETTER: &str = "#index_set";

/// The hidden setter's value parameter.
const VALUE: &str = "#value";

/// `index_mut` rewritten to give the value, and the setter beside it.
pub(super) fn split(f: FnItem) -> PResult<(FnItem, FnItem)> {
    let RetTy::Ty(TypeExpr::Ref { inner, mutable: true, .. }) = &f.ret else {
        return Err(Diagnostic::error(f.sig_span, "`index_mut` returns `&mut` of the element").label("expected `-> &mut T`").into());
    };
    let elem = (**inner).clone();
    let mut set = f.clone();
    set.name = Ident { name: SETTER.into(), span: f.name.span };
    set.params.push(Param {
        name: Ident { name: VALUE.into(), span: f.name.span },
        mutable: false,
        ty: Some(elem.clone()),
        span: f.sig_span,
    });
    set.ret = RetTy::Unit;
    set.body = block(f.body.clone(), Mode::Set)?;
    let mut get = f;
    get.ret = RetTy::Ty(elem);
    get.body = block(get.body, Mode::Get)?;
    Ok((get, set))
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Get,
    Set,
}

/// A block whose value the function returns: its statements as statements, its tail by `tail`.
fn block(b: Block, m: Mode) -> PResult<Block> {
    map_block(b, m, tail)
}

/// `b` with each expression statement mapped by `stmt_expr` and its tail by `last`.
fn map_block(mut b: Block, m: Mode, last: fn(Expr, Mode) -> PResult<Expr>) -> PResult<Block> {
    let mut stmts = Vec::with_capacity(b.stmts.len());
    for s in b.stmts {
        stmts.push(match s {
            Stmt::Expr(e, semi) => Stmt::Expr(stmt_expr(e, m)?, semi),
            other => other,
        });
    }
    b.stmts = stmts;
    b.tail = match b.tail {
        Some(t) => Some(Box::new(last(*t, m)?)),
        None => None,
    };
    Ok(b)
}

/// An expression whose value the function returns.
fn tail(e: Expr, m: Mode) -> PResult<Expr> {
    let span = e.span;
    let kind = match e.kind {
        ExprKind::RefMut(p) => match m {
            Mode::Get => p.kind,
            Mode::Set => {
                let v = Expr { kind: ExprKind::Path(Ident { name: VALUE.into(), span }), span };
                let assign = Expr { kind: ExprKind::Assign(p, Box::new(v)), span };
                ExprKind::Block(Block { stmts: vec![Stmt::Expr(assign, true)], tail: None, span })
            }
        },
        ExprKind::Block(b) => ExprKind::Block(block(b, m)?),
        ExprKind::If(c, t, Some(e)) => ExprKind::If(c, block(t, m)?, Some(Box::new(tail(*e, m)?))),
        ExprKind::Match(s, arms) => {
            let mut out = Vec::with_capacity(arms.len());
            for mut a in arms {
                a.body = tail(a.body, m)?;
                out.push(a);
            }
            ExprKind::Match(s, out)
        }
        ExprKind::Return(Some(x)) => return ret(*x, m, span),
        ExprKind::Return(None) | ExprKind::Break(..) | ExprKind::Continue(_) => e.kind,
        _ => {
            return Err(Diagnostic::error(span, "`index_mut` must return `&mut` of a place of `self`")
                .label("expected `&mut self.field`, `&mut self.items[i]`, ..")
                .help("return the reference in each branch: `match i { 0 => &mut self.x, _ => &mut self.y }`")
                .into());
        }
    };
    Ok(Expr { kind, span })
}

/// `return x`: in the setter, the store then `return`.
fn ret(x: Expr, m: Mode, span: crate::span::Span) -> PResult<Expr> {
    let x = tail(x, m)?;
    Ok(match m {
        Mode::Get => Expr { kind: ExprKind::Return(Some(Box::new(x))), span },
        Mode::Set => {
            let r = Expr { kind: ExprKind::Return(None), span };
            Expr { kind: ExprKind::Block(Block { stmts: vec![Stmt::Expr(x, true)], tail: Some(Box::new(r)), span }), span }
        }
    })
}

/// An expression statement: the `return`s inside it.
fn stmt_expr(e: Expr, m: Mode) -> PResult<Expr> {
    let span = e.span;
    let kind = match e.kind {
        ExprKind::Return(Some(x)) => return ret(*x, m, span),
        ExprKind::Block(b) => ExprKind::Block(stmt_block(b, m)?),
        ExprKind::If(c, t, els) => ExprKind::If(
            c,
            stmt_block(t, m)?,
            match els {
                Some(e) => Some(Box::new(stmt_expr(*e, m)?)),
                None => None,
            },
        ),
        ExprKind::Match(s, arms) => {
            let mut out = Vec::with_capacity(arms.len());
            for mut a in arms {
                a.body = stmt_expr(a.body, m)?;
                out.push(a);
            }
            ExprKind::Match(s, out)
        }
        ExprKind::While(l, c, b) => ExprKind::While(l, c, stmt_block(b, m)?),
        ExprKind::Loop(l, b) => ExprKind::Loop(l, stmt_block(b, m)?),
        ExprKind::For { label, var, start, end, inclusive, step, body } => {
            ExprKind::For { label, var, start, end, inclusive, step, body: stmt_block(body, m)? }
        }
        ExprKind::ForEach { label, var, array, body } => ExprKind::ForEach { label, var, array, body: stmt_block(body, m)? },
        other => other,
    };
    Ok(Expr { kind, span })
}

fn stmt_block(b: Block, m: Mode) -> PResult<Block> {
    map_block(b, m, stmt_expr)
}
