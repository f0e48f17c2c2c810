//! The tensor-core builtins: the fragment types (`FragA<bf16, 16, 8, 16>`, `FragB<..>`,
//! `FragC<f32, 16, 8>`) and their constructors, `mma`, `ldmatrix`, `cp_async` and its groups,
//! `tf32_round` and `swizzle`; the warpgroup MMA of sm_90a (`WgAcc<f32, N>`, `WgDesc<T, R>`,
//! `wgmma_desc`, `wgmma` and its fence, groups and wait, `fence_proxy_async`); and the
//! architecture a checked program needs
//! ([`check_arch`]), which the code generator's caller asks before compiling for a GPU.
//!
//! A fragment is a struct with one field, `x`, the thread's elements in the order of the PTX
//! ISA's fragment layouts (`ir::MmaShape::coord`): existing aggregate code carries it, and the
//! checker keeps one struct per fragment type (`ModuleCx::frags`), so that `FragA` and `FragB`
//! of the same shape are different types and a kernel cannot pass one for the other.

use crate::ir::*;
use crate::lang::ast::{self, ExprKind as A, GenericArg, ModId, TypeExpr};
use crate::lang::builtins::TensorFn;
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::aggregates::Operand;
use super::body::{CExpr, FnCx};
use super::generics::{GenericEnv, array_view};
use super::items::ModuleCx;
use super::unify::H;
use super::{CResult, plural};

/// A fragment type: which operand, its element type (a type parameter in a generic definition)
/// and its shape (`k` is 0 for an accumulator, which has none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FragTy {
    pub(super) kind: FragKind,
    pub(super) elem: Ty,
    pub(super) m: u64,
    pub(super) n: u64,
    pub(super) k: u64,
}

impl FragTy {
    /// Elements each thread holds: A's M·K, B's K·N, C's M·N over 32 lanes.
    fn elems(&self) -> u64 {
        match self.kind {
            FragKind::A => self.m * self.k / 32,
            FragKind::B => self.k * self.n / 32,
            FragKind::C => self.m * self.n / 32,
            FragKind::WgAcc => self.m * self.n / 128,
            FragKind::WgDesc | FragKind::TensorMap => 1,
        }
    }

    /// The concrete `mma` shape of an A or B fragment.
    fn shape(&self) -> Option<MmaShape> {
        match self.elem {
            Ty::Scalar(s) => MmaShape::find(self.m, self.n, self.k, s),
            _ => None,
        }
    }
}

const WGMMA_HELP: &str = "`wgmma` (sm_90a): `wgmma(a: WgDesc<T, 64>, b: WgDesc<T, N>, acc: WgAcc<f32, N>)` for `T` of `f16` \
     or `bf16` (K 16) or `f32` read as tf32 (K 8), and N a multiple of 8 from 8 to 256; descriptors come from `wgmma_desc::<SWIZZLE, ROWS>(&tile[i])`";

const TENSOR_MAP_HELP: &str = "a kernel parameter `map: &TensorMap<T, W, H, S>` is a tiled tensor map the host builds \
     (`TensorMap::tiled`): boxes of H rows of W elements of `T` (each 1 to 256, a row a multiple of 16 bytes), \
     swizzled by S bytes (0, or 32, 64 or 128 with rows of exactly S bytes); `cp_async_bulk_tensor_2d` copies one box";

/// The field of a `WgDesc` struct: not an identifier, so no kernel reads or writes it.
const WGDESC_FIELD: &str = "(descriptor)";

/// N of a `wgmma.m64nNk16` of 16-bit floats: a multiple of 8 from 8 to 256.
fn wgmma_n_ok(n: u64) -> bool {
    n.is_multiple_of(8) && (8..=256).contains(&n)
}

const SHAPES_HELP: &str = "`mma` shapes: A and B of `f16` or `bf16` at 16 x 8 x 16 and 16 x 8 x 8, of `f32` (as tf32) at 16 x 8 x 8 \
     and 16 x 8 x 4, of `i8` or `u8` at 16 x 8 x 32 and 16 x 8 x 16; accumulators `FragC<f32, 16, 8>` (`i32` for 8-bit \
     integers)";

