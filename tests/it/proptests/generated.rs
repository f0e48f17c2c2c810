//! Generated sources: random expression trees (well typed most of the time, ill typed some of
//! the time), random control flow, and random token soups inside a kernel body.

use super::*;

/// The scalar types of generated expressions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum T {
    F32,
    F64,
    U32,
    I32,
    Usize,
    Bool,
}

pub(super) const TYPES: [T; 6] = [T::F32, T::F64, T::U32, T::I32, T::Usize, T::Bool];

impl T {
    fn name(self) -> &'static str {
        match self {
            T::F32 => "f32",
            T::F64 => "f64",
            T::U32 => "u32",
            T::I32 => "i32",
            T::Usize => "usize",
            T::Bool => "bool",
        }
    }
    fn idx(self) -> usize {
        TYPES.iter().position(|t| *t == self).unwrap()
    }
    fn is_float(self) -> bool {
        matches!(self, T::F32 | T::F64)
    }
    fn is_int(self) -> bool {
        matches!(self, T::U32 | T::I32 | T::Usize)
    }
}

/// The kernel generated expressions live in: parameters and items of each type.
pub(super) const EXPR_PRELUDE: &str = "const C: u32 = 3;
pub(super) static TABLE: [f32; 4] = [0.0, 1.0, 2.0, 3.0];

pub(super) fn sq(v: f32) -> f32 {
    v * v
}

#[kernel]
pub fn k(out: &mut [f32], inp: &[f32], a2: &Array<f64, 2>, x: f32, y: f64, n: u32, m: i32, b: bool) {
    let i = global_id_x();
    let j = 0usize;
    if i < out.len() {
";

pub(super) fn leaves(t: T, globals: bool) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = match t {
        T::F32 => vec!["x", "inp[i]", "1.5", "2.0f32", "TABLE[1]", "f32::EPSILON", "0.25", "out[i]"],
        T::F64 => vec!["y", "a2[[i, j]]", "0.5f64", "1e-3", "f64::consts::PI", "3.0"],
        T::U32 => vec!["n", "C", "thread_idx_x()", "block_dim_x()", "7u32", "0", "u32::MAX"],
        T::I32 => vec!["m", "3", "i32::MAX", "42i32", "-7"],
        T::Usize => vec!["i", "j", "out.len()", "a2.shape(1)", "global_id_x()", "3usize", "inp.len()"],
        T::Bool => vec!["b", "true", "false"],
    };
    if globals && t == T::F32 {
        v.extend(["RATE", "PRICES[i % PRICES.len()]"]);
    }
    v
}

/// Well-typed expressions of each type, up to `depth` levels: `table[d][t]`.
pub(super) fn typed_exprs(depth: usize, globals: bool) -> Vec<Vec<SBoxedStrategy<String>>> {
    let mut table: Vec<Vec<SBoxedStrategy<String>>> = Vec::new();
    let leaf = |t: T| proptest::sample::select(leaves(t, globals)).prop_map(str::to_string).sboxed();
    table.push(TYPES.iter().map(|t| leaf(*t)).collect());
    for d in 1..=depth {
        let prev = table[d - 1].clone();
        let sub = |t: T| prev[t.idx()].clone();
        let mut row = Vec::new();
        for &t in &TYPES {
            let mut alts: Vec<(u32, SBoxedStrategy<String>)> = vec![(3, leaf(t))];
            let s = sub(t);
            let c = sub(T::Bool);
            alts.push((1, (c.clone(), s.clone(), s.clone()).prop_map(|(c, a, b)| format!("(if {c} {{ {a} }} else {{ {b} }})")).sboxed()));
            alts.push((1, (s.clone(), s.clone()).prop_map(|(a, b)| format!("{{ let t = {a}; let _u = t; {b} }}")).sboxed()));
            if t == T::Bool {
                for &u in &TYPES[..5] {
                    let e = sub(u);
                    let ops = proptest::sample::select(vec!["<", "<=", ">", ">=", "==", "!="]);
                    alts.push((1, (e.clone(), ops, e).prop_map(|(a, op, b)| format!("({a} {op} {b})")).sboxed()));
                }
                let ops = proptest::sample::select(vec!["&&", "||", "&", "|", "^", "==", "!="]);
                alts.push((2, (s.clone(), ops, s.clone()).prop_map(|(a, op, b)| format!("({a} {op} {b})")).sboxed()));
                alts.push((1, s.clone().prop_map(|a| format!("!{a}")).sboxed()));
            } else {
                let mut ops = vec!["+", "-", "*", "/", "%"];
                if t.is_int() {
                    ops.extend(["&", "|", "^", "<<", ">>"]);
                }
                let ops = proptest::sample::select(ops);
                alts.push((4, (s.clone(), ops, s.clone()).prop_map(|(a, op, b)| format!("({a} {op} {b})")).sboxed()));
                if matches!(t, T::F32 | T::F64 | T::I32) {
                    alts.push((1, s.clone().prop_map(|a| format!("(-{a})")).sboxed()));
                }
                // Casts from any numeric type (and from bool to integers).
                let name = t.name();
                for &u in &TYPES {
                    if u == T::Bool && !t.is_int() {
                        continue;
                    }
                    alts.push((1, sub(u).prop_map(move |a| format!("({a} as {name})")).sboxed()));
                }
                let methods: Vec<&'static str> = if t.is_float() {
                    vec![
                        "abs()", "sqrt()", "floor()", "ceil()", "round()", "trunc()", "exp()", "ln()", "sin()", "cos()", "tanh()",
                        "log2()", "cbrt()",
                    ]
                } else if t == T::I32 {
                    vec!["abs()", "count_ones() as i32", "leading_zeros() as i32"]
                } else {
                    vec!["count_ones() as NAME", "trailing_zeros() as NAME"]
                };
                let methods = proptest::sample::select(methods);
                alts.push((1, (s.clone(), methods).prop_map(move |(a, mth)| format!("(({a}).{})", mth.replace("NAME", name))).sboxed()));
                let binary_methods: Vec<&'static str> = if t.is_float() {
                    vec!["min", "max", "powf", "atan2", "hypot"]
                } else {
                    vec!["min", "max", "wrapping_add", "wrapping_sub", "wrapping_mul"]
                };
                let bm = proptest::sample::select(binary_methods);
                alts.push((1, (s.clone(), bm, s.clone()).prop_map(|(a, mth, b)| format!("({a}).{mth}({b})")).sboxed()));
                if t.is_float() {
                    alts.push((1, (s.clone(), s.clone(), s.clone()).prop_map(|(a, b, c)| format!("({a}).mul_add({b}, {c})")).sboxed()));
                    alts.push((1, (s.clone(), sub(T::I32)).prop_map(|(a, p)| format!("({a}).powi({p})")).sboxed()));
                }
                if t == T::F32 {
                    alts.push((1, s.clone().prop_map(|a| format!("sq({a})")).sboxed()));
                    alts.push((1, sub(T::Usize).prop_map(|u| format!("inp[({u}) % inp.len()]")).sboxed()));
                }
            }
            row.push(proptest::strategy::Union::new_weighted(alts).sboxed());
        }
        table.push(row);
    }
    table
}

