//! The one table of builtins: functions, methods, their signatures and how NVPTX implements the
//! transcendental ones. The checker, the code generator and the language reference read it.

use crate::ir::{Builtin, FenceScope, FragKind, MathFn, Scalar, ShflMode, TensorOp};

/// Which receivers a method accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Receiver {
    /// `f32`, `f64`
    Float,
    /// Integer types.
    Int,
    /// Signed integers and floats.
    SignedOrFloat,
    /// Integers and floats.
    Numeric,
    /// Signed integers.
    SignedInt,
}

/// Type of the extra arguments of a method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgTy {
    /// Same type as the receiver.
    SameAsSelf,
    /// `i32` (`powi`).
    I32,
    /// `u32` (`pow`, `wrapping_pow`, `wrapping_shl`, `wrapping_shr`).
    U32,
}

/// Result type of a method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetTy {
    /// Same type as the receiver.
    SameAsSelf,
    /// `u32` (bit counts).
    U32,
    /// `bool` (`is_nan`, `is_finite`, `is_infinite`).
    Bool,
    /// The unsigned type of the receiver's width (`abs_diff`, as Rust's).
    Unsigned,
    /// A tuple of two values of the receiver's type (`sin_cos`).
    SelfPair,
}

/// One math method.
#[derive(Clone, Copy, Debug)]
pub struct MethodDef {
    /// Method name.
    pub name: &'static str,
    /// What it lowers to.
    pub func: MathFn,
    /// Number of arguments besides the receiver.
    pub args: usize,
    /// Type of those arguments.
    pub arg_ty: ArgTy,
    /// Accepted receivers.
    pub receiver: Receiver,
    /// Result type.
    pub ret: RetTy,
    /// libdevice functions for f32 and f64 receivers, where NVPTX has no native instruction.
    pub libdevice: Option<(&'static str, &'static str)>,
}

const fn full(
    name: &'static str,
    func: MathFn,
    args: usize,
    arg_ty: ArgTy,
    receiver: Receiver,
    ret: RetTy,
    libdevice: Option<(&'static str, &'static str)>,
) -> MethodDef {
    MethodDef { name, func, args, arg_ty, receiver, ret, libdevice }
}

const fn m(
    name: &'static str,
    func: MathFn,
    args: usize,
    receiver: Receiver,
    libdevice: Option<(&'static str, &'static str)>,
) -> MethodDef {
    MethodDef { name, func, args, arg_ty: ArgTy::SameAsSelf, receiver, ret: RetTy::SameAsSelf, libdevice }
}

use Receiver::*;

