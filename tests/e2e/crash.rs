//! A run killed mid-apply: the next run adopts what was made and converges, with no duplicates.

use crate::support::{REFERENCE_RESOURCES, owned, reference_counts};
use engine_tests::{
    BaoServer, FaultProxy, Moto, ProxyRules, engine_command, network_spec_path, run_engine, text,
};
use std::time::{Duration, Instant};

/// How many subnets in the cloud carry `address` as their `engine:address` tag.
async fn subnets_tagged(moto: &Moto, address: &str) -> usize {
    let ec2 = aws_sdk_ec2::Client::new(&moto.sdk_config().await);
    let out = ec2.describe_subnets().send().await.expect("DescribeSubnets");
    let tagged = |s: &&aws_sdk_ec2::types::Subnet| {
        s.tags().iter().any(|t| t.key() == Some("engine:address") && t.value() == Some(address))
    };
    out.subnets().iter().filter(tagged).count()
}

/// The engine with `args`, AWS at `endpoint`, its output discarded.
fn spawn_quiet(endpoint: &str, args: &[&str]) -> std::process::Child {
    let mut command = engine_command(endpoint, args);
    command.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    command.spawn().expect("start the engine")
}

/// SIGKILL: no cleanup, no last state write.
fn kill(mut child: std::process::Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_between_create_and_state_write_is_adopted_not_duplicated() {
    let moto = Moto::start();
    // The proxy never answers the read-back that follows a subnet's create, so the run is
    // stopped between "created in the cloud" and "recorded in state", where it is killed.
    let rules = ProxyRules {
        holds: vec![("DescribeSubnets".into(), "Filter.1.Name=subnet-id".into())],
        ..Default::default()
    };
    let proxy = FaultProxy::start(&moto.endpoint(), &rules);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("aws.state.json");
    let spec = network_spec_path();
    // Enough parallelism for every subnet to start while the others are held.
    let args = [
        "apply",
        spec.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
        "--auto-approve",
        "--parallelism",
        "32",
    ];
    let victim = "aws.network.subnet.private[\"eu-west-3a\"]";

    let mut child = spawn_quiet(&proxy.endpoint(), &args);
    let started = Instant::now();
    while subnets_tagged(&moto, victim).await == 0 {
        assert!(child.try_wait().unwrap().is_none(), "apply ended before the subnet was made");
        assert!(started.elapsed() < Duration::from_secs(60), "the subnet was never created");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    kill(child);
    let doc = engine_state::LocalBackend::new(&state)
        .load()
        .unwrap()
        .unwrap_or_else(|| engine_state::StateDocument::new("aws"));
    assert!(!doc.resources.contains_key(victim), "killed before the state write");

    let rerun = run_engine(&moto.endpoint(), &args, &[]);
    let out = text(&rerun);
    assert!(rerun.status.success(), "{out}");
    assert!(out.contains("to adopt into state"), "{out}");
    assert!(out.contains(&format!("{victim}: Adopted")), "{out}");
    assert_eq!(owned(&moto).await, reference_counts(), "no duplicates");
    assert_eq!(subnets_tagged(&moto, victim).await, 1);
    let doc = engine_state::LocalBackend::new(&state).load().unwrap().unwrap();
    assert_eq!(doc.resources.len(), REFERENCE_RESOURCES);
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_mid_apply_then_rerun_converges() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("aws.state.json");
    let spec = network_spec_path();
    let args = [
        "apply",
        spec.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
        "--auto-approve",
        "--parallelism",
        "1",
    ];
    let mut child = spawn_quiet(&moto.endpoint(), &args);
    // Kill once a few steps are recorded, long before the end.
    let started = Instant::now();
    let recorded = loop {
        let n = engine_state::LocalBackend::new(&state)
            .load()
            .ok()
            .flatten()
            .map(|d| d.resources.len())
            .unwrap_or(0);
        if n >= 5 {
            break n;
        }
        assert!(child.try_wait().unwrap().is_none(), "apply ended before it could be killed");
        assert!(started.elapsed() < Duration::from_secs(60), "apply made no progress");
        std::thread::sleep(Duration::from_millis(5));
    };
    kill(child);
    assert!(recorded < REFERENCE_RESOURCES, "killed mid-way ({recorded} recorded)");
    assert!(dir.path().join("aws.state.json.lock").exists(), "a killed run leaves its lock");

    // The next run takes over the dead run's lock, adopts, converges.
    let rerun = run_engine(&moto.endpoint(), &args[..5], &[]);
    assert!(rerun.status.success(), "{}", text(&rerun));
    assert_eq!(owned(&moto).await, reference_counts(), "no duplicates");
    let plan = run_engine(
        &moto.endpoint(),
        &["plan", args[1], "--state", args[3], "--detailed-exitcode"],
        &[],
    );
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
}

/// The value of secret `name` in `moto`'s Secrets Manager, if any.
async fn secret(moto: &Moto, name: &str) -> Option<String> {
    let sm = aws_sdk_secretsmanager::Client::new(&moto.sdk_config().await);
    let out = sm.get_secret_value().secret_id(name).send().await.ok()?;
    out.secret_string().map(str::to_string)
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_between_openbao_init_and_the_secret_store_write_loses_no_credential() {
    let moto = Moto::start();
    let work = tempfile::tempdir().unwrap();
    // A real server (raft, TLS from a fresh PKI, transit auto-unseal), uninitialised.
    let root = engine_pki::init_root(&work.path().join("pki")).unwrap();
    let inter = engine_pki::intermediate(&root, "aws").unwrap();
    let leaf = engine_pki::server_leaf(&inter, &["localhost"]).unwrap();
    let (server, _transit) =
        BaoServer::auto_unsealed(&leaf.chain_pem, leaf.key_pem().expose(), &root.cert_pem).await;
    let spec = work.path().join("aws.toml");
    std::fs::write(
        &spec,
        format!(
            "[globals]\ncloud = \"aws\"\nregion = \"eu-west-3\"\ncluster_name = \"aws-0\"\n\
             domain = \"example.test\"\n\n[openbao]\naddress = \"{}\"\nca_file = \"pki/root-ca.crt\"\n\n\
             [openbao.init]\nsecret_prefix = \"openbao/aws-0\"\n\n[openbao.mounts.platform]\n\
             type = \"kv-v2\"\n",
            server.address
        ),
    )
    .unwrap();
    let state = work.path().join("aws.state.json");
    let escrow = work.path().join("aws.openbao-escrow.json");
    let args =
        ["apply", spec.to_str().unwrap(), "--state", state.to_str().unwrap(), "--auto-approve"];

    // The proxy never answers the write of the root token to Secrets Manager: the run is
    // stopped after OpenBao answered its init, where it is killed.
    let rules = ProxyRules {
        holds: vec![("CreateSecret".into(), "openbao/aws-0/root-token".into())],
        ..Default::default()
    };
    let proxy = FaultProxy::start(&moto.endpoint(), &rules);
    let mut child = spawn_quiet(&proxy.endpoint(), &args);
    let started = Instant::now();
    while !escrow.exists() {
        assert!(child.try_wait().unwrap().is_none(), "apply ended before OpenBao was initialised");
        assert!(started.elapsed() < Duration::from_secs(60), "OpenBao was never initialised");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Held at the store write (the escrow came first); then killed.
    tokio::time::sleep(Duration::from_millis(300)).await;
    kill(child);
    assert!(secret(&moto, "openbao/aws-0/root-token").await.is_none());
    assert!(escrow.exists(), "the credentials wait in escrow");

    // The next run stores them, configures the rest, and releases the escrow; at `-vv`, so the
    // leak check below covers the most verbose logs.
    let verbose: Vec<&str> = args.iter().copied().chain(["-vv"]).collect();
    let rerun = run_engine(&moto.endpoint(), &verbose, &[]);
    let out = text(&rerun);
    assert!(rerun.status.success(), "{out}\n{}", server.log());
    assert!(out.contains("credentials_stored"), "{out}");
    assert!(!escrow.exists(), "{out}");
    let token = secret(&moto, "openbao/aws-0/root-token").await.expect("the root token is stored");
    assert!(secret(&moto, "openbao/aws-0/recovery-keys").await.is_some());
    assert!(!out.contains(&token), "the token is never printed");
    // The stored token is the server's root token, and nothing is left to do.
    let plan = run_engine(
        &moto.endpoint(),
        &[
            "plan",
            spec.to_str().unwrap(),
            "--state",
            state.to_str().unwrap(),
            "--detailed-exitcode",
        ],
        &[],
    );
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));

    // No credential in any output: the `-vv` logs, the JSON plan and drift report, the state.
    let (spec, state) = (spec.to_str().unwrap(), state.to_str().unwrap());
    let mut outputs = vec![out, std::fs::read_to_string(state).unwrap()];
    for command in [["plan", "--json"], ["drift", "--json"]] {
        let shown = run_engine(
            &moto.endpoint(),
            &[command[0], spec, "--state", state, command[1], "-vv"],
            &[],
        );
        outputs.push(text(&shown));
    }
    let keys: serde_json::Value =
        serde_json::from_str(&secret(&moto, "openbao/aws-0/recovery-keys").await.unwrap())
            .unwrap_or_default();
    let mut secrets = vec![token.clone()];
    collect_strings(&keys, &mut secrets);
    let everything = outputs.join("\n");
    assert!(everything.contains("DEBUG") || everything.contains("TRACE"), "-vv logs are seen");
    for s in secrets.iter().filter(|s| s.len() >= 16) {
        assert!(!everything.contains(s.as_str()), "a credential leaked: {}…", &s[..4]);
    }
}

/// Every string inside `value`.
fn collect_strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|i| collect_strings(i, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_mid_apply_finishes_the_steps_in_flight_releases_the_lock_and_exits_1() {
    let moto = Moto::start();
    // The NAT gateway's create answers 3 s after the gateway is made (production 90 s / 30):
    // the step is in flight when the signal comes.
    let proxy = FaultProxy::start(
        &moto.endpoint(),
        &ProxyRules { latency_scale: 30.0, ..Default::default() },
    );
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("aws.state.json");
    let spec = network_spec_path();
    let args =
        ["apply", spec.to_str().unwrap(), "--state", state.to_str().unwrap(), "--auto-approve"];
    let child = engine_command(&proxy.endpoint(), &args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ec2 = aws_sdk_ec2::Client::new(&moto.sdk_config().await);
    let started = Instant::now();
    while ec2.describe_nat_gateways().send().await.unwrap().nat_gateways().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(60), "the NAT gateway was never made");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let term = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let out = child.wait_with_output().unwrap();
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(shown.contains("Stopping: steps in flight finish"), "{shown}");
    assert!(shown.contains("Interrupted:") && shown.contains("steps not started"), "{shown}");
    assert!(!dir.path().join("aws.state.json.lock").exists(), "the lock is released: {shown}");
    // The NAT gateway, in flight, finished and is recorded: nothing made is left unrecorded.
    let doc = engine_state::LocalBackend::new(&state).load().unwrap().unwrap();
    assert!(doc.resources.keys().any(|a| a.contains("nat_gateway")), "{shown}");
    assert!(doc.resources.len() < REFERENCE_RESOURCES, "stopped before the end");

    let rerun = run_engine(&moto.endpoint(), &args, &[]);
    let again = text(&rerun);
    assert!(rerun.status.success(), "{again}");
    assert!(!again.contains("to adopt"), "every resource made was recorded: {again}");
    assert_eq!(owned(&moto).await, reference_counts(), "no duplicates");
}
