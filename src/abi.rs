//! The contract between generated code and the runtime: how kernel parameters and captured
//! values are passed, the host backend's per-thread context and static shared memory, the
//! symbols kernels are known by, and the signature of a host kernel entry. No LLVM here: the
//! code generator emits code that follows it, the runtime calls code that follows it.

use std::collections::HashMap;

use crate::ir::{
    Block, Builtin, Capture, CaptureTy, Elem, Expr, ExprKind, FuncId, Place, Program, Scalar, ScalarValue, Ty, Types, visit_block,
};
use crate::target::Target;

/// The value of a capture, as code generation needs it.
#[derive(Clone, Debug)]
pub enum CaptureData<'a> {
    /// A host scalar: an immediate.
    Scalar(ScalarValue),
    /// A host array: its bytes are copied into the module as constant data.
    HostArray {
        /// Extents.
        shape: &'a [usize],
        /// Strides in elements.
        strides: &'a [isize],
        /// Element bytes, as laid out by `strides`.
        bytes: &'a [u8],
    },
    /// A device array: its pointer, extents and strides are embedded as constants.
    DeviceArray {
        /// Device address.
        ptr: u64,
        /// Extents.
        shape: &'a [usize],
        /// Strides in elements.
        strides: &'a [isize],
    },
    /// A device array compiled relocatably: on the GPU its address is a hidden parameter of
    /// every function ([`slot_captures`] gives their order), which each launch passes; on the
    /// host it is read from the module's slot [`capture_slot_symbol`], which the loader fills.
    /// Extents and strides are constants.
    DeviceSlot {
        /// Extents.
        shape: &'a [usize],
        /// Strides in elements.
        strides: &'a [isize],
    },
}

/// Prefix of every capture slot's symbol.
pub const CAPTURE_SLOT_PREFIX: &str = "__kache_capture_slot_";

/// The symbol of the slot that holds the address of capture `id` in relocatable mode on the
/// host backend: a 64-bit variable the module defines and the loader fills before the first
/// launch. On the GPU the address is a hidden parameter instead ([`slot_captures`]): a module
/// variable would cost every load of the module a data segment and the loader a lookup and a
/// copy (about 0.1 ms of a first launch on an H200).
pub fn capture_slot_symbol(id: usize) -> String {
    format!("{CAPTURE_SLOT_PREFIX}{id}")
}

/// The ids of the captures compiled relocatably ([`CaptureData::DeviceSlot`]), in capture
/// order: on the GPU, the order of their hidden parameters, after the fault record and the
/// token, in every function and in the kernel's parameter list (the order in which the slots
/// of a compiled kernel are listed, so a launch passes their arrays' addresses in that order).
pub fn slot_captures(captures: &[CaptureData<'_>]) -> Vec<usize> {
    captures.iter().enumerate().filter(|(_, c)| matches!(c, CaptureData::DeviceSlot { .. })).map(|(i, _)| i).collect()
}

/// How one kernel parameter is passed: scalars as themselves, arrays as a pointer, `ndim`
/// extents and `ndim` strides (in elements), all 64-bit; a struct, tuple or fixed-size array
/// passed by value as its scalars, one parameter each, in memory order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamAbi {
    /// A scalar (`bool` as one byte).
    Scalar(Scalar),
    /// An array.
    Array {
        /// Element type.
        elem: Elem,
        /// Dimensions.
        ndim: u8,
    },
    /// A value of an aggregate type: each scalar it is made of, with its byte offset in the
    /// value's C layout ([`Types::leaves`](crate::ir::Types::leaves)).
    Aggregate(Vec<(u64, Scalar)>),
}

impl ParamAbi {
    /// The parameters of a kernel with this signature (names and types).
    pub fn of_signature(signature: &[(String, Ty)], types: &Types) -> Vec<ParamAbi> {
        signature
            .iter()
            .map(|(_, t)| match *t {
                Ty::Array(a) => ParamAbi::Array { elem: a.elem, ndim: a.ndim },
                Ty::Scalar(s) => ParamAbi::Scalar(s),
                Ty::Agg(_) => ParamAbi::Aggregate(types.leaves(*t).unwrap_or_default()),
                _ => ParamAbi::Scalar(Scalar::Bool),
            })
            .collect()
    }

