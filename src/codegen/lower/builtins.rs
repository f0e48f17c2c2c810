//! Builtins: thread and block indices, the barrier, array length, shape and strides, atomics
//! (read-modify-writes, loads and stores).

use inkwell::llvm_sys;
use inkwell::values::{AsValueRef, BasicValue, BasicValueEnum, IntValue};
use inkwell::{AtomicOrdering, IntPredicate};

use super::{FnLower, R, Val, llvm_err};
use crate::abi::host_ctx_layout;
use crate::ir::*;

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    pub(super) fn index_query(&mut self, b: Builtin) -> R<IntValue<'ctx>> {
        let (field, d) = match b {
            Builtin::ThreadIdx(d) => (0, d),
            Builtin::BlockIdx(d) => (1, d),
            Builtin::BlockDim(d) => (2, d),
            Builtin::GridDim(d) => (3, d),
            _ => return Err(llvm_err("not an index query")),
        };
        if self.cx.host {
            use host_ctx_layout as L;
            let base = [L::THREAD_IDX, L::BLOCK_IDX, L::BLOCK_DIM, L::GRID_DIM][field];
            return self.ctx_field_u32(base + 4 * d as u64);
        }
        let reg = ["tid", "ctaid", "ntid", "nctaid"][field];
        let name = format!("llvm.nvvm.read.ptx.sreg.{reg}.{}", ["x", "y", "z"][d as usize]);
        let f = self.intrinsic(&name, self.cx.i32.into(), &[]);
        let v = self.call_basic(f, &[])?.into_int_value();
        // The kernel's launch bounds bound the thread index in every function of its program
        // (each is reached only from that kernel): NVPTX bounds it by them in the kernel alone,
        // so a device function's indices (a shared tile's, swizzled) would not be proven in
        // bounds after inlining.
        if let (Some(lb), 0, 0) = (self.cx.input.program.launch_bounds, field, d)
            && let Some(i) = v.as_instruction()
        {
            let range =
                self.ctx().metadata_node(&[self.cx.i32.const_zero().into(), self.cx.i32.const_int(lb.max_threads as u64, false).into()]);
            i.set_metadata(range, self.ctx().get_kind_id("range")).map_err(|e| llvm_err(format!("range: {e}")))?;
        }
        Ok(v)
    }

    pub(super) fn builtin(&mut self, b: Builtin, args: &[Expr], ty: Ty) -> R<Val<'ctx>> {
        Ok(match b {
            Builtin::ThreadIdx(_) | Builtin::BlockIdx(_) | Builtin::BlockDim(_) | Builtin::GridDim(_) => {
                Val::Scalar(self.index_query(b)?.into())
            }
            Builtin::GlobalId(d) => {
                let bid = self.index_query(Builtin::BlockIdx(d))?;
                let bdim = self.index_query(Builtin::BlockDim(d))?;
                let tid = self.index_query(Builtin::ThreadIdx(d))?;
                let z = |v| self.b.build_int_z_extend(v, self.cx.i64, "");
                let (bid, bdim, tid) = (z(bid)?, z(bdim)?, z(tid)?);
                let m = self.b.build_int_mul(bid, bdim, "")?;
                Val::Scalar(self.b.build_int_add(m, tid, "")?.into())
            }
            Builtin::SyncThreads => {
                if self.cx.host {
                    let fp = self.ctx_field_ptr(host_ctx_layout::BARRIER_FN)?;
                    let ctx = self.host_ctx.ok_or_else(|| llvm_err("ctx"))?;
                    let fty = self.ctx().void_type().fn_type(&[self.cx.ptr.into()], false);
                    self.b.build_indirect_call(fty, fp, &[ctx.into()], "")?;
                } else {
                    let f = self
                        .m
                        .get_function("llvm.nvvm.barrier0")
                        .unwrap_or_else(|| self.m.add_function("llvm.nvvm.barrier0", self.ctx().void_type().fn_type(&[], false), None));
                    self.b.build_call(f, &[], "")?;
                }
                Val::Unit
            }
            Builtin::AtomicAdd
            | Builtin::AtomicMax
            | Builtin::AtomicMin
            | Builtin::AtomicCas
            | Builtin::AtomicSub
            | Builtin::AtomicAnd
            | Builtin::AtomicOr
            | Builtin::AtomicXor
            | Builtin::AtomicExch
            | Builtin::AtomicInc
            | Builtin::AtomicDec
            | Builtin::AtomicLoad
            | Builtin::AtomicStore => self.atomic(b, args)?,
            Builtin::LaneId
            | Builtin::WarpSize
            | Builtin::Shfl(_)
            | Builtin::Ballot
            | Builtin::AllSync
            | Builtin::AnySync
            | Builtin::ActiveMask
            | Builtin::SyncWarp
            | Builtin::Fence(_) => self.warp_builtin(b, args)?,
            Builtin::Len => {
                let a = self.expr(&args[0])?.array()?;
                let mut n = self.i64c(1);
                for d in &a.shape {
                    n = self.b.build_int_mul(n, *d, "")?;
                }
                Val::Scalar(n.into())
            }
            Builtin::Shape | Builtin::Stride => {
                let a = self.expr(&args[0])?.array()?;
                let d = self.scalar_of(&args[1])?.into_int_value();
                let list = if b == Builtin::Shape { &a.shape } else { &a.strides };
                // Out-of-range dimensions give 0.
                let mut v = self.i64c(0);
                for (k, x) in list.iter().enumerate() {
                    let is = self.b.build_int_compare(IntPredicate::EQ, d, self.i64c(k as u64), "")?;
                    v = self.b.build_select(is, *x, v, "")?.into_int_value();
                }
                Val::Scalar(v.into())
            }
            Builtin::Math(m) => self.math(m, args, ty)?,
            Builtin::Tensor(t) => self.tensor(t, args, ty)?,
            Builtin::Unwrap => return Err(llvm_err("`unwrap` is lowered with its site")),
        })
    }

    pub(super) fn atomic(&mut self, b: Builtin, args: &[Expr]) -> R<Val<'ctx>> {
        let ExprKind::Index(arr_e, idx) = &args[0].kind else {
            return Err(llvm_err("atomic target"));
        };
        let arr = self.expr(arr_e)?.array()?;
        let p = self.element_ptr(&arr, arr_e, idx)?;
        let s = arr.elem.scalar().ok_or_else(|| llvm_err("an atomic on a struct element"))?;
        if b == Builtin::AtomicLoad {
            // `load atomic monotonic`: never cached in L1 nor hoisted out of a loop (LICM moves
            // only unordered loads); NVPTX emits `ld.volatile`. Never on a read-only array (the
            // checker's rule): NVPTX would select `ld.global.nc` for it and has no atomic form.
            let v = self.b.build_load(self.cx.scalar_ty(s), p, "")?;
            self.relaxed(v.as_instruction_value(), s)?;
            return Ok(Val::Scalar(v));
        }
        let v = self.scalar_of(&args[1])?;
        if b == Builtin::AtomicStore {
            let st = self.b.build_store(p, v)?;
            self.relaxed(Some(st), s)?;
            return Ok(Val::Unit);
        }
        let ord = AtomicOrdering::Monotonic;
        if b == Builtin::AtomicCas {
            let new = self.scalar_of(&args[2])?;
            // f16 and bf16 are already their bits; other floats compare by theirs too.
            let (cmp, new) = if s.is_float() && !s.is_half() {
                let it = if s == Scalar::F32 { self.cx.i32 } else { self.cx.i64 };
                (self.b.build_bit_cast(v, it, "")?, self.b.build_bit_cast(new, it, "")?)
            } else {
                (v, new)
            };
            let pair = self.b.build_cmpxchg(p, cmp, new, ord, ord)?;
            let old = self.b.build_extract_value(pair, 0, "")?;
            let old = if s.is_float() && !s.is_half() { self.b.build_bit_cast(old, self.cx.scalar_ty(s), "")? } else { old };
            return Ok(Val::Scalar(old));
        }
        if s.is_half() {
            return Ok(Val::Scalar(self.half_atomic(b, p, v.into_int_value(), s)?.into()));
        }
        use llvm_sys::LLVMAtomicRMWBinOp as Op;
        // An exchange moves bits: floats go as the integers of their width (NVPTX has
        // `atom.exch.b32/b64` and no float form).
        if b == Builtin::AtomicExch && s.is_float() {
            let it = self.cx.int_bits(s.bits());
            let bits = self.b.build_bit_cast(v, it, "")?;
            let old = self.atomic_rmw(Op::LLVMAtomicRMWBinOpXchg, p, bits);
            return Ok(Val::Scalar(self.b.build_bit_cast(old, self.cx.scalar_ty(s), "")?));
        }
        // Floats: add natively (sm_60+ has f64 add); max and min become a compare-and-swap
        // loop (LLVM's expansion for NVPTX, which has no float atom.max/min before sm_90).
        let op = match (b, s.is_float(), s.is_signed()) {
            (Builtin::AtomicAdd, true, _) => Op::LLVMAtomicRMWBinOpFAdd,
            (Builtin::AtomicAdd, false, _) => Op::LLVMAtomicRMWBinOpAdd,
            (Builtin::AtomicMax, true, _) => Op::LLVMAtomicRMWBinOpFMax,
            (Builtin::AtomicMax, false, true) => Op::LLVMAtomicRMWBinOpMax,
            (Builtin::AtomicMax, false, false) => Op::LLVMAtomicRMWBinOpUMax,
            (Builtin::AtomicMin, true, _) => Op::LLVMAtomicRMWBinOpFMin,
            (Builtin::AtomicMin, false, true) => Op::LLVMAtomicRMWBinOpMin,
            (Builtin::AtomicMin, false, false) => Op::LLVMAtomicRMWBinOpUMin,
            (Builtin::AtomicSub, ..) => Op::LLVMAtomicRMWBinOpSub,
            (Builtin::AtomicAnd, ..) => Op::LLVMAtomicRMWBinOpAnd,
            (Builtin::AtomicOr, ..) => Op::LLVMAtomicRMWBinOpOr,
            (Builtin::AtomicXor, ..) => Op::LLVMAtomicRMWBinOpXor,
            (Builtin::AtomicExch, ..) => Op::LLVMAtomicRMWBinOpXchg,
            // CUDA's atomicInc/atomicDec are LLVM's wrapping increment and decrement
            // (`atom.inc.u32`, `atom.dec.u32` on NVPTX).
            (Builtin::AtomicInc, ..) => Op::LLVMAtomicRMWBinOpUIncWrap,
            (Builtin::AtomicDec, ..) => Op::LLVMAtomicRMWBinOpUDecWrap,
            _ => return Err(llvm_err(format!("{b:?} is not a read-modify-write atomic"))),
        };
        Ok(Val::Scalar(self.atomic_rmw(op, p, v)))
    }

    /// Makes a load or store of a scalar of type `s` atomic: relaxed (`monotonic`), aligned to
    /// its size as LLVM requires of atomics.
    fn relaxed(&self, i: Option<inkwell::values::InstructionValue<'ctx>>, s: Scalar) -> R<()> {
        let i = i.ok_or_else(|| llvm_err("an atomic load or store that is not an instruction"))?;
        i.set_alignment(s.size() as u32).map_err(|e| llvm_err(format!("atomic alignment: {e}")))?;
        i.set_atomic_ordering(AtomicOrdering::Monotonic).map_err(|e| llvm_err(format!("atomic ordering: {e}")))?;
        Ok(())
    }

    fn atomic_rmw(
        &self,
        op: llvm_sys::LLVMAtomicRMWBinOp,
        p: inkwell::values::PointerValue<'ctx>,
        v: BasicValueEnum<'ctx>,
    ) -> BasicValueEnum<'ctx> {
        // SAFETY: the builder is positioned, `p` points to an element of `v`'s type; LLVMBuildAtomicRMW
        // only reads these handles.
        let r = unsafe {
            llvm_sys::core::LLVMBuildAtomicRMW(
                self.b.as_mut_ptr(),
                op,
                p.as_value_ref(),
                v.as_value_ref(),
                llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic,
                0,
            )
        };
        // SAFETY: `r` is the instruction just built, of the element's type.
        unsafe { BasicValueEnum::new(r) }
    }
}