pub(super) static EXPRS: LazyLock<Vec<Vec<SBoxedStrategy<String>>>> = LazyLock::new(|| typed_exprs(4, false));
pub(super) static EXPRS_GLOBALS: LazyLock<Vec<Vec<SBoxedStrategy<String>>>> = LazyLock::new(|| typed_exprs(4, true));

/// Wraps an expression of type `t` in a statement; with `target != t` the statement is ill typed.
pub(super) fn statement(form: usize, e: &str, t: T, target: T) -> String {
    let tn = target.name();
    // `as f32` for numbers; bools go through `u32`.
    let to_f32 = if target == T::Bool { "as u32 as f32" } else { "as f32" };
    match form % 9 {
        0 => format!("let v: {tn} = {e};\n        out[i] = v {to_f32};"),
        1 => format!("let v = {e};\n        out[i] = v {to_f32};"),
        2 => format!("out[i] = ({e}) {to_f32};"),
        3 if t == T::Bool => format!("if {e} {{ out[i] = 1.0; }} else {{ out[i] = 2.0; }}"),
        3 => format!("out[i] += ({e}) as {tn} {to_f32};"),
        4 if t == T::Bool => format!("while {e} {{ out[i] = 1.0; break; }}"),
        4 => format!("let mut v: {tn} = {e};\n        v = v;\n        out[i] = v {to_f32};"),
        5 if t.is_int() => format!("for q in 0..(({e}) as usize % 4) {{ out[i] = q as f32; }}"),
        5 => format!("let w = loop {{ break {e}; }};\n        out[i] = w {to_f32};"),
        6 if t == T::F32 => format!("atomic_add(&mut out[i], {e});"),
        6 => format!("let v: {tn} = {{ {e} }};\n        out[i] = v {to_f32};"),
        7 => format!("out[i] = sq(({e}) {to_f32});"),
        _ => format!("let z: {tn} = if b {{ {e} }} else {{ {e} }};\n        out[i] = z {to_f32};"),
    }
}