impl<'m> ModuleCx<'m> {
    /// The fragment type `name<args>` (`FragA<bf16, 16, 8, 16>`) in `module`.
    pub(super) fn frag_type(
        &mut self,
        name: &ast::Ident,
        args: &[GenericArg],
        span: Span,
        module: ModId,
        generics: &GenericEnv,
    ) -> CResult<Ty> {
        let Some(kind) = crate::lang::builtins::builtin_type(&name.name) else {
            return Err(Diagnostic::error(name.span, format!("unknown type `{}`", name.name)).label("not a kernel type").into());
        };
        let dims = match kind {
            FragKind::C => 2,
            FragKind::WgAcc | FragKind::WgDesc => 1,
            _ => 3,
        };
        let usage = match kind {
            FragKind::TensorMap => "`TensorMap<bf16, 64, 128, 128>` (element type, box width and height, swizzle bytes)",
            FragKind::C => "`FragC<f32, 16, 8>`",
            FragKind::WgAcc => "`WgAcc<f32, 128>`",
            FragKind::WgDesc => "`WgDesc<bf16, 64>`",
            _ => "`FragA<bf16, 16, 8, 16>`",
        };
        if args.len() != dims + 1 {
            return Err(Diagnostic::error(
                span,
                format!("`{}` takes {} generic arguments but {} {} supplied", name.name, dims + 1, args.len(), were(args.len())),
            )
            .label(format!("expected the element type and {dims} dimensions"))
            .help(format!("write {usage}"))
            .into());
        }
        let elem = match &args[0] {
            GenericArg::Type(t) => self.ty_in(t, module, generics)?,
            other => {
                return Err(Diagnostic::error(other.span(), "expected the element type of the fragment")
                    .label("not a scalar type")
                    .help(format!("write {usage}"))
                    .into());
            }
        };
        let mut shape = [0u64; 3];
        for (d, a) in args[1..].iter().enumerate() {
            let GenericArg::Const(e) = a else {
                return Err(Diagnostic::error(a.span(), "expected a dimension")
                    .label("not a constant")
                    .help(format!("write {usage}"))
                    .into());
            };
            let v = self.eval_len(e, module, generics)?;
            if v == UNKNOWN_LEN {
                return Err(Diagnostic::error(e.span, "the shape of a fragment is a constant")
                    .label("depends on a const parameter")
                    .note(SHAPES_HELP)
                    .into());
            }
            shape[d] = v;
        }
        let [m, n, k] = shape;
        let frag = match kind {
            FragKind::C => FragTy { kind, elem, m, n, k: 0 },
            // The accumulator of `wgmma.m64nNk16` (m is 64), a descriptor of `m` rows.
            FragKind::WgAcc => FragTy { kind, elem, m: 64, n: m, k: 0 },
            FragKind::WgDesc => FragTy { kind, elem, m, n: 0, k: 0 },
            _ => FragTy { kind, elem, m, n, k },
        };
        self.frag_shape_ok(&frag, &name.name, span)?;
        Ok(Ty::Agg(self.intern_frag(frag, generics)))
    }

    /// The element type and shape name a fragment `mma` has.
    fn frag_shape_ok(&self, f: &FragTy, name: &str, span: Span) -> CResult<()> {
        let bad =
            |what: String| -> Box<Diagnostic> { Diagnostic::error(span, what).label("not an `mma` fragment").note(SHAPES_HELP).into() };
        let wg = |what: String| -> Box<Diagnostic> { Diagnostic::error(span, what).label("not a `wgmma` operand").note(WGMMA_HELP).into() };
        match (f.kind, f.elem) {
            (FragKind::TensorMap, elem) => return self.tensor_map_ok(f, elem, span),
            (FragKind::WgAcc, Ty::Scalar(Scalar::F32)) => {
                if !wgmma_n_ok(f.n) {
                    return Err(wg(format!("no `wgmma` accumulates a 64 x {} tile", f.n)));
                }
            }
            (FragKind::WgAcc, _) => {
                let t = self.types.borrow().name(f.elem);
                return Err(wg(format!("`WgAcc<{t}, ..>`: `wgmma` accumulates in `f32`")));
            }
            (FragKind::WgDesc, Ty::Scalar(Scalar::F16 | Scalar::Bf16 | Scalar::F32)) | (FragKind::WgDesc, Ty::Param(_)) => {
                if !wgmma_n_ok(f.m) {
                    return Err(wg(format!("a `wgmma` operand has 64 rows (A) or N (B), not {}", f.m)));
                }
            }
            (FragKind::WgDesc, _) => {
                let t = self.types.borrow().name(f.elem);
                return Err(wg(format!("`WgDesc<{t}, ..>`: `wgmma` multiplies `f16`, `bf16` or `f32` (as tf32)")));
            }
            (FragKind::C, Ty::Scalar(Scalar::F32 | Scalar::I32)) | (FragKind::C, Ty::Param(_)) => {
                if (f.m, f.n) != (16, 8) {
                    return Err(bad(format!("no `mma` accumulates a {} x {} tile", f.m, f.n)));
                }
            }
            (FragKind::C, _) => {
                let t = self.types.borrow().name(f.elem);
                return Err(bad(format!("`FragC<{t}, ..>`: accumulators are `f32` or `i32`")));
            }
            (_, Ty::Scalar(s)) => {
                if MmaShape::find(f.m, f.n, f.k, s).is_none() {
                    return Err(bad(format!("no `mma` multiplies `{s}` at {} x {} x {} (`{name}`)", f.m, f.n, f.k)));
                }
            }
            (_, Ty::Param(_)) => {
                if !MmaShape::has_dims(f.m, f.n, f.k) {
                    return Err(bad(format!("no `mma` has the shape {} x {} x {}", f.m, f.n, f.k)));
                }
            }
            (_, other) => {
                let t = self.types.borrow().name(other);
                return Err(bad(format!("`{name}<{t}, ..>`: fragments hold scalars")));
            }
        }
        Ok(())
    }

