//! `openbao_server_tls`: OpenBao's TLS server certificate (EC P-256, DNS SANs) issued from the
//! cloud's intermediate CA and kept in the secret store, where the servers' boot script fetches
//! it (JSON: `certificate` = leaf + intermediate, `private_key`, `ca` = the offline root).
//!
//! Attributes: `secret` (replace), `bundle_secret` (the intermediate's bundle), `dns_names`
//! (unordered), `valid` (desired `true`: the stored certificate chains to the current
//! intermediate's root, is valid for every name, and has more than `renew_before_days` left),
//! and `not_after` (computed). A change of names, a new intermediate or a coming expiry issues a
//! new certificate. The key is made here and goes only to the secret store.

use super::hooks::HookError;
use super::shared::Shared;
use crate::Secret;
use crate::pki::{self, IntermediateBundle};
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;
use x509_parser::prelude::{FromDer, GeneralName, ParsedExtension, X509Certificate};

pub(crate) struct ServerTls(pub Arc<Shared>);

const FIELDS: &[Field] = &[
    Field::replace("secret"),
    Field::in_place("bundle_secret"),
    Field::in_place("dns_names").unordered(),
    Field::in_place("valid"),
    Field::computed("not_after"),
];

/// Days before expiry at which the certificate is issued again, by default.
pub const RENEW_BEFORE_DAYS: i64 = 30;

fn text(attrs: &Attrs, key: &str) -> String {
    attrs.get(key).and_then(Json::as_str).unwrap_or_default().to_string()
}

fn hook(what: &str, e: HookError) -> KindError {
    KindError::retryable(format!("{what}: {e}"))
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

impl ServerTls {
    async fn bundle(&self, name: &str) -> Result<IntermediateBundle, KindError> {
        let bundle = self
            .0
            .source
            .get(name)
            .await
            .map_err(|e| hook(name, e))?
            .ok_or_else(|| KindError::new(format!("`{name}` is not in the secret store")))?;
        IntermediateBundle::from_bundle_pem(&bundle)
            .map_err(|e| KindError::new(format!("`{name}`: {e}")))
    }

    async fn read_one(&self, r: &ReadRequest) -> Result<Option<Live>, KindError> {
        let Some(desired) = &r.desired else {
            // Removed from the spec: the secret stays (the store is not deleted from).
            return Ok(None);
        };
        let secret = text(desired, "secret");
        let Some(stored) = self.0.source.get(&secret).await.map_err(|e| hook(&secret, e))? else {
            return Ok(None);
        };
        let doc: Json = serde_json::from_str(stored.expose())
            .map_err(|_| KindError::new(format!("`{secret}` is not the JSON document expected")))?;
        let certificate = doc.get("certificate").and_then(Json::as_str).unwrap_or_default();
        let (names, not_after) = leaf_facts(certificate)?;
        let bundle_secret = text(desired, "bundle_secret");
        let bundle = self.bundle(&bundle_secret).await?;
        let renew =
            desired.get("renew_before_days").and_then(Json::as_i64).unwrap_or(RENEW_BEFORE_DAYS);
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let chains = names.iter().all(|n| {
            pki::verify_server_chain(
                certificate,
                &[&bundle.cert_pem],
                &bundle.root_cert_pem,
                Some(n),
            )
            .is_ok()
        });
        let valid = chains && not_after - now > renew * 86_400;
        let not_after = time::OffsetDateTime::from_unix_timestamp(not_after)
            .ok()
            .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
            .unwrap_or_default();
        Ok(Some(Live {
            id: secret.clone(),
            attributes: Attrs::from_iter([
                ("secret".to_string(), json!(secret)),
                ("bundle_secret".to_string(), json!(bundle_secret)),
                ("dns_names".to_string(), json!(names)),
                ("valid".to_string(), json!(valid)),
                ("not_after".to_string(), json!(not_after)),
            ]),
        }))
    }

    async fn issue(&self, desired: &Attrs) -> Result<Live, KindError> {
        let secret = text(desired, "secret");
        let bundle = self.bundle(&text(desired, "bundle_secret")).await?;
        let names: Vec<String> = desired
            .get("dns_names")
            .and_then(Json::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let leaf = pki::server_leaf(&bundle, &refs)
            .map_err(|e| KindError::new(format!("issuing OpenBao's certificate: {e}")))?;
        let doc = json!({
            "certificate": leaf.chain_pem,
            "private_key": leaf.key_pem().expose(),
            "ca": bundle.root_cert_pem,
        });
        self.0
            .sink
            .put(&secret, &Secret::new(doc.to_string()))
            .await
            .map_err(|e| hook(&secret, e))?;
        let (mut sorted, not_after) = leaf_facts(&leaf.chain_pem)?;
        sorted.sort();
        let not_after = time::OffsetDateTime::from_unix_timestamp(not_after)
            .ok()
            .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
            .unwrap_or_default();
        Ok(Live {
            id: secret.clone(),
            attributes: Attrs::from_iter([
                ("secret".to_string(), json!(secret)),
                ("bundle_secret".to_string(), json!(text(desired, "bundle_secret"))),
                ("dns_names".to_string(), json!(sorted)),
                ("valid".to_string(), json!(true)),
                ("not_after".to_string(), json!(not_after)),
            ]),
        })
    }
}

#[async_trait]
impl Kind for ServerTls {
    fn name(&self) -> &'static str {
        "openbao_server_tls"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        futures::future::try_join_all(requests.iter().map(|r| self.read_one(r))).await
    }

    async fn create(&self, _: &Context, _: &Address, desired: &Attrs) -> Result<Live, KindError> {
        self.issue(desired).await
    }

    async fn update(
        &self,
        _: &Context,
        _: &Address,
        _: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.issue(desired).await
    }

    /// The certificate stays in the secret store (it has no delete); it is simply no longer
    /// managed.
    async fn delete(&self, _: &Context, _: &Address, _: &Live) -> Result<(), KindError> {
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
}
