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
        &["gcp.bootstrap", "gcp.openbao"],
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
    assert_eq!(federation_done.len(), 3, "provider, role, policy");
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

    // Converged: nothing to do anywhere.
    let plans = all_ok(ws.plan().await);
    for p in &plans {
        assert!(
            !p.has_changes(),
            "{}: {:?}",
            p.spec,
            p.actions().map(|c| &c.address).collect::<Vec<_>>()
        );
    }

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
    for e in ws.engines() {
        assert!(e.state_document().unwrap().resources.is_empty(), "{}", e.name());
    }
}
