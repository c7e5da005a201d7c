//! Several specs in one run: the shared AWS–GCP federation (`specs/shared.toml`), the AWS
//! lane's network and the GCP lane (`specs/gcp.toml`) from empty together, each with its own
//! state; the GCP stage that waits for the federation starts only once it is applied, and its
//! destroy runs first; `engine drift` over several specs exits 2 when one drifted; unselected
//! lanes are one `[skip]` line each while the shared spec always runs.

use engine::{Action, Engine, Event, Observer, Workspace};
use engine_tests::lane::spec_engine;
use engine_tests::{
    GcpFake, Moto, engine_command, network_spec_path, test_root_ca_overlay, text, workspace,
};
use std::path::Path;
use std::sync::{Arc, Mutex};

const FEDERATION: &str = "aws-gcp-federation";
const ROLE: &str = "gcp-0-route53-dns";

/// Events of every member, in the order they happened, with the spec they came from.
#[derive(Default)]
struct Timeline(Mutex<Vec<(String, Event)>>);

struct Member {
    spec: String,
    timeline: Arc<Timeline>,
}

impl Observer for Member {
    fn event(&self, event: Event) {
        self.timeline.0.lock().unwrap().push((self.spec.clone(), event));
    }
}

impl Timeline {
    fn observer(self: &Arc<Self>, spec: &str) -> Arc<dyn Observer> {
        Arc::new(Member { spec: spec.into(), timeline: self.clone() })
    }

    /// Positions of the events `pick` matches.
    fn positions(&self, pick: &dyn Fn(&str, &Event) -> bool) -> Vec<usize> {
        let events = self.0.lock().unwrap();
        events.iter().enumerate().filter(|(_, (s, e))| pick(s, e)).map(|(i, _)| i).collect()
    }

    fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
}

fn started(spec: &str, prefix: &str) -> impl Fn(&str, &Event) -> bool {
    let (spec, prefix) = (spec.to_string(), prefix.to_string());
    move |s: &str, e: &Event| {
        s == spec
            && matches!(e, Event::StepStarted { address, .. } if address.matches_prefix(&prefix))
    }
}

fn finished(spec: &str, prefix: &str) -> impl Fn(&str, &Event) -> bool {
    let (spec, prefix) = (spec.to_string(), prefix.to_string());
    move |s: &str, e: &Event| {
        s == spec
            && matches!(e, Event::StepFinished { address, .. } if address.matches_prefix(&prefix))
    }
}

/// The GCP lane's overlay here: its GKE stage (rather than what runs inside the cluster, which
/// this test leaves out) waits for the federation.
const GCP_OVERLAY: &str = "[globals.after]\naws-gcp-federation = [\"gcp.gke\"]\n";

/// [`GCP_OVERLAY`] and the offline root `[openbao]` names.
fn gcp_overlay() -> String {
    format!("{GCP_OVERLAY}\n{}", test_root_ca_overlay())
}

async fn members(moto: &Moto, gcp: &GcpFake, dir: &Path, timeline: &Arc<Timeline>) -> Workspace {
    let endpoints = (moto.endpoint(), gcp.endpoint());
    let endpoints = (endpoints.0.as_str(), endpoints.1.as_str());
    let shared = spec_engine(
        &workspace().join("specs/shared.toml"),
        "",
        endpoints,
        &dir.join("shared.json"),
        &[],
        timeline.observer(FEDERATION),
    )
    .await;
    let aws = spec_engine(
        &network_spec_path(),
        "",
        endpoints,
        &dir.join("aws.json"),
        &[],
        timeline.observer("aws"),
    )
    .await;
    let gcp_lane = spec_engine(
        &workspace().join("specs/gcp.toml"),
        &gcp_overlay(),
        endpoints,
        &dir.join("gcp.json"),
        // OpenBao on GCP without its servers (which need its configuration's certificate):
        // the lineage, whose identities the federation trusts.
        &[
            "gcp.bootstrap",
            "gcp.openbao.config",
            "gcp.openbao.iam_member[\"tls-secret\"]",
            "gcp.access",
        ],
        timeline.observer("gcp"),
    )
    .await;
    Workspace::new(vec![shared, aws, gcp_lane]).unwrap()
}

fn all_ok<T: std::fmt::Debug, E: std::fmt::Debug>(results: Vec<Result<T, E>>) -> Vec<T> {
    results.into_iter().map(|r| r.unwrap()).collect()
}

