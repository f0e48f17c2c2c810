//! The host backend's tensor-core collectives: what `mma`, `ldmatrix` and `wgmma` give each
//! lane of a warp, computed once every lane has reached the rendezvous with its buffer
//! (`abi::warp_op::MMA`, `LDMATRIX`), as the PTX ISA defines them (fragment layouts by
//! `ir::MmaShape::coord`).
//!
//! `mma` on integers is exact (`i32` arithmetic wraps, as the instruction's without
//! `.satfinite`). On floats each element of D is the exact sum of C and the products, rounded
//! once to `f32` (products of `f16`, `bf16` and `tf32` values are exact in `f64`, and so is
//! their sum wherever it needs no more than 53 bits); `tf32` operands are the `f32` values with
//! their 13 low mantissa bits cleared, as the tensor cores read them. NVIDIA does not document
//! how its tensor cores round sums, so a GPU's result may differ from this in the last bits of
//! an `f32` when the exact sum does not fit one; where it does (integers, short sums of values
//! with few significant bits) the two agree to the bit.

use crate::ir::{FragKind, MmaShape, Scalar, mma_of_warp_code, wgmma_acc_coord, wgmma_k, wgmma_of_warp_code, wgmma_swizzle_bytes};

const WARP: usize = 32;

/// Answers the collective `op` (`MMA` or `LDMATRIX`, form `code`) for a whole warp, whose
/// lanes' buffers are at `bufs`. An error for a code no build emits.
///
/// # Safety
///
/// Each of `bufs` is the address of a live buffer of the lane's, laid out as `abi::warp_op`
/// says for `op`; for `LDMATRIX` each address it holds points to 16 readable bytes; for
/// `WGMMA` its descriptors were made by `wgmma_desc` of tiles whose rows are readable.
pub(crate) unsafe fn collective(op: u32, code: u32, bufs: &[u64; WARP]) -> Result<(), String> {
    match op {
        crate::abi::warp_op::MMA => {
            let shape = mma_of_warp_code(code).ok_or_else(|| format!("no mma shape numbered {code}"))?;
            // SAFETY: the caller's promise.
            unsafe { mma(shape, bufs) };
            Ok(())
        }
        crate::abi::warp_op::LDMATRIX => {
            let (count, trans) = ((code & 0xff) as usize, code & 0x100 != 0);
            if !matches!(count, 1 | 2 | 4) {
                return Err(format!("no ldmatrix of {count} matrices"));
            }
            // SAFETY: the caller's promise.
            unsafe { ldmatrix(count, trans, bufs) };
            Ok(())
        }
        crate::abi::warp_op::WGMMA => {
            let (n, ab) = wgmma_of_warp_code(code).ok_or_else(|| format!("no wgmma numbered {code}"))?;
            // SAFETY: the caller's promise.
            unsafe { wgmma(n, ab, bufs) };
            Ok(())
        }
        _ => Err(format!("warp operation {op} is not a tensor-core collective")),
    }
}

/// Element `i` of a fragment whose packed bytes are `bytes`, as a number.
fn element(bytes: &[u8], s: Scalar, i: usize) -> f64 {
    let at = |n: usize| &bytes[i * n..i * n + n];
    match s {
        Scalar::F16 => half::f16::from_le_bytes([at(2)[0], at(2)[1]]).to_f64(),
        Scalar::Bf16 => half::bf16::from_le_bytes([at(2)[0], at(2)[1]]).to_f64(),
        // tf32: the tensor cores read the top 19 bits.
        Scalar::F32 => f32::from_bits(u32::from_le_bytes([at(4)[0], at(4)[1], at(4)[2], at(4)[3]]) & 0xffff_e000) as f64,
        Scalar::I8 => at(1)[0] as i8 as f64,
        Scalar::U8 => at(1)[0] as f64,
        _ => 0.0,
    }
}

