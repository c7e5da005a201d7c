//! Spec errors: each names file, line, column and field, and renders as a miette diagnostic.

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceCode};
use std::fmt;
use std::sync::Arc;

/// One problem in the spec.
#[derive(Debug, Clone)]
pub struct SpecError {
    /// The spec file as given by the user.
    pub file: String,
    /// 1-based line and column of the offending value (0 when unknown).
    pub line: usize,
    pub column: usize,
    /// The field, e.g. `network.subnets.private.cidrs[1]`.
    pub field: String,
    pub message: String,
    pub help: Option<String>,
    pub(crate) span: Option<std::ops::Range<usize>>,
    pub(crate) source: Arc<NamedSource<String>>,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: ", self.file, self.line, self.column)?;
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for SpecError {}

impl Diagnostic for SpecError {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new("spec"))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help.as_ref().map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(self.source.as_ref())
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = self.span.clone()?;
        let label = if self.field.is_empty() { "here".to_string() } else { self.field.clone() };
        Some(Box::new(std::iter::once(LabeledSpan::new(
            Some(label),
            span.start,
            span.len().max(1),
        ))))
    }
}

/// All problems found in a spec. Validation collects them all before failing.
#[derive(Debug, Clone)]
pub struct SpecErrors {
    pub file: String,
    pub errors: Vec<SpecError>,
}

impl fmt::Display for SpecErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.errors.len();
        // The errors themselves are the diagnostic's related items (`errors` for library users).
        write!(f, "invalid spec {}: {} error{}", self.file, n, if n == 1 { "" } else { "s" })
    }
}

impl std::error::Error for SpecErrors {}

impl Diagnostic for SpecErrors {
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        Some(Box::new(self.errors.iter().map(|e| e as &dyn Diagnostic)))
    }
}

impl SpecErrors {
    /// Every error on its own line, `file:line:column: field: message`.
    pub fn details(&self) -> String {
        self.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n")
    }

    /// Adds the errors of `other`.
    pub fn extend(&mut self, other: SpecErrors) {
        self.errors.extend(other.errors);
    }

    /// `Ok(())` when there are none.
    pub fn into_result(self) -> Result<(), SpecErrors> {
        if self.errors.is_empty() { Ok(()) } else { Err(self) }
    }
}
