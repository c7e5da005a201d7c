//! The `[openbao]` spec section (but its `server` table, the cloud provider's): types,
//! validation, and the files it names.
//!
//! ```toml
//! [openbao]
//! address = "https://bao.priv.aws.example.com:8200"   # the default for this domain
//! ca_file = "pki/root-ca.crt"
//!
//! [openbao.init]
//! secret_prefix = "openbao/aws-0"          # <prefix>/root-token, <prefix>/recovery-keys
//! # root_token_secret = "openbao/cloud-native-ref/tokens/root#token"   # NAME or NAME#json-field
//! # recovery_keys_secret = "openbao/cloud-native-ref/tokens/recovery"
//!
//! [openbao.mounts.platform]
//! type = "kv-v2"
//! description = "platform secrets"
//! [openbao.mounts.pki_private_issuer]
//! type = "pki"
//! max_lease_ttl = "5y"
//!
//! [openbao.policies]
//! dir = "openbao/policies"                 # every *.hcl file; the name is the file stem
//! files = { snapshot = "extra/snapshot.hcl" }
//! inline = { reader = 'path "platform/*" { capabilities = ["read"] }' }
//!
//! [openbao.pki]
//! mount = "pki_private_issuer"
//! bundle_secret = "openbao/pki/intermediate-aws"
//! certificate_file = "pki/intermediate-aws.crt"   # optional: detects a swapped issuer
//! [openbao.pki.roles.ogenki]
//! allowed_domains = ["priv.cloud.example.com"]
//! allow_subdomains = true
//! ttl = "30d"
//! max_ttl = "90d"
//!
//! [openbao.userpass.users.admin]
//! policies = ["admin"]
//!
//! [openbao.jwt."jwt/aws-0"]
//! oidc_discovery_url = "https://oidc.eks.eu-west-3.amazonaws.com/id/ABC"
//! bound_issuer = "https://oidc.eks.eu-west-3.amazonaws.com/id/ABC"
//! [openbao.jwt."jwt/aws-0".roles.cert-manager]
//! bound_audiences = ["openbao"]
//! bound_subject = "system:serviceaccount:cert-manager:cert-manager"
//! token_policies = ["cert-manager"]
//! token_ttl = 600
//! token_max_ttl = 1200
//! ```
//!
//! Durations are seconds (integer) or text such as `600s`, `12h`, `30d`, `1h30m`, `5y`
//! (y = 365 d). Files are read by [`OpenBaoConfig::load_files`] relative to the spec's directory,
//! so [`expand`](crate::expand) itself is pure.

use crate::shared::check_path;
use serde::Deserialize;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// A duration in seconds, written as an integer or as text (`30d`, `12h`, `1h30m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ttl(pub i64);

impl Ttl {
    /// Parses `600`, `600s`, `10m`, `12h`, `30d`, `5y`, `1h30m`.
    pub fn parse(text: &str) -> Result<Ttl, String> {
        let text = text.trim();
        if let Ok(n) = text.parse::<i64>() {
            return if n >= 0 {
                Ok(Ttl(n))
            } else {
                Err(format!("`{text}`: a duration cannot be negative"))
            };
        }
        let mut total: i64 = 0;
        let mut number = String::new();
        let mut any = false;
        for c in text.chars() {
            if c.is_ascii_digit() {
                number.push(c);
                continue;
            }
            let unit = match c {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                'd' => 86400,
                'y' => 365 * 86400,
                _ => {
                    return Err(format!(
                        "`{text}`: unknown duration unit `{c}` (use s, m, h, d, y)"
                    ));
                }
            };
            let n: i64 =
                number.parse().map_err(|_| format!("`{text}`: expected a number before `{c}`"))?;
            total = n
                .checked_mul(unit)
                .and_then(|v| total.checked_add(v))
                .ok_or_else(|| format!("`{text}`: too long"))?;
            number.clear();
            any = true;
        }
        if !number.is_empty() || !any {
            return Err(format!("`{text}`: expected a duration such as 600s, 12h or 30d"));
        }
        Ok(Ttl(total))
    }
}

