//! The aligned copy of a kernel (`lower/align.rs`) kept on NVPTX only where it pays: after the
//! optimisation pipeline, the load-store vectoriser (the pass the NVPTX back end runs anyway)
//! merges the copy's groups of accesses; if it made no wide access through an array parameter,
//! the kernel is built again without the copy (`pipeline::build`), so that its code is what it
//! was before kernels had aligned copies.
//!
//! The analysis that decides to copy a kernel reads the source, before unrolling and before the
//! bounds checks of a safe launch are known to be proven: it cannot tell whether LLVM will find
//! a group (`out[2 * i] = a; out[2 * i + 1] = b;` stays two stores where a bounds check stands
//! between them). Building again costs such a compile a second lowering and optimisation, and
//! keeps the code that runs free of a test that buys nothing.

use inkwell::llvm_sys::LLVMOpcode;
use inkwell::llvm_sys::core as c;
use inkwell::llvm_sys::prelude::LLVMValueRef;
use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::TargetMachine;

use super::CodegenError;

/// The metadata kind that marks the branch between the aligned copy and the body as written.
pub(crate) const ALIGNED_BRANCH: &str = "kache.aligned";

/// Vectorises `m`'s loads and stores (as the NVPTX back end would) and says whether the aligned
/// copy of its kernel, if it has one, gained a wide access through an array parameter: `false`
/// where the kernel is better built without the copy.
pub(super) fn keep_if_wider(m: &Module<'_>, tm: &TargetMachine) -> Result<bool, CodegenError> {
    if marked_branch(m).is_none() {
        return Ok(true);
    }
    m.run_passes("function(load-store-vectorizer)", tm, PassBuilderOptions::create())
        .map_err(|e| CodegenError::Llvm(format!("passes: {}", e.to_string())))?;
    // SAFETY: `m`'s live IR is only read.
    Ok(unsafe { wide_parameter_access(m) })
}

/// The branch marked [`ALIGNED_BRANCH`], if the kernel has one.
fn marked_branch(m: &Module<'_>) -> Option<LLVMValueRef> {
    // SAFETY: every handle is read from `m`'s live IR, which is only read here.
    unsafe {
        let ctx = c::LLVMGetModuleContext(m.as_mut_ptr());
        let kind = c::LLVMGetMDKindIDInContext(ctx, ALIGNED_BRANCH.as_ptr().cast(), ALIGNED_BRANCH.len() as u32);
        let mut f = c::LLVMGetFirstFunction(m.as_mut_ptr());
        while !f.is_null() {
            let mut b = c::LLVMGetFirstBasicBlock(f);
            while !b.is_null() {
                let t = c::LLVMGetBasicBlockTerminator(b);
                if !t.is_null() && !c::LLVMGetMetadata(t, kind).is_null() && c::LLVMGetNumSuccessors(t) == 2 {
                    return Some(t);
                }
                b = c::LLVMGetNextBasicBlock(b);
            }
            f = c::LLVMGetNextFunction(f);
        }
        None
    }
}

/// Whether some load or store of `m` moves a vector through a pointer based on a function's
/// parameter: only the aligned copy can (elsewhere a parameter's alignment is its element's).
unsafe fn wide_parameter_access(m: &Module<'_>) -> bool {
    // SAFETY: every handle is read from `m`'s live IR, which is only read here.
    unsafe {
        let mut f = c::LLVMGetFirstFunction(m.as_mut_ptr());
        while !f.is_null() {
            let mut b = c::LLVMGetFirstBasicBlock(f);
            while !b.is_null() {
                let mut i = c::LLVMGetFirstInstruction(b);
                while !i.is_null() {
                    let (value, ptr) = match c::LLVMGetInstructionOpcode(i) {
                        LLVMOpcode::LLVMLoad => (i, c::LLVMGetOperand(i, 0)),
                        LLVMOpcode::LLVMStore => (c::LLVMGetOperand(i, 0), c::LLVMGetOperand(i, 1)),
                        _ => (std::ptr::null_mut(), std::ptr::null_mut()),
                    };
                    if !value.is_null() && wide(value) && based_on_parameter(ptr) {
                        return true;
                    }
                    i = c::LLVMGetNextInstruction(i);
                }
                b = c::LLVMGetNextBasicBlock(b);
            }
            f = c::LLVMGetNextFunction(f);
        }
        false
    }
}

/// Whether `v` is a vector the back end moves whole: of 16- to 64-bit elements (NVPTX splits a
/// vector of bytes into byte accesses).
unsafe fn wide(v: LLVMValueRef) -> bool {
    use inkwell::llvm_sys::LLVMTypeKind;
    // SAFETY: `v` is a live value; its type is only read.
    unsafe {
        let t = c::LLVMTypeOf(v);
        if c::LLVMGetTypeKind(t) != LLVMTypeKind::LLVMVectorTypeKind {
            return false;
        }
        let e = c::LLVMGetElementType(t);
        match c::LLVMGetTypeKind(e) {
            LLVMTypeKind::LLVMIntegerTypeKind => c::LLVMGetIntTypeWidth(e) >= 16,
            LLVMTypeKind::LLVMHalfTypeKind | LLVMTypeKind::LLVMBFloatTypeKind | LLVMTypeKind::LLVMFloatTypeKind => true,
            LLVMTypeKind::LLVMDoubleTypeKind | LLVMTypeKind::LLVMPointerTypeKind => true,
            _ => false,
        }
    }
}

/// Whether `p` is a parameter, or an address computed from one by `getelementptr`s and casts.
unsafe fn based_on_parameter(mut p: LLVMValueRef) -> bool {
    // SAFETY: `p` and the operands followed are live values.
    unsafe {
        for _ in 0..64 {
            if !c::LLVMIsAArgument(p).is_null() {
                return true;
            }
            let through = !c::LLVMIsAGetElementPtrInst(p).is_null()
                || !c::LLVMIsAAddrSpaceCastInst(p).is_null()
                || !c::LLVMIsABitCastInst(p).is_null()
                || (!c::LLVMIsAConstantExpr(p).is_null()
                    && matches!(
                        c::LLVMGetConstOpcode(p),
                        LLVMOpcode::LLVMGetElementPtr | LLVMOpcode::LLVMAddrSpaceCast | LLVMOpcode::LLVMBitCast
                    ));
            if !through {
                return false;
            }
            p = c::LLVMGetOperand(p, 0);
        }
        false
    }
}
