//! The AWS side of the AWS–GCP federation (`[federation]`, in a `shared` spec): IAM OpenID
//! Connect providers for the GCP issuers, and roles their workloads assume with a token of
//! those issuers (`sts:AssumeRoleWithWebIdentity`), each with one inline policy. The reference
//! makes three: `gcp-0-route53-dns` (ExternalDNS on gcp-0 writes the AWS zones),
//! `openbao-standby-seal` (the GCP OpenBao VM reaches the AWS seal key) and
//! `openbao-snapshot-mirror` (the GCS transfer job reads the AWS snapshot bucket).
//!
//! ```toml
//! [federation.providers.gke]
//! url = "https://container.googleapis.com/v1/projects/P/locations/L/clusters/gcp-0"
//! client_ids = ["sts.amazonaws.com"]
//!
//! [federation.roles.gcp-0-route53-dns]
//! provider = "gke"
//! subjects = ["system:serviceaccount:kube-system:external-dns"]
//! statements = [{ actions = ["route53:ChangeResourceRecordSets"], resources = ["arn:aws:route53:::hostedzone/Z1"] }]
//!
//! # Google's own identities (GCE identity tokens, Storage Transfer): AWS trusts them natively,
//! # no IAM provider is made. A subject may be another spec's value, read in the same run.
//! [federation.providers.google]
//! url = "https://accounts.google.com"
//!
//! [federation.roles.openbao-standby-seal]
//! provider = "google"
//! subjects = [{ spec = "gcp", address = "gcp.openbao.service_account.node", attribute = "unique_id" }]
//! statements = [...]
//! ```

use crate::tagging as tags;
use engine::spec::{FieldPath, Globals, SpecError, SpecErrors, SpecSource, TextOrOtherSpec};
use engine::{Address, ResourceSpec, Value};
use serde::Deserialize;
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;

/// Stage prefix of every federation resource.
pub const STAGE: &str = "aws.federation";

/// `[federation]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FederationSpec {
    /// Issuers AWS trusts, by a name the roles use.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderSpec>,
    /// Roles by their IAM name.
    #[serde(default)]
    pub roles: BTreeMap<String, RoleSpec>,
}

/// `[federation.providers.NAME]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSpec {
    /// The issuer URL (`https://...`), as the tokens' `iss` claim says it.
    pub url: String,
    /// The audiences accepted (the tokens' `aud`); optional for Google's own accounts, whose
    /// callers' subjects are service accounts' unique ids.
    #[serde(default)]
    pub client_ids: Vec<String>,
}

/// Google's own accounts' issuer. AWS trusts it without an IAM OpenID Connect provider
/// (`"Federated": "accounts.google.com"`); its condition keys name the token's `aud` claim
/// `oaud` (AWS's `aud` is Google's `azp`).
pub const GOOGLE_ISSUER: &str = "https://accounts.google.com";

impl ProviderSpec {
    fn is_google(&self) -> bool {
        self.url == GOOGLE_ISSUER
    }
}

/// `[federation.roles.NAME]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleSpec {
    /// The provider (a key of `[federation.providers]`) whose tokens assume the role.
    pub provider: String,
    /// The tokens' `sub` claims allowed (`*` and `?` match as in IAM's `StringLike`).
    /// Or another spec's value read in the same run (a service account's unique id: `{ spec =
    /// "gcp", address = "...", attribute = "unique_id" }`).
    pub subjects: Vec<TextOrOtherSpec>,
    /// What the role may do: one inline policy of these statements.
    pub statements: Vec<StatementSpec>,
}

/// One `Allow` statement.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatementSpec {
    pub actions: Vec<String>,
    pub resources: Vec<String>,
    /// An IAM condition block, as IAM writes it (`{ StringEquals = { ... } }`).
    pub condition: Option<toml::Table>,
}

/// Validates `[federation]` (if present) and expands it.
pub fn expand(spec: &SpecSource, globals: &Globals) -> Result<Vec<ResourceSpec>, SpecErrors> {
    let Some(fed) = spec.section::<FederationSpec>("federation")? else {
        return Ok(vec![]);
    };
    spec.errors(validate(spec, &fed)).into_result()?;
    Ok(resources(&spec.name(), globals, &fed))
}

