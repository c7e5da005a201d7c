//! State kept in Cloud Storage (the project's GCP fake) and sealed with Cloud KMS data keys:
//! an AWS network applied with its state in a GCS bucket, leases raced for on generations, and
//! a state moved back to a local file in clear with nothing lost.

use crate::support::{REFERENCE_RESOURCES, exactly_one_wins_each_round, owned, reference_counts};
use engine_gcp::GcsStateStore;
use engine_state::RemoteBackend;
use engine_tests::{GcpFake, Moto, network_spec_path, run_engine, text};
use std::sync::Arc;
use std::time::Duration;

const BUCKET: &str = "engine-state";
const PROJECT: &str = "ogenki-tfstate";
const KEY_NAME: &str =
    "projects/ogenki-tfstate/locations/europe-west4/keyRings/engine-state/cryptoKeys/state";

/// One JSON API call to the fake; panics unless it succeeds.
async fn call(method: reqwest::Method, url: String, body: Option<serde_json::Value>) -> String {
    let mut request = reqwest::Client::new().request(method.clone(), &url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let answer = request.send().await.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let status = answer.status();
    let text = answer.text().await.unwrap();
    assert!(status.is_success(), "{method} {url}: {status} {text}");
    text
}

/// The versioned state bucket and the Cloud KMS key that seals data keys.
async fn state_bucket_and_key(fake: &GcpFake) {
    let base = fake.endpoint();
    let bucket = serde_json::json!({"name": BUCKET, "versioning": {"enabled": true}});
    call(reqwest::Method::POST, format!("{base}/storage/v1/b?project={PROJECT}"), Some(bucket))
        .await;
    let ring = format!("{base}/v1/projects/{PROJECT}/locations/europe-west4/keyRings");
    call(
        reqwest::Method::POST,
        format!("{ring}?keyRingId=engine-state"),
        Some(serde_json::json!({})),
    )
    .await;
    let key = serde_json::json!({"purpose": "ENCRYPT_DECRYPT"});
    call(
        reqwest::Method::POST,
        format!("{ring}/engine-state/cryptoKeys?cryptoKeyId=state"),
        Some(key),
    )
    .await;
}

/// Every stored generation of `key` (live and noncurrent), oldest first, with its bytes.
async fn generations(fake: &GcpFake, key: &str) -> Vec<Vec<u8>> {
    let base = fake.endpoint();
    let listing = call(
        reqwest::Method::GET,
        format!("{base}/storage/v1/b/{BUCKET}/o?versions=true&prefix={key}"),
        None,
    )
    .await;
    let listing: serde_json::Value = serde_json::from_str(&listing).unwrap();
    let mut out = Vec::new();
    for item in listing["items"].as_array().into_iter().flatten().filter(|i| i["name"] == key) {
        let url = format!(
            "{base}/storage/v1/b/{BUCKET}/o/{}?alt=media&generation={}",
            key.replace('/', "%2F"),
            item["generation"].as_str().unwrap()
        );
        out.push(reqwest::get(&url).await.unwrap().bytes().await.unwrap().to_vec());
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_network_kept_in_gcs_sealed_with_cloud_kms_converges_and_migrates_back_to_clear() {
    let moto = Moto::start();
    let fake = GcpFake::start();
    state_bucket_and_key(&fake).await;
    let gcp = [("ENGINE_GCP_ENDPOINT", fake.endpoint())];
    let gcp: Vec<(&str, &str)> = gcp.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = tempfile::tempdir().unwrap();
    let overlay = dir.path().join("state.toml");
    std::fs::write(
        &overlay,
        format!(
            "[state]\nbackend = \"gcs\"\nbucket = \"{BUCKET}\"\nkey = \"aws/network.json\"\n\n\
             [state.encryption]\nmethod = \"gcp_kms\"\nkms_key_id = \"{KEY_NAME}\"\n"
        ),
    )
    .unwrap();
    let spec = network_spec_path();
    let (spec, overlay) = (spec.to_str().unwrap(), overlay.to_str().unwrap());

    let apply = run_engine(
        &moto.endpoint(),
        &["apply", spec, "--overlay", overlay, "--auto-approve"],
        &gcp,
    );
    assert!(apply.status.success(), "{}", text(&apply));
    let stored = generations(&fake, "aws/network.json").await;
    assert!(stored.len() > 2, "each save's previous generation is kept: {}", stored.len());
    let live = String::from_utf8_lossy(stored.last().unwrap()).to_string();
    assert!(live.contains("\"method\": \"gcp_kms\""), "sealed with Cloud KMS: {live}");
    for generation in &stored {
        let text = String::from_utf8_lossy(generation);
        assert!(!text.contains("aws.network.vpc.main") && !text.contains("vpc-"), "{text}");
    }
    assert!(generations(&fake, "aws/network.json.lock").await.len() <= 1);
    let lock = reqwest::get(format!(
        "{}/storage/v1/b/{BUCKET}/o/aws%2Fnetwork.json.lock",
        fake.endpoint()
    ))
    .await
    .unwrap();
    assert_eq!(lock.status().as_u16(), 404, "the lease was released");

    let plan = run_engine(
        &moto.endpoint(),
        &["plan", spec, "--overlay", overlay, "--detailed-exitcode"],
        &gcp,
    );
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    let list = run_engine(
        &moto.endpoint(),
        &["state", "list", "--state", "gs://engine-state/aws/network.json"],
        &gcp,
    );
    assert!(text(&list).contains("aws.network.vpc.main"), "read back: {}", text(&list));
    assert_eq!(owned(&moto).await, reference_counts(), "no duplicates");

    // Back to a local file in clear: every resource, the same lineage, an empty plan.
    let local = dir.path().join("aws.state.json");
    let local = local.to_str().unwrap();
    let moved = run_engine(
        &moto.endpoint(),
        &[
            "state",
            "migrate",
            "--state",
            "gs://engine-state/aws/network.json",
            "--to",
            local,
            "--to-encryption",
            "none",
        ],
        &gcp,
    );
    assert!(moved.status.success(), "{}", text(&moved));
    let back: engine_state::StateDocument =
        serde_json::from_slice(&std::fs::read(local).unwrap()).unwrap();
    assert_eq!(back.resources.len(), REFERENCE_RESOURCES, "nothing lost on the way");
    let plan =
        run_engine(&moto.endpoint(), &["plan", spec, "--state", local, "--detailed-exitcode"], &[]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));

    // OpenTofu's GCS backend keeps `<prefix>/default.tfstate`: import reads it there, and lists
    // what it cannot take over.
    let tofu = serde_json::json!({"version": 4, "resources": [{
        "mode": "managed", "type": "google_compute_network", "name": "vpc",
        "instances": [{"attributes": {"id": "projects/ogenki-435905/global/networks/vpc"}}],
    }]});
    let upload = format!(
        "{}/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name=cloud-native-ref/gcp/network/default.tfstate",
        fake.endpoint()
    );
    let uploaded = reqwest::Client::new().post(upload).body(tofu.to_string()).send().await;
    assert!(uploaded.unwrap().status().is_success());
    let from = "gs://engine-state/cloud-native-ref/gcp/network/default.tfstate";
    let import = run_engine(
        &moto.endpoint(),
        &["import", "--from-tofu", from, spec, "--state", local],
        &gcp,
    );
    assert!(import.status.success(), "{}", text(&import));
    assert!(text(&import).contains("google_compute_network.vpc"), "{}", text(&import));
}

#[tokio::test(flavor = "multi_thread")]
async fn two_clients_racing_for_one_gcs_lease_exactly_one_wins_every_round() {
    let fake = GcpFake::start();
    state_bucket_and_key(&fake).await;
    let endpoint = fake.endpoint();
    let backends: Vec<Arc<RemoteBackend>> = (0..2)
        .map(|_| {
            let store = GcsStateStore::new(BUCKET, Some(&endpoint)).unwrap();
            Arc::new(RemoteBackend::new(Arc::new(store), "race.json", Duration::from_secs(30)))
        })
        .collect();
    let store = GcsStateStore::new(BUCKET, Some(&endpoint)).unwrap();
    assert_eq!(engine_state::ObjectStore::keeps_old_versions(&store), Some(true));
    exactly_one_wins_each_round(&backends, 30);
}
