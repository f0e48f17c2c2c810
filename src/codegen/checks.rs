//! Bounds checks that the conditions around them prove, left out before optimisation.
//!
//! `if k > 0 && k + 1 < nz { .. u[[k - 1, i, j]] .. }` (a stencil) needs no check of `k - 1`:
//! LLVM's constraint elimination proves it from the conditions as written, but by the time the
//! standard pipeline runs it, instcombine has rewritten them (`k > 0` is `k != 0`, which LLVM
//! 19's pass does not take as a fact) and the check stays. Running the pass earlier on the
//! module itself changes more than the checks (the unrolling and the registers of unchecked
//! code too), so it runs on a copy, and only its verdicts come back: each check whose fault
//! path the copy proves unreachable is removed from the module, which then goes through the
//! standard pipeline as before. Unchecked code is untouched.
//!
//! A check's fault path is found by the tag on its first instruction ([`FAULT_TAG`], set where
//! the check is lowered): a fault path is proven unreachable when every edge into it, in the
//! copy after the passes, is a conditional branch whose condition is a constant that takes the
//! other way. Anything else (a path the passes merged, moved or dropped) keeps its check.

use std::collections::{HashMap, HashSet};

use inkwell::basic_block::BasicBlock;
use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::TargetMachine;
use inkwell::values::{AnyValue, InstructionOpcode, InstructionValue};

use super::CodegenError;

/// The metadata kind naming a bounds check's fault path: a node of two `i32`s, the function's
/// id and the check's number in it.
pub(crate) const FAULT_TAG: &str = "kache.fault";

/// Removes from `m` the bounds checks that constraint elimination proves on a copy of it.
pub(super) fn fold_proven_checks(m: &Module<'_>, tm: &TargetMachine) -> Result<usize, CodegenError> {
    let kind = m.get_context().get_kind_id(FAULT_TAG);
    let paths = tagged_paths(m, kind);
    if paths.is_empty() {
        return Ok(0);
    }
    let copy = m.clone();
    let run = |passes: &str| {
        copy.run_passes(passes, tm, PassBuilderOptions::create()).map_err(|e| CodegenError::Llvm(format!("passes: {}", e.to_string())))
    };
    // SROA, CFG simplification and early CSE, so that the conditions are SSA values, a `&&`
    // chain a chain of selects rather than a phi, and one `k + 1` one value; correlated
    // propagation, which proves that `k + 1` does not wrap where `k` is a thread's index
    // (without `nuw` constraint elimination cannot take `k + 1 < nz` to mean `k < nz`).
    run("function(sroa,simplifycfg,early-cse,correlated-propagation)")?;
    forget_nsw_of_negative_steps(&copy);
    run("function(constraint-elimination)")?;
    let copy_edges = edges(&copy);
    let dead: HashSet<(u64, u64)> = tagged_paths(&copy, kind)
        .into_iter()
        .filter(|(_, block)| copy_edges.get(block).is_some_and(|es| es.iter().all(|e| e.dead)))
        .map(|(tag, _)| tag)
        .collect();
    let mut module_edges = edges(m);
    let mut folded = 0;
    for (tag, block) in paths {
        if !dead.contains(&tag) {
            continue;
        }
        // Every edge into the path is a conditional branch (as lowered): each is pointed away.
        let into = module_edges.remove(&block).unwrap_or_default();
        let Some(branches) = into.into_iter().map(|e| e.branch).collect::<Option<Vec<_>>>() else { continue };
        for (branch, to_fault_when) in branches {
            let never = m.get_context().bool_type().const_int(u64::from(!to_fault_when), false);
            if branch.set_operand(0, never) {
                folded += 1;
            }
        }
    }
    Ok(folded)
}

/// Each tagged fault path of `m`: its tag and its block.
fn tagged_paths<'ctx>(m: &Module<'ctx>, kind: u32) -> Vec<((u64, u64), BasicBlock<'ctx>)> {
    let mut out = Vec::new();
    let mut f = m.get_first_function();
    while let Some(func) = f {
        f = func.get_next_function();
        for block in func.get_basic_block_iter() {
            let Some(first) = block.get_first_instruction() else { continue };
            let Some(node) = first.get_metadata(kind) else { continue };
            let ids: Vec<u64> = node
                .get_node_values()
                .unwrap_or_default()
                .into_iter()
                .filter(|v| v.is_int_value())
                .filter_map(|v| v.into_int_value().get_zero_extended_constant())
                .collect();
            if let [fid, n] = ids[..] {
                out.push(((fid, n), block));
            }
        }
    }
    out
}

/// An edge into a block: whether it is never taken (its branch's condition a constant that
/// goes the other way), and for a conditional branch the branch and the condition's value that
/// takes this edge.
struct Edge<'ctx> {
    dead: bool,
    branch: Option<(InstructionValue<'ctx>, bool)>,
}

/// The edges into each block of `m` from the terminators of its function's blocks.
fn edges<'ctx>(m: &Module<'ctx>) -> HashMap<BasicBlock<'ctx>, Vec<Edge<'ctx>>> {
    let mut out: HashMap<BasicBlock<'ctx>, Vec<Edge<'ctx>>> = HashMap::new();
    let mut f = m.get_first_function();
    while let Some(func) = f {
        f = func.get_next_function();
        for block in func.get_basic_block_iter() {
            let Some(term) = block.get_terminator() else { continue };
            let successors = term.get_num_operands();
            let conditional_br = term.get_opcode() == InstructionOpcode::Br && successors == 3;
            // A conditional `br`'s operands: the condition, the false and the true target.
            let constant = conditional_br
                .then(|| term.get_operand(0).and_then(|o| o.value()))
                .flatten()
                .filter(|v| v.is_int_value())
                .map(|v| v.into_int_value())
                .filter(|c| c.is_const())
                .and_then(|c| c.get_zero_extended_constant());
            for i in 0..successors {
                let Some(to) = term.get_operand(i).and_then(|o| o.block()) else { continue };
                let edge = if conditional_br {
                    let when = i == 2;
                    Edge { dead: constant.is_some_and(|c| (c != 0) != when), branch: Some((term, when)) }
                } else {
                    Edge { dead: false, branch: None }
                };
                out.entry(to).or_default().push(edge);
            }
        }
    }
    out
}

/// Drops `nsw` from each `add x, C` with a negative constant `C` (what `x - 1` is built as):
/// LLVM 19's constraint elimination reads `add nsw x, -1` as `x` plus the unsigned constant
/// 2^64 - 1, and so proves nothing of `x - 1 < n`, where it reads a plain `add x, -1` as `x - 1`
/// given `x >= 1`. Dropping a flag only forgets a fact (of the copy, which is then discarded).
fn forget_nsw_of_negative_steps(m: &Module<'_>) {
    let mut f = m.get_first_function();
    while let Some(func) = f {
        f = func.get_next_function();
        for block in func.get_basic_block_iter() {
            let mut i = block.get_first_instruction();
            while let Some(inst) = i {
                i = inst.get_next_instruction();
                if inst.get_opcode() != InstructionOpcode::Add || !inst.get_no_signed_wrap_flag().unwrap_or(false) {
                    continue;
                }
                let negative = inst
                    .get_operand(1)
                    .and_then(|o| o.value())
                    .filter(|v| v.is_int_value())
                    .map(|v| v.into_int_value())
                    .filter(|c| c.is_const())
                    .and_then(|c| c.get_sign_extended_constant())
                    .is_some_and(|c| c < 0);
                if negative && inst.as_any_value_enum().is_int_value() {
                    let _ = inst.set_no_signed_wrap_flag(false);
                }
            }
        }
    }
}