fn validate(spec: &SpecSource, fed: &FederationSpec) -> Vec<SpecError> {
    let root = FieldPath::root("federation");
    let mut errors = Vec::new();
    for (name, p) in &fed.providers {
        let at = root.key("providers").key(name);
        let host = p.url.strip_prefix("https://").unwrap_or_default();
        if host.is_empty() || host.contains(char::is_whitespace) || host.ends_with('/') {
            errors.push(spec.error(
                &at.key("url"),
                format!("`{}` is not an issuer URL (https://host/path, no trailing /)", p.url),
            ));
        }
        let none = p.client_ids.is_empty() && !p.is_google();
        if none || p.client_ids.iter().any(|c| c.trim().is_empty()) {
            errors.push(spec.error(&at.key("client_ids"), "name at least one audience"));
        }
    }
    for (name, r) in &fed.roles {
        let at = root.key("roles").key(name);
        let name_ok = (1..=64).contains(&name.len())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || "+=,.@_-".contains(c));
        if !name_ok {
            errors.push(spec.error(&at, format!("`{name}` is not an IAM role name")));
        }
        if !fed.providers.contains_key(&r.provider) {
            let known: Vec<&str> = fed.providers.keys().map(String::as_str).collect();
            errors.push(spec.error(
                &at.key("provider"),
                format!("no provider `{}` (known: {})", r.provider, known.join(", ")),
            ));
        }
        if r.subjects.is_empty() {
            errors.push(spec.error(
                &at.key("subjects"),
                "name the subjects that may assume the role: without one, any token of the \
                 issuer could",
            ));
        }
        for (i, subject) in r.subjects.iter().enumerate() {
            if subject.is_blank() {
                errors.push(spec.error(
                    &at.key("subjects").index(i),
                    "a subject is a `sub` claim, or { spec, address, attribute } naming another \
                     spec's value, none of them blank",
                ));
            }
        }
        if r.statements.is_empty() {
            errors.push(spec.error(&at.key("statements"), "a role needs at least one statement"));
        }
        for (i, s) in r.statements.iter().enumerate() {
            let empty = |v: &[String]| v.is_empty() || v.iter().any(|x| x.trim().is_empty());
            if empty(&s.actions) || empty(&s.resources) {
                errors.push(spec.error(
                    &at.key("statements").index(i),
                    "a statement needs actions and resources",
                ));
            }
        }
    }
    errors
}

fn addr(rest: &str) -> Address {
    Address::new(format!("{STAGE}.{rest}"))
}

/// A map of one entry.
fn one(key: String, value: Value) -> Value {
    Value::Map(BTreeMap::from([(key, value)]))
}

fn strings(items: &[String]) -> Json {
    Json::Array(items.iter().map(|s| Json::String(s.clone())).collect())
}

