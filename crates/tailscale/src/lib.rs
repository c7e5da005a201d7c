//! The tailnet-wide pieces of private access (the reference's `shared/tailscale`): the
//! tailnet's policy file, its DNS nameservers and search paths, and split DNS (a domain's
//! nameservers, e.g. a VPC's resolver for its private zone), as resource kinds on Tailscale's
//! public API v2 ([`client`]).
//!
//! ```toml
//! [tailnet]
//! policy_file = "tailscale/policy.hujson"   # beside the spec; HuJSON or JSON
//! nameservers = ["1.1.1.1", "8.8.8.8"]
//! search_paths = ["priv.aws.ogenki.io", "priv.gcp.ogenki.io"]
//! split_dns = { "priv.aws.ogenki.io" = ["10.0.0.2"] }
//! ```
//!
//! Addresses `tailscale.policy_file`, `tailscale.dns.nameservers`,
//! `tailscale.dns.search_paths`, `tailscale.dns.split["<domain>"]`. They are tailnet-wide, so
//! protected: a destroy keeps them unless the run confirms it (the CLI takes
//! `ENGINE_TAILNET_DESTROY=true`, the reference's `TM_TAILNET_DESTROY=true`, or
//! `--confirm-protected`; [`destroy_confirmed`]).

mod auth_key;
pub mod client;
mod dns;
pub mod hujson;
mod policy_file;

pub use auth_key::KeyStore;
pub use client::{TailscaleClient, TailscaleConfig};

use engine::spec::{FieldPath, SpecError, SpecErrors, SpecSource};
use engine::{Address, ApiCallCounter, ApiCalls, Kind, Provider, ResourceSpec, Typed, Value};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Address prefix of every tailnet resource.
pub const STAGE: &str = "tailscale";

/// The variables that confirm a destroy of the tailnet-wide pieces.
pub const DESTROY_CONFIRMATIONS: [&str; 2] = ["ENGINE_TAILNET_DESTROY", "TM_TAILNET_DESTROY"];

/// `[tailnet]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TailnetSpec {
    /// The policy file (HuJSON or JSON), relative to the spec's directory.
    pub policy_file: Option<String>,
    /// Replace a policy file that is not the tailnet's default when first applied.
    #[serde(default)]
    pub take_over_policy: bool,
    /// The tailnet's global nameservers (IP addresses).
    pub nameservers: Option<Vec<String>>,
    pub search_paths: Option<Vec<String>>,
    /// Domain → its nameservers.
    #[serde(default)]
    pub split_dns: BTreeMap<String, Vec<String>>,
}

/// Expands `[tailnet]` into the kinds of this crate.
pub struct TailscaleProvider {
    lane: &'static str,
    client: TailscaleClient,
    calls: ApiCallCounter,
    keys: Option<Arc<dyn KeyStore>>,
}

impl TailscaleProvider {
    /// A provider of `lane` reaching the API as `config` says. Makes no call.
    pub fn new(lane: &'static str, config: TailscaleConfig) -> Result<Self, String> {
        let calls = ApiCallCounter::default();
        let client = TailscaleClient::new(config, calls.clone())?;
        Ok(TailscaleProvider { lane, client, calls, keys: None })
    }

    /// Where `tailscale_auth_key` keeps the keys it makes (the lane's cloud secret store).
    pub fn key_store(mut self, store: Arc<dyn KeyStore>) -> Self {
        self.keys = Some(store);
        self
    }
}

/// Whether the environment (`get` reads a variable) confirms a destroy of the tailnet-wide
/// pieces: what the CLI then runs with as `--confirm-protected` for the spec that holds
/// `[tailnet]`.
pub fn destroy_confirmed(get: &dyn Fn(&str) -> Option<String>) -> bool {
    DESTROY_CONFIRMATIONS.iter().any(|v| get(v).is_some_and(|x| x == "true"))
}

fn addr(rest: &str) -> Address {
    Address::new(format!("{STAGE}.{rest}"))
}

impl Provider for TailscaleProvider {
    fn lane(&self) -> &'static str {
        self.lane
    }

    fn sections(&self) -> &'static [&'static str] {
        &["tailnet"]
    }

    fn expand(&self, spec: &SpecSource) -> Result<Vec<ResourceSpec>, SpecErrors> {
        let Some(tailnet) = spec.section::<TailnetSpec>("tailnet")? else {
            return Ok(vec![]);
        };
        let (out, errors) = expand(spec, &tailnet);
        if errors.is_empty() { Ok(out) } else { Err(spec.errors(errors)) }
    }

    fn kinds(&self) -> Vec<Arc<dyn Kind>> {
        let c = &self.client;
        vec![
            Arc::new(Typed(policy_file::PolicyFileKind(c.clone()))),
            Arc::new(Typed(dns::NameserversKind(c.clone()))),
            Arc::new(Typed(dns::SearchPathsKind(c.clone()))),
            Arc::new(Typed(dns::SplitDnsKind(c.clone()))),
            Arc::new(Typed(auth_key::AuthKeyKind { client: c.clone(), store: self.keys.clone() })),
        ]
    }

    fn api_calls(&self) -> ApiCalls {
        self.calls.snapshot()
    }
}

