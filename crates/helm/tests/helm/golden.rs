//! Golden tests: `helm template` (reference binary) and this crate render
//! the same fixture charts with the same inputs; outputs are compared
//! object by object. Objects random by design (generated certificates)
//! are compared structurally and their certificates are verified.
//!
//! As in production, the charts come from an OCI registry: each fixture
//! archive is pushed once into a local registry shared by this module,
//! and every test pulls its chart from there, both with `oci::pull` and
//! with `helm template oci://... --plain-http`.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use base64::Engine as _;
use engine_helm::Chart;
use engine_helm::oci::{self, PullOptions};
use engine_helm::yaml::{Numbers, parse};
use serde_json::Value as Json;

use super::common::{
    Inputs, Registry, fixture, helm_template, helm_template_oci, ours, ours_chart, split_stream,
    values_file,
};
use super::oci::rt;

const NON_IDEMPOTENT: &str = "cilium.io/helm-template-non-idempotent";

fn parse_doc(text: &str) -> Json {
    parse(text, Numbers::Native)
        .map(|v| v.to_json())
        .unwrap_or_else(|e| panic!("invalid YAML document: {e}\n{text}"))
}

fn is_random(doc: &Json) -> bool {
    doc.pointer("/metadata/labels").and_then(|l| l.get(NON_IDEMPOTENT)).is_some()
}

/// Replaces the values of `data` entries (generated material).
fn mask(doc: &Json) -> Json {
    let mut d = doc.clone();
    if let Some(Json::Object(data)) = d.get_mut("data") {
        for v in data.values_mut() {
            *v = Json::String("<random>".into());
        }
    }
    d
}

fn pem_der(b64: &str) -> Vec<u8> {
    let pem =
        base64::engine::general_purpose::STANDARD.decode(b64.trim()).expect("base64 certificate");
    let pem = String::from_utf8(pem).expect("PEM text");
    let (_, parsed) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).expect("PEM block");
    assert_eq!(parsed.label, "CERTIFICATE", "unexpected PEM label");
    parsed.contents
}

/// Every `tls.crt` is signed by the chart's generated CA.
fn verify_certificates(docs: &[(String, Json)]) -> usize {
    let ca_b64 = docs
        .iter()
        .find_map(|(_, d)| d.pointer("/data/ca.crt").and_then(Json::as_str).map(str::to_string));
    let Some(ca_b64) = ca_b64 else { return 0 };
    let ca_der = pem_der(&ca_b64);
    let (_, ca) = x509_parser::parse_x509_certificate(&ca_der).expect("CA certificate");
    assert!(ca.is_ca(), "generated CA is not a CA certificate");
    ca.verify_signature(None).expect("CA is self-signed");
    let mut checked = 0;
    for (src, d) in docs {
        if let Some(c) = d.pointer("/data/ca.crt").and_then(Json::as_str) {
            assert_eq!(pem_der(c), ca_der, "{src}: ca.crt is not the generated CA");
        }
        if let Some(crt) = d.pointer("/data/tls.crt").and_then(Json::as_str) {
            let der = pem_der(crt);
            let (_, cert) = x509_parser::parse_x509_certificate(&der).expect("leaf certificate");
            cert.verify_signature(Some(ca.public_key())).unwrap_or_else(|e| {
                panic!("{src}: tls.crt does not chain to the generated CA: {e:?}")
            });
            assert!(cert.validity().is_valid(), "{src}: certificate not currently valid");
            let key = d.pointer("/data/tls.key").and_then(Json::as_str).expect("tls.key present");
            let key_pem =
                base64::engine::general_purpose::STANDARD.decode(key).expect("base64 key");
            assert!(
                String::from_utf8_lossy(&key_pem).contains("PRIVATE KEY"),
                "{src}: tls.key is not a PEM key"
            );
            checked += 1;
        }
    }
    checked
}

/// The registry shared by the golden tests, started on first use and
/// stopped when the test process exits (see `Registry`), with the
/// references of the fixtures pushed so far.
struct SharedRegistry {
    registry: Registry,
    pushed: Mutex<HashMap<String, (String, String)>>,
}

fn shared_registry() -> &'static SharedRegistry {
    static SHARED: OnceLock<SharedRegistry> = OnceLock::new();
    SHARED.get_or_init(|| SharedRegistry {
        registry: Registry::start(),
        pushed: Mutex::new(HashMap::new()),
    })
}

