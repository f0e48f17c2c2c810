//! `f16` and `bf16`. Values are their 16 bits (`i16`) in registers and memory. On NVPTX they
//! are operated on as LLVM `half` and `bfloat`, which LLVM lowers to the architecture's own
//! instructions where it has them (f16 arithmetic from sm_53, bf16 `fma` from sm_80, bf16
//! add/mul/convert from sm_90) and through `f32` elsewhere. On the host every operation goes
//! through `f32` and the rounding helpers of `host_jit` (so no soft-float library call of
//! LLVM's is ever left for the JIT to resolve).
//!
//! One `+ - * /` computed in `f32` and rounded once gives the narrow type's exact result
//! (`f32` has more than twice the precision plus two bits), so these agree bit for bit on
//! every target; `mul_add` does not (one rounding where the hardware fuses, two elsewhere).

use inkwell::types::FloatType;
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, FloatValue, IntValue, PointerValue};
use inkwell::{AtomicOrdering, FloatPredicate, IntPredicate};

use super::{FnLower, R};
use crate::codegen::host_jit::host_half_symbol;
use crate::ir::*;

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    /// The LLVM float type of a 16-bit float (NVPTX only).
    fn half_llvm_ty(&self, s: Scalar) -> FloatType<'ctx> {
        if s == Scalar::F16 { self.ctx().f16_type() } else { self.ctx().bf16_type() }
    }

    fn i16_ty(&self) -> inkwell::types::IntType<'ctx> {
        self.ctx().i16_type()
    }

    /// Calls a host rounding helper taking and returning values passed in 32 or 64 bits.
    fn host_helper(&self, name: &str, ret: inkwell::types::BasicTypeEnum<'ctx>, arg: BasicValueEnum<'ctx>) -> R<BasicValueEnum<'ctx>> {
        let f = self.intrinsic(name, ret, &[arg.get_type()]);
        self.call_basic(f, &[arg.into()])
    }

    /// An `f16`/`bf16` (as its bits) widened to `f32`: exact.
    pub(super) fn half_to_f32(&self, v: IntValue<'ctx>, s: Scalar) -> R<FloatValue<'ctx>> {
        let f32t = self.ctx().f32_type();
        if self.cx.host {
            let arg = self.b.build_int_z_extend(v, self.cx.i32, "")?;
            let r = self.host_helper(&host_half_symbol(s, "to_f32"), f32t.into(), arg.into())?;
            return Ok(r.into_float_value());
        }
        let h = self.b.build_bit_cast(v, self.half_llvm_ty(s), "")?.into_float_value();
        Ok(self.b.build_float_ext(h, f32t, "")?)
    }

    /// An `f32` or `f64` rounded once to `f16`/`bf16`, as its bits.
    pub(super) fn float_to_half(&self, v: FloatValue<'ctx>, wide: Scalar, s: Scalar) -> R<IntValue<'ctx>> {
        if self.cx.host {
            let name = host_half_symbol(s, if wide == Scalar::F64 { "from_f64" } else { "from_f32" });
            let r = self.host_helper(&name, self.cx.i32.into(), v.into())?.into_int_value();
            return Ok(self.b.build_int_truncate(r, self.i16_ty(), "")?);
        }
        let h = self.b.build_float_trunc(v, self.half_llvm_ty(s), "")?;
        Ok(self.b.build_bit_cast(h, self.i16_ty(), "")?.into_int_value())
    }

    /// An integer of type `from` rounded once to `f16`/`bf16`, as its bits.
    pub(super) fn int_to_half(&self, v: IntValue<'ctx>, from: Scalar, s: Scalar) -> R<IntValue<'ctx>> {
        let b = &self.b;
        if self.cx.host {
            let wide = if from.is_signed() {
                b.build_int_s_extend_or_bit_cast(v, self.cx.i64, "")?
            } else {
                b.build_int_z_extend_or_bit_cast(v, self.cx.i64, "")?
            };
            let name = host_half_symbol(s, if from.is_signed() { "from_i64" } else { "from_u64" });
            let r = self.host_helper(&name, self.cx.i32.into(), wide.into())?.into_int_value();
            return Ok(b.build_int_truncate(r, self.i16_ty(), "")?);
        }
        let f64t = self.ctx().f64_type();
        let h = if s == Scalar::F16 {
            // The hardware converts any integer to f16 with one rounding.
            let ht = self.half_llvm_ty(s);
            if from.is_signed() { b.build_signed_int_to_float(v, ht, "")? } else { b.build_unsigned_int_to_float(v, ht, "")? }
        } else if from.bits() <= 32 {
            // Exact in f64; LLVM rounds f64 to bf16 once.
            let d = if from.is_signed() { b.build_signed_int_to_float(v, f64t, "")? } else { b.build_unsigned_int_to_float(v, f64t, "")? };
            b.build_float_trunc(d, self.half_llvm_ty(s), "")?
        } else {
            let d = self.int64_to_f64_odd(v, from.is_signed())?;
            b.build_float_trunc(d, self.half_llvm_ty(s), "")?
        };
        Ok(b.build_bit_cast(h, self.i16_ty(), "")?.into_int_value())
    }

    /// A 64-bit integer rounded to `f64` with round-to-odd, so that rounding the result again to
    /// a narrower format is one correct rounding of the integer (`float16::i128_to_f64_odd`).
    fn int64_to_f64_odd(&self, v: IntValue<'ctx>, signed: bool) -> R<FloatValue<'ctx>> {
        let b = &self.b;
        let (i64t, f64t) = (self.cx.i64, self.ctx().f64_type());
        // Work on the magnitude (i64::MIN's is 2^63, fine as u64); the sign goes back on at the end.
        let (neg, mag) = if signed {
            let neg = b.build_int_compare(IntPredicate::SLT, v, i64t.const_zero(), "")?;
            let minus = b.build_int_neg(v, "")?;
            (Some(neg), b.build_select(neg, minus, v, "")?.into_int_value())
        } else {
            (None, v)
        };
        let y = b.build_unsigned_int_to_float(mag, f64t, "")?;
        let sat = self.intrinsic("llvm.fptoui.sat.i64.f64", i64t.into(), &[f64t.into()]);
        let back = self.call_basic(sat, &[y.into()])?.into_int_value();
        // 2^64: above every u64, though the saturated round trip reads u64::MAX.
        let top = b.build_float_compare(FloatPredicate::OGE, y, f64t.const_float(18446744073709551616.0), "")?;
        let differs = b.build_int_compare(IntPredicate::NE, back, mag, "")?;
        let inexact = b.build_or(top, differs, "")?;
        let above = b.build_or(top, b.build_int_compare(IntPredicate::UGT, back, mag, "")?, "")?;
        let bits = b.build_bit_cast(y, i64t, "")?.into_int_value();
        let even = b.build_int_compare(IntPredicate::EQ, b.build_and(bits, i64t.const_int(1, false), "")?, i64t.const_zero(), "")?;
        let adjust = b.build_and(inexact, even, "")?;
        let down = b.build_int_sub(bits, i64t.const_int(1, false), "")?;
        let up = b.build_int_add(bits, i64t.const_int(1, false), "")?;
        let moved = b.build_select(above, down, up, "")?.into_int_value();
        let odd = b.build_select(adjust, moved, bits, "")?.into_int_value();
        let r = b.build_bit_cast(odd, f64t, "")?.into_float_value();
        Ok(match neg {
            Some(n) => {
                let minus = b.build_float_neg(r, "")?;
                b.build_select(n, minus, r, "")?.into_float_value()
            }
            None => r,
        })
    }

    /// `-x`: the sign bit flipped, as Rust's `neg` (NaN too).
    pub(super) fn half_neg(&self, v: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        Ok(self.b.build_xor(v, self.i16_ty().const_int(0x8000, false), "")?)
    }

    /// `x.abs()`: the sign bit cleared.
    pub(super) fn half_abs(&self, v: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        Ok(self.b.build_and(v, self.i16_ty().const_int(0x7fff, false), "")?)
    }

    /// A binary operator on two `f16`/`bf16` values (comparisons give `bool`).
    pub(super) fn half_binary(&self, op: BinOp, s: Scalar, x: IntValue<'ctx>, y: IntValue<'ctx>) -> R<BasicValueEnum<'ctx>> {
        if !self.cx.host && op != BinOp::Rem {
            // The float operators on LLVM's 16-bit types (`Scalar::F32` only tells `binary` that
            // these are floats; it matters for `%` alone, which takes the f32 path below).
            let ht = self.half_llvm_ty(s);
            let hx = self.b.build_bit_cast(x, ht, "")?;
            let hy = self.b.build_bit_cast(y, ht, "")?;
            let r = self.binary(op, Scalar::F32, hx, hy, Scalar::F32)?;
            return if op.is_comparison() { Ok(r) } else { Ok(self.b.build_bit_cast(r, self.i16_ty(), "")?) };
        }
        // Comparisons are exact in f32; `%` is exact in any precision, so one rounding after it.
        let wx = self.half_to_f32(x, s)?;
        let wy = self.half_to_f32(y, s)?;
        let r = self.binary(op, Scalar::F32, wx.into(), wy.into(), Scalar::F32)?;
        if op.is_comparison() {
            return Ok(r);
        }
        Ok(self.float_to_half(r.into_float_value(), Scalar::F32, s)?.into())
    }

    /// `as` casts from or to `f16`/`bf16` (Rust's semantics: one rounding to a float,
    /// saturation and NaN to 0 for an integer).
    pub(super) fn half_cast(&self, v: BasicValueEnum<'ctx>, from: Scalar, to: Scalar) -> R<BasicValueEnum<'ctx>> {
        if from.is_half() {
            // Every f16 and bf16 is exactly an f32: widen, then cast from there.
            let w = self.half_to_f32(v.into_int_value(), from)?;
            return if to.is_half() { Ok(self.float_to_half(w, Scalar::F32, to)?.into()) } else { self.cast(w.into(), Scalar::F32, to) };
        }
        Ok(if from.is_float() {
            self.float_to_half(v.into_float_value(), from, to)?.into()
        } else {
            self.int_to_half(v.into_int_value(), from, to)?.into()
        })
    }

    /// `x.mul_add(a, b)` on NVPTX: LLVM's fma on the narrow type, one rounding where the
    /// hardware fuses (f16 from sm_53, bf16 from sm_80).
    pub(super) fn half_fma(&self, s: Scalar, vals: &[BasicValueEnum<'ctx>]) -> R<IntValue<'ctx>> {
        let ht = self.half_llvm_ty(s);
        let name = if s == Scalar::F16 { "llvm.fma.f16" } else { "llvm.fma.bf16" };
        let f = self.intrinsic(name, ht.into(), &[ht.into(), ht.into(), ht.into()]);
        let mut args: Vec<BasicMetadataValueEnum> = Vec::new();
        for v in vals {
            args.push(self.b.build_bit_cast(*v, ht, "")?.into());
        }
        let r = self.call_basic(f, &args)?;
        Ok(self.b.build_bit_cast(r, self.i16_ty(), "")?.into_int_value())
    }

    /// `atomic_add`, `atomic_max` or `atomic_min` on an `f16`/`bf16` element: a compare-and-swap
    /// loop on its 16 bits around the same operation as outside atomics, on every target (so
    /// the host needs no soft-float support and both backends round alike). Returns the old
    /// value.
    pub(super) fn half_atomic(&mut self, op: Builtin, p: PointerValue<'ctx>, v: IntValue<'ctx>, s: Scalar) -> R<IntValue<'ctx>> {
        let ord = AtomicOrdering::Monotonic;
        let i16t = self.i16_ty();
        let start = self.b.build_load(i16t, p, "")?.into_int_value();
        let from = self.b.get_insert_block().ok_or_else(|| super::llvm_err("no block"))?;
        let head = self.ctx().append_basic_block(self.fv, "");
        let done = self.ctx().append_basic_block(self.fv, "");
        self.b.build_unconditional_branch(head)?;
        self.b.position_at_end(head);
        let phi = self.b.build_phi(i16t, "")?;
        phi.add_incoming(&[(&start, from)]);
        let old = phi.as_basic_value().into_int_value();
        let new = match op {
            Builtin::AtomicAdd => self.half_binary(BinOp::Add, s, old, v)?,
            m => self.half_math(if m == Builtin::AtomicMax { MathFn::Max } else { MathFn::Min }, s, &[old.into(), v.into()])?,
        };
        let pair = self.b.build_cmpxchg(p, old, new.into_int_value(), ord, ord)?;
        let seen = self.b.build_extract_value(pair, 0, "")?.into_int_value();
        let ok = self.b.build_extract_value(pair, 1, "")?.into_int_value();
        let again = self.b.get_insert_block().ok_or_else(|| super::llvm_err("no block"))?;
        phi.add_incoming(&[(&seen, again)]);
        self.b.build_conditional_branch(ok, done, head)?;
        self.b.position_at_end(done);
        Ok(old)
    }
}
