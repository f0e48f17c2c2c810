//! Math methods beyond one intrinsic or one libdevice call, with Rust's meaning: float tests
//! and `signum`, `clamp`, `rem_euclid`; integer `pow`, `abs_diff`, the saturating and wrapping
//! families, `reverse_bits`, `signum`, `clamp`, `rem_euclid`. Where Rust would panic
//! (division by zero, `min > max` in `clamp`), the result is defined as the language
//! reference says.

use inkwell::values::{BasicValueEnum, FloatValue, IntValue};
use inkwell::{FloatPredicate, IntPredicate};

use super::{FnLower, R, llvm_err};
use crate::ir::*;

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    fn fabs(&self, x: FloatValue<'ctx>, s: Scalar) -> R<FloatValue<'ctx>> {
        let t = self.cx.scalar_ty(s);
        let f = self.intrinsic(&format!("llvm.fabs.f{}", s.bits()), t, &[t]);
        Ok(self.call_basic(f, &[x.into()])?.into_float_value())
    }

    /// Float `%` with Rust's meaning: libdevice's exact `fmod` on the GPU (NVPTX lowers `frem`
    /// as `x - trunc(x / y) * y`, wrong for large quotients and for the sign of zero), `frem`
    /// on the host.
    pub(super) fn float_rem(&self, x: FloatValue<'ctx>, y: FloatValue<'ctx>, s: Scalar) -> R<FloatValue<'ctx>> {
        if self.cx.host {
            return Ok(self.b.build_float_rem(x, y, "")?);
        }
        let name = if s == Scalar::F32 { "__nv_fmodf" } else { "__nv_fmod" };
        let t = self.cx.scalar_ty(s);
        let f = self.intrinsic(name, t, &[t, t]);
        Ok(self.call_basic(f, &[x.into(), y.into()])?.into_float_value())
    }

    pub(super) fn float_method(&mut self, m: MathFn, s: Scalar, vals: &[BasicValueEnum<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let b = &self.b;
        let x = vals[0].into_float_value();
        let ft = x.get_type();
        let inf = ft.const_float(f64::INFINITY);
        Ok(match m {
            MathFn::IsNan => b.build_float_compare(FloatPredicate::UNO, x, x, "")?.into(),
            MathFn::IsFinite => b.build_float_compare(FloatPredicate::OLT, self.fabs(x, s)?, inf, "")?.into(),
            MathFn::IsInfinite => b.build_float_compare(FloatPredicate::OEQ, self.fabs(x, s)?, inf, "")?.into(),
            MathFn::Signum => {
                // NaN stays NaN; otherwise 1 with the sign of x (so -0.0 gives -1.0), as Rust.
                let t = self.cx.scalar_ty(s);
                let f = self.intrinsic(&format!("llvm.copysign.f{}", s.bits()), t, &[t, t]);
                let one = self.call_basic(f, &[ft.const_float(1.0).into(), x.into()])?;
                let nan = b.build_float_compare(FloatPredicate::UNO, x, x, "")?;
                b.build_select(nan, x, one.into_float_value(), "")?
            }
            MathFn::Clamp => {
                // Rust's order: below `min` gives `min`, then above `max` gives `max`; NaN stays.
                let (lo, hi) = (vals[1].into_float_value(), vals[2].into_float_value());
                let below = b.build_float_compare(FloatPredicate::OLT, x, lo, "")?;
                let r = b.build_select(below, lo, x, "")?.into_float_value();
                let above = b.build_float_compare(FloatPredicate::OGT, r, hi, "")?;
                b.build_select(above, hi, r, "")?
            }
            MathFn::RemEuclid => {
                let y = vals[1].into_float_value();
                let r = self.float_rem(x, y, s)?;
                let neg = self.b.build_float_compare(FloatPredicate::OLT, r, ft.const_zero(), "")?;
                let up = self.b.build_float_add(r, self.fabs(y, s)?, "")?;
                self.b.build_select(neg, up, r, "")?
            }
            _ => return Err(llvm_err(format!("no float lowering for {m:?}"))),
        })
    }

    pub(super) fn int_method(&mut self, m: MathFn, s: Scalar, vals: &[BasicValueEnum<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let x = vals[0].into_int_value();
        let it = x.get_type();
        let t = self.cx.scalar_ty(s);
        let bits = s.bits();
        let signed = s.is_signed();
        let y = || vals[1].into_int_value();
        // A `u32` operand (exponent, shift) in the receiver's type.
        let widen = |v: IntValue<'ctx>| -> R<IntValue<'ctx>> {
            Ok(if bits > 32 {
                self.b.build_int_z_extend(v, it, "")?
            } else if bits < 32 {
                self.b.build_int_truncate(v, it, "")?
            } else {
                v
            })
        };
        Ok(match m {
            MathFn::ReverseBits => {
                let f = self.intrinsic(&format!("llvm.bitreverse.i{bits}"), t, &[t]);
                self.call_basic(f, &[x.into()])?
            }
            MathFn::WrappingNeg => self.b.build_int_neg(x, "")?.into(),
            MathFn::WrappingAbs => {
                let f = self.intrinsic(&format!("llvm.abs.i{bits}"), t, &[t, self.cx.i1.into()]);
                self.call_basic(f, &[x.into(), self.cx.i1.const_zero().into()])?
            }
            MathFn::WrappingDiv => self.div_rem(BinOp::Div, x, y(), signed)?.into(),
            MathFn::WrappingRem => self.div_rem(BinOp::Rem, x, y(), signed)?.into(),
            MathFn::WrappingShl | MathFn::WrappingShr => {
                // The amount is taken modulo the width, as Rust's wrapping shifts.
                let n = vals[1].into_int_value();
                let n = self.b.build_and(n, self.cx.i32.const_int(bits as u64 - 1, false), "")?;
                let n = widen(n)?;
                if m == MathFn::WrappingShl {
                    self.b.build_left_shift(x, n, "")?.into()
                } else {
                    self.b.build_right_shift(x, n, signed, "")?.into()
                }
            }
            MathFn::SaturatingAdd | MathFn::SaturatingSub => {
                let op = if m == MathFn::SaturatingAdd { "add" } else { "sub" };
                let f = self.intrinsic(&format!("llvm.{}{op}.sat.i{bits}", if signed { "s" } else { "u" }), t, &[t, t]);
                self.call_basic(f, &[x.into(), y().into()])?
            }
            MathFn::SaturatingMul => {
                let (v, over) = self.with_overflow(if signed { "smul" } else { "umul" }, x, y())?;
                let limit = if signed {
                    // The sign of the true product: negative when the signs differ.
                    let diff = self.b.build_xor(x, y(), "")?;
                    let neg = self.b.build_int_compare(IntPredicate::SLT, diff, it.const_zero(), "")?;
                    let min = it.const_int(1u64 << (bits - 1), false);
                    let max = it.const_int((1u64 << (bits - 1)) - 1, false);
                    self.b.build_select(neg, min, max, "")?.into_int_value()
                } else {
                    it.const_all_ones()
                };
                self.b.build_select(over, limit, v, "")?
            }
            MathFn::AbsDiff => {
                // Rust answers in the unsigned type of the same width: the wrapped difference.
                let gt = self.b.build_int_compare(if signed { IntPredicate::SGT } else { IntPredicate::UGT }, x, y(), "")?;
                let d1 = self.b.build_int_sub(x, y(), "")?;
                let d2 = self.b.build_int_sub(y(), x, "")?;
                self.b.build_select(gt, d1, d2, "")?
            }
            MathFn::Signum => {
                let pos = self.b.build_int_compare(IntPredicate::SGT, x, it.const_zero(), "")?;
                let neg = self.b.build_int_compare(IntPredicate::SLT, x, it.const_zero(), "")?;
                let low = self.b.build_select(neg, it.const_all_ones(), it.const_zero(), "")?.into_int_value();
                self.b.build_select(pos, it.const_int(1, false), low, "")?
            }
            MathFn::Clamp => {
                let (lo, hi) = (vals[1].into_int_value(), vals[2].into_int_value());
                let (mx, mn) = if signed { ("smax", "smin") } else { ("umax", "umin") };
                let fmax = self.intrinsic(&format!("llvm.{mx}.i{bits}"), t, &[t, t]);
                let fmin = self.intrinsic(&format!("llvm.{mn}.i{bits}"), t, &[t, t]);
                let r = self.call_basic(fmax, &[x.into(), lo.into()])?;
                self.call_basic(fmin, &[r.into(), hi.into()])?
            }
            MathFn::RemEuclid => {
                let r = self.div_rem(BinOp::Rem, x, y(), signed)?;
                if !signed {
                    return Ok(r.into());
                }
                // Rust: a negative remainder plus |rhs| (wrapping).
                let f = self.intrinsic(&format!("llvm.abs.i{bits}"), t, &[t, self.cx.i1.into()]);
                let abs = self.call_basic(f, &[y().into(), self.cx.i1.const_zero().into()])?.into_int_value();
                let neg = self.b.build_int_compare(IntPredicate::SLT, r, it.const_zero(), "")?;
                let up = self.b.build_int_add(r, abs, "")?;
                self.b.build_select(neg, up, r, "")?
            }
            MathFn::Pow | MathFn::WrappingPow => self.int_pow(x, vals[1].into_int_value())?.into(),
            _ => return Err(llvm_err(format!("no integer lowering for {m:?}"))),
        })
    }

    /// `x.pow(e)` wrapping, by squaring: one multiply per bit of `e`.
    fn int_pow(&mut self, x: IntValue<'ctx>, e: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let it = x.get_type();
        let i32t = self.cx.i32;
        let pre = self.b.get_insert_block().ok_or_else(|| llvm_err("no block"))?;
        let head = self.ctx().append_basic_block(self.fv, "");
        let body = self.ctx().append_basic_block(self.fv, "");
        let exit = self.ctx().append_basic_block(self.fv, "");
        self.b.build_unconditional_branch(head)?;
        self.b.position_at_end(head);
        let acc = self.b.build_phi(it, "")?;
        let base = self.b.build_phi(it, "")?;
        let exp = self.b.build_phi(i32t, "")?;
        let (a, bs, ex) =
            (acc.as_basic_value().into_int_value(), base.as_basic_value().into_int_value(), exp.as_basic_value().into_int_value());
        let done = self.b.build_int_compare(IntPredicate::EQ, ex, i32t.const_zero(), "")?;
        self.b.build_conditional_branch(done, exit, body)?;
        self.b.position_at_end(body);
        let bit = self.b.build_and(ex, i32t.const_int(1, false), "")?;
        let odd = self.b.build_int_compare(IntPredicate::NE, bit, i32t.const_zero(), "")?;
        let times = self.b.build_int_mul(a, bs, "")?;
        let a2 = self.b.build_select(odd, times, a, "")?.into_int_value();
        let b2 = self.b.build_int_mul(bs, bs, "")?;
        let e2 = self.b.build_right_shift(ex, i32t.const_int(1, false), false, "")?;
        self.b.build_unconditional_branch(head)?;
        acc.add_incoming(&[(&it.const_int(1, false), pre), (&a2, body)]);
        base.add_incoming(&[(&x, pre), (&b2, body)]);
        exp.add_incoming(&[(&e, pre), (&e2, body)]);
        self.b.position_at_end(exit);
        Ok(a)
    }
}
