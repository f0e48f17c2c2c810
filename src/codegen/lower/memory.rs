//! Memory: captured values as constants, element addressing, loads and stores (`bool` as a byte),
//! shared memory, and the fields of the host backend's per-thread context.

use inkwell::module::Linkage;
use inkwell::types::BasicType;
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};
use inkwell::{AddressSpace, IntPredicate};

use super::{ArrayVal, FnLower, R, Val, llvm_err};
use crate::abi::{CaptureData, host_ctx_layout};
use crate::ir::*;

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    pub(super) fn capture(&mut self, c: CaptureId) -> R<Val<'ctx>> {
        let data = self.cx.input.captures.get(c).ok_or_else(|| llvm_err(format!("capture {c} has no value")))?;
        let cap = &self.cx.input.program.captures[c];
        Ok(match data {
            CaptureData::Scalar(v) => Val::Scalar(self.const_scalar(*v)),
            CaptureData::HostArray { shape, strides, bytes } => {
                let CaptureTy::Array { ty, .. } = cap.ty else { return Err(llvm_err("capture type")) };
                let init = self.ctx().const_string(bytes, false);
                let space = if self.cx.host { AddressSpace::default() } else { AddressSpace::from(1u16) };
                let g = self.m.add_global(init.get_type(), Some(space), &format!("__kache_const_{c}_k"));
                g.set_initializer(&init);
                g.set_constant(true);
                g.set_linkage(Linkage::Private);
                g.set_alignment(16);
                let ptr = if self.cx.host {
                    g.as_pointer_value()
                } else {
                    self.b.build_address_space_cast(g.as_pointer_value(), self.cx.ptr, "")?
                };
                Val::Array(ArrayVal {
                    ptr,
                    shape: shape.iter().map(|d| self.i64c(*d as u64)).collect(),
                    strides: strides.iter().map(|d| self.i64c(*d as i64 as u64)).collect(),
                    elem: ty.elem,
                })
            }
            CaptureData::DeviceArray { ptr, shape, strides } => {
                let CaptureTy::Array { ty, .. } = cap.ty else { return Err(llvm_err("capture type")) };
                let p = self.b.build_int_to_ptr(self.i64c(*ptr), self.cx.ptr, "")?;
                Val::Array(ArrayVal {
                    ptr: p,
                    shape: shape.iter().map(|d| self.i64c(*d as u64)).collect(),
                    strides: strides.iter().map(|d| self.i64c(*d as i64 as u64)).collect(),
                    elem: ty.elem,
                })
            }
            CaptureData::DeviceSlot { shape, strides } => {
                let CaptureTy::Array { ty, .. } = cap.ty else { return Err(llvm_err("capture type")) };
                let ptr = match self.cx.gpu_slots.iter().position(|s| *s == c) {
                    // On the GPU: the hidden parameter the launch passes.
                    Some(i) => *self.gpu_slots.get(i).ok_or_else(|| llvm_err("capture slot parameter"))?,
                    None => {
                        // On the host: the module variable the loader filled before the launch;
                        // nothing writes it during one, so the address may be read once and
                        // kept, like a parameter.
                        let slot = self.cx.capture_slot(self.m, c);
                        let load = self.b.build_load(self.cx.ptr, slot.as_pointer_value(), "")?;
                        if let Some(i) = load.into_pointer_value().as_instruction() {
                            let kind = self.ctx().get_kind_id("invariant.load");
                            i.set_metadata(self.ctx().metadata_node(&[]), kind).map_err(|e| llvm_err(format!("invariant.load: {e}")))?;
                        }
                        load.into_pointer_value()
                    }
                };
                Val::Array(ArrayVal {
                    ptr,
                    shape: shape.iter().map(|d| self.i64c(*d as u64)).collect(),
                    strides: strides.iter().map(|d| self.i64c(*d as i64 as u64)).collect(),
                    elem: ty.elem,
                })
            }
        })
    }

    /// The address of element `idx` of `arr`, the array the expression `array` gave. Every index
    /// is evaluated first, then (in checked code) checked against its extent, as Rust does.
    pub(super) fn element_ptr(&mut self, arr: &ArrayVal<'ctx>, array: &Expr, idx: &[Expr]) -> R<PointerValue<'ctx>> {
        let mut indices = Vec::with_capacity(idx.len());
        for ie in idx {
            indices.push(self.scalar_of(ie)?.into_int_value());
        }
        self.check_bounds(arr, array, &indices)?;
        let mut off: Option<IntValue<'ctx>> = None;
        for (d, i) in indices.into_iter().enumerate() {
            let stride = arr.strides.get(d).copied().unwrap_or(self.i64c(1));
            let term = self.b.build_int_mul(i, stride, "")?;
            off = Some(match off {
                Some(o) => self.b.build_int_add(o, term, "")?,
                None => term,
            });
        }
        let off = off.unwrap_or(self.i64c(0));
        // SAFETY: in checked code every index was checked against its extent above; unchecked
        // code runs only through `unsafe` launches whose caller promised in-bounds indices.
        let p = unsafe { self.b.build_gep(self.cx.elem_llty(arr.elem)?, arr.ptr, &[off], "")? };
        Ok(p)
    }

    pub(super) fn load_elem(&self, p: PointerValue<'ctx>, s: Scalar) -> R<BasicValueEnum<'ctx>> {
        let v = self.b.build_load(self.cx.mem_ty(s), p, "")?;
        if s == Scalar::Bool {
            return Ok(self.b.build_int_compare(IntPredicate::NE, v.into_int_value(), self.cx.i8.const_zero(), "")?.into());
        }
        Ok(v)
    }

    pub(super) fn store_elem(&self, p: PointerValue<'ctx>, s: Scalar, v: BasicValueEnum<'ctx>) -> R<()> {
        if s == Scalar::Bool {
            let byte = self.b.build_int_z_extend(v.into_int_value(), self.cx.i8, "")?;
            self.b.build_store(p, byte)?;
        } else {
            self.b.build_store(p, v)?;
        }
        Ok(())
    }

    pub(super) fn shared_array(&mut self, elem: Elem, len: u64, site: usize) -> R<ArrayVal<'ctx>> {
        let ptr = if self.cx.host {
            let off = self.cx.shared.get(&(self.fid, site)).copied().unwrap_or(0);
            let base = self.ctx_field_ptr(host_ctx_layout::SHARED)?;
            // SAFETY: the runtime allocates the program's static shared size, which holds every site.
            unsafe { self.b.build_gep(self.cx.i8, base, &[self.i64c(off)], "")? }
        } else {
            let ty = self.cx.elem_llty(elem)?.array_type(len as u32);
            // One array per site, however many copies of the body lower it (`align.rs`).
            let name = format!("__kache_shared_{}_{}_k", self.fid, site);
            let align = crate::abi::shared_align(len * self.cx.types().elem_size(elem)) as u32;
            let g = self.m.get_global(&name).unwrap_or_else(|| {
                let g = self.m.add_global(ty, Some(AddressSpace::from(3u16)), &name);
                g.set_initializer(&ty.get_undef());
                g.set_linkage(Linkage::Internal);
                g.set_alignment(align);
                g
            });
            self.b.build_address_space_cast(g.as_pointer_value(), self.cx.ptr, "")?
        };
        Ok(ArrayVal { ptr, shape: vec![self.i64c(len)], strides: vec![self.i64c(1)], elem })
    }

    /// `dynamic_shared_array::<T>()`: on the GPU from the first 1024-byte boundary of the
    /// dynamic shared memory (a `wgmma` tile's or a tensor copy's swizzle is of address bits),
    /// as long as what follows it; on the host the context's buffer, which is so aligned.
    pub(super) fn dyn_shared(&mut self, elem: Elem) -> R<ArrayVal<'ctx>> {
        let (ptr, bytes) = if self.cx.host {
            let p = self.ctx_field_ptr(host_ctx_layout::DYN_SHARED)?;
            let n = self.ctx_field_i64(host_ctx_layout::DYN_SHARED_LEN)?;
            (p, n)
        } else {
            let name = "__kache_dynamic_shared";
            let ty = self.cx.i8.array_type(0);
            // The driver places the dynamic shared memory after the static, aligned to 16
            // bytes only: LLVM is told no more, and the array starts at the next 1024-byte
            // boundary (the launch adds 1 KiB to the dynamic size of a kernel with static
            // shared memory for this: `CudaDevice::launch`).
            let g = self.m.get_global(name).unwrap_or_else(|| {
                let g = self.m.add_global(ty, Some(AddressSpace::from(3u16)), name);
                g.set_linkage(Linkage::External);
                g.set_alignment(16);
                g
            });
            let i32t = self.cx.i32;
            let base = self.b.build_ptr_to_int(g.as_pointer_value(), i32t, "")?;
            let up = self.b.build_int_add(base, i32t.const_int(DYN_SHARED_ALIGN - 1, false), "")?;
            let aligned = self.b.build_and(up, i32t.const_int(!(DYN_SHARED_ALIGN - 1) & 0xffff_ffff, false), "")?;
            let pad = self.b.build_int_sub(aligned, base, "")?;
            let shared = self.b.build_int_to_ptr(aligned, self.ctx().ptr_type(AddressSpace::from(3u16)), "")?;
            let p = self.b.build_address_space_cast(shared, self.cx.ptr, "")?;
            let asm_ty = self.cx.i32.fn_type(&[], false);
            let asm =
                self.ctx().create_inline_asm(asm_ty, "mov.u32 $0, %dynamic_smem_size;".into(), "=r".into(), false, false, None, false);
            let call = self.b.build_indirect_call(asm_ty, asm, &[], "")?;
            let v = call.try_as_basic_value().basic().ok_or_else(|| llvm_err("asm"))?.into_int_value();
            // What follows the boundary (none, should the padding take it all).
            let over = self.b.build_int_compare(inkwell::IntPredicate::UGT, v, pad, "")?;
            let rest = self.b.build_int_sub(v, pad, "")?;
            let rest = self.b.build_select(over, rest, i32t.const_zero(), "")?.into_int_value();
            (p, self.b.build_int_z_extend(rest, self.cx.i64, "")?)
        };
        let size = self.cx.types().elem_size(elem).max(1);
        let len = self.b.build_int_unsigned_div(bytes, self.i64c(size), "")?;
        Ok(ArrayVal { ptr, shape: vec![len], strides: vec![self.i64c(1)], elem })
    }

    pub(super) fn ctx_field_addr(&self, off: u64) -> R<PointerValue<'ctx>> {
        let ctx = self.host_ctx.ok_or_else(|| llvm_err("no host ctx"))?;
        // SAFETY: `off` is a field offset inside HostCtx (`abi::host_ctx_layout`).
        Ok(unsafe { self.b.build_gep(self.cx.i8, ctx, &[self.i64c(off)], "")? })
    }

    pub(super) fn ctx_field_ptr(&self, off: u64) -> R<PointerValue<'ctx>> {
        let a = self.ctx_field_addr(off)?;
        Ok(self.b.build_load(self.cx.ptr, a, "")?.into_pointer_value())
    }

    pub(super) fn ctx_field_i64(&self, off: u64) -> R<IntValue<'ctx>> {
        let a = self.ctx_field_addr(off)?;
        Ok(self.b.build_load(self.cx.i64, a, "")?.into_int_value())
    }

    pub(super) fn ctx_field_u32(&self, off: u64) -> R<IntValue<'ctx>> {
        let a = self.ctx_field_addr(off)?;
        Ok(self.b.build_load(self.cx.i32, a, "")?.into_int_value())
    }
}

/// Where `dynamic_shared_array` starts on the GPU: the first multiple of this many bytes of the
/// shared window at or after the driver's dynamic shared memory.
const DYN_SHARED_ALIGN: u64 = 1024;
