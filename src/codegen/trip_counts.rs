//! Unrolled loops' trip counters made to count down to zero before NVPTX code generation, so
//! that ptxas can count their trips and unroll them again, as it does NVIDIA's.
//!
//! LLVM's runtime unroller counts the unrolled loop's trips up from 0 (`niter`) to a limit
//! (`unroll_iter`, the trip count rounded down to the unroll factor). Where the loop variable
//! steps by as much as that counter (a loop over `0..n`, stepping by one), the back end's
//! loop-strength reduction merges the two into one register that counts down from 0 to
//! `-unroll_iter`, and ptxas does not unroll a loop whose exit test compares a register
//! stepping down with another (ptxas 12.9 and 13.0, sm_90): a dot product per thread,
//! `for j in 0..cols { acc += a[r * cols + j] * x[j]; }`, kept 8 loads in flight per trip
//! where NVRTC's same loop, counting down to zero, has 32 (ptxas unrolls NVVM's 4 by 4 again).
//! A counter that starts at the limit and steps down to zero is not merged so (LLVM keeps an
//! up-counting address register compared with the limit, which ptxas counts). Only loops
//! ptxas may unroll are rewritten: those marked `llvm.loop.unroll.disable` (the grid-strided
//! loops and remainders that kache marks `.pragma "nounroll"`) are left as they are.
//!
//! The rewrite is exact: the counter `k` that starts at 0, steps by `c` and leaves when
//! `k + c == limit` leaves on the same trip as `j` that starts at `limit`, steps by `-c` and
//! leaves when `j - c == 0`, in wrapping arithmetic (`j = limit - k` throughout).

use inkwell::llvm_sys::LLVMOpcode;
use inkwell::llvm_sys::core as c;
use inkwell::llvm_sys::prelude::{LLVMBasicBlockRef, LLVMValueRef};
use inkwell::module::Module;

use std::collections::HashSet;

/// Rewrites the up-counting trip counter of each loop of `m` that ptxas may unroll (see the
/// module's documentation).
pub(super) fn count_down_to_zero(m: &Module<'_>) {
    // SAFETY: every handle is read from `m`'s live IR; the rewrite keeps the module valid (a
    // phi's incoming value replaced by a value that dominates its incoming block, an `add`
    // replaced by another of the same type before its uses, a compare's operands by values of
    // the same type that dominate it).
    unsafe {
        let ctx = c::LLVMGetModuleContext(m.as_mut_ptr());
        let kind = "llvm.loop";
        let loop_kind = c::LLVMGetMDKindIDInContext(ctx, kind.as_ptr().cast(), kind.len() as u32);
        let builder = c::LLVMCreateBuilderInContext(ctx);
        let mut f = c::LLVMGetFirstFunction(m.as_mut_ptr());
        while !f.is_null() {
            for site in counters(f, loop_kind) {
                rewrite(builder, &site);
            }
            f = c::LLVMGetNextFunction(f);
        }
        c::LLVMDisposeBuilder(builder);
    }
}

/// One loop's up-counting trip counter.
struct Counter {
    phi: LLVMValueRef,
    /// The index of the phi's incoming 0 (from outside the loop).
    entry: u32,
    next: LLVMValueRef,
    step: i64,
    cmp: LLVMValueRef,
    limit: LLVMValueRef,
}

/// The users of `v`.
unsafe fn users(v: LLVMValueRef) -> Vec<LLVMValueRef> {
    let mut out = Vec::new();
    // SAFETY: `v` is live; walking its use list reads it only.
    unsafe {
        let mut u = c::LLVMGetFirstUse(v);
        while !u.is_null() {
            out.push(c::LLVMGetUser(u));
            u = c::LLVMGetNextUse(u);
        }
    }
    out
}