    /// `TensorMap<T, W, H, S>`: boxes of 1 to 256 rows of 1 to 256 elements, a row a multiple
    /// of 16 bytes; swizzled rows (`S` of 32, 64 or 128) are exactly `S` bytes. `T` a scalar
    /// other than `bool`, or a type parameter (its instances are checked).
    fn tensor_map_ok(&self, f: &FragTy, elem: Ty, span: Span) -> CResult<()> {
        let bad =
            |what: String| -> Box<Diagnostic> { Diagnostic::error(span, what).label("not a tensor map").note(TENSOR_MAP_HELP).into() };
        let size = match elem {
            Ty::Scalar(s) if s != Scalar::Bool => Some(s.size() as u64),
            // A generic definition: its instances are checked.
            Ty::Param(_) => None,
            _ => {
                let t = self.types.borrow().name(elem);
                return Err(bad(format!("`TensorMap<{t}, ..>`: a tensor map's elements are numbers")));
            }
        };
        tensor_map_box_rule(f.m, f.n, f.k, size).map_err(bad)
    }

    /// The struct standing for fragment type `f`: one per type, `x: [T; elems]`.
    pub(super) fn intern_frag(&mut self, f: FragTy, generics: &GenericEnv) -> AggId {
        if let Some((_, id)) = self.frags.iter().find(|(g, _)| *g == f) {
            return *id;
        }
        let elem_name = match f.elem {
            Ty::Param(_) => generics.names().into_iter().find(|n| generics.type_param(n) == Some(f.elem)).unwrap_or_else(|| "T".into()),
            t => self.types.borrow().name(t),
        };
        let name = match f.kind {
            FragKind::TensorMap => tensor_map_type_name(&elem_name, f.m, f.n, f.k),
            FragKind::C => format!("FragC<{elem_name}, {}, {}>", f.m, f.n),
            FragKind::WgAcc => format!("WgAcc<{elem_name}, {}>", f.n),
            FragKind::WgDesc => format!("WgDesc<{elem_name}, {}>", f.m),
            k => format!("{}<{elem_name}, {}, {}, {}>", k.name(), f.m, f.n, f.k),
        };
        let mut types = self.types.borrow_mut();
        let id = if f.kind == FragKind::WgDesc {
            // The descriptor's 64 bits, in a field no kernel can name: only `wgmma_desc` makes
            // one (a hand-made descriptor could point anywhere).
            types.add_struct(StructDef { name, fields: vec![(WGDESC_FIELD.into(), Ty::Scalar(Scalar::U64))] })
        } else if f.kind == FragKind::TensorMap {
            // The descriptor's address, which only a launch passes.
            types.add_struct(StructDef::tensor_map(name))
        } else {
            let regs = types.intern(AggTy::Array { elem: f.elem, len: f.elems() });
            types.add_struct(StructDef { name, fields: vec![("x".into(), Ty::Agg(regs))] })
        };
        drop(types);
        self.frags.push((f, id));
        id
    }

    /// The fragment type a type is, if it is one.
    pub(super) fn frag_of(&self, t: Ty) -> Option<FragTy> {
        match t {
            Ty::Agg(id) => self.frags.iter().find(|(_, a)| *a == id).map(|(f, _)| *f),
            _ => None,
        }
    }
}

