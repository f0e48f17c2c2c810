//! The Rust names of generated code: from kernel file names, kernel names and parameter names
//! to Rust identifiers that always compile (docs/prebuild.md, "Names", states the mapping).

use std::collections::HashSet;

use proc_macro2::{Ident, Span};

/// Words some edition of Rust reserves (strict, reserved and weak keywords). A name among them
/// is written as a raw identifier (`r#loop`), which compiles in every edition, so the generated
/// file does not depend on the edition of the crate that includes it.
const KEYWORDS: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "const",
    "continue",
    "crate",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "fn",
    "for",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "pub",
    "ref",
    "return",
    "self",
    "Self",
    "static",
    "struct",
    "super",
    "trait",
    "true",
    "type",
    "unsafe",
    "use",
    "where",
    "while",
    "abstract",
    "become",
    "box",
    "do",
    "final",
    "gen",
    "macro",
    "override",
    "priv",
    "try",
    "typeof",
    "unsized",
    "virtual",
    "yield",
    "macro_rules",
    "raw",
    "safe",
    "union",
];

/// Names that a raw identifier cannot carry; they get a trailing `_` instead.
const NOT_RAW: &[&str] = &["self", "Self", "super", "crate", "_"];

/// Names that Rust reads as a pattern, not a new binding, in parameter position: the unit and
/// tuple variants of the prelude.
const PATTERNS: &[&str] = &["Some", "None", "Ok", "Err"];

/// The Rust name of a kernel file's stem or of a kernel-language name, as text (without `r#`):
/// ASCII letters, digits and `_` stay; `-` becomes `_`; any other character becomes `_u` and
/// its code point in four or more hex digits; a leading digit (or nothing at all) gets a `_`
/// in front; and `self`, `Self`, `super`, `crate` and `_` get a `_` behind. Non-ASCII
/// characters are spelled out because rustc warns about some of them in identifiers
/// (`uncommon_codepoints`, `confusable_idents`) with lints that only a crate-level attribute
/// could allow.
pub(crate) fn rust_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' => out.push(c),
            '-' => out.push('_'),
            _ => out.push_str(&format!("_u{:04x}", c as u32)),
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if NOT_RAW.contains(&out.as_str()) {
        out.push('_');
    }
    out
}

/// The Rust name of a kernel or of an instance of a generic kernel: [`rust_name`] of the
/// kernel's name, and for an instance its generic arguments after it, each behind a `_`
/// (`axpy::<f32>` is `axpy_f32`, `conv1d::<f32, 3>` `conv1d_f32_3`, `k::<-1>` `k_m1`). No two
/// instances of one kernel map to one name; an instance that maps to the name of another
/// kernel is a collision the build reports.
pub(crate) fn instance_rust_name(name: &str) -> String {
    rust_name(&crate::lang::file_stem(name))
}

/// The identifier for a name made by [`rust_name`] (or a generated one): raw where it is a
/// keyword.
pub(crate) fn ident(name: &str) -> Ident {
    if KEYWORDS.contains(&name) { Ident::new_raw(name, Span::call_site()) } else { Ident::new(name, Span::call_site()) }
}

/// The parameter names of a generated launch function.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct LaunchParams {
    /// The device parameter: `kache_device`, with `_` appended while a kernel parameter has
    /// that name.
    pub(crate) device: String,
    /// The grid parameter: `kache_grid`, likewise.
    pub(crate) grid: String,
    /// One per kernel parameter: its [`rust_name`], except for `_`, the prelude's variant names
    /// (`Some`, `None`, `Ok`, `Err`) and a name that an earlier parameter already took (the
    /// language accepts it twice), which become `arg<position>` (with `_` appended while
    /// taken).
    pub(crate) params: Vec<String>,
}