/// The blocks of `f` and the successors of each.
unsafe fn successors(b: LLVMBasicBlockRef) -> Vec<LLVMBasicBlockRef> {
    // SAFETY: `b` is a live block; its terminator, if any, is read only.
    unsafe {
        let t = c::LLVMGetBasicBlockTerminator(b);
        if t.is_null() {
            return Vec::new();
        }
        (0..c::LLVMGetNumSuccessors(t)).map(|i| c::LLVMGetSuccessor(t, i)).collect()
    }
}

/// The blocks of the loop with header `head` and latch `latch`: those from which `latch` is
/// reached without passing `head`, and `head`.
unsafe fn loop_blocks(f: LLVMValueRef, head: LLVMBasicBlockRef, latch: LLVMBasicBlockRef) -> HashSet<LLVMBasicBlockRef> {
    let mut preds: std::collections::HashMap<LLVMBasicBlockRef, Vec<LLVMBasicBlockRef>> = Default::default();
    // SAFETY: `f` is a live function; its blocks are read only.
    unsafe {
        let mut b = c::LLVMGetFirstBasicBlock(f);
        while !b.is_null() {
            for s in successors(b) {
                preds.entry(s).or_default().push(b);
            }
            b = c::LLVMGetNextBasicBlock(b);
        }
    }
    let mut inside = HashSet::from([head]);
    let mut stack = vec![latch];
    while let Some(b) = stack.pop() {
        if inside.insert(b) {
            stack.extend(preds.get(&b).into_iter().flatten().copied());
        }
    }
    inside
}

/// Whether the back edge `br` carries loop metadata that forbids unrolling.
unsafe fn nounroll(br: LLVMValueRef, loop_kind: u32) -> bool {
    // SAFETY: `br` is a live instruction; its metadata nodes are read only.
    unsafe {
        let id = c::LLVMGetMetadata(br, loop_kind);
        if id.is_null() {
            return false;
        }
        let n = c::LLVMGetMDNodeNumOperands(id) as usize;
        let mut ops = vec![std::ptr::null_mut(); n];
        c::LLVMGetMDNodeOperands(id, ops.as_mut_ptr());
        ops.into_iter().filter(|o| !o.is_null() && !c::LLVMIsAMDNode(*o).is_null()).any(|hint| {
            let k = c::LLVMGetMDNodeNumOperands(hint) as usize;
            let mut parts = vec![std::ptr::null_mut(); k];
            c::LLVMGetMDNodeOperands(hint, parts.as_mut_ptr());
            let mut len = 0u32;
            let name = parts.first().filter(|p| !p.is_null()).map(|p| c::LLVMGetMDString(*p, &mut len)).unwrap_or(std::ptr::null());
            !name.is_null() && std::slice::from_raw_parts(name.cast::<u8>(), len as usize) == b"llvm.loop.unroll.disable"
        })
    }
}

/// The trip counters of `f`'s loops that may be rewritten.
unsafe fn counters(f: LLVMValueRef, loop_kind: u32) -> Vec<Counter> {
    let mut out = Vec::new();
    // SAFETY: `f` is live; this reads its IR only.
    unsafe {
        let mut head = c::LLVMGetFirstBasicBlock(f);
        while !head.is_null() {
            let mut phi = c::LLVMGetFirstInstruction(head);
            while !phi.is_null() && !c::LLVMIsAPHINode(phi).is_null() {
                if let Some(site) = counter(f, head, phi, loop_kind) {
                    out.push(site);
                }
                phi = c::LLVMGetNextInstruction(phi);
            }
            head = c::LLVMGetNextBasicBlock(head);
        }
    }
    out
}