impl<'c, 'm> FnCx<'c, 'm> {
    /// A call of a tensor-core builtin.
    pub(super) fn tensor_call(
        &mut self,
        f: TensorFn,
        func: &ast::Ident,
        generics: &[GenericArg],
        args: &[ast::Expr],
        span: Span,
    ) -> CResult<CExpr> {
        let name = func.name.as_str();
        match f {
            TensorFn::Frag(_) => self.frag_new(func, generics, args, span),
            TensorFn::Mma => {
                self.no_turbofish(name, generics)?;
                self.count(name, 3, args.len(), span, "`mma(a, b, c)`")?;
                self.mma(args, span)
            }
            TensorFn::Ldmatrix { count, trans } => {
                self.no_turbofish(name, generics)?;
                self.count(name, 1, args.len(), span, &format!("`{name}(&tile[i])`"))?;
                let (elem_ref, elem) = self.element_ref(name, &args[0], false)?;
                // A matrix is 8 rows of 16 bytes: 8 16-bit elements each, or (not transposed)
                // 4 32-bit ones, of which a lane receives one.
                let per_word = match self.u.ty(elem) {
                    Some(Ty::Scalar(s)) if s.size() == 2 => 2,
                    Some(Ty::Scalar(s)) if s.size() == 4 && s != Scalar::Bool && !trans => 1,
                    Some(Ty::Param(p)) if p.bound == Bound::Half => 2,
                    _ => {
                        let d = self.u.describe(elem);
                        let mut e = Diagnostic::error(args[0].span, format!("`{name}` loads 16-bit elements, not `{d}`"))
                            .label("not a 16-bit element")
                            .help("`ldmatrix` moves 8 x 8 matrices of `f16`, `bf16`, `i16` or `u16`; without `_trans`, also 8 x 4 matrices of `f32`, `i32` or `u32`");
                        if matches!(self.u.ty(elem), Some(Ty::Param(_))) {
                            e = e.note("a type parameter's elements must be 16-bit for every instance: bound it by `Half`");
                        }
                        return Err(e.into());
                    }
                };
                self.uses_block_sync = true;
                let ty = self.u.array(elem, per_word * count as u64);
                let op = TensorOp::Ldmatrix { count, trans };
                Ok(Expr { kind: ExprKind::Builtin(Builtin::Tensor(op), vec![elem_ref]), ty, span })
            }
            TensorFn::CpAsync { bypass_l1 } => {
                let usage =
                    if bypass_l1 { "`cp_async_cg::<16>(&mut tile[i], &src[j])`" } else { "`cp_async::<16>(&mut tile[i], &src[j])`" };
                let bytes = self.const_generic(name, generics, usage, span)?;
                let allowed: &[u64] = if bypass_l1 { &[16] } else { &[4, 8, 16] };
                if !allowed.contains(&bytes) {
                    let list = if bypass_l1 { "16".to_string() } else { "4, 8 or 16".to_string() };
                    return Err(Diagnostic::error(generics[0].span(), format!("`{name}` copies {list} bytes, not {bytes}"))
                        .label("unsupported size")
                        .help(usage)
                        .into());
                }
                self.count(name, 2, args.len(), span, usage)?;
                let (dst, src) = self.copy_ends(name, bytes, &args[0], &args[1])?;
                let op = TensorOp::CpAsync { bytes: bytes as u8, bypass_l1 };
                Ok(self.mk(ExprKind::Builtin(Builtin::Tensor(op), vec![dst, src]), Ty::Unit, span))
            }
            TensorFn::CpAsyncCommit => {
                self.no_turbofish(name, generics)?;
                self.count(name, 0, args.len(), span, "`cp_async_commit()`")?;
                Ok(self.mk(ExprKind::Builtin(Builtin::Tensor(TensorOp::CpAsyncCommit), Vec::new()), Ty::Unit, span))
            }
            TensorFn::CpAsyncWait => {
                let n = self.const_generic(name, generics, "`cp_async_wait::<0>()`", span)?;
                if n > 255 {
                    return Err(Diagnostic::error(generics[0].span(), format!("`cp_async_wait` waits for at most 255 groups, not {n}"))
                        .label("too many")
                        .into());
                }
                self.count(name, 0, args.len(), span, "`cp_async_wait::<N>()`")?;
                Ok(self.mk(ExprKind::Builtin(Builtin::Tensor(TensorOp::CpAsyncWait(n as u8)), Vec::new()), Ty::Unit, span))
            }
            TensorFn::Tf32Round => {
                self.no_turbofish(name, generics)?;
                self.count(name, 1, args.len(), span, "`tf32_round(x)`")?;
                let x = self.expr(&args[0])?;
                let f = self.u.known(Ty::Scalar(Scalar::F32));
                self.unify_or(x.span, f, x.ty, " (`tf32_round` takes an `f32`)")?;
                Ok(Expr { kind: ExprKind::Builtin(Builtin::Tensor(TensorOp::Tf32Round), vec![x]), ty: f, span })
            }
            TensorFn::Swizzle => self.swizzle(generics, args, span),
            TensorFn::WgmmaDesc => self.wgmma_desc(generics, args, span),
            TensorFn::Mbarrier(op) => self.mbarrier(op, name, generics, args, span),
            TensorFn::CpAsyncBulk => self.cp_async_bulk(generics, args, span),
            TensorFn::CpAsyncBulkTensor => self.cp_async_bulk_tensor(generics, args, span),
            TensorFn::Wgmma => {
                self.no_turbofish(name, generics)?;
                self.count(name, 3, args.len(), span, "`wgmma(a, b, acc)`")?;
                self.wgmma(args, span)
            }
            TensorFn::WgmmaFence | TensorFn::WgmmaCommit | TensorFn::FenceProxyAsync => {
                self.no_turbofish(name, generics)?;
                self.count(name, 0, args.len(), span, &format!("`{name}()`"))?;
                let op = match f {
                    TensorFn::WgmmaFence => TensorOp::WgmmaFence,
                    TensorFn::WgmmaCommit => TensorOp::WgmmaCommit,
                    _ => TensorOp::FenceProxyAsync,
                };
                if op != TensorOp::FenceProxyAsync {
                    self.uses_block_sync = true;
                }
                Ok(self.mk(ExprKind::Builtin(Builtin::Tensor(op), Vec::new()), Ty::Unit, span))
            }
            TensorFn::Setmaxnreg(inc) => {
                let usage = if inc { "`setmaxnreg_inc::<232>()`" } else { "`setmaxnreg_dec::<40>()`" };
                let n = self.const_generic(name, generics, usage, span)?;
                if !(n.is_multiple_of(8) && (24..=256).contains(&n)) {
                    return Err(Diagnostic::error(
                        generics[0].span(),
                        format!("`{name}` sets 24 to 256 registers a thread, a multiple of 8, not {n}"),
                    )
                    .label("not a register count `setmaxnreg` takes")
                    .help(format!("write {usage}"))
                    .into());
                }
                self.count(name, 0, args.len(), span, usage)?;
                let op = TensorOp::Setmaxnreg { inc, regs: n as u16 };
                Ok(self.mk(ExprKind::Builtin(Builtin::Tensor(op), Vec::new()), Ty::Unit, span))
            }
            TensorFn::WgmmaWait => {
                let usage = "`acc = wgmma_wait::<0>(acc)`";
                let n = self.const_generic(name, generics, usage, span)?;
                if n > 7 {
                    return Err(Diagnostic::error(generics[0].span(), format!("`wgmma_wait` leaves at most 7 groups pending, not {n}"))
                        .label("too many")
                        .into());
                }
                self.count(name, 1, args.len(), span, usage)?;
                let acc = self.expr(&args[0])?;
                if self.u.ty(acc.ty).and_then(|t| self.mcx.frag_of(t)).is_none_or(|f| f.kind != FragKind::WgAcc) {
                    let d = self.u.describe(acc.ty);
                    return Err(Diagnostic::error(args[0].span, format!("`wgmma_wait` passes a `WgAcc<f32, N>` through, not `{d}`"))
                        .label("expected the accumulator the `wgmma`s write")
                        .help("write `acc = wgmma_wait::<0>(acc)`: reading `acc` before the wait would read registers still being written")
                        .into());
                }
                self.uses_block_sync = true;
                let ty = acc.ty;
                Ok(Expr { kind: ExprKind::Builtin(Builtin::Tensor(TensorOp::WgmmaWait(n as u8)), vec![acc]), ty, span })
            }
        }
    }

