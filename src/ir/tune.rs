//! A kernel's tuning space, `#[tune(..)]`: the parameters it may be tuned over and their
//! values, the conditions a configuration must meet, how each configuration is launched (block,
//! grid, dynamic shared memory) and the tuning key, each an integer expression over the tuned
//! parameters and the launch's arguments. Evaluated here, on plain data, so that the JIT, the
//! runtime of prebuilt crates and the key share one meaning of every expression.

use std::fmt;

/// The most configurations a tuning space may have (after its conditions).
pub const MAX_CANDIDATES: usize = 256;

/// `#[tune(..)]`: what a kernel may be tuned over and how a configuration is launched.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct TuneSpace {
    /// The tuned parameters, in the order they are declared.
    pub params: Vec<TuneParam>,
    /// `require = ..`: conditions every configuration meets (over the tuned parameters only).
    pub require: Vec<TuneExpr>,
    /// `block = ..`: threads per block in x, y, z (one to three expressions).
    pub block: Vec<TuneExpr>,
    /// `grid = ..`: blocks in x, y, z (one to three expressions).
    pub grid: Vec<TuneExpr>,
    /// `shared_mem = ..`: bytes of dynamic shared memory per block.
    pub shared_mem: Option<TuneExpr>,
    /// `key = ..`: the values that select a tuning, from the launch's arguments (sizes, rounded
    /// into buckets by the expression: `n.next_power_of_two()`).
    pub key: Vec<TuneExpr>,
    /// The kernel's parameter names, for messages only (the expressions refer to parameters by
    /// position).
    pub arg_names: Vec<String>,
}

/// A tuned parameter: a const parameter of the kernel (`generic` its position among the
/// kernel's generic parameters), or a name the launch shape alone uses (a block size).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct TuneParam {
    /// Its name (`TILE`).
    pub name: String,
    /// The values it takes, in the order declared.
    pub values: Vec<u64>,
    /// Its position among the kernel's generic parameters, for a const parameter.
    pub generic: Option<usize>,
}

/// An integer expression of `#[tune(..)]`, evaluated in `u64` with every overflow, division by
/// zero and negative value an error. Comparisons and `&&`, `||`, `!` give 1 or 0.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum TuneExpr {
    /// An integer literal.
    Lit(u64),
    /// A tuned parameter, by position in [`TuneSpace::params`].
    Tuned(usize),
    /// An integer scalar parameter of the kernel, by position.
    Arg(usize),
    /// `x.len()` of an array parameter.
    Len(usize),
    /// `a.shape(d)` of an array parameter.
    Shape(usize, usize),
    /// A unary operation or method.
    Unary(TuneUnary, Box<TuneExpr>),
    /// A binary operator or method.
    Binary(TuneBinary, Box<TuneExpr>, Box<TuneExpr>),
}

/// Unary operations of [`TuneExpr`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum TuneUnary {
    /// `!c`
    Not,
    /// `x.next_power_of_two()`
    NextPowerOfTwo,
    /// `x.ilog2()` (of 0: an error)
    Ilog2,
}

/// Binary operations of [`TuneExpr`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum TuneBinary {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
    /// `a.min(b)`
    Min,
    /// `a.max(b)`
    Max,
    /// `a.div_ceil(b)`
    DivCeil,
    /// `a.pow(b)`
    Pow,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `&&`
    And,
    /// `||`
    Or,
}

impl TuneBinary {
    /// The operator or method as written.
    pub fn symbol(self) -> &'static str {
        match self {
            TuneBinary::Add => "+",
            TuneBinary::Sub => "-",
            TuneBinary::Mul => "*",
            TuneBinary::Div => "/",
            TuneBinary::Rem => "%",
            TuneBinary::Shl => "<<",
            TuneBinary::Shr => ">>",
            TuneBinary::Min => "min",
            TuneBinary::Max => "max",
            TuneBinary::DivCeil => "div_ceil",
            TuneBinary::Pow => "pow",
            TuneBinary::Eq => "==",
            TuneBinary::Ne => "!=",
            TuneBinary::Lt => "<",
            TuneBinary::Le => "<=",
            TuneBinary::Gt => ">",
            TuneBinary::Ge => ">=",
            TuneBinary::And => "&&",
            TuneBinary::Or => "||",
        }
    }

    /// Whether it is written as a method (`a.min(b)`) rather than an operator.
    pub fn is_method(self) -> bool {
        matches!(self, TuneBinary::Min | TuneBinary::Max | TuneBinary::DivCeil | TuneBinary::Pow)
    }
}

/// What an expression reads of a launch's arguments.
pub trait TuneArgs {
    /// The value of integer scalar parameter `i` (`None`: not an integer scalar).
    fn scalar(&self, i: usize) -> Option<i128>;
    /// The extents of array parameter `i` (`None`: not an array).
    fn shape(&self, i: usize) -> Option<Vec<usize>>;
}

