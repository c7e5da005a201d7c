//! [`OpenBaoProvider`]: the `[openbao]` section (but its `server` table, which the cloud provider
//! that makes the servers owns) as resources of a lane, and the OpenBao kinds.
//!
//! The provider is built configured: its kinds already know how to reach OpenBao (a harness's
//! connector, or [`spec_connector`]'s), the resources its configuration waits for, and the
//! issuer of the cluster the lane makes. Its expansion only computes resources.

use crate::OpenBao;
use crate::connect::StoredTokenConnector;
use crate::expand::{ClusterIssuer, expand};
use crate::spec::OpenBaoConfig;
use crate::stores::SecretSource;
use engine::spec::{FieldPath, SpecError, SpecErrors, SpecSource};
use engine::{Address, ApiCalls, Kind, Provider, ResourceSpec};
use std::path::Path;
use std::sync::Arc;

/// Expands `[openbao]` for one lane and supplies the OpenBao kinds.
pub struct OpenBaoProvider {
    lane: &'static str,
    prefix: String,
    bao: OpenBao,
    after: Vec<Address>,
    issuer: Option<ClusterIssuer>,
}

/// Builds an [`OpenBaoProvider`].
pub struct OpenBaoProviderBuilder(OpenBaoProvider);

impl OpenBaoProvider {
    /// A provider for `lane` whose resources are addressed under `prefix`
    /// (`aws.openbao.config`), managed by the kinds of `bao`.
    pub fn builder(lane: &'static str, prefix: &str, bao: OpenBao) -> OpenBaoProviderBuilder {
        OpenBaoProviderBuilder(OpenBaoProvider {
            lane,
            prefix: prefix.to_string(),
            bao,
            after: Vec::new(),
            issuer: None,
        })
    }
}

impl OpenBaoProviderBuilder {
    /// Resources the server needs before it can be configured (its servers and their DNS
    /// record), waited for when the spec makes them.
    pub fn after(mut self, addresses: Vec<Address>) -> Self {
        self.0.after = addresses;
        self
    }

    /// The issuer JWT mounts marked `cluster_issuer` trust: the cluster the lane makes.
    pub fn cluster_issuer(mut self, issuer: ClusterIssuer) -> Self {
        self.0.issuer = Some(issuer);
        self
    }

    pub fn build(self) -> OpenBaoProvider {
        self.0
    }
}

/// The `[openbao]` section with its files read, and where the engine reaches the server.
struct Loaded {
    config: OpenBaoConfig,
    address: String,
}

/// Reads and validates `[openbao]` when it configures OpenBao (not only its servers).
fn load(spec: &SpecSource) -> Result<Option<Loaded>, SpecErrors> {
    let Some(mut config) = spec.section::<OpenBaoConfig>("openbao")? else {
        return Ok(None);
    };
    if !config.configures_openbao() {
        return Ok(None);
    }
    let base = Path::new(spec.file()).parent().unwrap_or(Path::new("."));
    config
        .load_files(base)
        .map_err(|e| spec.errors(e.0.iter().map(|m| config_error(spec, m)).collect()))?;
    let globals = spec.globals()?;
    let address = config
        .address
        .clone()
        .unwrap_or_else(|| format!("https://bao.priv.{}.{}:8200", globals.cloud, globals.domain));
    if !(address.starts_with("https://") || address.starts_with("http://")) {
        return Err(spec.errors(vec![spec.error(
            &FieldPath::root("openbao").key("address"),
            format!("`{address}` is not an http(s) URL"),
        )]));
    }
    if address.starts_with("http://") && !config.allow_plain_http && !loopback(&address) {
        return Err(spec.errors(vec![spec.error(
            &FieldPath::root("openbao").key("address"),
            format!(
                "`{address}` would send OpenBao's root token across the network in clear: use \
                 https, or set `allow_plain_http = true` in [openbao] to accept that"
            ),
        )]));
    }
    if let Some(tls) = &mut config.tls
        && tls.dns_names.is_empty()
        && let Some(host) =
            address.parse::<http::Uri>().ok().and_then(|u| u.host().map(str::to_string))
    {
        tls.dns_names.push(host);
    }
    Ok(Some(Loaded { config, address }))
}

