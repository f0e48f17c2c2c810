//! Tensor-core operations of checked IR: the warp-level matrix multiply-accumulate (`mma`) and
//! its shapes, the fragment types that hold a thread's part of its operands, `ldmatrix`, the
//! asynchronous copies (`cp_async`) and the architecture each needs. The fragment layouts here
//! (which element of a matrix each lane holds) are the PTX ISA's ("Matrix fragments for
//! mma.m16n8k*"); the host backend's emulation and the language reference follow them. On
//! sm_90a, the warpgroup MMA (`wgmma`): its accumulator (`WgAcc`), its shared-memory matrix
//! descriptors (`WgDesc`) and their layout ("Matrix Descriptor Format", "Register Fragments
//! for wgmma.m64nNk16").

use super::Scalar;

/// Which operand of an `mma` a fragment holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum FragKind {
    /// `FragA<T, M, N, K>`: the M x K matrix A, row-major.
    A,
    /// `FragB<T, M, N, K>`: the K x N matrix B, column-major.
    B,
    /// `FragC<T, M, N>`: the M x N accumulator (C, and the result D).
    C,
    /// `WgAcc<f32, N>`: the 64 x N accumulator of a warpgroup's `wgmma` (4 warps, 128 threads).
    WgAcc,
    /// `WgDesc<T, R>`: a shared-memory matrix descriptor of R rows of 16-bit elements, K-major.
    WgDesc,
    /// `TensorMap<T, W, H, S>`: a tiled tensor map (TMA descriptor) of a 2-d array of `T`,
    /// boxes of H rows of W elements, swizzled by `S` bytes (0, 32, 64 or 128); passed by the
    /// host ([`TENSOR_MAP_FIELD`]).
    TensorMap,
}

/// The one field of a `TensorMap`, which no kernel can name: the address of the descriptor the
/// launch passes (the driver's `CUtensorMap` in global memory on a GPU, an
/// `host_calls::HostTensorMap` on the host). Only a launch makes one: a kernel cannot build or read it.
pub const TENSOR_MAP_FIELD: &str = "(tensor map)";

/// The name of the kernel type `TensorMap<elem, w, h, swizzle>`, as the checker names the
/// struct it stands for and as a launch checks a host tensor map against it.
pub fn tensor_map_type_name(elem: &str, w: u64, h: u64, swizzle: u64) -> String {
    format!("TensorMap<{elem}, {w}, {h}, {swizzle}>")
}

/// The widest box row and the most rows of a tensor map's box (the driver's limit).
pub const TENSOR_MAP_MAX_BOX: u64 = 256;

/// The hardware's rules for a tensor map's box of `h` rows of `w` elements of `elem_size` bytes
/// (unknown in a generic definition), swizzled by `swizzle` bytes: `w` and `h` from 1 to 256, a
/// swizzle of 0, 32, 64 or 128, a row a multiple of 16 bytes and, swizzled, exactly the
/// swizzle's bytes. The kernel type's checker and `TensorMap::tiled` both ask it.
pub fn tensor_map_box_rule(w: u64, h: u64, swizzle: u64, elem_size: Option<u64>) -> Result<(), String> {
    if !(1..=TENSOR_MAP_MAX_BOX).contains(&w) || !(1..=TENSOR_MAP_MAX_BOX).contains(&h) {
        return Err(format!("a box of {h} rows of {w} elements: each is 1 to {TENSOR_MAP_MAX_BOX}"));
    }
    if ![0, 32, 64, 128].contains(&swizzle) {
        return Err(format!("a swizzle of {swizzle} bytes: tensor maps swizzle 0, 32, 64 or 128 bytes"));
    }
    let Some(size) = elem_size else { return Ok(()) };
    let row = w * size;
    if !row.is_multiple_of(16) {
        return Err(format!("a box row of {w} elements is {row} bytes, not a multiple of 16"));
    }
    if swizzle != 0 && row != swizzle {
        return Err(format!("a box row of {row} bytes swizzled by {swizzle}: a swizzled row is exactly the swizzle's bytes"));
    }
    Ok(())
}

