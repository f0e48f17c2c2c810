//! The mbarrier builtins (`mbarrier_init`, `mbarrier_arrive`, `mbarrier_arrive_expect_tx`,
//! `mbarrier_try_wait_parity`, `mbarrier_inval`) and the bulk copy that completes a barrier's
//! bytes (`cp_async_bulk`). A barrier is a `u64` element of a shared array, named as
//! `&mut bar[i]` (`&bar[i]` to wait), like the other tensor-core builtins' accesses.

use crate::ir::*;
use crate::lang::ast::{self, ExprKind as A, GenericArg};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::body::{CExpr, FnCx};

/// The largest bulk copy: a barrier's transaction count holds less than 2^20 bytes.
const MAX_BULK: u64 = (1 << 20) - 16;

impl<'c, 'm> FnCx<'c, 'm> {
    /// `&mut bar[i]` (`&bar[i]` where `!write`), `bar` an array of `u64`.
    fn barrier_ref(&mut self, name: &str, arg: &ast::Expr, write: bool) -> CResult<CExpr> {
        let (r, h) = self.element_ref(name, arg, write)?;
        if self.u.ty(h) != Some(Ty::Scalar(Scalar::U64)) {
            let d = self.u.describe(h);
            return Err(Diagnostic::error(arg.span, format!("`{name}` takes a barrier, a `u64` in shared memory, not `{d}`"))
                .label("not a `u64` element")
                .help("declare barriers as `let bar = shared_array::<u64, 1>();` and pass `&mut bar[0]`")
                .into());
        }
        Ok(r)
    }

    /// `mbarrier_init(&mut bar[i], count: u32)`, `mbarrier_arrive(&mut bar[i])`,
    /// `mbarrier_arrive_expect_tx(&mut bar[i], bytes: u32)`,
    /// `mbarrier_try_wait_parity(&bar[i], parity: u32) -> bool`, `mbarrier_inval(&mut bar[i])`.
    pub(super) fn mbarrier(&mut self, op: TensorOp, name: &str, generics: &[GenericArg], args: &[ast::Expr], span: Span) -> CResult<CExpr> {
        self.no_turbofish(name, generics)?;
        let (usage, operand) = match op {
            TensorOp::MbarrierInit => ("`mbarrier_init(&mut bar[0], count)`", Some("count")),
            TensorOp::MbarrierArriveExpectTx => ("`mbarrier_arrive_expect_tx(&mut bar[0], bytes)`", Some("byte count")),
            TensorOp::MbarrierTryWait => ("`mbarrier_try_wait_parity(&bar[0], parity)`", Some("parity")),
            TensorOp::MbarrierArrive => ("`mbarrier_arrive(&mut bar[0])`", None),
            _ => ("`mbarrier_inval(&mut bar[0])`", None),
        };
        self.count(name, 1 + operand.is_some() as usize, args.len(), span, usage)?;
        let bar = self.barrier_ref(name, &args[0], op != TensorOp::MbarrierTryWait)?;
        let mut xs = vec![bar];
        if let Some(what) = operand {
            xs.push(self.u32_arg(name, &args[1], what)?);
        }
        let ty = if op == TensorOp::MbarrierTryWait {
            // The host backend suspends the thread until the phase completes.
            self.uses_block_sync = true;
            Ty::Scalar(Scalar::Bool)
        } else {
            Ty::Unit
        };
        let h = self.u.known(ty);
        Ok(Expr { kind: ExprKind::Builtin(Builtin::Tensor(op), xs), ty: h, span })
    }

    /// `cp_async_bulk::<BYTES>(&mut dst[i], &src[j], &mut bar[k])`.
    pub(super) fn cp_async_bulk(&mut self, generics: &[GenericArg], args: &[ast::Expr], span: Span) -> CResult<CExpr> {
        let name = "cp_async_bulk";
        let usage = "`cp_async_bulk::<4096>(&mut tile[i], &src[j], &mut bar[0])`";
        let bytes = self.const_generic(name, generics, usage, span)?;
        if bytes == 0 || bytes % 16 != 0 || bytes > MAX_BULK {
            return Err(Diagnostic::error(
                generics[0].span(),
                format!("`{name}` copies a multiple of 16 bytes up to {MAX_BULK}, not {bytes}"),
            )
            .label("unsupported size")
            .help(usage)
            .into());
        }
        self.count(name, 3, args.len(), span, usage)?;
        let (dst, src) = self.copy_ends(name, bytes, &args[0], &args[1])?;
        let bar = self.barrier_ref(name, &args[2], true)?;
        let op = TensorOp::CpAsyncBulk { bytes: bytes as u32 };
        Ok(self.mk(ExprKind::Builtin(Builtin::Tensor(op), vec![dst, src, bar]), Ty::Unit, span))
    }

    /// `cp_async_bulk_tensor_2d(&mut dst[i], &map, x, y, &mut bar[k])`: `map` a
    /// `TensorMap<T, W, H, S>` (`&map` or `map`), `dst` an element of a `T` array, `x` and `y`
    /// `i32` element coordinates (column, row) of the box's first element.
    pub(super) fn cp_async_bulk_tensor(&mut self, generics: &[GenericArg], args: &[ast::Expr], span: Span) -> CResult<CExpr> {
        let name = "cp_async_bulk_tensor_2d";
        let usage = "`cp_async_bulk_tensor_2d(&mut tile[i], &map, x, y, &mut bar[0])`";
        self.no_turbofish(name, generics)?;
        self.count(name, 5, args.len(), span, usage)?;
        let (dst, dst_elem) = self.element_ref(name, &args[0], true)?;
        let map_e = match &args[1].kind {
            A::Ref(inner) => &**inner,
            _ => &args[1],
        };
        let map = self.expr(map_e)?;
        let frag = self.u.ty(map.ty).and_then(|t| self.mcx.frag_of(t)).filter(|f| f.kind == FragKind::TensorMap);
        let Some(frag) = frag else {
            let d = self.u.describe(map.ty);
            return Err(Diagnostic::error(args[1].span, format!("`{name}` copies a box of a tensor map, not of `{d}`"))
                .label("expected a `TensorMap<T, W, H, S>`")
                .help("take the map as a kernel parameter, `map: &TensorMap<bf16, 64, 128, 128>`, built on the host by `TensorMap::tiled`")
                .into());
        };
        let want = self.u.known(frag.elem);
        let what = self.u.describe(want);
        self.unify_or(args[0].span, want, dst_elem, &format!(" (the map's boxes are of `{what}`)"))?;
        let mut xs = vec![dst, map];
        for (a, what) in [(&args[2], "x"), (&args[3], "y")] {
            let c = self.expr(a)?;
            let i = self.u.known(Ty::Scalar(Scalar::I32));
            self.unify_or(
                c.span,
                i,
                c.ty,
                &format!(" (the {what} coordinate of `{name}` is an `i32`: the box may start outside the array)"),
            )?;
            xs.push(c);
        }
        xs.push(self.barrier_ref(name, &args[4], true)?);
        let size = match frag.elem {
            Ty::Scalar(s) => s.size() as u64,
            // A generic definition: its instances carry the size.
            _ => 0,
        };
        let op = TensorOp::CpAsyncBulkTensor { bytes: (frag.m * frag.n * size) as u32, swizzle: frag.k as u8 };
        Ok(self.mk(ExprKind::Builtin(Builtin::Tensor(op), xs), Ty::Unit, span))
    }
}
