//! `[openbao]` -> resources under an address prefix given by the lane (`aws.openbao.config`):
//! OpenBao's TLS certificate, init, mounts, policies, the PKI intermediate and roles, userpass
//! users, JWT mounts with their config and roles, with the edges between them. Pure: files are
//! read beforehand by [`OpenBaoConfig::load_files`].

use crate::contents::Declared;
use crate::spec::OpenBaoConfig;
use engine::{Address, ResourceSpec, Value};
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// The issuer of the cluster the spec makes, for JWT mounts with `cluster_issuer = true`:
/// references to the cluster resource's outputs (or known values).
#[derive(Debug, Clone)]
pub struct ClusterIssuer {
    /// The spec section that makes the cluster (`eks`): an issuer that refers to the cluster's
    /// outputs can be trusted only when the spec has that section.
    pub section: &'static str,
    /// The issuer URL (also the discovery URL).
    pub url: Value,
    /// The CA bundle of the discovery endpoint, when it is not publicly trusted.
    pub ca_pem: Option<Value>,
}

impl ClusterIssuer {
    /// Whether the issuer is known: given as values, or made by the spec's cluster section.
    pub fn is_known(&self, spec_has_section: bool) -> bool {
        let given = self.url.references().is_empty()
            && self.ca_pem.as_ref().is_none_or(|c| c.references().is_empty());
        given || spec_has_section
    }
}

fn strings(items: &[String]) -> Value {
    Value::List(items.iter().map(|s| Value::from(s.as_str())).collect())
}

