//! `openbao_server_tls`: OpenBao's TLS server certificate (EC P-256, DNS SANs) issued from the
//! cloud's intermediate CA and kept in the secret store, where the servers' boot script fetches
//! it (JSON as the reference keeps it: `cert` = leaf + intermediate, `key`, `ca` = the offline root).
//!
//! Attributes: `secret` (replace), `bundle_secret` (the intermediate's bundle), `dns_names`
//! (unordered), `valid` (desired `true`: the stored certificate chains to the current
//! intermediate's root, is valid for every name, and has more than `renew_before_days` left),
//! and `not_after` (computed); setting: `renew_before_days`. A change of names, a new
//! intermediate or a coming expiry issues a new certificate. The key is made here and goes only
//! to the secret store.

use crate::shared::Shared;
use crate::stores::{HookError, SecretRef};
use engine::prelude::*;
use engine_pki::{self as pki, IntermediateBundle};
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use std::sync::Arc;
use x509_parser::prelude::{FromDer, GeneralName, ParsedExtension, X509Certificate};

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct ServerTls {
    #[attr(replace)]
    pub secret: String,
    #[attr(in_place)]
    pub bundle_secret: String,
    #[attr(in_place, unordered)]
    pub dns_names: Vec<String>,
    #[attr(in_place)]
    pub valid: bool,
    #[attr(computed)]
    #[serde(default)]
    pub not_after: String,
    /// Issue again when fewer days are left (default [`RENEW_BEFORE_DAYS`]).
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_before_days: Option<i64>,
}

pub(crate) struct ServerTlsKind(pub Arc<Shared>);

/// Days before expiry at which the certificate is issued again, by default.
pub const RENEW_BEFORE_DAYS: i64 = 30;

fn hook(what: &str, e: HookError) -> KindError {
    KindError::retryable(format!("{what}: {e}"))
}

/// Unix seconds as RFC 3339 (empty when out of range).
fn rfc3339(seconds: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(seconds)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}

/// The DNS names and expiry (unix seconds) of the first certificate of `pem`.
fn leaf_facts(pem: &str) -> Result<(Vec<String>, i64), KindError> {
    let der = pki::certificates_der(pem)
        .map_err(|e| KindError::new(format!("stored certificate: {e}")))?;
    let first = der.first().ok_or_else(|| KindError::new("the stored certificate is empty"))?;
    let (_, cert) = X509Certificate::from_der(first)
        .map_err(|e| KindError::new(format!("stored certificate: {e}")))?;
    let mut names = Vec::new();
    for ext in cert.extensions() {
        if let ParsedExtension::SubjectAlternativeName(san) = ext.parsed_extension() {
            for n in &san.general_names {
                if let GeneralName::DNSName(d) = n {
                    names.push(d.to_string());
                }
            }
        }
    }
    names.sort();
    Ok((names, cert.validity().not_after.timestamp()))
}

/// The certificate chain in a stored document: `cert`, or `certificate` in documents of older
/// engines.
fn stored_certificate(doc: &Json) -> &str {
    ["cert", "certificate"]
        .iter()
        .find_map(|field| doc.get(*field).and_then(Json::as_str))
        .unwrap_or_default()
}

impl ServerTlsKind {
    async fn bundle(&self, name: &str) -> KindResult<IntermediateBundle> {
        let place = SecretRef::parse(name);
        let bundle = place.read(self.0.source.as_ref()).await.map_err(|e| hook(name, e))?;
        let bundle =
            bundle.ok_or_else(|| KindError::new(format!("`{name}` is not in the secret store")))?;
        IntermediateBundle::from_bundle_pem(&bundle)
            .map_err(|e| KindError::new(format!("`{name}`: {e}")))
    }

