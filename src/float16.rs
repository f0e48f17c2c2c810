//! The 16-bit float types `f16` and `bf16`: correctly rounded conversions into them from `f64`,
//! from integers and from decimal literals, shared by constant folding, the host backend's
//! helpers and the runtime. A leaf: it imports nothing from the crate.
//!
//! `half` converts from `f32` with one correct rounding, but from `f64` it first drops the low
//! 32 bits of the significand, which rounds wrongly when a value lies just off a tie. Going
//! through `f32` is exact when the first step rounds *to odd* (the last bit records that
//! something was dropped): `f32` has more than two bits beyond either 16-bit format, so the
//! second rounding then sees every tie for what it is.

pub use half::{bf16, f16};

/// `x` rounded to `f32` with round-to-odd: the nearest `f32` toward zero, with its last
/// significand bit set whenever the conversion was inexact. Infinities and NaN stay as they
/// are; a finite value beyond the `f32` range becomes `±f32::MAX` (odd, so it still rounds to
/// infinity in a narrower format).
pub fn f64_to_f32_odd(x: f64) -> f32 {
    if !x.is_finite() {
        return x as f32;
    }
    let r = x as f32;
    if r.is_infinite() {
        return f32::MAX.copysign(x as f32);
    }
    if r as f64 == x {
        return r;
    }
    let bits = r.to_bits();
    if bits & 1 == 1 {
        return r;
    }
    // Even and inexact: step one unit toward `x`, which lands on the odd neighbour on x's side.
    let toward_zero = (r as f64).abs() > x.abs();
    f32::from_bits(if toward_zero { bits - 1 } else { bits + 1 })
}

/// An integer rounded to `f64` with round-to-odd (exact up to 2^53).
pub fn i128_to_f64_odd(v: i128) -> f64 {
    let r = v as f64;
    // Every value of the integer types of the language (at most 64 bits) is within `i128` as a
    // float, so the round trip is exact.
    if r.abs() >= 1.7e38 || r as i128 == v {
        return r;
    }
    let bits = r.to_bits();
    if bits & 1 == 1 {
        return r;
    }
    let toward_zero = (r as i128).unsigned_abs() > v.unsigned_abs();
    f64::from_bits(if toward_zero { bits - 1 } else { bits + 1 })
}

/// `x` as `f16`, rounded once to nearest, ties to even.
pub fn f64_to_f16(x: f64) -> f16 {
    f16::from_f32(f64_to_f32_odd(x))
}

/// `x` as `bf16`, rounded once to nearest, ties to even.
pub fn f64_to_bf16(x: f64) -> bf16 {
    bf16::from_f32(f64_to_f32_odd(x))
}

/// An integer as `f16`, rounded once to nearest, ties to even.
pub fn int_to_f16(v: i128) -> f16 {
    f64_to_f16(i128_to_f64_odd(v))
}

/// An integer as `bf16`, rounded once to nearest, ties to even.
pub fn int_to_bf16(v: i128) -> bf16 {
    f64_to_bf16(i128_to_f64_odd(v))
}

/// Which 16-bit format a decimal literal is parsed into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Half {
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
}

/// The bits of an unsigned decimal literal (`digits` as `syn` gives them: `1.5`, `1e-3`, `100`)
/// rounded once to the nearest value of `fmt`, ties to even; `None` if it does not parse.
///
/// Parsing goes through `f64` (correctly rounded); the result can only be wrong when that `f64`
/// is exactly halfway between two values of the narrow format while the literal is not, and
/// then the literal's digits are compared with the tie's exact decimal expansion.
pub fn parse_decimal(digits: &str, fmt: Half) -> Option<u16> {
    let r: f64 = digits.parse().ok()?;
    let round = |x: f64| match fmt {
        Half::F16 => f64_to_f16(x).to_bits(),
        Half::Bf16 => f64_to_bf16(x).to_bits(),
    };
    let widen = |b: u16| match fmt {
        Half::F16 => f16::from_bits(b).to_f64(),
        Half::Bf16 => bf16::from_bits(b).to_f64(),
    };
    let nearest = round(r);
    if !r.is_finite() {
        return Some(nearest);
    }
    // The neighbours of `r` in the narrow format (both finite or infinite as they come).
    let v = widen(nearest);
    let (lo, hi) = if v <= r { (nearest, nearest.wrapping_add(1)) } else { (nearest.wrapping_sub(1), nearest) };
    let (lo_v, hi_v) = (widen(lo), widen(hi));
    let hi_v = if hi_v.is_infinite() {
        // Past the largest finite value, the tie with infinity is at MAX + half a unit.
        lo_v + (lo_v - widen(lo.wrapping_sub(1)))
    } else {
        hi_v
    };
    let mid = lo_v + (hi_v - lo_v) / 2.0;
    if r != mid || lo_v.is_infinite() {
        return Some(nearest);
    }
    match compare_decimal(digits, mid)? {
        std::cmp::Ordering::Equal => Some(nearest),
        std::cmp::Ordering::Less => Some(lo),
        std::cmp::Ordering::Greater => Some(hi),
    }
}