/// The `oci://` reference and version of a fixture chart in the shared
/// registry, pushing the archive on first use.
fn published(fixture_name: &str) -> (String, String) {
    let shared = shared_registry();
    let mut pushed = shared.pushed.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = pushed.get(fixture_name) {
        return r.clone();
    }
    let archive = std::fs::read(fixture(fixture_name)).expect("read fixture");
    let version =
        Chart::load_tgz_bytes(&archive, fixture_name).expect("load fixture").version().to_string();
    let reference = rt()
        .block_on(oci::push(&archive, &shared.registry.repo(), &PullOptions::default()))
        .unwrap_or_else(|e| panic!("pushing {fixture_name}: {e}"));
    let entry = (reference, version);
    pushed.insert(fixture_name.to_string(), entry.clone());
    entry
}

fn golden(chart: &str, values: &[&str], sets: &[&str]) {
    golden_with(chart, values, sets, false);
}

fn golden_with(chart: &str, values: &[&str], sets: &[&str], ecdsa_keys: bool) {
    let (reference, version) = published(chart);
    let inp = Inputs {
        values: values.iter().map(|v| values_file(v)).collect(),
        sets: sets.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    // The chart reference without its tag, as `helm template` takes it.
    let untagged = reference.rsplit_once(':').map(|(r, _)| r).expect("tagged reference");
    let expected = helm_template_oci(untagged, &version, &inp)
        .unwrap_or_else(|e| panic!("helm template {untagged} failed: {e}"));
    let pulled = rt()
        .block_on(oci::pull(&reference, &PullOptions::default()))
        .unwrap_or_else(|e| panic!("pulling {reference}: {e}"));
    let mine = ours_chart(&pulled, &Inputs { ecdsa_keys, ..inp.clone() })
        .unwrap_or_else(|e| panic!("engine-helm render failed: {e}"));
    let a = split_stream(&expected);
    let b = split_stream(&mine);
    let sources_a: Vec<&str> = a.iter().map(|(s, _)| s.as_str()).collect();
    let sources_b: Vec<&str> = b.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(sources_a, sources_b, "documents differ in number, source or order");
    assert!(!a.is_empty(), "helm rendered no document");
    let mut random = Vec::new();
    let mut exact = 0;
    for ((src, ta), (_, tb)) in a.iter().zip(b.iter()) {
        let ja = parse_doc(ta);
        let jb = parse_doc(tb);
        if is_random(&ja) {
            assert!(is_random(&jb), "{src}: non-idempotent label missing");
            assert_eq!(mask(&ja), mask(&jb), "{src}: generated object differs structurally");
            random.push((src.clone(), jb));
            continue;
        }
        assert_eq!(ja, jb, "{src}: object differs");
        assert_eq!(ta, tb, "{src}: text differs");
        exact += 1;
    }
    let verified = verify_certificates(&random);
    if !random.is_empty() {
        assert!(verified > 0, "generated secrets found but no certificate verified");
    }
    eprintln!(
        "{chart} {values:?}: {} documents, {exact} identical, {} generated ({verified} certificates verified)",
        a.len(),
        random.len()
    );
}

#[test]
fn flux_operator_defaults() {
    golden("flux-operator-0.49.0.tgz", &[], &[]);
}

#[test]
fn flux_operator_features() {
    golden("flux-operator-0.49.0.tgz", &["flux-operator-features.yaml"], &[]);
}

#[test]
fn flux_instance_defaults() {
    golden("flux-instance-0.49.0.tgz", &[], &[]);
}

#[test]
fn flux_instance_platform() {
    golden("flux-instance-0.49.0.tgz", &["flux-instance.yaml"], &[]);
}

#[test]
fn flux_instance_platform_with_sets() {
    golden(
        "flux-instance-0.49.0.tgz",
        &["flux-instance.yaml"],
        &[
            "instance.cluster.size=large",
            "instance.sharding.shards[0]=shard1,instance.sharding.shards[1]=shard2",
        ],
    );
}

#[test]
fn cilium_1_20_defaults() {
    golden("cilium-1.20.0.tgz", &[], &[]);
}

#[test]
fn cilium_1_20_aws() {
    golden("cilium-1.20.0.tgz", &["cilium-aws.yaml"], &[]);
}

#[test]
fn cilium_1_20_gcp() {
    golden("cilium-1.20.0.tgz", &["cilium-gcp.yaml"], &[]);
}

#[test]
fn cilium_1_20_features() {
    golden("cilium-1.20.0.tgz", &["cilium-features.yaml"], &[]);
}

#[test]
fn cilium_1_19_defaults() {
    golden("cilium-1.19.6.tgz", &[], &[]);
}

#[test]
fn cilium_1_19_aws() {
    golden("cilium-1.19.6.tgz", &["cilium-aws.yaml"], &[]);
}

#[test]
fn cilium_1_19_gcp() {
    golden("cilium-1.19.6.tgz", &["cilium-gcp.yaml"], &[]);
}

#[test]
fn cilium_1_19_features() {
    golden("cilium-1.19.6.tgz", &["cilium-features.yaml"], &[]);
}

#[test]
fn cilium_1_20_features_with_ecdsa_keys() {
    golden_with("cilium-1.20.0.tgz", &["cilium-features.yaml"], &[], true);
}

#[test]
fn cilium_1_20_aws_plus_features_and_sets() {
    golden(
        "cilium-1.20.0.tgz",
        &["cilium-aws.yaml", "cilium-features.yaml"],
        &["hubble.relay.replicas=3", "operator.replicas=1", "cluster.name=aws-0"],
    );
}

/// The whole values of each fixture chart through toYaml / toJson /
/// toPrettyJson / toToml-free paths: a large corpus for the YAML reader
/// (YAML 1.1 scalars) and writer (quoting, folding, key order).
#[test]
fn fixture_values_serialisation() {
    for name in [
        "cilium-1.20.0.tgz",
        "cilium-1.19.6.tgz",
        "flux-operator-0.49.0.tgz",
        "flux-instance-0.49.0.tgz",
    ] {
        let chart = engine_helm::Chart::load_tgz(fixture(name)).expect("load fixture");
        let values_yaml = chart
            .files
            .iter()
            .find(|f| f.name == "values.yaml")
            .map(|f| String::from_utf8_lossy(&f.data).into_owned());
        // values.yaml is not kept in `files`; re-read it from the archive.
        let values_yaml =
            values_yaml.unwrap_or_else(|| read_from_tgz(&fixture(name), "values.yaml"));
        let templates = vec![
            ("yaml.yaml".to_string(), "v: |2+\n{{ toYaml .Values | indent 2 }}\n".to_string()),
            ("json.yaml".to_string(), "v: |2+\n{{ toJson .Values | indent 2 }}\n".to_string()),
            (
                "pretty.yaml".to_string(),
                "v: |2+\n{{ toPrettyJson .Values | indent 2 }}\n".to_string(),
            ),
            ("raw.yaml".to_string(), "v: |2+\n{{ toRawJson .Values | indent 2 }}\n".to_string()),
            (
                "print.yaml".to_string(),
                "v: |2+\n{{ printf \"%v\" .Values | indent 2 }}\n".to_string(),
            ),
        ];
        let dir = super::common::temp_chart("values", &values_yaml, &templates);
        let root = dir.path().join("values");
        let h = helm_template(&root, &Inputs::default())
            .unwrap_or_else(|e| panic!("{name}: helm failed: {e}"));
        let o = ours(&root, &Inputs::default())
            .unwrap_or_else(|e| panic!("{name}: engine-helm failed: {e}"));
        for ((src, a), (_, b)) in split_stream(&h).iter().zip(split_stream(&o).iter()) {
            if a != b {
                let line = a.lines().zip(b.lines()).position(|(x, y)| x != y).unwrap_or(0);
                panic!(
                    "{name} {src}: differs at line {}\n  helm: {:?}\n  ours: {:?}",
                    line + 1,
                    a.lines().nth(line),
                    b.lines().nth(line)
                );
            }
        }
        eprintln!("{name}: values serialisation identical ({} bytes of YAML)", values_yaml.len());
    }
}

fn read_from_tgz(path: &std::path::Path, file: &str) -> String {
    use std::io::Read as _;
    let f = std::fs::File::open(path).expect("open");
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(f));
    for e in ar.entries().expect("entries") {
        let mut e = e.expect("entry");
        let p = e.path().expect("path").to_string_lossy().into_owned();
        if p.split_once('/').map(|(_, r)| r) == Some(file) {
            let mut s = String::new();
            e.read_to_string(&mut s).expect("read");
            return s;
        }
    }
    panic!("{file} not found in {}", path.display());
}