/// Whether the host of `address` is this machine (`localhost`, 127.0.0.0/8, `::1`).
fn loopback(address: &str) -> bool {
    let Some(host) = address.parse::<http::Uri>().ok().and_then(|u| u.host().map(str::to_string))
    else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// How the engine reaches the OpenBao `spec` configures: its `[openbao] address` (default
/// `https://bao.priv.<cloud>.<domain>:8200`) trusting its `ca_file`, with the root token
/// `openbao_init` stores in `source` (`[openbao.init] root_token_secret`). `None` when the spec
/// configures no OpenBao. Errors point at the spec's fields.
pub fn spec_connector(
    spec: &SpecSource,
    source: Arc<dyn SecretSource>,
) -> Result<Option<StoredTokenConnector>, SpecErrors> {
    let Some(Loaded { config, address }) = load(spec)? else {
        return Ok(None);
    };
    let token_secret = match &config.init {
        Some(init) => init.root_token_ref(),
        None => crate::SecretRef { name: "openbao/root-token".into(), field: None },
    };
    Ok(Some(StoredTokenConnector {
        address,
        ca_bundle: config.ca_bundle().cloned(),
        source,
        token_secret,
        route: None,
    }))
}

impl Provider for OpenBaoProvider {
    fn lane(&self) -> &'static str {
        self.lane
    }

    fn sections(&self) -> &'static [&'static str] {
        &["openbao"]
    }

    fn tofu_resources(
        &self,
        resource_type: &str,
        id: &str,
        attributes: &serde_json::Value,
    ) -> Option<Vec<engine::tofu_import::TofuResource>> {
        crate::tofu::tofu_resources(resource_type, id, attributes)
    }

    fn expand(&self, spec: &SpecSource) -> Result<Vec<ResourceSpec>, SpecErrors> {
        let Some(Loaded { config, .. }) = load(spec)? else {
            return Ok(vec![]);
        };
        let issuer = self.issuer.as_ref().filter(|i| i.is_known(spec.has_section(i.section)));
        if issuer.is_none()
            && let Some((mount, _)) = config.jwt.iter().find(|(_, j)| j.cluster_issuer)
        {
            return Err(spec.errors(vec![spec.error(
                &FieldPath::root("openbao").key("jwt").key(mount).key("cluster_issuer"),
                "the spec makes no cluster whose issuer this mount could trust",
            )]));
        }
        let mut resources: Vec<ResourceSpec> = expand(&config, &self.prefix, issuer)
            .into_iter()
            // The TLS certificate goes to the secret store, where the servers read it at
            // boot: it is made before them, not after.
            .map(|r| match r.kind.as_str() {
                "openbao_server_tls" => r,
                _ => self.after.iter().fold(r, |r, a| r.after_if_present(a)),
            })
            .collect();
        // With a snapshot bucket, a destroy keeps a snapshot first: the step depends on every
        // other OpenBao resource, so it is deleted before any of them (and made after them).
        if self.bao.snapshots_before_destroy() && config.init.is_some() {
            let address = Address::new(format!("{}.pre_destroy_snapshot", self.prefix));
            let mut snapshot = ResourceSpec::new(address, "openbao_pre_destroy_snapshot")
                .attr("prefix", crate::pre_destroy::PREFIX);
            for r in &resources {
                snapshot = snapshot.after(&r.address);
            }
            resources.push(snapshot);
        }
        Ok(resources)
    }

    fn kinds(&self) -> Vec<Arc<dyn Kind>> {
        self.bao.kinds()
    }

    fn api_calls(&self) -> ApiCalls {
        self.bao.api_calls()
    }
}

