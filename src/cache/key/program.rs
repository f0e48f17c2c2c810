//! The `code` component of the key: the canonical byte encoding of a checked program (the
//! kernel and every item it reaches), not of its captured values, which the key hashes by
//! content (`captures.rs`).
//!
//! Every struct is taken apart by exhaustive destructuring and every enum by an exhaustive
//! match, so a field or variant added to the IR does not compile until it is encoded here or
//! skipped with the reason written next to it. Each enum has one [`Tag`] numbering; scalars and
//! layouts use [`Scalar::tag`] and [`Layout::tag`], the numbering every encoding shares.

use crate::ir::{
    AggTy, ArrayTy, BinOp, Block, Builtin, Capture, CaptureOrigin, CaptureSource, CaptureTy, ConstArray, Elem, EnumTy, Expr, ExprKind,
    Func, FuncKind, Layout, LocalDecl, LogicOp, MatchArm, MathFn, MmaShape, ParamArrayTy, PendingLit, Place, Program, Scalar, ScalarValue,
    Stmt, StructDef, TensorOp, Ty, TypeParam, UnOp,
};

/// Writes the canonical encoding of `p`'s code into `out`. Spans and local names are not
/// encoded: comments, formatting, file names and renamed locals keep their keys.
pub fn encode_program(p: &Program, out: &mut Vec<u8>) {
    // `enums` names the enum types and checks kernel arguments; the code only has their
    // discriminants (keyed where they appear). `warnings` are diagnostics. `tune` changes no
    // code: it is keyed by the tuning results it selects (`key/tuning.rs`), never by the code.
    let Program { kernel, funcs, captures, enums: _, warnings: _, fmad, launch_bounds, types, tune: _ } = p;
    let mut e = Encoder { out };
    e.byte(b'P');
    e.u64(*kernel as u64);
    // The aggregate types, which `Ty::Agg` names by index: the table holds only the types of
    // what the kernel reaches, in the order the checker met them, so the same code gives the
    // same table.
    e.u64(types.len() as u64);
    for t in types.all() {
        e.agg(t);
    }
    e.u64(funcs.len() as u64);
    for f in funcs {
        e.func(f);
    }
    e.u64(captures.len() as u64);
    for c in captures {
        e.capture_decl(c);
    }
    e.byte(match fmad {
        None => 0,
        Some(false) => 1,
        Some(true) => 2,
    });
    match launch_bounds {
        None => e.byte(0),
        Some(b) => {
            e.byte(1);
            e.u64(b.max_threads as u64);
            e.u64(b.min_blocks.map_or(0, |m| m as u64));
        }
    }
}

/// The byte that says which variant of an enum follows: one numbering per enum, used by every
/// place that encodes it.
trait Tag {
    fn tag(&self) -> u8;
}

impl Tag for Ty {
    fn tag(&self) -> u8 {
        match self {
            Ty::Unit => 0,
            Ty::Never => 1,
            Ty::Scalar(_) => 2,
            Ty::Array(_) => 3,
            Ty::Enum(_) => 4,
            Ty::Param(_) => 5,
            Ty::ParamArray(_) => 6,
            Ty::Agg(_) => 7,
        }
    }
}

impl Tag for AggTy {
    fn tag(&self) -> u8 {
        match self {
            AggTy::Tuple(_) => 0,
            AggTy::Array { .. } => 1,
            AggTy::Struct(_) => 2,
        }
    }
}

impl Tag for Elem {
    fn tag(&self) -> u8 {
        match self {
            Elem::Scalar(_) => 0,
            Elem::Struct(_) => 1,
        }
    }
}

impl Tag for FuncKind {
    fn tag(&self) -> u8 {
        match self {
            FuncKind::Kernel => 0,
            FuncKind::Device => 1,
            FuncKind::Closure { .. } => 2,
            FuncKind::KernelClosure { .. } => 3,
        }
    }
}

impl Tag for CaptureOrigin {
    fn tag(&self) -> u8 {
        match self {
            CaptureOrigin::Global(_) => 0,
            CaptureOrigin::FactoryArg { .. } => 1,
            CaptureOrigin::Static(_) => 2,
        }
    }
}