/// The byte offset in shared memory of byte `o` of a box whose rows are swizzled by `swizzle`
/// bytes (0, 32, 64 or 128), the destination aligned to `8 * swizzle`: the 16-byte chunk index
/// (bits 4..) XOR the row-of-128-bytes index (bits 7..), as the TMA writes and
/// `swizzle::<B, 4, 3>` of bytes reads.
pub fn tensor_map_swizzle(o: u64, swizzle: u64) -> u64 {
    if swizzle < 32 {
        return o;
    }
    let mask = swizzle / 16 - 1;
    o ^ (((o >> 7) & mask) << 4)
}

impl FragKind {
    /// The type's name in the language.
    pub fn name(self) -> &'static str {
        match self {
            FragKind::A => "FragA",
            FragKind::B => "FragB",
            FragKind::C => "FragC",
            FragKind::WgAcc => "WgAcc",
            FragKind::WgDesc => "WgDesc",
            FragKind::TensorMap => "TensorMap",
        }
    }
}

/// One shape and element type of `mma.sync.aligned.mMnNkK.row.col`: `ab` is the type of A and
/// B (`f32` standing for `tf32`), `acc` that of the accumulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct MmaShape {
    /// Rows of A and of the accumulator.
    pub m: u8,
    /// Columns of B and of the accumulator.
    pub n: u8,
    /// Columns of A, rows of B.
    pub k: u8,
    /// Element type of A and B: `f16`, `bf16`, `f32` (as `tf32`: the low 13 bits of the
    /// mantissa are ignored), `i8` or `u8`.
    pub ab: Scalar,
    /// Element type of the accumulator: `f32`, or `i32` for 8-bit integers.
    pub acc: Scalar,
}

const fn shape(m: u8, n: u8, k: u8, ab: Scalar, acc: Scalar) -> MmaShape {
    MmaShape { m, n, k, ab, acc }
}

impl MmaShape {
    /// Every shape `mma` supports.
    pub const ALL: [MmaShape; 10] = [
        shape(16, 8, 16, Scalar::F16, Scalar::F32),
        shape(16, 8, 16, Scalar::Bf16, Scalar::F32),
        shape(16, 8, 8, Scalar::F16, Scalar::F32),
        shape(16, 8, 8, Scalar::Bf16, Scalar::F32),
        shape(16, 8, 8, Scalar::F32, Scalar::F32),
        shape(16, 8, 4, Scalar::F32, Scalar::F32),
        shape(16, 8, 32, Scalar::I8, Scalar::I32),
        shape(16, 8, 32, Scalar::U8, Scalar::I32),
        shape(16, 8, 16, Scalar::I8, Scalar::I32),
        shape(16, 8, 16, Scalar::U8, Scalar::I32),
    ];

    /// The shape of A and B elements `ab` and dimensions `m n k`, if `mma` has it.
    pub fn find(m: u64, n: u64, k: u64, ab: Scalar) -> Option<MmaShape> {
        MmaShape::ALL.into_iter().find(|s| s.m as u64 == m && s.n as u64 == n && s.k as u64 == k && s.ab == ab)
    }

    /// The accumulator type of A and B elements of type `ab`, if any shape takes them.
    pub fn acc_of(ab: Scalar) -> Option<Scalar> {
        MmaShape::ALL.into_iter().find(|s| s.ab == ab).map(|s| s.acc)
    }

    /// Whether some shape has these dimensions (for any element type).
    pub fn has_dims(m: u64, n: u64, k: u64) -> bool {
        MmaShape::ALL.into_iter().any(|s| s.m as u64 == m && s.n as u64 == n && s.k as u64 == k)
    }

    /// Elements of a fragment of this shape each thread holds: A's M·K, B's K·N and the
    /// accumulator's M·N, over the warp's 32 lanes.
    pub fn elems(self, kind: FragKind) -> u32 {
        let (m, n, k) = (self.m as u32, self.n as u32, self.k as u32);
        match kind {
            FragKind::A => m * k / 32,
            FragKind::B => k * n / 32,
            FragKind::C => m * n / 32,
            // Not `mma` operands.
            FragKind::WgAcc | FragKind::WgDesc | FragKind::TensorMap => 0,
        }
    }