/// A `[openbao]` configuration error (`openbao.ca_file: message`) pointed at its field when the
/// spec holds it, else at the spec as a whole.
fn config_error(spec: &SpecSource, message: &str) -> SpecError {
    let Some((field, rest)) = message.split_once(": ") else {
        return spec.general_error(message);
    };
    let mut keys = field.split('.');
    let (Some("openbao"), Some(first)) = (keys.next(), keys.next()) else {
        return spec.general_error(message);
    };
    let path = keys.fold(FieldPath::root("openbao").key(first), |p, k| p.key(k));
    let mut error = spec.error(&path, rest);
    if field == "openbao.ca_file" {
        error.help =
            Some("the offline root's certificate: create it with `engine pki init-root`".into());
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::BaoConnection;
    use crate::{MemorySecrets, StaticConnector};

    const GLOBALS: &str = "[globals]\ncloud = \"aws\"\nregion = \"eu-west-3\"\n\
        cluster_name = \"aws-0\"\ndomain = \"example.test\"\n";

    fn provider(issuer: Option<ClusterIssuer>) -> OpenBaoProvider {
        let connection = BaoConnection {
            route: None,
            address: "http://127.0.0.1:1".into(),
            ca_bundle: None,
            token: None,
        };
        let bao = OpenBao::builder(Arc::new(StaticConnector(connection))).build();
        let builder = OpenBaoProvider::builder("aws", "aws.openbao.config", bao)
            .after(vec![Address::new("aws.openbao.route53_record.api")]);
        match issuer {
            Some(i) => builder.cluster_issuer(i).build(),
            None => builder.build(),
        }
    }

    fn spec(section: &str) -> SpecSource {
        SpecSource::from_text("specs/aws.toml", "aws", format!("{GLOBALS}{section}"))
    }

    #[test]
    fn the_connector_comes_from_the_spec() {
        let secrets = Arc::new(MemorySecrets::new());
        let server_only = spec("[openbao.server]\nmode = \"dev\"\n");
        assert!(spec_connector(&server_only, secrets.clone()).unwrap().is_none());
        let s = spec("[openbao.init]\nsecret_prefix = \"openbao/aws-0\"\n");
        let c = spec_connector(&s, secrets.clone()).unwrap().unwrap();
        assert_eq!(c.address, "https://bao.priv.aws.example.test:8200");
        assert_eq!(c.token_secret.to_string(), "openbao/aws-0/root-token");
        let s = spec(
            "[openbao.init]\nsecret_prefix = \"o\"\nroot_token_secret = \"o/tokens/root#token\"\n",
        );
        let c = spec_connector(&s, secrets.clone()).unwrap().unwrap();
        assert_eq!(c.token_secret.field.as_deref(), Some("token"));
        let bad =
            spec("[openbao]\naddress = \"bao:8200\"\n[openbao.init]\nsecret_prefix = \"x\"\n");
        let err = spec_connector(&bad, secrets.clone()).err().unwrap();
        assert!(format!("{err:?}").contains("is not an http(s) URL"), "{err:?}");
        let missing = spec(
            "[openbao]\nca_file = \"nowhere/root-ca.crt\"\n[openbao.init]\nsecret_prefix = \"x\"\n",
        );
        let err = spec_connector(&missing, secrets).err().unwrap();
        assert!(format!("{err:?}").contains("engine pki init-root"), "{err:?}");
    }

    #[test]
    fn plain_http_is_refused_off_this_machine_unless_the_spec_accepts_it() {
        let secrets = Arc::new(MemorySecrets::new());
        let at = |address: &str, allow: bool| {
            spec(&format!(
                "[openbao]\naddress = \"{address}\"\nallow_plain_http = {allow}\n\
                 [openbao.init]\nsecret_prefix = \"x\"\n"
            ))
        };
        let err =
            spec_connector(&at("http://10.0.0.5:8200", false), secrets.clone()).err().unwrap();
        let error = &err.errors[0];
        assert_eq!((error.field.as_str(), error.line), ("openbao.address", 7), "{err:?}");
        assert!(error.message.contains("in clear"), "{err:?}");
        assert!(spec_connector(&at("http://10.0.0.5:8200", true), secrets.clone()).is_ok());
        for local in ["http://127.0.0.1:8200", "http://localhost:8200", "http://[::1]:8200"] {
            assert!(spec_connector(&at(local, false), secrets.clone()).is_ok(), "{local}");
        }
        assert!(spec_connector(&at("https://10.0.0.5:8200", false), secrets).is_ok());
    }

    #[test]
    fn expansion_waits_for_the_servers_but_the_certificate() {
        let s = spec(
            "[openbao.init]\nsecret_prefix = \"p\"\n[openbao.tls]\nsecret = \"openbao/tls\"\n\
             bundle_secret = \"b\"\n",
        );
        let resources = provider(None).expand(&s).unwrap();
        let api = Address::new("aws.openbao.route53_record.api");
        let tls = resources.iter().find(|r| r.kind == "openbao_server_tls").unwrap();
        assert!(!tls.after_if_present.contains(&api));
        let names = engine::Value::List(vec!["bao.priv.aws.example.test".into()]);
        assert_eq!(tls.attributes["dns_names"], names);
        let init = resources.iter().find(|r| r.kind == "openbao_init").unwrap();
        assert_eq!(init.address.as_str(), "aws.openbao.config.init");
        assert!(init.after_if_present.contains(&api));
    }

    #[test]
    fn a_cluster_issuer_needs_the_cluster() {
        let s = spec(
            "[openbao.jwt.\"jwt/aws-0\"]\ncluster_issuer = true\n\
             [openbao.jwt.\"jwt/aws-0\".roles.r]\nbound_audiences = [\"a\"]\nbound_subject = \"s\"\n",
        );
        let err = provider(None).expand(&s).unwrap_err();
        assert!(format!("{err:?}").contains("makes no cluster"), "{err:?}");
        let cluster = Address::new("aws.eks.cluster.main");
        let by_reference = ClusterIssuer {
            section: "eks",
            url: engine::Value::reference(&cluster, "oidc_issuer"),
            ca_pem: None,
        };
        assert!(provider(Some(by_reference.clone())).expand(&s).is_err(), "no [eks] in the spec");
        let given = ClusterIssuer { url: "https://issuer.test".into(), ..by_reference };
        let resources = provider(Some(given)).expand(&s).unwrap();
        let config = resources.iter().find(|r| r.kind == "openbao_jwt_config").unwrap();
        assert_eq!(config.attributes["bound_issuer"], engine::Value::from("https://issuer.test"));
    }
}
