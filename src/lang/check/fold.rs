//! Scalar arithmetic at compile time: the range of each integer type, wrapping a value into it,
//! literal range errors, and folding operators and `as` casts the way Rust evaluates them.

use crate::float16::{bf16, f16, f64_to_bf16, f64_to_f16, int_to_bf16, int_to_f16};
use crate::ir::*;
use crate::lang::diag::Diagnostic;
use crate::span::Span;

pub(super) fn int_range(s: Scalar) -> (i128, i128) {
    let bits = s.bits();
    if s.is_signed() { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) } else { (0, (1i128 << bits) - 1) }
}

pub(super) fn int_value(s: Scalar, v: i128) -> ScalarValue {
    let mask: u128 = if s.bits() >= 64 { u64::MAX as u128 } else { (1u128 << s.bits()) - 1 };
    ScalarValue::Int(s, (v as u128 & mask) as u64)
}

/// The value of an integer literal, negated if written with `-`; `None` beyond i128.
pub(super) fn signed_literal(v: u128, neg: bool) -> Option<i128> {
    if neg { (v <= 1u128 << 127).then(|| (v as i128).wrapping_neg()) } else { i128::try_from(v).ok() }
}

pub(super) fn lit_range_error(s: Scalar, span: Span, neg: bool, v: u128) -> Diagnostic {
    let (lo, hi) = int_range(s);
    let d = Diagnostic::error(span, format!("literal out of range for `{s}`"))
        .label(format!("does not fit in `{s}`"))
        .note(format!("the literal `{}{v}` does not fit into the type `{s}` whose range is `{lo}..={hi}`", if neg { "-" } else { "" }));
    if neg && !s.is_signed() {
        d.help(format!("`{s}` is unsigned; use a signed type such as `i64`"))
    } else {
        d.help("use a wider type, such as `i64` or `u64`")
    }
}

/// The value of a float literal as type `s`; a finite literal that rounds to infinity is an
/// error, as rustc's `overflowing_literals`.
pub(super) fn float_literal(l: PendingLit, s: Scalar, span: Span) -> Result<ScalarValue, Box<Diagnostic>> {
    let Some(v) = l.float_value(s) else {
        return Err(Diagnostic::error(span, format!("a float literal cannot have type `{s}`")).label("here").into());
    };
    if l.overflows(s) {
        let max = match s {
            Scalar::F16 => f16::MAX.to_f64(),
            Scalar::Bf16 => bf16::MAX.to_f64(),
            _ => f32::MAX as f64,
        };
        let wider = if s == Scalar::F32 { "`f64`" } else { "`f32` or `f64`" };
        return Err(Diagnostic::error(span, format!("literal out of range for `{s}`"))
            .label(format!("rounds to infinity as an `{s}`"))
            .note(format!("the largest `{s}` is {max:e}"))
            .help(format!("use {wider}, or `{s}::INFINITY` if infinity is meant"))
            .into());
    }
    Ok(v)
}

/// A float value rounded once to the float type `to` (exact when widening).
fn float_to(x: f64, to: Scalar) -> ScalarValue {
    match to {
        Scalar::F16 => ScalarValue::F16(f64_to_f16(x)),
        Scalar::Bf16 => ScalarValue::Bf16(f64_to_bf16(x)),
        Scalar::F32 => ScalarValue::F32(x as f32),
        _ => ScalarValue::F64(x),
    }
}

pub(super) fn fold_unary(op: UnOp, v: ScalarValue) -> Option<ScalarValue> {
    Some(match (op, v) {
        (UnOp::Neg, ScalarValue::F32(x)) => ScalarValue::F32(-x),
        (UnOp::Neg, ScalarValue::F64(x)) => ScalarValue::F64(-x),
        (UnOp::Neg, ScalarValue::F16(x)) => ScalarValue::F16(-x),
        (UnOp::Neg, ScalarValue::Bf16(x)) => ScalarValue::Bf16(-x),
        (UnOp::Neg, ScalarValue::Int(s, _)) if s.is_signed() => {
            let n = -v.as_i128()?;
            let (lo, hi) = int_range(s);
            if n < lo || n > hi {
                return None;
            }
            int_value(s, n)
        }
        (UnOp::Not, ScalarValue::Bool(b)) => ScalarValue::Bool(!b),
        (UnOp::Not, ScalarValue::Int(s, x)) => int_value(s, !(x as i128)),
        _ => return None,
    })
}

