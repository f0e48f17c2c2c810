//! Source text: a kernel file's name and text, and positions within it as line and column.
//!
//! The files of one kernel crate (its root and the files its `mod` items include) share one
//! space of byte offsets, as in rustc's source map: each file starts at its own `base`, so a
//! [`Span`] alone says which file it is in.

use std::sync::Arc;

use crate::span::Span;

/// A kernel source file: its name (for diagnostics only), its text, and where its bytes start in
/// the offsets its spans use.
#[derive(Debug)]
pub struct SourceFile {
    name: String,
    text: String,
    base: usize,
    line_starts: Vec<usize>,
}

impl SourceFile {
    /// Wraps `text` under the display name `name`, its spans starting at offset 0.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Arc<SourceFile> {
        SourceFile::with_base(name, text, 0)
    }

    /// Wraps `text` whose spans start at `base` (a file after the first of a crate).
    pub fn with_base(name: impl Into<String>, text: impl Into<String>, base: usize) -> Arc<SourceFile> {
        let text = text.into();
        let line_starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        Arc::new(SourceFile { name: name.into(), text, base, line_starts })
    }

    /// The offset of the file's first byte in the spans of its crate.
    pub fn base(&self) -> usize {
        self.base
    }

    /// The offset just past this file (where the next file of the crate may start, plus one).
    pub fn end(&self) -> usize {
        self.base + self.text.len()
    }

    /// Whether a span starts in this file.
    pub fn contains(&self, span: Span) -> bool {
        (self.base..=self.end()).contains(&(span.lo as usize))
    }

    /// The name shown in diagnostics.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The source text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// 1-based line and column (in characters) of a byte offset (of the crate's spans).
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.saturating_sub(self.base).min(self.text.len());
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
        let (lo, hi) = ((span.lo as usize).saturating_sub(self.base), (span.hi as usize).saturating_sub(self.base));
        self.text.get(lo..hi).unwrap_or("")
    }

    /// A span of the crate as a byte range of this file's text (clamped to it).
    pub fn local_range(&self, span: Span) -> std::ops::Range<usize> {
        let len = self.text.len();
        let lo = (span.lo as usize).saturating_sub(self.base).min(len);
        lo..(span.hi as usize).saturating_sub(self.base).clamp(lo, len)
    }
}