impl<'de> Deserialize<'de> for Ttl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Ttl;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration: seconds, or text such as \"12h\" or \"30d\"")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Ttl, E> {
                if v < 0 {
                    return Err(E::custom("a duration cannot be negative"));
                }
                Ok(Ttl(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Ttl, E> {
                i64::try_from(v).map(Ttl).map_err(|_| E::custom("duration too long"))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Ttl, E> {
                Ttl::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// The `[openbao]` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenBaoConfig {
    /// The server's cloud resources (`[openbao.server]`): the cloud provider's part of the
    /// section, not read here.
    pub server: Option<toml::Table>,
    /// Where the engine reaches OpenBao (default `https://bao.priv.<cloud>.<domain>:8200`).
    pub address: Option<String>,
    /// Accept an `http://` address that is not loopback: the root token then crosses the
    /// network in clear. Off unless the spec says so.
    #[serde(default)]
    pub allow_plain_http: bool,
    /// PEM file of the CA that signed OpenBao's TLS certificate (the offline root of
    /// `engine pki init-root`), relative to the spec.
    pub ca_file: Option<PathBuf>,
    /// Initialise the server (omit for a server initialised elsewhere).
    pub init: Option<InitConfig>,
    /// Secrets engines by path.
    #[serde(default)]
    pub mounts: BTreeMap<String, MountConfig>,
    #[serde(default)]
    pub policies: PoliciesConfig,
    pub pki: Option<PkiConfig>,
    /// OpenBao's own TLS certificate, issued from the intermediate into the secret store.
    pub tls: Option<TlsConfig>,
    pub userpass: Option<UserpassConfig>,
    /// JWT auth mounts by path (e.g. `jwt/aws-0`).
    #[serde(default)]
    pub jwt: BTreeMap<String, JwtMountConfig>,
    /// Raft autopilot (default: the reference's when `[openbao.server] mode = "ha"`).
    pub autopilot: Option<AutopilotConfig>,
    /// External identity groups by name (people's groups from the OIDC login).
    #[serde(default)]
    pub identity_groups: BTreeMap<String, IdentityGroupConfig>,
    /// File contents read by `load_files`, by path as written.
    #[serde(skip)]
    files: BTreeMap<PathBuf, String>,
    /// Policies found in `policies.dir` by `load_files`.
    #[serde(skip)]
    dir_policies: BTreeMap<String, String>,
}

/// `[openbao.autopilot]`: Raft autopilot's dead-server cleanup.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutopilotConfig {
    #[serde(default = "yes")]
    pub cleanup_dead_servers: bool,
    #[serde(default = "default_dead_server_threshold")]
    pub dead_server_last_contact_threshold: Ttl,
    #[serde(default = "default_min_quorum")]
    pub min_quorum: i64,
}

impl Default for AutopilotConfig {
    /// The reference's, in `ha` mode: cleanup on, 30 minutes, a quorum of 3.
    fn default() -> Self {
        AutopilotConfig {
            cleanup_dead_servers: true,
            dead_server_last_contact_threshold: default_dead_server_threshold(),
            min_quorum: default_min_quorum(),
        }
    }
}

fn default_dead_server_threshold() -> Ttl {
    Ttl(30 * 60)
}
fn default_min_quorum() -> i64 {
    3
}

impl OpenBaoConfig {
    /// The autopilot settings to apply: the section's, else the reference's for an `ha`
    /// server the spec makes, else none.
    pub fn effective_autopilot(&self) -> Option<AutopilotConfig> {
        let ha = self
            .server
            .as_ref()
            .and_then(|s| s.get("mode"))
            .and_then(|m| m.as_str())
            .is_some_and(|m| m == "ha");
        self.autopilot.clone().or_else(|| ha.then(AutopilotConfig::default))
    }
}

/// `[openbao.tls]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// Where the certificate goes in the secret store (what the servers' boot script reads).
    pub secret: String,
    /// DNS names (default: the host of `openbao.address`).
    #[serde(default)]
    pub dns_names: Vec<String>,
    /// The intermediate's bundle (default: `openbao.pki.bundle_secret`).
    pub bundle_secret: Option<String>,
    /// Issue again when fewer days are left (default 30).
    pub renew_before_days: Option<i64>,
}

/// `[openbao.init]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitConfig {
    /// Name prefix of the credentials in the secret store.
    pub secret_prefix: String,
    /// Where the root token goes: `NAME` or `NAME#field` (a JSON object holding it in `field`);
    /// default `<secret_prefix>/root-token`.
    pub root_token_secret: Option<String>,
    /// Where the recovery keys go (a JSON array of base64 strings, or `NAME#field` holding that
    /// text); default `<secret_prefix>/recovery-keys`.
    pub recovery_keys_secret: Option<String>,
    /// Where the unseal keys of a Shamir server go; default `<secret_prefix>/unseal-keys`.
    pub unseal_keys_secret: Option<String>,
    /// Recovery (auto-unseal) or unseal (Shamir) key shares.
    #[serde(default = "one")]
    pub shares: i64,
    #[serde(default = "one")]
    pub threshold: i64,
}

impl InitConfig {
    /// Where the root token is kept.
    pub fn root_token_ref(&self) -> crate::SecretRef {
        self.place(&self.root_token_secret, "root-token")
    }