impl Tag for CaptureTy {
    fn tag(&self) -> u8 {
        match self {
            CaptureTy::Scalar(_) => 0,
            CaptureTy::Array { .. } => 1,
        }
    }
}

impl Tag for CaptureSource {
    fn tag(&self) -> u8 {
        match self {
            CaptureSource::Binding(_) => 0,
            CaptureSource::Scalar(_) => 1,
            CaptureSource::Static(_) => 2,
        }
    }
}

impl Tag for Stmt {
    fn tag(&self) -> u8 {
        match self {
            Stmt::Let(..) => b'L',
            Stmt::Expr(_) => b'E',
        }
    }
}

impl Tag for Place {
    fn tag(&self) -> u8 {
        match self {
            Place::Local(_) => 0,
            Place::Index(..) => 1,
            Place::Field(..) => 2,
            Place::Elem(..) => 3,
        }
    }
}

impl Tag for UnOp {
    fn tag(&self) -> u8 {
        match self {
            UnOp::Neg => 0,
            UnOp::Not => 1,
        }
    }
}

impl Tag for LogicOp {
    fn tag(&self) -> u8 {
        match self {
            LogicOp::And => 0,
            LogicOp::Or => 1,
        }
    }
}

impl Tag for BinOp {
    fn tag(&self) -> u8 {
        match self {
            BinOp::Add => 0,
            BinOp::Sub => 1,
            BinOp::Mul => 2,
            BinOp::Div => 3,
            BinOp::Rem => 4,
            BinOp::BitAnd => 5,
            BinOp::BitOr => 6,
            BinOp::BitXor => 7,
            BinOp::Shl => 8,
            BinOp::Shr => 9,
            BinOp::Eq => 10,
            BinOp::Ne => 11,
            BinOp::Lt => 12,
            BinOp::Le => 13,
            BinOp::Gt => 14,
            BinOp::Ge => 15,
        }
    }
}

impl Tag for Builtin {
    fn tag(&self) -> u8 {
        match self {
            Builtin::ThreadIdx(_) => 0,
            Builtin::BlockIdx(_) => 1,
            Builtin::BlockDim(_) => 2,
            Builtin::GridDim(_) => 3,
            Builtin::GlobalId(_) => 4,
            Builtin::SyncThreads => 5,
            Builtin::AtomicAdd => 6,
            Builtin::AtomicMax => 7,
            Builtin::AtomicMin => 8,
            Builtin::AtomicCas => 9,
            Builtin::Len => 10,
            Builtin::Shape => 11,
            Builtin::Stride => 12,
            Builtin::Math(_) => 13,
            Builtin::AtomicSub => 14,
            Builtin::AtomicAnd => 15,
            Builtin::AtomicOr => 16,
            Builtin::AtomicXor => 17,
            Builtin::AtomicExch => 18,
            Builtin::AtomicInc => 19,
            Builtin::AtomicDec => 20,
            Builtin::LaneId => 21,
            Builtin::WarpSize => 22,
            Builtin::Shfl(_) => 23,
            Builtin::Ballot => 24,
            Builtin::AllSync => 25,
            Builtin::AnySync => 26,
            Builtin::ActiveMask => 27,
            Builtin::SyncWarp => 28,
            Builtin::Fence(_) => 29,
            Builtin::AtomicLoad => 30,
            Builtin::AtomicStore => 31,
            Builtin::Tensor(_) => 32,
            // Numbers left free for other builtins: this one is far from the end.
            Builtin::Unwrap => 64,
        }
    }
}

