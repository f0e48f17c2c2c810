//! Wide memory accesses: a kernel whose threads each read or write a few contiguous elements of
//! an array parameter (`for k in 0..4 { y[4 * i + k] .. }`, a row loop `for j in 0..cols` over
//! `a[r * cols + j]` or `m[[r, j]]`, an element of a 16-byte struct, a pair of `f16`) runs, when
//! a test at its start finds those arrays' addresses aligned (and the values that scale their
//! rows multiples of the group's length), a copy of its body in which LLVM knows it: there the
//! accesses' alignment is inferred (`infer-alignment`, after unrolling) and the back end's
//! load-store vectoriser merges each group into one 8- or 16-byte access (`ld.global.nc.v4.f32`,
//! `st.global.v4.f32`). Otherwise the body as written runs, with its 2- to 8-byte accesses: an
//! array reaches a kernel through a view at any element offset (`DeviceArray::view`, DLPack,
//! foreign arrays), so the address of its first element is aligned only for its element type.
//!
//! In the aligned copy each array's address is replaced by itself with its low bits cleared
//! (and asserted aligned by an `llvm.assume` operand bundle), and each scaling
//! value likewise (the same values there, as the test proved, but visibly aligned and multiples
//! to LLVM): so a wrong test would compute wrong results rather than hide (on a view that starts
//! one element in, the copy would read and write the element before each), and the host
//! backend, which compiles the same two copies, shows it (the `wide_access` scenario). Both copies keep their bounds checks (and the loop versioning of `version.rs`); the
//! test reads only kernel parameters, so every thread of a launch takes the same copy.

use std::collections::{HashMap, HashSet};

use inkwell::IntPredicate;
use inkwell::types::AsTypeRef;
use inkwell::values::{AsValueRef, BasicValueEnum, IntValue, PointerValue};

use super::loops::{StridedWhile, unrollable};
use super::version::written_locals;
use super::{Cx, FnLower, R, Slot, Val, llvm_err, value_ty};
use crate::codegen::aligned::ALIGNED_BRANCH;
use crate::ir::*;

/// The widest access the vectoriser makes, in bytes (`v4` of 32 bits, `v2` of 64).
const WIDEST: u64 = 16;

/// How deep the analysis follows `let` bindings and operands.
const MAX_DEPTH: u32 = 32;

/// A value the same for every thread of a launch that scales an index: a scalar parameter
/// nothing assigns, or the stride of a dimension of an array parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Uniform {
    Param(LocalId),
    Stride(LocalId, usize),
}

impl Uniform {
    /// The parameter it is, or is the stride of.
    fn local(self) -> LocalId {
        match self {
            Uniform::Param(l) | Uniform::Stride(l, _) => l,
        }
    }
}

/// What the aligned copy of a kernel needs: each array parameter's address aligned to a number
/// of bytes, and each scaling value a multiple of a number of elements (powers of two).
#[derive(Debug, Default)]
pub(super) struct AlignPlan {
    arrays: Vec<(LocalId, u64)>,
    factors: Vec<(Uniform, u64)>,
}

impl AlignPlan {
    fn need_array(&mut self, l: LocalId, bytes: u64) {
        match self.arrays.iter_mut().find(|(a, _)| *a == l) {
            Some((_, b)) => *b = (*b).max(bytes),
            None => self.arrays.push((l, bytes)),
        }
    }

    fn need_factor(&mut self, u: Uniform, multiple: u64) {
        match self.factors.iter_mut().find(|(f, _)| *f == u) {
            Some((_, m)) => *m = (*m).max(multiple),
            None => self.factors.push((u, multiple)),
        }
    }
}

/// One addend of an index: `c * (factors)`, with the uniform factor among them if any, and
/// whether it is the variable of a contiguous loop on its own.
struct Term {
    constant: u64,
    uniform: Option<Uniform>,
    /// A constant on its own (`+ 1`), not a product.
    offset: bool,
    /// The group length of the loop whose variable this term is (`+ k`).
    lane: Option<u64>,
}

struct Analysis<'p> {
    f: &'p Func,
    types: &'p Types,
    layouts: &'p [Option<Layout>],
    written: HashSet<LocalId>,
    /// Locals bound once by `let` and never assigned, with their initialisers.
    lets: HashMap<LocalId, &'p Expr>,
    /// The variables of loops that step by one, with how many consecutive values a thread
    /// handles together: a constant trip count, or 4 for a loop unrolled by 4.
    lanes: HashMap<LocalId, u64>,
    plan: AlignPlan,
}