pub(super) fn fold_binary(op: BinOp, a: ScalarValue, b: ScalarValue) -> Result<ScalarValue, String> {
    use ScalarValue as V;
    let mismatch = || format!("mismatched types in constant: `{}` {} `{}`", a.ty(), op.symbol(), b.ty());
    if op.is_shift() {
        let (V::Int(s, _), V::Int(..)) = (a, b) else { return Err(mismatch()) };
        let x = a.as_i128().unwrap_or(0);
        let n = b.as_i128().unwrap_or(0);
        if n < 0 || n >= s.bits() as i128 {
            return Err(format!("shift by {n} overflows `{s}`"));
        }
        let r = if op == BinOp::Shl { x << n } else { x >> n };
        return Ok(int_value(s, r));
    }
    if a.ty() != b.ty() {
        return Err(mismatch());
    }
    if op.is_comparison() {
        let ord = match (a, b) {
            (V::F32(x), V::F32(y)) => x.partial_cmp(&y),
            (V::F64(x), V::F64(y)) => x.partial_cmp(&y),
            // Exact: every f16 and bf16 is an f64.
            (V::F16(_) | V::Bf16(_), _) => a.as_f64().partial_cmp(&b.as_f64()),
            _ => a.as_i128().partial_cmp(&b.as_i128()),
        };
        use std::cmp::Ordering::*;
        let r = match op {
            BinOp::Eq => ord == Some(Equal),
            BinOp::Ne => ord != Some(Equal),
            BinOp::Lt => ord == Some(Less),
            BinOp::Le => matches!(ord, Some(Less | Equal)),
            BinOp::Gt => ord == Some(Greater),
            _ => matches!(ord, Some(Greater | Equal)),
        };
        return Ok(V::Bool(r));
    }
    match (a, b) {
        (V::F32(x), V::F32(y)) => Ok(V::F32(match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => x / y,
            BinOp::Rem => x % y,
            _ => return Err(format!("`{}` is not defined for `f32`", op.symbol())),
        })),
        (V::F64(x), V::F64(y)) => Ok(V::F64(match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => x / y,
            BinOp::Rem => x % y,
            _ => return Err(format!("`{}` is not defined for `f64`", op.symbol())),
        })),
        (V::F16(_), V::F16(_)) | (V::Bf16(_), V::Bf16(_)) => {
            // One operation in f32, rounded once: the same result as in the narrow type (f32
            // has more than twice its precision, plus two bits).
            let (x, y) = (a.as_f64() as f32, b.as_f64() as f32);
            let r = match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::Div => x / y,
                BinOp::Rem => x % y,
                _ => return Err(format!("`{}` is not defined for `{}`", op.symbol(), a.ty())),
            };
            Ok(float_to(r as f64, a.ty()))
        }
        (V::Bool(x), V::Bool(y)) => Ok(V::Bool(match op {
            BinOp::BitAnd => x & y,
            BinOp::BitOr => x | y,
            BinOp::BitXor => x ^ y,
            _ => return Err(format!("`{}` is not defined for `bool`", op.symbol())),
        })),
        (V::Int(s, _), V::Int(..)) => {
            let (x, y) = (a.as_i128().unwrap_or(0), b.as_i128().unwrap_or(0));
            let r = match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x.checked_mul(y).ok_or_else(|| format!("overflow in constant of type `{s}`"))?,
                BinOp::Div | BinOp::Rem if y == 0 => return Err("division by zero in constant".to_string()),
                BinOp::Div => x / y,
                BinOp::Rem => x % y,
                BinOp::BitAnd => x & y,
                BinOp::BitOr => x | y,
                BinOp::BitXor => x ^ y,
                _ => return Err(mismatch()),
            };
            let (lo, hi) = int_range(s);
            if r < lo || r > hi {
                return Err(format!("overflow in constant of type `{s}`"));
            }
            Ok(int_value(s, r))
        }
        _ => Err(mismatch()),
    }
}

pub(super) fn fold_cast(v: ScalarValue, to: Scalar) -> Option<ScalarValue> {
    use ScalarValue as V;
    Some(match (v, to) {
        (_, Scalar::Bool) => match v {
            V::Bool(_) => v,
            _ => return None,
        },
        (V::Bool(b), t) if t.is_int() => int_value(t, b as i128),
        (V::Bool(_), _) => return None,
        (V::Int(..), t) if t.is_int() => int_value(t, v.as_i128()?),
        (V::Int(..), Scalar::F16) => V::F16(int_to_f16(v.as_i128()?)),
        (V::Int(..), Scalar::Bf16) => V::Bf16(int_to_bf16(v.as_i128()?)),
        (V::Int(..), Scalar::F32) => V::F32(v.as_i128()? as f32),
        (V::Int(..), _) => V::F64(v.as_i128()? as f64),
        // Every float converts exactly to f64; from there one rounding to the target.
        (V::F32(_) | V::F64(_) | V::F16(_) | V::Bf16(_), t) if t.is_float() => match (v, t) {
            (V::F64(x), Scalar::F32) => V::F32(x as f32),
            _ => float_to(v.as_f64(), t),
        },
        (V::F32(_) | V::F64(_) | V::F16(_) | V::Bf16(_), t) => float_to_int(v.as_f64(), t),
    })
}

/// Rust's saturating float-to-int `as` cast.
fn float_to_int(x: f64, t: Scalar) -> ScalarValue {
    let (lo, hi) = int_range(t);
    let v = if x.is_nan() {
        0
    } else if x <= lo as f64 {
        lo
    } else if x >= hi as f64 {
        hi
    } else {
        x as i128
    };
    int_value(t, v)
}