fn resources(spec_name: &str, globals: &Globals, fed: &FederationSpec) -> Vec<ResourceSpec> {
    let tag =
        |address: &Address, name: &str| tags::desired(spec_name, address, name, &[&globals.tags]);
    let mut out = Vec::new();
    for (name, p) in fed.providers.iter().filter(|(_, p)| !p.is_google()) {
        let a = addr("iam_openid_connect_provider").index(name);
        out.push(
            ResourceSpec::new(a.clone(), "aws_iam_openid_connect_provider")
                .attr("url", p.url.as_str())
                .attr("client_ids", Value::Json(strings(&p.client_ids)))
                // No thumbprint: AWS checks the issuers against its own trusted CAs.
                .attr("thumbprints", Value::List(vec![]))
                .attr("tags", tag(&a, name)),
        );
    }
    for (name, r) in &fed.roles {
        let Some(p) = fed.providers.get(&r.provider) else { continue };
        let issuer = p.url.trim_start_matches("https://");
        let (federated, audience_key) = match p.is_google() {
            true => (Value::from(issuer), format!("{issuer}:oaud")),
            false => {
                let provider = addr("iam_openid_connect_provider").index(&r.provider);
                (Value::reference(&provider, "arn"), format!("{issuer}:aud"))
            }
        };
        let subjects = Value::List(r.subjects.iter().map(TextOrOtherSpec::value).collect());
        let mut condition =
            BTreeMap::from([("StringLike".to_string(), one(format!("{issuer}:sub"), subjects))]);
        if let Some(audience) = p.client_ids.first() {
            condition
                .insert("StringEquals".into(), one(audience_key, Value::from(audience.as_str())));
        }
        let statement = Value::Map(BTreeMap::from([
            ("Effect".into(), Value::from("Allow")),
            ("Principal".into(), one("Federated".into(), federated)),
            ("Action".into(), Value::from("sts:AssumeRoleWithWebIdentity")),
            ("Condition".into(), Value::Map(condition)),
        ]));
        let trust = Value::Map(BTreeMap::from([
            ("Version".into(), Value::from("2012-10-17")),
            ("Statement".into(), Value::List(vec![statement])),
        ]));
        let role = addr("iam_role").index(name);
        out.push(
            ResourceSpec::new(role.clone(), "aws_iam_role")
                .attr("name", name.as_str())
                .attr("assume_role_policy", trust)
                .attr("tags", tag(&role, name)),
        );
        let statements: Vec<Json> = r
            .statements
            .iter()
            .map(|s| {
                let mut st = json!({
                    "Effect": "Allow",
                    "Action": strings(&s.actions),
                    "Resource": strings(&s.resources),
                });
                if let Some(c) = &s.condition {
                    st["Condition"] = serde_json::to_value(c).unwrap_or(Json::Null);
                }
                st
            })
            .collect();
        out.push(
            ResourceSpec::new(addr("iam_role_policy").index(name), "aws_iam_role_policy")
                .attr("role_name", Value::reference(&role, "name"))
                .attr("name", name.as_str())
                .attr(
                    "policy",
                    Value::Json(json!({ "Version": "2012-10-17", "Statement": statements })),
                ),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::testing::{errors_of, expand_with};

    const GLOBALS: &str = r#"
[globals]
cloud = "aws"
lane = "shared"
region = "eu-west-3"
cluster_name = "gcp-0"
domain = "ogenki.io"
"#;

    const GKE: &str = "https://container.googleapis.com/v1/projects/p/locations/l/clusters/gcp-0";

    fn spec(body: &str) -> String {
        format!(
            "{GLOBALS}\n[federation.providers.gke]\nurl = \"{GKE}\"\nclient_ids = [\"sts.amazonaws.com\"]\n{body}"
        )
    }

    #[test]
    fn a_role_trusts_only_its_subjects_of_its_provider_and_gets_its_statements() {
        let text = spec(
            r#"
[federation.roles.gcp-0-route53-dns]
provider = "gke"
subjects = ["system:serviceaccount:kube-system:external-dns"]
statements = [{ actions = ["route53:ChangeResourceRecordSets"], resources = ["arn:aws:route53:::hostedzone/Z1"] }]
"#,
        );
        let out = expand_with(expand, &text).unwrap();
        let addresses: Vec<&str> = out.iter().map(|r| r.address.as_str()).collect();
        assert_eq!(
            addresses,
            [
                "aws.federation.iam_openid_connect_provider[\"gke\"]",
                "aws.federation.iam_role[\"gcp-0-route53-dns\"]",
                "aws.federation.iam_role_policy[\"gcp-0-route53-dns\"]",
            ]
        );
        let trust = out[1].attributes["assume_role_policy"]
            .resolve(&|r| {
                (r.attribute == "arn")
                    .then(|| Json::String("arn:aws:iam::1:oidc-provider/x".into()))
            })
            .unwrap();
        let statement = &trust["Statement"][0];
        assert_eq!(statement["Principal"]["Federated"], "arn:aws:iam::1:oidc-provider/x");
        assert_eq!(statement["Action"], "sts:AssumeRoleWithWebIdentity");
        let issuer = GKE.trim_start_matches("https://");
        assert_eq!(
            statement["Condition"]["StringEquals"][format!("{issuer}:aud")],
            "sts.amazonaws.com"
        );
        assert_eq!(
            statement["Condition"]["StringLike"][format!("{issuer}:sub")],
            json!(["system:serviceaccount:kube-system:external-dns"])
        );
        let Value::Json(policy) = &out[2].attributes["policy"] else { panic!() };
        assert_eq!(policy["Statement"][0]["Resource"], json!(["arn:aws:route53:::hostedzone/Z1"]));
    }

    #[test]
    fn google_accounts_are_trusted_natively_and_a_subject_may_be_another_specs_value() {
        let text = spec(
            r#"
[federation.providers.google]
url = "https://accounts.google.com"

[federation.roles.openbao-standby-seal]
provider = "google"
subjects = [{ spec = "gcp", address = "gcp.openbao.service_account.node", attribute = "unique_id" }]
statements = [{ actions = ["kms:Decrypt"], resources = ["*"] }]
"#,
        );
        let out = expand_with(expand, &text).unwrap();
        let addresses: Vec<&str> = out.iter().map(|r| r.address.as_str()).collect();
        assert!(
            !addresses.contains(&"aws.federation.iam_openid_connect_provider[\"google\"]"),
            "no IAM provider for Google's own accounts: {addresses:?}"
        );
        let role = out.iter().find(|r| r.kind == "aws_iam_role").unwrap();
        let cross = role.cross_references();
        assert_eq!(cross.len(), 1);
        assert_eq!(cross[0].spec.as_deref(), Some("gcp"));
        assert_eq!(cross[0].address.as_str(), "gcp.openbao.service_account.node");
        assert!(role.dependencies().is_empty(), "no edge of this spec's graph");
        let trust = role.attributes["assume_role_policy"]
            .resolve(&|r| (r.attribute == "unique_id").then(|| json!("1234567890")))
            .unwrap();
        let statement = &trust["Statement"][0];
        assert_eq!(statement["Principal"]["Federated"], "accounts.google.com");
        assert_eq!(
            statement["Condition"]["StringLike"]["accounts.google.com:sub"],
            json!(["1234567890"])
        );
        assert!(statement["Condition"].get("StringEquals").is_none(), "no audience named");
        let blank = spec(
            r#"
[federation.providers.google]
url = "https://accounts.google.com"
[federation.roles.r]
provider = "google"
subjects = [{ spec = "gcp", address = "", attribute = "unique_id" }]
statements = [{ actions = ["kms:Decrypt"], resources = ["*"] }]
"#,
        );
        let errors = errors_of(expand, &blank);
        assert!(errors.contains("federation.roles.r.subjects[0]: a subject is"), "{errors}");
    }

    #[test]
    fn mistakes_name_the_field() {
        let text = spec(
            r#"
[federation.roles."bad name"]
provider = "nope"
subjects = []
statements = [{ actions = [], resources = ["*"] }]
"#,
        );
        let errors = errors_of(expand, &text);
        for expected in [
            "federation.roles.\"bad name\": `bad name` is not an IAM role name",
            "federation.roles.\"bad name\".provider: no provider `nope` (known: gke)",
            "federation.roles.\"bad name\".subjects: name the subjects",
            "federation.roles.\"bad name\".statements[0]: a statement needs actions and resources",
        ] {
            assert!(errors.contains(expected), "{expected} not in:\n{errors}");
        }
        let bad_url = format!(
            "{GLOBALS}\n[federation.providers.x]\nurl = \"http://issuer/\"\nclient_ids = []\n"
        );
        let errors = errors_of(expand, &bad_url);
        assert!(
            errors.contains("federation.providers.x.url: `http://issuer/` is not an issuer URL"),
            "{errors}"
        );
        assert!(
            errors.contains("federation.providers.x.client_ids: name at least one audience"),
            "{errors}"
        );
    }
}