/// No arguments: what `require` conditions and the candidate list are evaluated with.
pub struct NoArgs;

impl TuneArgs for NoArgs {
    fn scalar(&self, _: usize) -> Option<i128> {
        None
    }
    fn shape(&self, _: usize) -> Option<Vec<usize>> {
        None
    }
}

/// Why a [`TuneExpr`] has no value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TuneEvalError {
    /// The value does not fit (`u64` overflow, a negative result or argument).
    #[error("`{0}` overflows or is negative")]
    Overflow(String),
    /// Division (or `%`, `div_ceil`) by zero, or `ilog2` of zero.
    #[error("`{0}` divides by zero or takes the logarithm of zero")]
    Zero(String),
    /// The expression names an argument the launch does not give (or not as that kind).
    #[error("`{0}` names no value here")]
    Unbound(String),
}

impl TuneExpr {
    /// The value for the tuned parameters' values `tuned` (by position) and the launch's `args`.
    pub fn eval(&self, space: &TuneSpace, tuned: &[u64], args: &dyn TuneArgs) -> Result<u64, TuneEvalError> {
        let text = || space.show(self);
        Ok(match self {
            TuneExpr::Lit(v) => *v,
            TuneExpr::Tuned(i) => *tuned.get(*i).ok_or_else(|| TuneEvalError::Unbound(text()))?,
            TuneExpr::Arg(i) => {
                let v = args.scalar(*i).ok_or_else(|| TuneEvalError::Unbound(text()))?;
                u64::try_from(v).map_err(|_| TuneEvalError::Overflow(text()))?
            }
            TuneExpr::Len(i) => args.shape(*i).ok_or_else(|| TuneEvalError::Unbound(text()))?.iter().product::<usize>() as u64,
            TuneExpr::Shape(i, d) => {
                *args.shape(*i).ok_or_else(|| TuneEvalError::Unbound(text()))?.get(*d).ok_or_else(|| TuneEvalError::Unbound(text()))? as u64
            }
            TuneExpr::Unary(op, a) => {
                let a = a.eval(space, tuned, args)?;
                match op {
                    TuneUnary::Not => (a == 0) as u64,
                    TuneUnary::NextPowerOfTwo => a.checked_next_power_of_two().ok_or_else(|| TuneEvalError::Overflow(text()))?,
                    TuneUnary::Ilog2 => a.checked_ilog2().ok_or_else(|| TuneEvalError::Zero(text()))? as u64,
                }
            }
            TuneExpr::Binary(op, a, b) => {
                let a = a.eval(space, tuned, args)?;
                // `&&` and `||` do not evaluate what they do not need, as in Rust.
                match (op, a) {
                    (TuneBinary::And, 0) => return Ok(0),
                    (TuneBinary::Or, a) if a != 0 => return Ok(1),
                    _ => {}
                }
                let b = b.eval(space, tuned, args)?;
                let over = || TuneEvalError::Overflow(text());
                let zero = || TuneEvalError::Zero(text());
                match op {
                    TuneBinary::Add => a.checked_add(b).ok_or_else(over)?,
                    TuneBinary::Sub => a.checked_sub(b).ok_or_else(over)?,
                    TuneBinary::Mul => a.checked_mul(b).ok_or_else(over)?,
                    TuneBinary::Div => a.checked_div(b).ok_or_else(zero)?,
                    TuneBinary::Rem => a.checked_rem(b).ok_or_else(zero)?,
                    TuneBinary::DivCeil => {
                        if b == 0 {
                            return Err(zero());
                        }
                        a.div_ceil(b)
                    }
                    TuneBinary::Shl => u32::try_from(b).ok().and_then(|s| a.checked_shl(s)).filter(|r| r >> b == a).ok_or_else(over)?,
                    TuneBinary::Shr => u32::try_from(b).ok().and_then(|s| a.checked_shr(s)).ok_or_else(over)?,
                    TuneBinary::Min => a.min(b),
                    TuneBinary::Max => a.max(b),
                    TuneBinary::Pow => u32::try_from(b).ok().and_then(|e| a.checked_pow(e)).ok_or_else(over)?,
                    TuneBinary::Eq => (a == b) as u64,
                    TuneBinary::Ne => (a != b) as u64,
                    TuneBinary::Lt => (a < b) as u64,
                    TuneBinary::Le => (a <= b) as u64,
                    TuneBinary::Gt => (a > b) as u64,
                    TuneBinary::Ge => (a >= b) as u64,
                    TuneBinary::And | TuneBinary::Or => (b != 0) as u64,
                }
            }
        })
    }