    /// `wgmma_desc::<SWIZZLE, ROWS>(&tile[i])`: the descriptor of a K-major tile of 16-bit
    /// floats, or of `f32`s read as tf32, in shared memory.
    fn wgmma_desc(&mut self, generics: &[GenericArg], args: &[ast::Expr], span: Span) -> CResult<CExpr> {
        let usage = "`wgmma_desc::<128, 64>(&tile[i])` (rows of 128 bytes, swizzled as `swizzle::<3, 3, 3>`; 64 rows)";
        let [swz, rows] = self.const_generics::<2>("wgmma_desc", generics, usage, span)?;
        if !matches!(swz, 32 | 64 | 128) {
            return Err(Diagnostic::error(generics[0].span(), format!("`wgmma_desc` swizzles rows of 32, 64 or 128 bytes, not {swz}"))
                .label("unsupported swizzle")
                .help(usage)
                .into());
        }
        if !wgmma_n_ok(rows) {
            return Err(Diagnostic::error(generics[1].span(), format!("a `wgmma` operand has 64 rows (A) or N (B), not {rows}"))
                .label("not a multiple of 8 from 8 to 256")
                .help(usage)
                .into());
        }
        self.count("wgmma_desc", 1, args.len(), span, usage)?;
        let (elem_ref, elem) = self.element_ref("wgmma_desc", &args[0], false)?;
        let et = match self.u.ty(elem) {
            Some(t @ Ty::Scalar(Scalar::F16 | Scalar::Bf16 | Scalar::F32)) => t,
            Some(t @ Ty::Param(p)) if p.bound == Bound::Half => t,
            _ => {
                let d = self.u.describe(elem);
                let mut e = Diagnostic::error(args[0].span, format!("`wgmma` multiplies `f16`, `bf16` or `f32` (as tf32), not `{d}`"))
                    .label("not a 16-bit float or an `f32`")
                    .note(WGMMA_HELP);
                if matches!(self.u.ty(elem), Some(Ty::Param(_))) {
                    e = e.note("a type parameter's elements must be 16-bit floats for every instance: bound it by `Half`");
                }
                return Err(e.into());
            }
        };
        let frag = FragTy { kind: FragKind::WgDesc, elem: et, m: rows, n: 0, k: 0 };
        let generics_env = self.generics.clone();
        let ty = Ty::Agg(self.mcx.intern_frag(frag, &generics_env));
        let h = self.u.known(ty);
        let op = TensorOp::WgmmaDesc { swizzle: swz as u8, rows: rows as u16 };
        Ok(Expr { kind: ExprKind::Builtin(Builtin::Tensor(op), vec![elem_ref]), ty: h, span })
    }

    /// `wgmma(a, b, acc)`: A a `WgDesc<T, 64>`, B a `WgDesc<T, N>`, the accumulator `WgAcc<f32, N>`.
    fn wgmma(&mut self, args: &[ast::Expr], span: Span) -> CResult<CExpr> {
        let mut xs = Vec::with_capacity(3);
        let mut frags = Vec::with_capacity(3);
        for (i, (a, want)) in args.iter().zip([FragKind::WgDesc, FragKind::WgDesc, FragKind::WgAcc]).enumerate() {
            let x = self.expr(a)?;
            let f = self.u.ty(x.ty).and_then(|t| self.mcx.frag_of(t)).filter(|f| f.kind == want);
            let Some(f) = f else {
                let d = self.u.describe(x.ty);
                let which = ["A", "B", "accumulator"][i];
                let expected = if want == FragKind::WgAcc { "WgAcc<f32, N>" } else { "WgDesc<T, ..>" };
                return Err(Diagnostic::error(a.span, format!("the {which} operand of `wgmma` is a `{expected}`, not `{d}`"))
                    .label(format!("expected `{expected}`"))
                    .note(WGMMA_HELP)
                    .into());
            };
            xs.push(x);
            frags.push(f);
        }
        let (fa, fb, fc) = (frags[0], frags[1], frags[2]);
        if fa.elem != fb.elem {
            let (ta, tb) = (self.u.describe(xs[0].ty), self.u.describe(xs[1].ty));
            return Err(Diagnostic::error(args[1].span, format!("mismatched operands: `{ta}` times `{tb}`"))
                .label("A and B must have one element type")
                .into());
        }
        if fa.m != 64 {
            let ta = self.u.describe(xs[0].ty);
            return Err(Diagnostic::error(args[0].span, format!("the A operand of `wgmma` has 64 rows, not `{ta}`"))
                .label("expected `WgDesc<_, 64>`")
                .note(WGMMA_HELP)
                .into());
        }
        if fb.m != fc.n {
            let (tb, tc) = (self.u.describe(xs[1].ty), self.u.describe(xs[2].ty));
            return Err(Diagnostic::error(args[2].span, format!("`{tb}` (N rows of Bᵀ) does not accumulate into `{tc}`"))
                .label(format!("expected `WgAcc<f32, {}>`", fb.m))
                .note(WGMMA_HELP)
                .into());
        }
        // A definition is never compiled: its element type stands for the instances'.
        let ab = match fa.elem {
            Ty::Scalar(s) => s,
            _ => Scalar::Bf16,
        };
        self.uses_block_sync = true;
        let ty = xs[2].ty;
        Ok(Expr { kind: ExprKind::Builtin(Builtin::Tensor(TensorOp::Wgmma { n: fc.n as u16, ab }), xs), ty, span })
    }