/// Every math method.
pub const METHODS: &[MethodDef] = &[
    m("abs", MathFn::Abs, 0, SignedOrFloat, None),
    m("sqrt", MathFn::Sqrt, 0, Float, None),
    m("floor", MathFn::Floor, 0, Float, None),
    m("ceil", MathFn::Ceil, 0, Float, None),
    m("round", MathFn::Round, 0, Float, None),
    m("trunc", MathFn::Trunc, 0, Float, None),
    m("min", MathFn::Min, 1, Numeric, None),
    m("max", MathFn::Max, 1, Numeric, None),
    m("mul_add", MathFn::MulAdd, 2, Float, None),
    m("exp", MathFn::Exp, 0, Float, Some(("__nv_expf", "__nv_exp"))),
    m("exp2", MathFn::Exp2, 0, Float, Some(("__nv_exp2f", "__nv_exp2"))),
    m("ln", MathFn::Ln, 0, Float, Some(("__nv_logf", "__nv_log"))),
    m("log2", MathFn::Log2, 0, Float, Some(("__nv_log2f", "__nv_log2"))),
    m("log10", MathFn::Log10, 0, Float, Some(("__nv_log10f", "__nv_log10"))),
    m("sin", MathFn::Sin, 0, Float, Some(("__nv_sinf", "__nv_sin"))),
    m("cos", MathFn::Cos, 0, Float, Some(("__nv_cosf", "__nv_cos"))),
    m("tan", MathFn::Tan, 0, Float, Some(("__nv_tanf", "__nv_tan"))),
    m("asin", MathFn::Asin, 0, Float, Some(("__nv_asinf", "__nv_asin"))),
    m("acos", MathFn::Acos, 0, Float, Some(("__nv_acosf", "__nv_acos"))),
    m("atan", MathFn::Atan, 0, Float, Some(("__nv_atanf", "__nv_atan"))),
    m("atan2", MathFn::Atan2, 1, Float, Some(("__nv_atan2f", "__nv_atan2"))),
    m("sinh", MathFn::Sinh, 0, Float, Some(("__nv_sinhf", "__nv_sinh"))),
    m("cosh", MathFn::Cosh, 0, Float, Some(("__nv_coshf", "__nv_cosh"))),
    m("tanh", MathFn::Tanh, 0, Float, Some(("__nv_tanhf", "__nv_tanh"))),
    m("powf", MathFn::Powf, 1, Float, Some(("__nv_powf", "__nv_pow"))),
    MethodDef {
        name: "powi",
        func: MathFn::Powi,
        args: 1,
        arg_ty: ArgTy::I32,
        receiver: Float,
        ret: RetTy::SameAsSelf,
        libdevice: Some(("__nv_powif", "__nv_powi")),
    },
    m("cbrt", MathFn::Cbrt, 0, Float, Some(("__nv_cbrtf", "__nv_cbrt"))),
    m("hypot", MathFn::Hypot, 1, Float, Some(("__nv_hypotf", "__nv_hypot"))),
    m("wrapping_add", MathFn::WrappingAdd, 1, Int, None),
    m("wrapping_sub", MathFn::WrappingSub, 1, Int, None),
    m("wrapping_mul", MathFn::WrappingMul, 1, Int, None),
    MethodDef {
        name: "count_ones",
        func: MathFn::CountOnes,
        args: 0,
        arg_ty: ArgTy::SameAsSelf,
        receiver: Int,
        ret: RetTy::U32,
        libdevice: None,
    },
    MethodDef {
        name: "leading_zeros",
        func: MathFn::LeadingZeros,
        args: 0,
        arg_ty: ArgTy::SameAsSelf,
        receiver: Int,
        ret: RetTy::U32,
        libdevice: None,
    },
    MethodDef {
        name: "trailing_zeros",
        func: MathFn::TrailingZeros,
        args: 0,
        arg_ty: ArgTy::SameAsSelf,
        receiver: Int,
        ret: RetTy::U32,
        libdevice: None,
    },
    m("erf", MathFn::Erf, 0, Float, Some(("__nv_erff", "__nv_erf"))),
    m("erfc", MathFn::Erfc, 0, Float, Some(("__nv_erfcf", "__nv_erfc"))),
    m("exp_m1", MathFn::ExpM1, 0, Float, Some(("__nv_expm1f", "__nv_expm1"))),
    m("ln_1p", MathFn::Ln1p, 0, Float, Some(("__nv_log1pf", "__nv_log1p"))),
    m("exp10", MathFn::Exp10, 0, Float, Some(("__nv_exp10f", "__nv_exp10"))),
    m("rsqrt", MathFn::Rsqrt, 0, Float, Some(("__nv_rsqrtf", "__nv_rsqrt"))),
    m("copysign", MathFn::Copysign, 1, Float, None),
    full("sin_cos", MathFn::SinCos, 0, ArgTy::SameAsSelf, Float, RetTy::SelfPair, Some(("__nv_sincosf", "__nv_sincos"))),
    full("is_nan", MathFn::IsNan, 0, ArgTy::SameAsSelf, Float, RetTy::Bool, None),
    full("is_finite", MathFn::IsFinite, 0, ArgTy::SameAsSelf, Float, RetTy::Bool, None),
    full("is_infinite", MathFn::IsInfinite, 0, ArgTy::SameAsSelf, Float, RetTy::Bool, None),
    m("signum", MathFn::Signum, 0, SignedOrFloat, None),
    m("clamp", MathFn::Clamp, 2, Numeric, None),
    // On floats libdevice's fmod (as `%`); see `needs_libdevice`.
    m("rem_euclid", MathFn::RemEuclid, 1, Numeric, None),
    m("reverse_bits", MathFn::ReverseBits, 0, Int, None),
    full("pow", MathFn::Pow, 1, ArgTy::U32, Int, RetTy::SameAsSelf, None),
    full("abs_diff", MathFn::AbsDiff, 1, ArgTy::SameAsSelf, Int, RetTy::Unsigned, None),
    m("saturating_add", MathFn::SaturatingAdd, 1, Int, None),
    m("saturating_sub", MathFn::SaturatingSub, 1, Int, None),
    m("saturating_mul", MathFn::SaturatingMul, 1, Int, None),
    m("wrapping_div", MathFn::WrappingDiv, 1, Int, None),
    m("wrapping_rem", MathFn::WrappingRem, 1, Int, None),
    m("wrapping_neg", MathFn::WrappingNeg, 0, Int, None),
    full("wrapping_shl", MathFn::WrappingShl, 1, ArgTy::U32, Int, RetTy::SameAsSelf, None),
    full("wrapping_shr", MathFn::WrappingShr, 1, ArgTy::U32, Int, RetTy::SameAsSelf, None),
    full("wrapping_pow", MathFn::WrappingPow, 1, ArgTy::U32, Int, RetTy::SameAsSelf, None),
    m("wrapping_abs", MathFn::WrappingAbs, 0, SignedInt, None),
];

