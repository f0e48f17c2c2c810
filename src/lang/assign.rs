//! Definite assignment, as rustc checks it, on a function's checked body: a `let` without a
//! value must be assigned on every path before it is read (E0381), and, without `mut`, only once
//! on each path (E0384).
//!
//! One forward walk in evaluation order, run once per rule, carries a set of locals: for E0381
//! those assigned on **every** path so far (paths meet by intersection), for E0384 those
//! assigned on **some** path (paths meet by union). `None` stands for "this point is
//! unreachable" (after `return`, `break`, `continue`, or a `loop` that is never left), which is
//! the identity of both. Each `let` declares a new local, so assignments only ever add to a set.
//!
//! Loops: for E0381 a body checked from its entry state is checked for every iteration (a later
//! iteration starts with at least as much assigned). For E0384 a later iteration starts with
//! more: the body is checked from its entry state joined with what one iteration may assign,
//! found by a walk that does not report; such walks visit an inner loop once, so the cost is
//! the body times the loop nesting depth.

use std::collections::HashMap;

use crate::ir::{Block, Expr, ExprKind, LocalId, LoopId, Place, Stmt};

use crate::span::Span;

type State = Option<Vec<bool>>;

/// The local a place is part of, if any.
fn place_root(p: &Place) -> Option<LocalId> {
    match p {
        Place::Local(l) => Some(*l),
        Place::Index(..) => None,
        Place::Field(inner, _) | Place::Elem(inner, _) => place_root(inner),
    }
}

/// The first read of a local that is not assigned on every path to it: the local and where.
pub(crate) fn first_unassigned_use(body: &Block, params: usize, locals: usize) -> Option<(LocalId, Span)> {
    let mut start = vec![false; locals];
    start.iter_mut().take(params).for_each(|a| *a = true);
    Pass::new(Rule::ReadAfterAssign, &[]).run(body, start)
}

/// The first assignment to a `let` without a value and without `mut` (`once[l]`) where it may
/// already hold a value: the local and where.
pub(crate) fn first_reassignment(body: &Block, once: &[bool]) -> Option<(LocalId, Span)> {
    if !once.contains(&true) {
        return None;
    }
    Pass::new(Rule::AssignOnce, once).run(body, vec![false; once.len()])
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// E0381: the set is "assigned on every path"; reads outside it are reported.
    ReadAfterAssign,
    /// E0384: the set is "assigned on some path"; assignments to `once` locals in it are
    /// reported.
    AssignOnce,
}

struct Pass<'a> {
    rule: Rule,
    once: &'a [bool],
    report: bool,
    /// For each loop being walked, the merged states at its `break`s and `continue`s.
    breaks: HashMap<LoopId, State>,
    continues: HashMap<LoopId, State>,
    error: Option<(LocalId, Span)>,
}

