//! Source text and spans.

use std::sync::Arc;

/// A kernel source file: its name (for diagnostics only) and its text.
#[derive(Debug)]
pub struct SourceFile {
    name: String,
    text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    /// Wraps `text` under the display name `name`.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Arc<SourceFile> {
        let text = text.into();
        let line_starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        Arc::new(SourceFile { name: name.into(), text, line_starts })
    }

    /// The name shown in diagnostics.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The source text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = match self.line_starts.binary_search(&offset) {
            Ok(l) => l,
            Err(l) => l - 1,
        };
        let start = self.line_starts[line];
        let col = self.text.get(start..offset).map(|s| s.chars().count()).unwrap_or(offset - start);
        (line + 1, col + 1)
    }

    /// `file:line:col` of a span's start.
    pub fn location(&self, span: Span) -> String {
        let (l, c) = self.line_col(span.lo as usize);
        format!("{}:{}:{}", self.name, l, c)
    }

    /// The text a span covers.
    pub fn snippet(&self, span: Span) -> &str {
        self.text.get(span.lo as usize..span.hi as usize).unwrap_or("")
    }
}

/// A byte range in a [`SourceFile`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// First byte.
    pub lo: u32,
    /// One past the last byte.
    pub hi: u32,
}

impl Span {
    /// The span from `lo` to `hi`.
    pub fn new(lo: usize, hi: usize) -> Span {
        Span { lo: lo as u32, hi: hi.max(lo) as u32 }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span { lo: self.lo.min(other.lo), hi: self.hi.max(other.hi) }
    }
}
