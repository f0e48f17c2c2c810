//! The builtins of checked IR: thread indices, barriers and warp collectives, atomics, array
//! queries and math functions. Their names, signatures and lowering live in `lang::builtins`
//! and `codegen`.

use super::TensorOp;

/// Builtin operations; the list of builtins and their signatures lives in `lang::builtins`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum Builtin {
    /// `thread_idx_x/y/z()`
    ThreadIdx(u8),
    /// `block_idx_x/y/z()`
    BlockIdx(u8),
    /// `block_dim_x/y/z()`
    BlockDim(u8),
    /// `grid_dim_x/y/z()`
    GridDim(u8),
    /// `global_id_x/y/z()`
    GlobalId(u8),
    /// `sync_threads()`
    SyncThreads,
    /// `atomic_add(&mut a[i], v)`: the first argument is an [`ExprKind::Index`] expression naming
    /// the element.
    AtomicAdd,
    /// `atomic_max`
    AtomicMax,
    /// `atomic_min`
    AtomicMin,
    /// `atomic_cas(&mut a[i], expected, new)`
    AtomicCas,
    /// `atomic_sub` (integers)
    AtomicSub,
    /// `atomic_and` (integers)
    AtomicAnd,
    /// `atomic_or` (integers)
    AtomicOr,
    /// `atomic_xor` (integers)
    AtomicXor,
    /// `atomic_exch`: stores the value, returns the old one (integers, `f32`, `f64`)
    AtomicExch,
    /// `atomic_inc(&mut a[i], limit)` on `u32`: `old >= limit ? 0 : old + 1`, as CUDA's
    AtomicInc,
    /// `atomic_dec(&mut a[i], limit)` on `u32`: `old == 0 || old > limit ? limit : old - 1`
    AtomicDec,
    /// `atomic_load(&a[i])`: a relaxed load of a 32- or 64-bit element (never cached in L1
    /// nor hoisted out of a loop), as Rust's `Atomic*::load(Ordering::Relaxed)`
    AtomicLoad,
    /// `atomic_store(&mut a[i], v)`: a relaxed store of a 32- or 64-bit element
    AtomicStore,
    /// `lane_id()`: the thread's lane in its warp, `u32`
    LaneId,
    /// `warp_size()`: 32, `u32`
    WarpSize,
    /// `shfl_sync(mask, v, lane)` and the `up`, `down` and `xor` forms, with an optional
    /// fourth argument `width`
    Shfl(ShflMode),
    /// `ballot_sync(mask, pred) -> u32`
    Ballot,
    /// `all_sync(mask, pred) -> bool`
    AllSync,
    /// `any_sync(mask, pred) -> bool`
    AnySync,
    /// `activemask() -> u32`
    ActiveMask,
    /// `sync_warp(mask)`
    SyncWarp,
    /// `threadfence_block()`, `threadfence()`, `threadfence_system()`
    Fence(FenceScope),
    /// `a.len()`: number of elements.
    Len,
    /// `a.shape(d)`
    Shape,
    /// `a.stride(d)`, in elements.
    Stride,
    /// Float and integer methods.
    Math(MathFn),
    /// Tensor-core operations: `mma`, `ldmatrix`, `cp_async` and their kin (`ir::tensor`).
    Tensor(TensorOp),
    /// `Option::unwrap` and `expect`: `(ok, value)` gives `value`; where `ok` is false, checked
    /// code records a fault at this site (`abi::bounds_sites` numbers it) and ends the thread,
    /// as a failed bounds check does (unchecked code gives `value`, the zero the `None` holds).
    Unwrap,
}

impl Builtin {
    /// A barrier or warp-level operation: every thread of the block (or of the warp) must
    /// reach it together, so code may not be duplicated into divergent paths around it.
    pub fn is_convergent(self) -> bool {
        matches!(
            self,
            Builtin::SyncThreads
                | Builtin::Shfl(_)
                | Builtin::Ballot
                | Builtin::AllSync
                | Builtin::AnySync
                | Builtin::ActiveMask
                | Builtin::SyncWarp
        ) || matches!(self, Builtin::Tensor(t) if t.is_convergent())
    }

    /// An atomic access of an array element: a read-modify-write, a load or a store (its first
    /// argument names the element).
    pub fn is_atomic(self) -> bool {
        matches!(
            self,
            Builtin::AtomicAdd
                | Builtin::AtomicMax
                | Builtin::AtomicMin
                | Builtin::AtomicCas
                | Builtin::AtomicSub
                | Builtin::AtomicAnd
                | Builtin::AtomicOr
                | Builtin::AtomicXor
                | Builtin::AtomicExch
                | Builtin::AtomicInc
                | Builtin::AtomicDec
                | Builtin::AtomicLoad
                | Builtin::AtomicStore
        )
    }

    /// An atomic that writes the element it names: every one but `atomic_load`.
    pub fn writes_element(self) -> bool {
        self.is_atomic() && self != Builtin::AtomicLoad
    }
}

/// Which lane a warp shuffle reads, as PTX's `shfl.sync` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum ShflMode {
    /// `shfl_sync`: a given lane.
    Idx,
    /// `shfl_up_sync`: the lane `delta` below.
    Up,
    /// `shfl_down_sync`: the lane `delta` above.
    Down,
    /// `shfl_xor_sync`: the lane whose number differs by the bits of a mask.
    Xor,
}

/// How far a memory fence orders: the block, the device, or the device and the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum FenceScope {
    /// `threadfence_block()`
    Block,
    /// `threadfence()`
    Device,
    /// `threadfence_system()`
    System,
}

/// Math methods on scalars. Names, arities and which types take them live in one table,
/// `lang::builtins::METHODS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
#[allow(missing_docs)]
pub enum MathFn {
    Abs,
    Sqrt,
    Floor,
    Ceil,
    Round,
    Trunc,
    Min,
    Max,
    MulAdd,
    Exp,
    Exp2,
    Ln,
    Log2,
    Log10,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Atan2,
    Sinh,
    Cosh,
    Tanh,
    Powf,
    Powi,
    Cbrt,
    Hypot,
    WrappingAdd,
    WrappingSub,
    WrappingMul,
    CountOnes,
    LeadingZeros,
    TrailingZeros,
    Erf,
    Erfc,
    ExpM1,
    Ln1p,
    Exp10,
    Rsqrt,
    Copysign,
    IsNan,
    IsFinite,
    IsInfinite,
    Signum,
    Clamp,
    RemEuclid,
    ReverseBits,
    Pow,
    AbsDiff,
    SaturatingAdd,
    SaturatingSub,
    SaturatingMul,
    WrappingDiv,
    WrappingRem,
    WrappingNeg,
    WrappingShl,
    WrappingShr,
    WrappingPow,
    WrappingAbs,
    /// `x.sin_cos()`: the tuple `(x.sin(), x.cos())`, computed together.
    SinCos,
}
