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

/// The first assignment to a `let` without a value and without `mut` where it may already
/// hold a value (rustc's E0384: such a binding is assigned once, on each path): the local and
/// where. `once[l]` marks those locals.
///
/// The dual of the pass above: the set of locals assigned on some path so far, joined by union.
/// A loop's body is checked from its entry state joined with what an iteration may assign
/// (found by walking the body once without reporting), so a second iteration's assignment is
/// seen. Walking without reporting visits an inner loop once, so the pass stays linear in the
/// body times the loop nesting depth.
pub(crate) fn first_reassignment(body: &Block, once: &[bool]) -> Option<(LocalId, Span)> {
    if !once.contains(&true) {
        return None;
    }
    let mut pass = Maybe { once, report: true, breaks: HashMap::new(), continues: HashMap::new(), error: None };
    pass.block(body, Some(vec![false; once.len()]));
    pass.error
}

fn join(a: State, b: State) -> State {
    match (a, b) {
        (None, s) | (s, None) => s,
        (Some(mut a), Some(b)) => {
            for (x, y) in a.iter_mut().zip(b) {
                *x |= y;
            }
            Some(a)
        }
    }
}

struct Maybe<'a> {
    once: &'a [bool],
    report: bool,
    /// For each loop being walked, the join of the states at its `break`s and `continue`s.
    breaks: HashMap<LoopId, State>,
    continues: HashMap<LoopId, State>,
    error: Option<(LocalId, Span)>,
}

impl Maybe<'_> {
    fn assign(&mut self, s: &mut State, l: LocalId, span: Span, compound: bool) {
        if let Some(v) = s.as_mut() {
            if self.report && self.once[l] && (compound || v[l]) && self.error.is_none() {
                self.error = Some((l, span));
            }
            v[l] = true;
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

    /// Walks a loop body entered with `entry`: returns the joined states at its `break`s and
    /// the state at the loop's head for a later iteration.
    fn body(&mut self, id: LoopId, body: &Block, entry: State) -> (State, State) {
        let walk = |p: &mut Self, s: State| {
            p.breaks.insert(id, None);
            p.continues.insert(id, None);
            let end = p.block(body, s);
            let breaks = p.breaks.remove(&id).flatten();
            let continues = p.continues.remove(&id).flatten();
            (breaks, join(end, continues))
        };
        let report = std::mem::replace(&mut self.report, false);
        let (breaks, again) = walk(self, entry.clone());
        self.report = report;
        let head = join(entry, again);
        if report {
            let (breaks, _) = walk(self, head.clone());
            (breaks, head)
        } else {
            // Assignments add to the set whatever it held, so a walk from the later head
            // reaches each `break` with what the first walk had there plus `again`.
            (if breaks.is_some() { join(breaks, head.clone()) } else { None }, head)
        }
    }

    fn expr(&mut self, e: &Expr, s: State) -> State {
        match &e.kind {
            ExprKind::Lit(_) | ExprKind::PendingLit(_) | ExprKind::Unit | ExprKind::Capture(_) | ExprKind::Local(_) => s,
            ExprKind::SharedArray { .. } | ExprKind::DynSharedArray(_) => s,
            ExprKind::Unary(_, x) | ExprKind::Cast(x) => self.expr(x, s),
            ExprKind::Binary(_, a, b) => {
                let s = self.expr(a, s);
                self.expr(b, s)
            }
            ExprKind::Logic(_, a, b) => {
                let s = self.expr(a, s);
                let r = self.expr(b, s.clone());
                join(s, r)
            }
            ExprKind::Index(a, i) => {
                let s = self.expr(a, s);
                self.exprs(i, s)
            }
            ExprKind::Assign(p, v) | ExprKind::CompoundAssign(_, p, v) => {
                let s = match p {
                    Place::Local(_) => s,
                    Place::Index(a, i) => {
                        let s = self.expr(a, s);
                        self.exprs(i, s)
                    }
                };
                let mut s = self.expr(v, s);
                if let Place::Local(l) = p {
                    let compound = matches!(e.kind, ExprKind::CompoundAssign(..));
                    self.assign(&mut s, *l, e.span, compound);
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
                join(t, e)
            }
            ExprKind::Block(b) => self.block(b, s),
            ExprKind::While(id, c, body) => {
                // Left when the condition fails at the head, or through `break`.
                let s = self.expr(c, s);
                let (breaks, head) = self.body(*id, body, s);
                join(head, breaks)
            }
            ExprKind::Loop(id, body) => self.body(*id, body, s).0,
            ExprKind::For { id, var, start, end, step, body, .. } => {
                let mut s = self.expr(start, s);
                s = self.expr(end, s);
                if let Some(st) = step {
                    s = self.expr(st, s);
                }
                if let Some(v) = s.as_mut() {
                    v[*var] = true;
                }
                let (breaks, head) = self.body(*id, body, s);
                join(head, breaks)
            }
            ExprKind::Break(id, v) => {
                let s = match v {
                    Some(v) => self.expr(v, s),
                    None => s,
                };
                if let Some(acc) = self.breaks.remove(id) {
                    self.breaks.insert(*id, join(acc, s));
                }
                None
            }
            ExprKind::Continue(id) => {
                if let Some(acc) = self.continues.remove(id) {
                    self.continues.insert(*id, join(acc, s));
                }
                None
            }
            ExprKind::Return(v) => {
                if let Some(v) = v {
                    self.expr(v, s);
                }
                None
            }
        }
    }
}