/// D = A·B + C for every lane of the warp.
///
/// # Safety
///
/// As [`collective`]: each buffer holds A's 4 words, B's 2 and C's 4 (40 bytes).
unsafe fn mma(s: MmaShape, bufs: &[u64; WARP]) {
    let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
    let mut a = vec![0f64; m * k];
    let mut b = vec![0f64; k * n];
    let mut c = vec![[0u8; 4]; m * n];
    for (lane, addr) in bufs.iter().enumerate() {
        let mut words = [0u8; 40];
        // SAFETY: the caller's promise: 40 readable bytes at `addr`.
        unsafe { std::ptr::copy_nonoverlapping(*addr as usize as *const u8, words.as_mut_ptr(), 40) };
        let l = lane as u32;
        for i in 0..s.elems(FragKind::A) {
            let (r, col) = s.coord(FragKind::A, l, i);
            a[r as usize * k + col as usize] = element(&words[..16], s.ab, i as usize);
        }
        for i in 0..s.elems(FragKind::B) {
            let (r, col) = s.coord(FragKind::B, l, i);
            b[r as usize * n + col as usize] = element(&words[16..24], s.ab, i as usize);
        }
        for i in 0..4u32 {
            let (r, col) = s.coord(FragKind::C, l, i);
            let at = 24 + 4 * i as usize;
            c[r as usize * n + col as usize] = [words[at], words[at + 1], words[at + 2], words[at + 3]];
        }
    }
    let mut d = vec![[0u8; 4]; m * n];
    for r in 0..m {
        for col in 0..n {
            let cv = c[r * n + col];
            d[r * n + col] = if s.acc == Scalar::I32 {
                // Products of 8-bit integers and their sum over K <= 32 are exact in i64.
                let sum: i64 = (0..k).map(|x| a[r * k + x] as i64 * b[x * n + col] as i64).sum();
                i32::from_le_bytes(cv).wrapping_add(sum as i32).to_le_bytes()
            } else {
                let sum: f64 = (0..k).map(|x| a[r * k + x] * b[x * n + col]).sum::<f64>() + f32::from_le_bytes(cv) as f64;
                (sum as f32).to_le_bytes()
            };
        }
    }
    for (lane, addr) in bufs.iter().enumerate() {
        let mut out = [0u8; 16];
        for i in 0..4u32 {
            let (r, col) = s.coord(FragKind::C, lane as u32, i);
            out[4 * i as usize..4 * i as usize + 4].copy_from_slice(&d[r as usize * n + col as usize]);
        }
        // SAFETY: the caller's promise: bytes 24..40 of the buffer are the lane's to receive D.
        unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), (*addr as usize + 24) as *mut u8, 16) };
    }
}

/// `ldmatrix`: lanes `8j .. 8j + 8` give the rows of matrix `j`; lane `l` receives, in word `j`,
/// row `l / 4`'s elements `2 (l % 4)` and the next (`trans`: those of the column).
///
/// # Safety
///
/// As [`collective`]: each buffer holds the row's address and 4 words for the result, and each
/// row address of the matrices loaded points to 16 readable bytes.
unsafe fn ldmatrix(count: usize, trans: bool, bufs: &[u64; WARP]) {
    let mut rows = [[0u16; 8]; WARP];
    for (r, row) in rows.iter_mut().enumerate().take(8 * count) {
        // SAFETY: the caller's promise: the buffer's first 8 bytes are the row's address.
        let addr = unsafe { std::ptr::read_unaligned(bufs[r] as usize as *const u64) };
        let mut bytes = [0u8; 16];
        // SAFETY: the caller's promise: 16 readable bytes at the row's address.
        unsafe { std::ptr::copy_nonoverlapping(addr as usize as *const u8, bytes.as_mut_ptr(), 16) };
        for (c, v) in row.iter_mut().enumerate() {
            *v = u16::from_le_bytes([bytes[2 * c], bytes[2 * c + 1]]);
        }
    }
    for (lane, addr) in bufs.iter().enumerate() {
        let (g, t) = (lane / 4, lane % 4);
        let mut out = [0u8; 16];
        for j in 0..count {
            let m = &rows[8 * j..8 * j + 8];
            let (lo, hi) = if trans { (m[2 * t][g], m[2 * t + 1][g]) } else { (m[g][2 * t], m[g][2 * t + 1]) };
            out[4 * j..4 * j + 4].copy_from_slice(&(lo as u32 | (hi as u32) << 16).to_le_bytes());
        }
        // SAFETY: the caller's promise: bytes 8..24 of the buffer receive the words.
        unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), (*addr as usize + 8) as *mut u8, 4 * count) };
    }
}

/// Element `(row, k)` of the K-major tile a host `wgmma_desc` describes: the tile's address in
/// bits 0..62, the swizzle mode in bits 62..64. Rows are the swizzle's bytes apart, 8-row atoms
/// 8 rows apart, and the address read is swizzled as the hardware swizzles it: bits 4.. xor-ed
/// with bits 7.. (3 of them for 128-byte rows, 2 for 64, 1 for 32).
///
/// # Safety
///
/// The descriptor was made by `wgmma_desc` (checked, or promised by an unchecked launch's
/// caller, to cover `row`), so the address read is inside a live shared buffer.
unsafe fn tile_element(desc: u64, row: u32, k: u32, ab: Scalar) -> f64 {
    let bytes = wgmma_swizzle_bytes(desc >> 62) as u64;
    let start = desc & ((1 << 62) - 1);
    let size = ab.size() as u64;
    let linear = start + row as u64 * bytes + size * k as u64;
    let mask = bytes / 16 - 1;
    let addr = linear ^ (((linear >> 7) & mask) << 4);
    let mut bits = [0u8; 4];
    // SAFETY: the caller's promise (an element never straddles a 16-byte chunk, so the
    // swizzle moves it whole); `bits` holds the element's 2 or 4 bytes.
    unsafe { std::ptr::copy_nonoverlapping(addr as usize as *const u8, bits.as_mut_ptr(), size as usize) };
    element(&bits[..size as usize], ab, 0)
}