    /// Whether it reads a launch argument (a `require` condition may not).
    pub fn reads_args(&self) -> bool {
        match self {
            TuneExpr::Lit(_) | TuneExpr::Tuned(_) => false,
            TuneExpr::Arg(_) | TuneExpr::Len(_) | TuneExpr::Shape(..) => true,
            TuneExpr::Unary(_, a) => a.reads_args(),
            TuneExpr::Binary(_, a, b) => a.reads_args() || b.reads_args(),
        }
    }
}

/// The launch shape of one configuration: block and grid dimensions and dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TuneShape {
    /// Threads per block in x, y, z.
    pub block: [u64; 3],
    /// Blocks in x, y, z.
    pub grid: [u64; 3],
    /// Bytes of dynamic shared memory per block.
    pub shared_mem: u64,
}

impl TuneSpace {
    /// Every configuration, as the values of [`params`](Self::params) in order: each
    /// combination of the declared values (the first parameter varying slowest), in that order,
    /// that meets every `require` condition.
    pub fn candidates(&self) -> Result<Vec<Vec<u64>>, TuneEvalError> {
        let mut all: Vec<Vec<u64>> = vec![Vec::new()];
        for p in &self.params {
            all = all.iter().flat_map(|c| p.values.iter().map(move |v| [c.as_slice(), &[*v]].concat())).collect();
        }
        let mut out = Vec::new();
        for c in all {
            let mut ok = true;
            for r in &self.require {
                if r.eval(self, &c, &NoArgs)? == 0 {
                    ok = false;
                    break;
                }
            }
            if ok {
                out.push(c);
            }
        }
        Ok(out)
    }

    /// The launch shape of configuration `tuned` for `args`.
    pub fn shape(&self, tuned: &[u64], args: &dyn TuneArgs) -> Result<TuneShape, TuneEvalError> {
        let dims = |exprs: &[TuneExpr]| -> Result<[u64; 3], TuneEvalError> {
            let mut d = [1u64; 3];
            for (slot, e) in d.iter_mut().zip(exprs) {
                *slot = e.eval(self, tuned, args)?;
            }
            Ok(d)
        };
        Ok(TuneShape {
            block: dims(&self.block)?,
            grid: dims(&self.grid)?,
            shared_mem: match &self.shared_mem {
                Some(e) => e.eval(self, tuned, args)?,
                None => 0,
            },
        })
    }

    /// The tuning key's values for `args` (the tuned parameters play no part).
    pub fn bucket(&self, args: &dyn TuneArgs) -> Result<Vec<u64>, TuneEvalError> {
        self.key.iter().map(|e| e.eval(self, &[], args)).collect()
    }

    /// A configuration as text: `TILE = 16, BLOCK = 256`.
    pub fn describe(&self, tuned: &[u64]) -> String {
        self.params.iter().zip(tuned).map(|(p, v)| format!("{} = {v}", p.name)).collect::<Vec<_>>().join(", ")
    }

    /// An expression as the source writes it (`a.shape(0).next_power_of_two()`).
    pub fn show(&self, e: &TuneExpr) -> String {
        Shown { space: self, e }.to_string()
    }
}

/// An expression with the names it refers to, for [`fmt::Display`].
struct Shown<'a> {
    space: &'a TuneSpace,
    e: &'a TuneExpr,
}