    /// The element type of a fragment of this shape.
    pub fn elem(self, kind: FragKind) -> Scalar {
        if kind == FragKind::C { self.acc } else { self.ab }
    }

    /// The PTX type name of A and B (`tf32` for `f32`, `s8` for `i8`).
    pub fn ptx_ab(self) -> &'static str {
        match self.ab {
            Scalar::F16 => "f16",
            Scalar::Bf16 => "bf16",
            Scalar::F32 => "tf32",
            Scalar::I8 => "s8",
            Scalar::U8 => "u8",
            _ => "b32",
        }
    }

    /// The least `sm` kache emits the instruction for: sm_80 (`m16n8k8` of `f16` came with
    /// sm_75, but in PTX ISA 6.5, later than the 6.3 kache emits for sm_75).
    pub fn min_sm(self) -> u32 {
        80
    }

    /// The (row, column) of the matrix that element `i` of lane `lane`'s fragment holds, as the
    /// PTX ISA lays fragments out: `group = lane / 4` and `t = lane % 4` pick the rows and the
    /// columns; an A fragment's rows are M and columns K, a B fragment's rows K and columns N.
    pub fn coord(self, kind: FragKind, lane: u32, i: u32) -> (u32, u32) {
        let (g, t) = (lane / 4, lane % 4);
        // Elements per 32-bit register: 2 for 16-bit types, 4 for 8-bit ones, 1 for 32-bit.
        let per = 4 / self.ab.size() as u32;
        match kind {
            FragKind::C | FragKind::WgAcc | FragKind::WgDesc | FragKind::TensorMap => (g + 8 * ((i / 2) % 2), 2 * t + i % 2),
            FragKind::A => {
                let (reg, sub) = (i / per, i % per);
                // Registers cycle through (row g, row g+8) and then move K on by 4 registers' width.
                let row = g + 8 * (reg % 2);
                let col = (per * t + sub) + (reg / 2) * (4 * per);
                // tf32 m16n8k4 has one register per row half and no K step.
                if self.ab == Scalar::F32 && self.k == 4 {
                    return (g + 8 * i, t);
                }
                (row, col)
            }
            FragKind::B => {
                let (reg, sub) = (i / per, i % per);
                (per * t + sub + reg * (4 * per), g)
            }
        }
    }
}

