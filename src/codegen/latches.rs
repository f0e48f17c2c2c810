//! Loop latches in the form ptxas unrolls again, written into the PTX text LLVM emits.
//!
//! LLVM's NVPTX back end cannot invert a branch after block placement, so a loop whose exit
//! block is placed right after it ends
//!
//! ```text
//!     setp.eq.s64   %p3, %rd107, 0;
//!     @%p3 bra      $L__BB0_4;        // the exit
//!     bra.uni       $L__BB0_3;        // the back edge
//! $L__BB0_4:
//! ```
//!
//! and ptxas does not unroll such a loop again: layernorm's first pass, unrolled by 4 by LLVM,
//! kept 4 loads a trip where NVRTC's same loop, which ends in a conditional back edge, has 16
//! (ptxas unrolls NVVM's 4 by 4 again). Where the compare is an integer `eq` or `ne` right
//! before the branch, feeds nothing else, and the unconditional branch goes back to a label
//! above it (a loop's header), the three lines become the compare's opposite and a conditional
//! back edge, the exit reached by falling through:
//!
//! ```text
//!     setp.ne.s64   %p3, %rd107, 0;
//!     @%p3 bra      $L__BB0_3;
//! $L__BB0_4:
//! ```
//!
//! The same control flow: `a == b` is false exactly where `a != b` is true, for integers.

/// `ptx` with every such latch rewritten (see the module's documentation).
pub(crate) fn conditional_back_edges(ptx: &str) -> String {
    let lines: Vec<&str> = ptx.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    // The labels defined so far in the current function (a branch to one is a back edge), and
    // where the function starts.
    let mut above: Vec<&str> = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with(".visible .entry") || line.starts_with(".entry") || line.starts_with(".func") || line.contains(" .func ") {
            above.clear();
            start = i;
        }
        if let Some(label) = line.strip_suffix(':').filter(|l| l.starts_with("$L__")) {
            above.push(label);
        }
        if i + 3 < lines.len()
            && let Some(rewritten) = latch(&lines[i..i + 4], &above, &lines[start..], i - start)
        {
            out.extend(rewritten);
            i += 3; // the label line is pushed by the next iteration
            continue;
        }
        out.push(line.to_string());
        i += 1;
    }
    let mut text = out.join("\n");
    if ptx.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The two lines that replace `w[0..3]` (compare, branch to the exit, branch back), `w[3]` being
/// the exit's label, or `None` where the window is not such a latch. `func` is the function
/// from its first line, `at` the compare's index in it, to check that the predicate the compare
/// writes is read by the branch alone.
fn latch(w: &[&str], above: &[&str], func: &[&str], at: usize) -> Option<[String; 2]> {
    let (setp, cond, back, exit_label) = (w[0].trim(), w[1].trim(), w[2].trim(), w[3].strip_suffix(':')?);
    // `setp.eq.s64 \t%p3, %rd107, 0;`
    let (op, operands) = setp.split_once(char::is_whitespace)?;
    let mut parts = op.split('.');
    let (_, cmp, ty) = (parts.next().filter(|p| *p == "setp")?, parts.next()?, parts.next()?);
    if parts.next().is_some() || !matches!(ty, "s16" | "s32" | "s64" | "u16" | "u32" | "u64" | "b16" | "b32" | "b64") {
        return None;
    }
    let opposite = match cmp {
        "eq" => "ne",
        "ne" => "eq",
        _ => return None,
    };
    let pred = operands.trim().split(',').next()?.trim();
    if !pred.starts_with("%p") || pred.contains('|') {
        return None;
    }
    // `@%p3 bra \t$L__BB0_4;` to the label right after the back edge.
    let target = cond.strip_prefix(&format!("@{pred}"))?.trim().strip_prefix("bra")?.trim().strip_suffix(';')?.trim();
    if target != exit_label {
        return None;
    }
    // `bra.uni \t$L__BB0_3;` to a label above: the loop's header.
    let header = back.strip_prefix("bra.uni")?.trim().strip_suffix(';')?.trim();
    if !above.contains(&header) {
        return None;
    }
    // The predicate is named by the compare and the branch only, nowhere else in the function
    // (not after the loop, nor above the compare, read around the back edge).
    let names = |l: &&str| l.split(|c: char| !(c.is_alphanumeric() || c == '%' || c == '_')).any(|t| t == pred);
    let end = func.iter().position(|l| l.starts_with('}')).unwrap_or(func.len());
    let uses = func[..end].iter().enumerate().any(|(k, l)| k != at && k != at + 1 && names(l));
    if uses {
        return None;
    }
    let indent = &w[0][..w[0].len() - w[0].trim_start().len()];
    Some([format!("{indent}setp.{opposite}.{ty} \t{}", operands.trim()), format!("{indent}@{pred} bra \t{header};")])
}

#[cfg(test)]
mod tests {
    use super::conditional_back_edges;

    const LOOP: &str = ".visible .entry k(\n)\n{\n$L__BB0_3:\n\tld.global.nc.f32 \t%f24, [%rd106];\n\tadd.s64 \t%rd107, %rd107, 4;\n\tsetp.eq.s64 \t%p3, %rd107, 0;\n\t@%p3 bra \t$L__BB0_4;\n\tbra.uni \t$L__BB0_3;\n$L__BB0_4:\n\tret;\n}\n";

    #[test]
    fn a_latch_that_branches_to_its_exit_becomes_a_conditional_back_edge() {
        let got = conditional_back_edges(LOOP);
        assert!(got.contains("\tsetp.ne.s64 \t%p3, %rd107, 0;\n\t@%p3 bra \t$L__BB0_3;\n$L__BB0_4:\n"), "{got}");
        assert!(!got.contains("bra.uni"), "{got}");
    }

    #[test]
    fn what_is_not_such_a_latch_is_left_as_it_is() {
        // A forward branch (no label above), a float compare (NaN: not the opposite), a
        // predicate read again after the branch, an exit that is not the next label.
        let forward = LOOP.replace("bra.uni \t$L__BB0_3;", "bra.uni \t$L__BB0_9;");
        let float = LOOP.replace("setp.eq.s64 \t%p3, %rd107, 0;", "setp.eq.f32 \t%p3, %f24, 0f00000000;");
        let reused = LOOP.replace("\tret;", "\tselp.b32 \t%r1, 1, 0, %p3;\n\tret;");
        let read_above = LOOP.replace("\tadd.s64 \t%rd107", "\t@%p3 add.s64 \t%rd9, %rd9, 1;\n\tadd.s64 \t%rd107");
        let elsewhere = LOOP.replace("@%p3 bra \t$L__BB0_4;", "@%p3 bra \t$L__BB0_7;");
        let lt = LOOP.replace("setp.eq.s64", "setp.lt.s64");
        for ptx in [forward, float, reused, read_above, elsewhere, lt] {
            assert_eq!(conditional_back_edges(&ptx), ptx);
        }
    }
}
