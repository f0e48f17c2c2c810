//! A large block parsed and lowered on several threads.
//!
//! `syn` and the lowering after it are most of a large kernel's front end, and they run on one
//! thread: the tokens and the syntax tree cannot leave the thread that made them. A file that
//! is large enough is therefore read more than once: the block with the most statements is cut
//! after a `;` of its own into parts of about as many statements each, and each later part is
//! tokenized, parsed (`Block::parse_within`) and lowered on a thread of its own from a copy of
//! the file in which everything before the part is blanked out (same bytes, same lines, so
//! every span is the one a whole parse gives). This thread parses the file with those parts
//! blanked out, and its lowering of the block appends their statements to the block's own.
//!
//! A `;` at the top of a block always ends a statement, so the parts hold the statements a
//! whole parse finds, each parsed from its first token. What a part cannot know is checked
//! where the parts meet: its depth of nesting from the block's, and the names it asked about
//! as type parameters (it knew none). Anything else (an error in any part, a block that is not
//! a block of statements, a thread that cannot start) gives the parse up, and the caller
//! parses the file again on one thread: output and errors are always a whole parse's.

use std::ops::Range;
use std::str::FromStr;
use std::sync::mpsc;

use proc_macro2::{TokenStream, TokenTree};

use crate::lang::ast::{Expr, Stmt};
use crate::lang::diag::Diagnostic;
use crate::lang::source::SourceFile;
use crate::span::Span;

use super::limits::{MAX_EXPR_DEPTH, Scan};
use super::spans::{LinesGuard, sp};
use super::{Lower, PResult, parse_tokens};

/// When a file is parsed in parts.
#[derive(Clone, Copy)]
struct Limits {
    /// Files shorter than this parse on one thread (about 600 short statements: below it, the
    /// threads' start and the blanked copies cost more than they save).
    min_bytes: usize,
    /// Fewest statements a part holds.
    min_part_stmts: usize,
    /// Most parts (the block's own thread lowers one).
    threads: usize,
}

fn limits() -> Limits {
    #[cfg(test)]
    if let Some(l) = tests::LIMITS.with(|l| l.get()) {
        return l;
    }
    Limits { min_bytes: 24 << 10, min_part_stmts: 256, threads: crate::parallel::default_threads() }
}

/// Where a file's largest block is cut.
pub(super) struct Plan {
    /// Byte offset (the crate's) of the block's `{`.
    open: usize,
    /// Offsets just after the `;`s the block is cut at, then of its `}`: part `i` (from 1)
    /// is `cuts[i - 1]..cuts[i]`; part 0, the block's first statements, stays in the file.
    cuts: Vec<usize>,
}

/// The block being joined and the results of its later parts, in order.
pub(super) struct Join {
    /// Byte offset of the block's `{`.
    pub(super) at: usize,
    parts: Vec<mpsc::Receiver<Option<Part>>>,
}

/// One later part of a block, lowered.
pub(super) struct Part {
    stmts: Vec<Stmt>,
    tail: Option<Box<Expr>>,
    /// Deepest nesting reached, counted from the block's statements.
    depth: usize,
    /// The names its lowering asked about as type parameters.
    asked: Vec<String>,
}

/// Whether a parse in parts is worth trying for `file`: it is large, and the machine has
/// more than one core.
pub(super) fn worth_trying(file: &SourceFile) -> bool {
    let limits = limits();
    file.text().len() >= limits.min_bytes && limits.threads >= 2
}

/// The plan for the block `prescan` found (with its number of `;`), if it has statements
/// enough for two parts.
pub(super) fn plan(block: Option<(proc_macro2::Group, usize)>) -> Option<Plan> {
    let (group, semis) = block?;
    let limits = limits();
    let parts = limits.threads.min(semis / limits.min_part_stmts.max(1));
    if parts < 2 {
        return None;
    }
    let mut cuts = Vec::with_capacity(parts);
    let mut seen = 0;
    for tt in group.stream() {
        if let TokenTree::Punct(p) = &tt
            && p.as_char() == ';'
        {
            seen += 1;
            if cuts.len() + 1 < parts && seen * parts >= (cuts.len() + 1) * semis {
                cuts.push(sp(p.span()).hi as usize);
            }
        }
    }
    cuts.push(sp(group.span_close()).lo as usize);
    Some(Plan { open: sp(group.span_open()).lo as usize, cuts })
}

