//! Diagnostics: what went wrong, where, and what is supported instead; rendered like rustc.

use std::fmt;
use std::sync::Arc;

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, Chars, Config};

use super::source::SourceFile;
use crate::span::Span;

/// One error in a kernel source, with its location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The headline, e.g. "cannot find value `x`".
    pub message: String,
    /// Where.
    pub span: Span,
    /// Text under the caret.
    pub label: String,
    /// Other places worth showing.
    pub secondary: Vec<(Span, String)>,
    /// `= note:` lines.
    pub notes: Vec<String>,
    /// `= help:` lines: what to write instead.
    pub help: Vec<String>,
}

impl Diagnostic {
    /// An error at `span`.
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { message: message.into(), span, label: String::new(), secondary: Vec::new(), notes: Vec::new(), help: Vec::new() }
    }

    /// Sets the text under the caret.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Adds a `= help:` line.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help.push(help.into());
        self
    }

    /// Adds a `= note:` line.
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Points at another place too.
    pub fn secondary(mut self, span: Span, label: impl Into<String>) -> Self {
        self.secondary.push((span, label.into()));
        self
    }
}

/// Errors found in a kernel source: one file, or the files of a crate (its root and the files
/// its `mod` items include), each error located by its span. kache never builds an empty one
/// (one built empty through [`Diagnostics::new`] displays as its file name alone).
#[derive(Clone)]
pub struct Diagnostics {
    files: Vec<Arc<SourceFile>>,
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    /// Wraps errors found in `file`.
    pub fn new(file: Arc<SourceFile>, items: Vec<Diagnostic>) -> Diagnostics {
        Diagnostics { files: vec![file], items }
    }

    /// Wraps errors found in the files of a crate (the root first).
    pub fn in_files(files: Vec<Arc<SourceFile>>, items: Vec<Diagnostic>) -> Diagnostics {
        Diagnostics { files, items }
    }

    /// One error.
    pub fn single(file: Arc<SourceFile>, d: Diagnostic) -> Diagnostics {
        Diagnostics { files: vec![file], items: vec![d] }
    }

    /// The file of the first error (the root file when there is none).
    pub fn file(&self) -> &Arc<SourceFile> {
        match self.items.first() {
            Some(d) => self.file_of(d.span),
            None => &self.files[0],
        }
    }

    /// The file a span is in (the root file if none holds it).
    pub fn file_of(&self, span: Span) -> &Arc<SourceFile> {
        self.files.iter().rev().find(|f| f.contains(span)).unwrap_or(&self.files[0])
    }

    /// The errors.
    pub fn items(&self) -> &[Diagnostic] {
        &self.items
    }

    /// `file:line:col` of the first error.
    pub fn location(&self) -> String {
        match self.items.first() {
            Some(d) => self.file_of(d.span).location(d.span),
            None => self.files[0].name().to_string(),
        }
    }

    /// Renders every error like rustc does (source line, caret, notes), with ANSI colours when
    /// `color` is set.
    pub fn render(&self, color: bool) -> String {
        let mut files = SimpleFiles::new();
        let ids: Vec<usize> = self.files.iter().map(|f| files.add(f.name(), f.text())).collect();
        let config = Config { chars: Chars::ascii(), ..Config::default() };
        let mut out = String::new();
        let label = |span: Span| {
            let i = self.files.iter().rposition(|f| f.contains(span)).unwrap_or(0);
            (ids[i], self.files[i].local_range(span))
        };
        for d in &self.items {
            let (fid, range) = label(d.span);
            let mut labels = vec![Label::primary(fid, range).with_message(&d.label)];
            for (s, m) in &d.secondary {
                let (sid, srange) = label(*s);
                labels.push(Label::secondary(sid, srange).with_message(m));
            }
            let mut notes: Vec<String> = d.notes.clone();
            notes.extend(d.help.iter().map(|h| format!("help: {h}")));
            let cs = CsDiagnostic::error().with_message(&d.message).with_labels(labels).with_notes(notes);
            if color {
                let mut buf = codespan_reporting::term::termcolor::Buffer::ansi();
                if term::emit_to_write_style(&mut buf, &config, &files, &cs).is_ok() {
                    out.push_str(&String::from_utf8_lossy(buf.as_slice()));
                    continue;
                }
            }
            match term::emit_into_string(&config, &files, &cs) {
                Ok(s) => out.push_str(&s),
                Err(_) => out.push_str(&format!("error: {}\n --> {}\n", d.message, self.file_of(d.span).location(d.span))),
            }
        }
        out
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(d) = self.items.first() else {
            return f.write_str(self.files[0].name());
        };
        write!(f, "{}: {}", self.location(), d.message)?;
        if self.items.len() > 1 {
            write!(f, " (and {} more errors)", self.items.len() - 1)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(false))
    }
}

impl std::error::Error for Diagnostics {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_set_of_errors_displays_without_panicking() {
        let file = SourceFile::new("k.rs", "fn f() {}\n");
        let empty = Diagnostics::new(file.clone(), Vec::new());
        assert_eq!(empty.to_string(), "k.rs");
        assert_eq!(empty.location(), "k.rs");
        assert_eq!(empty.render(false), "");
        let one = Diagnostics::single(file, Diagnostic::error(Span::new(3, 4), "bad"));
        assert_eq!(one.to_string(), "k.rs:1:4: bad");
    }
}
