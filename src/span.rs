//! Source positions: the byte range a piece of kernel source covers, shared by the syntax tree,
//! the checked IR and the diagnostics that point back at the text.
//!
//! A leaf: it imports nothing from the crate, so the IR can keep spans without depending on
//! the front end that produces them.

/// A byte range in a kernel source file ([`SourceFile`](crate::lang::SourceFile)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct Span {
    /// First byte.
    pub lo: u32,
    /// One past the last byte.
    pub hi: u32,
}

impl Span {
    /// The span from `lo` to `hi` (empty at `lo` if `hi` is before it).
    pub fn new(lo: usize, hi: usize) -> Span {
        Span { lo: lo as u32, hi: hi.max(lo) as u32 }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span { lo: self.lo.min(other.lo), hi: self.hi.max(other.hi) }
    }
}