/// Parses `file` into `lower` as `plan` says; `false` if that was given up (`lower` is then
/// to be reset and the file parsed on one thread).
pub(super) fn parse(file: &SourceFile, plan: &Plan, scan: &Scan, lower: &mut Lower) -> bool {
    let text = file.text();
    let base = file.base();
    let local = |offset: usize| offset - base;
    let first_cut = local(plan.cuts[0]);
    let last = local(plan.cuts[plan.cuts.len() - 1]);
    let shallow = scan.shallow();
    std::thread::scope(|s| {
        let mut parts = Vec::with_capacity(plan.cuts.len() - 1);
        for (i, range) in plan.cuts.windows(2).map(|w| local(w[0])..local(w[1])).enumerate() {
            let (tx, rx) = mpsc::channel();
            let is_last = i + 2 == plan.cuts.len();
            let job = move || {
                // A receiver gone (the block's thread gave up) is nothing to report.
                let _ = tx.send(part(file, range, is_last, shallow));
            };
            let started = std::thread::Builder::new().name(format!("kache-parse-{}", i + 1)).stack_size(8 << 20).spawn_scoped(s, job);
            if started.is_err() {
                return false;
            }
            parts.push(rx);
        }
        let Some(main) = blanked(text, first_cut..last, text.len()) else { return false };
        let main = SourceFile::with_base(file.name(), main, base);
        let _lines = LinesGuard::set(&main);
        let Ok(tokens) = TokenStream::from_str(main.text()) else { return false };
        lower.split = Some(Join { at: plan.open, parts });
        let done = parse_tokens(tokens, scan, lower).is_ok() && lower.split.is_none();
        lower.split = None;
        #[cfg(test)]
        if done {
            tests::SPLITS.with(|n| n.set(n.get() + 1));
        }
        done
    })
}

/// `text` up to `end` with the bytes in `blank` made spaces (line breaks kept).
fn blanked(text: &str, blank: Range<usize>, end: usize) -> Option<String> {
    let bytes = text.as_bytes().get(..end)?;
    let mut out = Vec::with_capacity(end);
    out.extend_from_slice(bytes.get(..blank.start)?);
    out.extend(bytes.get(blank.clone())?.iter().map(|&b| if b == b'\n' { b'\n' } else { b' ' }));
    out.extend_from_slice(bytes.get(blank.end..)?);
    String::from_utf8(out).ok()
}

/// Tokenizes, parses and lowers the statements in `range` of `file` (local offsets); `None`
/// on any error.
fn part(file: &SourceFile, range: Range<usize>, is_last: bool, shallow: bool) -> Option<Part> {
    let text = blanked(file.text(), 0..range.start, range.end)?;
    let own = SourceFile::with_base(file.name(), text, file.base());
    let run = || -> Option<Part> {
        let _lines = LinesGuard::set(&own);
        let tokens = TokenStream::from_str(own.text()).ok()?;
        let lower_part = || -> Option<Part> {
            let stmts = syn::parse::Parser::parse2(syn::Block::parse_within, tokens).ok()?;
            let mut lower = Lower { asked: Some(Default::default()), ..Lower::default() };
            let (stmts, tail) = lower.stmts(&stmts, is_last).ok()?;
            Some(Part { stmts, tail, depth: lower.max_depth, asked: lower.asked.take()?.into_inner() })
        };
        if shallow { crate::stack::ensure(1 << 20, 16 << 20, lower_part) } else { stacker::grow(256 << 20, lower_part) }
    };
    let r = run();
    proc_macro2::extra::invalidate_current_thread_spans();
    r
}

