//! Chart model and loading (directory or `.tgz`).

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;

use serde_json::Value as Json;

use crate::error::HelmError;
use crate::limits;
use crate::yaml::{Numbers, parse};

/// RSA keys started as soon as a chart is seen to make keys, while it loads (Cilium makes two:
/// its CA and Hubble's server certificate). They are made on the cores the loading and the
/// rendering leave free and kept for the process's renders (`funcs::reserve_rsa_keys`).
pub const KEYS_AHEAD: usize = 2;

/// A file of a chart (path relative to the chart root, `/`-separated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartFile {
    /// Relative path, e.g. `templates/deployment.yaml`.
    pub name: String,
    /// Content.
    pub data: Vec<u8>,
}

/// A loaded chart with its subcharts.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Chart.yaml as JSON (keys as in the file).
    pub metadata: Json,
    /// values.yaml (numbers as float64, like Helm).
    pub values: Json,
    /// values.schema.json, if any.
    pub schema: Option<Json>,
    /// `templates/**`.
    pub templates: Vec<ChartFile>,
    /// Other files (exposed as `.Files`), including `crds/**`.
    pub files: Vec<ChartFile>,
    /// Subcharts (from `charts/`).
    pub dependencies: Vec<Chart>,
    /// The alias this chart is used under, if any.
    pub alias: Option<String>,
}

impl Chart {
    /// The chart name (alias wins).
    pub fn name(&self) -> String {
        if let Some(a) = &self.alias {
            return a.clone();
        }
        self.metadata.get("name").and_then(Json::as_str).unwrap_or("").to_string()
    }

    /// The chart version.
    pub fn version(&self) -> String {
        self.metadata.get("version").and_then(Json::as_str).unwrap_or("").to_string()
    }

    /// Whether `type: library`.
    pub fn is_library(&self) -> bool {
        self.metadata.get("type").and_then(Json::as_str) == Some("library")
    }

    /// CRD files (`crds/**`).
    pub fn crds(&self) -> Vec<&ChartFile> {
        self.files.iter().filter(|f| f.name.starts_with("crds/")).collect()
    }

    /// Loads a chart from a directory.
    pub fn load_dir(dir: impl AsRef<Path>) -> Result<Chart, HelmError> {
        let dir = dir.as_ref();
        let ignore = std::fs::read_to_string(dir.join(".helmignore")).unwrap_or_default();
        let rules = IgnoreRules::parse(&ignore);
        let mut files = Vec::new();
        walk(dir, dir, &rules, &mut files)?;
        if files
            .iter()
            .any(|f| f.name.starts_with("templates/") && crate::funcs::calls_key_function(&f.data))
        {
            crate::funcs::reserve_rsa_keys(KEYS_AHEAD);
        }
        Chart::from_files(files, &dir.display().to_string())
    }

    /// Loads a chart from a `.tgz` file.
    pub fn load_tgz(path: impl AsRef<Path>) -> Result<Chart, HelmError> {
        let path = path.as_ref();
        let data = std::fs::read(path).map_err(|e| HelmError::Io(path.display().to_string(), e))?;
        Chart::load_tgz_bytes(&data, &path.display().to_string())
    }

