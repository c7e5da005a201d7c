//! Shared helpers: locating peers (helm, registry), running both
//! renderers, splitting and comparing manifest streams.

use std::ffi::OsStr;
use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

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
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/charts"),
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

fn registry_bin() -> PathBuf {
    let p = std::env::var_os("ENGINE_REGISTRY_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/docker-registry"));
    assert!(
        p.is_file(),
        "OCI registry binary not found at {} (set ENGINE_REGISTRY_BIN or run testenv/install-registry.sh)",
        p.display()
    );
    p
}

/// Runs the registry and removes its storage once its standard input
/// reaches end of file: when the handle is dropped, or when the test
/// process ends in any way (the pipe's write end is held only by it).
const SUPERVISOR: &str = r#"
"$1" serve "$2" >/dev/null 2>&1 &
pid=$!
read -r _ || true
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
rm -rf "$3"
"#;

/// A `docker-registry` serving on 127.0.0.1:port, stopped (and its
/// storage removed) on drop or when the test process exits.
pub struct Registry {
    supervisor: Child,
    stdin: Option<ChildStdin>,
    pub port: u16,
}

impl Registry {
    /// Starts a registry; with `htpasswd` (user, password) basic auth is required.
    pub fn start(htpasswd: Option<(&str, &str)>) -> Registry {
        let bin = registry_bin();
        let dir =
            tempfile::Builder::new().prefix("engine-registry-").tempdir().expect("tempdir").keep();
        let port =
            TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let mut cfg = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
            dir.join("data").display()
        );
        if let Some((user, pass)) = htpasswd {
            let hash = bcrypt::hash(pass, 5).expect("bcrypt");
            let file = dir.join("htpasswd");
            std::fs::write(&file, format!("{user}:{hash}\n")).expect("write htpasswd");
            cfg.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: engine-test\n    path: {}\n",
                file.display()
            ));
        }
        let cfg_path = dir.join("config.yml");
        std::fs::write(&cfg_path, cfg).expect("write config");
        let mut supervisor = Command::new("/bin/sh")
            .arg("-c")
            .arg(SUPERVISOR)
            .arg("engine-registry")
            .arg(&bin)
            .arg(&cfg_path)
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting docker-registry");
        let stdin = supervisor.stdin.take();
        let mut reg = Registry { supervisor, stdin, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = reg.supervisor.try_wait() {
                panic!("registry exited early ({status}) on port {port}");
            }
            assert!(Instant::now() < deadline, "registry did not start on port {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        reg
    }

    pub fn repo(&self) -> String {
        format!("oci://127.0.0.1:{}/charts", self.port)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"stop\n");
        }
        let _ = self.supervisor.wait();
    }
}
