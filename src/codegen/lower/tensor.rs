//! Tensor-core builtins: `mma`, `ldmatrix`, `cp_async` and its groups, `tf32_round`.
//!
//! On NVPTX each is its NVVM intrinsic (`llvm.nvvm.mma.*`, `llvm.nvvm.ldmatrix.*`,
//! `llvm.nvvm.cp.async.*`, `llvm.nvvm.f2tf32.rna`), emitted only for an architecture that has it
//! (`lang::check_arch` refuses the others before lowering). A fragment is its registers in
//! memory (`struct { x: [T; n] }`, packed as PTX packs them: element 0 in the low bits), read
//! as 32-bit words for the instruction and written back from its results; SROA keeps them in
//! registers. On the host, `mma` and `ldmatrix` meet the warp's lanes in the runtime's
//! rendezvous (`abi::warp_op::MMA`, `LDMATRIX`), which computes what each lane receives;
//! `cp_async` is a copy made at once, its groups complete when issued.
//!
//! Checked code checks every element an access covers, its alignment, and that its arrays are
//! in the memory the instruction reads or writes (`isspacep` on the GPU, the block's shared
//! buffers on the host): what the hardware would fault on or leave undefined is a fault of the
//! launch (`abi::fault_layout`).

use inkwell::IntPredicate;
use inkwell::types::BasicTypeEnum;
use inkwell::values::BasicValue;
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, IntValue, PointerValue};
use inkwell::{AddressSpace, AtomicOrdering};

use super::{FnLower, R, Val, llvm_err};
use crate::abi::{fault_layout, host_ctx_layout, warp_op};
use crate::ir::*;