impl Lower {
    /// Appends the later parts of the block being joined to its statements (`block`); an
    /// error if any part failed or does not fit here, which gives the parse up.
    pub(super) fn join_parts(&mut self, stmts: &mut Vec<Stmt>, tail: &mut Option<Box<Expr>>) -> PResult<()> {
        let gave_up = || Box::new(Diagnostic::error(Span::new(0, 0), "a block parsed in parts did not join"));
        let join = self.split.take().ok_or_else(gave_up)?;
        for rx in join.parts {
            let part = rx.recv().ok().flatten().ok_or_else(gave_up)?;
            if self.depth + part.depth > MAX_EXPR_DEPTH || part.asked.iter().any(|n| self.type_params.contains(n)) {
                return Err(gave_up());
            }
            stmts.extend(part.stmts);
            *tail = part.tail;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::Limits;
    use crate::lang::{MemorySources, parse_crate};

    thread_local! {
        pub(super) static LIMITS: Cell<Option<Limits>> = const { Cell::new(None) };
        /// Files parsed in parts on this thread.
        pub(super) static SPLITS: Cell<usize> = const { Cell::new(0) };
    }

    /// What a parse gives, as text: the items and modules, or the diagnostics.
    fn outcome(name: &str, src: &str, files: &[(&str, &str)], parts: Option<usize>) -> (String, usize) {
        LIMITS.with(|l| l.set(Some(Limits { min_bytes: 0, min_part_stmts: 2, threads: parts.unwrap_or(1) })));
        let before = SPLITS.with(|n| n.get());
        let mut loader = files.iter().fold(MemorySources::new(), |m, (p, t)| m.with(p, *t));
        let r = parse_crate(name, src.as_bytes(), Some(&mut loader));
        LIMITS.with(|l| l.set(None));
        let text = match r {
            Ok(m) => format!("{:?}\n{:?}", m.items, m.modules),
            Err(d) => format!("{d:?}"),
        };
        (text, SPLITS.with(|n| n.get()) - before)
    }

    /// Parsed in 2, 3 and 5 parts, `src` gives what one thread gives; returns how many of
    /// those parses were made in parts.
    fn same_in_parts(name: &str, src: &str, files: &[(&str, &str)]) -> usize {
        let (whole, none) = outcome(name, src, files, None);
        assert_eq!(none, 0);
        let mut split = 0;
        for parts in [2, 3, 5] {
            let (text, n) = outcome(name, src, files, Some(parts));
            assert_eq!(text, whole, "{name} in {parts} parts");
            split += n;
        }
        split
    }

    fn body(stmts: &str, n: usize) -> String {
        (0..n).map(|i| stmts.replace("{i}", &i.to_string())).collect()
    }

    /// Corpus kernels of every kind of syntax (generics, structs, tuples, matches, closures
    /// in factories, local arrays, nested loops) parse in parts to what they parse to whole,
    /// and their blocks are parsed in parts.
    #[test]
    fn corpus_kernels_parse_in_parts_as_they_do_whole() {
        let corpus = [
            ("bitonic_sort", include_str!("../../../cache-fixtures/kernels/bitonic_sort.rs")),
            ("complex_struct", include_str!("../../../cache-fixtures/kernels/complex_struct.rs")),
            ("control_flow", include_str!("../../../cache-fixtures/kernels/control_flow.rs")),
            ("generic_axpy", include_str!("../../../cache-fixtures/kernels/generic_axpy.rs")),
            ("generic_matmul_tiled", include_str!("../../../cache-fixtures/kernels/generic_matmul_tiled.rs")),
            ("match_ints", include_str!("../../../cache-fixtures/kernels/match_ints.rs")),
            ("nbody_structs", include_str!("../../../cache-fixtures/kernels/nbody_structs.rs")),
            ("operators", include_str!("../../../cache-fixtures/kernels/operators.rs")),
            ("precedence_literals", include_str!("../../../cache-fixtures/kernels/precedence_literals.rs")),
            ("rows_in_registers", include_str!("../../../cache-fixtures/kernels/rows_in_registers.rs")),
            ("scopes_shadowing", include_str!("../../../cache-fixtures/kernels/scopes_shadowing.rs")),
            ("softmax_warp", include_str!("../../../cache-fixtures/kernels/softmax_warp.rs")),
            ("state_machine", include_str!("../../../cache-fixtures/kernels/state_machine.rs")),
            ("tuples_extremes", include_str!("../../../cache-fixtures/kernels/tuples_extremes.rs")),
            ("type_inference", include_str!("../../../cache-fixtures/kernels/type_inference.rs")),
            ("window_const_generic", include_str!("../../../cache-fixtures/kernels/window_const_generic.rs")),
            ("welford_tuples", include_str!("../../../cache-fixtures/kernels/welford_tuples.rs")),
            ("mat3_local_arrays", include_str!("../../../cache-fixtures/kernels/mat3_local_arrays.rs")),
        ];
        let mut split = 0;
        for (name, src) in corpus {
            split += same_in_parts(name, src, &[]);
        }
        assert!(split > corpus.len(), "only {split} parses in parts");
    }

    /// Blocks with a tail, nested blocks, loops, `let`s with types and patterns, characters
    /// of several bytes in comments and names around the cuts, and a block in a module's file
    /// (spans offset by the root's length): the same statements, spans and tails in parts.
    #[test]
    fn statements_spans_and_tails_are_the_same_in_parts() {
        let stmts = "    let a{i}: f32 = x[i] * 2.0; // é{i} ü\n    let (p{i}, q{i}) = (a{i}, 1.0f32);\n    \
                     if p{i} > q{i} { s += p{i}; } else { s -= q{i}; }\n    for j in 0..4 { s += j as f32; }\n    /* ß */ s = s * 0.5 + a{i};\n";
        let src = format!(
            "#[kernel]\npub fn k(x: &mut [f32]) {{\n    let i = global_id_x();\n    let mut s = 0.0f32;\n{}    x[i] = {{ let t = s; if t > 0.0 {{ t }} else {{ -t }} }}\n}}\n\
             fn tail(x: f32) -> f32 {{\n{}    x * 2.0\n}}\n",
            body(stmts, 40),
            body("    let y{i} = x + {i}.0;\n", 60)
        );
        assert!(same_in_parts("k.rs", &src, &[]) >= 3);
        let root = "mod util;\n#[kernel]\npub fn k(x: &mut [f32]) { x[0] = util::f(1.0); }\n";
        let util = format!("pub fn f(x: f32) -> f32 {{\n    let mut s = x;\n{}    s\n}}\n", body("    s = s * 1.5 + {i}.0; // ø\n", 50));
        assert!(same_in_parts("lib.rs", root, &[("util.rs", &util)]) >= 3);
    }

    /// What a part cannot know makes the parse whole again: a type parameter named in a later
    /// part, nesting that is too deep only from the block's depth, and errors (syntax,
    /// unsupported forms, items in a body) anywhere; a module's body with many `;` is not a
    /// block. Each gives what one thread gives.
    #[test]
    fn what_a_part_cannot_know_gives_the_whole_parse() {
        let generic = format!(
            "pub fn g<T: Float>(x: T) -> T {{\n    let mut s = x;\n{}    s\n}}\n#[kernel]\npub fn k(x: &mut [f32]) {{ x[0] = g(x[0]); }}\n",
            body("    s = s * T::ONE + x;\n", 30)
        );
        assert_eq!(same_in_parts("g.rs", &generic, &[]), 0);
        let plain = generic.replace("T::ONE", "x");
        assert!(same_in_parts("p.rs", &plain, &[]) > 0, "a body without the parameter's name is parsed in parts");
        let errors = [
            ("syntax", "    s = s * ;\n"),
            ("unsupported", "    let r = &s;\n"),
            ("item", "    fn inner() {}\n"),
            ("macro", "    assert!(s > 0.0);\n"),
            ("tokens", "    s = s * 1.0 + \u{1F600};\n"),
        ];
        for (what, bad) in errors {
            let src = format!(
                "#[kernel]\npub fn k(x: &mut [f32]) {{\n    let mut s = x[0];\n{}{bad}{}    x[0] = s;\n}}\n",
                body("    s = s + {i}.0;\n", 20),
                body("    s = s - {i}.0;\n", 20)
            );
            same_in_parts(what, &src, &[]);
        }
        let deep = format!(
            "#[kernel]\npub fn k(x: &mut [f32]) {{\n    let mut s = x[0];\n{}    s = {}s{};\n    x[0] = s;\n}}\n",
            body("    s = s + {i}.0;\n", 20),
            "(".repeat(crate::lang::MAX_EXPR_DEPTH - 2),
            ")".repeat(crate::lang::MAX_EXPR_DEPTH - 2)
        );
        same_in_parts("deep", &deep, &[]);
        let module = format!(
            "mod m {{\n{}}}\n#[kernel]\npub fn k(x: &mut [f32]) {{ x[0] = m::C0; }}\n",
            body("    pub const C{i}: f32 = {i}.0;\n", 30)
        );
        assert_eq!(same_in_parts("m.rs", &module, &[]), 0);
    }

    /// Random bodies (statements, nested blocks, loops, comments holding `;` and braces and
    /// characters of several bytes, blank lines, now and then an error) give in parts what they
    /// give whole.
    #[test]
    fn random_bodies_parse_in_parts_as_they_do_whole() {
        use proptest::prelude::*;
        fn stmt() -> impl Strategy<Value = String> {
            let leaf = prop_oneof![
                (0..9u32).prop_map(|k| format!("s = s * 1.{k} + x[0];")),
                (0..9u32).prop_map(|k| format!("let t{k}: f32 = s - {k}.5;")),
                (0..9u32).prop_map(|k| format!("// é; {{ }} {k}\n")),
                (0..9u32).prop_map(|k| format!("/* ; }} ü {k} */ s += 1.0;")),
                Just(";".to_string()),
                Just("\n\n".to_string()),
                Just("s = s * ;".to_string()),
                Just("let r = &s;".to_string()),
            ];
            leaf.prop_recursive(3, 40, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..6)
                        .prop_map(|b| format!("if s > 0.0 {{ {} }} else {{ s -= 1.0; }}", b.concat())),
                    prop::collection::vec(inner.clone(), 0..6).prop_map(|b| format!("for j in 0..3 {{ {} }}", b.concat())),
                    prop::collection::vec(inner, 0..6).prop_map(|b| format!("loop {{ {} break; }}", b.concat())),
                ]
            })
        }
        let config = ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() };
        proptest!(config, |(body in prop::collection::vec(stmt(), 4..40), tail in any::<bool>())| {
            let end = if tail { "s" } else { "" };
            let src = format!(
                "pub fn f(x: &[f32]) -> f32 {{\n    let mut s = 0.0f32;\n{}\n    {end}\n}}\n#[kernel]\npub fn k(x: &mut [f32]) {{ x[0] = f(x); }}\n",
                body.join("\n    ")
            );
            let (whole, _) = outcome("r.rs", &src, &[], None);
            for parts in [2, 3, 5] {
                prop_assert_eq!(&outcome("r.rs", &src, &[], Some(parts)).0, &whole);
            }
        });
    }
}