    /// Where the recovery keys are kept.
    pub fn recovery_keys_ref(&self) -> crate::SecretRef {
        self.place(&self.recovery_keys_secret, "recovery-keys")
    }

    /// Where a Shamir server's unseal keys are kept.
    pub fn unseal_keys_ref(&self) -> crate::SecretRef {
        self.place(&self.unseal_keys_secret, "unseal-keys")
    }

    fn place(&self, set: &Option<String>, default: &str) -> crate::SecretRef {
        crate::SecretRef::chosen_or(set.as_deref(), format!("{}/{default}", self.secret_prefix))
    }
}

fn one() -> i64 {
    1
}

/// A secrets engine.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MountConfig {
    /// `kv-v2`, `kv`, `pki`, `transit`, ...
    #[serde(rename = "type")]
    pub kind: String,
    pub description: Option<String>,
    pub default_lease_ttl: Option<Ttl>,
    pub max_lease_ttl: Option<Ttl>,
    /// Engine options (kv-v2 sets `version = "2"` itself).
    #[serde(default)]
    pub options: BTreeMap<String, String>,
}

/// `[openbao.policies]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoliciesConfig {
    /// A directory whose `*.hcl` files are policies named by their stem.
    pub dir: Option<PathBuf>,
    /// Policies by name, from files.
    #[serde(default)]
    pub files: BTreeMap<String, PathBuf>,
    /// Policies by name, as text.
    #[serde(default)]
    pub inline: BTreeMap<String, String>,
}

/// `[openbao.pki]`: the imported intermediate and the roles of the PKI mount.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PkiConfig {
    #[serde(default = "default_pki_mount")]
    pub mount: String,
    /// Name of the intermediate's PEM bundle (certificate, key, root) in the secret store.
    pub bundle_secret: String,
    #[serde(default = "default_issuer_name")]
    pub issuer_name: String,
    /// The intermediate's certificate (public), to detect a swapped default issuer.
    pub certificate_file: Option<PathBuf>,
    #[serde(default)]
    pub roles: BTreeMap<String, PkiRoleConfig>,
}

fn default_pki_mount() -> String {
    "pki_private_issuer".into()
}

fn default_issuer_name() -> String {
    "intermediate".into()
}

/// A PKI role (the platform's: `ogenki`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PkiRoleConfig {
    pub allowed_domains: Vec<String>,
    #[serde(default = "yes")]
    pub allow_subdomains: bool,
    #[serde(default)]
    pub allow_bare_domains: bool,
    #[serde(default)]
    pub allow_glob_domains: bool,
    #[serde(default)]
    pub allow_any_name: bool,
    #[serde(default)]
    pub allow_localhost: bool,
    #[serde(default)]
    pub allow_ip_sans: bool,
    #[serde(default = "yes")]
    pub enforce_hostnames: bool,
    #[serde(default = "yes")]
    pub server_flag: bool,
    #[serde(default = "yes")]
    pub client_flag: bool,
    #[serde(default = "default_key_type")]
    pub key_type: String,
    #[serde(default = "default_key_bits")]
    pub key_bits: i64,
    #[serde(default = "default_role_ttl")]
    pub ttl: Ttl,
    #[serde(default = "default_role_max_ttl")]
    pub max_ttl: Ttl,
    #[serde(default = "default_issuer_ref")]
    pub issuer_ref: String,
    /// The O and C of the certificates issued.
    #[serde(default)]
    pub organization: Vec<String>,
    #[serde(default)]
    pub country: Vec<String>,
    /// Key usages (OpenBao's default: DigitalSignature, KeyAgreement, KeyEncipherment).
    #[serde(default = "default_key_usage")]
    pub key_usage: Vec<String>,
}

fn default_key_usage() -> Vec<String> {
    ["DigitalSignature", "KeyAgreement", "KeyEncipherment"].map(String::from).to_vec()
}

