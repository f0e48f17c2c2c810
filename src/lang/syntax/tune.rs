//! `#[tune(..)]` on a kernel: its tuning space, read into [`TuneSpace`]. Names resolve against
//! the kernel's own parameters and generic parameters, so the space is checked here, whole:
//! every const parameter is tuned, values fit their types, conditions leave at least one
//! configuration, and every expression is one of the few integer forms the runtime evaluates.
//!
//! ```text
//! #[tune(TILE = [16, 32], require = TILE <= 32, block = (TILE, TILE),
//!        grid = (c.shape(1).div_ceil(TILE), c.shape(0).div_ceil(TILE)),
//!        key = (a.shape(1).next_power_of_two(),))]
//! ```

use crate::ir::{MAX_CANDIDATES, Scalar, TuneBinary, TuneExpr, TuneParam, TuneSpace, TuneUnary};
use crate::lang::ast::*;
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::PResult;
use super::spans::{sp, spn};

/// Deepest expression nesting accepted in `#[tune(..)]`.
const MAX_DEPTH: usize = 64;
/// Most key expressions, and most values of a tuned parameter.
const MAX_LIST: usize = 64;

/// The options of `#[tune(..)]` that are not tuned parameters.
const OPTIONS: [&str; 5] = ["require", "block", "grid", "shared_mem", "key"];

fn help_forms() -> &'static str {
    "write integer literals, tuned parameters, the kernel's integer parameters, `x.len()`, `a.shape(d)`, `+ - * / % << >>`, \
     comparisons, `&& || !`, and the methods `div_ceil`, `min`, `max`, `pow`, `next_power_of_two` and `ilog2`"
}

/// What a name in an expression may stand for.
enum Named {
    Tuned(usize),
    Scalar(usize),
    Array { index: usize, ndim: u8 },
}

/// The kernel's names, as `#[tune]` expressions see them.
struct Names<'a> {
    tuned: &'a [TuneParam],
    f: &'a FnItem,
}

impl Names<'_> {
    fn lookup(&self, name: &str) -> Option<Named> {
        if let Some(i) = self.tuned.iter().position(|p| p.name == name) {
            return Some(Named::Tuned(i));
        }
        let (index, p) = self.f.params.iter().enumerate().find(|(_, p)| p.name.name == name)?;
        match &p.ty {
            Some(TypeExpr::Scalar(s, _)) if s.is_int() => Some(Named::Scalar(index)),
            Some(TypeExpr::Param(t))
                if self.f.generics.iter().any(|g| g.name.name == t.name && g.kind == GenericParamKind::Type(crate::ir::Bound::Int)) =>
            {
                Some(Named::Scalar(index))
            }
            Some(TypeExpr::ArrayRef { ndim, .. }) => Some(Named::Array { index, ndim: *ndim }),
            _ => None,
        }
    }
}