    /// Loads a chart from `.tgz` bytes.
    pub fn load_tgz_bytes(data: &[u8], origin: &str) -> Result<Chart, HelmError> {
        let gz = flate2::read::GzDecoder::new(data);
        let mut ar = tar::Archive::new(gz);
        let mut files = Vec::new();
        let mut total = 0u64;
        let mut makes_keys = false;
        let entries = ar
            .entries()
            .map_err(|e| HelmError::Chart(format!("{origin}: reading archive: {e}")))?;
        for entry in entries {
            let mut entry =
                entry.map_err(|e| HelmError::Chart(format!("{origin}: reading archive: {e}")))?;
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let p = entry
                .path()
                .map_err(|e| HelmError::Chart(format!("{origin}: bad path: {e}")))?
                .to_string_lossy()
                .replace('\\', "/");
            let rel = match p.split_once('/') {
                Some((_, rest)) => rest.to_string(),
                None => continue,
            };
            if rel.is_empty() || rel.split('/').any(|s| s == "..") {
                continue;
            }
            let mut buf = Vec::new();
            (&mut entry)
                .take(limits::MAX_FILE_BYTES + 1)
                .read_to_end(&mut buf)
                .map_err(|e| HelmError::Chart(format!("{origin}: reading {p}: {e}")))?;
            if buf.len() as u64 > limits::MAX_FILE_BYTES {
                return Err(HelmError::Chart(format!(
                    "{origin}: {p} is larger than {} MiB decompressed",
                    limits::MAX_FILE_BYTES >> 20
                )));
            }
            total += buf.len() as u64;
            if total > limits::MAX_CHART_BYTES {
                return Err(HelmError::Chart(format!(
                    "{origin}: the chart is larger than {} MiB decompressed",
                    limits::MAX_CHART_BYTES >> 20
                )));
            }
            if !makes_keys
                && rel.starts_with("templates/")
                && crate::funcs::calls_key_function(&buf)
            {
                makes_keys = true;
                crate::funcs::reserve_rsa_keys(KEYS_AHEAD);
            }
            files.push(ChartFile { name: rel, data: buf });
        }
        Chart::from_files(files, origin)
    }

    /// Loads from a path: directory or `.tgz`.
    pub fn load(path: impl AsRef<Path>) -> Result<Chart, HelmError> {
        let path = path.as_ref();
        if path.is_dir() { Chart::load_dir(path) } else { Chart::load_tgz(path) }
    }

    /// Builds a chart from its files.
    pub fn from_files(files: Vec<ChartFile>, origin: &str) -> Result<Chart, HelmError> {
        let mut metadata = None;
        let mut values = Json::Object(Default::default());
        let mut schema = None;
        let mut templates = Vec::new();
        let mut other = Vec::new();
        let mut sub_files: BTreeMap<String, Vec<ChartFile>> = BTreeMap::new();
        let mut sub_tgz: Vec<ChartFile> = Vec::new();
        for f in files {
            match f.name.as_str() {
                "Chart.yaml" => {
                    let text = String::from_utf8_lossy(&f.data);
                    let v = parse(&text, Numbers::Native)
                        .map_err(|e| HelmError::Chart(format!("{origin}: Chart.yaml: {e}")))?;
                    metadata = Some(v.to_json());
                }
                "values.yaml" => {
                    let text = String::from_utf8_lossy(&f.data);
                    let v = parse(&text, Numbers::Float)
                        .map_err(|e| HelmError::Chart(format!("{origin}: values.yaml: {e}")))?;
                    values = match v.to_json() {
                        Json::Null => Json::Object(Default::default()),
                        j => j,
                    };
                }
                "values.schema.json" => {
                    schema = Some(serde_json::from_slice(&f.data).map_err(|e| {
                        HelmError::Chart(format!("{origin}: values.schema.json: {e}"))
                    })?);
                }
                "requirements.yaml" | "requirements.lock" | "Chart.lock" => {}
                n if n.starts_with("templates/") => templates.push(f),
                n if n.starts_with("charts/") => {
                    let rest = &n["charts/".len()..];
                    match rest.split_once('/') {
                        Some((sub, inner)) => sub_files
                            .entry(sub.to_string())
                            .or_default()
                            .push(ChartFile { name: inner.to_string(), data: f.data }),
                        None if rest.ends_with(".tgz") || rest.ends_with(".tar.gz") => {
                            sub_tgz.push(f)
                        }
                        None => other.push(f),
                    }
                }
                _ => other.push(f),
            }
        }
        let metadata = metadata
            .ok_or_else(|| HelmError::Chart(format!("{origin}: Chart.yaml file is missing")))?;
        if metadata.get("name").and_then(Json::as_str).unwrap_or("").is_empty() {
            return Err(HelmError::Chart(format!(
                "{origin}: validation: chart.metadata.name is required"
            )));
        }
        let mut dependencies = Vec::new();
        for (name, fs) in sub_files {
            dependencies.push(Chart::from_files(fs, &format!("{origin}/charts/{name}"))?);
        }
        for f in sub_tgz {
            dependencies.push(Chart::load_tgz_bytes(&f.data, &format!("{origin}/{}", f.name))?);
        }
        templates.sort_by(|a, b| a.name.cmp(&b.name));
        other.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Chart { metadata, values, schema, templates, files: other, dependencies, alias: None })
    }
}

