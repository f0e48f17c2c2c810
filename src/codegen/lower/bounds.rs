//! Bounds checks of checked code (`Options::checked`): one unsigned compare of each index
//! against its extent, branching to a cold path that records the launch's first fault
//! (`abi::fault_layout`) and ends the thread. On the GPU the thread executes `exit`; on the
//! host a thread is a call of the kernel, so the failing function returns and every caller
//! returns after a call while `HostCtx::exiting` is set.

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::module::Linkage;
use inkwell::types::BasicMetadataTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, FunctionValue, IntValue, PointerValue};
use inkwell::{AtomicOrdering, IntPredicate};

use super::{ArrayVal, FnLower, R, llvm_err};
use crate::abi::{fault_layout, host_ctx_layout};
use crate::ir::*;

/// Branch weights that mark a failing check as (practically) never taken.
const LIKELY: u64 = (1 << 20) - 1;

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    /// In checked code, checks each of `idx` against the extent of its dimension of `arr`, the
    /// access at `array` (whose site number `abi::bounds_sites` gives). The builder ends up in
    /// the block where every index is in bounds.
    pub(super) fn check_bounds(&mut self, arr: &ArrayVal<'ctx>, array: &Expr, idx: &[IntValue<'ctx>]) -> R<()> {
        if !self.cx.input.options.checked || idx.is_empty() || self.proven.contains(&(array as *const Expr)) {
            return Ok(());
        }
        for (d, i) in idx.iter().enumerate() {
            let len = *arr.shape.get(d).ok_or_else(|| llvm_err("an index beyond the array's dimensions"))?;
            let inside = self.b.build_int_compare(IntPredicate::ULT, *i, len, "")?;
            self.guard(inside, array, d as u32, *i, len)?;
        }
        Ok(())
    }

    /// In checked code, records a fault of the access at `array` (its bounds site) and ends the
    /// thread unless `ok`: `dim` is the dimension whose `index` is checked against `len`, or one
    /// of `abi::fault_layout`'s codes for an access that may not be made (`MISALIGNED | n`,
    /// `NOT_SHARED`, `NOT_GLOBAL`). The builder ends up where `ok` holds.
    pub(super) fn guard(&mut self, ok: IntValue<'ctx>, array: &Expr, dim: u32, index: IntValue<'ctx>, len: IntValue<'ctx>) -> R<()> {
        if !self.cx.input.options.checked {
            return Ok(());
        }
        let site = *self.cx.sites.get(&(array as *const Expr)).ok_or_else(|| llvm_err("an array access without a bounds site"))?;
        let prof = self.ctx().get_kind_id("prof");
        let weights = self.ctx().metadata_node(&[
            self.ctx().metadata_string("branch_weights").into(),
            self.cx.i32.const_int(LIKELY, false).into(),
            self.cx.i32.const_int(1, false).into(),
        ]);
        let pass = self.ctx().append_basic_block(self.fv, "");
        let fail = self.ctx().append_basic_block(self.fv, "");
        let br = self.b.build_conditional_branch(ok, pass, fail)?;
        br.set_metadata(weights, prof).map_err(|e| llvm_err(format!("branch weights: {e}")))?;
        self.b.position_at_end(fail);
        self.fault(site, dim, index, len)?;
        // The fault path's first instruction (the call that records it) names the check, so
        // that the pipeline can drop it where the conditions around it prove it passes.
        if let Some(first) = fail.get_first_instruction() {
            let tag = self.ctx().metadata_node(&[
                self.cx.i32.const_int(self.fid as u64, false).into(),
                self.cx.i32.const_int(self.guards as u64, false).into(),
            ]);
            self.guards += 1;
            first
                .set_metadata(tag, self.ctx().get_kind_id(crate::codegen::checks::FAULT_TAG))
                .map_err(|e| llvm_err(format!("fault tag: {e}")))?;
        }
        self.b.position_at_end(pass);
        Ok(())
    }

    /// `Option::unwrap` and `expect` (`Builtin::Unwrap`): `(ok, value)` gives `value`; in checked
    /// code a thread whose `ok` is false records the fault at this site and ends, as a failed
    /// bounds check does.
    pub(super) fn unwrap(&mut self, e: &Expr, args: &[Expr]) -> R<super::Val<'ctx>> {
        let [ok, value] = args else { return Err(llvm_err("`unwrap` takes a flag and a value")) };
        let ok = self.scalar_of(ok)?.into_int_value();
        let v = self.expr(value)?;
        if !self.cx.input.options.checked {
            return Ok(v);
        }
        let site = *self.cx.sites.get(&(e as *const Expr)).ok_or_else(|| llvm_err("an `unwrap` without a site"))?;
        let prof = self.ctx().get_kind_id("prof");
        let weights = self.ctx().metadata_node(&[
            self.ctx().metadata_string("branch_weights").into(),
            self.cx.i32.const_int(LIKELY, false).into(),
            self.cx.i32.const_int(1, false).into(),
        ]);
        let pass = self.ctx().append_basic_block(self.fv, "");
        let fail = self.ctx().append_basic_block(self.fv, "");
        let br = self.b.build_conditional_branch(ok, pass, fail)?;
        br.set_metadata(weights, prof).map_err(|e| llvm_err(format!("branch weights: {e}")))?;
        self.b.position_at_end(fail);
        let zero = self.cx.i64.const_zero();
        self.fault(site, 0, zero, zero)?;
        self.b.position_at_end(pass);
        Ok(v)
    }

    /// The failing path: record the fault and end the thread.
    fn fault(&mut self, site: u32, dim: u32, index: IntValue<'ctx>, len: IntValue<'ctx>) -> R<()> {
        let oob = self.oob_function()?;
        let mut args: Vec<BasicMetadataValueEnum> = Vec::new();
        match (self.host_ctx, self.gpu_fault) {
            (Some(ctx), _) => args.push(ctx.into()),
            (None, Some((record, token))) => {
                args.push(record.into());
                args.push(token.into());
            }
            (None, None) => return Err(llvm_err("checked code without a fault record")),
        }
        args.extend::<[BasicMetadataValueEnum; 4]>([
            self.cx.i32.const_int(site as u64, false).into(),
            self.cx.i32.const_int(dim as u64, false).into(),
            index.into(),
            len.into(),
        ]);
        self.b.build_call(oob, &args, "")?;
        if self.cx.host {
            self.exit_thread()
        } else {
            self.b.build_unreachable()?;
            Ok(())
        }
    }

    /// Host backend: returns from this function because the thread is exiting (the value of a
    /// function that returns one is never used: every caller returns too).
    fn exit_thread(&self) -> R<()> {
        match self.f.ret {
            Ty::Scalar(s) => self.b.build_return(Some(&self.cx.scalar_ty(s).const_zero()))?,
            _ => self.b.build_return(None)?,
        };
        Ok(())
    }

    /// Host backend, checked code, after a call: if the callee's thread exited, exit too.
    pub(super) fn propagate_exit(&mut self) -> R<()> {
        if !self.cx.host || !self.cx.input.options.checked {
            return Ok(());
        }
        let exiting = self.ctx_field_u32(host_ctx_layout::EXITING)?;
        let exits = self.b.build_int_compare(IntPredicate::NE, exiting, self.cx.i32.const_zero(), "")?;
        let leave = self.ctx().append_basic_block(self.fv, "");
        let go_on = self.ctx().append_basic_block(self.fv, "");
        self.b.build_conditional_branch(exits, leave, go_on)?;
        self.b.position_at_end(leave);
        self.exit_thread()?;
        self.b.position_at_end(go_on);
        Ok(())
    }

    /// This module's fault recorder: `(ctx, site, dim, index, len)` on the host, which also sets
    /// `HostCtx::exiting`; `(record, token, site, dim, index, len)` on the GPU, which then exits
    /// the thread. Cold. On the host it is never inlined, so that the checks cost their compare
    /// and branch; on the GPU it is always inlined (LLVM merges the copies' common tails),
    /// because PTX that contains a call is not deterministic: the NVPTX back end numbers call
    /// sequences with a counter global to the process, and a cache hit must equal a fresh
    /// compile byte for byte.
    fn oob_function(&self) -> R<FunctionValue<'ctx>> {
        let name = format!("__kache_oob_{}_k", self.fid);
        if let Some(f) = self.m.get_function(&name) {
            return Ok(f);
        }
        let cx = self.cx;
        let ctx = self.ctx();
        let mut params: Vec<BasicMetadataTypeEnum> = vec![cx.ptr.into()];
        if !cx.host {
            params.push(cx.i32.into());
        }
        params.extend::<[BasicMetadataTypeEnum; 4]>([cx.i32.into(), cx.i32.into(), cx.i64.into(), cx.i64.into()]);
        let f = self.m.add_function(&name, ctx.void_type().fn_type(&params, false), Some(Linkage::Internal));
        let attrs: &[&str] = if cx.host { &["cold", "noinline", "nounwind"] } else { &["cold", "alwaysinline", "nounwind", "noreturn"] };
        for attr in attrs {
            f.add_attribute(AttributeLoc::Function, ctx.create_enum_attribute(Attribute::get_named_enum_kind_id(attr), 0));
        }
        let b = ctx.create_builder();
        let entry = ctx.append_basic_block(f, "");
        let record = ctx.append_basic_block(f, "");
        let done = ctx.append_basic_block(f, "");
        b.position_at_end(entry);
        let param = |i: u32| f.get_nth_param(i).ok_or_else(|| llvm_err("oob parameter"));
        let first = param(0)?.into_pointer_value();
        let (rec, token, rest) = if cx.host {
            // SAFETY: `FAULT` is a field offset inside HostCtx (`abi::host_ctx_layout`).
            let at = unsafe { b.build_gep(cx.i8, first, &[cx.i64.const_int(host_ctx_layout::FAULT, false)], "")? };
            (b.build_load(cx.ptr, at, "")?.into_pointer_value(), cx.i32.const_zero(), 1)
        } else {
            (first, param(1)?.into_int_value(), 2)
        };
        let field = |off: u64| -> R<PointerValue<'ctx>> {
            // SAFETY: `off` is a field offset inside the fault record (`abi::fault_layout`).
            Ok(unsafe { b.build_gep(cx.i8, rec, &[cx.i64.const_int(off, false)], "")? })
        };
        let won =
            b.build_cmpxchg(rec, cx.i32.const_zero(), cx.i32.const_int(1, false), AtomicOrdering::Monotonic, AtomicOrdering::Monotonic)?;
        let won = b.build_extract_value(won, 1, "")?.into_int_value();
        b.build_conditional_branch(won, record, done)?;
        b.position_at_end(record);
        b.build_store(field(fault_layout::SITE)?, param(rest)?)?;
        b.build_store(field(fault_layout::DIM)?, param(rest + 1)?)?;
        b.build_store(field(fault_layout::TOKEN)?, token)?;
        b.build_store(field(fault_layout::INDEX)?, param(rest + 2)?)?;
        b.build_store(field(fault_layout::LEN)?, param(rest + 3)?)?;
        b.build_unconditional_branch(done)?;
        b.position_at_end(done);
        if cx.host {
            // SAFETY: `EXITING` is a field offset inside HostCtx.
            let at = unsafe { b.build_gep(cx.i8, first, &[cx.i64.const_int(host_ctx_layout::EXITING, false)], "")? };
            b.build_store(at, cx.i32.const_int(1, false))?;
            b.build_return(None)?;
        } else {
            build_exit(ctx, &b)?;
        }
        Ok(f)
    }
}

/// GPU: ends the thread (`exit`) where `b` is; the block is then unreachable. The failing path
/// of a check and a wait that sees its launch's fault (mbarrier.rs) end so.
pub(super) fn build_exit<'ctx>(ctx: &'ctx inkwell::context::Context, b: &inkwell::builder::Builder<'ctx>) -> R<()> {
    let asm_ty = ctx.void_type().fn_type(&[], false);
    let exit = ctx.create_inline_asm(asm_ty, "exit;".into(), "".into(), true, false, None, false);
    b.build_indirect_call(asm_ty, exit, &[], "")?;
    b.build_unreachable()?;
    Ok(())
}
