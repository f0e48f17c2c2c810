//! Source text: a kernel file's name and text, and positions within it as line and column.

use std::sync::Arc;

use crate::span::Span;

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