fn walk(
    root: &Path,
    dir: &Path,
    rules: &IgnoreRules,
    out: &mut Vec<ChartFile>,
) -> Result<(), HelmError> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| HelmError::Io(dir.display().to_string(), e))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let rel = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
        let is_dir = path.is_dir();
        if rules.ignored(&rel, is_dir) {
            continue;
        }
        if is_dir {
            walk(root, &path, rules, out)?;
        } else {
            let data =
                std::fs::read(&path).map_err(|e| HelmError::Io(path.display().to_string(), e))?;
            out.push(ChartFile { name: rel, data });
        }
    }
    Ok(())
}

/// `.helmignore` rules (a gitignore subset, as Helm implements it).
struct IgnoreRules {
    rules: Vec<(String, bool, bool)>, // pattern, negate, dir_only
}

impl IgnoreRules {
    fn parse(text: &str) -> IgnoreRules {
        let mut rules = Vec::new();
        for line in text.lines() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let (neg, l) = match l.strip_prefix('!') {
                Some(r) => (true, r),
                None => (false, l),
            };
            let (dir_only, l) = match l.strip_suffix('/') {
                Some(r) => (true, r),
                None => (false, l),
            };
            rules.push((l.trim_start_matches('/').to_string(), neg, dir_only));
        }
        IgnoreRules { rules }
    }

    fn ignored(&self, rel: &str, is_dir: bool) -> bool {
        if rel == ".helmignore" {
            return false;
        }
        let base = rel.rsplit('/').next().unwrap_or(rel);
        let mut ignored = false;
        for (pat, neg, dir_only) in &self.rules {
            if *dir_only && !is_dir {
                continue;
            }
            let hit = if pat.contains('/') {
                crate::objects::glob_match(pat, rel)
            } else {
                crate::objects::glob_match(pat, base)
            };
            if hit {
                ignored = !neg;
            }
        }
        ignored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.tgz` of `files` (path, size) under `chart/`, each filled with zeros.
    fn tgz(files: &[(&str, usize)]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut tar = tar::Builder::new(gz);
        for (path, size) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(*size as u64);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(&mut header, format!("chart/{path}"), &vec![0u8; *size][..]).unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn archives_are_capped_as_helm_caps_them() {
        let big = (limits::MAX_FILE_BYTES + 1) as usize;
        let Err(err) = Chart::load_tgz_bytes(&tgz(&[("templates/big.yaml", big)]), "c.tgz") else {
            panic!("a file over the cap is refused");
        };
        let err = err.to_string();
        assert!(err.contains("templates/big.yaml is larger than 5 MiB"), "{err}");
        let many: Vec<(String, usize)> =
            (0..21).map(|i| (format!("files/f{i}"), (5 << 20) - 1)).collect();
        let many: Vec<(&str, usize)> = many.iter().map(|(p, s)| (p.as_str(), *s)).collect();
        let err = Chart::load_tgz_bytes(&tgz(&many), "c.tgz").err().unwrap().to_string();
        assert!(err.contains("the chart is larger than 100 MiB"), "{err}");
    }

    #[test]
    fn helmignore_rules() {
        let r = IgnoreRules::parse("# c\n*.tmp\n.git/\n!keep.tmp\nci/*.yaml\n");
        assert!(r.ignored("a/b.tmp", false));
        assert!(!r.ignored("keep.tmp", false));
        assert!(r.ignored(".git", true));
        assert!(r.ignored("ci/x.yaml", false));
        assert!(!r.ignored("templates/x.yaml", false));
    }
}
