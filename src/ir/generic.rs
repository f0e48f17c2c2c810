//! The types of generic functions checked at their definitions: the bound of a type parameter,
//! a type parameter, and an array of a type parameter's elements. A compiled program never holds
//! them: each instance substitutes concrete types.

use super::Scalar;

/// The bound of a type parameter of a generic function: which scalar types it admits, and so
/// which operations its body may use (`T: Num` arithmetic and comparisons, `T: Int` bit
/// operations too, `T: Float` the float methods too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum Bound {
    /// No bound: values of the type can be moved, stored and passed, nothing more.
    Any,
    /// `Num`: every integer and float type.
    Num,
    /// `Int`: every integer type.
    Int,
    /// `Float`: every float type.
    Float,
    /// `Half`: the 16-bit float types, `f16` and `bf16` (the element types of the tensor cores'
    /// 16 x 8 x 16 `mma`).
    Half,
}

impl Bound {
    /// Whether the scalar type `s` satisfies the bound.
    pub fn admits(self, s: Scalar) -> bool {
        match self {
            Bound::Any => true,
            Bound::Num => s.is_numeric(),
            Bound::Int => s.is_int(),
            Bound::Float => s.is_float(),
            Bound::Half => s.is_half(),
        }
    }

    /// Whether every type this bound admits satisfies `other` (`Float` implies `Num`).
    pub fn implies(self, other: Bound) -> bool {
        match (self, other) {
            (_, Bound::Any) => true,
            (Bound::Int | Bound::Float | Bound::Half, Bound::Num) => true,
            (Bound::Half, Bound::Float) => true,
            (a, b) => a == b,
        }
    }

    /// The bound as written in source (`Float`); `None` for no bound.
    pub fn name(self) -> Option<&'static str> {
        match self {
            Bound::Any => None,
            Bound::Num => Some("Num"),
            Bound::Int => Some("Int"),
            Bound::Float => Some("Float"),
            Bound::Half => Some("Half"),
        }
    }
}

/// A type parameter of a generic function (`T` in `fn f<T: Float>`): its position among the
/// function's generic parameters and its bound. Only a generic body checked at its definition
/// has these types; an instance substitutes a concrete type for each, so a program that is
/// compiled never holds one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct TypeParam {
    /// Position among the function's generic parameters.
    pub index: u8,
    /// What it admits.
    pub bound: Bound,
}

/// An array whose elements have a type parameter's type (`&[T]`, `&mut Array<T, 2>`), while a
/// generic body is checked at its definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct ParamArrayTy {
    /// Element type.
    pub elem: TypeParam,
    /// Number of dimensions, 0..=4.
    pub ndim: u8,
    /// `&mut` parameters and shared arrays.
    pub writable: bool,
}