    pub(super) fn no_turbofish(&self, name: &str, g: &[GenericArg]) -> CResult<()> {
        match g.first() {
            Some(first) => Err(Diagnostic::error(first.span(), format!("`{name}` takes no generic arguments")).label("remove this").into()),
            None => Ok(()),
        }
    }

    pub(super) fn count(&self, name: &str, want: usize, got: usize, span: Span, usage: &str) -> CResult<()> {
        if want == got {
            return Ok(());
        }
        Err(Diagnostic::error(span, format!("`{name}` takes {want} argument{} but {got} {} supplied", plural(want), were(got)))
            .label(format!("expected {want} argument{}", plural(want)))
            .help(format!("write {usage}"))
            .into())
    }

    /// The one constant generic argument of `name::<N>` (a missing one is an error at the
    /// call, `span`).
    pub(super) fn const_generic(&mut self, name: &str, generics: &[GenericArg], usage: &str, span: Span) -> CResult<u64> {
        self.const_generics::<1>(name, generics, usage, span).map(|[v]| v)
    }

    fn const_generics<const N: usize>(&mut self, name: &str, generics: &[GenericArg], usage: &str, span: Span) -> CResult<[u64; N]> {
        let mut out = [0u64; N];
        if generics.len() != N {
            let at = generics.first().map(|g| g.span()).unwrap_or(span);
            return Err(Diagnostic::error(at, format!("`{name}` takes {N} constant generic argument{}", plural(N)))
                .label("expected constants")
                .help(format!("write {usage}"))
                .into());
        }
        for (o, g) in out.iter_mut().zip(generics) {
            let GenericArg::Const(e) = g else {
                return Err(Diagnostic::error(g.span(), "expected a constant")
                    .label("not a constant")
                    .help(format!("write {usage}"))
                    .into());
            };
            // Any integer type: a literal, or a `const` item of the kernel's (often `usize`).
            let Some(v) = self.eval_const_here(e, None)? else {
                return Err(Diagnostic::error(e.span, format!("the arguments of `{name}` are constants"))
                    .label("depends on a const parameter")
                    .into());
            };
            if !v.ty().is_int() {
                return Err(Diagnostic::error(e.span, format!("the arguments of `{name}` are integers, not `{}`", v.ty()))
                    .label("not an integer")
                    .help(format!("write {usage}"))
                    .into());
            }
            *o = v.as_i128().and_then(|v| u64::try_from(v).ok()).unwrap_or(u64::MAX);
        }
        Ok(out)
    }

    /// `FragA::<T, M, N, K>(x)`: a fragment from its elements.
    fn frag_new(&mut self, func: &ast::Ident, generics: &[GenericArg], args: &[ast::Expr], span: Span) -> CResult<CExpr> {
        if generics.is_empty() {
            return Err(Diagnostic::error(func.span, format!("`{}` needs its generic arguments", func.name))
                .label("which fragment?")
                .help("name the type: `FragC::<f32, 16, 8>([0.0; 4])`, `FragA::<bf16, 16, 8, 16>(x)`")
                .into());
        }
        let t = TypeExpr::Builtin { name: func.clone(), args: generics.to_vec(), span: func.span };
        let ty = self.ty_of(&t)?;
        let frag = self.mcx.frag_of(ty).ok_or_else(|| Diagnostic::error(func.span, "internal error: a fragment type without its shape"))?;
        let tn = self.u.ty_name(ty);
        self.count(
            &tn,
            1,
            args.len(),
            span,
            &format!("`{}::<..>([..; {}])`, one value per element the thread holds", func.name, frag.elems()),
        )?;
        let elem = self.u.known(frag.elem);
        let regs = self.u.array(elem, frag.elems());
        let x = self.expr(&args[0])?;
        self.unify_or(x.span, regs, x.ty, &format!(" (a `{tn}` holds {} elements per thread)", frag.elems()))?;
        Ok(self.mk(ExprKind::Aggregate { parts: vec![(0, x)], base: None }, ty, span))
    }

