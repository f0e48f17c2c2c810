//! Memory-space checks settled after inlining: a checked tensor access (`cp_async`, `ldmatrix`,
//! `wgmma_desc`, the bulk copies, the mbarriers) tests that its array is in the memory the
//! instruction reads or writes with `isspacep` (lower/tensor.rs). Where the array was created
//! in the function being lowered the test is left out there (`known_space`), but a device
//! function that takes the array as a parameter cannot know, and LLVM does not fold
//! `llvm.nvvm.isspacep.*` once that function is inlined into the kernel. This pass does: each
//! test whose pointer is derived (through GEPs, casts, phis and selects) only from a shared
//! variable or from a pointer parameter of the kernel's entry (the launch passes device
//! allocations, so global memory) is replaced by `true`, and the branches it guarded are
//! folded. A pointer whose origin is anything else (a load, an integer, a parameter of a
//! function that was not inlined) keeps its test.
//!
//! It is a GPU speed matter: a safe launch of the speed suite's `gemm_wg` tested 24 pointers a
//! thread in each step of its main loop, every one of them known.

use inkwell::llvm_sys::LLVMOpcode;
use inkwell::llvm_sys::core as c;
use inkwell::llvm_sys::prelude::LLVMValueRef;
use inkwell::module::Module;

use std::collections::HashMap;

use super::lower::Space;

/// Replaces each `llvm.nvvm.isspacep.shared` / `.global` of `m` whose pointer is known to be in
/// that space by `true`; the number replaced.
pub(super) fn fold_known_spaces(m: &Module<'_>, entry: &str) -> usize {
    let mut folded = 0;
    // SAFETY: every handle is read from `m`'s live IR; a call is erased only after its uses were
    // replaced by a constant of its own type (i1).
    unsafe {
        let module = m.as_mut_ptr();
        let entry_name = std::ffi::CString::new(entry).unwrap_or_default();
        let entry_fn = c::LLVMGetNamedFunction(module, entry_name.as_ptr());
        for (name, space) in [("llvm.nvvm.isspacep.shared", Space::Shared), ("llvm.nvvm.isspacep.global", Space::Global)] {
            let Ok(cname) = std::ffi::CString::new(name) else { continue };
            let f = c::LLVMGetNamedFunction(module, cname.as_ptr());
            if f.is_null() {
                continue;
            }
            let mut calls = Vec::new();
            let mut u = c::LLVMGetFirstUse(f);
            while !u.is_null() {
                let user = c::LLVMGetUser(u);
                if !c::LLVMIsACallInst(user).is_null() && c::LLVMGetCalledValue(user) == f {
                    calls.push(user);
                }
                u = c::LLVMGetNextUse(u);
            }
            for call in calls {
                let p = c::LLVMGetOperand(call, 0);
                let caller = c::LLVMGetBasicBlockParent(c::LLVMGetInstructionParent(call));
                let entry_of_caller = if caller == entry_fn { entry_fn } else { std::ptr::null_mut() };
                if origin(p, entry_of_caller, &mut HashMap::new()) == Origin::In(space) {
                    let t = c::LLVMConstInt(c::LLVMTypeOf(call), 1, 0);
                    c::LLVMReplaceAllUsesWith(call, t);
                    c::LLVMInstructionEraseFromParent(call);
                    folded += 1;
                }
            }
        }
    }
    folded
}

/// What is known of where a pointer may point.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Origin {
    /// Derived only from values in this space.
    In(Space),
    /// Derived from something else, or from values of both spaces.
    Unknown,
    /// A value met again on a cycle (a loop's phi): it adds nothing to what the cycle's other
    /// inputs say.
    Cycle,
}

/// Both origins at once (a phi's or a select's inputs).
fn meet(a: Origin, b: Origin) -> Origin {
    match (a, b) {
        (Origin::Cycle, x) | (x, Origin::Cycle) => x,
        (Origin::In(x), Origin::In(y)) if x == y => a,
        _ => Origin::Unknown,
    }
}

/// The space every value `p` may be derived from is in: `entry` is the kernel's entry function
/// when `p` is in it (its pointer parameters are global), else null; `seen` holds the values
/// being or already resolved.
///
/// # Safety
/// `p` and `entry` must be live references of one module.
unsafe fn origin(p: LLVMValueRef, entry: LLVMValueRef, seen: &mut HashMap<LLVMValueRef, Origin>) -> Origin {
    if let Some(o) = seen.get(&p) {
        return *o;
    }
    seen.insert(p, Origin::Cycle);
    // SAFETY: the caller's promise; operands of live values are live.
    let o = unsafe { origin_of(p, entry, seen) };
    seen.insert(p, o);
    o
}

/// `origin` of a value not met before.
///
/// # Safety
/// As `origin`.
unsafe fn origin_of(p: LLVMValueRef, entry: LLVMValueRef, seen: &mut HashMap<LLVMValueRef, Origin>) -> Origin {
    // SAFETY: the caller's promise; operands of live values are live.
    unsafe {
        let space_of_type = |v: LLVMValueRef| match c::LLVMGetPointerAddressSpace(c::LLVMTypeOf(v)) {
            3 => Origin::In(Space::Shared),
            1 => Origin::In(Space::Global),
            _ => Origin::Unknown,
        };
        if !c::LLVMIsAArgument(p).is_null() {
            return if !entry.is_null() && c::LLVMGetParamParent(p) == entry { Origin::In(Space::Global) } else { Origin::Unknown };
        }
        if !c::LLVMIsAGlobalVariable(p).is_null() {
            return space_of_type(p);
        }
        let opcode = if !c::LLVMIsAInstruction(p).is_null() {
            c::LLVMGetInstructionOpcode(p)
        } else if !c::LLVMIsAConstantExpr(p).is_null() {
            c::LLVMGetConstOpcode(p)
        } else {
            return Origin::Unknown;
        };
        match opcode {
            LLVMOpcode::LLVMGetElementPtr | LLVMOpcode::LLVMBitCast => origin(c::LLVMGetOperand(p, 0), entry, seen),
            LLVMOpcode::LLVMAddrSpaceCast => {
                let inner = c::LLVMGetOperand(p, 0);
                match space_of_type(inner) {
                    Origin::Unknown => origin(inner, entry, seen),
                    known => known,
                }
            }
            LLVMOpcode::LLVMPHI => {
                let mut o = Origin::Cycle;
                for i in 0..c::LLVMCountIncoming(p) {
                    o = meet(o, origin(c::LLVMGetIncomingValue(p, i), entry, seen));
                    if o == Origin::Unknown {
                        break;
                    }
                }
                o
            }
            LLVMOpcode::LLVMSelect => {
                let a = origin(c::LLVMGetOperand(p, 1), entry, seen);
                meet(a, origin(c::LLVMGetOperand(p, 2), entry, seen))
            }
            _ => Origin::Unknown,
        }
    }
}
