//! Loops with Rust's meaning and a trip count LLVM can compute: `for` over ranges (plain,
//! inclusive, stepped), and the unroll hint NVPTX gets for loops whose trip count is known only
//! at run time.

use inkwell::IntPredicate;
use inkwell::values::{AsValueRef, InstructionValue, IntValue, PointerValue};

use super::version::{Collectives, changed_locals, declared_locals, loop_invariant, place_root, written_locals};
use super::{FnLower, LoopBlocks, R, Slot, Val};
use crate::ir::*;

/// Whether a loop with this body may be unrolled by a forced count: no barrier or warp-level
/// operation (convergent: a copy of the loop for the remainder iterations would run them in
/// divergent code), no way out but the loop's own exit (LLVM does not unroll loops with
/// other exits by a runtime count, and would warn that it could not), and at most
/// [`GUARDED_MAX`] array accesses under conditions ([`guarded_accesses`]). Statements in
/// `skipped` (a strided `loop`'s exit test, which its trip count stands for) are not lowered.
pub(super) fn unrollable(p: &Program, body: &Block, skipped: &[*const Stmt]) -> bool {
    if guarded_accesses(body, 1) > GUARDED_MAX {
        return false;
    }
    let found = Collectives::of(p, body);
    let mut exits = false;
    let mut note = |e: &Expr| exits |= matches!(e.kind, ExprKind::Return(_) | ExprKind::Break(..));
    for s in body.stmts.iter().filter(|s| !skipped.contains(&(*s as *const Stmt))) {
        if let Stmt::Let(_, Some(e)) | Stmt::Expr(e) = s {
            visit_expr(e, &mut note);
        }
    }
    if let Some(t) = &body.tail {
        visit_expr(t, &mut note);
    }
    !found.barrier && !found.warp && !exits
}

/// A loop body with more array accesses than this under conditions is not unrolled by a forced
/// count: the 3 x 3 convolution's loop over input channels (nine taps, each a pair of loads
/// behind a test of the image's edges: 18) unrolled by 4 held 36 guarded pairs and 104
/// registers, and ran at 0.57x NVRTC on an H100, whose NVVM leaves the same loop rolled (a
/// body that large is past its unrolling threshold) with its edge tests hoisted as predicates.
/// Unrolling pays where it puts more loads in flight; loads behind branches do not overlap
/// across them. The loop is left to LLVM's own cost model, which unrolls it where it is small.
const GUARDED_MAX: u64 = 8;

/// The array accesses (`a[i]`, `a[[i, j]]`, read or written) under an `if` in `b`, each
/// counted as many times as the loops over constants around it run (`for ky in 0..3`: 3).
fn guarded_accesses(b: &Block, times: u64) -> u64 {
    fn accesses(b: &Block) -> u64 {
        let mut n = 0u64;
        visit_block(b, &mut |e| {
            n += match &e.kind {
                ExprKind::Index(..) => 1,
                ExprKind::Assign(Place::Index(..), _) | ExprKind::CompoundAssign(_, Place::Index(..), _) => 1,
                _ => 0,
            }
        });
        n
    }
    fn lit(e: &Expr) -> Option<u64> {
        match e.kind {
            ExprKind::Lit(ScalarValue::Int(_, v)) => Some(v),
            _ => None,
        }
    }
    fn scan(e: &Expr, times: u64) -> u64 {
        match &e.kind {
            ExprKind::If(_, t, els) => times.saturating_mul(accesses(t) + els.as_ref().map_or(0, accesses)),
            ExprKind::For { start, end, inclusive, step: None, body, .. } => {
                let trips = match (lit(start), lit(end)) {
                    (Some(a), Some(b)) => b.saturating_sub(a) + u64::from(*inclusive),
                    _ => 1,
                };
                guarded_accesses(body, times.saturating_mul(trips.max(1)))
            }
            ExprKind::For { body, .. } | ExprKind::Block(body) | ExprKind::Loop(_, body) | ExprKind::While(_, _, body) => {
                guarded_accesses(body, times)
            }
            _ => 0,
        }
    }
    let stmts = b.stmts.iter().filter_map(|s| match s {
        Stmt::Let(_, Some(e)) | Stmt::Expr(e) => Some(e),
        Stmt::Let(_, None) => None,
    });
    stmts.chain(b.tail.as_deref()).fold(0u64, |n, e| n.saturating_add(scan(e, times)))
}

/// Loops over constants of at most this many iterations that index a fixed-size array with
/// their variable are unrolled whole on the GPU.
const FULL_UNROLL_MAX: u64 = 64;