    /// The kernel parameters of a program.
    pub fn of(program: &Program) -> Vec<ParamAbi> {
        program
            .kernel()
            .param_decls()
            .iter()
            .map(|p| match p.ty {
                Ty::Array(a) => ParamAbi::Array { elem: a.elem, ndim: a.ndim },
                Ty::Scalar(s) => ParamAbi::Scalar(s),
                Ty::Enum(e) => ParamAbi::Scalar(e.repr),
                Ty::Agg(_) => ParamAbi::Aggregate(program.types.leaves(p.ty).unwrap_or_default()),
                _ => ParamAbi::Scalar(Scalar::Bool),
            })
            .collect()
    }
}

/// Byte offsets of the fields of the host backend's per-thread context, which the runtime's
/// `#[repr(C)]` struct mirrors (a test checks both agree).
#[allow(missing_docs)]
pub mod host_ctx_layout {
    pub const THREAD_IDX: u64 = 0;
    pub const BLOCK_IDX: u64 = 12;
    pub const BLOCK_DIM: u64 = 24;
    pub const GRID_DIM: u64 = 36;
    pub const DYN_SHARED: u64 = 48;
    pub const DYN_SHARED_LEN: u64 = 56;
    pub const SHARED: u64 = 64;
    pub const BARRIER_FN: u64 = 72;
    pub const BARRIER_DATA: u64 = 80;
    pub const WARP_FN: u64 = 88;
    /// `*mut` the launch's fault record ([`fault_layout`](super::fault_layout)).
    pub const FAULT: u64 = 96;
    /// `u32`: set to 1 by a failed bounds check; every call returns while it is set, so the
    /// thread exits.
    pub const EXITING: u64 = 104;
    pub const SIZE: u64 = 112;
}

/// The warp-level collectives of the host backend: generated code calls the context's
/// `warp_fn(ctx, op, mask, value, b, c) -> u64` with one of these as `op`; the runtime meets
/// the lanes named by `mask` there and answers each. `value` is the lane's operand (a shuffled
/// value's bits, zero-extended, or a predicate as 0 or 1); for shuffles `b` is the lane, delta
/// or lane mask and `c` PTX's packed segment mask and clamp (`shfl.sync`'s operand `c`); for
/// `activemask` `b` numbers the call site.
#[allow(missing_docs)]
pub mod warp_op {
    pub const SHFL_IDX: u32 = 0;
    pub const SHFL_UP: u32 = 1;
    pub const SHFL_DOWN: u32 = 2;
    pub const SHFL_XOR: u32 = 3;
    pub const BALLOT: u32 = 4;
    pub const ALL: u32 = 5;
    pub const ANY: u32 = 6;
    pub const ACTIVEMASK: u32 = 7;
    pub const SYNC_WARP: u32 = 8;
    /// `mma`: `value` points to the lane's fragments (A's 4 words, B's 2, C's 4, D written
    /// over C), `b` is the shape's `TensorOp::warp_code`.
    pub const MMA: u32 = 9;
    /// `ldmatrix`: `value` points to the lane's row address (a `u64`) followed by its 4 result
    /// words, `b` is the form's `TensorOp::warp_code`.
    pub const LDMATRIX: u32 = 10;
    /// `wgmma`: `value` points to the lane's descriptors of A and B (`u64` each), its rank in
    /// the warpgroup (`u32`, then 4 bytes unused) and its accumulator (N / 2 `f32`, D written
    /// over C), `b` is the form's `TensorOp::warp_code`.
    pub const WGMMA: u32 = 11;
    /// An mbarrier operation of one thread (not a collective): `value` is the address of the
    /// barrier's `u64`, `b` the operation (`MBAR_*`), `c` its operand (a count, bytes, a
    /// parity). Answered at once, except `MBAR_TRY_WAIT`, answered 1 once the phase of parity
    /// `c` has completed.
    pub const MBARRIER: u32 = 12;
    pub const MBAR_INIT: u32 = 0;
    pub const MBAR_ARRIVE: u32 = 1;
    pub const MBAR_EXPECT_TX: u32 = 2;
    pub const MBAR_COMPLETE_TX: u32 = 3;
    pub const MBAR_INVAL: u32 = 4;
    pub const MBAR_TRY_WAIT: u32 = 5;
}

/// The signature of the host context's `warp_fn`.
pub type HostWarpFn = extern "C" fn(*mut u8, u32, u32, u64, u32, u32) -> u64;

/// The signature of a host kernel entry: `(HostCtx*, void** params)`.
pub type HostEntry = unsafe extern "C" fn(*mut u8, *const *const u8);

