//! Loop versioning for checked code: a `for` loop whose array accesses provably stay in bounds
//! on every iteration when they do at the first and the last runs a copy of its body without
//! their bounds checks; the checked copy runs otherwise, so a fault is still reported exactly
//! where and when the unversioned code would report it.
//!
//! A check inside a loop costs more than its compare: its exit splits the body, so loads cannot
//! be issued ahead of it (an H200 ran the reductions of the speed suite at 59% of their
//! unchecked speed, the tiled matmul at a third). An index that is monotone in the loop variable
//! (sums and products of the variable, of values the loop does not change and of constants,
//! all of unsigned types) is at its smallest on the first iteration and its largest on the last,
//! so one test of both ends before the loop covers every iteration, as long as evaluating the
//! ends does not wrap (the test computes them with overflow checks and falls back to the checked
//! copy if they would).

use std::collections::{HashMap, HashSet};

use inkwell::IntPredicate;
use inkwell::values::IntValue;

use super::{FnLower, R, llvm_err};

use crate::ir::*;

/// Bodies nested deeper than this in versioned loops are not versioned again (each level
/// doubles the code of the levels inside it).
const MAX_DEPTH: u32 = 2;

/// The locals a loop body may change: those it declares (`let`, loop variables, match
/// bindings) and those it writes.
pub(super) fn changed_locals(body: &Block) -> HashSet<LocalId> {
    let mut out = declared_locals(body);
    out.extend(written_locals(body));
    out
}

/// The locals `body` assigns (whole or in part) or lends to a `&mut self` method.
pub(super) fn written_locals(body: &Block) -> HashSet<LocalId> {
    let mut out = HashSet::new();
    visit_block(body, &mut |e| {
        if let ExprKind::Assign(p, _) | ExprKind::CompoundAssign(_, p, _) | ExprKind::CallRef(_, p, _) = &e.kind {
            out.extend(place_root(p));
        }
    });
    out
}

/// The local at the root of a place (none for an element of an array reference).
pub(super) fn place_root(p: &Place) -> Option<LocalId> {
    match p {
        Place::Local(l) => Some(*l),
        Place::Field(p, _) | Place::Elem(p, _) => place_root(p),
        Place::Index(..) => None,
    }
}

/// The locals `body` declares, at any depth: `let`s, loop variables and match bindings.
pub(super) fn declared_locals(body: &Block) -> HashSet<LocalId> {
    fn lets(b: &Block, out: &mut HashSet<LocalId>) {
        for s in &b.stmts {
            if let Stmt::Let(l, _) = s {
                out.insert(*l);
            }
        }
    }
    let mut out = HashSet::new();
    lets(body, &mut out);
    visit_block(body, &mut |e| match &e.kind {
        ExprKind::Block(b) | ExprKind::Loop(_, b) | ExprKind::While(_, _, b) => lets(b, &mut out),
        ExprKind::If(_, t, f) => {
            lets(t, &mut out);
            if let Some(f) = f {
                lets(f, &mut out);
            }
        }
        ExprKind::For { var, body, .. } => {
            out.insert(*var);
            lets(body, &mut out);
        }
        ExprKind::Match(_, arms) => out.extend(arms.iter().filter_map(|a| a.binding)),
        _ => {}
    });
    out
}

/// The body's own `let`s (its top-level statements) that bind a local nothing in the body
/// assigns or lends to a `&mut self` method, with their initialisers: such a local holds the
/// value of its initialiser, evaluated where it stands on each iteration (`let j = t + k * 256;`).
fn let_bindings(body: &Block) -> HashMap<LocalId, &Expr> {
    let assigned = written_locals(body);
    body.stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Let(l, Some(init)) if !assigned.contains(l) => Some((*l, init)),
            _ => None,
        })
        .collect()
}

/// The block-level operations a loop body (or a function it calls, at any depth) performs,
/// which decide whether and how it may be versioned (`version_condition`) or unrolled by a
/// forced count (`loops::unrollable`).
#[derive(Default)]
pub(super) struct Collectives {
    /// `sync_threads()`: both copies of a versioned loop run the same barriers, so either may
    /// run in any thread as long as the threads of a block agree on GPUs that match barriers by
    /// instruction; the choice is made for the whole block (`bar.red.and`).
    pub barrier: bool,
    /// A warp-level operation: a warp's lanes must run one copy together.
    pub warp: bool,
    /// A shared array declared in the body: each copy would declare its own.
    pub shared: bool,
}

