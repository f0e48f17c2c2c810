//! Intrinsic declarations and math: LLVM intrinsics, libdevice's functions on the GPU and the
//! host's math symbols (resolved by `host_jit`) on the CPU.

use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, FunctionValue, IntValue};

use super::{FnLower, R, Val, llvm_err};
use crate::ir::*;
use crate::lang::builtins;

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    pub(super) fn call_basic(&self, f: FunctionValue<'ctx>, args: &[BasicMetadataValueEnum<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let c = self.b.build_call(f, args, "")?;
        c.try_as_basic_value().basic().ok_or_else(|| llvm_err("call without value"))
    }

    pub(super) fn intrinsic(&self, name: &str, ret: BasicTypeEnum<'ctx>, args: &[BasicTypeEnum<'ctx>]) -> FunctionValue<'ctx> {
        let params: Vec<BasicMetadataTypeEnum> = args.iter().map(|a| (*a).into()).collect();
        self.m.get_function(name).unwrap_or_else(|| self.m.add_function(name, ret.fn_type(&params, false), None))
    }

    /// `x op y` through `llvm.{op}.with.overflow` (`op`: `uadd`, `usub`, `umul`, `smul`, ...):
    /// the wrapped result and whether it overflowed.
    pub(super) fn with_overflow(&self, op: &str, x: IntValue<'ctx>, y: IntValue<'ctx>) -> R<(IntValue<'ctx>, IntValue<'ctx>)> {
        let t = x.get_type();
        let pair = self.ctx().struct_type(&[t.into(), self.cx.i1.into()], false);
        let f = self.intrinsic(&format!("llvm.{op}.with.overflow.i{}", t.get_bit_width()), pair.into(), &[t.into(), t.into()]);
        let r = self.call_basic(f, &[x.into(), y.into()])?.into_struct_value();
        let v = self.b.build_extract_value(r, 0, "")?.into_int_value();
        let over = self.b.build_extract_value(r, 1, "")?.into_int_value();
        Ok((v, over))
    }

    pub(super) fn math(&mut self, m: MathFn, args: &[Expr], ty: Ty) -> R<Val<'ctx>> {
        let s = args[0].ty.scalar().unwrap_or(Scalar::F64);
        let mut vals = Vec::new();
        for a in args {
            vals.push(self.scalar_of(a)?);
        }
        if m == MathFn::SinCos {
            return self.sin_cos(s, vals[0], ty);
        }
        if s.is_half() {
            return self.half_math(m, s, &vals).map(Val::Scalar);
        }
        self.math_of(m, s, &vals).map(Val::Scalar)
    }

    /// A math method on `f16`/`bf16`: `abs` on the bits, `mul_add` fused where NVPTX has it, the
    /// rest computed in `f32` and rounded once to the receiver's type.
    pub(super) fn half_math(&mut self, m: MathFn, s: Scalar, vals: &[BasicValueEnum<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        if m == MathFn::Abs {
            return Ok(self.half_abs(vals[0].into_int_value())?.into());
        }
        if m == MathFn::MulAdd && !self.cx.host {
            return Ok(self.half_fma(s, vals)?.into());
        }
        let def = builtins::method_def(m);
        let mut wide = Vec::new();
        for (i, v) in vals.iter().enumerate() {
            // `powi`'s exponent is an i32; every other argument has the receiver's type.
            let same = i == 0 || def.arg_ty == builtins::ArgTy::SameAsSelf;
            wide.push(if same { self.half_to_f32(v.into_int_value(), s)?.into() } else { *v });
        }
        let r = self.math_of(m, Scalar::F32, &wide)?;
        // `is_nan`, `is_finite`, `is_infinite` answer a `bool`: nothing to round.
        if def.ret == builtins::RetTy::Bool {
            return Ok(r);
        }
        Ok(self.float_to_half(r.into_float_value(), Scalar::F32, s)?.into())
    }

    /// `x.sin_cos()`: libdevice's `sincos` on the GPU (answering through two slots); on the
    /// host the two host calls `sin` and `cos`, which is what Rust's `sin_cos` is. A 16-bit
    /// float computes in `f32` and rounds each.
    fn sin_cos(&mut self, s: Scalar, x: BasicValueEnum<'ctx>, ty: Ty) -> R<Val<'ctx>> {
        let wide = if s.is_half() { Scalar::F32 } else { s };
        let xw: BasicValueEnum = if s.is_half() { self.half_to_f32(x.into_int_value(), s)?.into() } else { x };
        let (mut sin, mut cos) = if self.cx.host {
            (self.math_of(MathFn::Sin, wide, &[xw])?, self.math_of(MathFn::Cos, wide, &[xw])?)
        } else {
            let ft = self.cx.scalar_ty(wide);
            let (sp, cp) = (self.alloca(wide)?, self.alloca(wide)?);
            let name = if wide == Scalar::F32 { "__nv_sincosf" } else { "__nv_sincos" };
            let f = self.m.get_function(name).unwrap_or_else(|| {
                let fty = self.ctx().void_type().fn_type(&[ft.into(), self.cx.ptr.into(), self.cx.ptr.into()], false);
                self.m.add_function(name, fty, None)
            });
            self.b.build_call(f, &[xw.into(), sp.into(), cp.into()], "")?;
            (self.b.build_load(ft, sp, "")?, self.b.build_load(ft, cp, "")?)
        };
        if s.is_half() {
            sin = self.float_to_half(sin.into_float_value(), Scalar::F32, s)?.into();
            cos = self.float_to_half(cos.into_float_value(), Scalar::F32, s)?.into();
        }
        let tmp = self.temp(ty)?;
        let sty = self.cx.llty(ty).ok_or_else(|| llvm_err("sin_cos type"))?.into_struct_type();
        for (k, v) in [sin, cos].into_iter().enumerate() {
            let p = self.b.build_struct_gep(sty, tmp, k as u32, "")?;
            self.b.build_store(p, v)?;
        }
        Ok(Val::Agg(tmp))
    }

    /// A math method on values of type `s` (not a 16-bit float).
    fn math_of(&mut self, m: MathFn, s: Scalar, vals: &[BasicValueEnum<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let t = self.cx.scalar_ty(s);
        let def = builtins::method_def(m);
        if s.is_float() {
            if let Some((f32n, f64n)) = def.libdevice {
                let name = if self.cx.host {
                    crate::codegen::host_jit::host_math_symbol(m, s)
                } else {
                    (if s == Scalar::F32 { f32n } else { f64n }).to_string()
                };
                let arg_tys: Vec<BasicTypeEnum> = vals.iter().map(|v| v.get_type()).collect();
                let f = self.intrinsic(&name, t, &arg_tys);
                let args: Vec<BasicMetadataValueEnum> = vals.iter().map(|v| (*v).into()).collect();
                return self.call_basic(f, &args);
            }
            let bits = s.bits();
            let name = match m {
                MathFn::Abs => "fabs",
                MathFn::Sqrt => "sqrt",
                MathFn::Floor => "floor",
                MathFn::Ceil => "ceil",
                MathFn::Round => "round",
                MathFn::Trunc => "trunc",
                MathFn::Min => "minnum",
                MathFn::Max => "maxnum",
                MathFn::MulAdd => "fma",
                MathFn::Copysign => "copysign",
                _ => return self.float_method(m, s, vals),
            };
            let f = self.intrinsic(&format!("llvm.{name}.f{bits}"), t, &vec![t; vals.len()]);
            let args: Vec<BasicMetadataValueEnum> = vals.iter().map(|v| (*v).into()).collect();
            return self.call_basic(f, &args);
        }
        let x = vals[0].into_int_value();
        let bits = s.bits();
        let signed = s.is_signed();
        let r: BasicValueEnum = match m {
            MathFn::Abs => {
                let f = self.intrinsic(&format!("llvm.abs.i{bits}"), t, &[t, self.cx.i1.into()]);
                self.call_basic(f, &[x.into(), self.cx.i1.const_zero().into()])?
            }
            MathFn::Min | MathFn::Max => {
                let n = match (m, signed) {
                    (MathFn::Min, true) => "smin",
                    (MathFn::Min, false) => "umin",
                    (_, true) => "smax",
                    (_, false) => "umax",
                };
                let f = self.intrinsic(&format!("llvm.{n}.i{bits}"), t, &[t, t]);
                self.call_basic(f, &[x.into(), vals[1].into()])?
            }
            MathFn::WrappingAdd => self.b.build_int_add(x, vals[1].into_int_value(), "")?.into(),
            MathFn::WrappingSub => self.b.build_int_sub(x, vals[1].into_int_value(), "")?.into(),
            MathFn::WrappingMul => self.b.build_int_mul(x, vals[1].into_int_value(), "")?.into(),
            MathFn::CountOnes | MathFn::LeadingZeros | MathFn::TrailingZeros => {
                let (n, extra) = match m {
                    MathFn::CountOnes => ("ctpop", false),
                    MathFn::LeadingZeros => ("ctlz", true),
                    _ => ("cttz", true),
                };
                let name = format!("llvm.{n}.i{bits}");
                let r = if extra {
                    let f = self.intrinsic(&name, t, &[t, self.cx.i1.into()]);
                    self.call_basic(f, &[x.into(), self.cx.i1.const_zero().into()])?
                } else {
                    let f = self.intrinsic(&name, t, &[t]);
                    self.call_basic(f, &[x.into()])?
                };
                let r = r.into_int_value();
                let u32t = self.cx.i32;
                match bits {
                    64 => self.b.build_int_truncate(r, u32t, "")?.into(),
                    32 => r.into(),
                    // A count of at most 16 bits, as `u32`.
                    _ => self.b.build_int_z_extend(r, u32t, "")?.into(),
                }
            }
            _ => return self.int_method(m, s, vals),
        };
        Ok(r)
    }
}