/// Expands a validated config into resources under `prefix` (`aws.openbao.config`), with JWT
/// mounts marked `cluster_issuer` bound to `cluster` (left out when there is none).
pub fn expand(
    config: &OpenBaoConfig,
    prefix: &str,
    cluster: Option<&ClusterIssuer>,
) -> Vec<ResourceSpec> {
    let addr = |rest: &str| Address::new(format!("{prefix}.{rest}"));
    let mut out = Vec::new();
    let mut declared = Declared::default();
    if let Some(t) = &config.tls {
        let bundle = t
            .bundle_secret
            .clone()
            .or_else(|| config.pki.as_ref().map(|p| p.bundle_secret.clone()))
            .unwrap_or_default();
        let mut r = ResourceSpec::new(addr("tls"), "openbao_server_tls")
            .attr("secret", t.secret.as_str())
            .attr("bundle_secret", bundle)
            .attr("dns_names", strings(&t.dns_names))
            .attr("valid", true);
        if let Some(days) = t.renew_before_days {
            r = r.attr("renew_before_days", days);
        }
        out.push(r);
    }
    let init = config.init.as_ref().map(|i| {
        let a = addr("init");
        out.push(
            ResourceSpec::new(a.clone(), "openbao_init")
                .attr("secret_prefix", i.secret_prefix.as_str())
                .attr("root_token_secret", i.root_token_ref().to_string())
                .attr("recovery_keys_secret", i.recovery_keys_ref().to_string())
                .attr("unseal_keys_secret", i.unseal_keys_ref().to_string())
                .attr("shares", i.shares)
                .attr("threshold", i.threshold)
                .attr("sealed", false)
                .attr("credentials_stored", true),
        );
        a
    });
    let after_init = |r: ResourceSpec| match &init {
        Some(i) => r.after(i),
        None => r,
    };

    let mut mounts = BTreeMap::new();
    for (path, m) in &config.mounts {
        let a = addr("mount").index(path);
        let (kind, mut options) = match m.kind.as_str() {
            "kv-v2" => ("kv", BTreeMap::from([("version".to_string(), "2".to_string())])),
            other => (other, BTreeMap::new()),
        };
        options.extend(m.options.clone());
        let mut r = ResourceSpec::new(a.clone(), "openbao_mount")
            .attr("path", path.as_str())
            .attr("type", kind)
            .attr("description", m.description.clone().unwrap_or_default())
            .attr("options", Value::string_map(options.iter()));
        if let Some(t) = m.default_lease_ttl {
            r = r.attr("default_lease_ttl", t.0);
        }
        if let Some(t) = m.max_lease_ttl {
            r = r.attr("max_lease_ttl", t.0);
        }
        // Disabling a kv mount deletes its secrets: a destroy forgets it instead, unless asked.
        r.retained = kind == "kv";
        out.push(after_init(r));
        mounts.insert(path.clone(), a);
        declared.mounts.insert(path.clone());
    }

    let mut policies = BTreeMap::new();
    for (name, text) in config.policy_texts() {
        let a = addr("policy").index(&name);
        out.push(after_init(
            ResourceSpec::new(a.clone(), "openbao_policy")
                .attr("name", name.as_str())
                .attr("policy", text.as_str()),
        ));
        declared.policies.insert(name.clone());
        policies.insert(name, a);
    }
    let after_policies = |mut r: ResourceSpec, names: &[String]| {
        for n in names {
            if let Some(p) = policies.get(n) {
                r = r.after(p);
            }
        }
        r
    };

    if let Some(p) = &config.pki {
        let a = addr("pki_intermediate").index(&p.mount);
        let mut r = ResourceSpec::new(a.clone(), "openbao_pki_intermediate")
            .attr("mount", p.mount.as_str())
            .attr("bundle_secret", p.bundle_secret.as_str())
            .attr("issuer_name", p.issuer_name.as_str());
        if let Some(cert) = config.certificate() {
            r = r.attr("certificate", cert.trim().to_string());
        }
        if let Some(m) = mounts.get(&p.mount) {
            r = r.after(m);
        }
        out.push(after_init(r));
        let roles = p.roles.keys().cloned().collect();
        declared.entries.insert(format!("{}/roles", p.mount), roles);
        for (name, role) in &p.roles {
            let mut r = ResourceSpec::new(addr("pki_role").index(name), "openbao_pki_role")
                .attr("mount", p.mount.as_str())
                .attr("name", name.as_str())
                .attr("issuer_ref", role.issuer_ref.as_str())
                .attr("allowed_domains", strings(&role.allowed_domains))
                .attr("allow_subdomains", role.allow_subdomains)
                .attr("allow_bare_domains", role.allow_bare_domains)
                .attr("allow_glob_domains", role.allow_glob_domains)
                .attr("allow_any_name", role.allow_any_name)
                .attr("allow_localhost", role.allow_localhost)
                .attr("allow_ip_sans", role.allow_ip_sans)
                .attr("enforce_hostnames", role.enforce_hostnames)
                .attr("server_flag", role.server_flag)
                .attr("client_flag", role.client_flag)
                .attr("key_type", role.key_type.as_str())
                // A role that signs any key type records no size.
                .attr("key_bits", if role.key_type == "any" { 0 } else { role.key_bits })
                .attr("ttl", role.ttl.0)
                .attr("max_ttl", role.max_ttl.0)
                .attr("organization", strings(&role.organization))
                .attr("country", strings(&role.country))
                .attr("key_usage", strings(&role.key_usage))
                .after(&a);
            if let Some(m) = mounts.get(&p.mount) {
                r = r.after(m);
            }
            out.push(after_init(r));
        }
    }

    for (name, g) in &config.identity_groups {
        // An alias on a JWT mount the spec leaves out waits for it.
        let alias = g.alias.as_ref().filter(|a| config.jwt.get(&a.mount).is_none_or(|j| j.enabled));
        let (alias_name, alias_mount) =
            alias.map_or((String::new(), String::new()), |a| (a.name.clone(), a.mount.clone()));
        let mut r = ResourceSpec::new(addr("identity_group").index(name), "openbao_identity_group")
            .attr("name", name.as_str())
            .attr("policies", strings(&g.policies))
            .attr("alias_name", alias_name)
            .attr("alias_mount", alias_mount.as_str());
        if !alias_mount.is_empty() {
            r = r.after_if_present(&addr("auth").index(&alias_mount));
        }
        out.push(after_init(after_policies(r, &g.policies)));
    }

    if let Some(a) = config.effective_autopilot() {
        out.push(after_init(
            ResourceSpec::new(addr("raft_autopilot"), "openbao_raft_autopilot")
                .attr("cleanup_dead_servers", a.cleanup_dead_servers)
                .attr("dead_server_last_contact_threshold", a.dead_server_last_contact_threshold.0)
                .attr("min_quorum", a.min_quorum),
        ));
    }

    if let Some(u) = &config.userpass {
        let auth = addr("auth").index(&u.mount);
        out.push(after_init(
            ResourceSpec::new(auth.clone(), "openbao_auth")
                .attr("path", u.mount.as_str())
                .attr("type", "userpass")
                .attr("description", u.description.clone().unwrap_or_default()),
        ));
        declared.auth.insert(u.mount.clone());
        let users = u.users.keys().cloned().collect();
        declared.entries.insert(format!("auth/{}/users", u.mount), users);
        let prefix = config.init.as_ref().map(|i| i.secret_prefix.as_str()).unwrap_or("openbao");
        for (name, user) in &u.users {
            let secret =
                user.password_secret.clone().unwrap_or_else(|| format!("{prefix}/userpass/{name}"));
            let mut r =
                ResourceSpec::new(addr("userpass_user").index(name), "openbao_userpass_user")
                    .attr("mount", u.mount.as_str())
                    .attr("username", name.as_str())
                    .attr("token_policies", strings(&user.policies))
                    .attr("password_secret", secret)
                    .after(&auth);
            if let Some(t) = user.token_ttl {
                r = r.attr("token_ttl", t.0);
            }
            if let Some(t) = user.token_max_ttl {
                r = r.attr("token_max_ttl", t.0);
            }
            out.push(after_init(after_policies(r, &user.policies)));
        }
    }

    for (mount, j) in &config.jwt {
        if (j.cluster_issuer && cluster.is_none()) || !j.enabled {
            continue;
        }
        declared.auth.insert(mount.clone());
        let roles = j.roles.keys().cloned().collect();
        declared.entries.insert(format!("auth/{mount}/role"), roles);
        let auth = addr("auth").index(mount);
        out.push(after_init(
            ResourceSpec::new(auth.clone(), "openbao_auth")
                .attr("path", mount.as_str())
                .attr("type", j.auth_type.as_str())
                .attr("description", j.description.clone().unwrap_or_default()),
        ));
        let cfg = addr("jwt_config").index(mount);
        let mut r = ResourceSpec::new(cfg.clone(), "openbao_jwt_config")
            .attr("mount", mount.as_str())
            .attr("bound_issuer", j.bound_issuer.clone().unwrap_or_default())
            .attr("default_role", j.default_role.clone().unwrap_or_default())
            .after(&auth);
        if let Some(secret) = &j.credentials_secret {
            r = r.attr("credentials_secret", secret.as_str());
        }
        if let (true, Some(c)) = (j.cluster_issuer, cluster) {
            r = r
                .attr("oidc_discovery_url", c.url.clone())
                .attr("bound_issuer", c.url.clone())
                .attr("oidc_discovery_ca_pem", c.ca_pem.clone().unwrap_or(Value::from("")));
        } else if let Some(url) = &j.oidc_discovery_url {
            r = r
                .attr("oidc_discovery_url", url.as_str())
                .attr("oidc_discovery_ca_pem", j.oidc_discovery_ca_pem.clone().unwrap_or_default());
        } else {
            r = r.attr(
                "jwt_validation_pubkeys",
                Value::List(
                    j.jwt_validation_pubkeys.iter().map(|k| Value::from(k.trim())).collect(),
                ),
            );
        }
        out.push(after_init(r));
        for (name, role) in &j.roles {
            let mut r = ResourceSpec::new(
                addr("jwt_role").index(&format!("{mount}/{name}")),
                "openbao_jwt_role",
            )
            .attr("mount", mount.as_str())
            .attr("name", name.as_str())
            .attr("role_type", role.role_type.as_str())
            .attr("bound_audiences", strings(&role.bound_audiences))
            .attr("user_claim", role.user_claim.as_str())
            .attr("bound_subject", role.bound_subject.clone().unwrap_or_default())
            .attr("token_policies", strings(&role.token_policies))
            .after(&cfg);
            if !role.bound_claims.is_empty() {
                r = r.attr(
                    "bound_claims",
                    Value::Json(Json::Object(
                        role.bound_claims.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    )),
                );
            }
            if let Some(t) = role.token_ttl {
                r = r.attr("token_ttl", t.0);
            }
            if let Some(t) = role.token_max_ttl {
                r = r.attr("token_max_ttl", t.0);
            }
            if let Some(t) = &role.token_type {
                r = r.attr("token_type", t.as_str());
            }
            if role.role_type == "oidc" {
                r = r
                    .attr("allowed_redirect_uris", strings(&role.allowed_redirect_uris))
                    .attr("groups_claim", role.groups_claim.clone().unwrap_or_default())
                    .attr("oidc_scopes", strings(&role.oidc_scopes));
            }
            out.push(after_init(after_policies(r, &role.token_policies)));
        }
    }
    // A server the spec initialises is the engine's whole: what it holds beyond the above is
    // watched (see `contents.rs`).
    if init.is_some() {
        let none = || Value::List(vec![]);
        out.push(after_init(
            ResourceSpec::new(addr("contents"), "openbao_contents")
                .attr("declared", Value::Json(crate::contents::desired(&declared)))
                .attr("foreign_policies", none())
                .attr("foreign_mounts", none())
                .attr("foreign_auth", none())
                .attr("foreign_entries", none()),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"
[init]
secret_prefix = "openbao/aws-0"

[mounts.platform]
type = "kv-v2"
description = "platform secrets"
[mounts.pki_private_issuer]
type = "pki"
max_lease_ttl = "5y"

[policies]
dir = "policies"
inline = { reader = 'path "platform/*" { capabilities = ["read"] }' }

[pki]
bundle_secret = "openbao/pki/intermediate-aws"
[pki.roles.ogenki]
allowed_domains = ["priv.example.test"]

[userpass.users.admin]
policies = ["admin"]

[jwt."jwt/aws-0"]
oidc_discovery_url = "https://issuer.example.test"
bound_issuer = "https://issuer.example.test"
[jwt."jwt/aws-0".roles.cert-manager]
bound_audiences = ["openbao"]
bound_subject = "system:serviceaccount:cert-manager:cert-manager"
token_policies = ["admin"]
token_ttl = 600
token_max_ttl = "20m"
"#;

    fn loaded() -> (tempfile::TempDir, OpenBaoConfig) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("policies")).unwrap();
        std::fs::write(
            dir.path().join("policies/admin.hcl"),
            "# all\npath \"*\" {\n  capabilities = [\"sudo\"]\n}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("policies/README.md"), "not a policy").unwrap();
        let mut config: OpenBaoConfig = toml::from_str(SPEC).unwrap();
        config.load_files(dir.path()).unwrap();
        (dir, config)
    }

    #[test]
    fn expands_to_addressed_resources_with_edges() {
        let (_dir, config) = loaded();
        let resources = expand(&config, "aws.openbao.config", None);
        let names: Vec<String> = resources.iter().map(|r| r.address.to_string()).collect();
        assert_eq!(
            names,
            vec![
                "aws.openbao.config.init",
                "aws.openbao.config.mount[\"pki_private_issuer\"]",
                "aws.openbao.config.mount[\"platform\"]",
                "aws.openbao.config.policy[\"admin\"]",
                "aws.openbao.config.policy[\"reader\"]",
                "aws.openbao.config.pki_intermediate[\"pki_private_issuer\"]",
                "aws.openbao.config.pki_role[\"ogenki\"]",
                "aws.openbao.config.auth[\"userpass\"]",
                "aws.openbao.config.userpass_user[\"admin\"]",
                "aws.openbao.config.auth[\"jwt/aws-0\"]",
                "aws.openbao.config.jwt_config[\"jwt/aws-0\"]",
                "aws.openbao.config.jwt_role[\"jwt/aws-0/cert-manager\"]",
                "aws.openbao.config.contents",
            ]
        );
        let get = |a: &str| resources.iter().find(|r| r.address.as_str() == a).unwrap();
        let kv = get("aws.openbao.config.mount[\"platform\"]");
        assert_eq!(kv.attributes["type"], Value::from("kv"));
        assert_eq!(
            kv.attributes["options"],
            Value::Map(BTreeMap::from([("version".into(), Value::from("2"))]))
        );
        let role = get("aws.openbao.config.pki_role[\"ogenki\"]");
        assert_eq!(role.attributes["ttl"], Value::Int(30 * 86400));
        assert_eq!(role.attributes["max_ttl"], Value::Int(90 * 86400));
        let deps = role.dependencies();
        assert!(deps.contains(&Address::new(
            "aws.openbao.config.pki_intermediate[\"pki_private_issuer\"]"
        )));
        assert!(deps.contains(&Address::new("aws.openbao.config.init")));
        let user = get("aws.openbao.config.userpass_user[\"admin\"]");
        assert_eq!(user.attributes["password_secret"], Value::from("openbao/aws-0/userpass/admin"));
        assert!(
            user.dependencies().contains(&Address::new("aws.openbao.config.policy[\"admin\"]"))
        );
        let jwt = get("aws.openbao.config.jwt_role[\"jwt/aws-0/cert-manager\"]");
        assert_eq!(jwt.attributes["token_max_ttl"], Value::Int(1200));
        let admin = get("aws.openbao.config.policy[\"admin\"]");
        assert_eq!(
            admin.attributes["policy"],
            Value::from("# all\npath \"*\" {\n  capabilities = [\"sudo\"]\n}\n")
        );
        // No attribute anywhere carries a token or a key.
        let text = format!("{resources:?}");
        assert!(!text.contains("PRIVATE KEY") && !text.contains("token\": \"s."));
    }
}