impl Collectives {
    pub(super) fn of(p: &Program, body: &Block) -> Collectives {
        fn walk(p: &Program, body: &Block, seen: &mut Vec<FuncId>, out: &mut Collectives) {
            visit_block(body, &mut |e| match &e.kind {
                ExprKind::Builtin(Builtin::SyncThreads, _) => out.barrier = true,
                ExprKind::Builtin(b, _) if b.is_convergent() => out.warp = true,
                ExprKind::SharedArray { .. } | ExprKind::DynSharedArray(_) => out.shared = true,
                ExprKind::Call(id, _) | ExprKind::CallRef(id, _, _) if !seen.contains(id) => {
                    seen.push(*id);
                    if let Some(f) = p.funcs.get(*id) {
                        walk(p, &f.body, seen, out);
                    }
                }
                _ => {}
            });
        }
        let mut out = Collectives::default();
        walk(p, body, &mut Vec::new(), &mut out);
        out
    }
}

/// Whether `e` is a value a loop over `var` whose body changes `changed` does not change, and
/// whose early or repeated evaluation has no effect ([`Scope::invariant`]).
pub(super) fn loop_invariant(var: LocalId, changed: &HashSet<LocalId>, e: &Expr) -> bool {
    let lets = HashMap::new();
    Scope { var, inner: HashSet::new(), changed, lets: &lets }.invariant(e)
}

fn unsigned_int(t: &Ty) -> Option<Scalar> {
    t.scalar().filter(|s| s.is_int() && !s.is_signed())
}

/// What the analysis needs to know about the loop.
struct Scope<'b> {
    var: LocalId,
    /// The variables of loops nested in the body over ranges the loop does not change (each
    /// grows from its range's start to its end, as the loop variable does).
    inner: HashSet<LocalId>,
    changed: &'b HashSet<LocalId>,
    /// The body's `let`s that stand for their initialisers (`let_bindings`).
    lets: &'b HashMap<LocalId, &'b Expr>,
}