pub(super) fn expr_kernel(globals: bool) -> impl Strategy<Value = (String, bool)> {
    let table = if globals { &*EXPRS_GLOBALS } else { &*EXPRS };
    let per_type: Vec<SBoxedStrategy<(T, String)>> = TYPES
        .iter()
        .map(|t| {
            let t = *t;
            table[4][t.idx()].clone().prop_map(move |e| (t, e)).sboxed()
        })
        .collect();
    (proptest::strategy::Union::new(per_type), 0..9usize, any::<Index>(), 0..10u32).prop_map(move |((t, e), form, other, wrong)| {
        // Mostly well typed; one case in five assigns to another type.
        let target = if wrong < 2 { TYPES[other.index(TYPES.len())] } else { t };
        (format!("{EXPR_PRELUDE}        {}\n    }}\n}}\n", statement(form, &e, t, target)), globals)
    })
}

/// Random control flow (nested `if`, `while`, `loop`, `for`, labelled loops, `break`,
/// `continue`, `return`, `break` with a value) around simple statements: always well typed.
pub(super) fn control_flow_kernel() -> impl Strategy<Value = String> {
    let simple = proptest::sample::select(vec![
        "acc += 1.0;",
        "acc = acc * x;",
        "k += 1;",
        "out[i] = acc;",
        "if k > 5 { return; }",
        "atomic_add(&mut out[0], acc);",
        "sync_threads();",
        "let w = if b { acc } else { x }; acc += w;",
        "let w = loop { if k > 2 { break acc; } k += 1; }; acc = w;",
        "k = k.wrapping_mul(3) % 7;",
    ])
    .prop_map(str::to_string);
    let cond = proptest::sample::select(vec!["b", "k < 4", "acc > x", "!b && k != 2", "(k as usize) < out.len()"]);
    simple.prop_recursive(4, 40, 4, move |inner| {
        let body = proptest::collection::vec(inner.clone(), 0..4).prop_map(|v| v.join(" "));
        let exit = proptest::sample::select(vec!["", "break;", "continue;", "if b { break; }", "if k == 3 { continue; }", "break 'outer;", "continue 'outer;", "return;"]);
        prop_oneof![
            (cond.clone(), body.clone(), body.clone()).prop_map(|(c, a, e)| format!("if {c} {{ {a} }} else {{ {e} }}")),
            (cond.clone(), body.clone(), exit.clone()).prop_map(|(c, a, x)| format!("while {c} {{ {a} {x} k += 1; }}")),
            (body.clone(), exit.clone()).prop_map(|(a, x)| format!("loop {{ {a} {x} break; }}")),
            (body.clone(), exit.clone(), 0..4u32, any::<bool>()).prop_map(|(a, x, n, inc)| {
                format!("for q in 0..{}{n} {{ acc += q as f32; {a} {x} }}", if inc { "=" } else { "" })
            }),
            (body.clone(), exit).prop_map(|(a, x)| format!("for q in (0..9).step_by(2) {{ k += q; {a} {x} }}")),
            body.prop_map(|a| format!("{{ {a} }}")),
        ]
    })
    .prop_map(|stmt| {
        format!(
            "#[kernel]\npub fn k(out: &mut [f32], x: f32, b: bool) {{\n    let i = global_id_x();\n    let mut acc = 0.0f32;\n    let mut k = 0u32;\n    'outer: loop {{\n        {stmt}\n        break;\n    }}\n    if i < out.len() {{\n        out[i] = acc + k as f32;\n    }}\n}}\n"
        )
    })
}

/// Random token soup inside a kernel body: mostly garbage, sometimes valid.
pub(super) fn token_soup() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(VOCAB), 0..40).prop_map(|toks| {
        format!("#[kernel]\npub fn k(out: &mut [f32], x: f32, i: usize, a: &[f32], b: bool) {{\n    {}\n}}\n", toks.join(" "))
    })
}