/// Calls `f` with each index into a fixed-size array in `body` (`v[k]` read, or assigned or
/// lent to a `&mut self` method as `v[k]`, `s.v[k]`) and the local at the root of that array.
fn fixed_array_indices(body: &Block, f: &mut dyn FnMut(&Expr, Option<LocalId>)) {
    fn expr_root(e: &Expr) -> Option<LocalId> {
        match &e.kind {
            ExprKind::Local(l) => Some(*l),
            ExprKind::Field(e, _) | ExprKind::Elem(e, _) => expr_root(e),
            _ => None,
        }
    }
    fn place(p: &Place, f: &mut dyn FnMut(&Expr, Option<LocalId>)) {
        match p {
            Place::Elem(q, i) => {
                f(i, place_root(q));
                place(q, f);
            }
            Place::Field(q, _) => place(q, f),
            Place::Local(_) | Place::Index(..) => {}
        }
    }
    visit_block(body, &mut |e| match &e.kind {
        ExprKind::Elem(a, i) => f(i, expr_root(a)),
        ExprKind::Assign(p, _) | ExprKind::CompoundAssign(_, p, _) | ExprKind::CallRef(_, p, _) => place(p, f),
        _ => {}
    });
}

/// Whether `body` indexes a fixed-size array (`v[k]`, `v[k] = ..`) with an index that uses `var`.
fn indexes_fixed_array(body: &Block, var: LocalId) -> bool {
    let mut found = false;
    fixed_array_indices(body, &mut |i, _| visit_expr(i, &mut |x| found |= matches!(x.kind, ExprKind::Local(l) if l == var)));
    found
}

/// The locals whose fixed-size arrays `body` indexes by something other than a literal.
fn variably_indexed(body: &Block) -> Vec<LocalId> {
    let mut out = Vec::new();
    fixed_array_indices(body, &mut |i, root| {
        if let Some(l) = root.filter(|l| !matches!(i.kind, ExprKind::Lit(_)) && !out.contains(l)) {
            out.push(l);
        }
    });
    out
}

/// Whether `body` (of loop `id`) leaves a loop around it (`break` or `continue` of an outer
/// loop), which would skip what follows the loop's own exit.
fn leaves_loop(body: &Block, id: LoopId) -> bool {
    let (mut inner, mut targets) = (vec![id], Vec::new());
    visit_block(body, &mut |e| match &e.kind {
        ExprKind::For { id, .. } | ExprKind::While(id, ..) | ExprKind::Loop(id, _) => inner.push(*id),
        ExprKind::Break(l, _) | ExprKind::Continue(l) => targets.push(*l),
        _ => {}
    });
    targets.iter().any(|l| !inner.contains(l))
}

/// A `while` or `loop` that is a strided count in disguise: `while i < n { ..; i += s; }`, or
/// `loop { if i >= n { break; } ..; i += s; }`, over an integer `i` that nothing else in the
/// body assigns, with `n` and `s` values the loop does not change, and no other `break` or
/// `continue` of it (which would skip or keep the increment). The grid-stride loop is the
/// common one. Neither has a trip count LLVM can compute (`i += s` wraps in kache, as in
/// release Rust), so neither was unrolled, where the `for .. step_by` spelling of the same
/// loop was: 4 loads in flight against 1.
pub(super) struct StridedWhile<'e> {
    /// The variable.
    var: LocalId,
    /// Its read in the condition (`i`).
    read: &'e Expr,
    /// The bound `n` and the step `s`.
    bound: &'e Expr,
    step: &'e Expr,
    /// The final increment, left out where the body is lowered as the `for` loop's (the
    /// body is not copied: bounds sites are known by their expressions' addresses).
    increment: &'e Stmt,
    /// A `loop`'s exit test (`if i >= n { break; }`), left out there too.
    guard: Option<&'e Stmt>,
    /// The whole body.
    body: &'e Block,
}

/// `(i, n)` where `cond` is `i < n` (or `n > i`) for a local `i`; with `negated`, where it is
/// `i >= n`, `n <= i` or `!(i < n)`, the test that leaves such a loop.
fn below(cond: &Expr, negated: bool) -> Option<(&Expr, &Expr)> {
    let (read, bound) = match (&cond.kind, negated) {
        (ExprKind::Binary(BinOp::Lt, i, n), false) | (ExprKind::Binary(BinOp::Gt, n, i), false) => (&**i, &**n),
        (ExprKind::Binary(BinOp::Ge, i, n), true) | (ExprKind::Binary(BinOp::Le, n, i), true) => (&**i, &**n),
        (ExprKind::Unary(UnOp::Not, inner), true) => return below(inner, false),
        _ => return None,
    };
    matches!(read.kind, ExprKind::Local(_)).then_some((read, bound))
}

