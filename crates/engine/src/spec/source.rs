//! The spec document: its text, its name, and spans for error reporting.

use super::{FieldPath, Globals, SpecError, SpecErrors, path::Segment};
use miette::NamedSource;
use serde::de::DeserializeOwned;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// A spec file's text, parsed on demand so every error can point into it.
///
/// A spec may carry an overlay: a second file whose tables are merged over the spec's (as with
/// Helm's repeated `-f` or OpenTofu's override files), e.g. to point a sandbox at local peers.
/// Spans of the merged document are offsets into the spec's text, then the overlay's text after
/// it, so every error still names the file and line the value came from.
#[derive(Debug, Clone)]
pub struct SpecSource {
    file: String,
    name: String,
    text: Arc<str>,
    named: Arc<NamedSource<String>>,
    overlay: Option<Arc<SpecSource>>,
}

/// The largest spec file read (a spec is a page of TOML, not a data dump).
pub const MAX_SPEC_BYTES: u64 = 1 << 20;

impl SpecSource {
    /// A spec read from `path`; its name is the file stem (`specs/aws.toml` → `aws`).
    pub fn from_file(path: &Path) -> std::io::Result<Self> {
        use std::io::Read as _;
        let mut text = String::new();
        std::fs::File::open(path)?.take(MAX_SPEC_BYTES + 1).read_to_string(&mut text)?;
        if text.len() as u64 > MAX_SPEC_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: a spec is at most {} KiB", path.display(), MAX_SPEC_BYTES >> 10),
            ));
        }
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "spec".into());
        Ok(Self::from_text(&path.display().to_string(), &name, text))
    }

    /// A spec from text; `file` is shown in errors, `name` is the spec name.
    pub fn from_text(file: &str, name: &str, text: impl Into<String>) -> Self {
        let text: String = text.into();
        SpecSource {
            file: file.to_string(),
            name: name.to_string(),
            named: Arc::new(NamedSource::new(file, text.clone())),
            text: text.into(),
            overlay: None,
        }
    }

    /// This spec with `overlay` merged over it: tables merge key by key, any other value of the
    /// overlay replaces the spec's (arrays whole). Paths in the overlay are read like the spec's
    /// (relative to the spec's directory). The overlay's syntax is checked here.
    pub fn with_overlay(mut self, overlay: SpecSource) -> Result<Self, SpecErrors> {
        overlay.parse()?;
        self.overlay = Some(Arc::new(overlay));
        Ok(self)
    }

    /// The overlay's file, when there is one.
    pub fn overlay_file(&self) -> Option<&str> {
        self.overlay.as_deref().map(|o| o.file())
    }

    /// Where the overlay's text starts in the merged document's offsets.
    fn overlay_offset(&self) -> usize {
        self.text.len() + 1
    }

    /// The file as given.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The spec name: `[globals] name`, else the file stem.
    pub fn name(&self) -> String {
        self.globals().ok().and_then(|g| g.name).unwrap_or_else(|| self.name.clone())
    }

    /// The raw text.
    pub fn text(&self) -> &str {
        &self.text
    }

    fn parse(&self) -> Result<Spanned<DeTable<'_>>, SpecErrors> {
        let mut root = DeTable::parse(&self.text).map_err(|e| {
            let span = e.span();
            self.errors(vec![self.error_at(span, "", e.message().trim())])
        })?;
        if let Some(overlay) = &self.overlay {
            let over = overlay.parse()?.into_inner();
            merge_tables(root.get_mut(), shift_table(over, self.overlay_offset()));
        }
        Ok(root)
    }

    /// Whether the document (with its overlay) has the top-level section `name`.
    pub fn has_section(&self, name: &str) -> bool {
        self.parse()
            .map(|root| root.get_ref().iter().any(|(k, _)| k.get_ref() == name))
            .unwrap_or(false)
    }

    /// Checks the TOML syntax and that every top-level key is `globals`, `state` or one of
    /// `known`.
    pub fn check_sections(&self, known: &[&str]) -> Result<(), SpecErrors> {
        let root = self.parse()?;
        let mut errors = Vec::new();
        let mut has_globals = false;
        for (key, value) in root.get_ref().iter() {
            let name: &str = key.get_ref();
            if name == "globals" {
                has_globals = true;
            }
            if name == "globals" || name == "state" || known.contains(&name) {
                // Every section is a table, even one no provider reads (a gated one).
                if !matches!(value.get_ref(), DeValue::Table(_)) {
                    errors.push(self.error_at(
                        Some(key.span()),
                        name,
                        &format!("`{name}` must be a table (`[{name}]`)"),
                    ));
                }
            } else {
                let mut err =
                    self.error_at(Some(key.span()), name, &format!("unknown section `{name}`"));
                let mut all = vec!["globals", "state"];
                all.extend_from_slice(known);
                err.help = Some(format!("known sections: {}", all.join(", ")));
                errors.push(err);
            }
        }
        if !has_globals {
            errors.push(self.error_at(Some(0..0), "globals", "missing section `[globals]`"));
        }
        self.errors(errors).into_result()
    }

    /// Deserializes the top-level section `name` into `T`; `None` when absent. Unknown keys and
    /// wrong types are errors pointing at the key or value.
    pub fn section<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, SpecErrors> {
        let root = self.parse()?;
        let Some((_, value)) = root.get_ref().iter().find(|(k, _)| k.get_ref() == name) else {
            return Ok(None);
        };
        let span = value.span();
        let DeValue::Table(table) = value.get_ref().clone() else {
            return Err(self.errors(vec![self.error_at(
                Some(span),
                name,
                &format!("`{name}` must be a table"),
            )]));
        };
        let de = toml::de::Deserializer::from(Spanned::new(span, table));
        T::deserialize(de).map(Some).map_err(|e| {
            let span = e.span();
            let field =
                span.as_ref().map(|s| self.path_at(s.start)).unwrap_or_else(|| name.to_string());
            self.errors(vec![self.error_at(span, &field, e.message().trim())])
        })
    }

    /// The top-level sections (with the overlay merged) added, removed or edited since
    /// `earlier`: what `--changed` compares. Formatting and comments are not changes.
    pub fn sections_changed_since(
        &self,
        earlier: &SpecSource,
    ) -> Result<std::collections::BTreeSet<String>, SpecErrors> {
        let keys = |s: &SpecSource| -> Result<Vec<String>, SpecErrors> {
            Ok(s.parse()?.get_ref().iter().map(|(k, _)| k.get_ref().to_string()).collect())
        };
        let mut all = keys(self)?;
        all.extend(keys(earlier)?);
        let mut changed = std::collections::BTreeSet::new();
        for key in all {
            if self.section::<toml::Table>(&key)? != earlier.section::<toml::Table>(&key)? {
                changed.insert(key);
            }
        }
        Ok(changed)
    }

    /// The `[globals]` section.
    pub fn globals(&self) -> Result<Globals, SpecErrors> {
        let globals = self.section::<Globals>("globals")?.ok_or_else(|| {
            self.errors(vec![self.error_at(Some(0..0), "globals", "missing section `[globals]`")])
        })?;
        self.errors(globals.validate(self)).into_result()?;
        Ok(globals)
    }

    /// An error about the value at `path`.
    pub fn error(&self, path: &FieldPath, message: impl Into<String>) -> SpecError {
        let span = self.span_of(path);
        self.error_at(span, &path.to_string(), &message.into())
    }

    /// An error about the spec as a whole (no single field to point at).
    pub fn general_error(&self, message: impl Into<String>) -> SpecError {
        self.error_at(None, "", &message.into())
    }

    /// Wraps errors of this file.
    pub fn errors(&self, errors: Vec<SpecError>) -> SpecErrors {
        SpecErrors { file: self.file.clone(), errors }
    }

    fn error_at(&self, span: Option<Range<usize>>, field: &str, message: &str) -> SpecError {
        if let (Some(overlay), Some(s)) = (&self.overlay, &span)
            && s.start >= self.overlay_offset()
        {
            let at = self.overlay_offset();
            return overlay.error_at(Some(s.start - at..s.end.saturating_sub(at)), field, message);
        }
        let (line, column) = span.as_ref().map(|s| self.line_col(s.start)).unwrap_or((0, 0));
        SpecError {
            file: self.file.clone(),
            line,
            column,
            field: field.to_string(),
            message: message.to_string(),
            help: None,
            span,
            source: self.named.clone(),
        }
    }

    /// 1-based line and column of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        (line, before[line_start..].chars().count() + 1)
    }

    /// The span of the value at `path`, or of the deepest part of it that exists.
    pub fn span_of(&self, path: &FieldPath) -> Option<Range<usize>> {
        let root = self.parse().ok()?;
        let mut current: Option<&Spanned<DeValue>> = None;
        let mut best = None;
        for seg in &path.0 {
            let next = match (seg, current) {
                (Segment::Key(k), None) => {
                    root.get_ref().iter().find(|(key, _)| key.get_ref() == k).map(|(_, v)| v)
                }
                (Segment::Key(k), Some(v)) => match v.get_ref() {
                    DeValue::Table(t) => {
                        t.iter().find(|(key, _)| key.get_ref() == k).map(|(_, v)| v)
                    }
                    _ => None,
                },
                (Segment::Index(i), Some(v)) => match v.get_ref() {
                    DeValue::Array(a) => a.get(*i),
                    _ => None,
                },
                (Segment::Index(_), None) => None,
            };
            match next {
                Some(v) => {
                    best = Some(v.span());
                    current = Some(v);
                }
                None => break,
            }
        }
        best
    }

    /// The dotted path of the innermost key or value containing `offset`.
    fn path_at(&self, offset: usize) -> String {
        let Ok(root) = self.parse() else {
            return String::new();
        };
        find_in_table(root.get_ref(), offset, &FieldPath::default())
            .map(|p| p.to_string())
            .unwrap_or_default()
    }
}

