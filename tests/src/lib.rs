//! Helpers of the end-to-end tests: the reference spec, the `engine` binary, and what the tests
//! do with the peers of `engine-testpeers` (pushing the fixture charts, reaching the test
//! cluster).

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;

pub mod lane;

pub use engine_testpeers::{
    BaoServer, FaultProxy, GcpFake, KubeCluster, Moto, ProxyRules, Registry, Seal, TailscaleFake,
    fixtures, free_port, moto, workspace,
};

/// Pushes the fixture charts named (`cilium-1.20.0.tgz`, ...) into `registry` over the OCI API.
pub async fn push_fixtures(registry: &Registry, archives: &[&str]) {
    for name in archives {
        let path = fixtures().join("charts").join(name);
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        engine_helm::oci::push(&data, &registry.repo(), &Default::default())
            .await
            .unwrap_or_else(|e| panic!("pushing {name}: {e}"));
    }
}

/// A connection to the test's OpenBao `server` with `token`.
pub fn bao_connection(
    server: &BaoServer,
    token: Option<engine::Secret>,
) -> engine_openbao::BaoConnection {
    engine_openbao::BaoConnection {
        route: None,
        address: server.address.clone(),
        ca_bundle: server.ca_bundle.clone(),
        token,
    }
}

/// A connector that reaches the test cluster whatever the cluster target says (the library's
/// harness hook).
pub fn cluster_connector(cluster: &KubeCluster) -> Arc<dyn engine_bootstrap::kube::KubeConnector> {
    Arc::new(ClusterConnector(cluster.kubeconfig().to_path_buf()))
}

struct ClusterConnector(PathBuf);

#[async_trait::async_trait]
impl engine_bootstrap::kube::KubeConnector for ClusterConnector {
    async fn config(
        &self,
        _target: &engine_bootstrap::kube::ClusterTarget,
    ) -> Result<kube::Config, engine_bootstrap::kube::ConnectError> {
        let error = |e: String| engine_bootstrap::kube::ConnectError(e);
        let file =
            kube::config::Kubeconfig::read_from(&self.0).map_err(|e| error(e.to_string()))?;
        kube::Config::from_custom_kubeconfig(file, &Default::default())
            .await
            .map_err(|e| error(e.to_string()))
    }
}

/// The `engine` binary built from this workspace (next to the test executable).
pub fn engine_bin() -> PathBuf {
    if let Ok(p) = std::env::var("ENGINE_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/e2e-<hash> -> target/<profile>/engine
    let bin =
        exe.parent().and_then(|d| d.parent()).map(|d| d.join("engine")).expect("target directory");
    assert!(
        bin.exists(),
        "the engine binary is missing at {}: build it first with `cargo build -p engine-cli` \
         (the README's test command does)",
        bin.display()
    );
    bin
}

/// The reference platform spec.
pub fn aws_spec_path() -> PathBuf {
    workspace().join("specs/aws.toml")
}

/// The reference platform spec's text.
pub fn aws_spec_text() -> String {
    std::fs::read_to_string(aws_spec_path()).expect("specs/aws.toml")
}

/// The reference spec up to and including stage `n` (its `# Stage N` comments mark the stages:
/// 1 network, 2 OpenBao, 3 EKS, ...).
pub fn spec_text_through(n: u32) -> String {
    let text = aws_spec_text();
    let next = format!("# Stage {}", n + 1);
    let end = text.lines().position(|l| l.starts_with(&next)).unwrap_or(usize::MAX);
    let mut out: Vec<&str> = text.lines().take(end).collect();
    while out.last().is_some_and(|l| l.trim().is_empty()) {
        out.pop();
    }
    out.join("\n") + "\n"
}

/// The `[section]` block of the reference spec: its header and the lines after it up to the
/// first empty one.
pub fn aws_spec_block(section: &str) -> String {
    let all = aws_spec_text();
    let header = format!("\n[{section}]\n");
    let start = all.find(&header).unwrap_or_else(|| panic!("specs/aws.toml has [{section}]"));
    let lines = all[start + 1..].lines().take_while(|l| !l.trim().is_empty());
    lines.map(|l| format!("{l}\n")).collect()
}

/// The reference spec's network alone, for the tests about it.
pub fn network_spec_text() -> String {
    spec_text_through(1)
}

/// [`network_spec_text`] as a file named like the reference spec (so its spec name is `aws`).
pub fn network_spec_path() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("engine-network-spec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("aws.toml");
    std::fs::write(&path, network_spec_text()).expect("write the network spec");
    path
}

/// Runs the engine binary against `moto` (or any endpoint) with a clean AWS environment.
pub fn run_engine(endpoint: &str, args: &[&str], extra_env: &[(&str, &str)]) -> Output {
    let mut cmd = engine_command(endpoint, args);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.output().expect("run engine")
}

/// The engine command with the environment a test needs (credentials, region, endpoint).
pub fn engine_command(endpoint: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(engine_bin());
    cmd.args(args)
        .env_remove("AWS_PROFILE")
        .env_remove("ENGINE_CLOUD")
        .env_remove("TM_CLOUD")
        .env_remove("ENGINE_OVERLAY")
        .env_remove("ENGINE_STATE")
        .env_remove("ENGINE_LLM_PLATFORM_ENABLED")
        .env_remove("TM_LLM_PLATFORM_ENABLED")
        .env_remove("ENGINE_GCP_ENDPOINT")
        .env_remove("ENGINE_TAILSCALE_ENDPOINT")
        .env_remove("TAILSCALE_API_KEY")
        .env_remove("TF_VAR_tailscale_api_key")
        .env_remove("TAILSCALE_TAILNET")
        .env_remove("ENGINE_TAILNET_DESTROY")
        .env_remove("TM_TAILNET_DESTROY")
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "eu-west-3")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("NO_COLOR", "1")
        .current_dir(workspace());
    cmd
}

/// Text of stdout and stderr together, for assertions and failure messages.
pub fn text(out: &Output) -> String {
    format!(
        "exit: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// An offline root made once per test process, in the temporary directory: the certificate
/// file a spec's `[openbao] ca_file` names when the test does not reach OpenBao through it.
pub fn test_root_ca() -> PathBuf {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("engine-test-root-{}", std::process::id()));
        engine_pki::init_root(&dir).expect("an offline root for the tests");
        dir.join("root-ca.crt")
    })
    .clone()
}

/// The overlay line that points `[openbao] ca_file` at [`test_root_ca`].
pub fn test_root_ca_overlay() -> String {
    format!("[openbao]\nca_file = \"{}\"\n", test_root_ca().display())
}
