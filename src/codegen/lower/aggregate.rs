//! Tuples, fixed-size arrays and structs: their LLVM types (C's layout: LLVM's natural struct
//! layout, which is C's on every target kache emits), values as immutable temporaries in memory,
//! places (a local, an array element, a field or element of either) and their addresses, and
//! the values of `if`, `match` and `loop` of any type.
//!
//! An aggregate value is a pointer to a temporary in the function's frame that nothing writes
//! after it is built ([`Val::Agg`]); a local is a slot of its own; copies are `memcpy`s, which
//! SROA and memcpyopt turn into registers. An index into a fixed-size array is clamped to its
//! last element, so no index reaches outside it (the language reference says so).

use inkwell::IntPredicate;
use inkwell::types::{BasicType, BasicTypeEnum};
use inkwell::values::{BasicValue, BasicValueEnum, IntValue, PointerValue};

use super::{Cx, FnLower, LErr, R, Slot, Val, llvm_err, value_ty};
use crate::ir::*;

/// Where a place is: a scalar local's slot (a register-form value: `bool` is `i1`), or memory
/// holding a value of a type in its memory form (`bool` is a byte).
#[derive(Clone, Copy, Debug)]
pub(super) enum Addr<'ctx> {
    Reg(PointerValue<'ctx>, Scalar),
    Mem(PointerValue<'ctx>, Ty),
}

/// Where an `if`, `match` or `loop` puts its value.
#[derive(Clone, Copy, Debug)]
pub(super) enum ValueSlot<'ctx> {
    Scalar(PointerValue<'ctx>, Scalar),
    Agg(PointerValue<'ctx>, Ty),
    /// An array reference (`if c { a } else { b }`): its pointer, extents and strides in memory.
    Array(PointerValue<'ctx>, Ty),
}

impl<'a, 'ctx> Cx<'a, 'ctx> {
    /// The program's aggregate types.
    pub(super) fn types(&self) -> &'a Types {
        &self.input.program.types
    }

    /// The LLVM type of a value of type `t` in memory (`bool` is a byte, an enum its
    /// discriminant); `None` for what is not a value in memory.
    pub(super) fn llty(&self, t: Ty) -> Option<BasicTypeEnum<'ctx>> {
        self.llty_depth(t, 0)
    }

    fn llty_depth(&self, t: Ty, depth: u32) -> Option<BasicTypeEnum<'ctx>> {
        if depth > 256 {
            return None;
        }
        match t {
            Ty::Scalar(s) => Some(self.mem_ty(s)),
            Ty::Enum(e) => Some(self.mem_ty(e.repr)),
            // An array reference a closure captured: `{ ptr, [extents, strides] }`.
            Ty::Array(a) => Some(self.ctx.struct_type(&[self.ptr.into(), self.i64.array_type(2 * a.ndim as u32).into()], false).into()),
            Ty::Agg(id) => match self.types().get(id)? {
                AggTy::Array { elem, len } => {
                    let e = self.llty_depth(*elem, depth + 1)?;
                    Some(e.array_type(u32::try_from(*len).ok()?).into())
                }
                AggTy::Tuple(_) | AggTy::Struct(_) => {
                    let fields = self
                        .types()
                        .components(id)
                        .into_iter()
                        .map(|f| self.llty_depth(f, depth + 1))
                        .collect::<Option<Vec<BasicTypeEnum<'ctx>>>>()?;
                    Some(self.ctx.struct_type(&fields, false).into())
                }
            },
            _ => None,
        }
    }

    /// The element type of an array in memory.
    pub(super) fn elem_llty(&self, e: Elem) -> R<BasicTypeEnum<'ctx>> {
        self.llty(e.ty()).ok_or_else(|| llvm_err(format!("no memory type for element {e}")))
    }

    /// Size and alignment of a value of type `t` in memory.
    pub(super) fn size_align(&self, t: Ty) -> R<SizeAlign> {
        self.types().size_align(t).ok_or_else(|| llvm_err(format!("no size for {t}")))
    }
}

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    /// A fresh slot in the function's frame for a value of type `t`.
    pub(super) fn temp(&self, t: Ty) -> R<PointerValue<'ctx>> {
        let ty = self.cx.llty(t).ok_or_else(|| llvm_err(format!("no memory type for {t}")))?;
        self.alloca_ty(ty, self.cx.size_align(t)?.align as u32)
    }

    /// Copies a value of type `t` from `src` to `dst`.
    pub(super) fn copy(&self, dst: PointerValue<'ctx>, src: PointerValue<'ctx>, t: Ty) -> R<()> {
        let sa = self.cx.size_align(t)?;
        if sa.size == 0 {
            return Ok(());
        }
        let align = sa.align as u32;
        self.b.build_memcpy(dst, align, src, align, self.i64c(sa.size)).map_err(|e| llvm_err(format!("memcpy: {e}")))?;
        Ok(())
    }

    /// Fills a value of type `t` at `dst` with zero bytes.
    pub(super) fn zero(&self, dst: PointerValue<'ctx>, t: Ty) -> R<()> {
        let sa = self.cx.size_align(t)?;
        if sa.size == 0 {
            return Ok(());
        }
        self.b
            .build_memset(dst, sa.align as u32, self.cx.i8.const_zero(), self.i64c(sa.size))
            .map_err(|e| llvm_err(format!("memset: {e}")))?;
        Ok(())
    }

    /// The value of type `t` in memory at `p`: a scalar in its register form, or an aggregate
    /// copied into a fresh temporary.
    pub(super) fn load_mem(&self, p: PointerValue<'ctx>, t: Ty) -> R<Val<'ctx>> {
        match value_ty(t) {
            Ty::Scalar(s) => Ok(Val::Scalar(self.load_elem(p, s)?)),
            Ty::Agg(_) => {
                let tmp = self.temp(t)?;
                self.copy(tmp, p, t)?;
                Ok(Val::Agg(tmp))
            }
            Ty::Array(a) => {
                let sty = self.cx.llty(t).ok_or_else(|| llvm_err("array reference type"))?.into_struct_type();
                let pp = self.b.build_struct_gep(sty, p, 0, "")?;
                let ptr = self.b.build_load(self.cx.ptr, pp, "")?.into_pointer_value();
                let dims = self.b.build_struct_gep(sty, p, 1, "")?;
                let n = a.ndim as usize;
                let mut v = Vec::with_capacity(2 * n);
                for k in 0..2 * n {
                    // SAFETY: `k < 2 * ndim`, inside the array of extents and strides.
                    let at = unsafe { self.b.build_in_bounds_gep(self.cx.i64, dims, &[self.i64c(k as u64)], "")? };
                    v.push(self.b.build_load(self.cx.i64, at, "")?.into_int_value());
                }
                let strides = v.split_off(n);
                Ok(Val::Array(super::ArrayVal { ptr, shape: v, strides, elem: a.elem }))
            }
            other => Err(llvm_err(format!("a value of type {other} in memory"))),
        }
    }

    /// Stores `v`, a value of type `t`, at `p` in its memory form.
    pub(super) fn store_mem(&self, p: PointerValue<'ctx>, t: Ty, v: &Val<'ctx>) -> R<()> {
        match (value_ty(t), v) {
            (Ty::Scalar(s), Val::Scalar(x)) => self.store_elem(p, s, *x),
            (Ty::Agg(_), Val::Agg(src)) => self.copy(p, *src, t),
            (Ty::Array(_), Val::Array(arr)) => {
                let sty = self.cx.llty(t).ok_or_else(|| llvm_err("array reference type"))?.into_struct_type();
                let pp = self.b.build_struct_gep(sty, p, 0, "")?;
                self.b.build_store(pp, arr.ptr)?;
                let dims = self.b.build_struct_gep(sty, p, 1, "")?;
                for (k, v) in arr.shape.iter().chain(&arr.strides).enumerate() {
                    // SAFETY: `k < 2 * ndim`, inside the array of extents and strides.
                    let at = unsafe { self.b.build_in_bounds_gep(self.cx.i64, dims, &[self.i64c(k as u64)], "")? };
                    self.b.build_store(at, *v)?;
                }
                Ok(())
            }
            (_, Val::Never) => Err(LErr::Diverged),
            (t, v) => Err(llvm_err(format!("storing {v:?} as {t}"))),
        }
    }

    /// An aggregate operand: the pointer to its value; if it diverges, so does the expression
    /// being built.
    pub(super) fn agg_of(&mut self, e: &Expr) -> R<PointerValue<'ctx>> {
        match self.expr(e)? {
            Val::Agg(p) => Ok(p),
            Val::Never => Err(LErr::Diverged),
            other => Err(llvm_err(format!("expected an aggregate, found {other:?}"))),
        }
    }

    /// The value of a place.
    pub(super) fn read_addr(&self, a: Addr<'ctx>) -> R<Val<'ctx>> {
        match a {
            Addr::Reg(p, s) => Ok(Val::Scalar(self.b.build_load(self.cx.scalar_ty(s), p, "")?)),
            Addr::Mem(p, t) => self.load_mem(p, t),
        }
    }

    /// Writes `v` to a place.
    pub(super) fn write_addr(&self, a: Addr<'ctx>, v: &Val<'ctx>) -> R<()> {
        match (a, v) {
            (Addr::Reg(p, _), Val::Scalar(x)) => {
                self.b.build_store(p, *x)?;
                Ok(())
            }
            (Addr::Mem(p, t), v) => self.store_mem(p, t, v),
            (_, Val::Never) => Err(LErr::Diverged),
            (a, v) => Err(llvm_err(format!("writing {v:?} to {a:?}"))),
        }
    }

    /// The address of a place (its indices evaluated).
    pub(super) fn place_addr(&mut self, p: &Place) -> R<Addr<'ctx>> {
        match p {
            Place::Local(l) => match &self.locals[*l] {
                Slot::Scalar(ptr, s) => Ok(Addr::Reg(*ptr, *s)),
                Slot::Agg(ptr, t) => Ok(Addr::Mem(*ptr, *t)),
                _ => Err(llvm_err(format!("local {l} is not a place"))),
            },
            Place::Index(a, idx) => {
                let arr = self.expr(a)?.array()?;
                let ptr = self.element_ptr(&arr, a, idx)?;
                Ok(Addr::Mem(ptr, arr.elem.ty()))
            }
            Place::Field(inner, k) => {
                let base = self.place_addr(inner)?;
                self.field_addr(base, *k)
            }
            Place::Elem(inner, i) => {
                let base = self.place_addr(inner)?;
                let i = self.scalar_of(i)?.into_int_value();
                self.elem_addr(base, i)
            }
        }
    }

    /// The address of component `k` of the tuple or struct at `base`.
    fn field_addr(&self, base: Addr<'ctx>, k: u32) -> R<Addr<'ctx>> {
        let Addr::Mem(p, t @ Ty::Agg(id)) = base else { return Err(llvm_err("a field of a value that is not an aggregate")) };
        let sty = self.cx.llty(t).ok_or_else(|| llvm_err("aggregate type"))?.into_struct_type();
        let ft = *self.cx.types().components(id).get(k as usize).ok_or_else(|| llvm_err("field index"))?;
        let fp = self.b.build_struct_gep(sty, p, k, "")?;
        Ok(Addr::Mem(fp, ft))
    }

    /// The address of element `i` of the fixed-size array at `base`, `i` clamped to the last
    /// element (an empty array's element is a zeroed temporary).
    fn elem_addr(&self, base: Addr<'ctx>, i: IntValue<'ctx>) -> R<Addr<'ctx>> {
        let Addr::Mem(p, Ty::Agg(id)) = base else { return Err(llvm_err("an element of a value that is not an array")) };
        let Some(AggTy::Array { elem, len }) = self.cx.types().get(id) else { return Err(llvm_err("an element of a non-array")) };
        let (elem, len) = (*elem, *len);
        if len == 0 {
            let scratch = self.temp(elem)?;
            self.zero(scratch, elem)?;
            return Ok(Addr::Mem(scratch, elem));
        }
        let last = self.i64c(len - 1);
        let inside = self.b.build_int_compare(IntPredicate::ULE, i, last, "")?;
        let i = self.b.build_select(inside, i, last, "")?.into_int_value();
        let et = self.cx.llty(elem).ok_or_else(|| llvm_err("element type"))?;
        // SAFETY: `i` is at most `len - 1`, inside the array.
        let ep = unsafe { self.b.build_in_bounds_gep(et, p, &[i], "")? };
        Ok(Addr::Mem(ep, elem))
    }

    /// The address of an expression that reads a place (a local, an element of an array
    /// reference, a field or element of one), so that reading a part does not copy the whole.
    fn addr_of_expr(&mut self, e: &Expr) -> R<Option<Addr<'ctx>>> {
        Ok(match &e.kind {
            ExprKind::Local(l) => match &self.locals[*l] {
                Slot::Agg(ptr, t) => Some(Addr::Mem(*ptr, *t)),
                _ => None,
            },
            ExprKind::Index(a, idx) if matches!(value_ty(e.ty), Ty::Agg(_)) => {
                let arr = self.expr(a)?.array()?;
                let ptr = self.element_ptr(&arr, a, idx)?;
                Some(Addr::Mem(ptr, e.ty))
            }
            ExprKind::Field(x, k) => {
                let base = self.agg_addr(x)?;
                Some(self.field_addr(base, *k)?)
            }
            ExprKind::Elem(x, i) => {
                let base = self.agg_addr(x)?;
                let i = self.scalar_of(i)?.into_int_value();
                Some(self.elem_addr(base, i)?)
            }
            _ => None,
        })
    }

    /// The address of an aggregate operand: its place, or the temporary holding its value.
    fn agg_addr(&mut self, x: &Expr) -> R<Addr<'ctx>> {
        if let Some(a) = self.addr_of_expr(x)? {
            return Ok(a);
        }
        let p = self.agg_of(x)?;
        Ok(Addr::Mem(p, x.ty))
    }

    /// `t.k`, `p.name`, `a[i]` of a fixed-size array.
    pub(super) fn part(&mut self, e: &Expr) -> R<Val<'ctx>> {
        match self.addr_of_expr(e)? {
            Some(a) => self.read_addr(a),
            None => Err(llvm_err("a part of a value without an address")),
        }
    }

    /// `(a, b)`, `S { x, ..base }`, `[a, b, c]`: each part evaluated in order into a fresh
    /// temporary, then the parts `base` gives.
    pub(super) fn aggregate(&mut self, t: Ty, parts: &[(u32, Expr)], base: Option<&Expr>) -> R<Val<'ctx>> {
        let tmp = self.temp(t)?;
        let whole = Addr::Mem(tmp, t);
        let array = matches!(t, Ty::Agg(id) if matches!(self.cx.types().get(id), Some(AggTy::Array { .. })));
        let mut given = Vec::new();
        for (k, x) in parts {
            let v = self.expr(x)?;
            if matches!(v, Val::Never) {
                return Err(LErr::Diverged);
            }
            let at = if array { self.elem_addr(whole, self.i64c(*k as u64))? } else { self.field_addr(whole, *k)? };
            self.write_addr(at, &v)?;
            given.push(*k);
        }
        if let Some(b) = base {
            let bp = self.agg_of(b)?;
            let Ty::Agg(id) = t else { return Err(llvm_err("struct update of a non-aggregate")) };
            for k in 0..self.cx.types().components(id).len() as u32 {
                if given.contains(&k) {
                    continue;
                }
                let Addr::Mem(src, ft) = self.field_addr(Addr::Mem(bp, t), k)? else { return Err(llvm_err("field")) };
                let Addr::Mem(dst, _) = self.field_addr(whole, k)? else { return Err(llvm_err("field")) };
                let v = self.load_mem(src, ft)?;
                self.store_mem(dst, ft, &v)?;
            }
        }
        Ok(Val::Agg(tmp))
    }

    /// The value of type `t` with every byte zero.
    pub(super) fn zeroed(&mut self, t: Ty) -> R<Val<'ctx>> {
        match value_ty(t) {
            Ty::Scalar(s) => Ok(Val::Scalar(self.cx.scalar_ty(s).const_zero())),
            Ty::Agg(_) => {
                let tmp = self.temp(t)?;
                self.zero(tmp, t)?;
                Ok(Val::Agg(tmp))
            }
            Ty::Unit => Ok(Val::Unit),
            other => Err(llvm_err(format!("no zero value of {other}"))),
        }
    }

    /// `[x; n]`: `n` copies, stored one by one for short arrays and by a loop for long ones.
    pub(super) fn repeat(&mut self, t: Ty, x: &Expr) -> R<Val<'ctx>> {
        let Ty::Agg(id) = t else { return Err(llvm_err("repeat of a non-array")) };
        let Some(AggTy::Array { elem, len }) = self.cx.types().get(id) else { return Err(llvm_err("repeat of a non-array")) };
        let (elem, len) = (*elem, *len);
        let v = self.expr(x)?;
        if matches!(v, Val::Never) {
            return Err(LErr::Diverged);
        }
        let tmp = self.temp(t)?;
        let et = self.cx.llty(elem).ok_or_else(|| llvm_err("element type"))?;
        // Zeros (`[0.0; 128]`, an accumulator's start): one memset, which SROA splits into the
        // elements' registers where a loop of stores would keep the array in local memory.
        if let Val::Scalar(x) = &v {
            use inkwell::values::AsValueRef;
            // SAFETY: `x` is a live value of this module; the call only inspects it.
            let zero = unsafe { inkwell::llvm_sys::core::LLVMIsNull(x.as_value_ref()) } != 0;
            let size = self.cx.size_align(t)?;
            if zero && size.size > 0 {
                self.b
                    .build_memset(tmp, size.align as u32, self.ctx().i8_type().const_zero(), self.i64c(size.size))
                    .map_err(|e| llvm_err(format!("memset: {e}")))?;
                return Ok(Val::Agg(tmp));
            }
        }
        if len <= 16 {
            for k in 0..len {
                // SAFETY: `k < len`, inside the array.
                let p = unsafe { self.b.build_in_bounds_gep(et, tmp, &[self.i64c(k)], "")? };
                self.store_mem(p, elem, &v)?;
            }
            return Ok(Val::Agg(tmp));
        }
        let head = self.ctx().append_basic_block(self.fv, "");
        let body = self.ctx().append_basic_block(self.fv, "");
        let done = self.ctx().append_basic_block(self.fv, "");
        let from = self.b.get_insert_block().ok_or_else(|| llvm_err("no block"))?;
        self.b.build_unconditional_branch(head)?;
        self.b.position_at_end(head);
        let i = self.b.build_phi(self.cx.i64, "")?;
        i.add_incoming(&[(&self.i64c(0), from)]);
        let iv = i.as_basic_value().into_int_value();
        let more = self.b.build_int_compare(IntPredicate::ULT, iv, self.i64c(len), "")?;
        self.b.build_conditional_branch(more, body, done)?;
        self.b.position_at_end(body);
        // SAFETY: `iv < len`, inside the array.
        let p = unsafe { self.b.build_in_bounds_gep(et, tmp, &[iv], "")? };
        self.store_mem(p, elem, &v)?;
        let next = self.b.build_int_add(iv, self.i64c(1), "")?;
        let end = self.b.get_insert_block().ok_or_else(|| llvm_err("no block"))?;
        i.add_incoming(&[(&next.as_basic_value_enum(), end)]);
        self.b.build_unconditional_branch(head)?;
        self.b.position_at_end(done);
        Ok(Val::Agg(tmp))
    }

    /// A slot for the value of an `if`, `match` or `loop` of type `ty` (none for `()` and `!`).
    pub(super) fn value_slot(&self, ty: Ty) -> R<Option<ValueSlot<'ctx>>> {
        Ok(match value_ty(ty) {
            Ty::Scalar(s) => Some(ValueSlot::Scalar(self.alloca(s)?, s)),
            t @ Ty::Agg(_) => Some(ValueSlot::Agg(self.temp(t)?, t)),
            t @ Ty::Array(_) => Some(ValueSlot::Array(self.temp(t)?, t)),
            _ => None,
        })
    }

    /// Puts a branch's value in the slot.
    pub(super) fn fill_slot(&self, slot: Option<ValueSlot<'ctx>>, v: &Val<'ctx>) -> R<()> {
        match (slot, v) {
            (Some(ValueSlot::Scalar(p, _)), Val::Scalar(x)) => {
                self.b.build_store(p, *x)?;
            }
            (Some(ValueSlot::Agg(p, t)), Val::Agg(src)) => self.copy(p, *src, t)?,
            (Some(ValueSlot::Array(p, t)), v @ Val::Array(_)) => self.store_mem(p, t, v)?,
            _ => {}
        }
        Ok(())
    }

    /// The value in a slot, once every branch has filled it.
    pub(super) fn slot_value(&self, slot: ValueSlot<'ctx>) -> R<Val<'ctx>> {
        Ok(match slot {
            ValueSlot::Scalar(p, s) => Val::Scalar(self.b.build_load(self.cx.scalar_ty(s), p, "")?),
            // The slot is this evaluation's: nothing writes it before the value is used.
            ValueSlot::Agg(p, _) => Val::Agg(p),
            ValueSlot::Array(p, t) => self.load_mem(p, t)?,
        })
    }

    /// An `alloca` of `ty` in the entry block.
    pub(super) fn alloca_ty(&self, ty: BasicTypeEnum<'ctx>, align: u32) -> R<PointerValue<'ctx>> {
        match self.entry.get_first_instruction() {
            Some(i) => self.alloca_b.position_before(&i),
            None => self.alloca_b.position_at_end(self.entry),
        }
        let p = self.alloca_b.build_alloca(ty, "")?;
        if let Some(i) = p.as_instruction_value() {
            i.set_alignment(align.max(1)).map_err(|e| llvm_err(format!("alignment: {e}")))?;
        }
        Ok(p)
    }

    /// Writes a scalar (register form) into memory at byte offset `off` from `base`.
    pub(super) fn store_at(&self, base: PointerValue<'ctx>, off: u64, s: Scalar, v: BasicValueEnum<'ctx>) -> R<()> {
        // SAFETY: `off` is a leaf's offset inside the value at `base` (`Types::leaves`).
        let p = unsafe { self.b.build_gep(self.cx.i8, base, &[self.i64c(off)], "")? };
        self.store_elem(p, s, v)
    }
}
