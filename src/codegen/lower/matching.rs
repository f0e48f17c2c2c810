//! `match`: the arms tested in order (each pattern's ranges, then its guard), the first that
//! holds runs. The checker proved the arms cover every value, so the last arm without a guard
//! is taken without a test and no path is left where no arm runs.

use inkwell::IntPredicate;
use inkwell::values::IntValue;

use super::{FnLower, R, Slot, Val, llvm_err};
use crate::ir::*;

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    pub(super) fn match_expr(&mut self, s: &Expr, arms: &[MatchArm], ty: Ty) -> R<Val<'ctx>> {
        let v = self.scalar_of(s)?.into_int_value();
        let sc = s.ty.scalar().ok_or_else(|| llvm_err("match on a non-scalar"))?;
        let signed = sc.is_signed();
        let slot = self.value_slot(ty)?;
        let merge = self.ctx().append_basic_block(self.fv, "");
        let default = arms.iter().rposition(|a| a.guard.is_none());
        for (i, arm) in arms.iter().enumerate() {
            if default.is_some_and(|d| i > d) {
                // After the arm every remaining value takes: never reached.
                break;
            }
            let body_bb = self.ctx().append_basic_block(self.fv, "");
            let next_bb = self.ctx().append_basic_block(self.fv, "");
            let test = if Some(i) == default { None } else { self.pattern_test(v, arm, signed)? };
            if !self.terminated() {
                match test {
                    Some(t) => self.b.build_conditional_branch(t, body_bb, next_bb)?,
                    None => self.b.build_unconditional_branch(body_bb)?,
                };
            }
            self.b.position_at_end(body_bb);
            if let Some(l) = arm.binding {
                let p = self.alloca(sc)?;
                self.b.build_store(p, v)?;
                self.locals[l] = Slot::Scalar(p, sc);
            }
            if let Some(g) = &arm.guard {
                let gv = self.scalar_of(g)?.into_int_value();
                let then = self.ctx().append_basic_block(self.fv, "");
                if !self.terminated() {
                    self.b.build_conditional_branch(gv, then, next_bb)?;
                }
                self.b.position_at_end(then);
            }
            let val = self.expr(&arm.body)?;
            if !self.terminated() {
                self.fill_slot(slot, &val)?;
                self.b.build_unconditional_branch(merge)?;
            }
            self.b.position_at_end(next_bb);
        }
        // Only a value no arm covers could get here, and the checker proved there is none.
        if !self.terminated() {
            self.b.build_unreachable()?;
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

    /// Whether `v` is in one of the arm's ranges (`None`: every value is).
    fn pattern_test(&mut self, v: IntValue<'ctx>, arm: &MatchArm, signed: bool) -> R<Option<IntValue<'ctx>>> {
        let Some(ranges) = &arm.ranges else { return Ok(None) };
        let (ge, le) = if signed { (IntPredicate::SGE, IntPredicate::SLE) } else { (IntPredicate::UGE, IntPredicate::ULE) };
        let mut any: Option<IntValue<'ctx>> = None;
        for (lo, hi) in ranges {
            let (ExprKind::Lit(a), ExprKind::Lit(b)) = (&lo.kind, &hi.kind) else {
                return Err(llvm_err("a match pattern bound is not a constant"));
            };
            let (a, b) = (self.const_scalar(*a).into_int_value(), self.const_scalar(*b).into_int_value());
            let t = if a == b {
                self.b.build_int_compare(IntPredicate::EQ, v, a, "")?
            } else {
                let x = self.b.build_int_compare(ge, v, a, "")?;
                let y = self.b.build_int_compare(le, v, b, "")?;
                self.b.build_and(x, y, "")?
            };
            any = Some(match any {
                Some(p) => self.b.build_or(p, t, "")?,
                None => t,
            });
        }
        Ok(Some(any.unwrap_or(self.cx.i1.const_zero())))
    }
}