/// Array methods: `len()`, `shape(d)`, `stride(d)`.
pub const ARRAY_METHODS: &[(&str, Builtin, usize)] =
    &[("len", Builtin::Len, 0), ("shape", Builtin::Shape, 1), ("stride", Builtin::Stride, 1)];

/// The math method called `name`.
pub fn method(name: &str) -> Option<&'static MethodDef> {
    METHODS.iter().find(|d| d.name == name)
}

/// The table entry of a math function.
pub fn method_def(f: MathFn) -> &'static MethodDef {
    // Every MathFn has exactly one row; the test `every_math_fn_has_a_row` holds that.
    METHODS.iter().find(|d| d.func == f).unwrap_or(&METHODS[0])
}

/// Whether `f` on a receiver of type `s` needs libdevice on NVPTX.
pub fn needs_libdevice(f: MathFn, s: Scalar) -> bool {
    s.is_float() && (method_def(f).libdevice.is_some() || f == MathFn::RemEuclid)
}

/// Builtin functions (called by plain name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    /// An index query returning `u32` (or `usize` for `global_id_*`).
    Index(Builtin),
    /// `sync_threads()`
    SyncThreads,
    /// `atomic_*(&mut a[i], ..)`, and `atomic_load(&a[i])`
    Atomic(Builtin),
    /// `shared_array::<T, N>()`
    SharedArray,
    /// `dynamic_shared_array::<T>()`
    DynSharedArray,
    /// `lane_id()`, `warp_size()`: `u32` queries.
    WarpQuery(Builtin),
    /// `shfl_sync(mask, v, lane)` and the `up`, `down`, `xor` forms; `width` may follow.
    Shuffle(ShflMode),
    /// `ballot_sync`, `all_sync`, `any_sync`: `(mask: u32, pred: bool)`.
    Vote(Builtin),
    /// `activemask() -> u32`
    ActiveMask,
    /// `sync_warp(mask: u32)`
    SyncWarp,
    /// `threadfence_block()`, `threadfence()`, `threadfence_system()`
    Fence(FenceScope),
    /// The tensor-core builtins (checked by `check::tensor`).
    Tensor(TensorFn),
}

/// The tensor-core builtins, by what they do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorFn {
    /// `FragA::<T, M, N, K>(x)`, `FragB::<..>(x)`, `FragC::<T, M, N>(x)`: a fragment from its
    /// elements.
    Frag(FragKind),
    /// `mma(a, b, c)`
    Mma,
    /// `ldmatrix_x1/x2/x4(&tile[i])` and the `_trans` forms.
    Ldmatrix {
        /// Matrices loaded.
        count: u8,
        /// `.trans`
        trans: bool,
    },
    /// `cp_async::<BYTES>(&mut dst[i], &src[j])`, `cp_async_cg::<16>(..)`
    CpAsync {
        /// `.cg`
        bypass_l1: bool,
    },
    /// `cp_async_commit()`
    CpAsyncCommit,
    /// `cp_async_wait::<N>()`
    CpAsyncWait,
    /// `tf32_round(x: f32) -> f32`
    Tf32Round,
    /// `swizzle::<B, M, S>(i: usize) -> usize`
    Swizzle,
    /// `wgmma_desc::<SWIZZLE, ROWS>(&tile[i]) -> WgDesc<T, ROWS>`
    WgmmaDesc,
    /// `wgmma(a, b, acc)`
    Wgmma,
    /// `wgmma_fence()`
    WgmmaFence,
    /// `wgmma_commit()`
    WgmmaCommit,
    /// `wgmma_wait::<N>(acc) -> acc`
    WgmmaWait,
    /// `fence_proxy_async()`
    FenceProxyAsync,
    /// `setmaxnreg_inc::<N>()` (true) or `setmaxnreg_dec::<N>()`
    Setmaxnreg(bool),
    /// `mbarrier_init`, `mbarrier_arrive`, `mbarrier_arrive_expect_tx`,
    /// `mbarrier_try_wait_parity`, `mbarrier_inval` (checked by `check::mbarrier`).
    Mbarrier(TensorOp),
    /// `cp_async_bulk::<BYTES>(&mut dst[i], &src[j], &mut bar[k])`
    CpAsyncBulk,
    /// `cp_async_bulk_tensor_2d(&mut dst[i], &map, x, y, &mut bar[k])`
    CpAsyncBulkTensor,
}