impl<'a> fmt::Display for Shown<'a> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let arg = |i: &usize| self.space.arg_names.get(*i).map(String::as_str).unwrap_or("?");
        let sub = |e| Shown { space: self.space, e };
        // Operands of an operator are parenthesised where they are operators themselves.
        let operand = |e: &'a TuneExpr| match e {
            TuneExpr::Binary(op, ..) if !op.is_method() => format!("({})", sub(e)),
            TuneExpr::Unary(TuneUnary::Not, _) => format!("({})", sub(e)),
            _ => sub(e).to_string(),
        };
        match self.e {
            TuneExpr::Lit(v) => write!(f, "{v}"),
            TuneExpr::Tuned(i) => f.write_str(self.space.params.get(*i).map(|p| p.name.as_str()).unwrap_or("?")),
            TuneExpr::Arg(i) => f.write_str(arg(i)),
            TuneExpr::Len(i) => write!(f, "{}.len()", arg(i)),
            TuneExpr::Shape(i, d) => write!(f, "{}.shape({d})", arg(i)),
            TuneExpr::Unary(TuneUnary::Not, a) => write!(f, "!{}", operand(a)),
            TuneExpr::Unary(TuneUnary::NextPowerOfTwo, a) => write!(f, "{}.next_power_of_two()", operand(a)),
            TuneExpr::Unary(TuneUnary::Ilog2, a) => write!(f, "{}.ilog2()", operand(a)),
            TuneExpr::Binary(op, a, b) if op.is_method() => write!(f, "{}.{}({})", operand(a), op.symbol(), sub(b)),
            TuneExpr::Binary(op, a, b) => write!(f, "{} {} {}", operand(a), op.symbol(), operand(b)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(op: TuneBinary, a: TuneExpr, c: TuneExpr) -> TuneExpr {
        TuneExpr::Binary(op, Box::new(a), Box::new(c))
    }

    struct Args(Vec<Option<i128>>, Vec<Option<Vec<usize>>>);
    impl TuneArgs for Args {
        fn scalar(&self, i: usize) -> Option<i128> {
            self.0.get(i).copied().flatten()
        }
        fn shape(&self, i: usize) -> Option<Vec<usize>> {
            self.1.get(i).cloned().flatten()
        }
    }

    fn space() -> TuneSpace {
        TuneSpace {
            params: vec![
                TuneParam { name: "TILE".into(), values: vec![8, 16, 32], generic: Some(0) },
                TuneParam { name: "ITEMS".into(), values: vec![1, 2, 4], generic: None },
            ],
            require: vec![b(TuneBinary::Le, b(TuneBinary::Mul, TuneExpr::Tuned(0), TuneExpr::Tuned(1)), TuneExpr::Lit(32))],
            block: vec![TuneExpr::Tuned(0), TuneExpr::Tuned(0)],
            grid: vec![b(TuneBinary::DivCeil, TuneExpr::Shape(0, 1), b(TuneBinary::Mul, TuneExpr::Tuned(0), TuneExpr::Tuned(1)))],
            shared_mem: None,
            key: vec![TuneExpr::Unary(TuneUnary::NextPowerOfTwo, Box::new(TuneExpr::Len(0))), TuneExpr::Arg(1)],
            arg_names: vec!["a".into(), "n".into()],
        }
    }

    #[test]
    fn candidates_are_the_product_in_order_that_meets_every_condition() {
        let s = space();
        assert_eq!(s.candidates().unwrap(), [[8, 1], [8, 2], [8, 4], [16, 1], [16, 2], [32, 1]]);
        assert_eq!(s.describe(&[16, 2]), "TILE = 16, ITEMS = 2");
    }

    #[test]
    fn shapes_and_buckets_are_evaluated_from_the_arguments() {
        let s = space();
        let args = Args(vec![None, Some(7)], vec![Some(vec![3, 100]), None]);
        let shape = s.shape(&[16, 2], &args).unwrap();
        assert_eq!(shape, TuneShape { block: [16, 16, 1], grid: [4, 1, 1], shared_mem: 0 });
        assert_eq!(s.bucket(&args).unwrap(), [512, 7]);
        let negative = Args(vec![None, Some(-1)], vec![Some(vec![3, 100]), None]);
        assert_eq!(s.bucket(&negative).unwrap_err(), TuneEvalError::Overflow("n".into()));
        assert_eq!(s.bucket(&NoArgs).unwrap_err(), TuneEvalError::Unbound("a.len()".into()));
    }

    #[test]
    fn arithmetic_is_checked_and_logic_short_circuits() {
        let s = space();
        let e = |x: TuneExpr| x.eval(&s, &[], &NoArgs);
        assert!(matches!(e(b(TuneBinary::Div, TuneExpr::Lit(1), TuneExpr::Lit(0))), Err(TuneEvalError::Zero(_))));
        assert!(matches!(e(b(TuneBinary::Sub, TuneExpr::Lit(1), TuneExpr::Lit(2))), Err(TuneEvalError::Overflow(_))));
        assert!(matches!(e(b(TuneBinary::Shl, TuneExpr::Lit(3), TuneExpr::Lit(63))), Err(TuneEvalError::Overflow(_))));
        assert!(matches!(e(b(TuneBinary::Mul, TuneExpr::Lit(u64::MAX), TuneExpr::Lit(2))), Err(TuneEvalError::Overflow(_))));
        assert!(matches!(e(TuneExpr::Unary(TuneUnary::Ilog2, Box::new(TuneExpr::Lit(0)))), Err(TuneEvalError::Zero(_))));
        let div0 = b(TuneBinary::Div, TuneExpr::Lit(1), TuneExpr::Lit(0));
        assert_eq!(e(b(TuneBinary::And, TuneExpr::Lit(0), div0.clone())), Ok(0));
        assert_eq!(e(b(TuneBinary::Or, TuneExpr::Lit(5), div0)), Ok(1));
        assert_eq!(e(b(TuneBinary::DivCeil, TuneExpr::Lit(10), TuneExpr::Lit(4))), Ok(3));
        assert_eq!(e(b(TuneBinary::Pow, TuneExpr::Lit(2), TuneExpr::Lit(10))), Ok(1024));
        assert_eq!(
            s.show(&b(TuneBinary::Mul, b(TuneBinary::Add, TuneExpr::Tuned(0), TuneExpr::Lit(1)), TuneExpr::Arg(1))),
            "(TILE + 1) * n"
        );
    }
}