fn yes() -> bool {
    true
}
fn default_key_type() -> String {
    "ec".into()
}
fn default_key_bits() -> i64 {
    256
}
fn default_role_ttl() -> Ttl {
    Ttl(30 * 86400)
}
fn default_role_max_ttl() -> Ttl {
    Ttl(90 * 86400)
}
fn default_issuer_ref() -> String {
    "default".into()
}

/// `[openbao.userpass]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserpassConfig {
    #[serde(default = "default_userpass_mount")]
    pub mount: String,
    pub description: Option<String>,
    #[serde(default)]
    pub users: BTreeMap<String, UserConfig>,
}

fn default_userpass_mount() -> String {
    "userpass".into()
}

/// A userpass user; its password is generated and goes to the secret store.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    #[serde(default)]
    pub policies: Vec<String>,
    pub token_ttl: Option<Ttl>,
    pub token_max_ttl: Option<Ttl>,
    /// Where the password goes (default `<init secret_prefix or "openbao">/userpass/<name>`).
    pub password_secret: Option<String>,
}

/// A JWT auth mount, its config and roles.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtMountConfig {
    /// `false` leaves the mount out (as the reference makes its OIDC login only once the
    /// identity provider's client exists); identity groups then get no alias on it.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// `jwt` (workloads' tokens) or `oidc` (people's login through an identity provider).
    #[serde(rename = "type", default = "default_jwt_type")]
    pub auth_type: String,
    pub description: Option<String>,
    /// `oidc` only: the secret-store entry (JSON with `client_id` and `client_secret`) of the
    /// client registered at the identity provider, read at apply time; neither value reaches
    /// the plan or the state, and a change of either is not drift.
    pub credentials_secret: Option<String>,
    /// The role a login uses when it names none.
    pub default_role: Option<String>,
    /// Trust the issuer of the cluster the spec makes (its OIDC issuer output, in the same run):
    /// discovery URL and bound issuer both come from it.
    #[serde(default)]
    pub cluster_issuer: bool,
    pub oidc_discovery_url: Option<String>,
    pub oidc_discovery_ca_pem: Option<String>,
    #[serde(default)]
    pub jwt_validation_pubkeys: Vec<String>,
    pub bound_issuer: Option<String>,
    #[serde(default)]
    pub roles: BTreeMap<String, JwtRoleConfig>,
}

/// A JWT role.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtRoleConfig {
    #[serde(default = "default_role_type")]
    pub role_type: String,
    #[serde(default)]
    pub bound_audiences: Vec<String>,
    #[serde(default = "default_user_claim")]
    pub user_claim: String,
    pub bound_subject: Option<String>,
    #[serde(default)]
    pub bound_claims: BTreeMap<String, Json>,
    #[serde(default)]
    pub token_policies: Vec<String>,
    pub token_ttl: Option<Ttl>,
    pub token_max_ttl: Option<Ttl>,
    /// `service` (the reference's), `batch`, `default`, `default-service` or `default-batch`.
    pub token_type: Option<String>,
    /// `oidc` roles: where the identity provider may send the browser back.
    #[serde(default)]
    pub allowed_redirect_uris: Vec<String>,
    /// `oidc` roles: the claim holding the user's groups (matched to identity group aliases).
    pub groups_claim: Option<String>,
    /// `oidc` roles: scopes asked for besides `openid`.
    #[serde(default)]
    pub oidc_scopes: Vec<String>,
}

fn default_jwt_type() -> String {
    "jwt".into()
}

/// `[openbao.identity_groups.<name>]`: an external identity group, its policies, and the alias
/// that maps an identity provider's group onto it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityGroupConfig {
    #[serde(default)]
    pub policies: Vec<String>,
    pub alias: Option<GroupAliasConfig>,
}

/// The identity provider's group `name`, as the auth mount `mount` reports it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupAliasConfig {
    pub mount: String,
    pub name: String,
}

fn default_role_type() -> String {
    "jwt".into()
}
fn default_user_claim() -> String {
    "sub".into()
}

/// Problems with the `[openbao]` section, each with its field path.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", .0.join("\n"))]
pub struct ConfigError(pub Vec<String>);

