//! OpenBao and the cluster's API server failing under the engine: unreachable for a minute, or
//! losing the answer to a write that committed. The run finishes, or fails with a
//! message that says what happened; nothing is lost, nothing is adopted that should not be, and
//! the next run converges to an empty plan.
//!
//! The outages last `ENGINE_FAULT_OUTAGE_SECONDS` (default 60).

use crate::support::{localhost_leaf, openbao, openbao_spec};
use engine_openbao::{BaoClient, BaoConnection};
use engine_tests::{
    BaoServer, FaultProxy, KubeCluster, Moto, ProxyRules, Registry, engine_command, run_engine,
    text,
};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Output};
use std::time::{Duration, Instant};

/// How long an outage lasts.
fn outage() -> Duration {
    let seconds = std::env::var("ENGINE_FAULT_OUTAGE_SECONDS").map_or(60, |s| s.parse().unwrap());
    Duration::from_secs(seconds)
}

/// The engine with `args` (AWS at `endpoint`), its output going to files in `dir`.
fn spawn(endpoint: &str, args: &[&str], dir: &Path) -> Child {
    let out = std::fs::File::create(dir.join("stdout")).unwrap();
    let err = std::fs::File::create(dir.join("stderr")).unwrap();
    engine_command(endpoint, args).stdout(out).stderr(err).spawn().expect("start the engine")
}