/// Reads `#[tune(..)]` of kernel `f`.
pub(super) fn tune_space(attr: &syn::Attribute, f: &FnItem) -> PResult<TuneSpace> {
    let list = match &attr.meta {
        syn::Meta::List(l) => l,
        other => {
            return Err(Diagnostic::error(spn(other), "`#[tune]` takes its space in parentheses")
                .label("no space given")
                .help("write `#[tune(BLOCK = [128, 256], block = BLOCK, grid = n.div_ceil(BLOCK))]`")
                .into());
        }
    };
    let items = list.parse_args_with(syn::punctuated::Punctuated::<syn::MetaNameValue, syn::Token![,]>::parse_terminated).map_err(|e| {
        Diagnostic::error(sp(e.span()), format!("malformed `#[tune(..)]`: {e}"))
            .label("here")
            .help("the space is `name = value` pairs: `#[tune(TILE = [16, 32], block = (TILE, TILE), grid = ..)]`")
    })?;
    // Tuned parameters first: the other options' expressions name them.
    let mut params = Vec::new();
    for nv in &items {
        let name = nv.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
        if OPTIONS.contains(&name.as_str()) {
            continue;
        }
        if name.is_empty() {
            return Err(Diagnostic::error(spn(&nv.path), "expected a name").label("not a name").into());
        }
        if params.iter().any(|p: &TuneParam| p.name == name) {
            return Err(Diagnostic::error(spn(&nv.path), format!("`{name}` is tuned twice")).label("repeated").into());
        }
        let values = values(&name, &nv.value)?;
        let generic = f.generics.iter().position(|g| g.name.name == name);
        if let Some(g) = generic {
            match f.generics[g].kind {
                GenericParamKind::Const(s) => fits(&name, s, &values, spn(&nv.value))?,
                GenericParamKind::Type(_) => {
                    return Err(Diagnostic::error(spn(&nv.path), format!("`{name}` is a type parameter; only constants are tuned"))
                        .label("a type")
                        .help("the argument types choose a type parameter at each launch")
                        .into());
                }
            }
        } else if f.params.iter().any(|p| p.name.name == name) {
            return Err(Diagnostic::error(spn(&nv.path), format!("`{name}` is a parameter of the kernel; the caller gives its value"))
                .label("a kernel parameter")
                .help("tune const parameters (`const TILE: usize`) or names the launch shape alone uses (`BLOCK`)")
                .into());
        }
        params.push(TuneParam { name, values, generic });
    }
    for g in &f.generics {
        if let GenericParamKind::Const(_) = g.kind
            && !params.iter().any(|p| p.name == g.name.name)
        {
            return Err(Diagnostic::error(g.span, format!("const parameter `{}` is not tuned", g.name.name))
                .label("no values for it in `#[tune(..)]`")
                .help(format!("a tuned kernel's launch chooses every constant: add `{} = [..]` to `#[tune(..)]`", g.name.name))
                .into());
        }
    }
    let names = Names { tuned: &params, f };
    let mut space = TuneSpace {
        params: params.clone(),
        require: Vec::new(),
        block: Vec::new(),
        grid: Vec::new(),
        shared_mem: None,
        key: Vec::new(),
        arg_names: f.params.iter().map(|p| p.name.name.clone()).collect(),
    };
    let (mut block_at, mut grid_at, mut key_at) = (None, None, None);
    for nv in &items {
        let name = nv.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
        let once = |at: &mut Option<Span>| -> PResult<()> {
            match at.replace(spn(nv)) {
                Some(_) => Err(Diagnostic::error(spn(&nv.path), format!("`{name}` is given twice")).label("repeated").into()),
                None => Ok(()),
            }
        };
        match name.as_str() {
            "require" => {
                let e = expr(&names, &nv.value, 0)?;
                if e.reads_args() {
                    return Err(Diagnostic::error(spn(&nv.value), "a `require` condition reads a launch argument")
                        .label("conditions are between tuned parameters")
                        .help("conditions choose the candidates, which every launch shares; size-dependent choices are the tuning key's")
                        .into());
                }
                space.require.push(e);
            }
            "block" => {
                once(&mut block_at)?;
                space.block = dims(&names, &nv.value, "block")?;
            }
            "grid" => {
                once(&mut grid_at)?;
                space.grid = dims(&names, &nv.value, "grid")?;
            }
            "shared_mem" => {
                if space.shared_mem.is_some() {
                    return Err(Diagnostic::error(spn(&nv.path), "`shared_mem` is given twice").label("repeated").into());
                }
                space.shared_mem = Some(expr(&names, &nv.value, 0)?);
            }
            "key" => {
                once(&mut key_at)?;
                space.key = elements(&nv.value).iter().map(|e| expr(&names, e, 0)).collect::<PResult<_>>()?;
                if space.key.len() > MAX_LIST {
                    return Err(Diagnostic::error(spn(&nv.value), format!("more than {MAX_LIST} key values")).label("too many").into());
                }
            }
            _ => {}
        }
    }
    if params.is_empty() {
        return Err(Diagnostic::error(spn(list), "`#[tune(..)]` tunes nothing")
            .label("no tuned parameter")
            .help("name a parameter and its values: `BLOCK = [128, 256, 512]`")
            .into());
    }
    for (what, at) in [("block", block_at), ("grid", grid_at)] {
        if at.is_none() {
            return Err(Diagnostic::error(spn(list), format!("`#[tune(..)]` has no `{what}`"))
                .label(format!("`{what} = ..` missing"))
                .help("a tuned launch takes its shape from the space: `block = BLOCK, grid = x.len().div_ceil(BLOCK)`")
                .into());
        }
    }
    let candidates =
        space.candidates().map_err(|e| Diagnostic::error(spn(list), format!("a `require` condition has no value: {e}")).label("here"))?;
    if candidates.is_empty() {
        return Err(Diagnostic::error(spn(list), "no configuration meets every `require` condition").label("an empty tuning space").into());
    }
    if candidates.len() > MAX_CANDIDATES {
        return Err(Diagnostic::error(
            spn(list),
            format!("{} configurations; a tuning space has at most {MAX_CANDIDATES}", candidates.len()),
        )
        .label("too many")
        .help("drop values, or add `require` conditions")
        .into());
    }
    Ok(space)
}