impl<'e> StridedWhile<'e> {
    /// `while cond { body }` as a strided count.
    pub(super) fn of(id: LoopId, cond: &'e Expr, body: &'e Block) -> Option<StridedWhile<'e>> {
        let (read, bound) = below(cond, false)?;
        StridedWhile::counting(id, read, bound, body, &body.stmts, None)
    }

    /// `loop { body }` whose first statement is `if i >= n { break; }` as a strided count.
    pub(super) fn of_loop(id: LoopId, body: &'e Block) -> Option<StridedWhile<'e>> {
        let (guard, rest) = body.stmts.split_first()?;
        let Stmt::Expr(test) = guard else { return None };
        let ExprKind::If(cond, then, None) = &test.kind else { return None };
        let leaves = |e: &Expr| matches!(e.kind, ExprKind::Break(l, None) if l == id);
        let exits = match (&then.stmts[..], &then.tail) {
            ([Stmt::Expr(e)], None) => leaves(e),
            ([], Some(e)) => leaves(e),
            _ => false,
        };
        if !exits {
            return None;
        }
        let (read, bound) = below(cond, true)?;
        StridedWhile::counting(id, read, bound, body, rest, Some(guard))
    }

    /// The variable of a loop that steps by the literal 1 and is unrolled by a forced count.
    pub(super) fn unit_step(&self, p: &Program) -> Option<LocalId> {
        let one = matches!(self.step.kind, ExprKind::Lit(ScalarValue::Int(_, 1)));
        let skipped: Vec<*const Stmt> = [Some(self.increment), self.guard].into_iter().flatten().map(|s| s as *const Stmt).collect();
        (one && unrollable(p, self.body, &skipped)).then_some(self.var)
    }

    /// The loop over `stmts` (the body after any guard), testing `read < bound` first.
    fn counting(
        id: LoopId,
        read: &'e Expr,
        bound: &'e Expr,
        body: &'e Block,
        stmts: &'e [Stmt],
        guard: Option<&'e Stmt>,
    ) -> Option<StridedWhile<'e>> {
        let ExprKind::Local(var) = read.kind else { return None };
        if !read.ty.scalar().is_some_and(|s| s.is_int()) || body.tail.is_some() {
            return None;
        }
        let (last, rest) = stmts.split_last()?;
        let Stmt::Expr(inc) = last else { return None };
        let step: &Expr = match &inc.kind {
            ExprKind::CompoundAssign(BinOp::Add, Place::Local(l), s) if *l == var => s,
            ExprKind::Assign(Place::Local(l), v) if *l == var => match &v.kind {
                ExprKind::Binary(BinOp::Add, a, s) if matches!(a.kind, ExprKind::Local(x) if x == var) => s,
                _ => return None,
            },
            _ => return None,
        };
        let rest = Block { stmts: rest.to_vec(), tail: None };
        if written_locals(&rest).contains(&var) || declared_locals(&rest).contains(&var) || leaves_loop(&rest, id) {
            return None;
        }
        let mut own_exit = false;
        visit_block(&rest, &mut |e| own_exit |= matches!(&e.kind, ExprKind::Break(l, _) | ExprKind::Continue(l) if *l == id));
        let mut changed = changed_locals(&rest);
        changed.insert(var);
        drop(rest);
        if own_exit || !loop_invariant(var, &changed, bound) || !loop_invariant(var, &changed, step) {
            return None;
        }
        Some(StridedWhile { var, read, bound, step, increment: last, guard, body })
    }
}

