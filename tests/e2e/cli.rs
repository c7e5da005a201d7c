//! The command line: lanes, exit codes, JSON, graph, state commands, approval.

use crate::support::{REFERENCE_RESOURCES, owned};
use engine_tests::{Moto, aws_spec_path, network_spec_path, run_engine, text};
use std::collections::{BTreeMap, BTreeSet};

#[test]
fn an_unselected_lane_is_skipped_with_one_line() {
    let spec = network_spec_path();
    // No endpoint is listening: a call would fail the command.
    let out =
        run_engine("http://127.0.0.1:9", &["plan", spec.to_str().unwrap(), "--cloud", "gcp"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.starts_with("[skip] aws lane not selected"), "{stdout}");
    let env = run_engine(
        "http://127.0.0.1:9",
        &["plan", spec.to_str().unwrap()],
        &[("ENGINE_CLOUD", "gcp")],
    );
    assert!(String::from_utf8_lossy(&env.stdout).starts_with("[skip]"), "{}", text(&env));
}

/// The subcommands `engine <path> --help` lists (`help` aside).
fn subcommands_of(path: &[String]) -> Vec<String> {
    let mut args = path.to_vec();
    args.push("--help".into());
    let out =
        run_engine("http://127.0.0.1:9", &args.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let Some((_, commands)) = help.split_once("Commands:\n") else { return vec![] };
    commands
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn usage_errors_exit_1_for_every_subcommand_and_only_differences_exit_2() {
    // Every command, as the help lists them (a new one is covered without editing this test).
    let mut commands: Vec<Vec<String>> = Vec::new();
    let mut pending: Vec<Vec<String>> = vec![vec![]];
    while let Some(path) = pending.pop() {
        let children = subcommands_of(&path);
        pending.extend(children.iter().map(|c| [path.clone(), vec![c.clone()]].concat()));
        if children.is_empty() {
            commands.push(path);
        }
    }
    assert!(commands.len() >= 12, "{commands:?}");
    for command in &commands {
        let mut args: Vec<&str> = command.iter().map(String::as_str).collect();
        args.push("--no-such-flag");
        let out = run_engine("http://127.0.0.1:9", &args, &[]);
        assert_eq!(out.status.code(), Some(1), "{command:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("unexpected argument"),
            "{}",
            text(&out)
        );
    }
    // A missing argument, an unknown command, no command: usage errors too.
    for args in [&["plan"][..], &["no-such-command"], &[]] {
        let out = run_engine("http://127.0.0.1:9", args, &[]);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
    }
    for args in [&["--help"][..], &["--version"], &["plan", "--help"]] {
        let out = run_engine("http://127.0.0.1:9", args, &[]);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_exit_codes_json_targets_graph_and_state_commands() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("aws.state.json");
    let spec = network_spec_path();
    let (s, st) = (spec.to_str().unwrap(), state.to_str().unwrap());
    let e = moto.endpoint();

    let plan = run_engine(&e, &["plan", s, "--state", st, "--detailed-exitcode"], &[]);
    assert_eq!(plan.status.code(), Some(2), "{}", text(&plan));
    let stdout = String::from_utf8_lossy(&plan.stdout);
    assert!(
        stdout.contains(&format!("Plan: {REFERENCE_RESOURCES} to add, 0 to change, 0 to destroy.")),
        "{stdout}"
    );
    assert!(stdout.contains("+ aws.network.vpc.main (aws_vpc)"), "{stdout}");
    assert!(stdout.contains("vpc_id") && stdout.contains("(known after apply)"), "{stdout}");

    let json = run_engine(&e, &["plan", s, "--state", st, "--json"], &[]);
    let v: serde_json::Value =
        serde_json::from_slice(&json.stdout).unwrap_or_else(|_| panic!("{}", text(&json)));
    assert_eq!(v["format_version"], "1");
    assert_eq!(v["summary"]["add"], REFERENCE_RESOURCES);
    let changes = v["resource_changes"].as_array().unwrap();
    let subnet = changes
        .iter()
        .find(|c| c["address"] == "aws.network.subnet.private[\"eu-west-3a\"]")
        .unwrap();
    assert_eq!(subnet["action"], "create");
    let vpc_id =
        subnet["fields"].as_array().unwrap().iter().find(|f| f["name"] == "vpc_id").unwrap();
    assert_eq!(vpc_id["after_unknown"], true);

    let targeted =
        run_engine(&e, &["plan", s, "--state", st, "--target", "aws.network.subnet.public"], &[]);
    assert!(
        String::from_utf8_lossy(&targeted.stdout).contains("Plan: 4 to add"),
        "{}",
        text(&targeted)
    );

    // Without a terminal and without --auto-approve, apply refuses and changes nothing.
    let refused = run_engine(&e, &["apply", s, "--state", st], &[]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(text(&refused).contains("--auto-approve"));
    assert_eq!(owned(&moto).await.total(), 0);

    let apply = run_engine(&e, &["apply", s, "--state", st, "--auto-approve"], &[]);
    assert!(apply.status.success(), "{}", text(&apply));
    let again = run_engine(&e, &["plan", s, "--state", st, "--detailed-exitcode"], &[]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));

    let list = run_engine(&e, &["state", "list", "--state", st], &[]);
    assert_eq!(
        String::from_utf8_lossy(&list.stdout).lines().count(),
        REFERENCE_RESOURCES,
        "{}",
        text(&list)
    );
    let show = run_engine(&e, &["state", "show", "aws.network.vpc.main", "--state", st], &[]);
    assert!(String::from_utf8_lossy(&show.stdout).contains("id   = vpc-"), "{}", text(&show));
    let output = run_engine(&e, &["output", "aws.network.vpc", "--state", st, "--json"], &[]);
    let o: serde_json::Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("{}", text(&output)));
    assert!(o["aws.network.vpc.main"]["id"].as_str().unwrap().starts_with("vpc-"));

    let graph = run_engine(&e, &["graph", s, "--format", "mermaid"], &[]);
    let g = String::from_utf8_lossy(&graph.stdout);
    assert!(g.starts_with("flowchart LR"), "{g}");
    assert!(g.matches("-->").count() > REFERENCE_RESOURCES, "{g}");
    let dot = run_engine(&e, &["graph", s, "--target", "aws.network.nat_gateway"], &[]);
    let d = String::from_utf8_lossy(&dot.stdout);
    assert!(d.contains("aws.network.eip.nat") && !d.contains("aws.network.route53_zone"), "{d}");
}

#[test]
fn render_prints_what_helm_template_prints() {
    let helm = std::env::var("ENGINE_HELM_BIN").unwrap_or_else(|_| {
        format!("{}/.cache/engine/helm-v4.2.4/bin/helm", std::env::var("HOME").unwrap())
    });
    assert!(
        std::path::Path::new(&helm).exists(),
        "helm is not installed at {helm}: run testenv/install-helm.sh (or set ENGINE_HELM_BIN)"
    );
    let chart =
        engine_tests::workspace().join("../shared/fixtures/charts/flux-instance-0.49.0.tgz");
    assert!(chart.exists(), "fixture chart missing: {}", chart.display());
    let chart = chart.to_str().unwrap();
    let ours = run_engine(
        "http://127.0.0.1:9",
        &["render", chart, "--set", "instance.sync.path=clusters/aws-0"],
        &[],
    );
    assert!(ours.status.success(), "{}", text(&ours));
    let theirs = std::process::Command::new(&helm)
        .args(["template", chart, "--set", "instance.sync.path=clusters/aws-0"])
        .env("HELM_REGISTRY_CONFIG", "/dev/null")
        .output()
        .unwrap();
    assert!(theirs.status.success(), "{}", text(&theirs));
    let ours = String::from_utf8_lossy(&ours.stdout);
    assert!(ours.contains("kind: FluxInstance"), "{ours}");
    assert_eq!(ours, String::from_utf8_lossy(&theirs.stdout));
}

/// `engine graph` of the reference spec: one graph for the whole lane, in which the EKS cluster
/// waits for its subnets and IAM role and not for OpenBao. Overlays merge over the spec, and an
/// error in one names the overlay's file and line; `[llm_platform]` is left out unless its gate is
/// on, and is in the same graph when it is. No endpoint listens: nothing here calls AWS.
#[test]
fn the_reference_spec_is_one_graph_with_overlays_and_gates() {
    let work = tempfile::tempdir().unwrap();
    let pki = work.path().join("pki");
    let out = run_engine("http://127.0.0.1:9", &["pki", "init-root", pki.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let overlay = work.path().join("overlay.toml");
    std::fs::write(
        &overlay,
        format!("[openbao]\nca_file = \"{}\"\n", pki.join("root-ca.crt").display()),
    )
    .unwrap();
    let spec = aws_spec_path();
    let (spec, overlay) = (spec.to_str().unwrap(), overlay.to_str().unwrap());

    let out = run_engine("http://127.0.0.1:9", &["graph", spec, "--overlay", overlay], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[skip] [llm_platform]: feature gate `llm-platform` is off"),
        "{stderr}"
    );
    let deps = dot_dependencies(&String::from_utf8_lossy(&out.stdout));
    let cluster = &deps["aws.eks.cluster.main"];
    // The control plane's interfaces in the intra subnets, as the reference places them.
    assert!(cluster.iter().any(|d| d.starts_with("aws.network.subnet.intra")), "{cluster:?}");
    assert!(cluster.iter().any(|d| d.starts_with("aws.eks.iam_role")), "{cluster:?}");
    assert!(!cluster.iter().any(|d| d.starts_with("aws.openbao")), "{cluster:?}");
    let stages: BTreeSet<&str> = deps.keys().filter_map(|a| a.split('.').nth(1)).collect();
    assert_eq!(
        stages,
        BTreeSet::from(["access", "bootstrap", "eks", "network", "openbao"]),
        "every stage in one graph"
    );

    // With the gate on, the LLM platform is in the same graph, after the cluster.
    let out = run_engine(
        "http://127.0.0.1:9",
        &["graph", spec, "--overlay", overlay],
        &[("ENGINE_LLM_PLATFORM_ENABLED", "true")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("llm_platform"), "{stderr}");
    let deps = dot_dependencies(&String::from_utf8_lossy(&out.stdout));
    let fs = &deps["aws.llm_platform.s3files_file_system.models"];
    assert!(fs.iter().any(|d| d == "aws.llm_platform.s3_bucket_lookup.models"), "{fs:?}");
    assert!(fs.iter().any(|d| d == "aws.llm_platform.iam_role.service"), "{fs:?}");
    let association = &deps["aws.llm_platform.eks_pod_identity_association[\"efs-csi-node-sa\"]"];
    assert!(association.iter().any(|d| d == "aws.eks.cluster.main"), "{association:?}");

    // An error in the overlay names the overlay, at the overlay's line.
    std::fs::write(
        work.path().join("overlay.toml"),
        format!(
            "[openbao]\nca_file = \"{}\"\n\n[eks]\nservice_cidr = 42\n",
            pki.join("root-ca.crt").display()
        ),
    )
    .unwrap();
    let out = run_engine("http://127.0.0.1:9", &["plan", spec, "--overlay", overlay], &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains(&format!("{overlay}:5:")), "{t}");
    assert!(t.contains("service_cidr"), "{t}");
}

/// The dependencies of every node of a `engine graph` dot document, by address.
pub(crate) fn dot_dependencies(dot: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut names = BTreeMap::new();
    let mut edges = Vec::new();
    for line in dot.lines().map(str::trim) {
        if let Some((node, rest)) = line.split_once(" [label = \"") {
            let address = rest.split("\\n").next().unwrap().replace("\\\"", "\"");
            names.insert(node.to_string(), address);
        } else if let Some((from, to)) = line.trim_end_matches(';').split_once(" -> ") {
            edges.push((from.to_string(), to.to_string()));
        }
    }
    let mut deps: BTreeMap<String, BTreeSet<String>> =
        names.values().map(|a| (a.clone(), BTreeSet::new())).collect();
    for (from, to) in edges {
        deps.get_mut(&names[&to]).unwrap().insert(names[&from].clone());
    }
    deps
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_step_reports_the_cloud_error_code_in_json() {
    let moto = Moto::start();
    // Someone else's role already has the name the spec gives the flow-logs role.
    let iam = aws_sdk_iam::Client::new(&moto.sdk_config().await);
    let trust = r#"{"Version":"2012-10-17","Statement":[]}"#;
    let role =
        iam.create_role().role_name("aws-0-vpc-flow-logs").assume_role_policy_document(trust);
    role.send().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("aws.state.json");
    let spec = network_spec_path();
    let (s, st) = (spec.to_str().unwrap(), state.to_str().unwrap());
    let out =
        run_engine(&moto.endpoint(), &["apply", s, "--state", st, "--auto-approve", "--json"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)));
    assert_eq!(v["success"], false);
    let steps = v["steps"].as_array().unwrap();
    let failed: Vec<_> = steps.iter().filter(|s| s["outcome"] == "failed").collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0]["address"], "aws.network.iam_role.flow_logs");
    assert_eq!(failed[0]["code"], "EntityAlreadyExists", "{failed:#?}");
    assert!(failed[0]["reason"].as_str().unwrap().contains("EntityAlreadyExists"));
    let done = steps.iter().find(|s| s["outcome"] == "done").unwrap();
    assert!(done.get("code").is_none(), "only failures carry a code: {done}");
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=engine", "-c", "user.email=engine@example.org"])
        .args(args)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// The addresses a `plan --json` would touch.
fn planned_addresses(out: &std::process::Output) -> BTreeSet<String> {
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(out)));
    v["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["address"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn changed_runs_only_the_stages_whose_sections_changed_since_a_revision() {
    let moto = Moto::start();
    let e = moto.endpoint();
    let repo = tempfile::tempdir().unwrap();
    let spec = repo.path().join("aws.toml");
    let state = repo.path().join("aws.state.json");
    let (s, st) = (spec.to_str().unwrap(), state.to_str().unwrap());
    let committed = engine_tests::spec_text_through(2);
    std::fs::write(&spec, &committed).unwrap();
    git(repo.path(), &["init", "-q", "-b", "main"]);
    git(repo.path(), &["add", "aws.toml"]);
    git(repo.path(), &["commit", "-q", "-m", "network and OpenBao servers"]);

    // Comments and layout are not changes: the spec is one line, before anything is read.
    std::fs::write(&spec, format!("# reviewed\n{committed}\n\n")).unwrap();
    let unchanged = run_engine(&e, &["plan", s, "--state", st, "--changed=HEAD"], &[]);
    assert_eq!(unchanged.status.code(), Some(0), "{}", text(&unchanged));
    let shown = String::from_utf8_lossy(&unchanged.stdout);
    assert_eq!(shown.trim(), format!("[skip] {s}: unchanged since HEAD"), "{}", text(&unchanged));

    // A network edit: the network stage only.
    std::fs::write(&spec, committed.replace("retention_days = 7,", "retention_days = 14,"))
        .unwrap();
    let network = run_engine(&e, &["plan", s, "--state", st, "--changed=HEAD", "--json"], &[]);
    let addresses = planned_addresses(&network);
    assert!(addresses.iter().all(|a| a.starts_with("aws.network.")), "{addresses:?}");
    assert!(addresses.len() >= REFERENCE_RESOURCES, "{addresses:?}");
    assert!(text(&network).contains("changed since HEAD: aws.network"), "{}", text(&network));

    // Committed on main, `--changed` alone compares with the previous commit.
    git(repo.path(), &["commit", "-q", "-am", "longer flow logs"]);
    let default = run_engine(&e, &["plan", s, "--state", st, "--changed", "--json"], &[]);
    assert_eq!(planned_addresses(&default), addresses, "{}", text(&default));
    assert!(text(&default).contains("changed since HEAD^: aws.network"), "{}", text(&default));

    // An OpenBao server edit: that stage (and, read only, what it needs).
    let edited = committed.replace("retention_days = 7,", "retention_days = 14,");
    std::fs::write(&spec, edited.replace("t3.small", "t3.medium")).unwrap();
    let openbao = run_engine(&e, &["plan", s, "--state", st, "--changed=HEAD", "--json"], &[]);
    let addresses = planned_addresses(&openbao);
    assert!(addresses.iter().any(|a| a.starts_with("aws.openbao.")), "{addresses:?}");
    assert!(text(&openbao).contains("changed since HEAD: aws.openbao\n"), "{}", text(&openbao));

    // A spec-wide edit runs the whole spec.
    std::fs::write(&spec, edited.replace("owner = \"platform\"", "owner = \"platform-team\""))
        .unwrap();
    let everything = run_engine(&e, &["plan", s, "--state", st, "--changed=HEAD", "--json"], &[]);
    let all = run_engine(&e, &["plan", s, "--state", st, "--json"], &[]);
    assert_eq!(planned_addresses(&everything), planned_addresses(&all));

    // Mistakes are errors that change nothing.
    let unknown = run_engine(&e, &["plan", s, "--state", st, "--changed=no-such-rev"], &[]);
    assert_eq!(unknown.status.code(), Some(1), "{}", text(&unknown));
    assert!(text(&unknown).contains("not a revision"), "{}", text(&unknown));
    let both = run_engine(&e, &["plan", s, "--changed", "--target", "aws.network"], &[]);
    assert_eq!(both.status.code(), Some(1), "{}", text(&both));
    assert!(!state.exists(), "plans never write state");
}