/// The values of a tuned parameter: `[16, 32]`, distinct integers.
fn values(name: &str, e: &syn::Expr) -> PResult<Vec<u64>> {
    let syn::Expr::Array(a) = e else {
        return Err(Diagnostic::error(spn(e), format!("the values of `{name}` are a list"))
            .label("expected `[..]`")
            .help(format!("write `{name} = [64, 128, 256]`"))
            .into());
    };
    let mut out = Vec::new();
    for v in &a.elems {
        let n = match v {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse::<u64>().ok(),
            _ => None,
        }
        .ok_or_else(|| Diagnostic::error(spn(v), format!("a value of `{name}` is not a non-negative integer literal")).label("here"))?;
        if out.contains(&n) {
            return Err(Diagnostic::error(spn(v), format!("`{n}` is a value of `{name}` twice")).label("repeated").into());
        }
        out.push(n);
    }
    if out.is_empty() || out.len() > MAX_LIST {
        return Err(Diagnostic::error(spn(e), format!("`{name}` takes 1 to {MAX_LIST} values")).label("here").into());
    }
    Ok(out)
}

/// Every value of a const parameter of type `s` fits it.
fn fits(name: &str, s: Scalar, values: &[u64], span: Span) -> PResult<()> {
    let max: u64 = match s {
        Scalar::U8 => u8::MAX as u64,
        Scalar::U16 => u16::MAX as u64,
        Scalar::U32 => u32::MAX as u64,
        Scalar::I8 => i8::MAX as u64,
        Scalar::I16 => i16::MAX as u64,
        Scalar::I32 => i32::MAX as u64,
        Scalar::I64 => i64::MAX as u64,
        Scalar::U64 | Scalar::Usize => u64::MAX,
        other => {
            return Err(Diagnostic::error(span, format!("const parameter `{name}` is `{other}`; only integer constants are tuned"))
                .label("not an integer")
                .into());
        }
    };
    match values.iter().find(|v| **v > max) {
        Some(v) => Err(Diagnostic::error(span, format!("`{v}` does not fit `{name}: {s}`")).label("too large").into()),
        None => Ok(()),
    }
}

/// `(a, b)` or `a` as a list.
fn elements(e: &syn::Expr) -> Vec<&syn::Expr> {
    match e {
        syn::Expr::Tuple(t) => t.elems.iter().collect(),
        e => vec![e],
    }
}

/// One to three launch dimensions.
fn dims(names: &Names<'_>, e: &syn::Expr, what: &str) -> PResult<Vec<TuneExpr>> {
    let l = elements(e);
    if l.is_empty() || l.len() > 3 {
        return Err(Diagnostic::error(spn(e), format!("`{what}` has one to three dimensions"))
            .label(format!("{} given", l.len()))
            .help(format!("write `{what} = X` or `{what} = (X, Y)` or `{what} = (X, Y, Z)`"))
            .into());
    }
    l.into_iter().map(|e| expr(names, e, 0)).collect()
}

fn unsupported(e: &syn::Expr, what: &str) -> Box<Diagnostic> {
    Diagnostic::error(spn(e), format!("{what} in `#[tune(..)]`")).label("not supported here").help(help_forms()).into()
}