impl<'a, 'ctx> Cx<'a, 'ctx> {
    /// The aligned copy that kernel `id` needs, if any access of its body can be widened.
    pub(super) fn align_plan(&self, id: FuncId) -> Option<AlignPlan> {
        let p = self.input.program;
        if !self.aligned || id != p.kernel || self.input.options.opt_level < 2 {
            return None;
        }
        let f = &p.funcs[id];
        let mut a = Analysis {
            f,
            types: &p.types,
            layouts: &self.input.spec.layouts,
            written: written_locals(&f.body),
            lets: HashMap::new(),
            lanes: HashMap::new(),
            plan: AlignPlan::default(),
        };
        let unsigned64 = |t: &Ty| matches!(t.scalar(), Some(Scalar::Usize | Scalar::U64));
        let (written, lets) = (&a.written, &mut a.lets);
        let mut note_lets = |b: &'a Block| {
            for s in &b.stmts {
                if let Stmt::Let(l, Some(init)) = s
                    && !written.contains(l)
                {
                    lets.insert(*l, init);
                }
            }
        };
        note_lets(&f.body);
        visit_block(&f.body, &mut |e| match &e.kind {
            ExprKind::Block(b) | ExprKind::Loop(_, b) | ExprKind::While(_, _, b) | ExprKind::For { body: b, .. } => note_lets(b),
            ExprKind::If(_, t, x) => {
                note_lets(t);
                if let Some(x) = x {
                    note_lets(x);
                }
            }
            _ => {}
        });
        let lanes = &mut a.lanes;
        visit_block(&f.body, &mut |e| {
            let (var, group) = match &e.kind {
                ExprKind::For { body, .. } | ExprKind::While(_, _, body) | ExprKind::Loop(_, body) if guarded_access(body) => return,
                ExprKind::For { var, start, end, inclusive, step: None, body, .. } => {
                    let group = match (literal(start), literal(end)) {
                        _ if !unrollable(p, body, &[]) => 0,
                        (Some(s), Some(e)) => e.saturating_add(*inclusive as u64).saturating_sub(s),
                        _ if unrollable(p, body, &[]) => 4,
                        _ => 0,
                    };
                    (*var, group)
                }
                ExprKind::While(id, cond, body) => match StridedWhile::of(*id, cond, body).and_then(|w| w.unit_step(p)) {
                    Some(v) => (v, 4),
                    None => return,
                },
                ExprKind::Loop(id, body) => match StridedWhile::of_loop(*id, body).and_then(|w| w.unit_step(p)) {
                    Some(v) => (v, 4),
                    None => return,
                },
                _ => return,
            };
            if group >= 2 && unsigned64(&f.locals[var].ty) {
                lanes.insert(var, group);
            }
        });
        visit_block(&f.body, &mut |e| match &e.kind {
            ExprKind::Index(arr, idx) => a.access(arr, idx),
            ExprKind::Assign(p, _) | ExprKind::CompoundAssign(_, p, _) | ExprKind::CallRef(_, p, _) => {
                if let Some((arr, idx)) = indexed(p) {
                    a.access(arr, idx);
                }
            }
            _ => {}
        });
        (!a.plan.arrays.is_empty()).then_some(a.plan)
    }
}

/// Whether `body` reads or writes an array element in a branch (of an `if` or a `match`): the
/// load-store vectoriser merges only accesses that run together, and a loop with a collective or
/// an exit of its own (`unrollable`) does not become one block of them either.
fn guarded_access(body: &Block) -> bool {
    let mut found = false;
    visit_block(body, &mut |e| match &e.kind {
        ExprKind::If(_, t, x) => found |= accesses(t) || x.as_ref().is_some_and(accesses),
        ExprKind::Match(_, arms) => {
            found |= arms.iter().any(|a| {
                let mut any = false;
                visit_expr(&a.body, &mut |e| any |= access(e));
                any
            })
        }
        _ => {}
    });
    found
}

/// Whether `b` reads or writes an array element.
fn accesses(b: &Block) -> bool {
    let mut any = false;
    visit_block(b, &mut |e| any |= access(e));
    any
}

/// Whether `e` itself reads or writes an array element.
fn access(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Index(..) => true,
        ExprKind::Assign(p, _) | ExprKind::CompoundAssign(_, p, _) | ExprKind::CallRef(_, p, _) => indexed(p).is_some(),
        _ => false,
    }
}

/// The value of an integer literal.
fn literal(e: &Expr) -> Option<u64> {
    match e.kind {
        ExprKind::Lit(ScalarValue::Int(_, v)) => Some(v),
        _ => None,
    }
}