impl Tag for MathFn {
    fn tag(&self) -> u8 {
        match self {
            MathFn::Abs => 0,
            MathFn::Sqrt => 1,
            MathFn::Floor => 2,
            MathFn::Ceil => 3,
            MathFn::Round => 4,
            MathFn::Trunc => 5,
            MathFn::Min => 6,
            MathFn::Max => 7,
            MathFn::MulAdd => 8,
            MathFn::Exp => 9,
            MathFn::Exp2 => 10,
            MathFn::Ln => 11,
            MathFn::Log2 => 12,
            MathFn::Log10 => 13,
            MathFn::Sin => 14,
            MathFn::Cos => 15,
            MathFn::Tan => 16,
            MathFn::Asin => 17,
            MathFn::Acos => 18,
            MathFn::Atan => 19,
            MathFn::Atan2 => 20,
            MathFn::Sinh => 21,
            MathFn::Cosh => 22,
            MathFn::Tanh => 23,
            MathFn::Powf => 24,
            MathFn::Powi => 25,
            MathFn::Cbrt => 26,
            MathFn::Hypot => 27,
            MathFn::WrappingAdd => 28,
            MathFn::WrappingSub => 29,
            MathFn::WrappingMul => 30,
            MathFn::CountOnes => 31,
            MathFn::LeadingZeros => 32,
            MathFn::TrailingZeros => 33,
            MathFn::Erf => 34,
            MathFn::Erfc => 35,
            MathFn::ExpM1 => 36,
            MathFn::Ln1p => 37,
            MathFn::Exp10 => 38,
            MathFn::Rsqrt => 39,
            MathFn::Copysign => 40,
            MathFn::IsNan => 41,
            MathFn::IsFinite => 42,
            MathFn::IsInfinite => 43,
            MathFn::Signum => 44,
            MathFn::Clamp => 45,
            MathFn::RemEuclid => 46,
            MathFn::ReverseBits => 47,
            MathFn::Pow => 48,
            MathFn::AbsDiff => 49,
            MathFn::SaturatingAdd => 50,
            MathFn::SaturatingSub => 51,
            MathFn::SaturatingMul => 52,
            MathFn::WrappingDiv => 53,
            MathFn::WrappingRem => 54,
            MathFn::WrappingNeg => 55,
            MathFn::WrappingShl => 56,
            MathFn::WrappingShr => 57,
            MathFn::WrappingPow => 58,
            MathFn::WrappingAbs => 59,
            MathFn::SinCos => 60,
        }
    }
}

impl Tag for ExprKind {
    fn tag(&self) -> u8 {
        match self {
            ExprKind::Lit(_) => 1,
            ExprKind::Unit => 2,
            ExprKind::Local(_) => 3,
            ExprKind::Capture(_) => 4,
            ExprKind::Unary(..) => 5,
            ExprKind::Binary(..) => 6,
            ExprKind::Logic(..) => 7,
            ExprKind::Cast(_) => 8,
            ExprKind::Index(..) => 9,
            ExprKind::Assign(..) => 10,
            ExprKind::CompoundAssign(..) => 11,
            ExprKind::Call(..) => 12,
            ExprKind::Builtin(..) => 13,
            ExprKind::SharedArray { .. } => 14,
            ExprKind::DynSharedArray(_) => 15,
            ExprKind::If(..) => 16,
            ExprKind::Block(_) => 17,
            ExprKind::While(..) => 18,
            ExprKind::Loop(..) => 19,
            ExprKind::For { .. } => 20,
            ExprKind::Break(..) => 21,
            ExprKind::Continue(_) => 22,
            ExprKind::Return(_) => 23,
            ExprKind::PendingLit(_) => 24,
            ExprKind::Match(..) => 25,
            ExprKind::Aggregate { .. } => 26,
            ExprKind::Repeat(_) => 27,
            ExprKind::Field(..) => 28,
            ExprKind::Elem(..) => 29,
            ExprKind::CallRef(..) => 30,
            // Numbers left free for other kinds: this one is far from the end.
            ExprKind::Zeroed => 40,
        }
    }
}

struct Encoder<'a> {
    out: &'a mut Vec<u8>,
}