/// A tensor-core operation (or one of the copies that feed it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum TensorOp {
    /// `mma(a, b, c) -> d`: D = A·B + C across the warp (`mma.sync.aligned`).
    Mma(MmaShape),
    /// `ldmatrix_x{count}(&tile[i])` (`trans`: `_trans`): `count` 8 x 8 matrices of 16-bit
    /// elements (or 8 x 4 of 32-bit ones, not transposed) from shared memory, each lane giving
    /// one row's first element.
    Ldmatrix {
        /// Matrices: 1, 2 or 4.
        count: u8,
        /// `.trans`: each lane receives a column pair instead of a row pair.
        trans: bool,
    },
    /// `cp_async::<BYTES>(&mut dst[i], &src[j])` and `cp_async_cg`: an asynchronous copy of
    /// `bytes` bytes from global to shared memory.
    CpAsync {
        /// 4, 8 or 16.
        bytes: u8,
        /// `.cg`: cached in L2 only (16 bytes); else `.ca`.
        bypass_l1: bool,
    },
    /// `cp_async_commit()`: closes the group of the thread's copies issued since the last one.
    CpAsyncCommit,
    /// `cp_async_wait::<N>()`: waits until at most `N` of the thread's groups are pending.
    CpAsyncWait(u8),
    /// `tf32_round(x)`: `x` rounded to the nearest `tf32` (ties away from zero), as
    /// `cvt.rna.tf32.f32`: the value an `f32` A or B element stands for exactly.
    Tf32Round,
    /// `wgmma_desc::<SWIZZLE, ROWS>(&tile[i])`: the descriptor of a K-major tile of `rows` rows
    /// of `swizzle` bytes each (32, 64 or 128), swizzled in 8-row atoms as the hardware does,
    /// starting at element `i` (the atom's first row, plus a K offset of a multiple of 32 bytes).
    WgmmaDesc {
        /// Bytes per row, and the swizzle's span: 32, 64 or 128.
        swizzle: u8,
        /// Rows the descriptor covers: 64 for an A operand, N for a B.
        rows: u16,
    },
    /// `wgmma(a, b, acc)`: D = A·Bᵀ + C for the warpgroup, A 64 x K and Bᵀ N x K from
    /// descriptors, C and D a `WgAcc<f32, N>` (`wgmma.mma_async.sync.aligned.m64nNk16` of
    /// 16-bit floats, `m64nNk8` of `f32` read as tf32: K is 32 bytes of a row).
    Wgmma {
        /// N: a multiple of 8 from 8 to 256.
        n: u16,
        /// `f16`, `bf16` or `f32` (as tf32).
        ab: Scalar,
    },
    /// `wgmma_fence()`: orders the warpgroup's register accesses before the next `wgmma`.
    WgmmaFence,
    /// `wgmma_commit()`: closes a group of the warpgroup's `wgmma`s.
    WgmmaCommit,
    /// `wgmma_wait::<N>(acc) -> acc`: waits until at most `N` groups are pending; the
    /// accumulator passes through, so that nothing reads it earlier.
    WgmmaWait(u8),
    /// `fence_proxy_async()`: makes the thread's shared-memory writes visible to the async
    /// proxy (`wgmma`'s reads), `fence.proxy.async.shared::cta`.
    FenceProxyAsync,
    /// `setmaxnreg_inc::<N>()` / `setmaxnreg_dec::<N>()`: the warpgroup's threads take (or give
    /// back) registers up to (down to) `N` each, `setmaxnreg.{inc,dec}.sync.aligned.u32 N`.
    Setmaxnreg {
        /// `inc` (true) or `dec`.
        inc: bool,
        /// Registers per thread after it: a multiple of 8 from 24 to 256.
        regs: u16,
    },
    /// `mbarrier_init(&mut bar[i], count)`: a barrier expecting `count` arrivals per phase.
    MbarrierInit,
    /// `mbarrier_arrive(&mut bar[i])`: one arrival.
    MbarrierArrive,
    /// `mbarrier_arrive_expect_tx(&mut bar[i], bytes)`: expects `bytes` more of asynchronous
    /// copies in the current phase, and arrives.
    MbarrierArriveExpectTx,
    /// `mbarrier_try_wait_parity(&bar[i], parity) -> bool`: whether the phase of parity
    /// `parity` has completed (waiting a while for it on the GPU).
    MbarrierTryWait,
    /// `mbarrier_inval(&mut bar[i])`: the barrier's memory may be used for something else.
    MbarrierInval,
    /// `cp_async_bulk::<BYTES>(&mut dst[i], &src[j], &mut bar[k])`: a bulk copy of `bytes`
    /// from global to shared memory, completing `bytes` of the barrier's expected bytes
    /// (`cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`).
    CpAsyncBulk {
        /// A multiple of 16.
        bytes: u32,
    },
    /// `cp_async_bulk_tensor_2d(&mut dst[i], &map, x, y, &mut bar[k])`: the box of `map` at
    /// element coordinates (`x`, `y`) (column, row; out of the array read as zeros) copied to
    /// shared `dst` by the tensor memory accelerator, swizzled as the map says, completing the
    /// box's bytes on the barrier
    /// (`cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`).
    CpAsyncBulkTensor {
        /// Bytes of the box (its element size times W times H).
        bytes: u32,
        /// The map's swizzle in bytes: 0, 32, 64 or 128.
        swizzle: u8,
    },
}

