//! Expressions, statements and control flow: blocks, locals, operators' operands, `if`, the
//! loops, `break`/`continue`/`return`, and the divergence they cause.

use inkwell::values::BasicValueEnum;

use super::{FnLower, LErr, R, Slot, Val, llvm_err, value_ty};
use crate::ir::*;

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    pub(super) fn block(&mut self, b: &Block) -> R<Val<'ctx>> {
        let mut diverged = false;
        for s in &b.stmts {
            if self.skip_stmts.contains(&(s as *const Stmt)) {
                continue;
            }
            if let Stmt::Expr(e) | Stmt::Let(_, Some(e)) = s {
                diverged |= e.ty == Ty::Never;
            }
            match s {
                Stmt::Let(l, init) => {
                    let decl = &self.f.locals[*l];
                    match value_ty(decl.ty) {
                        Ty::Array(_) => {
                            if let Some(e) = init {
                                let v = self.expr(e)?;
                                if let Val::Array(a) = v {
                                    self.locals[*l] = Slot::Array(a);
                                }
                            }
                        }
                        Ty::Scalar(s) => {
                            let v = match init {
                                Some(e) => self.expr(e)?,
                                None => Val::Scalar(self.cx.scalar_ty(s).const_zero()),
                            };
                            self.locals[*l] = match v {
                                Val::Scalar(v) => self.scalar_local(*l, s, v)?,
                                _ => Slot::Scalar(self.alloca(s)?, s),
                            };
                        }
                        t @ Ty::Agg(_) => {
                            // A slot per `let`: a loop's next iteration binds a new value.
                            let slot = self.temp(t)?;
                            match init {
                                Some(e) => {
                                    let v = self.expr(e)?;
                                    if let Val::Agg(src) = v {
                                        self.copy(slot, src, t)?;
                                    }
                                }
                                None => self.zero(slot, t)?,
                            }
                            self.locals[*l] = Slot::Agg(slot, t);
                        }
                        _ => {
                            if let Some(e) = init {
                                self.expr(e)?;
                            }
                        }
                    }
                }
                Stmt::Expr(e) => {
                    self.expr(e)?;
                }
            }
            if self.terminated() {
                self.start_dead_block();
            }
        }
        match &b.tail {
            Some(t) => self.expr(t),
            None if diverged => Ok(Val::Never),
            None => Ok(Val::Unit),
        }
    }

    pub(super) fn expr(&mut self, e: &Expr) -> R<Val<'ctx>> {
        match crate::stack::ensure(64 << 10, 4 << 20, || self.expr_inner(e)) {
            // An operand diverged: this expression is never evaluated either.
            Err(LErr::Diverged) => Ok(Val::Never),
            other => other,
        }
    }

    /// Where scalar local `l` lives from its first value `v` on: the value itself if nothing
    /// writes the local (and `v` has the local's own type), else a stack slot holding it.
    pub(super) fn scalar_local(&mut self, l: LocalId, s: Scalar, v: BasicValueEnum<'ctx>) -> R<Slot<'ctx>> {
        if !self.written.contains(&l) && v.get_type() == self.cx.scalar_ty(s) {
            return Ok(Slot::Value(v));
        }
        let slot = self.alloca(s)?;
        self.b.build_store(slot, v)?;
        Ok(Slot::Scalar(slot, s))
    }

    /// A scalar operand; if it diverges, the expression being built diverges too.
    pub(super) fn scalar_of(&mut self, e: &Expr) -> R<BasicValueEnum<'ctx>> {
        match self.expr(e)? {
            Val::Scalar(v) => Ok(v),
            Val::Never => Err(LErr::Diverged),
            other => Err(llvm_err(format!("expected scalar, found {other:?}"))),
        }
    }

    pub(super) fn const_scalar(&self, v: ScalarValue) -> BasicValueEnum<'ctx> {
        match v {
            ScalarValue::Bool(b) => self.cx.i1.const_int(b as u64, false).into(),
            ScalarValue::Int(s, bits) => self.cx.scalar_ty(s).into_int_type().const_int(bits, false).into(),
            ScalarValue::F16(x) => self.ctx().i16_type().const_int(x.to_bits() as u64, false).into(),
            ScalarValue::Bf16(x) => self.ctx().i16_type().const_int(x.to_bits() as u64, false).into(),
            ScalarValue::F32(x) => self.ctx().f32_type().const_float(x as f64).into(),
            ScalarValue::F64(x) => self.ctx().f64_type().const_float(x).into(),
        }
    }

    pub(super) fn expr_inner(&mut self, e: &Expr) -> R<Val<'ctx>> {
        use ExprKind as K;
        Ok(match &e.kind {
            K::Lit(v) => Val::Scalar(self.const_scalar(*v)),
            K::PendingLit(_) => return Err(llvm_err("unresolved literal")),
            K::Unit => Val::Unit,
            K::Local(l) => match &self.locals[*l] {
                Slot::Scalar(p, s) => Val::Scalar(self.b.build_load(self.cx.scalar_ty(*s), *p, "")?),
                Slot::Value(v) => Val::Scalar(*v),
                Slot::Array(a) => Val::Array(a.clone()),
                Slot::Agg(p, t) => self.load_mem(*p, *t)?,
                Slot::None => return Err(llvm_err(format!("local {l} has no storage"))),
            },
            K::Capture(c) => self.capture(*c)?,
            K::Unary(op, x) => {
                let v = self.scalar_of(x)?;
                let s = x.ty.scalar().unwrap_or(Scalar::I32);
                Val::Scalar(match (op, s.is_float()) {
                    (UnOp::Neg, true) if s.is_half() => self.half_neg(v.into_int_value())?.into(),
                    (UnOp::Neg, true) => self.b.build_float_neg(v.into_float_value(), "")?.into(),
                    (UnOp::Neg, false) => self.b.build_int_neg(v.into_int_value(), "")?.into(),
                    (UnOp::Not, _) => self.b.build_not(v.into_int_value(), "")?.into(),
                })
            }
            K::Binary(op, a, b) => {
                let x = self.scalar_of(a)?;
                let y = self.scalar_of(b)?;
                let s = a.ty.scalar().unwrap_or(Scalar::I32);
                let ys = b.ty.scalar().unwrap_or(s);
                Val::Scalar(self.binary(*op, s, x, y, ys)?)
            }
            K::Logic(op, a, b) => self.logic(*op, a, b)?,
            K::Cast(x) => {
                let v = self.scalar_of(x)?;
                let from = x.ty.scalar().unwrap_or(Scalar::I32);
                let to = e.ty.scalar().unwrap_or(from);
                Val::Scalar(self.cast(v, from, to)?)
            }
            K::Index(a, idx) => {
                let arr = self.expr(a)?;
                let Val::Array(arr) = arr else { return Ok(Val::Never) };
                let p = self.element_ptr(&arr, a, idx)?;
                self.load_mem(p, arr.elem.ty())?
            }
            K::Assign(place, v) => {
                let val = self.expr(v)?;
                if matches!(val, Val::Never) {
                    return Ok(Val::Never);
                }
                let at = self.place_addr(place)?;
                self.write_addr(at, &val)?;
                Val::Unit
            }
            K::CompoundAssign(op, place, v) => {
                let rhs = self.scalar_of(v)?;
                let vs = v.ty.scalar().unwrap_or(Scalar::I32);
                let at = self.place_addr(place)?;
                let Val::Scalar(cur) = self.read_addr(at)? else { return Err(llvm_err("compound assign to non-scalar")) };
                let s = match at {
                    super::aggregate::Addr::Reg(_, s) => s,
                    super::aggregate::Addr::Mem(_, t) => t.scalar().ok_or_else(|| llvm_err("compound assign to non-scalar"))?,
                };
                let r = self.binary(*op, s, cur, rhs, vs)?;
                self.write_addr(at, &Val::Scalar(r))?;
                Val::Unit
            }
            K::Aggregate { parts, base } => self.aggregate(e.ty, parts, base.as_deref())?,
            K::Repeat(x) => self.repeat(e.ty, x)?,
            K::Zeroed => self.zeroed(e.ty)?,
            K::Field(..) | K::Elem(..) => self.part(e)?,
            K::CallRef(id, place, args) => self.call_ref(*id, place, args, e.ty)?,
            K::Call(id, args) => self.call(*id, args, e.ty)?,
            K::Builtin(Builtin::Unwrap, args) => self.unwrap(e, args)?,
            K::Builtin(b, args) => self.builtin(*b, args, e.ty)?,
            K::SharedArray { elem, len, site } => Val::Array(self.shared_array(*elem, *len, *site)?),
            K::DynSharedArray(elem) => Val::Array(self.dyn_shared(*elem)?),
            K::If(c, t, f) => self.if_expr(c, t, f.as_ref(), e.ty)?,
            K::Match(s, arms) => self.match_expr(s, arms, e.ty)?,
            K::Block(b) => self.block(b)?,
            K::While(id, c, body) => {
                self.while_loop(*id, c, body)?;
                Val::Unit
            }
            K::Loop(id, body) => self.loop_expr(*id, body, e.ty)?,
            K::For { id, var, start, end, inclusive, step, body } => {
                self.for_loop(*id, *var, start, end, *inclusive, step.as_deref().map(super::loops::Step::Expr), body)?;
                Val::Unit
            }
            K::Break(id, v) => {
                let val = match v {
                    Some(v) => match self.expr(v)? {
                        Val::Never => return Ok(Val::Never),
                        x => Some(x),
                    },
                    None => None,
                };
                let Some(lb) = self.loops.get(id) else { return Err(llvm_err("break target")) };
                let (exit, slot) = (lb.exit, lb.value);
                if let Some(val) = val {
                    self.fill_slot(slot, &val)?;
                }
                if !self.terminated() {
                    self.b.build_unconditional_branch(exit)?;
                }
                self.start_dead_block();
                Val::Never
            }
            K::Continue(id) => {
                let Some(lb) = self.loops.get(id) else { return Err(llvm_err("continue target")) };
                let cont = lb.cont;
                if !self.terminated() {
                    self.b.build_unconditional_branch(cont)?;
                }
                self.start_dead_block();
                Val::Never
            }
            K::Return(v) => {
                let val = match v {
                    Some(v) => Some(self.expr(v)?),
                    None => None,
                };
                if !self.terminated() {
                    match val {
                        Some(Val::Scalar(x)) if matches!(value_ty(self.f.ret), Ty::Scalar(_)) => {
                            self.b.build_return(Some(&x))?;
                        }
                        Some(Val::Agg(src)) if self.sret.is_some() => {
                            let dst = self.sret.ok_or_else(|| llvm_err("sret"))?;
                            self.copy(dst, src, self.f.ret)?;
                            self.b.build_return(None)?;
                        }
                        _ if matches!(value_ty(self.f.ret), Ty::Scalar(_)) => {
                            self.b.build_unreachable()?;
                        }
                        _ => {
                            self.mark_aligned_exit()?;
                            self.b.build_return(None)?;
                        }
                    }
                }
                self.start_dead_block();
                Val::Never
            }
        })
    }

    pub(super) fn logic(&mut self, op: LogicOp, a: &Expr, b: &Expr) -> R<Val<'ctx>> {
        let x = self.scalar_of(a)?.into_int_value();
        let from = self.b.get_insert_block().ok_or_else(|| llvm_err("no block"))?;
        let rhs_bb = self.ctx().append_basic_block(self.fv, "");
        let merge = self.ctx().append_basic_block(self.fv, "");
        match op {
            LogicOp::And => self.b.build_conditional_branch(x, rhs_bb, merge)?,
            LogicOp::Or => self.b.build_conditional_branch(x, merge, rhs_bb)?,
        };
        self.b.position_at_end(rhs_bb);
        let y = self.scalar_of(b)?.into_int_value();
        let rhs_end = self.b.get_insert_block().ok_or_else(|| llvm_err("no block"))?;
        let rhs_live = !self.terminated();
        if rhs_live {
            self.b.build_unconditional_branch(merge)?;
        }
        self.b.position_at_end(merge);
        let phi = self.b.build_phi(self.cx.i1, "")?;
        let short = self.cx.i1.const_int((op == LogicOp::Or) as u64, false);
        phi.add_incoming(&[(&short, from)]);
        if rhs_live {
            phi.add_incoming(&[(&y, rhs_end)]);
        }
        Ok(Val::Scalar(phi.as_basic_value()))
    }

    pub(super) fn if_expr(&mut self, c: &Expr, t: &Block, f: Option<&Block>, ty: Ty) -> R<Val<'ctx>> {
        let cv = self.scalar_of(c)?.into_int_value();
        let then_bb = self.ctx().append_basic_block(self.fv, "");
        let else_bb = self.ctx().append_basic_block(self.fv, "");
        let merge = self.ctx().append_basic_block(self.fv, "");
        if !self.terminated() {
            self.b.build_conditional_branch(cv, then_bb, else_bb)?;
        }
        let slot = self.value_slot(ty)?;
        for (bb, blk) in [(then_bb, Some(t)), (else_bb, f)] {
            self.b.position_at_end(bb);
            let v = match blk {
                Some(b) => self.block(b)?,
                None => Val::Unit,
            };
            if !self.terminated() {
                self.fill_slot(slot, &v)?;
                self.b.build_unconditional_branch(merge)?;
            }
        }
        self.b.position_at_end(merge);
        Ok(match (ty, slot) {
            (Ty::Never, _) => {
                self.b.build_unreachable()?;
                self.start_dead_block();
                Val::Never
            }
            (_, Some(s)) => self.slot_value(s)?,
            _ => Val::Unit,
        })
    }
}