async fn iam(moto: &Moto) -> aws_sdk_iam::Client {
    aws_sdk_iam::Client::new(&moto.sdk_config().await)
}

/// The `engine` binary over the shared spec and the GCP lane, with this test's states.
fn cli(moto: &Moto, gcp: &GcpFake, dir: &Path, args: &[&str]) -> std::process::Output {
    let overlay = dir.join("gcp-overlay.toml");
    std::fs::write(&overlay, gcp_overlay()).unwrap();
    let shared = workspace().join("specs/shared.toml");
    let gcp_spec = workspace().join("specs/gcp.toml");
    let states = [
        format!("{FEDERATION}={}", dir.join("shared.json").display()),
        format!("gcp={}", dir.join("gcp.json").display()),
    ];
    let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    all.extend([shared.display().to_string(), gcp_spec.display().to_string()]);
    all.extend(["--state".into(), states[0].clone(), "--state".into(), states[1].clone()]);
    all.extend(["--overlay".into(), format!("gcp={}", overlay.display())]);
    all.extend(["--exclude".into(), "gcp.bootstrap".into()]);
    all.extend(["--exclude".into(), "gcp.openbao".into()]);
    all.extend(["--exclude".into(), "gcp.access".into()]);
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    engine_command(&moto.endpoint(), &refs)
        .env("ENGINE_GCP_ENDPOINT", gcp.endpoint())
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn both_lanes_and_the_federation_in_one_run_ordered_only_where_declared() {
    let moto = Moto::start();
    let gcp = GcpFake::start();
    let dir = tempfile::tempdir().unwrap();
    let timeline = Arc::new(Timeline::default());
    let ws = members(&moto, &gcp, dir.path(), &timeline).await;

    // From empty, all at once.
    let plans = all_ok(ws.plan().await);
    assert!(plans.iter().all(|p| p.has_changes()));
    let reports = all_ok(ws.apply(&plans).await);
    for (engine, report) in ws.engines().iter().zip(&reports) {
        assert!(
            report.is_success(),
            "{}: {:#?}",
            engine.name(),
            report.failures().collect::<Vec<_>>()
        );
    }
    let federation_done = timeline.positions(&finished(FEDERATION, "aws.federation"));
    let gke_started = timeline.positions(&started("gcp", "gcp.gke"));
    assert_eq!(federation_done.len(), 7, "GKE's provider, three roles and their policies");
    assert!(!gke_started.is_empty());
    assert!(
        gke_started[0] > *federation_done.iter().max().unwrap(),
        "GKE waits for the federation: {federation_done:?} {gke_started:?}"
    );
    // Each spec's state holds its own resources only.
    let recorded =
        |e: &Engine| e.state_document().unwrap().resources.keys().cloned().collect::<Vec<_>>();
    assert!(recorded(&ws.engines()[0]).iter().all(|a| a.starts_with("aws.federation.")));
    assert!(recorded(&ws.engines()[1]).iter().all(|a| a.starts_with("aws.network.")));
    assert!(recorded(&ws.engines()[2]).iter().all(|a| a.starts_with("gcp.")));
    // The role trusts gcp-0's issuer through the provider the same run made.
    let role = iam(&moto).await.get_role().role_name(ROLE).send().await.unwrap();
    let trust = role.role().unwrap().assume_role_policy_document().unwrap_or_default();
    // IAM returns policy documents URL-encoded.
    let trust = percent_encoding::percent_decode_str(trust).decode_utf8_lossy();
    assert!(
        trust.contains(":oidc-provider/container.googleapis.com/v1/projects/ogenki-435905/locations/europe-west4-a/clusters/gcp-0"),
        "{trust}"
    );
    assert!(trust.contains("system:serviceaccount:kube-system:external-dns"), "{trust}");

    // The roles that trust the GCP lane's identities read their unique ids in the same run:
    // each starts once the step that makes its identity has finished, and the transfer job
    // that assumes the mirror role starts once the role is made.
    let first = |spec: &str, at: &str, done: bool| match done {
        true => timeline.positions(&finished(spec, at))[0],
        false => timeline.positions(&started(spec, at))[0],
    };
    let seal_role = "aws.federation.iam_role[\"openbao-standby-seal\"]";
    let mirror_role = "aws.federation.iam_role[\"openbao-snapshot-mirror\"]";
    assert!(
        first(FEDERATION, seal_role, false)
            > first("gcp", "gcp.openbao.service_account.node", true)
    );
    assert!(
        first(FEDERATION, mirror_role, false)
            > first("gcp", "gcp.openbao.storage_transfer_agent", true)
    );
    assert!(
        first("gcp", "gcp.openbao.storage_transfer_job.mirror", false)
            > first(FEDERATION, mirror_role, true)
    );
    let node: serde_json::Value = gcp_get(
        &gcp,
        "/v1/projects/ogenki-435905/serviceAccounts/openbao-node@ogenki-435905.iam.gserviceaccount.com",
    )
    .await;
    let agent = gcp_get(&gcp, "/v1/googleServiceAccounts/ogenki-435905").await;
    let trust_of = |name: &'static str| {
        let moto = &moto;
        async move {
            let role = iam(moto).await.get_role().role_name(name).send().await.unwrap();
            let role = role.role().unwrap().clone();
            let trust = role.assume_role_policy_document().unwrap_or_default();
            let trust = percent_encoding::percent_decode_str(trust).decode_utf8_lossy();
            (serde_json::from_str::<serde_json::Value>(&trust).unwrap(), role.arn().to_string())
        }
    };
    let (seal_trust, _) = trust_of("openbao-standby-seal").await;
    let statement = &seal_trust["Statement"][0];
    assert_eq!(statement["Principal"]["Federated"], "accounts.google.com", "{seal_trust}");
    let subjects = statement["Condition"]["StringLike"]["accounts.google.com:sub"].clone();
    assert_eq!(subjects, serde_json::json!([node["uniqueId"]]), "{seal_trust}");
    let (mirror_trust, mirror_arn) = trust_of("openbao-snapshot-mirror").await;
    let subjects =
        mirror_trust["Statement"][0]["Condition"]["StringLike"]["accounts.google.com:sub"].clone();
    assert_eq!(subjects, serde_json::json!([agent["subjectId"]]), "{mirror_trust}");
    let job =
        gcp_get(&gcp, "/v1/transferJobs/openbao-snapshot-mirror?projectId=ogenki-435905").await;
    let source = &job["transferSpec"]["awsS3DataSource"];
    assert_eq!(source["roleArn"], mirror_arn.as_str(), "{job}");
    assert_eq!(source["bucketName"], "eu-west-3-ogenki-openbao-snapshot");
    assert_eq!(job["transferSpec"]["transferOptions"]["overwriteWhen"], "NEVER");
    let writers = gcp_get(&gcp, "/storage/v1/b/ogenki-435905-ogenki-openbao-snapshot/iam").await;
    let writer = writers["bindings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["role"] == "roles/storage.legacyBucketWriter")
        .unwrap_or_else(|| panic!("{writers}"));
    assert_eq!(
        writer["members"],
        serde_json::json!([format!("serviceAccount:{}", agent["accountEmail"].as_str().unwrap())])
    );

    // Converged: nothing to do anywhere.
    let plans = all_ok(ws.plan().await);
    for p in &plans {
        assert!(
            !p.has_changes(),
            "{}: {:?}",
            p.spec,
            p.actions().map(|c| (&c.address, c.action, &c.fields)).collect::<Vec<_>>()
        );
    }

    // Drift in what ties the lanes together, found and repaired in one run: the transfer job
    // disabled in the console, the seal role's trust opened to any Google identity.
    let disable = serde_json::json!({
        "projectId": "ogenki-435905",
        "transferJob": {"status": "DISABLED"},
        "updateTransferJobFieldMask": "status",
    });
    let job_url = format!("{}/v1/transferJobs/openbao-snapshot-mirror", gcp.endpoint());
    let patched = reqwest::Client::new().patch(&job_url).json(&disable).send().await.unwrap();
    assert!(patched.status().is_success());
    let mut opened = seal_trust.clone();
    opened["Statement"][0]["Condition"]["StringLike"]["accounts.google.com:sub"] =
        serde_json::json!(["*"]);
    iam(&moto)
        .await
        .update_assume_role_policy()
        .role_name("openbao-standby-seal")
        .policy_document(opened.to_string())
        .send()
        .await
        .unwrap();
    let reports = all_ok(ws.drift(engine::DriftAgainst::Applied).await);
    let drifted: Vec<String> =
        reports.iter().flat_map(|r| r.drifted.iter().map(|d| d.address.to_string())).collect();
    assert!(drifted.contains(&seal_role.to_string()), "{drifted:?}");
    assert!(
        drifted.contains(&"gcp.openbao.storage_transfer_job.mirror".to_string()),
        "{drifted:?}"
    );
    let plans = all_ok(ws.plan().await);
    let reports = all_ok(ws.apply(&plans).await);
    assert!(reports.iter().all(|r| r.is_success()), "{reports:?}");
    let (repaired, _) = trust_of("openbao-standby-seal").await;
    assert_eq!(repaired, seal_trust);
    let job =
        gcp_get(&gcp, "/v1/transferJobs/openbao-snapshot-mirror?projectId=ogenki-435905").await;
    assert_eq!(job["status"], "ENABLED");
    assert!(all_ok(ws.plan().await).iter().all(|p| !p.has_changes()));

    // The CLI over two specs: clean, then exit 2 when one of them drifted, the other clean.
    let out = cli(&moto, &gcp, dir.path(), &["drift", "--cloud", "gcp"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    iam(&moto).await.delete_role_policy().role_name(ROLE).policy_name(ROLE).send().await.unwrap();
    let out = cli(&moto, &gcp, dir.path(), &["drift", "--cloud", "all"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(shown.contains("aws.federation.iam_role_policy[\"gcp-0-route53-dns\"]"), "{shown}");
    assert!(shown.contains("shared lane: ") && shown.contains("gcp lane: "), "{shown}");
    // The AWS lane alone: GCP is one `[skip]` line; the shared spec still runs and repairs.
    let out = cli(&moto, &gcp, dir.path(), &["apply", "--cloud", "aws", "--auto-approve"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let skips: Vec<&str> = shown.lines().filter(|l| l.starts_with("[skip]")).collect();
    assert_eq!(skips.len(), 1, "{shown}");
    assert!(skips[0].starts_with("[skip] gcp lane not selected (cloud: aws)"), "{shown}");
    assert!(shown.contains("1 added"), "{shown}");
    // Without the GCP lane in the run, the roles that trust its identities are left out, one
    // line each: neither read nor changed, nor deleted.
    let left_out = "[skip] aws.federation.iam_role[\"openbao-standby-seal\"] and what needs it: needs gcp's gcp.openbao.service_account.node.unique_id, and spec `gcp` is not in this run";
    assert!(shown.contains(left_out), "{shown}");
    let role = iam(&moto).await.get_role().role_name("openbao-standby-seal").send().await;
    assert!(role.is_ok(), "left in place");
    let out = cli(&moto, &gcp, dir.path(), &["drift", "--cloud", "all"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Several specs need per-spec states.
    let out = engine_command(
        &moto.endpoint(),
        &["plan", "specs/shared.toml", "specs/gcp.toml", "--state", "/tmp/x.json"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("with several specs, say which spec it is for"), "{}", text(&out));

    // Destroy: what waits for the federation goes first, then the federation; nothing is left.
    timeline.clear();
    let plans = all_ok(ws.plan_destroy().await);
    let reports = all_ok(ws.apply(&plans).await);
    assert!(reports.iter().all(|r| r.is_success()));
    let gcp_done = timeline.positions(&|s, e| {
        s == "gcp" && matches!(e, Event::StepFinished { action: Action::Delete, .. })
    });
    let federation_started = timeline.positions(&started(FEDERATION, "aws.federation"));
    assert!(
        federation_started[0] > *gcp_done.iter().max().unwrap(),
        "the federation goes after the GCP lane: {gcp_done:?} {federation_started:?}"
    );
    let gone = iam(&moto).await.get_role().role_name(ROLE).send().await;
    assert!(gone.is_err(), "the role is deleted");
    for e in &ws.engines()[..2] {
        assert!(e.state_document().unwrap().resources.is_empty(), "{}", e.name());
    }
    let kept = ws.engines()[2].state_document().unwrap();
    assert!(kept.resources.values().all(|r| r.protected), "only GCP's lineage is kept");
}

async fn gcp_get(gcp: &GcpFake, path: &str) -> serde_json::Value {
    let answer = reqwest::get(format!("{}{path}", gcp.endpoint())).await.unwrap();
    assert!(answer.status().is_success(), "{path}: {}", answer.status());
    answer.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_role_whose_identity_no_spec_of_the_run_has_is_left_out_with_why() {
    let moto = Moto::start();
    let gcp = GcpFake::start();
    let dir = tempfile::tempdir().unwrap();
    // The shared spec with the GCP lane (lineage left out): the roles that trust its
    // identities wait, one line each; the rest of the federation is made.
    let out = cli(&moto, &gcp, dir.path(), &["apply", "--cloud", "all", "--auto-approve"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let seal = "[skip] aws.federation.iam_role[\"openbao-standby-seal\"] and what needs it: needs gcp's gcp.openbao.service_account.node.unique_id, which that spec has not made nor makes in this run";
    assert!(shown.contains(seal), "{shown}");
    assert!(shown.contains("openbao-snapshot-mirror\"] and what needs it"), "{shown}");
    let roles = iam(&moto).await.list_roles().send().await.unwrap();
    let names: Vec<&str> = roles.roles().iter().map(|r| r.role_name()).collect();
    assert_eq!(names, [ROLE], "{names:?}");
    // As JSON too.
    let out = cli(&moto, &gcp, dir.path(), &["plan", "--cloud", "all", "--json"]);
    let shown = text(&out);
    assert!(shown.contains("\"left_out\""), "{shown}");
    assert!(shown.contains("openbao-standby-seal"), "{shown}");
}

/// The network stage as a second spec, `net-1`: the same shape on 10.1.0.0/16 for cluster
/// `aws-1` (what bench/vs-terraform/scale.sh makes N of).
fn second_network(dir: &Path) -> std::path::PathBuf {
    let text = engine_tests::network_spec_text()
        .replace("\"10.0.", "\"10.1.")
        .replace("\"100.64.", "\"100.65.")
        .replace("\"aws-0\"", "\"aws-1\"")
        .replace("priv.aws.ogenki.io", "priv1.aws.ogenki.io");
    let path = dir.join("net-1.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn specs_of_one_run_share_each_kinds_read_and_keep_their_own() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let timeline = Arc::new(Timeline::default());
    let endpoints = (moto.endpoint(), "http://127.0.0.1:9".to_string());
    let endpoints = (endpoints.0.as_str(), endpoints.1.as_str());
    let first = spec_engine(
        &network_spec_path(),
        "",
        endpoints,
        &dir.path().join("a.json"),
        &[],
        timeline.observer("aws"),
    )
    .await;
    let second = second_network(dir.path());
    let second = spec_engine(
        &second,
        "",
        endpoints,
        &dir.path().join("b.json"),
        &[],
        timeline.observer("net-1"),
    )
    .await;
    let ws = Workspace::new(vec![first, second]).unwrap();
    let plans = all_ok(ws.plan().await);
    let reports = all_ok(ws.apply(&plans).await);
    assert!(reports.iter().all(|r| r.is_success()), "{reports:?}");

    // A no-op plan of both: each owned-resources read is made once for the two specs, and
    // each spec finds exactly its own 44 resources.
    let plans = all_ok(ws.plan().await);
    for p in &plans {
        assert!(!p.has_changes(), "{}: {:?}", p.spec, p.actions().collect::<Vec<_>>());
        assert_eq!(p.refreshed, 44, "{}", p.spec);
    }
    let calls = |op: &str| -> u64 {
        plans.iter().map(|p| p.api_calls.by_operation.get(op).copied().unwrap_or(0)).sum()
    };
    for op in [
        "ec2:DescribeVpcs",
        "ec2:DescribeSubnets",
        "ec2:DescribeRouteTables",
        "ec2:DescribeNatGateways",
        "ec2:DescribeVpcEndpoints",
    ] {
        assert_eq!(calls(op), 1, "{op} once for both specs");
    }
    // Each spec's state still holds only its own.
    for e in ws.engines() {
        let state = e.state_document().unwrap();
        let vpc = &state.resources["aws.network.vpc.main"];
        let cidr = vpc.attributes["cidr_block"].as_str().unwrap();
        assert_eq!(cidr, if e.name() == "net-1" { "10.1.0.0/16" } else { "10.0.0.0/16" });
    }
    // Drift in one is that spec's only.
    let ec2 = aws_sdk_ec2::Client::new(&moto.sdk_config().await);
    let b = ws.engines()[1].state_document().unwrap();
    let subnet = &b.resources["aws.network.subnet.intra[\"eu-west-3a\"]"].id;
    ec2.create_tags()
        .resources(subnet)
        .tags(aws_sdk_ec2::types::Tag::builder().key("Name").value("renamed").build())
        .send()
        .await
        .unwrap();
    let reports = all_ok(ws.drift(engine::DriftAgainst::Applied).await);
    assert!(reports[0].drifted.is_empty(), "{:?}", reports[0].drifted);
    assert_eq!(reports[1].drifted.len(), 1, "{:?}", reports[1].drifted);
}