impl OpenBaoConfig {
    /// Reads the policy files (`policies.dir`, `policies.files`) and the PKI certificate file,
    /// relative to `base` (the spec's directory). Call before [`expand`].
    pub fn load_files(&mut self, base: &Path) -> Result<(), ConfigError> {
        let mut errors = Vec::new();
        let mut files = BTreeMap::new();
        let mut read = |p: &PathBuf, field: String, errors: &mut Vec<String>| {
            let full = resolve(base, p);
            match std::fs::read_to_string(&full) {
                Ok(text) => {
                    files.insert(p.clone(), text);
                }
                Err(e) => errors.push(format!("{field}: {}: {e}", full.display())),
            }
        };
        for (name, p) in &self.policies.files {
            read(p, format!("openbao.policies.files.{name}"), &mut errors);
        }
        if let Some(p) = self.pki.as_ref().and_then(|p| p.certificate_file.as_ref()) {
            read(p, "openbao.pki.certificate_file".into(), &mut errors);
        }
        if let Some(p) = &self.ca_file {
            read(p, "openbao.ca_file".into(), &mut errors);
        }
        let mut dir_policies = BTreeMap::new();
        if let Some(dir) = &self.policies.dir {
            let full = resolve(base, dir);
            match std::fs::read_dir(&full) {
                Ok(entries) => {
                    let mut paths: Vec<PathBuf> = entries
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| p.extension().is_some_and(|x| x == "hcl"))
                        .collect();
                    paths.sort();
                    for p in paths {
                        let Some(stem) = p.file_stem().map(|s| s.to_string_lossy().into_owned())
                        else {
                            continue;
                        };
                        match std::fs::read_to_string(&p) {
                            Ok(text) => {
                                dir_policies.insert(stem, text);
                            }
                            Err(e) => {
                                errors.push(format!("openbao.policies.dir: {}: {e}", p.display()))
                            }
                        }
                    }
                }
                Err(e) => errors.push(format!("openbao.policies.dir: {}: {e}", full.display())),
            }
        }
        self.files = files;
        self.dir_policies = dir_policies;
        if errors.is_empty() { self.validate() } else { Err(ConfigError(errors)) }
    }

    /// Every policy by name with its text (files must have been loaded).
    pub fn policy_texts(&self) -> BTreeMap<String, String> {
        let mut out = self.dir_policies.clone();
        for (name, p) in &self.policies.files {
            if let Some(text) = self.files.get(p) {
                out.insert(name.clone(), text.clone());
            }
        }
        for (name, text) in &self.policies.inline {
            out.insert(name.clone(), text.clone());
        }
        out
    }

    /// The CA bundle of `ca_file` (files must have been loaded).
    pub fn ca_bundle(&self) -> Option<&String> {
        self.ca_file.as_ref().and_then(|p| self.files.get(p))
    }

    /// Whether the section configures anything inside OpenBao (not only its server).
    pub fn configures_openbao(&self) -> bool {
        self.init.is_some()
            || !self.mounts.is_empty()
            || self.policies.dir.is_some()
            || !self.policies.files.is_empty()
            || !self.policies.inline.is_empty()
            || self.pki.is_some()
            || self.tls.is_some()
            || self.userpass.is_some()
            || !self.jwt.is_empty()
    }

    /// The intermediate's certificate of `pki.certificate_file` (files must have been loaded).
    pub fn certificate(&self) -> Option<&String> {
        self.pki.as_ref().and_then(|p| p.certificate_file.as_ref()).and_then(|p| self.files.get(p))
    }

    /// Checks names, references between sections and settings. Makes no API call.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut errors = Vec::new();
        // `field: message`, so the error points at the field.
        let mut path = |field: String, value: &str| {
            if check_path(&field, value).is_err() {
                errors.push(format!(
                    "{field}: `{value}` is not a valid OpenBao path (letters, digits, `-_.`, `/` \
                     between segments)"
                ));
            }
        };
        for name in self.mounts.keys() {
            path(format!("openbao.mounts.{name}"), name);
        }
        for name in self.policy_texts().keys() {
            path(format!("openbao.policies.{name}"), name);
        }
        if let Some(u) = &self.userpass {
            path("openbao.userpass.mount".into(), &u.mount);
            for name in u.users.keys() {
                path(format!("openbao.userpass.users.{name}"), name);
            }
        }
        for (mount, j) in &self.jwt {
            path(format!("openbao.jwt.{mount}"), mount);
            for name in j.roles.keys() {
                path(format!("openbao.jwt.{mount}.roles.{name}"), name);
            }
        }
        if let Some(p) = &self.pki {
            path("openbao.pki.mount".into(), &p.mount);
            for name in p.roles.keys() {
                path(format!("openbao.pki.roles.{name}"), name);
            }
        }
        let policies = self.policy_texts();
        for name in policies.keys() {
            if name.chars().any(|c| c.is_ascii_uppercase()) {
                errors.push(format!(
                    "openbao.policies.{name}: policy names are lower case in OpenBao"
                ));
            }
        }
        for (name, _) in self.policies.files.iter().filter(|(_, p)| !self.files.contains_key(*p)) {
            errors
                .push(format!("openbao.policies.files.{name}: not loaded (call load_files first)"));
        }
        for (name, text) in &self.policies.inline {
            if text.trim().is_empty() {
                errors.push(format!("openbao.policies.inline.{name}: the policy is empty"));
            }
        }
        // A policy has one definition: the directory, `files` and `inline` do not override each
        // other.
        for name in self.policies.files.keys() {
            if self.dir_policies.contains_key(name) {
                errors.push(format!(
                    "openbao.policies.files.{name}: policy `{name}` is also in `dir`"
                ));
            }
        }
        for name in self.policies.inline.keys() {
            if self.dir_policies.contains_key(name) || self.policies.files.contains_key(name) {
                errors.push(format!(
                    "openbao.policies.inline.{name}: policy `{name}` is also defined in `dir` or \
                     `files`"
                ));
            }
        }
        // Policies given to users and roles are the spec's (or OpenBao's built-in `default`).
        let known = |name: &String| name == "default" || policies.contains_key(name);
        if let Some(u) = &self.userpass {
            for (user, c) in &u.users {
                for name in c.policies.iter().filter(|n| !known(n)) {
                    errors.push(format!(
                        "openbao.userpass.users.{user}.policies: policy `{name}` is not \
                         defined in [openbao.policies]"
                    ));
                }
                if let (Some(t), Some(m)) = (c.token_ttl, c.token_max_ttl)
                    && t > m
                {
                    errors.push(format!(
                        "openbao.userpass.users.{user}.token_ttl: token_ttl exceeds token_max_ttl"
                    ));
                }
            }
        }
        for (mount, j) in &self.jwt {
            for (role, r) in &j.roles {
                for name in r.token_policies.iter().filter(|n| !known(n)) {
                    errors.push(format!(
                        "openbao.jwt.{mount}.roles.{role}.token_policies: policy `{name}` is \
                         not defined in [openbao.policies]"
                    ));
                }
            }
        }
        for (group, g) in &self.identity_groups {
            for name in g.policies.iter().filter(|n| !known(n)) {
                errors.push(format!(
                    "openbao.identity_groups.{group}.policies: policy `{name}` is not defined in \
                     [openbao.policies]"
                ));
            }
            if let Some(a) = &g.alias {
                let auth_mount = self.jwt.contains_key(&a.mount)
                    || self.userpass.as_ref().is_some_and(|u| u.mount == a.mount);
                if !auth_mount {
                    errors.push(format!(
                        "openbao.identity_groups.{group}.alias.mount: `{}` is no auth mount of \
                         [openbao.jwt] or [openbao.userpass]",
                        a.mount
                    ));
                }
            }
        }
        if let Some(i) = &self.init {
            if i.secret_prefix.trim().is_empty() {
                errors.push("openbao.init.secret_prefix: the prefix must not be empty".into());
            }
            for (field, value) in [
                ("root_token_secret", &i.root_token_secret),
                ("recovery_keys_secret", &i.recovery_keys_secret),
            ] {
                if value.as_deref().is_some_and(|v| v.trim().is_empty() || v.starts_with('#')) {
                    errors.push(format!("openbao.init.{field}: expected NAME or NAME#field"));
                }
            }
            if i.shares < 1 || i.threshold < 1 || i.threshold > i.shares {
                errors.push("openbao.init: need 1 <= threshold <= shares".into());
            }
        }
        for (name, m) in &self.mounts {
            if m.kind.trim().is_empty() {
                errors.push(format!("openbao.mounts.{name}.type: the engine type is empty"));
            }
            let first = name.split('/').next().unwrap_or_default();
            if RESERVED_MOUNTS.contains(&first) {
                errors.push(format!(
                    "openbao.mounts.{name}: `{first}/` is OpenBao's own path; mount elsewhere"
                ));
            }
            if let (Some(d), Some(x)) = (m.default_lease_ttl, m.max_lease_ttl)
                && d > x
            {
                errors.push(format!(
                    "openbao.mounts.{name}: default_lease_ttl exceeds max_lease_ttl"
                ));
            }
        }
        if let Some(p) = &self.pki {
            match self.mounts.get(&p.mount) {
                Some(m) if m.kind == "pki" => {}
                _ => errors.push(format!(
                    "openbao.pki.mount: `{}` must be listed in [openbao.mounts] with type \"pki\"",
                    p.mount
                )),
            }
            for (name, r) in &p.roles {
                if r.ttl > r.max_ttl {
                    errors.push(format!("openbao.pki.roles.{name}: ttl exceeds max_ttl"));
                }
                if r.allowed_domains.is_empty() && !r.allow_any_name {
                    errors.push(format!("openbao.pki.roles.{name}: allowed_domains is empty"));
                }
                let bits_ok = match r.key_type.as_str() {
                    "ec" => [224, 256, 384, 521].contains(&r.key_bits),
                    "rsa" => [2048, 3072, 4096, 8192].contains(&r.key_bits),
                    "ed25519" | "any" => true,
                    other => {
                        errors.push(format!(
                            "openbao.pki.roles.{name}.key_type: `{other}` is not a key type (rsa, \
                             ec, ed25519 or any)"
                        ));
                        true
                    }
                };
                if !bits_ok {
                    errors.push(format!(
                        "openbao.pki.roles.{name}.key_bits: {} bits is not a size of {} keys",
                        r.key_bits, r.key_type
                    ));
                }
            }
            if p.certificate_file.is_some() && self.certificate().is_none() {
                errors.push(
                    "openbao.pki.certificate_file: not loaded (call load_files first)".into(),
                );
            }
        }
        if let Some(u) = &self.userpass
            && self.mounts.contains_key(&u.mount)
        {
            errors.push(format!(
                "openbao.userpass.mount: `{}` is also a secrets engine path",
                u.mount
            ));
        }
        for (mount, j) in &self.jwt {
            let sources = usize::from(j.oidc_discovery_url.is_some())
                + usize::from(!j.jwt_validation_pubkeys.is_empty())
                + usize::from(j.cluster_issuer);
            if sources != 1 {
                errors.push(format!(
                    "openbao.jwt.{mount}: set exactly one of oidc_discovery_url, \
                     jwt_validation_pubkeys or cluster_issuer"
                ));
            }
            if self.userpass.as_ref().is_some_and(|u| &u.mount == mount) {
                errors.push(format!("openbao.jwt.{mount}: also the userpass mount"));
            }
            match (j.auth_type.as_str(), &j.credentials_secret) {
                ("jwt", None) => {}
                ("jwt", Some(_)) => errors.push(format!(
                    "openbao.jwt.{mount}.credentials_secret: only an `oidc` mount has a client"
                )),
                ("oidc", Some(_)) if j.oidc_discovery_url.is_some() => {}
                ("oidc", _) => errors.push(format!(
                    "openbao.jwt.{mount}: an `oidc` mount needs oidc_discovery_url (the identity \
                     provider) and credentials_secret (its client)"
                )),
                (other, _) => errors
                    .push(format!("openbao.jwt.{mount}.type: `{other}` is not `jwt` or `oidc`")),
            }
            if let Some(role) = j.default_role.as_ref().filter(|r| !j.roles.contains_key(*r)) {
                errors.push(format!(
                    "openbao.jwt.{mount}.default_role: no role `{role}` in this mount"
                ));
            }
            for (name, r) in &j.roles {
                if r.role_type == "oidc" {
                    if r.allowed_redirect_uris.is_empty() {
                        errors.push(format!(
                            "openbao.jwt.{mount}.roles.{name}: an `oidc` role needs \
                             allowed_redirect_uris"
                        ));
                    }
                } else if r.role_type != "jwt" {
                    errors.push(format!(
                        "openbao.jwt.{mount}.roles.{name}.role_type: `{}` is not `jwt` or `oidc`",
                        r.role_type
                    ));
                } else {
                    if r.bound_audiences.is_empty() {
                        errors.push(format!(
                            "openbao.jwt.{mount}.roles.{name}: bound_audiences is empty"
                        ));
                    }
                    if r.bound_subject.is_none() && r.bound_claims.is_empty() {
                        errors.push(format!(
                            "openbao.jwt.{mount}.roles.{name}: bind the role with bound_subject \
                             or bound_claims"
                        ));
                    }
                }
                if let (Some(t), Some(m)) = (r.token_ttl, r.token_max_ttl)
                    && t > m
                {
                    errors.push(format!(
                        "openbao.jwt.{mount}.roles.{name}: token_ttl exceeds token_max_ttl"
                    ));
                }
                let types = ["service", "batch", "default", "default-service", "default-batch"];
                if let Some(t) = r.token_type.as_deref().filter(|t| !types.contains(t)) {
                    errors.push(format!(
                        "openbao.jwt.{mount}.roles.{name}.token_type: `{t}` is not a token type \
                         ({})",
                        types.join(", ")
                    ));
                }
            }
        }
        if let Some(a) = &self.autopilot {
            if a.cleanup_dead_servers && a.min_quorum < 3 {
                errors.push(format!(
                    "openbao.autopilot.min_quorum: {} is below 3, the least a cluster that \
                     removes dead servers keeps",
                    a.min_quorum
                ));
            }
            if a.dead_server_last_contact_threshold.0 < 60 {
                errors.push(
                    "openbao.autopilot.dead_server_last_contact_threshold: at least 1m".into(),
                );
            }
        }
        if let Some(t) = &self.tls {
            if t.bundle_secret.is_none() && self.pki.is_none() {
                errors.push(
                    "openbao.tls.bundle_secret: needed when there is no [openbao.pki]".into(),
                );
            }
            if t.dns_names.iter().any(|n| n.is_empty() || n.contains(['/', ':', ' '])) {
                errors.push("openbao.tls.dns_names: DNS names only".into());
            }
            if let Some(days) = t.renew_before_days
                && !(1..CERTIFICATE_DAYS).contains(&days)
            {
                errors.push(format!(
                    "openbao.tls.renew_before_days: {days} is not between 1 and {} (the \
                     certificate lasts {CERTIFICATE_DAYS} days)",
                    CERTIFICATE_DAYS - 1
                ));
            }
        }
        if errors.is_empty() { Ok(()) } else { Err(ConfigError(errors)) }
    }
}

