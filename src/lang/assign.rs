//! Definite assignment, as rustc checks it: a `let` without a value must be assigned on every
//! path before it is read (E0381). Runs on a function's checked body.
//!
//! A forward pass in evaluation order carries the set of locals assigned on every path so far;
//! `None` stands for "this point is unreachable" (after `return`, `break`, `continue`, or a
//! `loop` that is never left), which every set includes. Where paths meet (after `if`, `&&`,
//! `||`, and at the exit of a loop from its `break`s) the sets intersect. Each `let` declares a
//! new local, so assignments only ever add to the set, and a loop body checked once from its
//! entry state is checked for every iteration.

use std::collections::HashMap;

use crate::ir::{Block, Expr, ExprKind, LocalId, LoopId, Place, Stmt};

use super::Span;

type State = Option<Vec<bool>>;

fn meet(a: State, b: State) -> State {
    match (a, b) {
        (None, s) | (s, None) => s,
        (Some(mut a), Some(b)) => {
            for (x, y) in a.iter_mut().zip(b) {
                *x &= y;
            }
            Some(a)
        }
    }
}

/// The first read of a local that is not assigned on every path to it: the local and where.
pub(crate) fn first_unassigned_use(body: &Block, params: usize, locals: usize) -> Option<(LocalId, Span)> {
    let mut start = vec![false; locals];
    start.iter_mut().take(params).for_each(|a| *a = true);
    let mut pass = Pass { breaks: HashMap::new(), error: None };
    pass.block(body, Some(start));
    pass.error
}

struct Pass {
    /// For each loop being walked, the meet of the states at its `break`s.
    breaks: HashMap<LoopId, State>,
    error: Option<(LocalId, Span)>,
}

impl Pass {
    fn read(&mut self, s: &State, l: LocalId, span: Span) {
        if let Some(s) = s {
            if !s.get(l).copied().unwrap_or(true) && self.error.is_none() {
                self.error = Some((l, span));
            }
        }
    }

    fn block(&mut self, b: &Block, mut s: State) -> State {
        for st in &b.stmts {
            s = match st {
                Stmt::Let(l, init) => {
                    let mut s = match init {
                        Some(e) => self.expr(e, s),
                        None => s,
                    };
                    if let Some(v) = s.as_mut() {
                        // Also on the next iteration of an enclosing loop: a new, empty binding.
                        v[*l] = init.is_some();
                    }
                    s
                }
                Stmt::Expr(e) => self.expr(e, s),
            };
        }
        match &b.tail {
            Some(t) => self.expr(t, s),
            None => s,
        }
    }

    fn exprs(&mut self, es: &[Expr], mut s: State) -> State {
        for e in es {
            s = self.expr(e, s);
        }
        s
    }

    fn place(&mut self, p: &Place, s: State) -> State {
        match p {
            Place::Local(_) => s,
            Place::Index(a, i) => {
                let s = self.expr(a, s);
                self.exprs(i, s)
            }
        }
    }

    fn expr(&mut self, e: &Expr, s: State) -> State {
        match &e.kind {
            ExprKind::Lit(_) | ExprKind::PendingLit(_) | ExprKind::Unit | ExprKind::Capture(_) => s,
            ExprKind::SharedArray { .. } | ExprKind::DynSharedArray(_) => s,
            ExprKind::Local(l) => {
                self.read(&s, *l, e.span);
                s
            }
            ExprKind::Unary(_, x) | ExprKind::Cast(x) => self.expr(x, s),
            ExprKind::Binary(_, a, b) => {
                let s = self.expr(a, s);
                self.expr(b, s)
            }
            ExprKind::Logic(_, a, b) => {
                // The right operand may not run.
                let s = self.expr(a, s);
                let r = self.expr(b, s.clone());
                meet(s, r)
            }
            ExprKind::Index(a, i) => {
                let s = self.expr(a, s);
                self.exprs(i, s)
            }
            ExprKind::Assign(p, v) => {
                let s = self.place(p, s);
                let mut s = self.expr(v, s);
                if let (Place::Local(l), Some(v)) = (p, s.as_mut()) {
                    v[*l] = true;
                }
                s
            }
            ExprKind::CompoundAssign(_, p, v) => {
                let s = self.place(p, s);
                let s = self.expr(v, s);
                if let Place::Local(l) = p {
                    self.read(&s, *l, e.span);
                }
                s
            }
            ExprKind::Call(_, args) | ExprKind::Builtin(_, args) => self.exprs(args, s),
            ExprKind::If(c, then, els) => {
                let s = self.expr(c, s);
                let t = self.block(then, s.clone());
                let e = match els {
                    Some(b) => self.block(b, s),
                    None => s,
                };
                meet(t, e)
            }
            ExprKind::Block(b) => self.block(b, s),
            ExprKind::While(id, c, body) => {
                // The body may not run; a `break` leaves with at least what the condition had.
                let s = self.expr(c, s);
                self.breaks.insert(*id, None);
                self.block(body, s.clone());
                self.breaks.remove(id);
                s
            }
            ExprKind::Loop(id, body) => {
                // Left only through `break`: afterwards, what every `break` had.
                self.breaks.insert(*id, None);
                self.block(body, s);
                self.breaks.remove(id).flatten()
            }
            ExprKind::For { id, var, start, end, step, body, .. } => {
                let mut s = self.expr(start, s);
                s = self.expr(end, s);
                if let Some(st) = step {
                    s = self.expr(st, s);
                }
                let mut inside = s.clone();
                if let Some(v) = inside.as_mut() {
                    v[*var] = true;
                }
                self.breaks.insert(*id, None);
                self.block(body, inside);
                self.breaks.remove(id);
                s
            }
            ExprKind::Break(id, v) => {
                let s = match v {
                    Some(v) => self.expr(v, s),
                    None => s,
                };
                if let Some(acc) = self.breaks.remove(id) {
                    self.breaks.insert(*id, meet(acc, s));
                }
                None
            }
            ExprKind::Continue(_) => None,
            ExprKind::Return(v) => {
                if let Some(v) = v {
                    self.expr(v, s);
                }
                None
            }
        }
    }
}
