//! The AWS spec sections and their expansion into resources: `[network]`, `[openbao.server]`,
//! `[eks]`, `[federation]`. Expansion is pure: it reads the spec and makes `ResourceSpec`s, and calls no API.

pub mod eks;
pub mod federation;
pub mod network;
pub mod openbao;

/// What the stages' tests share: expanding a spec text, and its errors as `file:line field:
/// message` lines.
#[cfg(test)]
pub(crate) mod testing {
    use engine::ResourceSpec;
    use engine::spec::{Globals, SpecErrors, SpecSource};

    /// A stage's expansion function.
    pub type Expand = fn(&SpecSource, &Globals) -> Result<Vec<ResourceSpec>, SpecErrors>;

    /// The spec `text`, as `specs/test.toml`.
    pub fn source(text: &str) -> SpecSource {
        SpecSource::from_text("specs/test.toml", "test", text)
    }

    /// `text` expanded by `expand`.
    pub fn expand_with(expand: Expand, text: &str) -> Result<Vec<ResourceSpec>, SpecErrors> {
        let s = source(text);
        let globals = s.globals()?;
        expand(&s, &globals)
    }

    /// The errors of expanding `text`, one line each; panics when it expands.
    pub fn errors_of(expand: Expand, text: &str) -> String {
        let e = expand_with(expand, text).expect_err("invalid");
        let lines: Vec<String> = e
            .errors
            .iter()
            .map(|e| format!("{}:{} {}: {}", e.file, e.line, e.field, e.message))
            .collect();
        lines.join("\n")
    }
}
