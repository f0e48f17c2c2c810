//! The warpgroup MMA of sm_90a: `wgmma_desc`, `wgmma`, `wgmma_fence`, `wgmma_commit`,
//! `wgmma_wait` and `fence_proxy_async`.
//!
//! On NVPTX each is its PTX instruction in inline assembly (LLVM 19 has no intrinsics for
//! them), emitted only for sm_90a (`lang::check_arch` refuses the others). A descriptor is the
//! PTX ISA's 64-bit "matrix descriptor" of a K-major tile: start address, stride of 8-row atoms
//! (8 rows of the swizzle's bytes) and swizzle mode, computed from the tile's shared address.
//! `wgmma` reads and writes the accumulator's registers as operands of one `asm` statement, and
//! `wgmma_wait` passes them through its own, so that nothing reads them before the wait.
//!
//! On the host a descriptor holds the tile's address (bits 0..62) and the swizzle mode (bits
//! 62..64); `wgmma` meets each warp's lanes in the runtime's rendezvous (`abi::warp_op::WGMMA`),
//! where `runtime::host_tensor` computes every lane's part of D from shared memory, reading it
//! through the swizzle exactly as the hardware does (XOR of address bits). The fence, the
//! groups and the wait have nothing to wait for: a host `wgmma` is done when it returns.

use inkwell::IntPredicate;
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum};
use inkwell::{AddressSpace, AtomicOrdering};