/// The symbol PTX and the JIT know a kernel by: its name with anything outside `[A-Za-z0-9_]`
/// spelled out, so every Rust identifier is a valid PTX identifier.
pub fn symbol_name(name: &str) -> String {
    let mut s = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            s.push(c);
        } else if c == ':' {
            s.push('_');
        } else {
            s.push_str(&format!("_u{:04x}", c as u32));
        }
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) || s.is_empty() {
        s.insert(0, '_');
    }
    s
}

/// The symbol that launches the program's kernel: the `.entry` on NVPTX, the wrapper taking
/// `(ctx, params)` on the host.
pub fn entry_symbol(p: &Program, target: Target) -> String {
    match target {
        Target::Nvptx(_) => symbol_name(&p.kernel().name),
        Target::Host => format!("{}_host_entry", symbol_name(&p.kernel().name)),
    }
}

/// The alignment of a shared array of `bytes` bytes, on the GPU and the host alike: 1024 bytes
/// from 1 KiB on (a `wgmma` tile's or a tensor copy's swizzle is of address bits, in atoms of
/// up to 1024 bytes), 128 from 128 bytes on (an unswizzled tensor copy's destination), else 16
/// (an `ldmatrix` row, a 16-byte `cp_async`). The host's shared buffers start 1024-byte aligned.
pub fn shared_align(bytes: u64) -> u64 {
    if bytes >= 1024 {
        1024
    } else if bytes >= 128 {
        128
    } else {
        16
    }
}

/// Static shared-memory offsets for the host backend: one per `shared_array` call site, by
/// function and site, and the total the runtime allocates per block. Each array is aligned as
/// [`shared_align`] says and no more.
pub(crate) fn shared_offsets(p: &Program) -> (HashMap<(FuncId, usize), u64>, u64) {
    let mut map = HashMap::new();
    let mut off = 0u64;
    for (fid, f) in p.funcs.iter().enumerate() {
        let mut sites = Vec::new();
        collect_shared(&f.body, &mut sites);
        sites.sort_by_key(|s| s.0);
        for (site, elem, len) in sites {
            let align = shared_align(len * p.types.elem_size(elem));
            off = off.div_ceil(align) * align;
            // The GPU's linker promises an array no more than `align`: here it starts at an odd
            // multiple of it (below 1024), so that a kernel needing more (a tensor copy's
            // swizzled box in a tile shorter than 1 KiB) fails its check here as it may there,
            // not only on the GPU.
            if align < 1024 && off.is_multiple_of(2 * align) {
                off += align;
            }
            map.insert((fid, site), off);
            off += len * p.types.elem_size(elem);
        }
    }
    (map, off)
}

/// Total static shared memory a program uses, in bytes.
pub fn static_shared_bytes(p: &Program) -> u64 {
    shared_offsets(p).1
}

fn collect_shared(b: &Block, out: &mut Vec<(usize, Elem, u64)>) {
    visit_block(b, &mut |e| {
        if let ExprKind::SharedArray { elem, len, site } = &e.kind {
            out.push((*site, *elem, *len));
        }
    });
}

/// Which captures the program may write: a writable captured array counts as written wherever
/// it is used other than read (indexed for a load, or asked its `len`, `shape` or `stride`), so
/// a capture handed to a device function, bound to a local or written counts. A launch refuses
/// an argument that overlaps a written capture (`noalias` holds only because of that).
pub fn written_captures(p: &Program) -> Vec<bool> {
    let mut written = vec![false; p.captures.len()];
    for f in &p.funcs {
        let mut reads = std::collections::HashSet::new();
        visit_block(&f.body, &mut |e| match &e.kind {
            ExprKind::Index(a, _) => {
                reads.insert(&**a as *const Expr);
            }
            ExprKind::Builtin(Builtin::Len | Builtin::Shape | Builtin::Stride, args) => {
                if let Some(a) = args.first() {
                    reads.insert(a as *const Expr);
                }
            }
            _ => {}
        });
        // An atomic's target is an `Index` expression, but every atomic except a load writes.
        visit_block(&f.body, &mut |e| {
            if let ExprKind::Builtin(b, args) = &e.kind
                && b.writes_element()
                && let Some(ExprKind::Index(a, _)) = args.first().map(|t| &t.kind)
            {
                reads.remove(&(&**a as *const Expr));
            }
        });
        visit_block(&f.body, &mut |e| {
            if let ExprKind::Capture(c) = e.kind
                && let Some(Capture { ty: CaptureTy::Array { ty, .. }, .. }) = p.captures.get(c)
                && ty.writable
                && !reads.contains(&(e as *const Expr))
            {
                written[c] = true;
            }
        });
    }
    written
}