    /// `mma(a, b, c)`: A and B of one shape and element type, C its accumulator.
    fn mma(&mut self, args: &[ast::Expr], span: Span) -> CResult<CExpr> {
        let mut xs = Vec::with_capacity(3);
        let mut frags = Vec::with_capacity(3);
        for (a, want) in args.iter().zip([FragKind::A, FragKind::B, FragKind::C]) {
            let x = self.expr(a)?;
            let f = match self.u.ty(x.ty) {
                Some(t) => self.mcx.frag_of(t).filter(|f| f.kind == want),
                None => {
                    return Err(Diagnostic::error(a.span, "type annotations needed")
                        .label("the fragment's type must be known here")
                        .help("annotate it: `let a: FragA<bf16, 16, 8, 16> = ..`")
                        .into());
                }
            };
            let Some(f) = f else {
                let d = self.u.describe(x.ty);
                let which = ["A", "B", "C"][frags.len()];
                return Err(Diagnostic::error(a.span, format!("the {which} operand of `mma` is a `{}<..>`, not `{d}`", want.name()))
                    .label(format!("expected `{}<..>`", want.name()))
                    .help("`mma(a: FragA<T, M, N, K>, b: FragB<T, M, N, K>, c: FragC<C, M, N>)` returns the new `FragC<C, M, N>`")
                    .into());
            };
            xs.push(x);
            frags.push(f);
        }
        let (fa, fb, fc) = (frags[0], frags[1], frags[2]);
        if (fb.elem, fb.m, fb.n, fb.k) != (fa.elem, fa.m, fa.n, fa.k) {
            let (ta, tb) = (self.u.describe(xs[0].ty), self.u.describe(xs[1].ty));
            return Err(Diagnostic::error(args[1].span, format!("mismatched fragments: `{ta}` times `{tb}`"))
                .label("A and B must have one element type and one shape")
                .into());
        }
        let acc_ok = match fa.elem {
            Ty::Scalar(s) => MmaShape::acc_of(s).map(Ty::Scalar) == Some(fc.elem),
            _ => true,
        };
        if !acc_ok || (fc.m, fc.n) != (fa.m, fa.n) {
            let (ta, tc) = (self.u.describe(xs[0].ty), self.u.describe(xs[2].ty));
            let want = match fa.elem {
                Ty::Scalar(s) => MmaShape::acc_of(s).map(|a| a.name()).unwrap_or("f32"),
                _ => "f32",
            };
            return Err(Diagnostic::error(args[2].span, format!("`{ta}` does not accumulate into `{tc}`"))
                .label(format!("expected `FragC<{want}, {}, {}>`", fa.m, fa.n))
                .into());
        }
        // A definition is never compiled: its shape stands for the instances'.
        let shape = fa.shape().unwrap_or(MmaShape::ALL[0]);
        self.uses_block_sync = true;
        let ty = xs[2].ty;
        Ok(Expr { kind: ExprKind::Builtin(Builtin::Tensor(TensorOp::Mma(shape)), xs), ty, span })
    }

    /// The two ends of an asynchronous copy of `bytes` (`&mut dst[i]`, `&src[j]`): arrays of one
    /// element type, a number (or a type parameter) whose size divides the bytes copied.
    pub(super) fn copy_ends(&mut self, name: &str, bytes: u64, dst: &ast::Expr, src: &ast::Expr) -> CResult<(CExpr, CExpr)> {
        let (d, dh) = self.element_ref(name, dst, true)?;
        let (s, sh) = self.element_ref(name, src, false)?;
        self.unify_or(src.span, dh, sh, &format!(" (`{name}` copies between arrays of one element type)"))?;
        match self.u.ty(dh) {
            Some(Ty::Scalar(e)) if e != Scalar::Bool && bytes.is_multiple_of(e.size() as u64) => Ok((d, s)),
            Some(Ty::Param(_)) => Ok((d, s)),
            _ => {
                let t = self.u.describe(dh);
                Err(Diagnostic::error(dst.span, format!("`{name}::<{bytes}>` cannot copy whole elements of `{t}`"))
                    .label("not a number of whole elements")
                    .help("copy arrays of numbers whose size divides the bytes copied")
                    .into())
            }
        }
    }

    /// `&a[i]` (or `&mut a[i]` where `write`): the element an access starts at, as the
    /// `ExprKind::Index` the code generator addresses and bounds-checks, and its type.
    pub(super) fn element_ref(&mut self, name: &str, arg: &ast::Expr, write: bool) -> CResult<(CExpr, H)> {
        let form = if write { "`&mut a[i]`" } else { "`&a[i]`" };
        let target = match &arg.kind {
            A::RefMut(t) => t,
            A::Ref(t) if !write => t,
            _ => {
                return Err(Diagnostic::error(arg.span, format!("`{name}` takes {form}, a reference to an array element"))
                    .label(if write {
                        "expected a mutable reference to an array element"
                    } else {
                        "expected a reference to an array element"
                    })
                    .into());
            }
        };
        let (place, h) = if write {
            self.place(target)?
        } else {
            match self.operand(target)? {
                Operand::Place(p, h) => (p, h),
                Operand::Value(_) => {
                    return Err(Diagnostic::error(target.span, format!("`{name}` takes {form}")).label("not an array element").into());
                }
            }
        };
        let Place::Index(arr, idx) = place else {
            return Err(Diagnostic::error(target.span, format!("`{name}` reads and writes array elements"))
                .label("not an element of an array")
                .help(format!("write {form}: the element of a shared or global array where the access starts"))
                .into());
        };
        if self.u.ty(arr.ty).and_then(array_view).is_some_and(|a| a.ndim != 1) {
            return Err(Diagnostic::error(target.span, format!("`{name}` takes an element of a 1-d array"))
                .label("an element of an N-d array")
                .help("index a 1-d array (`shared_array`, `&[T]`): the access covers elements in order from it")
                .into());
        }
        Ok((Expr { kind: ExprKind::Index(arr, idx), ty: h, span: target.span }, h))
    }