    async fn read_one(&self, r: &ReadRequest<ServerTls>) -> KindResult<Option<Live<ServerTls>>> {
        let Some(desired) = &r.desired else {
            // Removed from the spec: the secret stays (the store is not deleted from).
            return Ok(None);
        };
        let secret = &desired.secret;
        let Some(stored) = self.0.source.get(secret).await.map_err(|e| hook(secret, e))? else {
            return Ok(None);
        };
        let doc: Json = serde_json::from_str(stored.expose())
            .map_err(|_| KindError::new(format!("`{secret}` is not the JSON document expected")))?;
        let certificate = stored_certificate(&doc);
        let (names, not_after) = leaf_facts(certificate)?;
        let bundle = self.bundle(&desired.bundle_secret).await?;
        let renew = desired.renew_before_days.unwrap_or(RENEW_BEFORE_DAYS);
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let chains = names.iter().all(|n| {
            let intermediates = [bundle.cert_pem.as_str()];
            pki::verify_server_chain(certificate, &intermediates, &bundle.root_cert_pem, Some(n))
                .is_ok()
        });
        let tls = ServerTls {
            secret: secret.clone(),
            bundle_secret: desired.bundle_secret.clone(),
            dns_names: names,
            valid: chains && not_after - now > renew * 86_400,
            not_after: rfc3339(not_after),
            renew_before_days: None,
        };
        Ok(Some(Live::new(secret.as_str(), tls)))
    }

    async fn issue(&self, desired: &ServerTls) -> KindResult<Live<ServerTls>> {
        let secret = &desired.secret;
        let bundle = self.bundle(&desired.bundle_secret).await?;
        let names: Vec<&str> = desired.dns_names.iter().map(String::as_str).collect();
        let leaf = pki::server_leaf(&bundle, &names)
            .map_err(|e| KindError::new(format!("issuing OpenBao's certificate: {e}")))?;
        let doc = json!({
            "cert": leaf.chain_pem,
            "key": leaf.key_pem().expose(),
            "ca": bundle.root_cert_pem,
        });
        let stored = self.0.sink.put(secret, &Secret::new(doc.to_string())).await;
        stored.map_err(|e| hook(secret, e))?;
        let (names, not_after) = leaf_facts(&leaf.chain_pem)?;
        let tls = ServerTls {
            secret: secret.clone(),
            bundle_secret: desired.bundle_secret.clone(),
            dns_names: names,
            valid: true,
            not_after: rfc3339(not_after),
            renew_before_days: None,
        };
        Ok(Live::new(secret.as_str(), tls))
    }
}

impl TypedKind for ServerTlsKind {
    type Attrs = ServerTls;
    const NAME: &'static str = "openbao_server_tls";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        futures::future::try_join_all(requests.iter().map(|r| engine::bounded(self.read_one(r))))
            .await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.issue(desired).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { desired, .. } = update;
        self.issue(desired).await
    }

    /// The certificate stays in the secret store (it has no delete); it is simply no longer
    /// managed.
    async fn delete(&self, _: &Context, _: &LiveOf<Self>) -> KindResult<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_facts_reads_names_and_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let root = pki::init_root(dir.path()).unwrap();
        let inter = pki::intermediate(&root, "aws").unwrap();
        let leaf = pki::server_leaf(&inter, &["bao.priv.aws.example.com", "localhost"]).unwrap();
        let (names, not_after) = leaf_facts(&leaf.chain_pem).unwrap();
        assert_eq!(names, ["bao.priv.aws.example.com", "localhost"]);
        let days = (not_after - time::OffsetDateTime::now_utc().unix_timestamp()) / 86_400;
        assert!((360..=366).contains(&days), "{days}");
    }

    #[test]
    fn the_chain_is_read_under_the_reference_field_and_the_older_one() {
        assert_eq!(stored_certificate(&json!({"cert": "new", "key": "k"})), "new");
        assert_eq!(stored_certificate(&json!({"certificate": "old", "private_key": "k"})), "old");
        assert_eq!(stored_certificate(&json!({"ca": "root"})), "");
    }
}