/// An integer expression.
fn expr(names: &Names<'_>, e: &syn::Expr, depth: usize) -> PResult<TuneExpr> {
    if depth > MAX_DEPTH {
        return Err(Diagnostic::error(spn(e), format!("an expression nested deeper than {MAX_DEPTH}")).label("too deep").into());
    }
    let sub = |x: &syn::Expr| expr(names, x, depth + 1);
    Ok(match e {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => {
            TuneExpr::Lit(i.base10_parse::<u64>().map_err(|_| unsupported(e, "an integer that does not fit a `u64`"))?)
        }
        syn::Expr::Paren(p) => sub(&p.expr)?,
        syn::Expr::Group(g) => sub(&g.expr)?,
        syn::Expr::Cast(c) => match &*c.ty {
            syn::Type::Path(p) if p.path.get_ident().is_some_and(|i| ["usize", "u64", "u32"].contains(&i.to_string().as_str())) => {
                sub(&c.expr)?
            }
            _ => return Err(unsupported(e, "a cast to anything but `usize`, `u64` or `u32`")),
        },
        syn::Expr::Path(p) => {
            let Some(id) = p.path.get_ident() else { return Err(unsupported(e, "a path")) };
            match names.lookup(&id.to_string()) {
                Some(Named::Tuned(i)) => TuneExpr::Tuned(i),
                Some(Named::Scalar(i)) => TuneExpr::Arg(i),
                Some(Named::Array { .. }) => {
                    return Err(Diagnostic::error(spn(e), format!("`{id}` is an array"))
                        .label("not an integer")
                        .help(format!("use its size: `{id}.len()` or `{id}.shape(0)`"))
                        .into());
                }
                None => {
                    return Err(Diagnostic::error(
                        spn(e),
                        format!("`{id}` is neither a tuned parameter nor an integer parameter of the kernel"),
                    )
                    .label("unknown here")
                    .help(help_forms())
                    .into());
                }
            }
        }
        syn::Expr::Unary(u) => match u.op {
            syn::UnOp::Not(_) => TuneExpr::Unary(TuneUnary::Not, Box::new(sub(&u.expr)?)),
            _ => return Err(unsupported(e, "a negation or dereference (values are non-negative integers)")),
        },
        syn::Expr::Binary(b) => {
            use syn::BinOp as B;
            let op = match b.op {
                B::Add(_) => TuneBinary::Add,
                B::Sub(_) => TuneBinary::Sub,
                B::Mul(_) => TuneBinary::Mul,
                B::Div(_) => TuneBinary::Div,
                B::Rem(_) => TuneBinary::Rem,
                B::Shl(_) => TuneBinary::Shl,
                B::Shr(_) => TuneBinary::Shr,
                B::Eq(_) => TuneBinary::Eq,
                B::Ne(_) => TuneBinary::Ne,
                B::Lt(_) => TuneBinary::Lt,
                B::Le(_) => TuneBinary::Le,
                B::Gt(_) => TuneBinary::Gt,
                B::Ge(_) => TuneBinary::Ge,
                B::And(_) => TuneBinary::And,
                B::Or(_) => TuneBinary::Or,
                _ => return Err(unsupported(e, "this operator")),
            };
            TuneExpr::Binary(op, Box::new(sub(&b.left)?), Box::new(sub(&b.right)?))
        }
        syn::Expr::MethodCall(m) => {
            let method = m.method.to_string();
            let args: Vec<&syn::Expr> = m.args.iter().collect();
            // `x.len()` and `a.shape(d)` of an array parameter.
            if let syn::Expr::Path(p) = &*m.receiver
                && let Some(id) = p.path.get_ident()
                && let Some(Named::Array { index, ndim }) = names.lookup(&id.to_string())
            {
                return match (method.as_str(), args.as_slice()) {
                    ("len", []) => Ok(TuneExpr::Len(index)),
                    ("shape", [d]) => {
                        let dim = match d {
                            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse::<u8>().ok(),
                            _ => None,
                        }
                        .filter(|d| *d < ndim)
                        .ok_or_else(|| {
                            Diagnostic::error(spn(*d), format!("`{id}` has {ndim} dimension{}", if ndim == 1 { "" } else { "s" }))
                                .label(format!("expected a literal from 0 to {}", ndim.saturating_sub(1)))
                        })?;
                        Ok(TuneExpr::Shape(index, dim as usize))
                    }
                    _ => Err(unsupported(e, &format!("`{method}` of an array (only `len()` and `shape(d)`)"))),
                };
            }
            let recv = sub(&m.receiver)?;
            match (method.as_str(), args.as_slice()) {
                ("next_power_of_two", []) => TuneExpr::Unary(TuneUnary::NextPowerOfTwo, Box::new(recv)),
                ("ilog2", []) => TuneExpr::Unary(TuneUnary::Ilog2, Box::new(recv)),
                ("div_ceil", [x]) => TuneExpr::Binary(TuneBinary::DivCeil, Box::new(recv), Box::new(sub(x)?)),
                ("min", [x]) => TuneExpr::Binary(TuneBinary::Min, Box::new(recv), Box::new(sub(x)?)),
                ("max", [x]) => TuneExpr::Binary(TuneBinary::Max, Box::new(recv), Box::new(sub(x)?)),
                ("pow", [x]) => TuneExpr::Binary(TuneBinary::Pow, Box::new(recv), Box::new(sub(x)?)),
                _ => {
                    return Err(unsupported(
                        e,
                        &format!("the method `{method}` with {} argument{}", args.len(), if args.len() == 1 { "" } else { "s" }),
                    ));
                }
            }
        }
        _ => return Err(unsupported(e, "this expression")),
    })
}