/// Each `wgmma` multiplies a K of 32 bytes of a row: 16 elements of `f16` or `bf16`
/// (`m64nNk16`), 8 of `f32` read as tf32 (`m64nNk8`).
pub const WGMMA_K_BYTES: u32 = 32;

/// The K of one `wgmma` on elements of `ab`: 16 for 16-bit floats, 8 for `f32` (as tf32).
pub fn wgmma_k(ab: Scalar) -> u32 {
    WGMMA_K_BYTES * 8 / ab.bits()
}

/// The descriptor's swizzle mode for rows of `bytes` bytes (bits 62..64 of a descriptor):
/// 1 for 128, 2 for 64, 3 for 32.
pub fn wgmma_swizzle_mode(bytes: u32) -> u64 {
    match bytes {
        128 => 1,
        64 => 2,
        _ => 3,
    }
}

/// The bytes per row of a swizzle mode (the inverse of [`wgmma_swizzle_mode`]); 0 for a mode
/// kache does not build (no swizzle).
pub fn wgmma_swizzle_bytes(mode: u64) -> u32 {
    match mode {
        1 => 128,
        2 => 64,
        3 => 32,
        _ => 0,
    }
}

/// The (row, column) of the 64 x N accumulator that element `i` of thread `rank` (0..128 in
/// its warpgroup) holds: warp `rank / 32` holds rows `16 w .. 16 w + 16`, laid out as `mma`'s
/// 16 x 8 accumulators side by side along N.
pub fn wgmma_acc_coord(rank: u32, i: u32) -> (u32, u32) {
    let (w, lane) = (rank / 32, rank % 32);
    let (g, t) = (lane / 4, lane % 4);
    (16 * w + g + 8 * ((i / 2) % 2), 8 * (i / 4) + 2 * t + i % 2)
}

impl TensorOp {
    /// The least `sm` that kache emits the operation for (`ldmatrix` came with sm_75, in PTX
    /// ISA 6.5, later than the 6.3 kache emits for sm_75).
    pub fn min_sm(self) -> u32 {
        match self {
            TensorOp::Mma(s) => s.min_sm(),
            TensorOp::Ldmatrix { .. }
            | TensorOp::CpAsync { .. }
            | TensorOp::CpAsyncCommit
            | TensorOp::CpAsyncWait(_)
            | TensorOp::Tf32Round => 80,
            TensorOp::WgmmaDesc { .. }
            | TensorOp::Wgmma { .. }
            | TensorOp::WgmmaFence
            | TensorOp::WgmmaCommit
            | TensorOp::WgmmaWait(_)
            | TensorOp::Setmaxnreg { .. }
            | TensorOp::FenceProxyAsync
            | TensorOp::MbarrierArriveExpectTx
            | TensorOp::MbarrierTryWait
            | TensorOp::CpAsyncBulk { .. }
            | TensorOp::CpAsyncBulkTensor { .. } => 90,
            TensorOp::MbarrierInit | TensorOp::MbarrierArrive | TensorOp::MbarrierInval => 80,
        }
    }

    /// Whether the architecture must be the `a` variant (`sm_90a`): the warpgroup MMA is not
    /// in sm_90's forward-compatible PTX.
    pub fn needs_accelerated(self) -> bool {
        matches!(
            self,
            TensorOp::WgmmaDesc { .. }
                | TensorOp::Wgmma { .. }
                | TensorOp::WgmmaFence
                | TensorOp::WgmmaCommit
                | TensorOp::WgmmaWait(_)
                | TensorOp::Setmaxnreg { .. }
        )
    }

    /// A warp-wide operation: every lane of the warp must reach it together (the `wgmma` forms
    /// every lane of the warpgroup).
    pub fn is_convergent(self) -> bool {
        matches!(
            self,
            TensorOp::Mma(_)
                | TensorOp::Ldmatrix { .. }
                | TensorOp::Wgmma { .. }
                | TensorOp::WgmmaFence
                | TensorOp::WgmmaCommit
                | TensorOp::WgmmaWait(_)
                | TensorOp::Setmaxnreg { .. }
        )
    }

