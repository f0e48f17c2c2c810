//! Walking checked IR: every expression of a block or an expression, outer before inner, in
//! evaluation order.

use super::{Block, Expr, ExprKind, Place, Stmt};

/// Calls `f` on every expression of a block, outer expressions before inner ones.
pub fn visit_block<'a, T>(b: &'a Block<T>, f: &mut impl FnMut(&'a Expr<T>)) {
    for s in &b.stmts {
        match s {
            Stmt::Let(_, Some(e)) | Stmt::Expr(e) => visit_expr(e, f),
            Stmt::Let(_, None) => {}
        }
    }
    if let Some(t) = &b.tail {
        visit_expr(t, f);
    }
}

/// Calls `f` on every expression of a place (the arrays and indices it names).
fn visit_place<'a, T>(p: &'a Place<T>, f: &mut impl FnMut(&'a Expr<T>)) {
    match p {
        Place::Local(_) => {}
        Place::Index(a, i) => {
            visit_expr(a, f);
            for x in i {
                visit_expr(x, f);
            }
        }
        Place::Field(p, _) => visit_place(p, f),
        Place::Elem(p, i) => {
            visit_place(p, f);
            visit_expr(i, f);
        }
    }
}

/// Calls `f` on `e` and every expression inside it, outer before inner.
pub fn visit_expr<'a, T>(e: &'a Expr<T>, f: &mut impl FnMut(&'a Expr<T>)) {
    f(e);
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::PendingLit(_) | ExprKind::Unit | ExprKind::Zeroed | ExprKind::Local(_) | ExprKind::Capture(_) => {}
        ExprKind::SharedArray { .. } | ExprKind::DynSharedArray(_) | ExprKind::Continue(_) => {}
        ExprKind::Unary(_, x) | ExprKind::Cast(x) | ExprKind::Repeat(x) | ExprKind::Field(x, _) => visit_expr(x, f),
        ExprKind::Binary(_, a, b) | ExprKind::Logic(_, a, b) | ExprKind::Elem(a, b) => {
            visit_expr(a, f);
            visit_expr(b, f);
        }
        ExprKind::Index(a, i) => {
            visit_expr(a, f);
            i.iter().for_each(|x| visit_expr(x, f));
        }
        ExprKind::Aggregate { parts, base } => {
            parts.iter().for_each(|(_, x)| visit_expr(x, f));
            if let Some(b) = base {
                visit_expr(b, f);
            }
        }
        ExprKind::Assign(p, v) | ExprKind::CompoundAssign(_, p, v) => {
            visit_place(p, f);
            visit_expr(v, f);
        }
        ExprKind::Call(_, a) | ExprKind::Builtin(_, a) => a.iter().for_each(|x| visit_expr(x, f)),
        ExprKind::CallRef(_, p, a) => {
            visit_place(p, f);
            a.iter().for_each(|x| visit_expr(x, f));
        }
        ExprKind::If(c, t, e2) => {
            visit_expr(c, f);
            visit_block(t, f);
            if let Some(b) = e2 {
                visit_block(b, f);
            }
        }
        ExprKind::Block(b) | ExprKind::Loop(_, b) => visit_block(b, f),
        ExprKind::While(_, c, b) => {
            visit_expr(c, f);
            visit_block(b, f);
        }
        ExprKind::For { start, end, step, body, .. } => {
            visit_expr(start, f);
            visit_expr(end, f);
            if let Some(s) = step {
                visit_expr(s, f);
            }
            visit_block(body, f);
        }
        ExprKind::Break(_, v) | ExprKind::Return(v) => {
            if let Some(v) = v {
                visit_expr(v, f);
            }
        }
        ExprKind::Match(s, arms) => {
            visit_expr(s, f);
            for a in arms {
                for (lo, hi) in a.ranges.iter().flatten() {
                    visit_expr(lo, f);
                    visit_expr(hi, f);
                }
                if let Some(g) = &a.guard {
                    visit_expr(g, f);
                }
                visit_expr(&a.body, f);
            }
        }
    }
}
