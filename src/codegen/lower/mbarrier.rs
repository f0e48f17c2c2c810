//! The mbarrier builtins and the bulk copy that completes a barrier's bytes.
//!
//! On NVPTX each is its PTX instruction in inline assembly, on the barrier's (and the copy's
//! destination's) 32-bit shared address: `mbarrier.init`, `mbarrier.arrive`,
//! `mbarrier.arrive.expect_tx`, `mbarrier.try_wait.parity`, `mbarrier.inval` and
//! `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`. On the host each barrier
//! operation goes to the runtime's scheduler (`abi::warp_op::MBARRIER`), which keeps the barrier's
//! phase, pending arrivals and pending bytes in its `u64` and answers a wait once the phase
//! completes (suspending the thread until then); a bulk copy is made at once and then completes
//! its bytes. Checked code checks each barrier is an 8-byte aligned element of a shared array
//! and each copy's ends, alignment (16 bytes) and memories.
//!
//! The tiled tensor copy (`cp_async_bulk_tensor_2d`) is
//! `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes` on the
//! map the launch passed (the address of a `CUtensorMap` in global memory); on the host it is
//! the host call `__kache_host_tma_load_2d`, which reads the box out of the
//! `host_calls::HostTensorMap` the launch passed (zeros outside the array), writes it swizzled as the
//! GPU does, and then the copy completes its bytes on the barrier. Checked code checks the
//! box's elements are inside a shared array and its start aligned as the swizzle needs (128
//! bytes unswizzled, 8 rows of the swizzle's bytes swizzled: the pattern is of address bits).

use inkwell::AddressSpace;
use inkwell::IntPredicate;
use inkwell::values::{BasicMetadataValueEnum, IntValue, PointerValue};