/// The step of a `for` loop: its `step_by` argument (a `usize`), or a value already computed
/// (a strided `while`'s step, widened to 64 bits and known to be positive).
#[derive(Clone, Copy)]
pub(super) enum Step<'e, 'ctx> {
    Expr(&'e Expr),
    Value(IntValue<'ctx>),
}

/// A counted loop's state, shared by the copies of a versioned loop (only one of them runs).
#[derive(Clone, Copy)]
struct Counted<'ctx> {
    id: LoopId,
    it: inkwell::types::IntType<'ctx>,
    counter: PointerValue<'ctx>,
    current: PointerValue<'ctx>,
    slot: PointerValue<'ctx>,
    last: IntValue<'ctx>,
    step: IntValue<'ctx>,
    /// Whether the step is known before run time (ptxas may unroll the unrolled loop again).
    constant_step: bool,
    /// Whether the loop is unrolled whole (on the GPU: constant trips, indexing a fixed-size
    /// array with its variable).
    whole: bool,
    signed: bool,
    exit: inkwell::basic_block::BasicBlock<'ctx>,
}

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    /// `while cond { body }`: a [`StridedWhile`] becomes the `for` loop it is
    /// ([`Self::strided`]), the loop as written otherwise.
    pub(super) fn while_loop(&mut self, id: LoopId, cond: &Expr, body: &Block) -> R<()> {
        match StridedWhile::of(id, cond, body) {
            Some(w) => self.strided(id, &w, body, &mut |me: &mut Self| me.plain_while(id, cond, body, true)),
            None => self.plain_while(id, cond, body, false),
        }
    }