    /// The name a kernel calls it by (for messages).
    pub fn name(self) -> String {
        match self {
            TensorOp::Mma(_) => "mma".into(),
            TensorOp::Ldmatrix { count, trans } => format!("ldmatrix_x{count}{}", if trans { "_trans" } else { "" }),
            TensorOp::CpAsync { bypass_l1: true, .. } => "cp_async_cg".into(),
            TensorOp::CpAsync { .. } => "cp_async".into(),
            TensorOp::CpAsyncCommit => "cp_async_commit".into(),
            TensorOp::CpAsyncWait(_) => "cp_async_wait".into(),
            TensorOp::Tf32Round => "tf32_round".into(),
            TensorOp::WgmmaDesc { .. } => "wgmma_desc".into(),
            TensorOp::Wgmma { .. } => "wgmma".into(),
            TensorOp::WgmmaFence => "wgmma_fence".into(),
            TensorOp::WgmmaCommit => "wgmma_commit".into(),
            TensorOp::WgmmaWait(_) => "wgmma_wait".into(),
            TensorOp::FenceProxyAsync => "fence_proxy_async".into(),
            TensorOp::Setmaxnreg { inc: true, .. } => "setmaxnreg_inc".into(),
            TensorOp::Setmaxnreg { inc: false, .. } => "setmaxnreg_dec".into(),
            TensorOp::MbarrierInit => "mbarrier_init".into(),
            TensorOp::MbarrierArrive => "mbarrier_arrive".into(),
            TensorOp::MbarrierArriveExpectTx => "mbarrier_arrive_expect_tx".into(),
            TensorOp::MbarrierTryWait => "mbarrier_try_wait_parity".into(),
            TensorOp::MbarrierInval => "mbarrier_inval".into(),
            TensorOp::CpAsyncBulk { .. } => "cp_async_bulk".into(),
            TensorOp::CpAsyncBulkTensor { .. } => "cp_async_bulk_tensor_2d".into(),
        }
    }

    /// The host backend's code for an `mma` shape or an `ldmatrix` form, passed to the warp
    /// rendezvous (`abi::warp_op::MMA`, `LDMATRIX`); see [`TensorOp::from_warp_code`].
    pub fn warp_code(self) -> u32 {
        match self {
            TensorOp::Mma(s) => MmaShape::ALL.iter().position(|x| *x == s).unwrap_or(0) as u32,
            TensorOp::Ldmatrix { count, trans } => count as u32 | (trans as u32) << 8,
            TensorOp::Wgmma { n, ab } => {
                let t = match ab {
                    Scalar::F16 => 0,
                    Scalar::Bf16 => 1,
                    _ => 2,
                };
                n as u32 | t << 16
            }
            _ => 0,
        }
    }
}

/// The `wgmma` (N and element type) whose [`TensorOp::warp_code`] is `code`.
pub fn wgmma_of_warp_code(code: u32) -> Option<(u32, Scalar)> {
    let n = code & 0xffff;
    let ab = match code >> 16 {
        0 => Scalar::F16,
        1 => Scalar::Bf16,
        2 => Scalar::F32,
        _ => return None,
    };
    (n.is_multiple_of(8) && (8..=256).contains(&n)).then_some((n, ab))
}