impl Scope<'_> {
    /// A value the loop does not change, whose early evaluation has no effect: constants,
    /// locals the loop leaves alone, thread and block indices, array extents, and pure integer
    /// arithmetic of those (division by zero gives 0 in kache, so nothing here traps).
    fn invariant(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Lit(_) | ExprKind::Capture(_) => e.ty.scalar().is_some(),
            ExprKind::Local(l) => *l != self.var && !self.changed.contains(l) && e.ty.scalar().is_some(),
            ExprKind::Cast(x) | ExprKind::Unary(_, x) => self.invariant(x),
            ExprKind::Binary(_, a, b) => self.invariant(a) && self.invariant(b),
            ExprKind::Builtin(
                Builtin::ThreadIdx(_)
                | Builtin::BlockIdx(_)
                | Builtin::BlockDim(_)
                | Builtin::GridDim(_)
                | Builtin::GlobalId(_)
                | Builtin::LaneId
                | Builtin::WarpSize,
                _,
            ) => true,
            ExprKind::Builtin(Builtin::Len | Builtin::Shape | Builtin::Stride, args) => {
                args.iter().all(|a| self.array_invariant(a) || self.invariant(a))
            }
            _ => false,
        }
    }

    /// An array the loop cannot rebind.
    fn array_invariant(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Local(l) => *l != self.var && !self.changed.contains(l),
            ExprKind::Capture(_) => true,
            _ => false,
        }
    }

    /// An unsigned index that never decreases as the loop variable grows, built from the
    /// variable, invariant values and the body's `let`s of such indices by `+`, `*`,
    /// `- invariant` and widening casts.
    fn monotone(&self, e: &Expr) -> bool {
        if unsigned_int(&e.ty).is_none() {
            return false;
        }
        match &e.kind {
            ExprKind::Local(l) if *l == self.var || self.inner.contains(l) => true,
            ExprKind::Local(l) if self.lets.contains_key(l) => self.monotone(self.lets[l]),
            ExprKind::Binary(BinOp::Add, a, b) => self.monotone(a) && self.monotone(b),
            ExprKind::Binary(BinOp::Mul, a, b) => (self.monotone(a) && self.invariant(b)) || (self.invariant(a) && self.monotone(b)),
            ExprKind::Binary(BinOp::Sub, a, b) => self.monotone(a) && self.invariant(b),
            ExprKind::Cast(x) => match (unsigned_int(&x.ty), unsigned_int(&e.ty)) {
                (Some(from), Some(to)) => from.bits() <= to.bits() && self.monotone(x),
                _ => false,
            },
            _ => self.invariant(e),
        }
    }
}

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    /// For a `for` loop over an unsigned `var` from `first` to `last` (both values it takes),
    /// the condition under which every versionable access of `body` is in bounds on every
    /// iteration, and those accesses (their array expressions, as `check_bounds` names them).
    /// `None` when nothing in the body can be versioned. Emitted where the builder is, before
    /// the loop.
    pub(super) fn version_condition<'x>(
        &mut self,
        var: LocalId,
        var_ty: Scalar,
        first: IntValue<'ctx>,
        last: IntValue<'ctx>,
        body: &'x Block,
    ) -> R<Option<(IntValue<'ctx>, Vec<*const Expr>)>> {
        if !self.cx.input.options.checked || self.version_depth >= MAX_DEPTH || self.in_fallback || var_ty.is_signed() || !var_ty.is_int() {
            return Ok(None);
        }
        let found = Collectives::of(self.cx.input.program, body);
        if found.warp || found.shared {
            return Ok(None);
        }
        let changed = changed_locals(body);
        let lets = let_bindings(body);
        let mut scope = Scope { var, inner: HashSet::new(), changed: &changed, lets: &lets };
        // Loops nested in the body over a plain range of values the loop leaves alone (a tiled
        // matmul's `for k in 0..TILE` in its loop over tiles): their accesses are tested here
        // too, at both ends of both ranges, so that the fast copy holds no check and no second
        // version test.
        let mut inner: Vec<(LocalId, &'x Expr, &'x Expr, bool)> = Vec::new();
        visit_block(body, &mut |e| {
            if let ExprKind::For { var: k, start, end, inclusive, step: None, .. } = &e.kind
                && unsigned_int(&start.ty).is_some()
                && scope.invariant(start)
                && scope.invariant(end)
            {
                inner.push((*k, &**start, &**end, *inclusive));
            }
        });
        scope.inner = inner.iter().map(|(k, ..)| *k).collect();
        let proven = &self.proven;
        let mut accesses: Vec<(&'x Expr, &'x [Expr])> = Vec::new();
        let mut note = |a: &'x Expr, idx: &'x [Expr]| {
            let known = proven.contains(&(a as *const Expr));
            if !known && scope.array_invariant(a) && !idx.is_empty() && idx.iter().all(|i| scope.monotone(i)) {
                accesses.push((a, idx));
            }
        };
        visit_block(body, &mut |e| match &e.kind {
            ExprKind::Index(a, idx) => note(a, idx),
            ExprKind::Assign(Place::Index(a, idx), _) | ExprKind::CompoundAssign(_, Place::Index(a, idx), _) => note(a, idx),
            _ => {}
        });
        if accesses.is_empty() {
            return Ok(None);
        }
        let mut ok = self.cx.i1.const_int(1, false);
        // Each variable's smallest and largest value: the loop's `first` and `last`, and each
        // nested range's start and end (less one unless inclusive; an empty range's end less
        // one wraps, and its accesses, which never run, send the loop to the checked copy).
        let mut wrapped_range = self.cx.i1.const_zero();
        let mut lows = HashMap::from([(var, first)]);
        let mut highs = HashMap::from([(var, last)]);
        for (k, start, end, inclusive) in &inner {
            let lo = self.scalar_of(start)?.into_int_value();
            let hi = self.scalar_of(end)?.into_int_value();
            let (empty, hi) = if *inclusive {
                (self.b.build_int_compare(IntPredicate::UGT, lo, hi, "")?, hi)
            } else {
                let one = hi.get_type().const_int(1, false);
                (self.b.build_int_compare(IntPredicate::ULE, hi, lo, "")?, self.b.build_int_sub(hi, one, "")?)
            };
            wrapped_range = self.b.build_or(wrapped_range, empty, "")?;
            lows.insert(*k, lo);
            highs.insert(*k, hi);
        }
        ok = self.b.build_and(ok, self.b.build_not(wrapped_range, "")?, "")?;
        let mut sites = Vec::with_capacity(accesses.len());
        for (a, idx) in accesses {
            let arr = self.expr(a)?.array()?;
            for (d, i) in idx.iter().enumerate() {
                let len = *arr.shape.get(d).ok_or_else(|| llvm_err("an index beyond the array's dimensions"))?;
                let mut wrapped = self.cx.i1.const_zero();
                let lo = self.index_at(i, &lows, &lets, &mut wrapped)?;
                let hi = self.index_at(i, &highs, &lets, &mut wrapped)?;
                let lo = self.widen(lo, i)?;
                let hi = self.widen(hi, i)?;
                let inside = self.b.build_int_compare(IntPredicate::ULT, hi, len, "")?;
                // The smallest end is below the largest unless evaluating it wrapped, which
                // `wrapped` catches; it is tested anyway, for indices of a dimension of extent 0.
                let inside_lo = self.b.build_int_compare(IntPredicate::ULT, lo, len, "")?;
                let clean = self.b.build_not(wrapped, "")?;
                ok = self.b.build_and(ok, inside, "")?;
                ok = self.b.build_and(ok, inside_lo, "")?;
                ok = self.b.build_and(ok, clean, "")?;
            }
            sites.push(a as *const Expr);
        }
        if found.barrier && !self.cx.host {
            // The whole block runs one copy: a loop of tiles loaded into shared memory between
            // barriers (a tiled matmul) runs its loads unchecked only if every thread's are in
            // bounds. `bar.red.and` is itself a barrier, reached by every thread that reaches
            // the loop's barriers. (The host backend's barrier waits for every live thread
            // wherever it waits, so there each thread chooses its own copy.)
            ok = self.block_all(ok)?;
        }
        Ok(Some((ok, sites)))
    }

    /// Whether `pred` holds in every thread of the block that has not exited (a barrier:
    /// `bar.red.and.pred`).
    fn block_all(&mut self, pred: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let i32t = self.cx.i32;
        let f = self.intrinsic("llvm.nvvm.barrier0.and", i32t.into(), &[i32t.into()]);
        let v = self.b.build_int_z_extend(pred, i32t, "")?;
        let all = self.call_basic(f, &[v.into()])?.into_int_value();
        Ok(self.b.build_int_compare(IntPredicate::NE, all, i32t.const_zero(), "")?)
    }

    /// An index as the 64-bit value `check_bounds` compares.
    fn widen(&self, v: IntValue<'ctx>, e: &Expr) -> R<IntValue<'ctx>> {
        let bits = unsigned_int(&e.ty).map(|s| s.bits()).unwrap_or(64);
        Ok(if bits < 64 { self.b.build_int_z_extend(v, self.cx.i64, "")? } else { v })
    }

    /// The value of the monotone index `e` with the loop variables at the values `at` gives
    /// them (each of `lets` read as its initialiser: before the loop it holds nothing yet),
    /// setting `wrapped` where an operation on the way would wrap.
    fn index_at(
        &mut self,
        e: &Expr,
        at: &HashMap<LocalId, IntValue<'ctx>>,
        lets: &HashMap<LocalId, &Expr>,
        wrapped: &mut IntValue<'ctx>,
    ) -> R<IntValue<'ctx>> {
        match &e.kind {
            ExprKind::Local(l) if at.contains_key(l) => Ok(at[l]),
            ExprKind::Local(l) if lets.contains_key(l) => self.index_at(lets[l], at, lets, wrapped),
            ExprKind::Binary(o @ (BinOp::Add | BinOp::Mul | BinOp::Sub), a, b) => {
                let x = self.index_at(a, at, lets, wrapped)?;
                let y = self.index_at(b, at, lets, wrapped)?;
                let op = match o {
                    BinOp::Add => "uadd",
                    BinOp::Sub => "usub",
                    _ => "umul",
                };
                let (v, o) = self.with_overflow(op, x, y)?;
                *wrapped = self.b.build_or(*wrapped, o, "")?;
                Ok(v)
            }
            ExprKind::Cast(x) if mentions(x, at, lets) => {
                let v = self.index_at(x, at, lets, wrapped)?;
                let to =
                    self.cx.scalar_ty(unsigned_int(&e.ty).ok_or_else(|| llvm_err("a versioned cast to a signed type"))?).into_int_type();
                Ok(if v.get_type().get_bit_width() < to.get_bit_width() { self.b.build_int_z_extend(v, to, "")? } else { v })
            }
            _ => Ok(self.scalar_of(e)?.into_int_value()),
        }
    }
}

/// Whether `e` reads one of the loop variables `vars` or one of `lets` (which have no value before the loop).
fn mentions<V>(e: &Expr, vars: &HashMap<LocalId, V>, lets: &HashMap<LocalId, &Expr>) -> bool {
    let mut found = false;
    visit_expr(e, &mut |x| found |= matches!(x.kind, ExprKind::Local(l) if vars.contains_key(&l) || lets.contains_key(&l)));
    found
}