impl Encoder<'_> {
    fn byte(&mut self, b: u8) {
        self.out.push(b);
    }
    fn tag(&mut self, t: &impl Tag) {
        self.out.push(t.tag());
    }
    fn u64(&mut self, v: u64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    fn bool(&mut self, b: bool) {
        self.out.push(b as u8);
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.out.extend_from_slice(s.as_bytes());
    }
    fn scalar(&mut self, s: Scalar) {
        self.out.push(s.tag());
    }
    fn layout(&mut self, l: Layout) {
        self.out.push(l.tag());
    }
    /// `None` as 0; `Some` as 1 followed by the value.
    fn option<T>(&mut self, v: Option<T>, mut some: impl FnMut(&mut Self, T)) {
        match v {
            Some(x) => {
                self.byte(1);
                some(self, x)
            }
            None => self.byte(0),
        }
    }
    fn ty(&mut self, t: Ty) {
        self.tag(&t);
        match t {
            Ty::Unit | Ty::Never => {}
            Ty::Scalar(s) => self.scalar(s),
            Ty::Array(a) => self.array_ty(a),
            Ty::Enum(e) => {
                // The id tells two enums of the program apart; the definition is not code.
                let EnumTy { id, repr } = e;
                self.u64(id as u64);
                self.scalar(repr)
            }
            // A compiled program has none (instances substitute concrete types); encoded all
            // the same, so that the encoding is total.
            Ty::Param(p) => self.type_param(p),
            Ty::ParamArray(a) => {
                let ParamArrayTy { elem, ndim, writable } = a;
                self.type_param(elem);
                self.byte(ndim);
                self.bool(writable);
            }
            // The definition is encoded once, in the program's table of types.
            Ty::Agg(id) => self.u64(id as u64),
        }
    }
    fn agg(&mut self, t: &AggTy) {
        self.tag(t);
        match t {
            AggTy::Tuple(ts) => {
                self.u64(ts.len() as u64);
                for t in ts {
                    self.ty(*t);
                }
            }
            AggTy::Array { elem, len } => {
                self.ty(*elem);
                self.u64(*len);
            }
            AggTy::Struct(s) => {
                // The struct's name and its fields' names are for messages and launch checks:
                // renaming keeps the key. Their types and order are the layout, which is code.
                // A tensor map (its one field the unnameable `TENSOR_MAP_FIELD`) is code too:
                // a kernel fences each map it takes; its count carries a bit no struct's has.
                let StructDef { name: _, fields } = s;
                self.u64(fields.len() as u64 | if s.is_tensor_map() { 1 << 63 } else { 0 });
                for (_, t) in fields {
                    self.ty(*t);
                }
            }
        }
    }
    fn elem(&mut self, e: Elem) {
        self.tag(&e);
        match e {
            Elem::Scalar(s) => self.scalar(s),
            Elem::Struct(id) => self.u64(id as u64),
        }
    }
    fn type_param(&mut self, p: TypeParam) {
        let TypeParam { index, bound } = p;
        self.byte(index);
        self.byte(bound as u8);
    }
    fn array_ty(&mut self, a: ArrayTy) {
        let ArrayTy { elem, ndim, writable } = a;
        self.elem(elem);
        self.byte(ndim);
        self.bool(writable);
    }
    fn value(&mut self, v: ScalarValue) {
        self.scalar(v.ty());
        self.u64(v.bits());
    }
    fn func(&mut self, f: &Func) {
        let Func {
            name,
            kind,
            params,
            ref_self,
            ret,
            locals,
            body,
            // Derived from the body, which is encoded.
            callees: _,
            captures: _,
            uses_libdevice: _,
            uses_block_sync: _,
            // Where the name is in the source: diagnostics only.
            span: _,
        } = f;
        self.byte(b'F');
        self.str(name);
        self.tag(kind);
        match kind {
            FuncKind::Kernel | FuncKind::Device => {}
            FuncKind::Closure { factory } | FuncKind::KernelClosure { factory } => self.str(factory),
        }
        self.u64(*params as u64);
        self.bool(*ref_self);
        self.ty(*ret);
        self.u64(locals.len() as u64);
        for l in locals {
            // The source name is for diagnostics: renaming a local keeps the key.
            let LocalDecl { name: _, ty } = l;
            self.ty(*ty);
        }
        self.block(body);
    }
    fn capture_decl(&mut self, c: &Capture) {
        let Capture { origin, ty, source } = c;
        self.byte(b'C');
        self.tag(origin);
        match origin {
            CaptureOrigin::Global(n) | CaptureOrigin::Static(n) => self.str(n),
            CaptureOrigin::FactoryArg { factory, param } => {
                self.str(factory);
                self.str(param)
            }
        }
        self.tag(ty);
        match *ty {
            CaptureTy::Scalar(s) => self.scalar(s),
            CaptureTy::Array { ty, device, layout } => {
                self.array_ty(ty);
                self.bool(device);
                self.layout(layout);
            }
        }
        self.tag(source);
        match source {
            // The binding number is only where the value is looked up (it depends on the order
            // the host bound globals in); the origin above names the value.
            CaptureSource::Binding(_) => {}
            CaptureSource::Scalar(v) => self.value(*v),
            CaptureSource::Static(a) => {
                let ConstArray { elem, shape, bytes } = a;
                self.scalar(*elem);
                self.u64(shape.len() as u64);
                for d in shape {
                    self.u64(*d as u64);
                }
                self.out.extend_from_slice(blake3::hash(bytes).as_bytes());
            }
        }
    }
    fn block(&mut self, b: &Block) {
        let Block { stmts, tail } = b;
        self.byte(b'{');
        self.u64(stmts.len() as u64);
        for s in stmts {
            self.tag(s);
            match s {
                Stmt::Let(l, init) => {
                    self.u64(*l as u64);
                    self.option(init.as_ref(), Self::expr)
                }
                Stmt::Expr(e) => self.expr(e),
            }
        }
        self.option(tail.as_deref(), Self::expr);
    }
    fn exprs(&mut self, es: &[Expr]) {
        self.u64(es.len() as u64);
        for e in es {
            self.expr(e);
        }
    }
    fn place(&mut self, p: &Place) {
        self.tag(p);
        match p {
            Place::Local(l) => self.u64(*l as u64),
            Place::Index(a, idx) => {
                self.expr(a);
                self.exprs(idx)
            }
            Place::Field(p, k) => {
                self.place(p);
                self.u64(*k as u64)
            }
            Place::Elem(p, i) => {
                self.place(p);
                self.expr(i)
            }
        }
    }
    fn expr(&mut self, e: &Expr) {
        // Where it is in the source: diagnostics only.
        let Expr { kind, ty, span: _ } = e;
        self.ty(*ty);
        self.tag(kind);
        match kind {
            ExprKind::Lit(v) => self.value(*v),
            ExprKind::PendingLit(l) => {
                // Never in a checked program; encoded anyway so the encoding is total.
                let PendingLit { int, neg, f64, f32, f16, bf16 } = *l;
                self.bool(neg);
                self.u64(f64.to_bits());
                self.option(int, |e, i| e.out.extend_from_slice(&i.to_le_bytes()));
                self.u64(f32.to_bits() as u64);
                self.u64(f16.to_bits() as u64);
                self.u64(bf16.to_bits() as u64);
            }
            ExprKind::Unit | ExprKind::Zeroed => {}
            ExprKind::Local(l) => self.u64(*l as u64),
            ExprKind::Capture(c) => self.u64(*c as u64),
            ExprKind::Unary(op, x) => {
                self.tag(op);
                self.expr(x)
            }
            ExprKind::Binary(op, a, b) => {
                self.tag(op);
                self.expr(a);
                self.expr(b)
            }
            ExprKind::Logic(op, a, b) => {
                self.tag(op);
                self.expr(a);
                self.expr(b)
            }
            ExprKind::Cast(x) => self.expr(x),
            ExprKind::Index(a, idx) => {
                self.expr(a);
                self.exprs(idx)
            }
            ExprKind::Assign(p, v) => {
                self.place(p);
                self.expr(v)
            }
            ExprKind::CompoundAssign(op, p, v) => {
                self.tag(op);
                self.place(p);
                self.expr(v)
            }
            ExprKind::Call(f, args) => {
                self.u64(*f as u64);
                self.exprs(args)
            }
            ExprKind::Builtin(b, args) => {
                self.builtin(*b);
                self.exprs(args)
            }
            ExprKind::SharedArray { elem, len, site } => {
                self.elem(*elem);
                self.u64(*len);
                self.u64(*site as u64)
            }
            ExprKind::DynSharedArray(s) => self.elem(*s),
            ExprKind::Aggregate { parts, base } => {
                self.u64(parts.len() as u64);
                for (k, x) in parts {
                    self.u64(*k as u64);
                    self.expr(x);
                }
                self.option(base.as_deref(), Self::expr)
            }
            ExprKind::Repeat(x) => self.expr(x),
            ExprKind::Field(x, k) => {
                self.expr(x);
                self.u64(*k as u64)
            }
            ExprKind::Elem(a, i) => {
                self.expr(a);
                self.expr(i)
            }
            ExprKind::CallRef(f, p, args) => {
                self.u64(*f as u64);
                self.place(p);
                self.exprs(args)
            }
            ExprKind::If(c, t, f) => {
                self.expr(c);
                self.block(t);
                self.option(f.as_ref(), Self::block)
            }
            ExprKind::Block(b) => self.block(b),
            ExprKind::While(id, c, b) => {
                self.u64(*id as u64);
                self.expr(c);
                self.block(b)
            }
            ExprKind::Loop(id, b) => {
                self.u64(*id as u64);
                self.block(b)
            }
            ExprKind::For { id, var, start, end, inclusive, step, body } => {
                self.u64(*id as u64);
                self.u64(*var as u64);
                self.expr(start);
                self.expr(end);
                self.bool(*inclusive);
                self.option(step.as_deref(), Self::expr);
                self.block(body)
            }
            ExprKind::Break(id, v) => {
                self.u64(*id as u64);
                self.option(v.as_deref(), Self::expr)
            }
            ExprKind::Continue(id) => self.u64(*id as u64),
            ExprKind::Return(v) => self.option(v.as_deref(), Self::expr),
            ExprKind::Match(s, arms) => {
                self.expr(s);
                self.u64(arms.len() as u64);
                for MatchArm { ranges, binding, guard, body, pat_span: _ } in arms {
                    self.option(ranges.as_deref(), |e, r| {
                        e.u64(r.len() as u64);
                        for (lo, hi) in r {
                            e.expr(lo);
                            e.expr(hi);
                        }
                    });
                    self.option(*binding, |e, l| e.u64(l as u64));
                    self.option(guard.as_ref(), Self::expr);
                    self.expr(body);
                }
            }
        }
    }
    fn builtin(&mut self, b: Builtin) {
        self.tag(&b);
        // The dimension of the index builtins, the function of `Math`; 0 for the others.
        let sub = match b {
            Builtin::ThreadIdx(d) | Builtin::BlockIdx(d) | Builtin::BlockDim(d) | Builtin::GridDim(d) | Builtin::GlobalId(d) => d,
            Builtin::Math(m) => m.tag(),
            Builtin::Shfl(mode) => match mode {
                crate::ir::ShflMode::Idx => 0,
                crate::ir::ShflMode::Up => 1,
                crate::ir::ShflMode::Down => 2,
                crate::ir::ShflMode::Xor => 3,
            },
            Builtin::Fence(scope) => match scope {
                crate::ir::FenceScope::Block => 0,
                crate::ir::FenceScope::Device => 1,
                crate::ir::FenceScope::System => 2,
            },
            Builtin::AtomicSub
            | Builtin::AtomicAnd
            | Builtin::AtomicOr
            | Builtin::AtomicXor
            | Builtin::AtomicExch
            | Builtin::AtomicInc
            | Builtin::AtomicDec
            | Builtin::AtomicLoad
            | Builtin::AtomicStore
            | Builtin::Unwrap
            | Builtin::LaneId
            | Builtin::WarpSize
            | Builtin::Ballot
            | Builtin::AllSync
            | Builtin::AnySync
            | Builtin::ActiveMask
            | Builtin::SyncWarp
            | Builtin::SyncThreads
            | Builtin::AtomicAdd
            | Builtin::AtomicMax
            | Builtin::AtomicMin
            | Builtin::AtomicCas
            | Builtin::Len
            | Builtin::Shape
            | Builtin::Stride
            | Builtin::Tensor(_) => 0,
        };
        self.byte(sub);
        if let Builtin::Tensor(t) = b {
            self.tensor_op(t);
        }
    }

    /// A tensor-core operation: its kind, then everything that selects its instruction.
    fn tensor_op(&mut self, t: TensorOp) {
        match t {
            TensorOp::Mma(s) => {
                let MmaShape { m, n, k, ab, acc } = s;
                self.byte(0);
                self.byte(m);
                self.byte(n);
                self.byte(k);
                self.scalar(ab);
                self.scalar(acc);
            }
            TensorOp::Ldmatrix { count, trans } => {
                self.byte(1);
                self.byte(count);
                self.byte(trans as u8);
            }
            TensorOp::CpAsync { bytes, bypass_l1 } => {
                self.byte(2);
                self.byte(bytes);
                self.byte(bypass_l1 as u8);
            }
            TensorOp::CpAsyncCommit => self.byte(3),
            TensorOp::CpAsyncWait(n) => {
                self.byte(4);
                self.byte(n);
            }
            TensorOp::Tf32Round => self.byte(5),
            TensorOp::WgmmaDesc { swizzle, rows } => {
                self.byte(6);
                self.byte(swizzle);
                self.u64(rows as u64);
            }
            TensorOp::Wgmma { n, ab } => {
                self.byte(7);
                self.u64(n as u64);
                self.scalar(ab);
            }
            TensorOp::WgmmaFence => self.byte(8),
            TensorOp::WgmmaCommit => self.byte(9),
            TensorOp::WgmmaWait(n) => {
                self.byte(10);
                self.byte(n);
            }
            TensorOp::FenceProxyAsync => self.byte(11),
            TensorOp::MbarrierInit => self.byte(12),
            TensorOp::MbarrierArrive => self.byte(13),
            TensorOp::MbarrierArriveExpectTx => self.byte(14),
            TensorOp::MbarrierTryWait => self.byte(15),
            TensorOp::MbarrierInval => self.byte(16),
            TensorOp::CpAsyncBulk { bytes } => {
                self.byte(17);
                self.u64(bytes as u64);
            }
            TensorOp::CpAsyncBulkTensor { bytes, swizzle } => {
                self.byte(18);
                self.u64(bytes as u64);
                self.byte(swizzle);
            }
            TensorOp::Setmaxnreg { inc, regs } => {
                self.byte(19);
                self.byte(inc as u8);
                self.u64(regs as u64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::builtins::METHODS;

    /// Two variants with one tag would be two programs with one key.
    fn distinct(tags: impl IntoIterator<Item = u8>) -> bool {
        let mut seen = std::collections::HashSet::new();
        tags.into_iter().all(|t| seen.insert(t))
    }

    #[test]
    fn every_math_function_has_its_own_tag() {
        assert!(distinct(METHODS.iter().map(|d| d.func.tag())));
        assert!(METHODS.len() >= 34, "a math function without a table row");
    }

    #[test]
    fn every_atomic_has_its_own_tag() {
        use crate::lang::builtins::{FUNCTIONS, Function};
        let atomics: Vec<u8> = FUNCTIONS
            .iter()
            .filter_map(|(_, f)| match f {
                Function::Atomic(b) => Some(b.tag()),
                _ => None,
            })
            .collect();
        assert_eq!(atomics.len(), 13, "an atomic without a table row");
        assert!(distinct(atomics));
    }

    #[test]
    fn operators_have_their_own_tags() {
        use BinOp::*;
        let all = [Add, Sub, Mul, Div, Rem, BitAnd, BitOr, BitXor, Shl, Shr, Eq, Ne, Lt, Le, Gt, Ge];
        assert!(distinct(all.iter().map(|o| o.tag())));
        assert!(distinct([UnOp::Neg.tag(), UnOp::Not.tag()]));
        assert!(distinct([LogicOp::And.tag(), LogicOp::Or.tag()]));
    }
}