/// Names the parameters of the launch function for a kernel with the given parameter names,
/// so that no two are alike and each can be bound and used.
pub(crate) fn launch_params(kernel_params: &[&str]) -> LaunchParams {
    let mut taken = HashSet::new();
    let mut params: Vec<Option<String>> = Vec::with_capacity(kernel_params.len());
    for p in kernel_params {
        let name = rust_name(p);
        let usable = *p != "_" && !PATTERNS.contains(&name.as_str()) && !taken.contains(&name);
        if usable {
            taken.insert(name.clone());
        }
        params.push(usable.then_some(name));
    }
    let mut fresh = |base: String| {
        let mut name = base;
        while taken.contains(&name) {
            name.push('_');
        }
        taken.insert(name.clone());
        name
    };
    let device = fresh("kache_device".into());
    let grid = fresh("kache_grid".into());
    let params = params.into_iter().enumerate().map(|(i, p)| p.unwrap_or_else(|| fresh(format!("arg{i}")))).collect();
    LaunchParams { device, grid, params }
}

/// The first pair of inputs that map to one Rust name, if any: `(first, second, rust name)`.
pub(crate) fn first_collision<'a>(names: impl IntoIterator<Item = (&'a str, String)>) -> Option<(&'a str, &'a str, String)> {
    let mut seen: std::collections::HashMap<String, &'a str> = std::collections::HashMap::new();
    for (original, rust) in names {
        if let Some(first) = seen.get(&rust) {
            return Some((first, original, rust));
        }
        seen.insert(rust, original);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_as_documented() {
        for (name, rust) in [
            ("saxpy", "saxpy"),
            ("Fill", "Fill"),
            ("my-kernels", "my_kernels"),
            ("2d", "_2d"),
            ("a.b", "a_u002eb"),
            ("café", "caf_u00e9"),
            ("self", "self_"),
            ("Self", "Self_"),
            ("super", "super_"),
            ("crate", "crate_"),
            ("_", "__"),
            ("loop", "loop"),
            ("", "__"),
            ("😀", "_u1f600"),
        ] {
            assert_eq!(rust_name(name), rust, "{name}");
        }
        assert_eq!(ident("loop").to_string(), "r#loop");
        assert_eq!(ident("gen").to_string(), "r#gen");
        assert_eq!(ident("source").to_string(), "source");
    }

    /// The table of docs/prebuild.md, "Names", row by row.
    #[test]
    fn the_documented_table_holds() {
        let doc = include_str!("../../docs/prebuild.md");
        let section = &doc[doc.find("## Names").unwrap()..];
        let spans = |cell: &str| cell.split(", ").map(|s| s.trim().trim_matches('`').to_string()).collect::<Vec<_>>();
        let mut rows = 0;
        for line in section.lines().skip_while(|l| !l.starts_with("| Name")).skip(2).take_while(|l| l.starts_with('|')) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let (names, rust) = (spans(cells[1]), spans(cells[2]));
            assert_eq!(names.len(), rust.len(), "{line}");
            for (name, rust) in names.iter().zip(&rust) {
                assert_eq!(&ident(&rust_name(name)).to_string(), rust, "{line}");
            }
            rows += 1;
        }
        assert!(rows >= 5, "the table of docs/prebuild.md was not found");
    }

    #[test]
    fn launch_parameters_never_clash() {
        let p = launch_params(&["a", "x"]);
        assert_eq!(p, LaunchParams { device: "kache_device".into(), grid: "kache_grid".into(), params: vec!["a".into(), "x".into()] });
        let p = launch_params(&["kache_grid", "kache_device", "kache_device_"]);
        assert_eq!((p.device.as_str(), p.grid.as_str()), ("kache_device__", "kache_grid_"));
        assert_eq!(p.params, ["kache_grid", "kache_device", "kache_device_"]);
        let p = launch_params(&["_", "None", "x", "x", "arg0", "_"]);
        assert_eq!(p.params, ["arg0_", "arg1", "x", "arg3", "arg0", "arg5"]);
    }

    #[test]
    fn collisions_are_found() {
        let files = ["a-b", "c", "a_b"];
        assert_eq!(first_collision(files.iter().map(|f| (*f, rust_name(f)))), Some(("a-b", "a_b", "a_b".to_string())));
        assert_eq!(first_collision(["a", "b"].iter().map(|f| (*f, rust_name(f)))), None);
    }
}