impl<'a> Pass<'a> {
    fn new(rule: Rule, once: &'a [bool]) -> Pass<'a> {
        Pass { rule, once, report: true, breaks: HashMap::new(), continues: HashMap::new(), error: None }
    }

    fn run(mut self, body: &Block, start: Vec<bool>) -> Option<(LocalId, Span)> {
        self.block(body, Some(start));
        self.error
    }

    /// Where paths meet.
    fn merge(&self, a: State, b: State) -> State {
        match (a, b) {
            (None, s) | (s, None) => s,
            (Some(mut a), Some(b)) => {
                for (x, y) in a.iter_mut().zip(b) {
                    match self.rule {
                        Rule::ReadAfterAssign => *x &= y,
                        Rule::AssignOnce => *x |= y,
                    }
                }
                Some(a)
            }
        }
    }

    fn fail(&mut self, l: LocalId, span: Span) {
        if self.report && self.error.is_none() {
            self.error = Some((l, span));
        }
    }

    fn read(&mut self, s: &State, l: LocalId, span: Span) {
        if self.rule == Rule::ReadAfterAssign && s.as_ref().is_some_and(|v| !v.get(l).copied().unwrap_or(true)) {
            self.fail(l, span);
        }
    }

    fn assign(&mut self, s: &mut State, l: LocalId, span: Span, compound: bool) {
        if compound {
            self.read(s, l, span);
        }
        if let Some(v) = s.as_mut() {
            let again = compound || v[l];
            v[l] = true;
            if self.rule == Rule::AssignOnce && self.once[l] && again {
                self.fail(l, span);
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
                        // Also on the next iteration of an enclosing loop: a new binding.
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

    /// Walks a loop body entered with `entry`; returns the merged states at its `break`s and
    /// the state at the loop's head for a later iteration.
    fn body(&mut self, id: LoopId, body: &Block, entry: State) -> (State, State) {
        let walk = |p: &mut Self, s: State| {
            p.breaks.insert(id, None);
            p.continues.insert(id, None);
            let end = p.block(body, s);
            let breaks = p.breaks.remove(&id).flatten();
            let continues = p.continues.remove(&id).flatten();
            let again = p.merge(end, continues);
            (breaks, again)
        };
        if self.rule == Rule::ReadAfterAssign {
            // A later iteration starts with at least the entry's assignments.
            let (breaks, _) = walk(self, entry.clone());
            return (breaks, entry);
        }
        let report = std::mem::replace(&mut self.report, false);
        let (breaks, again) = walk(self, entry.clone());
        self.report = report;
        let head = self.merge(entry, again);
        if report {
            let (breaks, _) = walk(self, head.clone());
            (breaks, head)
        } else {
            // Assignments add to the set whatever it held, so a walk from the later head
            // reaches each `break` with what the first walk had there plus the head.
            let breaks = if breaks.is_some() { self.merge(breaks, head.clone()) } else { None };
            (breaks, head)
        }
    }

    /// The indices a place evaluates; a field or element of a local reads the local (a value
    /// must be whole before a part of it is written, as rustc's E0381 says).
    fn place(&mut self, p: &Place, s: State, span: Span) -> State {
        match p {
            Place::Local(_) => s,
            Place::Index(a, i) => {
                let s = self.expr(a, s);
                self.exprs(i, s)
            }
            Place::Field(inner, _) => {
                if let Place::Local(l) = **inner {
                    self.read(&s, l, span);
                }
                self.place(inner, s, span)
            }
            Place::Elem(inner, i) => {
                if let Place::Local(l) = **inner {
                    self.read(&s, l, span);
                }
                let s = self.place(inner, s, span);
                self.expr(i, s)
            }
        }
    }

    fn expr(&mut self, e: &Expr, s: State) -> State {
        match &e.kind {
            ExprKind::Lit(_) | ExprKind::PendingLit(_) | ExprKind::Unit | ExprKind::Zeroed | ExprKind::Capture(_) => s,
            ExprKind::SharedArray { .. } | ExprKind::DynSharedArray(_) => s,
            ExprKind::Match(x, arms) => {
                // One arm runs (its guard first); paths meet after the match. No arm: unreachable.
                let s = self.expr(x, s);
                let mut out: State = None;
                for a in arms {
                    let mut at = s.clone();
                    if let (Some(l), Some(v)) = (a.binding, at.as_mut()) {
                        v[l] = true;
                    }
                    if let Some(g) = &a.guard {
                        at = self.expr(g, at);
                    }
                    let end = self.expr(&a.body, at);
                    out = self.merge(out, end);
                }
                out
            }
            ExprKind::Local(l) => {
                self.read(&s, *l, e.span);
                s
            }
            ExprKind::Unary(_, x) | ExprKind::Cast(x) | ExprKind::Repeat(x) | ExprKind::Field(x, _) => self.expr(x, s),
            ExprKind::Elem(a, i) => {
                let s = self.expr(a, s);
                self.expr(i, s)
            }
            ExprKind::Aggregate { parts, base } => {
                let mut s = s;
                for (_, x) in parts {
                    s = self.expr(x, s);
                }
                match base {
                    Some(b) => self.expr(b, s),
                    None => s,
                }
            }
            ExprKind::Binary(_, a, b) => {
                let s = self.expr(a, s);
                self.expr(b, s)
            }
            ExprKind::Logic(_, a, b) => {
                // The right operand may not run.
                let s = self.expr(a, s);
                let r = self.expr(b, s.clone());
                self.merge(s, r)
            }
            ExprKind::Index(a, i) => {
                let s = self.expr(a, s);
                self.exprs(i, s)
            }
            ExprKind::Assign(p, v) | ExprKind::CompoundAssign(_, p, v) => {
                let s = self.place(p, s, e.span);
                let mut s = self.expr(v, s);
                if let Place::Local(l) = p {
                    self.assign(&mut s, *l, e.span, matches!(e.kind, ExprKind::CompoundAssign(..)));
                }
                s
            }
            ExprKind::Call(_, args) | ExprKind::Builtin(_, args) => self.exprs(args, s),
            ExprKind::CallRef(_, p, args) => {
                // The receiver is read (and may be written) by the method: it must hold a value.
                let s = self.place(p, s, e.span);
                let s = if let Some(l) = place_root(p) {
                    self.read(&s, l, e.span);
                    s
                } else {
                    s
                };
                self.exprs(args, s)
            }
            ExprKind::If(c, then, els) => {
                let s = self.expr(c, s);
                let t = self.block(then, s.clone());
                let e = match els {
                    Some(b) => self.block(b, s),
                    None => s,
                };
                self.merge(t, e)
            }
            ExprKind::Block(b) => self.block(b, s),
            ExprKind::While(id, c, body) => {
                // Left when the condition fails at the head, or through `break`.
                let s = self.expr(c, s);
                let (breaks, head) = self.body(*id, body, s);
                self.merge(head, breaks)
            }
            // Left only through `break`.
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
                // Left when the range is exhausted at the head, or through `break`.
                let (breaks, head) = self.body(*id, body, s);
                self.merge(head, breaks)
            }
            ExprKind::Break(id, v) => {
                let s = match v {
                    Some(v) => self.expr(v, s),
                    None => s,
                };
                if let Some(acc) = self.breaks.remove(id) {
                    let merged = self.merge(acc, s);
                    self.breaks.insert(*id, merged);
                }
                None
            }
            ExprKind::Continue(id) => {
                if let Some(acc) = self.continues.remove(id) {
                    let merged = self.merge(acc, s);
                    self.continues.insert(*id, merged);
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