/// Waits (at most `limit`) for a child started by [`spawn`]; its status and output.
fn finish(mut child: Child, dir: &Path, limit: Duration) -> Output {
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            let status = child.wait().unwrap();
            let out = read_output(status, dir);
            panic!("the engine did not end within {limit:?}:\n{}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    read_output(status, dir)
}

fn read_output(status: std::process::ExitStatus, dir: &Path) -> Output {
    Output {
        status,
        stdout: std::fs::read(dir.join("stdout")).unwrap(),
        stderr: std::fs::read(dir.join("stderr")).unwrap(),
    }
}

/// The value of secret `name` in `moto`'s Secrets Manager, if any.
async fn secret(moto: &Moto, name: &str) -> Option<String> {
    let sm = aws_sdk_secretsmanager::Client::new(&moto.sdk_config().await);
    let out = sm.get_secret_value().secret_id(name).send().await.ok()?;
    out.secret_string().map(str::to_string)
}

/// `apply --auto-approve` of `spec` with the state beside it.
fn apply_args(spec: &Path) -> Vec<String> {
    let state = spec.with_file_name("aws.state.json");
    let (spec, state) = (spec.display().to_string(), state.display().to_string());
    vec!["apply".into(), spec, "--state".into(), state, "--auto-approve".into()]
}

/// Runs `engine plan --detailed-exitcode` and asserts that nothing is left to do.
fn assert_converged(endpoint: &str, spec: &Path, what: &str) {
    let state = spec.with_file_name("aws.state.json");
    let (spec, state) = (spec.to_str().unwrap(), state.to_str().unwrap());
    let out = run_engine(endpoint, &["plan", spec, "--state", state, "--detailed-exitcode"], &[]);
    assert_eq!(out.status.code(), Some(0), "{what}: the next plan is not empty:\n{}", text(&out));
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_answer_to_openbao_init_lost_is_a_loud_error_never_an_adoption() {
    let moto = Moto::start();
    let work = tempfile::tempdir().unwrap();
    let (server, _transit, root, chain, key) = openbao(work.path()).await;
    // A TLS proxy in front of the server that resets the connection once the init committed.
    std::fs::write(work.path().join("server-ca.pem"), &root.cert_pem).unwrap();
    let rules = ProxyRules {
        tls: Some((chain, key)),
        upstream_ca: Some(work.path().join("server-ca.pem")),
        resets: vec!["PUT /v1/sys/init".into()],
        ..Default::default()
    };
    let proxy = FaultProxy::start(&server.address, &rules);
    let spec = openbao_spec(work.path(), &proxy.endpoint_at("localhost"), &["platform"]);
    let state = spec.with_file_name("aws.state.json");

    // The init committed, its answer (the only copy of the root token and recovery keys) is
    // gone: the step fails and says how to recover, and so does the next plan; nothing after it
    // runs, nothing is stored.
    for run in ["the apply", "a re-run"] {
        let out = run_engine(&moto.endpoint(), &strs(&apply_args(&spec)), &[]);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(1), "{run}: {shown}");
        assert!(
            shown.contains("is initialised, but its root token is neither in the secret store")
                || shown.contains("is initialised, but no token for it is in the secret store"),
            "{run}: {shown}"
        );
        assert!(shown.contains("bao operator generate-root"), "{run}: {shown}");
        assert!(!shown.contains("hvs."), "{run}: no token is printed: {shown}");
        let recorded = std::fs::read_to_string(&state).unwrap_or_default();
        assert!(!recorded.contains("openbao_init"), "{run}: init is not recorded: {recorded}");
        assert!(!recorded.contains("openbao_mount"), "{run}: nothing ran after it: {recorded}");
        assert!(secret(&moto, "openbao/aws-0/root-token").await.is_none(), "{run}");
    }
    let status = admin_less_status(&server, &root).await;
    assert_eq!(status["initialized"], json!(true), "the init did commit: {status}");
}

/// `sys/seal-status` of `server`, read without a token.
async fn admin_less_status(server: &BaoServer, root: &engine_pki::RootCa) -> serde_json::Value {
    let client = BaoClient::new(&BaoConnection {
        route: None,
        address: server.address.clone(),
        ca_bundle: Some(root.cert_pem.clone()),
        token: None,
    })
    .unwrap();
    client.read("GetSealStatus", "sys/seal-status").await.unwrap().unwrap()
}

/// A kubeconfig for the API server of `cluster` reached through `proxy` (whose certificate
/// chains to `root_ca`), with the cluster's admin token.
fn proxied_kubeconfig(
    cluster: &KubeCluster,
    proxy: &FaultProxy,
    root_ca: &Path,
    dir: &Path,
) -> PathBuf {
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: proxied\n  cluster:\n    server: {}\n    \
         certificate-authority: {}\nusers:\n- name: admin\n  user:\n    token: {}\ncontexts:\n\
         - name: proxied\n  context: {{cluster: proxied, user: admin}}\ncurrent-context: proxied\n",
        proxy.endpoint_at("localhost"),
        root_ca.display(),
        cluster.env("KUBE_TOKEN"),
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn the_api_server_gone_for_a_minute_after_a_release_write_loses_nothing() {
    let moto = Moto::start();
    let cluster = KubeCluster::start(1);
    let registry = Registry::start();
    engine_tests::push_fixtures(&registry, &["flux-operator-0.49.0.tgz"]).await;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let (_root, chain, key) = localhost_leaf(dir);

    // The release's Deployment is written, then the API server cannot be reached for a while.
    let report = dir.join("outage");
    let write = "PATCH /apis/apps/v1/namespaces/flux-system/deployments/*";
    let rules = ProxyRules {
        tls: Some((chain, key)),
        upstream_ca: Some(PathBuf::from(cluster.env("KUBE_CA_FILE"))),
        down_after: Some((write.into(), outage().as_secs(), report.clone())),
        ..Default::default()
    };
    let proxy = FaultProxy::start(&cluster.env("KUBE_APISERVER_URL"), &rules);
    let kubeconfig = proxied_kubeconfig(&cluster, &proxy, &dir.join("pki/root-ca.crt"), dir);
    let spec = dir.join("aws.toml");
    std::fs::write(
        &spec,
        format!(
            "[globals]\ncloud = \"aws\"\nregion = \"eu-west-3\"\ncluster_name = \"aws-0\"\n\
             domain = \"example.test\"\n\n[globals.versions]\nflux_operator = \"0.49.0\"\n\n\
             [bootstrap]\ndisable_aws_node = false\ndisable_kube_proxy = false\n\
             timeout_seconds = 180\nkubeconfig = \"{}\"\n\n[bootstrap.flux_operator]\n\
             chart = \"{}/flux-operator\"\n",
            kubeconfig.display(),
            registry.repo()
        ),
    )
    .unwrap();

    let child = spawn(&moto.endpoint(), &strs(&apply_args(&spec)), dir);
    let started = Instant::now();
    while !report.exists() {
        assert!(started.elapsed() < Duration::from_secs(120), "the release was never written");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let outage_started = Instant::now();
    let out = finish(child, dir, outage() + Duration::from_secs(240));
    let shown = text(&out);
    // It rode the outage out, or failed saying what could not be reached.
    if out.status.success() {
        assert!(outage_started.elapsed() >= outage(), "{shown}");
    } else {
        assert_eq!(out.status.code(), Some(1), "{shown}");
        assert!(shown.contains("cluster `aws-0`"), "the failure names the cluster: {shown}");
        assert!(shown.contains("flux_operator"), "and the release: {shown}");
    }
    // What was recorded is kept, and the next run (once the server is back) converges.
    let state = std::fs::read_to_string(spec.with_file_name("aws.state.json")).unwrap();
    assert!(
        state.contains("aws.bootstrap.namespace.flux_system") || state.contains("flux-system"),
        "{state}"
    );
    while outage_started.elapsed() < outage() {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let out = run_engine(&moto.endpoint(), &strs(&apply_args(&spec)), &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_converged(&moto.endpoint(), &spec, "after the outage");
}
