//! Operators and casts with Rust's semantics and no traps: wrapping arithmetic, division by zero
//! as 0, masked shifts, saturating float-to-int casts, comparisons, and fast-math flags.

use inkwell::types::FloatType;
use inkwell::values::{BasicValue, BasicValueEnum, IntValue};
use inkwell::{FloatPredicate, IntPredicate};

use super::{FnLower, R};
use crate::ir::*;

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    /// Fast-math flags on a float operation: every flag under fast-math, else `contract` where
    /// the kernel contracts (`fmad`), so a multiply feeding an add becomes one `fma`.
    pub(super) fn set_fast(&self, v: BasicValueEnum<'ctx>) {
        use inkwell::values::FastMathFlags;
        let flags = if self.cx.input.options.fast_math {
            FastMathFlags::all()
        } else if self.cx.fmad {
            FastMathFlags::AllowContract
        } else {
            return;
        };
        if let Some(i) = v.as_instruction_value() {
            let _ = i.set_fast_math_flags(flags);
        }
    }

    pub(super) fn binary(
        &self,
        op: BinOp,
        s: Scalar,
        x: BasicValueEnum<'ctx>,
        y: BasicValueEnum<'ctx>,
        ys: Scalar,
    ) -> R<BasicValueEnum<'ctx>> {
        let b = &self.b;
        if s.is_half() {
            return self.half_binary(op, s, x.into_int_value(), y.into_int_value());
        }
        if s.is_float() {
            let (x, y) = (x.into_float_value(), y.into_float_value());
            let v: BasicValueEnum = match op {
                BinOp::Add => b.build_float_add(x, y, "")?.into(),
                BinOp::Sub => b.build_float_sub(x, y, "")?.into(),
                BinOp::Mul => b.build_float_mul(x, y, "")?.into(),
                BinOp::Div => b.build_float_div(x, y, "")?.into(),
                // NVPTX lowers `frem` as x - trunc(x / y) * y, which is wrong for large quotients
                // and loses the sign of zero; libdevice's fmod is exact, like Rust's `%`.
                BinOp::Rem => self.float_rem(x, y, s)?.into(),
                cmp => {
                    let p = match cmp {
                        BinOp::Eq => FloatPredicate::OEQ,
                        BinOp::Ne => FloatPredicate::UNE,
                        BinOp::Lt => FloatPredicate::OLT,
                        BinOp::Le => FloatPredicate::OLE,
                        BinOp::Gt => FloatPredicate::OGT,
                        _ => FloatPredicate::OGE,
                    };
                    return Ok(b.build_float_compare(p, x, y, "")?.into());
                }
            };
            self.set_fast(v);
            return Ok(v);
        }
        let (x, y) = (x.into_int_value(), y.into_int_value());
        let it = x.get_type();
        let signed = s.is_signed();
        Ok(match op {
            BinOp::Add => b.build_int_add(x, y, "")?.into(),
            // `x - c` is built as `x + (-c)` (the same wrapping result), the form LLVM's
            // constraint elimination reads: `a[k - 1]` under `k > 0 && k < a.len()` then needs
            // no bounds check (`codegen::checks`).
            BinOp::Sub if y.is_const() => b.build_int_add(x, y.const_neg(), "")?.into(),
            BinOp::Sub => b.build_int_sub(x, y, "")?.into(),
            BinOp::Mul => b.build_int_mul(x, y, "")?.into(),
            BinOp::Div | BinOp::Rem => self.div_rem(op, x, y, signed)?.into(),
            BinOp::BitAnd => b.build_and(x, y, "")?.into(),
            BinOp::BitOr => b.build_or(x, y, "")?.into(),
            BinOp::BitXor => b.build_xor(x, y, "")?.into(),
            BinOp::Shl | BinOp::Shr => {
                // Shift amounts are masked to the width, like Rust's `wrapping_shl`.
                let amount = if ys.bits() == s.bits() {
                    y
                } else if ys.bits() > s.bits() {
                    b.build_int_truncate(y, it, "")?
                } else {
                    b.build_int_z_extend(y, it, "")?
                };
                let masked = b.build_and(amount, it.const_int(s.bits() as u64 - 1, false), "")?;
                if op == BinOp::Shl {
                    b.build_left_shift(x, masked, "")?.into()
                } else {
                    b.build_right_shift(x, masked, signed, "")?.into()
                }
            }
            cmp => {
                let p = match (cmp, signed) {
                    (BinOp::Eq, _) => IntPredicate::EQ,
                    (BinOp::Ne, _) => IntPredicate::NE,
                    (BinOp::Lt, true) => IntPredicate::SLT,
                    (BinOp::Lt, false) => IntPredicate::ULT,
                    (BinOp::Le, true) => IntPredicate::SLE,
                    (BinOp::Le, false) => IntPredicate::ULE,
                    (BinOp::Gt, true) => IntPredicate::SGT,
                    (BinOp::Gt, false) => IntPredicate::UGT,
                    (_, true) => IntPredicate::SGE,
                    (_, false) => IntPredicate::UGE,
                };
                b.build_int_compare(p, x, y, "")?.into()
            }
        })
    }

    /// Division without traps: `x / 0 == 0`, `x % 0 == 0`, `MIN / -1 == MIN`, `MIN % -1 == 0`.
    pub(super) fn div_rem(&self, op: BinOp, x: IntValue<'ctx>, y: IntValue<'ctx>, signed: bool) -> R<IntValue<'ctx>> {
        let b = &self.b;
        let it = x.get_type();
        let zero = it.const_zero();
        let one = it.const_int(1, false);
        let is0 = b.build_int_compare(IntPredicate::EQ, y, zero, "")?;
        let mut bad = is0;
        if signed {
            let minus1 = it.const_all_ones();
            let isneg1 = b.build_int_compare(IntPredicate::EQ, y, minus1, "")?;
            bad = b.build_or(is0, isneg1, "")?;
            let safe = b.build_select(bad, one, y, "")?.into_int_value();
            let q = if op == BinOp::Div { b.build_int_signed_div(x, safe, "")? } else { b.build_int_signed_rem(x, safe, "")? };
            let special = if op == BinOp::Div {
                // x / -1 == -x (wrapping), x / 0 == 0
                let neg = b.build_int_neg(x, "")?;
                b.build_select(is0, zero, neg, "")?.into_int_value()
            } else {
                zero
            };
            return Ok(b.build_select(bad, special, q, "")?.into_int_value());
        }
        let safe = b.build_select(bad, one, y, "")?.into_int_value();
        let q = if op == BinOp::Div { b.build_int_unsigned_div(x, safe, "")? } else { b.build_int_unsigned_rem(x, safe, "")? };
        Ok(b.build_select(is0, zero, q, "")?.into_int_value())
    }

    pub(super) fn cast(&self, v: BasicValueEnum<'ctx>, from: Scalar, to: Scalar) -> R<BasicValueEnum<'ctx>> {
        let b = &self.b;
        if from == to {
            return Ok(v);
        }
        if from.is_half() || to.is_half() {
            return self.half_cast(v, from, to);
        }
        let tt = self.cx.scalar_ty(to);
        Ok(match (from.is_float(), to.is_float()) {
            (true, true) => {
                let fv = v.into_float_value();
                let ft: FloatType = tt.into_float_type();
                if to.bits() > from.bits() { b.build_float_ext(fv, ft, "")?.into() } else { b.build_float_trunc(fv, ft, "")?.into() }
            }
            (true, false) => {
                // Rust's `as`: saturating, NaN to zero.
                let fv = v.into_float_value();
                let name = format!("llvm.{}.sat.i{}.f{}", if to.is_signed() { "fptosi" } else { "fptoui" }, to.bits(), from.bits());
                let ft = tt.into_int_type().fn_type(&[fv.get_type().into()], false);
                let f = self.m.get_function(&name).unwrap_or_else(|| self.m.add_function(&name, ft, None));
                self.call_basic(f, &[fv.into()])?
            }
            (false, true) => {
                let iv = v.into_int_value();
                let ft = tt.into_float_type();
                if from.is_signed() {
                    b.build_signed_int_to_float(iv, ft, "")?.into()
                } else {
                    b.build_unsigned_int_to_float(iv, ft, "")?.into()
                }
            }
            (false, false) => {
                let iv = v.into_int_value();
                let it = tt.into_int_type();
                if to.bits() < from.bits() {
                    b.build_int_truncate(iv, it, "")?.into()
                } else if to.bits() == from.bits() {
                    iv.into()
                } else if from.is_signed() {
                    b.build_int_s_extend(iv, it, "")?.into()
                } else {
                    b.build_int_z_extend(iv, it, "")?.into()
                }
            }
        })
    }
}