/// `wgmma`: each lane's elements of D = A·Bᵀ + C, its rows of A (64 x 16) and all of Bᵀ
/// (N x 16) read through the descriptors; each element the exact sum rounded once to `f32`.
///
/// # Safety
///
/// As [`collective`]: each buffer holds two descriptors, the lane's rank and N / 2 `f32`s.
unsafe fn wgmma(n: u32, ab: Scalar, bufs: &[u64; WARP]) {
    for addr in bufs {
        let base = *addr as usize;
        // SAFETY: the caller's promise: the buffer's first 24 bytes are the descriptors and rank.
        let (da, db, rank) = unsafe {
            (
                std::ptr::read_unaligned(base as *const u64),
                std::ptr::read_unaligned((base + 8) as *const u64),
                std::ptr::read_unaligned((base + 16) as *const u32),
            )
        };
        for i in 0..n / 2 {
            let (row, col) = wgmma_acc_coord(rank % 128, i);
            let at = (base + 24 + 4 * i as usize) as *mut f32;
            // SAFETY: the caller's promise: N / 2 floats follow the rank.
            let c = unsafe { std::ptr::read_unaligned(at) };
            let mut sum = c as f64;
            for k in 0..wgmma_k(ab) {
                // SAFETY: the caller's promise (the descriptors cover 64 rows of A, N of B).
                sum += unsafe { tile_element(da, row, k, ab) * tile_element(db, col, k, ab) };
            }
            // SAFETY: as above.
            unsafe { std::ptr::write_unaligned(at, sum as f32) };
        }
    }
}

/// A host barrier's `u64`: pending arrivals (bits 0..21), arrivals per phase (21..42), pending
/// bytes (42..63, two's complement: a copy may complete its bytes before they are expected) and
/// the phase's parity (bit 63).
const FIELD: u64 = (1 << 21) - 1;

fn unpack(w: u64) -> (u64, u64, i64, u64) {
    let tx = ((w >> 42) & FIELD) as i64;
    let tx = if tx >= 1 << 20 { tx - (1 << 21) } else { tx };
    (w & FIELD, (w >> 21) & FIELD, tx, w >> 63)
}

fn pack(pending: u64, expected: u64, tx: i64, phase: u64) -> u64 {
    (pending & FIELD) | (expected & FIELD) << 21 | ((tx as u64) & FIELD) << 42 | (phase & 1) << 63
}

/// Barrier operation `op` (`abi::warp_op::MBAR_*`) with `operand` on the barrier at `addr`: a
/// phase completes when its arrivals have all arrived and its expected bytes all come; the next
/// phase then expects as many arrivals again. An arrival at a barrier with none pending (one
/// initialised with a count of 0) changes nothing.
///
/// # Safety
///
/// `addr` is the address of an 8-byte aligned `u64` that nothing else accesses meanwhile.
pub(crate) unsafe fn mbarrier(addr: u64, op: u32, operand: u32) {
    use crate::abi::warp_op as W;
    let p = addr as usize as *mut u64;
    // SAFETY: the caller's promise.
    let (mut pending, mut expected, mut tx, mut phase) = unpack(unsafe { p.read() });
    let operand = operand as u64;
    match op {
        W::MBAR_INIT => (pending, expected, tx, phase) = (operand & FIELD, operand & FIELD, 0, 0),
        W::MBAR_INVAL => (pending, expected, tx, phase) = (0, 0, 0, 0),
        _ => {
            let arrives = op == W::MBAR_ARRIVE || op == W::MBAR_EXPECT_TX;
            match op {
                W::MBAR_EXPECT_TX => tx += operand as i64,
                W::MBAR_COMPLETE_TX => tx -= operand as i64,
                _ => {}
            }
            if arrives && pending > 0 {
                pending -= 1;
                if pending == 0 && tx == 0 {
                    (pending, phase) = (expected, phase ^ 1);
                }
            } else if !arrives && pending == 0 && tx == 0 {
                (pending, phase) = (expected, phase ^ 1);
            }
        }
    }
    // SAFETY: the caller's promise.
    unsafe { p.write(pack(pending, expected, tx, phase)) };
}

/// Whether the phase of parity `parity` of the barrier at `addr` has completed: the barrier is
/// in the other phase.
///
/// # Safety
///
/// As [`mbarrier`].
pub(crate) unsafe fn mbarrier_phase_done(addr: u64, parity: u32) -> bool {
    // SAFETY: the caller's promise.
    let (_, _, _, phase) = unpack(unsafe { (addr as usize as *const u64).read() });
    phase != (parity & 1) as u64
}