/// The `mma` shape whose [`TensorOp::warp_code`] is `code`.
pub fn mma_of_warp_code(code: u32) -> Option<MmaShape> {
    MmaShape::ALL.get(code as usize).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element of every matrix is held by exactly one (lane, element) of its fragments.
    #[test]
    fn fragments_cover_each_matrix_once() {
        for s in MmaShape::ALL {
            for (kind, rows, cols) in [(FragKind::A, s.m, s.k), (FragKind::B, s.k, s.n), (FragKind::C, s.m, s.n)] {
                let mut seen = vec![0u32; rows as usize * cols as usize];
                for lane in 0..32 {
                    for i in 0..s.elems(kind) {
                        let (r, c) = s.coord(kind, lane, i);
                        assert!(r < rows as u32 && c < cols as u32, "{s:?} {kind:?} lane {lane} elem {i}: ({r}, {c})");
                        seen[(r * cols as u32 + c) as usize] += 1;
                    }
                }
                assert!(seen.iter().all(|n| *n == 1), "{s:?} {kind:?} covers {seen:?}");
            }
        }
    }

    /// Every element of a 64 x N warpgroup accumulator is held by exactly one thread's element.
    #[test]
    fn wgmma_accumulator_covers_once() {
        for n in [8u32, 64, 256] {
            let mut seen = vec![0u32; 64 * n as usize];
            for rank in 0..128 {
                for i in 0..n / 2 {
                    let (r, c) = wgmma_acc_coord(rank, i);
                    seen[(r * n + c) as usize] += 1;
                }
            }
            assert!(seen.iter().all(|x| *x == 1), "n = {n}");
        }
        // The PTX ISA's figure: thread 37 (warp 1, lane 5) holds (17, 2), (17, 3), (25, 2) ...
        assert_eq!(wgmma_acc_coord(37, 0), (17, 2));
        assert_eq!(wgmma_acc_coord(37, 3), (25, 3));
        assert_eq!(wgmma_acc_coord(37, 4), (17, 10));
        assert_eq!(wgmma_of_warp_code(TensorOp::Wgmma { n: 128, ab: Scalar::Bf16 }.warp_code()), Some((128, Scalar::Bf16)));
        assert_eq!(wgmma_of_warp_code(TensorOp::Wgmma { n: 64, ab: Scalar::F16 }.warp_code()), Some((64, Scalar::F16)));
        assert_eq!(wgmma_of_warp_code(TensorOp::Wgmma { n: 256, ab: Scalar::F32 }.warp_code()), Some((256, Scalar::F32)));
        assert_eq!(wgmma_of_warp_code(3 << 16 | 64), None);
        assert_eq!((wgmma_k(Scalar::Bf16), wgmma_k(Scalar::F32)), (16, 8));
    }

    /// Spot checks against the PTX ISA's figures.
    #[test]
    fn layouts_are_the_ptx_isas() {
        let bf = MmaShape::find(16, 8, 16, Scalar::Bf16).unwrap();
        // Lane 5: group 1, thread 1.
        assert_eq!(bf.coord(FragKind::A, 5, 0), (1, 2));
        assert_eq!(bf.coord(FragKind::A, 5, 3), (9, 3));
        assert_eq!(bf.coord(FragKind::A, 5, 4), (1, 10));
        assert_eq!(bf.coord(FragKind::A, 5, 7), (9, 11));
        assert_eq!(bf.coord(FragKind::B, 5, 1), (3, 1));
        assert_eq!(bf.coord(FragKind::B, 5, 2), (10, 1));
        assert_eq!(bf.coord(FragKind::C, 5, 3), (9, 3));
        let tf = MmaShape::find(16, 8, 8, Scalar::F32).unwrap();
        assert_eq!(tf.coord(FragKind::A, 5, 1), (9, 1));
        assert_eq!(tf.coord(FragKind::A, 5, 2), (1, 5));
        assert_eq!(tf.coord(FragKind::B, 5, 1), (5, 1));
        let s8 = MmaShape::find(16, 8, 32, Scalar::I8).unwrap();
        assert_eq!(s8.coord(FragKind::A, 5, 5), (9, 5));
        assert_eq!(s8.coord(FragKind::A, 5, 9), (1, 21));
        assert_eq!(s8.coord(FragKind::B, 5, 6), (22, 1));
        let h8 = MmaShape::find(16, 8, 8, Scalar::F16).unwrap();
        assert_eq!(h8.coord(FragKind::A, 5, 2), (9, 2));
        assert_eq!(h8.coord(FragKind::B, 5, 1), (3, 1));
        let tf4 = MmaShape::find(16, 8, 4, Scalar::F32).unwrap();
        assert_eq!(tf4.coord(FragKind::A, 5, 1), (9, 1));
        assert_eq!(tf4.coord(FragKind::B, 5, 0), (1, 1));
    }
}
