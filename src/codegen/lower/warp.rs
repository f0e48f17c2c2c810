//! Warp-level operations and fences: lane queries, shuffles, votes, `activemask`, `sync_warp`
//! and memory fences. On NVPTX each is an NVVM intrinsic (a `shfl.sync`, `vote.sync`,
//! `activemask`, `bar.warp.sync`, `membar`); on the host the collectives call the runtime's
//! warp rendezvous through the thread's context (`abi::warp_op`), which meets the lanes a
//! mask names and answers each as the GPU would.

use inkwell::AtomicOrdering;
use inkwell::types::BasicType;
use inkwell::values::{BasicValueEnum, IntValue};

use super::{FnLower, R, Val, llvm_err};
use crate::abi::{host_ctx_layout, warp_op};
use crate::ir::*;
use crate::lang::builtins::WARP_SIZE;

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    pub(super) fn warp_builtin(&mut self, b: Builtin, args: &[Expr]) -> R<Val<'ctx>> {
        let i32t = self.cx.i32;
        Ok(match b {
            Builtin::WarpSize => Val::Scalar(i32t.const_int(WARP_SIZE as u64, false).into()),
            Builtin::LaneId => Val::Scalar(self.lane_id()?.into()),
            Builtin::Fence(scope) => {
                if self.cx.host {
                    self.b.build_fence(AtomicOrdering::SequentiallyConsistent, false, "")?;
                } else {
                    let name = match scope {
                        FenceScope::Block => "llvm.nvvm.membar.cta",
                        FenceScope::Device => "llvm.nvvm.membar.gl",
                        FenceScope::System => "llvm.nvvm.membar.sys",
                    };
                    let f = self.void_intrinsic(name, &[]);
                    self.b.build_call(f, &[], "")?;
                }
                Val::Unit
            }
            Builtin::ActiveMask => {
                if self.cx.host {
                    // Lanes are "active together" where they reach the same call site.
                    let site = ((self.fid as u64) << 16) | self.activemask_sites as u64;
                    self.activemask_sites += 1;
                    let zero = self.cx.i64.const_zero();
                    let r = self.host_warp(
                        warp_op::ACTIVEMASK,
                        i32t.const_int(u32::MAX as u64, false),
                        zero,
                        i32t.const_int(site, false),
                        i32t.const_zero(),
                    )?;
                    Val::Scalar(self.b.build_int_truncate(r, i32t, "")?.into())
                } else {
                    let f = self.intrinsic("llvm.nvvm.activemask", i32t.into(), &[]);
                    Val::Scalar(self.call_basic(f, &[])?)
                }
            }
            Builtin::SyncWarp => {
                let mask = self.scalar_of(&args[0])?.into_int_value();
                if self.cx.host {
                    let zero = self.cx.i64.const_zero();
                    self.host_warp(warp_op::SYNC_WARP, mask, zero, i32t.const_zero(), i32t.const_zero())?;
                } else {
                    let f = self.void_intrinsic("llvm.nvvm.bar.warp.sync", &[i32t.into()]);
                    self.b.build_call(f, &[mask.into()], "")?;
                }
                Val::Unit
            }
            Builtin::Ballot | Builtin::AllSync | Builtin::AnySync => {
                let mask = self.scalar_of(&args[0])?.into_int_value();
                let pred = self.scalar_of(&args[1])?.into_int_value();
                if self.cx.host {
                    let op = match b {
                        Builtin::Ballot => warp_op::BALLOT,
                        Builtin::AllSync => warp_op::ALL,
                        _ => warp_op::ANY,
                    };
                    let v = self.b.build_int_z_extend(pred, self.cx.i64, "")?;
                    let r = self.host_warp(op, mask, v, i32t.const_zero(), i32t.const_zero())?;
                    let r = self.b.build_int_truncate(r, i32t, "")?;
                    if b == Builtin::Ballot {
                        Val::Scalar(r.into())
                    } else {
                        Val::Scalar(self.b.build_int_compare(inkwell::IntPredicate::NE, r, i32t.const_zero(), "")?.into())
                    }
                } else {
                    let (name, ret) = match b {
                        Builtin::Ballot => ("llvm.nvvm.vote.ballot.sync", i32t.into()),
                        Builtin::AllSync => ("llvm.nvvm.vote.all.sync", self.cx.i1.into()),
                        _ => ("llvm.nvvm.vote.any.sync", self.cx.i1.into()),
                    };
                    let f = self.intrinsic(name, ret, &[i32t.into(), self.cx.i1.into()]);
                    Val::Scalar(self.call_basic(f, &[mask.into(), pred.into()])?)
                }
            }
            Builtin::Shfl(mode) => self.shuffle(mode, args)?,
            _ => return Err(llvm_err(format!("{b:?} is not a warp-level builtin"))),
        })
    }

    /// The thread's lane: `%laneid` on NVPTX; on the host its linear index in the block modulo
    /// 32, which is how the GPU assigns lanes.
    pub(super) fn lane_id(&mut self) -> R<IntValue<'ctx>> {
        let i32t = self.cx.i32;
        if !self.cx.host {
            let f = self.intrinsic("llvm.nvvm.read.ptx.sreg.laneid", i32t.into(), &[]);
            return Ok(self.call_basic(f, &[])?.into_int_value());
        }
        let tx = self.index_query(Builtin::ThreadIdx(0))?;
        let ty = self.index_query(Builtin::ThreadIdx(1))?;
        let tz = self.index_query(Builtin::ThreadIdx(2))?;
        let dx = self.index_query(Builtin::BlockDim(0))?;
        let dy = self.index_query(Builtin::BlockDim(1))?;
        let plane = self.b.build_int_mul(dx, dy, "")?;
        let zz = self.b.build_int_mul(tz, plane, "")?;
        let yy = self.b.build_int_mul(ty, dx, "")?;
        let linear = self.b.build_int_add(self.b.build_int_add(zz, yy, "")?, tx, "")?;
        Ok(self.b.build_and(linear, i32t.const_int(WARP_SIZE as u64 - 1, false), "")?)
    }

    fn void_intrinsic(&self, name: &str, args: &[inkwell::types::BasicMetadataTypeEnum<'ctx>]) -> inkwell::values::FunctionValue<'ctx> {
        self.m.get_function(name).unwrap_or_else(|| self.m.add_function(name, self.ctx().void_type().fn_type(args, false), None))
    }

    /// Calls the host context's `warp_fn(ctx, op, mask, value, b, c)`.
    pub(super) fn host_warp(
        &mut self,
        op: u32,
        mask: IntValue<'ctx>,
        value: IntValue<'ctx>,
        b: IntValue<'ctx>,
        c: IntValue<'ctx>,
    ) -> R<IntValue<'ctx>> {
        let (i32t, i64t, ptr) = (self.cx.i32, self.cx.i64, self.cx.ptr);
        let fp = self.ctx_field_ptr(host_ctx_layout::WARP_FN)?;
        let ctx = self.host_ctx.ok_or_else(|| llvm_err("no host ctx"))?;
        let fty = i64t.fn_type(&[ptr.into(), i32t.into(), i32t.into(), i64t.into(), i32t.into(), i32t.into()], false);
        let args = [ctx.into(), i32t.const_int(op as u64, false).into(), mask.into(), value.into(), b.into(), c.into()];
        let call = self.b.build_indirect_call(fty, fp, &args, "")?;
        Ok(call.try_as_basic_value().basic().ok_or_else(|| llvm_err("warp_fn returns a value"))?.into_int_value())
    }

    /// `shfl_*_sync(mask, v, lane[, width])`: the value as 32-bit pieces (a 64-bit value is two
    /// shuffles of its halves, a narrower one is widened), each shuffled with PTX's operand
    /// `c = ((32 - width) << 8) | clamp`, the clamp being 31 except for `up`, as CUDA's
    /// `__shfl_*_sync` pass it.
    fn shuffle(&mut self, mode: ShflMode, args: &[Expr]) -> R<Val<'ctx>> {
        let (i32t, i64t) = (self.cx.i32, self.cx.i64);
        let s = args[1].ty.scalar().ok_or_else(|| llvm_err("shuffle of a non-scalar"))?;
        let mask = self.scalar_of(&args[0])?.into_int_value();
        let v = self.scalar_of(&args[1])?;
        let lane = self.scalar_of(&args[2])?.into_int_value();
        let clamp = if mode == ShflMode::Up { 0 } else { WARP_SIZE as u64 - 1 };
        let c = match args.get(3) {
            Some(w) => {
                let w = self.scalar_of(w)?.into_int_value();
                let seg = self.b.build_int_sub(i32t.const_int(WARP_SIZE as u64, false), w, "")?;
                let seg = self.b.build_left_shift(seg, i32t.const_int(8, false), "")?;
                self.b.build_or(seg, i32t.const_int(clamp, false), "")?
            }
            None => i32t.const_int(clamp, false),
        };
        let bits = s.bits();
        let it = self.cx.int_bits(bits);
        let raw = if s.is_float() { self.b.build_bit_cast(v, it, "")?.into_int_value() } else { v.into_int_value() };
        let out = if self.cx.host {
            let op = match mode {
                ShflMode::Idx => warp_op::SHFL_IDX,
                ShflMode::Up => warp_op::SHFL_UP,
                ShflMode::Down => warp_op::SHFL_DOWN,
                ShflMode::Xor => warp_op::SHFL_XOR,
            };
            let wide = if bits < 64 { self.b.build_int_z_extend(raw, i64t, "")? } else { raw };
            let r = self.host_warp(op, mask, wide, lane, c)?;
            if bits < 64 { self.b.build_int_truncate(r, it, "")? } else { r }
        } else {
            let name = match mode {
                ShflMode::Idx => "llvm.nvvm.shfl.sync.idx.i32",
                ShflMode::Up => "llvm.nvvm.shfl.sync.up.i32",
                ShflMode::Down => "llvm.nvvm.shfl.sync.down.i32",
                ShflMode::Xor => "llvm.nvvm.shfl.sync.bfly.i32",
            };
            let f = self.intrinsic(name, i32t.into(), &[i32t.into(), i32t.into(), i32t.into(), i32t.into()]);
            let shfl = |x: IntValue<'ctx>| -> R<IntValue<'ctx>> {
                Ok(self.call_basic(f, &[mask.into(), x.into(), lane.into(), c.into()])?.into_int_value())
            };
            if bits > 32 {
                let lo = self.b.build_int_truncate(raw, i32t, "")?;
                let hi = self.b.build_right_shift(raw, it.const_int(32, false), false, "")?;
                let hi = self.b.build_int_truncate(hi, i32t, "")?;
                let (lo, hi) = (shfl(lo)?, shfl(hi)?);
                let lo = self.b.build_int_z_extend(lo, it, "")?;
                let hi = self.b.build_int_z_extend(hi, it, "")?;
                let hi = self.b.build_left_shift(hi, it.const_int(32, false), "")?;
                self.b.build_or(hi, lo, "")?
            } else if bits < 32 {
                let wide = self.b.build_int_z_extend(raw, i32t, "")?;
                let r = shfl(wide)?;
                self.b.build_int_truncate(r, it, "")?
            } else {
                shfl(raw)?
            }
        };
        let ty = self.cx.scalar_ty(s);
        let r: BasicValueEnum<'ctx> = if s.is_float() { self.b.build_bit_cast(out, ty.as_basic_type_enum(), "")? } else { out.into() };
        Ok(Val::Scalar(r))
    }
}