/// Every builtin function, by name.
pub const FUNCTIONS: &[(&str, Function)] = &[
    ("thread_idx_x", Function::Index(Builtin::ThreadIdx(0))),
    ("thread_idx_y", Function::Index(Builtin::ThreadIdx(1))),
    ("thread_idx_z", Function::Index(Builtin::ThreadIdx(2))),
    ("block_idx_x", Function::Index(Builtin::BlockIdx(0))),
    ("block_idx_y", Function::Index(Builtin::BlockIdx(1))),
    ("block_idx_z", Function::Index(Builtin::BlockIdx(2))),
    ("block_dim_x", Function::Index(Builtin::BlockDim(0))),
    ("block_dim_y", Function::Index(Builtin::BlockDim(1))),
    ("block_dim_z", Function::Index(Builtin::BlockDim(2))),
    ("grid_dim_x", Function::Index(Builtin::GridDim(0))),
    ("grid_dim_y", Function::Index(Builtin::GridDim(1))),
    ("grid_dim_z", Function::Index(Builtin::GridDim(2))),
    ("global_id_x", Function::Index(Builtin::GlobalId(0))),
    ("global_id_y", Function::Index(Builtin::GlobalId(1))),
    ("global_id_z", Function::Index(Builtin::GlobalId(2))),
    ("sync_threads", Function::SyncThreads),
    ("atomic_add", Function::Atomic(Builtin::AtomicAdd)),
    ("atomic_max", Function::Atomic(Builtin::AtomicMax)),
    ("atomic_min", Function::Atomic(Builtin::AtomicMin)),
    ("atomic_cas", Function::Atomic(Builtin::AtomicCas)),
    ("atomic_sub", Function::Atomic(Builtin::AtomicSub)),
    ("atomic_and", Function::Atomic(Builtin::AtomicAnd)),
    ("atomic_or", Function::Atomic(Builtin::AtomicOr)),
    ("atomic_xor", Function::Atomic(Builtin::AtomicXor)),
    ("atomic_exch", Function::Atomic(Builtin::AtomicExch)),
    ("atomic_inc", Function::Atomic(Builtin::AtomicInc)),
    ("atomic_dec", Function::Atomic(Builtin::AtomicDec)),
    ("atomic_load", Function::Atomic(Builtin::AtomicLoad)),
    ("atomic_store", Function::Atomic(Builtin::AtomicStore)),
    ("lane_id", Function::WarpQuery(Builtin::LaneId)),
    ("warp_size", Function::WarpQuery(Builtin::WarpSize)),
    ("shfl_sync", Function::Shuffle(ShflMode::Idx)),
    ("shfl_up_sync", Function::Shuffle(ShflMode::Up)),
    ("shfl_down_sync", Function::Shuffle(ShflMode::Down)),
    ("shfl_xor_sync", Function::Shuffle(ShflMode::Xor)),
    ("ballot_sync", Function::Vote(Builtin::Ballot)),
    ("all_sync", Function::Vote(Builtin::AllSync)),
    ("any_sync", Function::Vote(Builtin::AnySync)),
    ("activemask", Function::ActiveMask),
    ("sync_warp", Function::SyncWarp),
    ("threadfence_block", Function::Fence(FenceScope::Block)),
    ("threadfence", Function::Fence(FenceScope::Device)),
    ("threadfence_system", Function::Fence(FenceScope::System)),
    ("shared_array", Function::SharedArray),
    ("dynamic_shared_array", Function::DynSharedArray),
    ("FragA", Function::Tensor(TensorFn::Frag(FragKind::A))),
    ("FragB", Function::Tensor(TensorFn::Frag(FragKind::B))),
    ("FragC", Function::Tensor(TensorFn::Frag(FragKind::C))),
    ("mma", Function::Tensor(TensorFn::Mma)),
    ("ldmatrix_x1", Function::Tensor(TensorFn::Ldmatrix { count: 1, trans: false })),
    ("ldmatrix_x2", Function::Tensor(TensorFn::Ldmatrix { count: 2, trans: false })),
    ("ldmatrix_x4", Function::Tensor(TensorFn::Ldmatrix { count: 4, trans: false })),
    ("ldmatrix_x1_trans", Function::Tensor(TensorFn::Ldmatrix { count: 1, trans: true })),
    ("ldmatrix_x2_trans", Function::Tensor(TensorFn::Ldmatrix { count: 2, trans: true })),
    ("ldmatrix_x4_trans", Function::Tensor(TensorFn::Ldmatrix { count: 4, trans: true })),
    ("cp_async", Function::Tensor(TensorFn::CpAsync { bypass_l1: false })),
    ("cp_async_cg", Function::Tensor(TensorFn::CpAsync { bypass_l1: true })),
    ("cp_async_commit", Function::Tensor(TensorFn::CpAsyncCommit)),
    ("cp_async_wait", Function::Tensor(TensorFn::CpAsyncWait)),
    ("tf32_round", Function::Tensor(TensorFn::Tf32Round)),
    ("swizzle", Function::Tensor(TensorFn::Swizzle)),
    ("WgAcc", Function::Tensor(TensorFn::Frag(FragKind::WgAcc))),
    ("wgmma_desc", Function::Tensor(TensorFn::WgmmaDesc)),
    ("wgmma", Function::Tensor(TensorFn::Wgmma)),
    ("wgmma_fence", Function::Tensor(TensorFn::WgmmaFence)),
    ("wgmma_commit", Function::Tensor(TensorFn::WgmmaCommit)),
    ("wgmma_wait", Function::Tensor(TensorFn::WgmmaWait)),
    ("fence_proxy_async", Function::Tensor(TensorFn::FenceProxyAsync)),
    ("setmaxnreg_inc", Function::Tensor(TensorFn::Setmaxnreg(true))),
    ("setmaxnreg_dec", Function::Tensor(TensorFn::Setmaxnreg(false))),
    ("mbarrier_init", Function::Tensor(TensorFn::Mbarrier(TensorOp::MbarrierInit))),
    ("mbarrier_arrive", Function::Tensor(TensorFn::Mbarrier(TensorOp::MbarrierArrive))),
    ("mbarrier_arrive_expect_tx", Function::Tensor(TensorFn::Mbarrier(TensorOp::MbarrierArriveExpectTx))),
    ("mbarrier_try_wait_parity", Function::Tensor(TensorFn::Mbarrier(TensorOp::MbarrierTryWait))),
    ("mbarrier_inval", Function::Tensor(TensorFn::Mbarrier(TensorOp::MbarrierInval))),
    ("cp_async_bulk", Function::Tensor(TensorFn::CpAsyncBulk)),
    ("cp_async_bulk_tensor_2d", Function::Tensor(TensorFn::CpAsyncBulkTensor)),
];

