//! How the kube kinds reach a cluster's API server.
//!
//! The connection is decided at apply time, from the cluster's outputs (endpoint, CA bundle) and
//! a bearer token minted for the run, never from whatever `~/.kube/config` happens to say. Reading
//! a kubeconfig is an explicit opt-in of the spec (`[bootstrap] kubeconfig = "PATH"`), and a test
//! harness supplies its own connection through [`KubeConnector`].

use async_trait::async_trait;
use engine::Secret;
use std::path::PathBuf;

/// Which cluster a kube resource lives in, as its attributes say.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClusterTarget {
    /// The cluster's name (`aws-0`).
    pub name: String,
    /// The API server URL, when the cluster is made by the same spec (EKS/GKE outputs).
    pub endpoint: Option<String>,
    /// The API server's CA bundle (PEM), with the endpoint.
    pub ca_pem: Option<String>,
}

/// A failure to reach a cluster. Never contains a token.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct ConnectError(pub String);

/// Turns a [`ClusterTarget`] into a client configuration.
#[async_trait]
pub trait KubeConnector: Send + Sync {
    async fn config(&self, target: &ClusterTarget) -> Result<kube::Config, ConnectError>;

    /// Whether the cluster is reached through its outputs: then a resource whose cluster has
    /// no endpoint yet (the cluster is still to be made) cannot exist.
    fn needs_outputs(&self) -> bool {
        false
    }
}

/// Mints bearer tokens for a cluster (EKS: a presigned STS URL; GKE: an OAuth2 access token).
#[async_trait]
pub trait TokenSource: Send + Sync {
    async fn token(&self, cluster: &str) -> Result<Secret, ConnectError>;
}

/// The production connector: the endpoint and CA from the cluster's outputs, a token from
/// `tokens`.
pub struct OutputsConnector<T: TokenSource>(pub T);

#[async_trait]
impl<T: TokenSource> KubeConnector for OutputsConnector<T> {
    async fn config(&self, target: &ClusterTarget) -> Result<kube::Config, ConnectError> {
        let (Some(endpoint), Some(ca)) = (&target.endpoint, &target.ca_pem) else {
            return Err(ConnectError(format!(
                "cluster `{}` has no endpoint and CA bundle yet",
                target.name
            )));
        };
        let token = self.0.token(&target.name).await?;
        config_from_parts(endpoint, Some(ca), Some(&token))
    }

    fn needs_outputs(&self) -> bool {
        true
    }
}

/// A configuration for `endpoint`, trusting `ca_pem`, sending `token`.
pub fn config_from_parts(
    endpoint: &str,
    ca_pem: Option<&str>,
    token: Option<&Secret>,
) -> Result<kube::Config, ConnectError> {
    let uri: http::Uri = endpoint
        .parse()
        .map_err(|e| ConnectError(format!("cluster endpoint `{endpoint}`: {e}")))?;
    let mut config = kube::Config::new(uri);
    if let Some(pem) = ca_pem {
        config.root_cert = Some(pem_certificates(pem)?);
    }
    if let Some(token) = token {
        config.auth_info.token = Some(token.expose().to_string().into());
    }
    Ok(config)
}

fn pem_certificates(pem: &str) -> Result<Vec<Vec<u8>>, ConnectError> {
    use rustls_pki_types::pem::PemObject;
    let certs: Vec<Vec<u8>> = rustls_pki_types::CertificateDer::pem_slice_iter(pem.as_bytes())
        .map(|c| c.map(|c| c.to_vec()))
        .collect::<Result<_, _>>()
        .map_err(|e| ConnectError(format!("cluster CA bundle: {e}")))?;
    if certs.is_empty() {
        return Err(ConnectError("cluster CA bundle holds no certificate".into()));
    }
    Ok(certs)
}

/// The explicit opt-in: a kubeconfig file named by the spec, and optionally one of its contexts.
pub struct KubeconfigConnector {
    pub path: PathBuf,
    pub context: Option<String>,
}

#[async_trait]
impl KubeConnector for KubeconfigConnector {
    async fn config(&self, _target: &ClusterTarget) -> Result<kube::Config, ConnectError> {
        let file = kube::config::Kubeconfig::read_from(&self.path)
            .map_err(|e| ConnectError(format!("kubeconfig {}: {e}", self.path.display())))?;
        let options =
            kube::config::KubeConfigOptions { context: self.context.clone(), ..Default::default() };
        kube::Config::from_custom_kubeconfig(file, &options)
            .await
            .map_err(|e| ConnectError(format!("kubeconfig {}: {e}", self.path.display())))
    }
}

/// No way to reach a cluster: every use is an error that says how to give one.
pub struct NoConnector;

#[async_trait]
impl KubeConnector for NoConnector {
    async fn config(&self, target: &ClusterTarget) -> Result<kube::Config, ConnectError> {
        Err(ConnectError(format!(
            "no connection to cluster `{}`: the spec makes no cluster and sets no \
             `[bootstrap] kubeconfig`",
            target.name
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ca_bundle_without_certificates_is_refused() {
        let err = config_from_parts("https://127.0.0.1:6443", Some("nothing"), None).unwrap_err();
        assert!(err.0.contains("no certificate"), "{err}");
    }

    #[test]
    fn the_token_is_sent_but_never_shown() {
        let token = Secret::new("k8s-aws-v1.c2VjcmV0");
        let config = config_from_parts("https://127.0.0.1:6443", None, Some(&token)).unwrap();
        assert!(config.auth_info.token.is_some());
        assert!(!format!("{config:?}").contains("c2VjcmV0"));
    }
}
