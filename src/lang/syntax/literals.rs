//! Literals: integer, float and bool literals with their suffixes, the associated constants
//! (`f32::MAX`, `f64::consts::PI`), and host scalars parsed from `--define` values.

use crate::float16::{Half, bf16, f16, f64_to_bf16, f64_to_f16, parse_decimal};
use crate::ir::{Scalar, UnOp};
use crate::lang::ast::*;
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::spans::sp;
use super::types::SCALAR_LIST;
use super::{PResult, unsupported};

pub(super) fn lit(l: &syn::Lit) -> PResult<Lit> {
    // One token: its own span, not `spn`'s (which prints the literal back into tokens).
    let span = sp(l.span());
    let suffix_ty = |suffix: &str| -> PResult<Option<Scalar>> {
        if suffix.is_empty() {
            return Ok(None);
        }
        match Scalar::from_name(suffix) {
            Some(Scalar::Bool) | None => Err(Diagnostic::error(span, format!("unsupported literal suffix `{suffix}`"))
                .label("unsupported type")
                .help(format!("supported scalar types: {SCALAR_LIST}"))
                .into()),
            Some(s) => Ok(Some(s)),
        }
    };
    match l {
        syn::Lit::Int(i) => {
            let suffix = suffix_ty(i.suffix())?;
            if let Some(s) = suffix.filter(|s| s.is_float()) {
                return float_lit(i.base10_digits(), Some(s), span);
            }
            let v = i
                .base10_parse::<u128>()
                .map_err(|_| Diagnostic::error(span, "integer literal is too large").label("does not fit in 128 bits"))?;
            Ok(Lit::Int(v, suffix))
        }
        syn::Lit::Float(f) => {
            let suffix = suffix_ty(f.suffix())?;
            if let Some(s) = suffix.filter(|s| !s.is_float()) {
                return Err(Diagnostic::error(span, format!("float literal with integer suffix `{s}`"))
                    .label("a float cannot have an integer type")
                    .help(format!("write an integer (`1{s}`), or a float type (`1.5f32`), or convert: `(1.5 as {s})`"))
                    .into());
            }
            float_lit(f.base10_digits(), suffix, span)
        }
        syn::Lit::Bool(b) => Ok(Lit::Bool(b.value)),
        syn::Lit::Str(_) | syn::Lit::ByteStr(_) | syn::Lit::CStr(_) => {
            Err(unsupported(span, "strings", "kernels work on numbers and arrays").into())
        }
        // `b'a'` is a `u8`, as in Rust.
        syn::Lit::Byte(b) => Ok(Lit::Int(b.value() as u128, Some(Scalar::U8))),
        syn::Lit::Char(_) => {
            Err(unsupported(span, "character literals", "use a byte literal (`b'a'`, a `u8`) or an integer: `65u32`").into())
        }
        _ => Err(unsupported(span, "this literal", "use integer, float and bool literals").into()),
    }
}

fn float_lit(digits: &str, suffix: Option<Scalar>, span: Span) -> PResult<Lit> {
    // Parse once per precision: going through f64 to a narrower type could round twice.
    let f16 = parse_decimal(digits, Half::F16).map(f16::from_bits);
    let bf16 = parse_decimal(digits, Half::Bf16).map(bf16::from_bits);
    match (digits.parse::<f64>(), digits.parse::<f32>(), f16, bf16) {
        (Ok(v64), Ok(v32), Some(f16), Some(bf16)) => Ok(Lit::Float { f64: v64, f32: v32, f16, bf16, suffix }),
        _ => Err(Diagnostic::error(span, "invalid float literal").label("here").into()),
    }
}

/// A float constant (an associated constant such as `f16::MAX`) at every precision.
fn float_const(v: f64, suffix: Scalar) -> Lit {
    Lit::Float { f64: v, f32: v as f32, f16: f64_to_f16(v), bf16: f64_to_bf16(v), suffix: Some(suffix) }
}