use super::tensor::Space;
use super::{FnLower, R, Val, llvm_err};
use crate::abi::{fault_layout, warp_op};
use crate::host_calls::HOST_TMA_LOAD_2D;
use crate::ir::*;
use crate::target::Target;

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    pub(super) fn mbarrier_op(&mut self, t: TensorOp, args: &[Expr]) -> R<Val<'ctx>> {
        if let TensorOp::CpAsyncBulk { bytes } = t {
            return self.cp_async_bulk(bytes, args);
        }
        if let TensorOp::CpAsyncBulkTensor { bytes, swizzle } = t {
            return self.cp_async_bulk_tensor(bytes, swizzle, args);
        }
        let bar = self.access(&args[0], 1, 8, Space::Shared)?;
        let operand = match args.get(1) {
            Some(e) => self.scalar_of(e)?.into_int_value(),
            None => self.cx.i32.const_zero(),
        };
        if self.cx.host {
            let op = match t {
                TensorOp::MbarrierInit => warp_op::MBAR_INIT,
                TensorOp::MbarrierArrive => warp_op::MBAR_ARRIVE,
                TensorOp::MbarrierArriveExpectTx => warp_op::MBAR_EXPECT_TX,
                TensorOp::MbarrierInval => warp_op::MBAR_INVAL,
                _ => warp_op::MBAR_TRY_WAIT,
            };
            let r = self.host_mbarrier(bar, op, operand)?;
            if t == TensorOp::MbarrierTryWait {
                let done = self.b.build_int_compare(IntPredicate::NE, r, self.cx.i64.const_zero(), "")?;
                return Ok(Val::Scalar(done.into()));
            }
            return Ok(Val::Unit);
        }
        let addr = self.shared_u32(bar)?;
        let (text, cons, ret) = match t {
            TensorOp::MbarrierInit => ("mbarrier.init.shared.b64 [$0], $1;", "r,r,~{memory}", false),
            TensorOp::MbarrierArrive => ("{\n.reg .b64 st;\nmbarrier.arrive.shared.b64 st, [$0];\n}", "r,~{memory}", false),
            TensorOp::MbarrierArriveExpectTx => {
                ("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared.b64 st, [$0], $1;\n}", "r,r,~{memory}", false)
            }
            TensorOp::MbarrierInval => ("mbarrier.inval.shared.b64 [$0];", "r,~{memory}", false),
            _ => ("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared.b64 p, [$1], $2;\nselp.u32 $0, 1, 0, p;\n}", "=r,r,r,~{memory}", true),
        };
        let mut vals: Vec<BasicMetadataValueEnum<'ctx>> = vec![addr.into()];
        if args.len() > 1 {
            vals.push(operand.into());
        }
        let params: Vec<inkwell::types::BasicMetadataTypeEnum<'ctx>> = vals.iter().map(|_| self.cx.i32.into()).collect();
        let fty = if ret { self.cx.i32.fn_type(&params, false) } else { self.ctx().void_type().fn_type(&params, false) };
        let asm = self.ctx().create_inline_asm(fty, text.into(), cons.into(), true, false, None, false);
        let call = self.b.build_indirect_call(fty, asm, &vals, "")?;
        if ret {
            let r = call.try_as_basic_value().basic().ok_or_else(|| llvm_err("try_wait returns"))?.into_int_value();
            let done = self.b.build_int_compare(IntPredicate::NE, r, self.cx.i32.const_zero(), "")?;
            self.exit_if_launch_faulted(done)?;
            return Ok(Val::Scalar(done.into()));
        }
        Ok(Val::Unit)
    }

    /// Checked code on the GPU, after a wait that has not completed: if a thread of this
    /// launch has failed a check (the fault record's flag set, with this launch's token), this
    /// thread ends too. A failing thread `exit`s, and what it would have done for the barrier
    /// (its arrival, the tensor copy it would have issued) never comes: without this, the
    /// threads waiting for it would spin forever and the launch would hang instead of
    /// reporting the fault. The record is read only while the wait has not completed.
    fn exit_if_launch_faulted(&mut self, done: IntValue<'ctx>) -> R<()> {
        let (Some((record, token)), true) = (self.gpu_fault, self.cx.input.options.checked) else { return Ok(()) };
        let look = self.ctx().append_basic_block(self.fv, "");
        let leave = self.ctx().append_basic_block(self.fv, "");
        let go_on = self.ctx().append_basic_block(self.fv, "");
        self.b.build_conditional_branch(done, go_on, look)?;
        self.b.position_at_end(look);
        let field = |this: &Self, off: u64| -> R<IntValue<'ctx>> {
            // SAFETY: `off` is a field offset inside the fault record (`abi::fault_layout`).
            let at = unsafe { this.b.build_gep(this.cx.i8, record, &[this.i64c(off)], "")? };
            let v = this.b.build_load(this.cx.i32, at, "")?.into_int_value();
            // Another thread writes it while this one loops: read it afresh every time.
            v.as_instruction().ok_or_else(|| llvm_err("load"))?.set_volatile(true).map_err(|e| llvm_err(format!("volatile: {e}")))?;
            Ok(v)
        };
        let flag = field(self, fault_layout::FLAG)?;
        let theirs = field(self, fault_layout::TOKEN)?;
        let set = self.b.build_int_compare(IntPredicate::NE, flag, self.cx.i32.const_zero(), "")?;
        let ours = self.b.build_int_compare(IntPredicate::EQ, theirs, token, "")?;
        let faulted = self.b.build_and(set, ours, "")?;
        self.b.build_conditional_branch(faulted, leave, go_on)?;
        self.b.position_at_end(leave);
        super::bounds::build_exit(self.ctx(), &self.b)?;
        self.b.position_at_end(go_on);
        Ok(())
    }

    /// The 32-bit shared-window address of `p`, a pointer into shared memory.
    fn shared_u32(&mut self, p: PointerValue<'ctx>) -> R<IntValue<'ctx>> {
        let shared = self.b.build_address_space_cast(p, self.ctx().ptr_type(AddressSpace::from(3u16)), "")?;
        Ok(self.b.build_ptr_to_int(shared, self.cx.i32, "")?)
    }

    /// Hands barrier operation `op` on `bar` with `operand` to the host scheduler.
    fn host_mbarrier(&mut self, bar: PointerValue<'ctx>, op: u32, operand: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let addr = self.b.build_ptr_to_int(bar, self.cx.i64, "")?;
        let i32t = self.cx.i32;
        self.host_warp(warp_op::MBARRIER, i32t.const_int(u32::MAX as u64, false), addr, i32t.const_int(op as u64, false), operand)
    }

    /// `cp_async_bulk::<BYTES>(&mut dst[i], &src[j], &mut bar[k])`.
    fn cp_async_bulk(&mut self, bytes: u32, args: &[Expr]) -> R<Val<'ctx>> {
        let elem = args[0].ty.scalar().ok_or_else(|| llvm_err("cp_async_bulk of a non-scalar"))?;
        let n = bytes as u64 / elem.size() as u64;
        let dst = self.access(&args[0], n, 16, Space::Shared)?;
        let src = self.access(&args[1], n, 16, Space::Global)?;
        let bar = self.access(&args[2], 1, 8, Space::Shared)?;
        let size = self.cx.i32.const_int(bytes as u64, false);
        if self.cx.host {
            self.b.build_memcpy(dst, 16, src, 16, self.i64c(bytes as u64)).map_err(|e| llvm_err(format!("memcpy: {e}")))?;
            self.host_mbarrier(bar, warp_op::MBAR_COMPLETE_TX, size)?;
            return Ok(Val::Unit);
        }
        let d = self.shared_u32(dst)?;
        let m = self.shared_u32(bar)?;
        let s1 = self.b.build_address_space_cast(src, self.ctx().ptr_type(AddressSpace::from(1u16)), "")?;
        let s = self.b.build_ptr_to_int(s1, self.cx.i64, "")?;
        let text = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];";
        let fty = self.ctx().void_type().fn_type(&[self.cx.i32.into(), self.cx.i64.into(), self.cx.i32.into(), self.cx.i32.into()], false);
        let asm = self.ctx().create_inline_asm(fty, text.into(), "r,l,r,r,~{memory}".into(), true, false, None, false);
        self.b.build_indirect_call(fty, asm, &[d.into(), s.into(), size.into(), m.into()], "")?;
        Ok(Val::Unit)
    }

    /// `cp_async_bulk_tensor_2d(&mut dst[i], &map, x, y, &mut bar[k])`: `bytes` the box's.
    fn cp_async_bulk_tensor(&mut self, bytes: u32, swizzle: u8, args: &[Expr]) -> R<Val<'ctx>> {
        let elem = args[0].ty.scalar().ok_or_else(|| llvm_err("cp_async_bulk_tensor_2d of a non-scalar"))?;
        let n = bytes as u64 / elem.size() as u64;
        let dst = self.access(&args[0], n, 16, Space::Shared)?;
        let map = self.agg_of(&args[1])?;
        let desc = self.b.build_load(self.cx.i64, map, "")?.into_int_value();
        let x = self.scalar_of(&args[2])?.into_int_value();
        let y = self.scalar_of(&args[3])?.into_int_value();
        let bar = self.access(&args[4], 1, 8, Space::Shared)?;
        let size = self.cx.i32.const_int(bytes as u64, false);
        let align = if swizzle == 0 { 128 } else { 8 * swizzle as u64 };
        // The address the swizzle pattern is of: the shared window's on the GPU.
        let addr = if self.cx.host { self.b.build_ptr_to_int(dst, self.cx.i64, "")? } else { self.shared_u32(dst)? };
        if self.cx.input.options.checked {
            let ExprKind::Index(arr_e, idx) = &args[0].kind else { return Err(llvm_err("a tensor copy to a non-element")) };
            let i = self.scalar_of(idx.first().ok_or_else(|| llvm_err("an access without an index"))?)?.into_int_value();
            let arr = self.expr(arr_e)?.array()?;
            let len = *arr.shape.first().ok_or_else(|| llvm_err("an access of a 0-d array"))?;
            let low = self.b.build_and(addr, addr.get_type().const_int(align - 1, false), "")?;
            let ok = self.b.build_int_compare(IntPredicate::EQ, low, addr.get_type().const_zero(), "")?;
            self.guard(ok, arr_e, fault_layout::MISALIGNED | align as u32, i, len)?;
            // The box's first column at a 16-byte unit of the row: the hardware's rule (an
            // illegal instruction otherwise).
            let per = 16 / elem.size() as u64;
            let low = self.b.build_and(x, self.cx.i32.const_int(per - 1, false), "")?;
            let ok = self.b.build_int_compare(IntPredicate::EQ, low, self.cx.i32.const_zero(), "")?;
            let column = self.b.build_int_s_extend(x, self.cx.i64, "")?;
            self.guard(ok, arr_e, fault_layout::TMA_COLUMN | per as u32, i, column)?;
        }
        if self.cx.host {
            let i64t = self.cx.i64;
            let f =
                self.intrinsic(HOST_TMA_LOAD_2D, self.cx.i32.into(), &[i64t.into(), i64t.into(), self.cx.i32.into(), self.cx.i32.into()]);
            self.call_basic(f, &[desc.into(), addr.into(), x.into(), y.into()])?;
            self.host_mbarrier(bar, warp_op::MBAR_COMPLETE_TX, size)?;
            return Ok(Val::Unit);
        }
        let m = self.shared_u32(bar)?;
        let text = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];";
        let i32t = self.cx.i32;
        let fty = self.ctx().void_type().fn_type(&[i32t.into(), self.cx.i64.into(), i32t.into(), i32t.into(), i32t.into()], false);
        let asm = self.ctx().create_inline_asm(fty, text.into(), "r,l,r,r,r,~{memory}".into(), true, false, None, false);
        self.b.build_indirect_call(fty, asm, &[addr.into(), desc.into(), x.into(), y.into(), m.into()], "")?;
        Ok(Val::Unit)
    }

    /// At a kernel's start, for each tensor map parameter on sm_90 and later:
    /// `fence.proxy.tensormap::generic.acquire.gpu [map], 128`, so that the tensor copies read
    /// the descriptor the launch wrote (with the copy engine, before the kernel) and not a
    /// stale one the tensormap proxy holds for that address. Elsewhere nothing: no tensor copy
    /// exists before sm_90, and the host backend reads its map directly.
    pub(super) fn tensor_map_acquire(&mut self, map: IntValue<'ctx>) -> R<()> {
        let Target::Nvptx(a) = self.cx.target else { return Ok(()) };
        if a.sm < 90 {
            return Ok(());
        }
        let fty = self.ctx().void_type().fn_type(&[self.cx.i64.into()], false);
        let text = "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;";
        let asm = self.ctx().create_inline_asm(fty, text.into(), "l,~{memory}".into(), true, false, None, false);
        self.b.build_indirect_call(fty, asm, &[map.into()], "")?;
        Ok(())
    }
}