use super::tensor::Space;
use super::{FnLower, R, Val, llvm_err};
use crate::abi::{fault_layout, warp_op};
use crate::ir::*;

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    pub(super) fn wgmma_op(&mut self, t: TensorOp, args: &[Expr], ty: Ty) -> R<Val<'ctx>> {
        match t {
            TensorOp::WgmmaDesc { swizzle, rows } => self.wgmma_desc(swizzle as u64, rows as u64, args, ty),
            TensorOp::Wgmma { n, ab } => self.wgmma(t, n as u32, ab, args, ty),
            TensorOp::WgmmaWait(n) => {
                let acc = self.agg_of(&args[0])?;
                let out = self.temp(ty)?;
                let regs = self.wgacc_len(ty)?;
                if self.cx.host {
                    self.copy(out, acc, ty)?;
                    return Ok(Val::Agg(out));
                }
                let vals = self.acc_floats(acc, regs)?;
                let r = self.asm_regs(&format!("wgmma.wait_group.sync.aligned {n};"), regs, &[], &vals)?;
                self.store_words(out, &r)?;
                Ok(Val::Agg(out))
            }
            TensorOp::WgmmaFence | TensorOp::WgmmaCommit | TensorOp::FenceProxyAsync | TensorOp::Setmaxnreg { .. } => {
                if let TensorOp::Setmaxnreg { .. } = t
                    && (self.cx.host || self.cx.input.options.checked)
                {
                    // A hint (the PTX ISA's word), kept only in unchecked code: `setmaxnreg.inc`
                    // blocks until the block's pool holds the registers, which only `dec`s of
                    // the same block put there, so a plan that does not balance the count ptxas
                    // gave the kernel at launch would wait for ever. A safe launch cannot promise
                    // that: it runs without the hint. The host has no register file to share.
                    return Ok(Val::Unit);
                }
                if self.cx.host {
                    self.b.build_fence(AtomicOrdering::SequentiallyConsistent, false, "")?;
                    return Ok(Val::Unit);
                }
                let text = match t {
                    TensorOp::WgmmaFence => "wgmma.fence.sync.aligned;".to_string(),
                    TensorOp::WgmmaCommit => "wgmma.commit_group.sync.aligned;".to_string(),
                    TensorOp::Setmaxnreg { inc, regs } => {
                        format!("setmaxnreg.{}.sync.aligned.u32 {regs};", if inc { "inc" } else { "dec" })
                    }
                    _ => "fence.proxy.async.shared::cta;".to_string(),
                };
                let fty = self.ctx().void_type().fn_type(&[], false);
                let asm = self.ctx().create_inline_asm(fty, text, "~{memory}".into(), true, false, None, false);
                self.b.build_indirect_call(fty, asm, &[], "")?;
                Ok(Val::Unit)
            }
            _ => Err(llvm_err(format!("{} is not a warpgroup operation", t.name()))),
        }
    }

    /// Registers of a `WgAcc<f32, N>`: N / 2.
    fn wgacc_len(&self, ty: Ty) -> R<u32> {
        Ok((self.cx.size_align(ty)?.size / 4) as u32)
    }

    /// The accumulator's registers at `p`, as `f32` values.
    fn acc_floats(&self, p: inkwell::values::PointerValue<'ctx>, n: u32) -> R<Vec<BasicMetadataValueEnum<'ctx>>> {
        let f32t = self.ctx().f32_type();
        let mut out = Vec::with_capacity(n as usize);
        for w in self.words(p, n)? {
            out.push(self.b.build_bit_cast(w, f32t, "")?.into());
        }
        Ok(out)
    }

    /// `text` as an `asm volatile` whose first `regs` operands are `f32` registers read and
    /// written (`vals` their values in), followed by the 64-bit inputs `inputs`: the new values.
    fn asm_regs(
        &mut self,
        text: &str,
        regs: u32,
        inputs: &[BasicMetadataValueEnum<'ctx>],
        vals: &[BasicMetadataValueEnum<'ctx>],
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let f32t = self.ctx().f32_type();
        let ret = self.ctx().struct_type(&vec![f32t.into(); regs as usize], false);
        let mut params: Vec<inkwell::types::BasicMetadataTypeEnum<'ctx>> = vec![self.cx.i64.into(); inputs.len()];
        params.extend(std::iter::repeat_n(inkwell::types::BasicMetadataTypeEnum::from(f32t), regs as usize));
        let fty = ret.fn_type(&params, false);
        let mut cons: Vec<String> = (0..regs).map(|_| "=f".to_string()).collect();
        cons.extend(inputs.iter().map(|_| "l".to_string()));
        cons.extend((0..regs).map(|i| i.to_string()));
        cons.push("~{memory}".into());
        let asm = self.ctx().create_inline_asm(fty, text.into(), cons.join(","), true, false, None, false);
        let mut args: Vec<BasicMetadataValueEnum<'ctx>> = inputs.to_vec();
        args.extend_from_slice(vals);
        let call = self.b.build_indirect_call(fty, asm, &args, "")?;
        let r = call.try_as_basic_value().basic().ok_or_else(|| llvm_err("asm returns the registers"))?.into_struct_value();
        let mut out = Vec::with_capacity(regs as usize);
        for i in 0..regs {
            out.push(self.b.build_extract_value(r, i, "")?);
        }
        Ok(out)
    }

    /// `wgmma_desc::<SWIZZLE, ROWS>(&tile[i])`. Checked code checks that the `rows` rows of
    /// the atoms from element `i`'s row are inside the array, that the array is in shared
    /// memory, that element `i` is 32-byte aligned (a K step) and that its row starts an atom
    /// aligned to 8 rows (the swizzle is of address bits).
    fn wgmma_desc(&mut self, swizzle: u64, rows: u64, args: &[Expr], ty: Ty) -> R<Val<'ctx>> {
        let ExprKind::Index(arr_e, idx) = &args[0].kind else { return Err(llvm_err("wgmma_desc of a non-element")) };
        let arr = self.expr(arr_e)?.array()?;
        let i = self.scalar_of(idx.first().ok_or_else(|| llvm_err("an access without an index"))?)?.into_int_value();
        let len = *arr.shape.first().ok_or_else(|| llvm_err("an access of a 0-d array"))?;
        // 16-bit floats, or `f32`s read as tf32: a row is `swizzle / size` of them.
        let size = match arr.elem {
            Elem::Scalar(s @ (Scalar::F16 | Scalar::Bf16 | Scalar::F32)) => s.size() as u64,
            _ => return Err(llvm_err("wgmma_desc of an array of neither 16-bit floats nor f32")),
        };
        let per_row = swizzle / size;
        let checked = self.cx.input.options.checked;
        let in_row = self.b.build_and(i, self.i64c(per_row - 1), "")?;
        if checked {
            let first = self.b.build_int_compare(IntPredicate::ULT, i, len, "")?;
            self.guard(first, arr_e, 0, i, len)?;
            let row_start = self.b.build_int_sub(i, in_row, "")?;
            let last = self.b.build_int_add(row_start, self.i64c(rows * per_row - 1), "")?;
            let inside = self.b.build_int_compare(IntPredicate::ULT, last, len, "")?;
            self.guard(inside, arr_e, 0, last, len)?;
        }
        // SAFETY: in checked code `i` was checked above; unchecked code runs only through
        // `unsafe` launches whose caller promised in-bounds accesses.
        let p = unsafe { self.b.build_gep(self.cx.i8, arr.ptr, &[self.b.build_int_mul(i, self.i64c(size), "")?], "")? };
        if checked && self.known_space(arr.ptr) != Some(Space::Shared) {
            let inside = self.in_space(p, Space::Shared)?;
            self.guard(inside, arr_e, fault_layout::NOT_SHARED, i, len)?;
        }
        // The address the hardware sees: the shared window's on the GPU, the host's own here.
        let addr = if self.cx.host {
            self.b.build_ptr_to_int(p, self.cx.i64, "")?
        } else {
            // The array's shared address plus the element's offset: of a shared array declared
            // here, LLVM sees the variable's alignment and folds the checks below.
            let shared = self.b.build_address_space_cast(arr.ptr, self.ctx().ptr_type(AddressSpace::from(3u16)), "")?;
            let a32 = self.b.build_ptr_to_int(shared, self.cx.i32, "")?;
            let base = self.b.build_int_z_extend(a32, self.cx.i64, "")?;
            let off = self.b.build_int_mul(i, self.i64c(size), "")?;
            self.b.build_int_add(base, off, "")?
        };
        if checked {
            let low = self.b.build_and(addr, self.i64c(31), "")?;
            let ok = self.b.build_int_compare(IntPredicate::EQ, low, self.i64c(0), "")?;
            self.guard(ok, arr_e, fault_layout::MISALIGNED | 32, i, len)?;
            let in_row_bytes = self.b.build_int_mul(in_row, self.i64c(size), "")?;
            let row_addr = self.b.build_int_sub(addr, in_row_bytes, "")?;
            let low = self.b.build_and(row_addr, self.i64c(8 * swizzle - 1), "")?;
            let ok = self.b.build_int_compare(IntPredicate::EQ, low, self.i64c(0), "")?;
            self.guard(ok, arr_e, fault_layout::MISALIGNED | (8 * swizzle) as u32, i, len)?;
        }
        let mode = self.i64c(wgmma_swizzle_mode(swizzle as u32) << 62);
        let desc = if self.cx.host {
            self.b.build_or(addr, mode, "")?
        } else {
            // Start address >> 4 (14 bits), leading offset 1 (unused by swizzled K-major
            // tiles), stride between 8-row atoms >> 4, swizzle mode.
            let start = self.b.build_right_shift(self.b.build_and(addr, self.i64c(0x3ffff), "")?, self.i64c(4), false, "")?;
            let fixed = (1u64 << 16) | ((8 * swizzle) >> 4) << 32;
            self.b.build_or(start, self.b.build_or(self.i64c(fixed), mode, "")?, "")?
        };
        let out = self.temp(ty)?;
        self.b.build_store(out, desc)?;
        Ok(Val::Agg(out))
    }

    /// `wgmma(a, b, acc)`: D = A·Bᵀ + C, m64nNk16 of 16-bit floats or m64nNk8 of tf32, `f32`
    /// accumulators.
    fn wgmma(&mut self, t: TensorOp, n: u32, ab: Scalar, args: &[Expr], ty: Ty) -> R<Val<'ctx>> {
        let a = self.agg_of(&args[0])?;
        let b = self.agg_of(&args[1])?;
        let c = self.agg_of(&args[2])?;
        let regs = n / 2;
        let da = self.b.build_load(self.cx.i64, a, "")?;
        let db = self.b.build_load(self.cx.i64, b, "")?;
        let d = self.temp(ty)?;
        if self.cx.host {
            // The lane's buffer: descriptors of A and B, its rank in the warpgroup, its
            // accumulator (D written over C by the rendezvous).
            let bytes = 24 + 4 * regs;
            let buf = self.alloca_ty(self.cx.i8.array_type(bytes).into(), 16)?;
            self.b.build_store(buf, da)?;
            // SAFETY: offsets 8, 16 and 24 are inside the buffer.
            let (b_at, rank_at, c_at) = unsafe {
                (
                    self.b.build_gep(self.cx.i8, buf, &[self.i64c(8)], "")?,
                    self.b.build_gep(self.cx.i8, buf, &[self.i64c(16)], "")?,
                    self.b.build_gep(self.cx.i8, buf, &[self.i64c(24)], "")?,
                )
            };
            self.b.build_store(b_at, db)?;
            let rank = self.warpgroup_rank()?;
            self.b.build_store(rank_at, rank)?;
            self.copy(c_at, c, ty)?;
            let addr = self.b.build_ptr_to_int(buf, self.cx.i64, "")?;
            let code = self.cx.i32.const_int(t.warp_code() as u64, false);
            let full = self.cx.i32.const_int(u32::MAX as u64, false);
            self.host_warp(warp_op::WGMMA, full, addr, code, self.cx.i32.const_zero())?;
            self.copy(d, c_at, ty)?;
            return Ok(Val::Agg(d));
        }
        // Both operands K-major: the transpose flags are 0 (tf32 has none: K-major only).
        let (ty_name, tail) = match ab {
            Scalar::F16 => ("f16", ", 0, 0"),
            Scalar::Bf16 => ("bf16", ", 0, 0"),
            _ => ("tf32", ""),
        };
        let k = wgmma_k(ab);
        let outs: Vec<String> = (0..regs).map(|r| format!("${r}")).collect();
        let text = format!(
            "{{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\nwgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{ty_name}.{ty_name} {{{}}}, ${}, ${}, p, 1, 1{tail};\n}}",
            outs.join(", "),
            regs,
            regs + 1
        );
        let vals = self.acc_floats(c, regs)?;
        let r = self.asm_regs(&text, regs, &[da.into(), db.into()], &vals)?;
        self.store_words(d, &r)?;
        Ok(Val::Agg(d))
    }

    /// The thread's rank in its warpgroup: its linear index in the block, modulo 128.
    fn warpgroup_rank(&mut self) -> R<inkwell::values::IntValue<'ctx>> {
        let tx = self.index_query(Builtin::ThreadIdx(0))?;
        let ty = self.index_query(Builtin::ThreadIdx(1))?;
        let tz = self.index_query(Builtin::ThreadIdx(2))?;
        let dx = self.index_query(Builtin::BlockDim(0))?;
        let dy = self.index_query(Builtin::BlockDim(1))?;
        let plane = self.b.build_int_mul(dx, dy, "")?;
        let zz = self.b.build_int_mul(tz, plane, "")?;
        let yy = self.b.build_int_mul(ty, dx, "")?;
        let linear = self.b.build_int_add(self.b.build_int_add(zz, yy, "")?, tx, "")?;
        let rank = self.b.build_and(linear, linear.get_type().const_int(127, false), "")?;
        Ok(self.b.build_int_z_extend_or_bit_cast(rank, self.cx.i32, "")?)
    }
}