/// Paths OpenBao keeps for itself: no secrets engine is mounted under them.
const RESERVED_MOUNTS: &[&str] = &["sys", "auth", "cubbyhole", "identity"];

/// How long OpenBao's own TLS certificate lasts (one year).
const CERTIFICATE_DAYS: i64 = 365;

/// A path of the spec: `~/` is the home directory, a relative path is relative to `base` (the
/// spec's directory).
fn resolve(base: &Path, p: &Path) -> PathBuf {
    if let Ok(rest) = p.strip_prefix("~")
        && let Some(home) = std::env::var_os("HOME")
    {
        return Path::new(&home).join(rest);
    }
    base.join(p)
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(Ttl::parse("600").unwrap(), Ttl(600));
        assert_eq!(Ttl::parse("30d").unwrap(), Ttl(2592000));
        assert_eq!(Ttl::parse("1h30m").unwrap(), Ttl(5400));
        assert_eq!(Ttl::parse("5y").unwrap(), Ttl(5 * 365 * 86400));
        for bad in ["", "h", "10x", "-1", "1h3"] {
            assert!(Ttl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn validation_reports_each_problem() {
        let mut config: OpenBaoConfig = toml::from_str(
            r#"
[mounts."bad path"]
type = "kv-v2"
[pki]
mount = "pki"
bundle_secret = "x"
[pki.roles.r]
allowed_domains = []
ttl = "100d"
[jwt.jwt]
bound_issuer = "x"
[jwt.jwt.roles.r]
bound_audiences = []
"#,
        )
        .unwrap();
        let err = config.load_files(Path::new("/nonexistent")).unwrap_err();
        let text = err.to_string();
        for expected in [
            "bad path",
            "openbao.pki.mount",
            "ttl exceeds max_ttl",
            "allowed_domains is empty",
            "exactly one of oidc_discovery_url",
            "bound_audiences is empty",
            "bound_subject or bound_claims",
        ] {
            assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
        }
        assert!(toml::from_str::<OpenBaoConfig>("[mounts.a]\ntype = \"kv\"\nbogus = 1\n").is_err());
        assert!(
            toml::from_str::<OpenBaoConfig>("[mounts.a]\ntype = \"kv\"\nmax_lease_ttl = \"3w\"\n")
                .is_err()
        );
    }
}