/// The resources of `[tailnet]`, protected (tailnet-wide); and the mistakes, each naming its
/// field.
fn expand(spec: &SpecSource, tailnet: &TailnetSpec) -> (Vec<ResourceSpec>, Vec<SpecError>) {
    let root = FieldPath::root("tailnet");
    let mut errors = Vec::new();
    let mut out = Vec::new();
    if let Some(file) = &tailnet.policy_file {
        let path = spec.directory().join(file);
        let policy = std::fs::read_to_string(&path)
            .map_err(|e| format!("reading {}: {e}", path.display()))
            .and_then(|text| hujson::parse(&text).map_err(|e| format!("{}: {e}", path.display())));
        match policy {
            Ok(policy) if policy.is_object() => out.push(
                ResourceSpec::new(addr("policy_file"), "tailscale_policy_file")
                    .attr("policy", Value::Json(policy))
                    .attr("take_over", tailnet.take_over_policy),
            ),
            Ok(_) => {
                errors.push(spec.error(&root.key("policy_file"), "the policy must be an object"))
            }
            Err(e) => errors.push(spec.error(&root.key("policy_file"), e)),
        }
    }
    let address_like = |s: &str| s.parse::<std::net::IpAddr>().is_ok();
    if let Some(servers) = &tailnet.nameservers {
        for (i, s) in servers.iter().enumerate().filter(|(_, s)| !address_like(s)) {
            errors.push(
                spec.error(
                    &root.key("nameservers").index(i),
                    format!("`{s}` is not an IP address"),
                ),
            );
        }
        out.push(
            ResourceSpec::new(addr("dns.nameservers"), "tailscale_dns_nameservers")
                .attr("nameservers", strings(servers)),
        );
    }
    if let Some(paths) = &tailnet.search_paths {
        for (i, p) in paths.iter().enumerate().filter(|(_, p)| !domain_like(p)) {
            errors.push(
                spec.error(&root.key("search_paths").index(i), format!("`{p}` is not a domain")),
            );
        }
        out.push(
            ResourceSpec::new(addr("dns.search_paths"), "tailscale_dns_search_paths")
                .attr("search_paths", strings(paths)),
        );
    }
    for (domain, servers) in &tailnet.split_dns {
        let at = root.key("split_dns").key(domain);
        if !domain_like(domain) {
            errors.push(spec.error(&at, format!("`{domain}` is not a domain")));
        }
        if servers.is_empty() || servers.iter().any(|s| !address_like(s)) {
            errors.push(spec.error(&at, "name the domain's nameservers by IP address"));
        }
        out.push(
            ResourceSpec::new(addr("dns.split").index(domain), "tailscale_dns_split")
                .attr("domain", domain.as_str())
                .attr("nameservers", strings(servers)),
        );
    }
    for r in &mut out {
        r.protected = true;
    }
    (out, errors)
}

fn domain_like(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.')
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
}

fn strings(items: &[String]) -> Value {
    Value::List(items.iter().map(|s| Value::from(s.as_str())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_in(dir: &std::path::Path, body: &str) -> SpecSource {
        let text = format!(
            "[globals]\ncloud = \"aws\"\nlane = \"shared\"\nregion = \"eu-west-3\"\ncluster_name = \"x\"\ndomain = \"ogenki.io\"\n{body}"
        );
        let path = dir.join("tailscale.toml");
        std::fs::write(&path, text).unwrap();
        SpecSource::from_file(&path).unwrap()
    }

    #[test]
    fn the_tailnet_is_protected_and_its_destroy_confirmed_by_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("policy.hujson"), "{\n // admins\n \"acls\": [],\n}\n")
            .unwrap();
        let spec = spec_in(
            dir.path(),
            "[tailnet]\npolicy_file = \"policy.hujson\"\nsearch_paths = [\"priv.aws.ogenki.io\"]\nsplit_dns = { \"priv.aws.ogenki.io\" = [\"10.0.0.2\"] }\n",
        );
        let tailnet = spec.section::<TailnetSpec>("tailnet").unwrap().unwrap();
        let (out, errors) = expand(&spec, &tailnet);
        assert!(errors.is_empty(), "{errors:?}");
        let addresses: Vec<&str> = out.iter().map(|r| r.address.as_str()).collect();
        assert_eq!(
            addresses,
            [
                "tailscale.policy_file",
                "tailscale.dns.search_paths",
                "tailscale.dns.split[\"priv.aws.ogenki.io\"]"
            ]
        );
        assert!(out.iter().all(|r| r.protected));
        assert_eq!(out[0].attributes["policy"], Value::Json(serde_json::json!({"acls": []})));
        assert!(destroy_confirmed(&|k| (k == "TM_TAILNET_DESTROY").then(|| "true".into())));
        assert!(!destroy_confirmed(&|_| Some("yes".into())));
    }

    #[test]
    fn mistakes_name_the_field_and_the_policy_files_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bad.hujson"), "{\n \"acls\": [\n}\n").unwrap();
        let spec = spec_in(
            dir.path(),
            "[tailnet]\npolicy_file = \"bad.hujson\"\nnameservers = [\"one.one\"]\nsplit_dns = { \"bad domain\" = [] }\n",
        );
        let tailnet = spec.section::<TailnetSpec>("tailnet").unwrap().unwrap();
        let (_, errors) = expand(&spec, &tailnet);
        let shown: Vec<String> =
            errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
        let shown = shown.join("\n");
        assert!(
            shown.contains("tailnet.policy_file: ") && shown.contains("bad.hujson: line 3"),
            "{shown}"
        );
        assert!(
            shown.contains("tailnet.nameservers[0]: `one.one` is not an IP address"),
            "{shown}"
        );
        assert!(shown.contains("`bad domain` is not a domain"), "{shown}");
        assert!(shown.contains("name the domain's nameservers by IP address"), "{shown}");
        assert!(errors.iter().all(|e| e.line > 0), "each points at its line");
    }
}