/// `phi` (in `head`) as a trip counter: `k = phi [0, outside], [k + step, latch]` (`step`
/// positive), used only by that add, which is used only by the phi and by `k + step == limit`
/// (or `!=`), the condition of the latch's branch back to `head`, with `limit` defined outside
/// the loop and the loop free to be unrolled.
unsafe fn counter(f: LLVMValueRef, head: LLVMBasicBlockRef, phi: LLVMValueRef, loop_kind: u32) -> Option<Counter> {
    // SAFETY: every handle comes from `f`'s live IR; this reads it only.
    unsafe {
        if c::LLVMCountIncoming(phi) != 2 || c::LLVMGetTypeKind(c::LLVMTypeOf(phi)) != inkwell::llvm_sys::LLVMTypeKind::LLVMIntegerTypeKind
        {
            return None;
        }
        let zero_at = (0..2u32).find(|i| {
            let v = c::LLVMGetIncomingValue(phi, *i);
            !c::LLVMIsAConstantInt(v).is_null() && c::LLVMConstIntGetZExtValue(v) == 0
        })?;
        let next = c::LLVMGetIncomingValue(phi, 1 - zero_at);
        let latch = c::LLVMGetIncomingBlock(phi, 1 - zero_at);
        if c::LLVMIsAInstruction(next).is_null() || c::LLVMGetInstructionOpcode(next) != LLVMOpcode::LLVMAdd {
            return None;
        }
        let step = c::LLVMGetOperand(next, 1);
        if c::LLVMGetOperand(next, 0) != phi || c::LLVMIsAConstantInt(step).is_null() {
            return None;
        }
        let step = c::LLVMConstIntGetSExtValue(step);
        if step <= 0 || users(phi) != [next] {
            return None;
        }
        let cmp = match users(next).into_iter().filter(|u| *u != phi).collect::<Vec<_>>()[..] {
            [u] if !c::LLVMIsAICmpInst(u).is_null() => u,
            _ => return None,
        };
        let pred = c::LLVMGetICmpPredicate(cmp);
        if !matches!(pred, inkwell::llvm_sys::LLVMIntPredicate::LLVMIntEQ | inkwell::llvm_sys::LLVMIntPredicate::LLVMIntNE) {
            return None;
        }
        let (a, b) = (c::LLVMGetOperand(cmp, 0), c::LLVMGetOperand(cmp, 1));
        let limit = if a == next { b } else { a };
        let br = c::LLVMGetBasicBlockTerminator(latch);
        let back = !br.is_null() && c::LLVMIsConditional(br) != 0 && c::LLVMGetCondition(br) == cmp && successors(latch).contains(&head);
        if !back || users(cmp) != [br] || nounroll(br, loop_kind) {
            return None;
        }
        if !c::LLVMIsAInstruction(limit).is_null() {
            let inside = loop_blocks(f, head, latch);
            if inside.contains(&c::LLVMGetInstructionParent(limit)) {
                return None;
            }
        } else if c::LLVMIsAConstant(limit).is_null() && c::LLVMIsAArgument(limit).is_null() {
            return None;
        }
        Some(Counter { phi, entry: zero_at, next, step, cmp, limit })
    }
}

/// `k = phi [0, ..], [k + c, ..]`, `k + c == limit` becomes `j = phi [limit, ..], [j - c, ..]`,
/// `j - c == 0`.
unsafe fn rewrite(builder: inkwell::llvm_sys::prelude::LLVMBuilderRef, s: &Counter) {
    // SAFETY: see `count_down_to_zero`; `limit` is defined outside the loop, so it dominates
    // the phi's incoming edge from outside.
    unsafe {
        let ty = c::LLVMTypeOf(s.phi);
        c::LLVMSetOperand(s.phi, s.entry, s.limit);
        c::LLVMPositionBuilderBefore(builder, s.next);
        let down = c::LLVMBuildSub(builder, s.phi, c::LLVMConstInt(ty, s.step as u64, 0), c"".as_ptr());
        c::LLVMReplaceAllUsesWith(s.next, down);
        c::LLVMInstructionEraseFromParent(s.next);
        c::LLVMSetOperand(s.cmp, 0, down);
        c::LLVMSetOperand(s.cmp, 1, c::LLVMConstNull(ty));
    }
}