/// The builtin generic types: the tensor-core fragments (`FragA<bf16, 16, 8, 16>`), the
/// warpgroup accumulator (`WgAcc<f32, 128>`) and shared-memory descriptor (`WgDesc<bf16, 64>`).
pub const TYPES: &[(&str, FragKind)] = &[
    ("FragA", FragKind::A),
    ("FragB", FragKind::B),
    ("FragC", FragKind::C),
    ("WgAcc", FragKind::WgAcc),
    ("WgDesc", FragKind::WgDesc),
    ("TensorMap", FragKind::TensorMap),
];

/// The builtin generic type called `name`.
pub fn builtin_type(name: &str) -> Option<FragKind> {
    TYPES.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
}

/// The builtin function called `name`.
pub fn function(name: &str) -> Option<Function> {
    FUNCTIONS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Lanes in a warp, on every NVIDIA GPU kache generates code for and on the host backend.
pub const WARP_SIZE: u32 = 32;

/// Largest static shared array, in bytes (48 KiB is what every target offers without opt-in).
pub const MAX_SHARED_BYTES: u64 = 48 << 10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_math_fn_has_a_row() {
        for d in METHODS {
            assert_eq!(method_def(d.func).name, d.name, "two rows for {:?}", d.func);
        }
        assert_eq!(METHODS.len(), 61, "a MathFn without a row, or a row without a MathFn");
    }
}