/// The array element a place is, or is a part of.
fn indexed(p: &Place) -> Option<(&Expr, &[Expr])> {
    match p {
        Place::Index(a, idx) => Some((a, idx)),
        Place::Field(p, _) | Place::Elem(p, _) => indexed(p),
        Place::Local(_) => None,
    }
}

impl Analysis<'_> {
    /// Notes what widening the access `arr[idx]` needs, if it can be widened.
    fn access(&mut self, arr: &Expr, idx: &[Expr]) {
        let ExprKind::Local(l) = arr.kind else { return };
        if l >= self.f.params {
            return;
        }
        let Ty::Array(at) = value_ty(self.f.locals[l].ty) else { return };
        let contiguous = match self.layouts.get(l).copied().flatten() {
            Some(Layout::C) => (at.ndim as usize).saturating_sub(1),
            Some(Layout::F) => 0,
            _ => return,
        };
        let es = match at.elem {
            Elem::Struct(id) => {
                // Every element starts a multiple of its size from the first: aligned as the
                // largest power of two that divides the size.
                let size = self.types.size_align(Ty::Agg(id)).map(|s| s.size).unwrap_or(0);
                let align = (size & size.wrapping_neg()).min(WIDEST);
                if align >= 8 {
                    self.plan.need_array(l, align);
                }
                return;
            }
            Elem::Scalar(s) => s.size() as u64,
        };
        let Some(index) = idx.get(contiguous) else { return };
        let mut terms = Vec::new();
        self.terms(index, 0, &mut terms);
        // How many consecutive elements a thread handles: a contiguous loop's (`.. + k`), or
        // the stride of `c * i + d`, 0 < d < c, whose `d`s name the elements of a group.
        let lane = terms.iter().find_map(|t| t.lane);
        let group = lane.or_else(|| {
            let offsets: Vec<u64> = terms.iter().filter(|t| t.offset).map(|t| t.constant).collect();
            terms.iter().filter(|t| !t.offset && t.lane.is_none()).map(|t| t.constant).find(|c| offsets.iter().any(|d| *d > 0 && d < c))
        });
        let Some(group) = group else { return };
        let bytes = pow2_floor(group.saturating_mul(es).min(WIDEST));
        if bytes < 4 || bytes < 2 * es {
            return;
        }
        let multiple = bytes / es;
        let mut needs = Vec::new();
        let mut lane_seen = false;
        for t in &terms {
            if t.offset {
                continue;
            }
            if t.lane.is_some() && !lane_seen {
                lane_seen = true;
                continue;
            }
            let need = multiple / gcd(t.constant, multiple);
            if need == 1 {
                continue;
            }
            match t.uniform {
                Some(u) => needs.push((u, need)),
                // A term of no known multiple (a thread index): no alignment to prove.
                None => return,
            }
        }
        for (d, i) in idx.iter().enumerate() {
            if d != contiguous && literal(i) != Some(0) {
                needs.push((Uniform::Stride(l, d), multiple));
            }
        }
        self.plan.need_array(l, bytes);
        for (u, m) in needs {
            self.plan.need_factor(u, m);
        }
    }

    /// The addends of an integer index (through `+` and the `let`s that name them).
    fn terms(&self, e: &Expr, depth: u32, out: &mut Vec<Term>) {
        match &e.kind {
            ExprKind::Binary(BinOp::Add, a, b) if depth < MAX_DEPTH => {
                self.terms(a, depth + 1, out);
                self.terms(b, depth + 1, out);
            }
            ExprKind::Local(l) if depth < MAX_DEPTH && self.lets.contains_key(l) && self.lets[l].ty == e.ty => {
                self.terms(self.lets[l], depth + 1, out)
            }
            ExprKind::Local(l) if self.lanes.contains_key(l) => {
                out.push(Term { constant: 1, uniform: None, offset: false, lane: Some(self.lanes[l]) })
            }
            ExprKind::Lit(_) => out.push(Term { constant: literal(e).unwrap_or(1), uniform: None, offset: true, lane: None }),
            _ => {
                let (constant, uniform) = self.factors(e, depth);
                out.push(Term { constant, uniform, offset: false, lane: None })
            }
        }
    }

    /// A product's constant factor and a uniform factor of it, if any. Integer arithmetic
    /// wraps at a power of two at least the alignments asked for, so a multiple of 16 stays one
    /// through products, casts and wrapping.
    fn factors(&self, e: &Expr, depth: u32) -> (u64, Option<Uniform>) {
        if depth >= MAX_DEPTH {
            return (1, None);
        }
        match &e.kind {
            ExprKind::Lit(ScalarValue::Int(_, v)) => (*v, None),
            ExprKind::Binary(BinOp::Mul, a, b) => {
                let (ca, ua) = self.factors(a, depth + 1);
                let (cb, ub) = self.factors(b, depth + 1);
                (ca.wrapping_mul(cb), ua.or(ub))
            }
            ExprKind::Binary(BinOp::Shl, a, b) => match literal(b) {
                Some(s) if s < 64 => {
                    let (c, u) = self.factors(a, depth + 1);
                    (c.wrapping_shl(s as u32), u)
                }
                _ => (1, None),
            },
            ExprKind::Cast(x) if x.ty.scalar().is_some_and(|s| s.is_int() && s.bits() >= 8) => self.factors(x, depth + 1),
            ExprKind::Local(l) if self.lets.contains_key(l) => self.factors(self.lets[l], depth + 1),
            ExprKind::Local(l) if *l < self.f.params && !self.written.contains(l) && e.ty.scalar().is_some_and(|s| s.is_int()) => {
                (1, Some(Uniform::Param(*l)))
            }
            _ => (1, None),
        }
    }
}