/// Merges `over` into `base`: tables key by key, anything else replaced.
fn merge_tables<'i>(base: &mut DeTable<'i>, over: DeTable<'i>) {
    for (key, value) in over {
        match base.get_mut(&key) {
            Some(existing) => {
                if let (DeValue::Table(b), DeValue::Table(_)) =
                    (existing.get_mut(), value.get_ref())
                {
                    let DeValue::Table(o) = value.into_inner() else {
                        unreachable!("checked above")
                    };
                    merge_tables(b, o);
                } else {
                    *existing = value;
                }
            }
            None => {
                base.insert(key, value);
            }
        }
    }
}

/// Moves every span of `table` by `by` bytes.
fn shift_table(table: DeTable<'_>, by: usize) -> DeTable<'_> {
    table.into_iter().map(|(k, v)| (shift(k, by), shift_value(v, by))).collect()
}

fn shift<T>(s: Spanned<T>, by: usize) -> Spanned<T> {
    let span = s.span();
    Spanned::new(span.start + by..span.end + by, s.into_inner())
}

fn shift_value(v: Spanned<DeValue<'_>>, by: usize) -> Spanned<DeValue<'_>> {
    let v = shift(v, by);
    let span = v.span();
    match v.into_inner() {
        DeValue::Table(t) => Spanned::new(span, DeValue::Table(shift_table(t, by))),
        DeValue::Array(mut a) => {
            for item in a.iter_mut() {
                let taken = std::mem::replace(item, Spanned::new(0..0, DeValue::Boolean(false)));
                *item = shift_value(taken, by);
            }
            Spanned::new(span, DeValue::Array(a))
        }
        other => Spanned::new(span, other),
    }
}

/// Depth-first search for the key or value at `offset` (table spans do not cover the bodies of
/// sub-tables declared with their own headers, so every child is searched).
fn find_in_table(table: &DeTable<'_>, offset: usize, path: &FieldPath) -> Option<FieldPath> {
    for (k, v) in table.iter() {
        let p = path.key(k.get_ref());
        if k.span().contains(&offset) {
            return Some(p);
        }
        if let Some(found) = find_in_value(v, offset, &p) {
            return Some(found);
        }
    }
    None
}

fn find_in_value(v: &Spanned<DeValue<'_>>, offset: usize, path: &FieldPath) -> Option<FieldPath> {
    match v.get_ref() {
        DeValue::Table(t) => find_in_table(t, offset, path)
            .or_else(|| v.span().contains(&offset).then(|| path.clone())),
        DeValue::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, item)| find_in_value(item, offset, &path.index(i)))
            .or_else(|| v.span().contains(&offset).then(|| path.clone())),
        _ => v.span().contains(&offset).then(|| path.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn an_oversized_spec_file_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.toml");
        let line = "# padding padding padding padding padding padding padding padding\n";
        std::fs::write(&path, line.repeat((MAX_SPEC_BYTES as usize / line.len()) + 1)).unwrap();
        let err = SpecSource::from_file(&path).err().unwrap().to_string();
        assert!(err.contains("huge.toml") && err.contains("at most 1024 KiB"), "{err}");
        std::fs::write(&path, "[globals]\n").unwrap();
        assert!(SpecSource::from_file(&path).is_ok());
    }

    const SPEC: &str = r#"[globals]
cloud = "aws"
region = "eu-west-3"
cluster_name = "aws-0"
domain = "example.org"

[network]
vpc_cidr = "10.0.0.0/16"
azs = ["a", "b"]

[network.subnets.private]
cidrs = ["10.0.0.0/20", "10.0.16.0/20"]
"#;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Net {
        vpc_cidr: String,
        azs: Vec<String>,
        subnets: std::collections::BTreeMap<String, Tier>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Tier {
        cidrs: Vec<String>,
    }

    #[test]
    fn reads_globals_and_name() {
        let s = SpecSource::from_text("specs/aws.toml", "aws", SPEC);
        let g = s.globals().unwrap();
        assert_eq!(g.region, "eu-west-3");
        assert_eq!(s.name(), "aws");
        s.check_sections(&["network"]).unwrap();
    }

    #[test]
    fn span_of_nested_array_item_gives_line_and_column() {
        let s = SpecSource::from_text("aws.toml", "aws", SPEC);
        let path = FieldPath::root("network").key("subnets").key("private").key("cidrs").index(1);
        let e = s.error(&path, "overlaps");
        assert_eq!((e.line, e.column), (12, 25), "{e}");
        assert_eq!(e.to_string(), "aws.toml:12:25: network.subnets.private.cidrs[1]: overlaps");
    }

    #[test]
    fn unknown_key_in_a_section_points_at_the_key() {
        let text = SPEC.replace("azs = [", "vpc_cidrs = 1\nazs = [");
        let s = SpecSource::from_text("aws.toml", "aws", text);
        let err = s.section::<Net>("network").unwrap_err();
        let e = &err.errors[0];
        assert_eq!(e.line, 9, "{err}");
        assert!(e.message.contains("unknown field `vpc_cidrs`"), "{err}");
        assert_eq!(e.field, "network.vpc_cidrs");
    }

    #[test]
    fn wrong_type_points_at_the_value() {
        let text = SPEC.replace("azs = [\"a\", \"b\"]", "azs = 3");
        let s = SpecSource::from_text("aws.toml", "aws", text);
        let err = s.section::<Net>("network").unwrap_err();
        assert_eq!(err.errors[0].line, 9, "{err}");
        assert_eq!(err.errors[0].field, "network.azs", "{err}");
    }

    #[test]
    fn syntax_error_and_unknown_section_are_located() {
        let s = SpecSource::from_text("aws.toml", "aws", "[globals]\ncloud = \n");
        let err = s.check_sections(&[]).unwrap_err();
        assert_eq!(err.errors[0].line, 2, "{err}");
        let s = SpecSource::from_text("aws.toml", "aws", format!("{SPEC}\n[netwrok]\nx = 1\n"));
        let err = s.check_sections(&["network"]).unwrap_err();
        assert!(err.details().contains("unknown section `netwrok`"), "{err}");
        assert_eq!(err.errors[0].line, 14, "{err}");
    }

    fn with_overlay(overlay: &str) -> Result<SpecSource, SpecErrors> {
        SpecSource::from_text("specs/aws.toml", "aws", SPEC).with_overlay(SpecSource::from_text(
            "local.toml",
            "local",
            overlay,
        ))
    }

    #[test]
    fn overlay_merges_tables_and_replaces_values() {
        let s = with_overlay("[globals]\ndomain = \"sandbox.test\"\n\n[network]\nazs = [\"x\"]\n")
            .unwrap();
        let g = s.globals().unwrap();
        assert_eq!(g.domain, "sandbox.test");
        assert_eq!(g.region, "eu-west-3", "untouched keys stay");
        let net: Net = s.section("network").unwrap().unwrap();
        assert_eq!(net.azs, ["x"], "arrays are replaced whole");
        assert_eq!(net.vpc_cidr, "10.0.0.0/16");
        assert_eq!(net.subnets["private"].cidrs.len(), 2);
        assert_eq!(s.overlay_file(), Some("local.toml"));
        assert!(s.has_section("network"));
    }

    #[test]
    fn overlay_errors_name_the_file_the_value_came_from() {
        // A wrong type in the overlay points into the overlay.
        let s = with_overlay("\n[network]\nazs = 3\n").unwrap();
        let err = s.section::<Net>("network").unwrap_err();
        assert_eq!(err.errors[0].file, "local.toml", "{err:?}");
        assert_eq!((err.errors[0].line, err.errors[0].field.as_str()), (3, "network.azs"));
        // An unknown key the overlay adds points into the overlay.
        let s = with_overlay("[network.subnets.private]\nextra = 1\n").unwrap();
        let err = s.section::<Net>("network").unwrap_err();
        assert_eq!(err.errors[0].file, "local.toml", "{err:?}");
        assert_eq!(err.errors[0].line, 2, "{err:?}");
        // Errors located by path prefer the overlay's value.
        let s = with_overlay("[network]\nvpc_cidr = \"nonsense\"\n").unwrap();
        let e = s.error(&FieldPath::root("network").key("vpc_cidr"), "bad");
        assert_eq!((e.file.as_str(), e.line), ("local.toml", 2));
        let e = s.error(&FieldPath::root("network").key("azs"), "bad");
        assert_eq!((e.file.as_str(), e.line), ("specs/aws.toml", 9));
        // Unknown sections and syntax errors of the overlay are the overlay's.
        let s = with_overlay("[netwrok]\nx = 1\n").unwrap();
        let err = s.check_sections(&["network"]).unwrap_err();
        assert_eq!((err.errors[0].file.as_str(), err.errors[0].line), ("local.toml", 1));
        let err = with_overlay("[network\n").unwrap_err();
        assert_eq!(err.errors[0].file, "local.toml", "{err:?}");
    }
}