/// Compares an unsigned decimal literal with a finite non-negative `f64`, exactly.
fn compare_decimal(digits: &str, x: f64) -> Option<std::cmp::Ordering> {
    let a = normalize(digits)?;
    // 1100 digits cover every f64's exact expansion; Rust prints the exact value.
    let b = normalize(&format!("{x:.1100e}"))?;
    Some(match (a.0.is_empty(), b.0.is_empty()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)),
    })
}

/// A decimal as (significant digits without leading or trailing zeros, exponent of the first
/// digit): `0.0125` is ("125", -2). Zero has no digits.
fn normalize(s: &str) -> Option<(String, i64)> {
    let s = s.replace('_', "");
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i64>().ok()?),
        None => (s.as_str(), 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let all: String = format!("{int}{frac}");
    let lead = all.len() - all.trim_start_matches('0').len();
    let trimmed = all.trim_start_matches('0').trim_end_matches('0');
    if trimmed.is_empty() {
        return Some((String::new(), 0));
    }
    // The first significant digit's power of ten.
    let first = int.len() as i64 - 1 - lead as i64 + exp;
    Some((trimmed.to_string(), first))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f64_conversions_round_once() {
        // 1 + 2^-11 is the tie between 1 and 1 + 2^-10 in f16; a hair above it rounds up.
        let tie = 1.0 + 2f64.powi(-11);
        assert_eq!(f64_to_f16(tie).to_f64(), 1.0);
        assert_eq!(f64_to_f16(tie + 2f64.powi(-40)).to_f64(), 1.0 + 2f64.powi(-10));
        assert_eq!(f64_to_f16(-(tie + 2f64.powi(-40))).to_f64(), -(1.0 + 2f64.powi(-10)));
        // half's own from_f64 drops the low bits and gets this one wrong.
        assert_ne!(half::f16::from_f64(tie + 2f64.powi(-40)), f64_to_f16(tie + 2f64.powi(-40)));
        let btie = 1.0 + 2f64.powi(-8);
        assert_eq!(f64_to_bf16(btie).to_f64(), 1.0);
        assert_eq!(f64_to_bf16(btie + 2f64.powi(-45)).to_f64(), 1.0 + 2f64.powi(-7));
        assert_eq!(f64_to_f16(65519.0).to_f64(), 65504.0);
        assert!(f64_to_f16(65520.0).is_infinite());
        assert!(f64_to_f16(1e300).is_infinite());
        assert!(f64_to_bf16(1e300).is_infinite());
        assert!(f64_to_f16(f64::NAN).is_nan());
        assert_eq!(f64_to_f16(1e-30).to_bits(), 0);
        assert_eq!(f64_to_f16(-0.0).to_bits(), 0x8000);
    }

    #[test]
    fn integers_round_once() {
        // 2^63 + 2^55 + 1: just above a bf16 tie; f64 alone rounds it onto the tie.
        let v = (1i128 << 63) + (1 << 55) + 1;
        assert_eq!(int_to_bf16(v).to_f64(), 2f64.powi(63) + 2f64.powi(56));
        assert_eq!(int_to_bf16(1 << 63).to_f64(), 2f64.powi(63));
        assert_eq!(int_to_f16(65504).to_f64(), 65504.0);
        assert!(int_to_f16(u64::MAX as i128).is_infinite());
        assert_eq!(int_to_f16(-2049).to_f64(), -2048.0);
        assert_eq!(int_to_bf16(257).to_f64(), 256.0);
        assert_eq!(int_to_bf16(259).to_f64(), 260.0);
    }

    #[test]
    fn decimal_literals_round_once() {
        let f = |s: &str| f16::from_bits(parse_decimal(s, Half::F16).unwrap()).to_f64();
        assert_eq!(f("1.5"), 1.5);
        assert_eq!(f("0.1"), f16::from_f32(0.1).to_f64());
        // Exactly the tie: to even. A digit beyond what f64 keeps: away from the tie.
        assert_eq!(f("1.00048828125"), 1.0);
        assert_eq!(f("1.00048828125000000000000000001"), 1.0 + 2f64.powi(-10));
        assert_eq!(f("1.00048828124999999999999999999"), 1.0);
        assert_eq!(f("1.00146484375"), 1.001953125);
        assert_eq!(f("1.00146484374999999999999999999"), 1.0009765625);
        assert_eq!(f("65504"), 65504.0);
        assert_eq!(f("65519.99999999999999999999"), 65504.0);
        assert!(f("65520").is_infinite());
        assert_eq!(f("6e-8"), f16::from_bits(1).to_f64());
        assert_eq!(f("0"), 0.0);
        let b = |s: &str| bf16::from_bits(parse_decimal(s, Half::Bf16).unwrap()).to_f64();
        assert_eq!(b("1.00390625"), 1.0);
        assert_eq!(b("1.003906250000000000000000000001"), 1.0078125);
        assert_eq!(b("3.0e38"), bf16::from_f32(3.0e38).to_f64());
        assert!(parse_decimal("1x", Half::F16).is_none());
    }

    #[test]
    fn normalize_gives_significant_digits_and_exponent() {
        assert_eq!(normalize("0.0125"), Some(("125".into(), -2)));
        assert_eq!(normalize("120"), Some(("12".into(), 2)));
        assert_eq!(normalize("1.5e3"), Some(("15".into(), 3)));
        assert_eq!(normalize("0.000"), Some((String::new(), 0)));
        assert_eq!(normalize("1_000.0"), Some(("1".into(), 3)));
    }
}