    /// `loop { body }` (of type `ty`): a [`StridedWhile`] becomes the `for` loop it is
    /// ([`Self::strided`]), the loop as written otherwise.
    pub(super) fn loop_expr(&mut self, id: LoopId, body: &Block, ty: Ty) -> R<Val<'ctx>> {
        if ty == Ty::Unit
            && let Some(w) = StridedWhile::of_loop(id, body)
        {
            self.strided(id, &w, body, &mut |me: &mut Self| me.plain_loop(id, body, ty, true).map(|_| ()))?;
            return Ok(Val::Unit);
        }
        self.plain_loop(id, body, ty, false)
    }

    /// A [`StridedWhile`] as the `for` loop it is, wherever no step can wrap (unsigned: `s`
    /// nonzero and at most `MAX - n`; signed: `s` positive and `n` at most `MAX - s`; checked
    /// at run time: then `i < n` implies `i + s` does not wrap, so the two loops run the same
    /// iterations), with `as_written` (the loop as written, not unrolled) for the other cases;
    /// the variable ends one step past its last value, as the loop leaves it.
    fn strided(&mut self, id: LoopId, w: &StridedWhile<'_>, body: &Block, as_written: &mut dyn FnMut(&mut Self) -> R<()>) -> R<()> {
        let Slot::Scalar(var_slot, var_ty) = self.locals[w.var] else { return as_written(self) };
        let signed = var_ty.is_signed();
        let i = self.scalar_of(w.read)?.into_int_value();
        let n = self.scalar_of(w.bound)?.into_int_value();
        let s = self.scalar_of(w.step)?.into_int_value();
        let it = i.get_type();
        let (lt, le) = if signed { (IntPredicate::SLT, IntPredicate::SLE) } else { (IntPredicate::ULT, IntPredicate::ULE) };
        let go = self.b.build_int_compare(lt, i, n, "")?;
        let counted_ok = if signed {
            let max = it.const_int(u64::MAX >> (65 - it.get_bit_width()), false);
            let positive = self.b.build_int_compare(IntPredicate::SGT, s, it.const_zero(), "")?;
            let room = self.b.build_int_sub(max, s, "")?;
            let fits = self.b.build_int_compare(le, n, room, "")?;
            self.b.build_and(positive, fits, "")?
        } else {
            let room = self.b.build_int_sub(it.const_all_ones(), n, "")?;
            let nonzero = self.b.build_int_compare(IntPredicate::NE, s, it.const_zero(), "")?;
            let fits = self.b.build_int_compare(le, s, room, "")?;
            self.b.build_and(nonzero, fits, "")?
        };
        let check = self.ctx().append_basic_block(self.fv, "");
        let counted = self.ctx().append_basic_block(self.fv, "");
        let plain = self.ctx().append_basic_block(self.fv, "");
        let done = self.ctx().append_basic_block(self.fv, "");
        self.b.build_conditional_branch(go, check, done)?;
        self.b.position_at_end(check);
        self.b.build_conditional_branch(counted_ok, counted, plain)?;
        self.b.position_at_end(counted);
        // The step as the `for` loop takes it: 64 bits, positive here.
        let wide = if it.get_bit_width() < 64 { self.b.build_int_z_extend(s, self.cx.i64, "")? } else { s };
        // The body as it is, its increment (and a `loop`'s exit test) left out: the `for`
        // loop's trip count and latch stand for them.
        let outer = self.skip_stmts.len();
        self.skip_stmts.push(w.increment as *const Stmt);
        self.skip_stmts.extend(w.guard.map(|g| g as *const Stmt));
        let r = self.for_loop(id, w.var, w.read, w.bound, false, Some(Step::Value(wide)), body);
        self.skip_stmts.truncate(outer);
        r?;
        if !self.terminated() {
            // The loop ran (i < n): the variable holds its last value; one more step leaves it
            // where the loop would, which does not wrap (checked above).
            let last = match self.locals[w.var] {
                Slot::Scalar(p, _) => self.b.build_load(it, p, "")?.into_int_value(),
                _ => return Err(super::llvm_err("strided loop: the loop variable's slot")),
            };
            let s = self.scalar_of(w.step)?.into_int_value();
            let next = if signed { self.b.build_int_nsw_add(last, s, "")? } else { self.b.build_int_nuw_add(last, s, "")? };
            self.b.build_store(var_slot, next)?;
            self.b.build_unconditional_branch(done)?;
        }
        self.locals[w.var] = Slot::Scalar(var_slot, var_ty);
        self.b.position_at_end(plain);
        as_written(self)?;
        if !self.terminated() {
            self.b.build_unconditional_branch(done)?;
        }
        self.b.position_at_end(done);
        Ok(())
    }

    /// `while cond { body }` as written; `cold` (the fallback of a [`StridedWhile`], for steps
    /// that may wrap) is not unrolled on the GPU.
    fn plain_while(&mut self, id: LoopId, cond: &Expr, body: &Block, cold: bool) -> R<()> {
        let head = self.ctx().append_basic_block(self.fv, "");
        let bodyb = self.ctx().append_basic_block(self.fv, "");
        let exit = self.ctx().append_basic_block(self.fv, "");
        self.b.build_unconditional_branch(head)?;
        self.b.position_at_end(head);
        let cv = self.scalar_of(cond)?;
        if !self.terminated() {
            self.b.build_conditional_branch(cv.into_int_value(), bodyb, exit)?;
        }
        self.b.position_at_end(bodyb);
        self.loops.insert(id, LoopBlocks { cont: head, exit, value: None });
        self.block(body)?;
        if !self.terminated() {
            let backedge = self.b.build_unconditional_branch(head)?;
            if cold && !self.cx.host {
                self.set_loop_metadata(backedge, &[("llvm.loop.unroll.disable", None)])?;
            }
        }
        self.b.position_at_end(exit);
        Ok(())
    }

    /// `loop { body }` as written; `cold` (the fallback of a [`StridedWhile`], for steps that
    /// may wrap) is not unrolled on the GPU.
    fn plain_loop(&mut self, id: LoopId, body: &Block, ty: Ty, cold: bool) -> R<Val<'ctx>> {
        let bodyb = self.ctx().append_basic_block(self.fv, "");
        let exit = self.ctx().append_basic_block(self.fv, "");
        let value = self.value_slot(ty)?;
        self.b.build_unconditional_branch(bodyb)?;
        self.b.position_at_end(bodyb);
        self.loops.insert(id, LoopBlocks { cont: bodyb, exit, value });
        self.block(body)?;
        if !self.terminated() {
            let backedge = self.b.build_unconditional_branch(bodyb)?;
            if cold && !self.cx.host {
                self.set_loop_metadata(backedge, &[("llvm.loop.unroll.disable", None)])?;
            }
        }
        self.b.position_at_end(exit);
        Ok(match value {
            Some(slot) => self.slot_value(slot)?,
            None if ty == Ty::Never => {
                self.b.build_unreachable()?;
                self.start_dead_block();
                Val::Never
            }
            None => Val::Unit,
        })
    }

    /// `for var in start..end` (or `..=`, or `.step_by(step)`) with Rust's meaning: no value past
    /// the bound, no overflow near the type's maximum, `step_by(0)` stepping by one. The trip
    /// count is computed before the loop, as Rust's `StepBy` does, and the loop counts it down
    /// with a counter that cannot wrap: LLVM then knows the trip count and unrolls and
    /// vectorises the loop (a strided loop whose exit test is `i < end` after a wrapping `+=`
    /// has no computable trip count).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn for_loop(
        &mut self,
        id: LoopId,
        var: LocalId,
        start: &Expr,
        end: &Expr,
        inclusive: bool,
        step: Option<Step<'_, 'ctx>>,
        body: &Block,
    ) -> R<()> {
        let s = start.ty.scalar().unwrap_or(Scalar::I32);
        let it = self.cx.scalar_ty(s).into_int_type();
        let lo = self.scalar_of(start)?.into_int_value();
        let hi = self.scalar_of(end)?.into_int_value();
        // The step as given (a `usize`, 0 meaning 1), and narrowed to the loop's type for the
        // increment: a step the narrower type cannot hold takes one step across the whole range,
        // so its narrowed value is never added.
        let step_v = match step {
            Some(Step::Value(v)) => Some(v),
            Some(Step::Expr(st)) => {
                let v = self.scalar_of(st)?.into_int_value();
                // step_by(0) would loop forever; it steps by one instead.
                let zero = self.cx.i64.const_zero();
                let is0 = self.b.build_int_compare(IntPredicate::EQ, v, zero, "")?;
                Some(self.b.build_select(is0, self.cx.i64.const_int(1, false), v, "")?.into_int_value())
            }
            None => None,
        };
        let step_narrow = match step_v {
            Some(v) if s.bits() < 64 => Some(self.b.build_int_truncate(v, it, "")?),
            other => other,
        };
        let (lt, le) = if s.is_signed() { (IntPredicate::SLT, IntPredicate::SLE) } else { (IntPredicate::ULT, IntPredicate::ULE) };
        let go = self.b.build_int_compare(if inclusive { le } else { lt }, lo, hi, "")?;
        let setup = self.ctx().append_basic_block(self.fv, "");
        let exit = self.ctx().append_basic_block(self.fv, "");
        self.b.build_conditional_branch(go, setup, exit)?;
        self.b.position_at_end(setup);
        // The index of the last iteration: (end - start - 1) / step, or (end - start) / step for
        // `..=`. `end >= start` here, so the difference fits the type read as unsigned.
        let span = self.b.build_int_sub(hi, lo, "")?;
        let span = if inclusive { span } else { self.b.build_int_nuw_sub(span, it.const_int(1, false), "")? };
        let last = match step_v {
            Some(st) if s.bits() < 64 => {
                let wide = self.b.build_int_z_extend(span, self.cx.i64, "")?;
                let q = self.b.build_int_unsigned_div(wide, st, "")?;
                self.b.build_int_truncate(q, it, "")?
            }
            Some(st) => self.b.build_int_unsigned_div(span, st, "")?,
            None => span,
        };
        let counter = self.alloca(s)?;
        let current = self.alloca(s)?;
        let slot = self.alloca(s)?;
        self.b.build_store(counter, it.const_zero())?;
        self.b.build_store(current, lo)?;
        self.locals[var] = Slot::Scalar(slot, s);
        let step_v = step_narrow.unwrap_or(it.const_int(1, false));
        // The value of the last iteration: at most `end`, so nothing here wraps.
        let final_v = self.b.build_int_add(lo, self.b.build_int_mul(last, step_v, "")?, "")?;
        let constant_step = step_v.is_const();
        // `last` is the index of the last iteration: n + 1 iterations.
        let whole =
            !self.cx.host && last.get_zero_extended_constant().is_some_and(|n| n < FULL_UNROLL_MAX) && indexes_fixed_array(body, var);
        let shape = Counted { id, it, counter, current, slot, last, step: step_v, constant_step, whole, signed: s.is_signed(), exit };
        // A loop unrolled whole is versioned too, both copies unrolled (the fixed-size array it
        // indexes stays in registers only if no copy indexes it by a variable): the checked
        // softmax of the speed suite, whose 16 loads each sat behind a check of the row, issues
        // them together in the fast copy (H200 run 6: 0.56x NVRTC through safe launches,
        // 0.88x unchecked), at the price of registers for both copies (66 against 58).
        let versioned = self.version_condition(var, s, lo, final_v, body)?;
        match versioned {
            Some((inside, sites)) => {
                let fast = self.ctx().append_basic_block(self.fv, "");
                let slow = self.ctx().append_basic_block(self.fv, "");
                self.b.build_conditional_branch(inside, fast, slow)?;
                self.version_depth += 1;
                self.b.position_at_end(fast);
                let fresh: Vec<_> = sites.into_iter().filter(|p| self.proven.insert(*p)).collect();
                self.counted_loop(&shape, body, false)?;
                for p in fresh {
                    self.proven.remove(&p);
                }
                self.b.position_at_end(slow);
                if shape.whole && !leaves_loop(body, id) {
                    self.rolled_fallback(&shape, body)?;
                } else {
                    self.counted_loop(&shape, body, true)?;
                }
                self.version_depth -= 1;
            }
            None => self.counted_loop(&shape, body, false)?,
        }
        self.b.position_at_end(exit);
        Ok(())
    }

    /// The checked copy of a loop unrolled whole, not unrolled: the fixed-size arrays its body
    /// indexes by a value (the register array of the fast copy) are copied to a slot of their
    /// own before it and back after it, so that only this copy, which a correct launch never
    /// runs, indexes memory by a value; the fast copy's array stays in registers. An unrolled
    /// checked copy (what this replaces) cost the speed suite's softmax 2-3% on the H200
    /// though it never ran (docs/benchmarks.md, run 21).
    fn rolled_fallback(&mut self, c: &Counted<'ctx>, body: &Block) -> R<()> {
        let back = self.ctx().append_basic_block(self.fv, "");
        let mut saved = Vec::new();
        let own_locals = declared_locals(body);
        for l in variably_indexed(body).into_iter().filter(|l| !own_locals.contains(l)) {
            if let Slot::Agg(p, t) = self.locals[l] {
                let own = self.temp(t)?;
                self.copy(own, p, t)?;
                self.locals[l] = Slot::Agg(own, t);
                saved.push((l, p, own, t));
            }
        }
        self.counted_loop(&Counted { exit: back, whole: false, ..*c }, body, true)?;
        self.b.position_at_end(back);
        // LLVM merges the fast copy's load of an element with its read back here into one
        // load through a pointer that is global in one copy and local in the other (a generic
        // `ld` after the copies meet, for a few elements). Keeping them apart (each read back
        // `volatile`) cost the speed suite's softmax 2% on the H200 (a spill in the fast path).
        for (l, p, own, t) in saved {
            self.copy(p, own, t)?;
            self.locals[l] = Slot::Agg(p, t);
        }
        self.b.build_unconditional_branch(c.exit)?;
        Ok(())
    }

    /// One copy of a counted loop, entered from the current block: the body runs for counter
    /// values 0 to `last`, the index stepping from its first value. `fallback`: the checked
    /// copy of a versioned loop, which runs only when an access would leave its array.
    fn counted_loop(&mut self, c: &Counted<'ctx>, body: &Block, fallback: bool) -> R<()> {
        let bodyb = self.ctx().append_basic_block(self.fv, "");
        let latch = self.ctx().append_basic_block(self.fv, "");
        self.b.build_unconditional_branch(bodyb)?;
        self.b.position_at_end(bodyb);
        let i = self.b.build_load(c.it, c.current, "")?;
        self.b.build_store(c.slot, i)?;
        self.loops.insert(c.id, LoopBlocks { cont: latch, exit: c.exit, value: None });
        let outer_fallback = self.in_fallback;
        self.in_fallback |= fallback;
        let lowered = self.block(body);
        self.in_fallback = outer_fallback;
        lowered?;
        if !self.terminated() {
            self.b.build_unconditional_branch(latch)?;
        }
        self.b.position_at_end(latch);
        let k = self.b.build_load(c.it, c.counter, "")?.into_int_value();
        let i = self.b.build_load(c.it, c.current, "")?.into_int_value();
        let one = c.it.const_int(1, false);
        // k < last on the way back, so neither the counter nor (for unsigned types) the index
        // wraps on any iteration that runs; after the last one the next index is never used.
        self.b.build_store(c.counter, self.b.build_int_nuw_add(k, one, "")?)?;
        let next = if c.signed { self.b.build_int_add(i, c.step, "")? } else { self.b.build_int_nuw_add(i, c.step, "")? };
        self.b.build_store(c.current, next)?;
        let done = self.b.build_int_compare(IntPredicate::EQ, k, c.last, "")?;
        let backedge = self.b.build_conditional_branch(done, c.exit, bodyb)?;
        // NVIDIA's compiler unrolls a loop whose trip count is known only at run time by 4; so
        // does kache on NVPTX (LLVM's own allowance for NVPTX, a quarter of the usual cost
        // threshold, unrolls a loop with a libdevice call in it by 2 or not at all). A constant
        // trip count is left to LLVM, which unrolls such loops fully where it pays.
        // A loop over constants that indexes a fixed-size array with its variable is unrolled
        // whole, as NVIDIA's compiler does, so that the array lives in registers: LLVM's cost
        // model unrolls a body with a libdevice call in it by 2 at most, which leaves the array
        // in local memory for ptxas to rescue (or not).
        // The checked copy of a versioned loop runs only on the way to a fault: it is not
        // unrolled, which keeps ptxas from allocating registers for the unrolled checks of code
        // that a correct launch never runs (the tiled matmul: 40 registers instead of 32, so a
        // block of 1,024 threads fits once per SM instead of twice).
        if (fallback || self.in_fallback) && !c.whole && !self.cx.host {
            self.set_loop_metadata(backedge, &[("llvm.loop.unroll.disable", None)])?;
        } else if !self.cx.host {
            match c.last.get_zero_extended_constant() {
                Some(_) if c.whole => self.set_full_unroll(backedge)?,
                Some(_) => {}
                None if unrollable(self.cx.input.program, body, &self.skip_stmts) => self.set_unroll_count(backedge, 4, c.constant_step)?,
                None => {}
            }
        }
        Ok(())
    }

    /// Marks the loop whose back edge is `backedge` to be unrolled `count` times
    /// (`llvm.loop.unroll.count`); with `free_for_ptxas`, the unrolled loop is left for ptxas to
    /// unroll further.
    ///
    /// What ptxas does with NVIDIA's unrolled loops decides which: NVVM's unrolled loop keeps
    /// its exit test `j < n` and no `.pragma "nounroll"` (only the remainder loop has one), so
    /// ptxas unrolls it again when it can count its trips, that is when the step is a constant
    /// (a block-strided loop: 16 loads in flight, not 4), and leaves it when the step is known
    /// only at run time (a grid-strided loop: 4 loads in flight, the shape that reaches the
    /// copy bandwidth). LLVM's unrolled loop counts its trips down to zero, which ptxas can
    /// always count: so a loop with a run-time step keeps LLVM's `llvm.loop.unroll.disable`
    /// (`.pragma "nounroll"`) on the unrolled loop, and a loop with a constant step gets the
    /// follow-up `llvm.loop.unroll.followup_unrolled` (only `llvm.loop.mustprogress`) instead.
    pub(super) fn set_unroll_count(&self, backedge: InstructionValue<'ctx>, count: u32, free_for_ptxas: bool) -> R<()> {
        let count = self.cx.i32.const_int(count as u64, false);
        if free_for_ptxas {
            self.set_loop_metadata(backedge, &[("llvm.loop.unroll.count", Some(count)), ("llvm.loop.unroll.followup_unrolled", None)])
        } else {
            self.set_loop_metadata(backedge, &[("llvm.loop.unroll.count", Some(count))])
        }
    }

    /// Marks the loop whose back edge is `backedge` to be unrolled whole
    /// (`llvm.loop.unroll.full`).
    fn set_full_unroll(&self, backedge: InstructionValue<'ctx>) -> R<()> {
        self.set_loop_metadata(backedge, &[("llvm.loop.unroll.full", None)])
    }

    /// Gives the loop whose back edge is `backedge` a loop id with these hints: each a name and
    /// an optional constant; `llvm.loop.unroll.followup_unrolled` stands for the follow-up
    /// that gives the unrolled loop only `llvm.loop.mustprogress`.
    fn set_loop_metadata(&self, backedge: InstructionValue<'ctx>, hints: &[(&str, Option<IntValue<'ctx>>)]) -> R<()> {
        use inkwell::llvm_sys::core as c;
        use inkwell::llvm_sys::debuginfo as di;
        use inkwell::llvm_sys::prelude::LLVMMetadataRef;
        let ctx = self.ctx().raw();
        let kind = "llvm.loop";
        // SAFETY: every handle comes from this context; the temporary node stands for the loop
        // id's reference to itself and is replaced by the id before it is dropped, as LLVM's
        // own front ends build self-referential loop ids.
        unsafe {
            let string = |s: &str| c::LLVMMDStringInContext2(ctx, s.as_ptr().cast(), s.len());
            let node = |ops: &mut [LLVMMetadataRef]| c::LLVMMDNodeInContext2(ctx, ops.as_mut_ptr(), ops.len());
            let tmp = di::LLVMTemporaryMDNode(ctx, std::ptr::null_mut(), 0);
            let mut ops = vec![tmp];
            for (name, value) in hints {
                let mut hint = vec![string(name)];
                if *name == "llvm.loop.unroll.followup_unrolled" {
                    hint.push(node(&mut [string("llvm.loop.mustprogress")]));
                }
                if let Some(v) = value {
                    hint.push(c::LLVMValueAsMetadata(v.as_value_ref()));
                }
                ops.push(node(&mut hint));
            }
            let id = node(&mut ops);
            di::LLVMMetadataReplaceAllUsesWith(tmp, id);
            let kind_id = c::LLVMGetMDKindIDInContext(ctx, kind.as_ptr().cast(), kind.len() as u32);
            c::LLVMSetMetadata(backedge.as_value_ref(), kind_id, c::LLVMMetadataAsValue(ctx, id));
        }
        Ok(())
    }
}