/// An array access that checked code bounds-checks: the array expression and its indices, in
/// function `func`. [`bounds_sites`] numbers them.
#[derive(Clone, Copy, Debug)]
pub struct BoundsSite<'p> {
    /// The function the access is in.
    pub func: FuncId,
    /// The array indexed.
    pub array: &'p Expr,
    /// One index per dimension.
    pub indices: &'p [Expr],
}

/// Every bounds-checked access of the program, in a fixed order (functions in order, then
/// expressions as [`visit_block`] meets them): the number of a site is its position here. Both
/// the code generator (which writes the number into the fault record) and the runtime (which
/// turns it back into the array's name and source location) count them with this function, so
/// they agree for every program of the same structure; the numbers depend on nothing the cache
/// key leaves out. Accesses of 0-d arrays have no index and no check.
pub fn bounds_sites(p: &Program) -> Vec<BoundsSite<'_>> {
    let mut out = Vec::new();
    for (fid, f) in p.funcs.iter().enumerate() {
        visit_block(&f.body, &mut |e| match &e.kind {
            ExprKind::Index(a, i) => push_site(&mut out, fid, a, i),
            // A site with no index: the call itself.
            ExprKind::Builtin(Builtin::Unwrap, args) => out.push(BoundsSite { func: fid, array: e, indices: &args[..0] }),
            ExprKind::Assign(p, _) | ExprKind::CompoundAssign(_, p, _) | ExprKind::CallRef(_, p, _) => place_sites(&mut out, fid, p),
            _ => {}
        });
    }
    out
}

fn push_site<'p>(out: &mut Vec<BoundsSite<'p>>, func: FuncId, array: &'p Expr, indices: &'p [Expr]) {
    if !indices.is_empty() {
        out.push(BoundsSite { func, array, indices });
    }
}

/// The array elements a place names, outermost first (`a[i].pos[k] = ..` names `a[i]`).
fn place_sites<'p>(out: &mut Vec<BoundsSite<'p>>, func: FuncId, p: &'p Place) {
    match p {
        Place::Local(_) => {}
        Place::Index(a, i) => push_site(out, func, a, i),
        Place::Field(inner, _) | Place::Elem(inner, _) => place_sites(out, func, inner),
    }
}

/// Offsets of the fields of the record a failed bounds check writes (one per launch on the host
/// backend, one per device on CUDA). The first failing thread sets `FLAG` from 0 to 1 with a
/// compare-and-swap and then writes the rest; the runtime reads it once the kernel has finished.
#[allow(missing_docs)]
pub mod fault_layout {
    /// `u32`: 0, or 1 once a check has failed.
    pub const FLAG: u64 = 0;
    /// `u32`: the number of the failing site ([`bounds_sites`](super::bounds_sites)).
    pub const SITE: u64 = 4;
    /// `u32`: the dimension whose index was out of bounds.
    pub const DIM: u64 = 8;
    /// `u32`: which kernel failed (the launch's token; CUDA only).
    pub const TOKEN: u64 = 12;
    /// `u64`: the index.
    pub const INDEX: u64 = 16;
    /// `u64`: the extent it was checked against.
    pub const LEN: u64 = 24;
    pub const SIZE: u64 = 32;
    /// `DIM` values that are not dimensions, for an access in bounds that may still not be made
    /// (`ldmatrix`, `cp_async`): `MISALIGNED | n`, the element's address is not a multiple of
    /// `n` bytes; `NOT_SHARED`, the array is not in shared memory; `NOT_GLOBAL`, it is not in
    /// global memory.
    pub const MISALIGNED: u32 = 1 << 16;
    pub const NOT_SHARED: u32 = 2 << 16;
    pub const NOT_GLOBAL: u32 = 3 << 16;
    /// `TMA_COLUMN | n`: a tensor copy's box starts at a column (in `LEN`, as an `i64`) that is
    /// not a multiple of `n` elements, 16 bytes (the hardware reads whole 16-byte units).
    pub const TMA_COLUMN: u32 = 4 << 16;
}