fn pow2_floor(v: u64) -> u64 {
    if v == 0 { 0 } else { 1 << (63 - v.leading_zeros()) }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a.max(1) } else { gcd(b, a % b) }
}

/// A plan's arrays and scaling values as the kernel holds them.
struct Resolved<'ctx> {
    arrays: Vec<(LocalId, PointerValue<'ctx>, u64)>,
    factors: Vec<(Uniform, IntValue<'ctx>, u64)>,
}

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    /// The kernel's body twice, behind the test of `plan`: the aligned copy, then the body as
    /// written, whose value is returned (the aligned copy returns on its own).
    pub(super) fn aligned_versions(&mut self, plan: &AlignPlan, body: &Block) -> R<Val<'ctx>> {
        let Some(r) = self.resolve(plan) else { return self.block(body) };
        let ok = self.alignment_test(&r)?;
        let aligned = self.ctx().append_basic_block(self.fv, "");
        let written = self.ctx().append_basic_block(self.fv, "");
        let branch = self.b.build_conditional_branch(ok, aligned, written)?;
        let kind = self.ctx().get_kind_id(ALIGNED_BRANCH);
        branch.set_metadata(self.ctx().metadata_node(&[]), kind).map_err(|e| llvm_err(format!("{ALIGNED_BRANCH}: {e}")))?;
        self.b.position_at_end(aligned);
        let saved = self.locals.clone();
        let sites = self.activemask_sites;
        self.assume_aligned(&r)?;
        self.aligned_copy = true;
        let done = self.block(body).and_then(|_| match self.terminated() {
            true => Ok(()),
            false => {
                self.mark_aligned_exit()?;
                self.b.build_return(None)?;
                Ok(())
            }
        });
        self.aligned_copy = false;
        done?;
        self.locals = saved;
        self.activemask_sites = sites;
        self.b.position_at_end(written);
        self.block(body)
    }

    /// The plan's arrays and scaling values, `None` if one is not where the plan says.
    fn resolve(&self, plan: &AlignPlan) -> Option<Resolved<'ctx>> {
        let array = |l: LocalId| match &self.locals[l] {
            Slot::Array(a) => Some(a.clone()),
            _ => None,
        };
        let arrays = plan.arrays.iter().map(|(l, bytes)| Some((*l, array(*l)?.ptr, *bytes))).collect::<Option<Vec<_>>>()?;
        let factors = plan
            .factors
            .iter()
            .map(|(u, multiple)| {
                let v = match *u {
                    Uniform::Param(l) => match &self.locals[l] {
                        Slot::Value(BasicValueEnum::IntValue(v)) => *v,
                        _ => return None,
                    },
                    Uniform::Stride(l, d) => *array(l)?.strides.get(d)?,
                };
                Some((*u, v, *multiple))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Resolved { arrays, factors })
    }

    /// Whether every array is aligned and every scaling value a multiple, as `r` asks.
    fn alignment_test(&mut self, r: &Resolved<'ctx>) -> R<IntValue<'ctx>> {
        let mut ok = self.cx.i1.const_int(1, false);
        for (_, ptr, bytes) in &r.arrays {
            let addr = self.b.build_ptr_to_int(*ptr, self.cx.i64, "")?;
            let low = self.b.build_and(addr, self.i64c(bytes - 1), "")?;
            let zero = self.b.build_int_compare(IntPredicate::EQ, low, self.i64c(0), "")?;
            ok = self.b.build_and(ok, zero, "")?;
        }
        for (_, v, multiple) in &r.factors {
            let low = self.b.build_and(*v, v.get_type().const_int(multiple - 1, false), "")?;
            let zero = self.b.build_int_compare(IntPredicate::EQ, low, v.get_type().const_zero(), "")?;
            ok = self.b.build_and(ok, zero, "")?;
        }
        Ok(ok)
    }

    /// In the aligned copy: each array's address and each scaling value replaced by itself with
    /// its low bits cleared, the addresses' alignment also as `llvm.assume` bundles.
    fn assume_aligned(&mut self, r: &Resolved<'ctx>) -> R<()> {
        for (l, ptr, bytes) in &r.arrays {
            // `ptr - (ptr & (bytes - 1))`, as a `getelementptr` that keeps the address based on
            // the parameter (NVPTX's `SeparateConstOffsetFromGEP` crashes on `llvm.ptrmask`).
            let addr = self.b.build_ptr_to_int(*ptr, self.cx.i64, "")?;
            let low = self.b.build_and(addr, self.i64c(bytes - 1), "")?;
            let back = self.b.build_int_neg(low, "")?;
            // SAFETY: not `inbounds`; the address is the parameter's own where the test passed.
            let masked = unsafe { self.b.build_gep(self.cx.i8, *ptr, &[back], "")? };
            self.assume_align(masked.into(), *bytes)?;
            if let Slot::Array(a) = &mut self.locals[*l] {
                a.ptr = masked;
            }
        }
        for (u, v, multiple) in &r.factors {
            let cleared = self.b.build_and(*v, v.get_type().const_int(!(multiple - 1), true), "")?;
            match (*u, &mut self.locals[u.local()]) {
                (Uniform::Param(_), slot) => *slot = Slot::Value(cleared.into()),
                (Uniform::Stride(_, d), Slot::Array(a)) => {
                    if let Some(s) = a.strides.get_mut(d) {
                        *s = cleared;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Before a return of the aligned copy: an `asm volatile` of a comment (no instruction),
    /// which keeps LLVM from merging the copies' identical tails into the block of the return
    /// they share (SimplifyCFG sinks the code common to a block's predecessors into it, and
    /// drops an empty `asm`): unrolled, the two copies of `for k in 0..4 { y[4 * i + k] = .. }`
    /// are the same code until the aligned one's alignment is inferred, later in the pipeline,
    /// and a merged tail's accesses are the unaligned copy's.
    pub(super) fn mark_aligned_exit(&self) -> R<()> {
        if !self.aligned_copy {
            return Ok(());
        }
        let ty = self.ctx().void_type().fn_type(&[], false);
        let asm = self.ctx().create_inline_asm(ty, "// aligned".into(), String::new(), true, false, None, false);
        self.b.build_indirect_call(ty, asm, &[], "")?;
        Ok(())
    }

    /// `llvm.assume(true) ["align"(ptr, bytes)]`: the pointer is aligned from here on.
    fn assume_align(&self, ptr: BasicValueEnum<'ctx>, bytes: u64) -> R<()> {
        use inkwell::llvm_sys::core as c;
        let name = "llvm.assume";
        let ty = self.ctx().void_type().fn_type(&[self.cx.i1.into()], false);
        let f = self.m.get_function(name).unwrap_or_else(|| self.m.add_function(name, ty, None));
        let tag = "align";
        let mut bundle_args = [ptr.as_value_ref(), self.i64c(bytes).as_value_ref()];
        let mut args = [self.cx.i1.const_int(1, false).as_value_ref()];
        // SAFETY: every handle comes from this context and module; the bundle is copied into the
        // call and disposed of after it, as LLVM's C API asks.
        unsafe {
            let bundle = c::LLVMCreateOperandBundle(tag.as_ptr().cast(), tag.len(), bundle_args.as_mut_ptr(), bundle_args.len() as u32);
            let mut bundles = [bundle];
            c::LLVMBuildCallWithOperandBundles(
                self.b.as_mut_ptr(),
                ty.as_type_ref(),
                f.as_value_ref(),
                args.as_mut_ptr(),
                args.len() as u32,
                bundles.as_mut_ptr(),
                1,
                c"".as_ptr(),
            );
            c::LLVMDisposeOperandBundle(bundle);
        }
        Ok(())
    }
}