/// `f32::MAX`, `i32::MIN`, `f64::consts::PI` and friends.
pub(crate) fn assoc_const(segs: &[&str], span: Span) -> Option<Expr> {
    let e = |kind| Some(Expr { kind, span });
    let float = |v: f64, s: Scalar| e(ExprKind::Lit(float_const(v, s)));
    match segs {
        [ty, name] => {
            let s = Scalar::from_name(ty)?;
            if s.is_float() {
                let pick = |h: f16, b: bf16, a: f32, d: f64| match s {
                    Scalar::F16 => h.to_f64(),
                    Scalar::Bf16 => b.to_f64(),
                    Scalar::F32 => a as f64,
                    _ => d,
                };
                match *name {
                    "MAX" => float(pick(f16::MAX, bf16::MAX, f32::MAX, f64::MAX), s),
                    "MIN" => float(pick(f16::MIN, bf16::MIN, f32::MIN, f64::MIN), s),
                    "MIN_POSITIVE" => float(pick(f16::MIN_POSITIVE, bf16::MIN_POSITIVE, f32::MIN_POSITIVE, f64::MIN_POSITIVE), s),
                    "EPSILON" => float(pick(f16::EPSILON, bf16::EPSILON, f32::EPSILON, f64::EPSILON), s),
                    "INFINITY" => float(f64::INFINITY, s),
                    "NEG_INFINITY" => float(f64::NEG_INFINITY, s),
                    "NAN" => float(f64::NAN, s),
                    _ => None,
                }
            } else if s.is_int() {
                let bits = s.bits();
                let (min_mag, max): (u128, u128) =
                    if s.is_signed() { (1u128 << (bits - 1), (1u128 << (bits - 1)) - 1) } else { (0, (1u128 << bits) - 1) };
                match *name {
                    "MAX" => e(ExprKind::Lit(Lit::Int(max, Some(s)))),
                    "MIN" if min_mag == 0 => e(ExprKind::Lit(Lit::Int(0, Some(s)))),
                    "MIN" => e(ExprKind::Unary(UnOp::Neg, Box::new(Expr { kind: ExprKind::Lit(Lit::Int(min_mag, Some(s))), span }))),
                    "BITS" => e(ExprKind::Lit(Lit::Int(bits as u128, Some(Scalar::U32)))),
                    _ => None,
                }
            } else {
                None
            }
        }
        [ty, "consts", name] => {
            let s = Scalar::from_name(ty).filter(|s| s.is_float())?;
            use std::f64::consts as c;
            let v = match *name {
                "PI" => c::PI,
                "E" => c::E,
                "TAU" => c::TAU,
                "SQRT_2" => c::SQRT_2,
                "LN_2" => c::LN_2,
                "LN_10" => c::LN_10,
                "LOG2_E" => c::LOG2_E,
                "LOG10_E" => c::LOG10_E,
                "FRAC_PI_2" => c::FRAC_PI_2,
                "FRAC_PI_4" => c::FRAC_PI_4,
                "FRAC_1_PI" => c::FRAC_1_PI,
                "FRAC_1_SQRT_2" => c::FRAC_1_SQRT_2,
                "FRAC_2_SQRT_PI" => c::FRAC_2_SQRT_PI,
                _ => return None,
            };
            float(v, s)
        }
        _ => None,
    }
}

/// Parses a Rust literal as a host scalar, for `--define NAME=LITERAL`: the suffix gives the
/// type (`0.08f32`, `3u32`, `-2i64`); unsuffixed integers are `i64`, floats `f64`.
pub fn parse_scalar_literal(text: &str) -> Result<crate::ir::ScalarValue, String> {
    use crate::ir::ScalarValue;
    let t = text.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b.trim_start()),
        None => (false, t),
    };
    let parsed = stacker::grow(1 << 20, || syn::parse_str::<syn::Lit>(body).map(|l| lit(&l)));
    proc_macro2::extra::invalidate_current_thread_spans();
    let l = match parsed {
        Ok(Ok(l)) => l,
        Ok(Err(d)) => return Err(d.message),
        Err(_) => return Err(format!("`{text}` is not a Rust literal (examples: 0.08f32, 3u32, true)")),
    };
    let default = match l {
        Lit::Int(..) => Some(Scalar::I64),
        Lit::Float { .. } => Some(Scalar::F64),
        Lit::Bool(_) => None,
    };
    if neg && matches!(l, Lit::Bool(_)) {
        return Err("`-` before a bool".into());
    }
    let v = match l {
        Lit::Bool(b) => ScalarValue::Bool(b),
        Lit::Int(v, suffix) => {
            let s = suffix.or(default).unwrap_or(Scalar::I64);
            let bits = s.bits();
            let (lo, hi): (i128, i128) =
                if s.is_signed() { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) } else { (0, (1i128 << bits) - 1) };
            let val = if neg { (v <= 1u128 << 127).then(|| (v as i128).wrapping_neg()) } else { i128::try_from(v).ok() };
            let Some(val) = val.filter(|val| *val >= lo && *val <= hi) else {
                return Err(format!("`{text}` does not fit in `{s}`"));
            };
            let mask: u128 = if bits >= 64 { u64::MAX as u128 } else { (1u128 << bits) - 1 };
            ScalarValue::Int(s, (val as u128 & mask) as u64)
        }
        Lit::Float { f64: v64, f32: v32, f16, bf16, suffix } => match suffix.unwrap_or(Scalar::F64) {
            Scalar::F32 => ScalarValue::F32(if neg { -v32 } else { v32 }),
            Scalar::F16 => ScalarValue::F16(if neg { -f16 } else { f16 }),
            Scalar::Bf16 => ScalarValue::Bf16(if neg { -bf16 } else { bf16 }),
            _ => ScalarValue::F64(if neg { -v64 } else { v64 }),
        },
    };
    Ok(v)
}