/// Which memory an access must be in (or a pointer is known to be in: codegen/spaces.rs).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(in crate::codegen) enum Space {
    Shared,
    Global,
}

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    pub(super) fn tensor(&mut self, t: TensorOp, args: &[Expr], ty: Ty) -> R<Val<'ctx>> {
        match t {
            TensorOp::Mma(s) => self.mma(s, args, ty),
            TensorOp::Ldmatrix { count, trans } => self.ldmatrix(t, count, trans, args, ty),
            TensorOp::CpAsync { bytes, bypass_l1 } => self.cp_async(bytes, bypass_l1, args),
            TensorOp::CpAsyncCommit => {
                if !self.cx.host {
                    let f = self.void_fn("llvm.nvvm.cp.async.commit.group", &[]);
                    self.b.build_call(f, &[], "")?;
                }
                Ok(Val::Unit)
            }
            TensorOp::CpAsyncWait(n) => {
                if self.cx.host {
                    // The copies were made when issued; a fence keeps the order a kernel reads in.
                    self.b.build_fence(AtomicOrdering::SequentiallyConsistent, false, "")?;
                } else {
                    let f = self.void_fn("llvm.nvvm.cp.async.wait.group", &[self.cx.i32.into()]);
                    self.b.build_call(f, &[self.cx.i32.const_int(n as u64, false).into()], "")?;
                }
                Ok(Val::Unit)
            }
            TensorOp::WgmmaDesc { .. }
            | TensorOp::Wgmma { .. }
            | TensorOp::WgmmaFence
            | TensorOp::WgmmaCommit
            | TensorOp::WgmmaWait(_)
            | TensorOp::Setmaxnreg { .. }
            | TensorOp::FenceProxyAsync => self.wgmma_op(t, args, ty),
            TensorOp::MbarrierInit
            | TensorOp::MbarrierArrive
            | TensorOp::MbarrierArriveExpectTx
            | TensorOp::MbarrierTryWait
            | TensorOp::MbarrierInval
            | TensorOp::CpAsyncBulk { .. }
            | TensorOp::CpAsyncBulkTensor { .. } => self.mbarrier_op(t, args),
            TensorOp::Tf32Round => {
                let x = self.scalar_of(&args[0])?.into_float_value();
                let f32t = self.ctx().f32_type();
                if !self.cx.host {
                    let f = self.intrinsic("llvm.nvvm.f2tf32.rna", self.cx.i32.into(), &[f32t.into()]);
                    let bits = self.call_basic(f, &[x.into()])?;
                    return Ok(Val::Scalar(self.b.build_bit_cast(bits, f32t, "")?));
                }
                // Round the 13 dropped bits to nearest, ties away from zero: add half of their
                // weight to the magnitude and clear them. Infinities and NaNs keep their bits.
                let i32t = self.cx.i32;
                let bits = self.b.build_bit_cast(x, i32t, "")?.into_int_value();
                let rounded = self.b.build_int_add(bits, i32t.const_int(0x1000, false), "")?;
                let rounded = self.b.build_and(rounded, i32t.const_int(0xffff_e000, false), "")?;
                let exp = self.b.build_and(bits, i32t.const_int(0x7f80_0000, false), "")?;
                let special = self.b.build_int_compare(IntPredicate::EQ, exp, i32t.const_int(0x7f80_0000, false), "")?;
                let r = self.b.build_select(special, bits, rounded, "")?;
                Ok(Val::Scalar(self.b.build_bit_cast(r, f32t, "")?))
            }
        }
    }

    pub(super) fn void_fn(&self, name: &str, args: &[BasicTypeEnum<'ctx>]) -> inkwell::values::FunctionValue<'ctx> {
        let params: Vec<inkwell::types::BasicMetadataTypeEnum> = args.iter().map(|a| (*a).into()).collect();
        self.m.get_function(name).unwrap_or_else(|| self.m.add_function(name, self.ctx().void_type().fn_type(&params, false), None))
    }

    /// The `n` 32-bit words of the fragment at `p`.
    pub(super) fn words(&self, p: PointerValue<'ctx>, n: u32) -> R<Vec<IntValue<'ctx>>> {
        let mut out = Vec::with_capacity(n as usize);
        for w in 0..n {
            // SAFETY: the fragment holds `n` words (`MmaShape::elems` times the element size).
            let at = unsafe { self.b.build_gep(self.cx.i8, p, &[self.i64c(4 * w as u64)], "")? };
            let v = self.b.build_load(self.cx.i32, at, "")?;
            if let Some(i) = v.as_instruction_value() {
                i.set_alignment(1).map_err(|e| llvm_err(format!("alignment: {e}")))?;
            }
            out.push(v.into_int_value());
        }
        Ok(out)
    }

    /// Writes 32-bit values (words or floats) into consecutive words at `p`.
    pub(super) fn store_words(&self, p: PointerValue<'ctx>, vals: &[BasicValueEnum<'ctx>]) -> R<()> {
        for (w, v) in vals.iter().enumerate() {
            // SAFETY: the destination holds `vals.len()` words.
            let at = unsafe { self.b.build_gep(self.cx.i8, p, &[self.i64c(4 * w as u64)], "")? };
            let st = self.b.build_store(at, *v)?;
            st.set_alignment(1).map_err(|e| llvm_err(format!("alignment: {e}")))?;
        }
        Ok(())
    }

    /// `mma(a, b, c)`: D = A·B + C, a new accumulator.
    fn mma(&mut self, s: MmaShape, args: &[Expr], ty: Ty) -> R<Val<'ctx>> {
        let a = self.agg_of(&args[0])?;
        let b = self.agg_of(&args[1])?;
        let c = self.agg_of(&args[2])?;
        let words = |kind| s.elems(kind) * s.elem(kind).size() as u32 / 4;
        let (na, nb) = (words(FragKind::A), words(FragKind::B));
        let d = self.temp(ty)?;
        if self.cx.host {
            // The lane's A (4 words), B (2) and C (4), D written over C by the rendezvous.
            let buf = self.alloca_ty(self.cx.i32.array_type(10).into(), 16)?;
            let (aw, bw, cw) = (self.words(a, na)?, self.words(b, nb)?, self.words(c, 4)?);
            let as_vals = |ws: &[IntValue<'ctx>]| ws.iter().map(|w| (*w).into()).collect::<Vec<BasicValueEnum>>();
            // SAFETY: offsets 16 and 24 are inside the 40-byte buffer.
            let (b_at, c_at) = unsafe {
                (self.b.build_gep(self.cx.i8, buf, &[self.i64c(16)], "")?, self.b.build_gep(self.cx.i8, buf, &[self.i64c(24)], "")?)
            };
            self.store_words(buf, &as_vals(&aw))?;
            self.store_words(b_at, &as_vals(&bw))?;
            self.store_words(c_at, &as_vals(&cw))?;
            let addr = self.b.build_ptr_to_int(buf, self.cx.i64, "")?;
            let code = self.cx.i32.const_int(TensorOp::Mma(s).warp_code() as u64, false);
            let full = self.cx.i32.const_int(u32::MAX as u64, false);
            self.host_warp(warp_op::MMA, full, addr, code, self.cx.i32.const_zero())?;
            let out = self.words(c_at, 4)?;
            self.store_words(d, &as_vals(&out))?;
            return Ok(Val::Agg(d));
        }
        let f32t = self.ctx().f32_type();
        let half2 = self.ctx().f16_type().vec_type(2);
        // f16 operands are `<2 x half>` for LLVM; the other types are `i32` words.
        let operand = |w: IntValue<'ctx>| -> R<BasicMetadataValueEnum<'ctx>> {
            Ok(if s.ab == Scalar::F16 { self.b.build_bit_cast(w, half2, "")?.into() } else { w.into() })
        };
        let mut params: Vec<BasicTypeEnum<'ctx>> = Vec::new();
        let mut vals: Vec<BasicMetadataValueEnum<'ctx>> = Vec::new();
        for w in self.words(a, na)?.into_iter().chain(self.words(b, nb)?) {
            params.push(if s.ab == Scalar::F16 { half2.into() } else { self.cx.i32.into() });
            vals.push(operand(w)?);
        }
        let acc: BasicTypeEnum<'ctx> = if s.acc == Scalar::F32 { f32t.into() } else { self.cx.i32.into() };
        for w in self.words(c, 4)? {
            params.push(acc);
            vals.push(if s.acc == Scalar::F32 { self.b.build_bit_cast(w, f32t, "")?.into() } else { w.into() });
        }
        let ret = self.ctx().struct_type(&[acc; 4], false);
        let suffix = match s.ab {
            Scalar::F16 => "f32.f32",
            Scalar::Bf16 => "bf16",
            Scalar::F32 => "tf32",
            Scalar::I8 => "s8",
            Scalar::U8 => "u8",
            other => return Err(llvm_err(format!("no mma of {other}"))),
        };
        let name = format!("llvm.nvvm.mma.m{}n{}k{}.row.col.{suffix}", s.m, s.n, s.k);
        let f = self.intrinsic(&name, ret.into(), &params);
        let r = self.call_basic(f, &vals)?.into_struct_value();
        let mut out = Vec::with_capacity(4);
        for i in 0..4 {
            out.push(self.b.build_extract_value(r, i, "")?);
        }
        self.store_words(d, &out)?;
        Ok(Val::Agg(d))
    }

    /// `ldmatrix_x{count}[_trans](&tile[i])`: `count` words, each two 16-bit elements.
    fn ldmatrix(&mut self, t: TensorOp, count: u8, trans: bool, args: &[Expr], ty: Ty) -> R<Val<'ctx>> {
        // A row is 16 bytes: 8 16-bit elements, or 4 32-bit ones.
        let elem = match &args[0].kind {
            ExprKind::Index(a, _) => match a.ty {
                Ty::Array(at) => at.elem.scalar().map(|s| s.size() as u64).unwrap_or(2),
                _ => 2,
            },
            _ => 2,
        };
        let p = self.access(&args[0], 16 / elem, 16, Space::Shared)?;
        let out = self.temp(ty)?;
        let i32t = self.cx.i32;
        if self.cx.host {
            let buf = self.alloca_ty(self.cx.i64.array_type(3).into(), 16)?;
            let addr = self.b.build_ptr_to_int(p, self.cx.i64, "")?;
            self.b.build_store(buf, addr)?;
            let at = self.b.build_ptr_to_int(buf, self.cx.i64, "")?;
            let code = i32t.const_int(t.warp_code() as u64, false);
            self.host_warp(warp_op::LDMATRIX, i32t.const_int(u32::MAX as u64, false), at, code, i32t.const_zero())?;
            // SAFETY: the result words follow the address, inside the 24-byte buffer.
            let words_at = unsafe { self.b.build_gep(self.cx.i8, buf, &[self.i64c(8)], "")? };
            let ws = self.words(words_at, count as u32)?;
            self.store_words(out, &ws.iter().map(|w| (*w).into()).collect::<Vec<_>>())?;
            return Ok(Val::Agg(out));
        }
        let shared = self.b.build_address_space_cast(p, self.ctx().ptr_type(AddressSpace::from(3u16)), "")?;
        let ret: BasicTypeEnum<'ctx> =
            if count == 1 { i32t.into() } else { self.ctx().struct_type(&vec![i32t.into(); count as usize], false).into() };
        let name = format!("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{count}{}.b16.p3", if trans { ".trans" } else { "" });
        let f = self.intrinsic(&name, ret, &[shared.get_type().into()]);
        let r = self.call_basic(f, &[shared.into()])?;
        let mut ws = Vec::with_capacity(count as usize);
        if count == 1 {
            ws.push(r);
        } else {
            for i in 0..count as u32 {
                ws.push(self.b.build_extract_value(r.into_struct_value(), i, "")?);
            }
        }
        self.store_words(out, &ws)?;
        Ok(Val::Agg(out))
    }

    /// `cp_async::<BYTES>(&mut dst[i], &src[j])`.
    fn cp_async(&mut self, bytes: u8, bypass_l1: bool, args: &[Expr]) -> R<Val<'ctx>> {
        let elem = args[0].ty.scalar().ok_or_else(|| llvm_err("cp_async of a non-scalar"))?;
        let n = bytes as u64 / elem.size() as u64;
        let dst = self.access(&args[0], n, bytes as u64, Space::Shared)?;
        let src = self.access(&args[1], n, bytes as u64, Space::Global)?;
        if self.cx.host {
            self.b
                .build_memcpy(dst, bytes as u32, src, bytes as u32, self.i64c(bytes as u64))
                .map_err(|e| llvm_err(format!("memcpy: {e}")))?;
            return Ok(Val::Unit);
        }
        let d3 = self.b.build_address_space_cast(dst, self.ctx().ptr_type(AddressSpace::from(3u16)), "")?;
        let s1 = self.b.build_address_space_cast(src, self.ctx().ptr_type(AddressSpace::from(1u16)), "")?;
        let name = format!("llvm.nvvm.cp.async.{}.shared.global.{bytes}", if bypass_l1 { "cg" } else { "ca" });
        let f = self.void_fn(&name, &[d3.get_type().into(), s1.get_type().into()]);
        self.b.build_call(f, &[d3.into(), s1.into()], "")?;
        Ok(Val::Unit)
    }

    /// The address of the `n` elements from `&a[i]` (an `ExprKind::Index`), checked in checked
    /// code: both ends in bounds, the address a multiple of `align` bytes, the array in `space`.
    pub(super) fn access(&mut self, e: &Expr, n: u64, align: u64, space: Space) -> R<PointerValue<'ctx>> {
        let ExprKind::Index(arr_e, idx) = &e.kind else { return Err(llvm_err("a tensor access of a non-element")) };
        let arr = self.expr(arr_e)?.array()?;
        let i = self.scalar_of(idx.first().ok_or_else(|| llvm_err("an access without an index"))?)?.into_int_value();
        let len = *arr.shape.first().ok_or_else(|| llvm_err("an access of a 0-d array"))?;
        let checked = self.cx.input.options.checked;
        if checked {
            // One test: i < len - (n - 1), a limit that does not change in a loop (0 where
            // the array is shorter than n - 1, so that every i fails). A failure names i where
            // it is out of bounds, else the access's last element.
            let tail = self.i64c(n - 1);
            let room = self.b.build_int_compare(IntPredicate::UGE, len, tail, "")?;
            let limit = self.b.build_int_sub(len, tail, "")?;
            let limit = self.b.build_select(room, limit, self.i64c(0), "")?.into_int_value();
            let inside = self.b.build_int_compare(IntPredicate::ULT, i, limit, "")?;
            let last = self.b.build_int_add(i, tail, "")?;
            let first = self.b.build_int_compare(IntPredicate::ULT, i, len, "")?;
            let named = self.b.build_select(first, last, i, "")?.into_int_value();
            self.guard(inside, arr_e, 0, named, len)?;
        }
        let et = self.cx.elem_llty(arr.elem)?;
        // SAFETY: in checked code `i .. i + n` was checked above; unchecked code runs only through
        // `unsafe` launches whose caller promised in-bounds accesses.
        let p = unsafe { self.b.build_gep(et, arr.ptr, &[i], "")? };
        if checked {
            let known = self.known_space(arr.ptr);
            // Which memory first: the alignment of a shared access is of its shared address.
            if known != Some(space) {
                let inside = self.in_space(p, space)?;
                let code = if space == Space::Shared { fault_layout::NOT_SHARED } else { fault_layout::NOT_GLOBAL };
                self.guard(inside, arr_e, code, i, len)?;
            }
            // A shared array declared here starts 16-byte aligned: its element's offset says
            // it all (and LLVM can prove that of a swizzled tile index). Elsewhere (start +
            // offset) mod align, written (start mod align + offset mod align) mod align so that
            // each part folds on its own where LLVM knows it: the start's (after inlining, where
            // the array starts: `dynamic_shared_array`'s 1024-byte boundary, a shared variable's
            // alignment; else tested once, outside the loops), and the offset's (a swizzled tile
            // index). A shared array's start is its address in shared memory.
            let mask = self.i64c(align - 1);
            let offset = self.b.build_int_mul(i, self.i64c(self.cx.types().elem_size(arr.elem)), "")?;
            let offset = self.b.build_and(offset, mask, "")?;
            let low = if known == Some(Space::Shared) {
                offset
            } else {
                let base = if space == Space::Shared && !self.cx.host {
                    self.b.build_address_space_cast(arr.ptr, self.ctx().ptr_type(AddressSpace::from(3u16)), "")?
                } else {
                    arr.ptr
                };
                let start = self.b.build_ptr_to_int(base, self.cx.i64, "")?;
                let start = self.b.build_and(start, mask, "")?;
                let sum = self.b.build_int_add(start, offset, "")?;
                self.b.build_and(sum, mask, "")?
            };
            let aligned = self.b.build_int_compare(IntPredicate::EQ, low, self.i64c(0), "")?;
            self.guard(aligned, arr_e, fault_layout::MISALIGNED | align as u32, i, len)?;
        }
        Ok(p)
    }

    /// The memory an array's base is known to be in where this function is lowered (so its
    /// check can be left out): on the GPU, a shared array declared in this function (its base
    /// is the shared variable's generic address), or an array parameter of the kernel (the
    /// launch passes device allocations: global memory). Arrays a device function receives are
    /// checked where they are used (LLVM does not fold `isspacep` after inlining).
    pub(super) fn known_space(&self, base: PointerValue<'ctx>) -> Option<Space> {
        use inkwell::llvm_sys::LLVMOpcode;
        use inkwell::llvm_sys::core::{
            LLVMGetConstOpcode, LLVMGetOperand, LLVMGetPointerAddressSpace, LLVMIsAConstantExpr, LLVMIsAGlobalVariable, LLVMTypeOf,
        };
        use inkwell::values::AsValueRef;
        if self.cx.host {
            return None;
        }
        let v = base.as_value_ref();
        // SAFETY: `v` is a live value of this module; these calls only inspect it, and operand 0
        // of an address-space cast exists.
        let shared = unsafe {
            !LLVMIsAConstantExpr(v).is_null() && LLVMGetConstOpcode(v) == LLVMOpcode::LLVMAddrSpaceCast && {
                let inner = LLVMGetOperand(v, 0);
                !LLVMIsAGlobalVariable(inner).is_null() && LLVMGetPointerAddressSpace(LLVMTypeOf(inner)) == 3
            }
        };
        if shared {
            return Some(Space::Shared);
        }
        if self.fid == self.cx.input.program.kernel && self.fv.get_param_iter().any(|q| q.as_value_ref() == v) {
            return Some(Space::Global);
        }
        None
    }

    /// Whether `p` is in shared memory (`space` shared) or global memory: `isspacep` on the GPU;
    /// on the host, whether it is inside the block's shared buffers (global is everything else).
    pub(super) fn in_space(&mut self, p: PointerValue<'ctx>, space: Space) -> R<IntValue<'ctx>> {
        if !self.cx.host {
            let name = if space == Space::Shared { "llvm.nvvm.isspacep.shared" } else { "llvm.nvvm.isspacep.global" };
            let f = self.intrinsic(name, self.cx.i1.into(), &[self.cx.ptr.into()]);
            return Ok(self.call_basic(f, &[p.into()])?.into_int_value());
        }
        let addr = self.b.build_ptr_to_int(p, self.cx.i64, "")?;
        let within = |this: &mut Self, base: PointerValue<'ctx>, len: IntValue<'ctx>| -> R<IntValue<'ctx>> {
            let b = this.b.build_ptr_to_int(base, this.cx.i64, "")?;
            let off = this.b.build_int_sub(addr, b, "")?;
            Ok(this.b.build_int_compare(IntPredicate::ULT, off, len, "")?)
        };
        let stat = self.ctx_field_ptr(host_ctx_layout::SHARED)?;
        let in_static = within(self, stat, self.i64c(self.cx.shared_total))?;
        let dynp = self.ctx_field_ptr(host_ctx_layout::DYN_SHARED)?;
        let dyn_len = self.ctx_field_i64(host_ctx_layout::DYN_SHARED_LEN)?;
        let in_dyn = within(self, dynp, dyn_len)?;
        let shared = self.b.build_or(in_static, in_dyn, "")?;
        Ok(if space == Space::Shared { shared } else { self.b.build_not(shared, "")? })
    }
}
