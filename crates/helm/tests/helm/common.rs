//! Shared helpers: locating peers (helm, registry), running both
//! renderers, splitting and comparing manifest streams.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

use engine_helm::{Capabilities, Chart, NoLookup, RenderOptions, render, values};

/// Installs the aws-lc-rs rustls provider (the workspace's choice).
pub fn init_crypto() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    });
}

/// The reference `helm` binary (v4.2.4). Panics when missing.
pub fn helm_bin() -> PathBuf {
    let p = match std::env::var_os("ENGINE_HELM_BIN") {
        Some(p) => PathBuf::from(p),
        None => {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/root"));
            home.join(".cache/engine/helm-v4.2.4/bin/helm")
        }
    };
    assert!(
        p.is_file(),
        "reference helm binary not found at {} (set ENGINE_HELM_BIN or run testenv/install-helm.sh)",
        p.display()
    );
    p
}

/// The chart fixtures directory. Panics when missing.
pub fn fixtures_dir() -> PathBuf {
    let p = match std::env::var_os("ENGINE_FIXTURES_DIR") {
        Some(p) => PathBuf::from(p),
        None => engine_testpeers::fixtures().join("charts"),
    };
    assert!(p.is_dir(), "chart fixtures not found at {} (set ENGINE_FIXTURES_DIR)", p.display());
    p
}

/// A fixture chart archive.
pub fn fixture(name: &str) -> PathBuf {
    let p = fixtures_dir().join(name);
    assert!(p.is_file(), "fixture chart {} is missing", p.display());
    p
}

/// A values file of this test suite.
pub fn values_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/values").join(name)
}

/// Inputs shared by both renderers.
#[derive(Clone, Default)]
pub struct Inputs {
    pub values: Vec<PathBuf>,
    pub sets: Vec<String>,
    pub kube_version: Option<String>,
    pub api_versions: Vec<String>,
    pub release: Option<String>,
    pub namespace: Option<String>,
    /// Generate ECDSA instead of RSA keys (this crate only).
    pub ecdsa_keys: bool,
}

impl Inputs {
    pub fn release(&self) -> &str {
        self.release.as_deref().unwrap_or("release-name")
    }
    pub fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or("default")
    }
}

/// Runs `helm template` on a local chart; returns stdout or the error text.
pub fn helm_template(chart: &Path, inp: &Inputs) -> Result<String, String> {
    run_helm_template(chart.as_os_str(), &[], inp)
}

/// Runs `helm template` on an `oci://` chart of a loopback registry
/// (plain HTTP); returns stdout or the error text.
pub fn helm_template_oci(reference: &str, version: &str, inp: &Inputs) -> Result<String, String> {
    run_helm_template(OsStr::new(reference), &["--version", version, "--plain-http"], inp)
}

fn run_helm_template(chart: &OsStr, extra: &[&str], inp: &Inputs) -> Result<String, String> {
    let mut cmd = Command::new(helm_bin());
    cmd.arg("template")
        .arg(inp.release())
        .arg(chart)
        .args(extra)
        .arg("--namespace")
        .arg(inp.namespace());
    for v in &inp.values {
        cmd.arg("-f").arg(v);
    }
    for s in &inp.sets {
        cmd.arg("--set").arg(s);
    }
    if let Some(k) = &inp.kube_version {
        cmd.arg("--kube-version").arg(k);
    }
    for a in &inp.api_versions {
        cmd.arg("--api-versions").arg(a);
    }
    cmd.env("HELM_CACHE_HOME", std::env::temp_dir().join("engine-helm-cache"))
        .env("HELM_CONFIG_HOME", std::env::temp_dir().join("engine-helm-config"))
        .env("HELM_DATA_HOME", std::env::temp_dir().join("engine-helm-data"))
        .env("HELM_REGISTRY_CONFIG", std::env::temp_dir().join("engine-helm-registry.json"));
    let out = cmd.output().expect("running helm");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Renders a chart file or directory with this crate; returns the manifest
/// text or the error text.
pub fn ours(chart: &Path, inp: &Inputs) -> Result<String, String> {
    let c = Chart::load(chart).map_err(|e| e.to_string())?;
    ours_chart(&c, inp)
}

/// Renders a loaded chart with this crate; returns the manifest text or
/// the error text.
pub fn ours_chart(c: &Chart, inp: &Inputs) -> Result<String, String> {
    let mut files = Vec::new();
    for v in &inp.values {
        let text = std::fs::read_to_string(v).map_err(|e| e.to_string())?;
        files.push(values::parse_values_yaml(&text).map_err(|e| e.to_string())?);
    }
    let user = values::user_values(&files, &inp.sets).map_err(|e| e.to_string())?;
    let mut opts = RenderOptions::new(inp.release(), inp.namespace(), user, &NoLookup);
    opts.capabilities = Capabilities::with(inp.kube_version.as_deref(), &inp.api_versions);
    if inp.ecdsa_keys {
        opts.key_algorithm = engine_helm::funcs::KeyAlgorithm::EcdsaP256;
    }
    render(c, &opts).map(|r| r.manifest_text()).map_err(|e| e.to_string())
}

/// Splits a `helm template` stream into (source, document text).
pub fn split_stream(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for part in text.split("---\n# Source: ").skip(1) {
        let (src, body) = part.split_once('\n').unwrap_or((part, ""));
        out.push((src.to_string(), body.to_string()));
    }
    out
}

/// Writes a chart made of `templates` (name, content) into a temp dir.
pub fn temp_chart(
    name: &str,
    values_yaml: &str,
    templates: &[(String, String)],
) -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("engine-helm-").tempdir().expect("tempdir");
    let root = dir.path().join(name);
    std::fs::create_dir_all(root.join("templates")).expect("mkdir");
    std::fs::write(
        root.join("Chart.yaml"),
        format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\nappVersion: \"1.2.3\"\n"),
    )
    .expect("write");
    std::fs::write(root.join("values.yaml"), values_yaml).expect("write");
    for (n, c) in templates {
        let p = root.join("templates").join(n);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, c).expect("write");
    }
    dir
}

pub use engine_testpeers::Registry;