    /// `swizzle::<B, M, S>(i)`: `i` with bits `M..M+B` xor-ed with bits `M+S..M+S+B`, CuTe's
    /// `Swizzle<B, M, S>`, written out as that arithmetic.
    fn swizzle(&mut self, generics: &[GenericArg], args: &[ast::Expr], span: Span) -> CResult<CExpr> {
        let usage = "`swizzle::<3, 3, 3>(i)` (8-element chunks of 128-byte rows, rows of 64 `bf16`)";
        let [b, m, s] = self.const_generics::<3>("swizzle", generics, usage, span)?;
        if b == 0 || b > s || m + s + b > 64 {
            return Err(Diagnostic::error(
                generics[0].span().to(generics[2].span()),
                format!("`swizzle::<{b}, {m}, {s}>` is not a swizzle"),
            )
            .label("needs 1 <= B <= S and M + S + B <= 64")
            .help(usage)
            .into());
        }
        self.count("swizzle", 1, args.len(), span, usage)?;
        let x = self.expr(&args[0])?;
        let usize_h = self.u.known(Ty::Scalar(Scalar::Usize));
        self.unify_or(x.span, usize_h, x.ty, " (`swizzle` maps a `usize` index)")?;
        let sp = x.span;
        let tmp = self.declare(&ast::Ident { name: "_".into(), span: sp }, usize_h, false, false);
        let lit = |v: u64| Expr { kind: ExprKind::Lit(ScalarValue::Int(Scalar::Usize, v)), ty: usize_h, span: sp };
        let local = || Expr { kind: ExprKind::Local(tmp), ty: usize_h, span: sp };
        let bin = |op, a: CExpr, b: CExpr| Expr { kind: ExprKind::Binary(op, Box::new(a), Box::new(b)), ty: usize_h, span: sp };
        let mask = ((1u64 << b) - 1) << m;
        let high = bin(BinOp::BitAnd, bin(BinOp::Shr, local(), lit(s)), lit(mask));
        let value = bin(BinOp::BitXor, local(), high);
        Ok(Expr { kind: ExprKind::Block(Block { stmts: vec![Stmt::Let(tmp, Some(x))], tail: Some(Box::new(value)) }), ty: usize_h, span })
    }
}

fn were(n: usize) -> &'static str {
    if n == 1 { "was" } else { "were" }
}

/// Whether `p` uses an instruction of the `a` architecture (sm_90a's `wgmma`): on a GPU of
/// compute capability 9.0 such a kernel compiles for sm_90a rather than sm_90.
pub fn needs_accelerated(p: &Program) -> bool {
    let mut found = false;
    for f in &p.funcs {
        visit_block(&f.body, &mut |e| {
            if let ExprKind::Builtin(Builtin::Tensor(t), _) = &e.kind {
                found |= t.needs_accelerated();
            }
        });
    }
    found
}

/// The first operation of `p` that the architecture `sm_{sm}` (`a` variant when `accelerated`)
/// does not have: an error at it naming the architecture it needs.
pub fn check_arch(p: &Program, sm: u32, accelerated: bool) -> Result<(), Box<Diagnostic>> {
    let mut found: Option<(Span, TensorOp)> = None;
    for f in &p.funcs {
        visit_block(&f.body, &mut |e| {
            if let ExprKind::Builtin(Builtin::Tensor(t), _) = &e.kind
                && found.is_none()
                && (t.min_sm() > sm || (t.needs_accelerated() && !(accelerated && sm == t.min_sm())))
            {
                found = Some((e.span, *t));
            }
        });
    }
    let Some((span, t)) = found else { return Ok(()) };
    // An `a` architecture's instructions are in no later one's PTX.
    let (need, later) =
        if t.needs_accelerated() { (format!("sm_{}a", t.min_sm()), "") } else { (format!("sm_{}", t.min_sm()), " or later") };
    let what = match t {
        TensorOp::Mma(s) => format!("`mma` of `{}` at {} x {} x {}", s.ab, s.m, s.n, s.k),
        t => format!("`{}`", t.name()),
    };
    let have = format!("sm_{sm}{}", if accelerated { "a" } else { "" });
    Err(Diagnostic::error(span, format!("{what} needs {need}{later}; this compile is for {have}"))
        .label(format!("needs {need}"))
        .help(format!("compile for {need}{later} (`KACHE_ARCH={need}`, `kache compile --arch {need}`), or use another kernel on {have}"))
        .into())
}
