//! Pulling (and pushing) Helm charts from OCI registries.

use std::path::{Path, PathBuf};

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use sha2::Digest as _;

use crate::chart::Chart;
use crate::error::HelmError;
use crate::limits;

/// Media type of a Helm chart's config blob.
pub const HELM_CONFIG_MEDIA_TYPE: &str = "application/vnd.cncf.helm.config.v1+json";
/// Media type of a Helm chart's content layer.
pub const HELM_CHART_MEDIA_TYPE: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// Legacy chart layer media type (Helm 3.0 - 3.7 experimental OCI).
pub const LEGACY_CHART_MEDIA_TYPE: &str = "application/tar+gzip";

/// Registry credentials.
#[derive(Clone, Default)]
pub enum Credentials {
    /// No authentication.
    #[default]
    Anonymous,
    /// HTTP basic authentication.
    Basic {
        /// User name.
        username: String,
        /// Password.
        password: String,
    },
    /// A bearer token.
    Bearer(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Anonymous => write!(f, "Anonymous"),
            Credentials::Basic { username, .. } => write!(f, "Basic({username}, ***)"),
            Credentials::Bearer(_) => write!(f, "Bearer(***)"),
        }
    }
}

/// How to pull.
#[derive(Debug, Clone, Default)]
pub struct PullOptions {
    /// Credentials for the registry.
    pub credentials: Credentials,
    /// Allow plain HTTP for non-loopback registries (loopback registries
    /// always may use plain HTTP).
    pub plain_http: bool,
    /// Where pulled charts are cached by layer digest; `None` disables
    /// caching.
    pub cache_dir: Option<PathBuf>,
}

/// A pulled chart archive.
#[derive(Debug, Clone)]
pub struct PulledChart {
    /// The `.tgz` bytes.
    pub archive: Vec<u8>,
    /// Digest of the chart layer (`sha256:...`), verified.
    pub digest: String,
    /// Digest of the manifest.
    pub manifest_digest: String,
    /// Whether the archive came from the cache.
    pub from_cache: bool,
}

/// Installs the aws-lc-rs rustls provider as the process default (the
/// workspace uses aws-lc-rs everywhere); harmless when one is installed.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

/// A parsed `oci://HOST/REPO/NAME:VERSION` reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartRef {
    /// Registry host (with port).
    pub registry: String,
    /// Repository path (including the chart name).
    pub repository: String,
    /// Tag (version, `+` replaced by `_` as Helm does).
    pub tag: Option<String>,
    /// Digest, when pinned with `@sha256:...`.
    pub digest: Option<String>,
}

impl ChartRef {
    /// Parses an `oci://` reference; `version` (if given) is used when the
    /// reference has no tag.
    pub fn parse(reference: &str, version: Option<&str>) -> Result<ChartRef, HelmError> {
        let rest = reference
            .strip_prefix("oci://")
            .ok_or_else(|| HelmError::Oci(format!("{reference:?} is not an oci:// reference")))?;
        let (rest, digest) = match rest.split_once('@') {
            Some((r, d)) => (r, Some(d.to_string())),
            None => (rest, None),
        };
        let (registry, path) = rest
            .split_once('/')
            .ok_or_else(|| HelmError::Oci(format!("{reference:?} has no repository")))?;
        let (repository, tag) = match path.rsplit_once(':') {
            Some((r, t)) if !t.contains('/') => (r.to_string(), Some(t.to_string())),
            _ => (path.to_string(), version.map(str::to_string)),
        };
        if registry.is_empty() || repository.is_empty() {
            return Err(HelmError::Oci(format!("invalid reference {reference:?}")));
        }
        Ok(ChartRef {
            registry: registry.to_string(),
            repository,
            tag: tag.map(|t| t.replace('+', "_")),
            digest,
        })
    }

    /// Host without port.
    pub fn host(&self) -> &str {
        let r = &self.registry;
        if let Some(stripped) = r.strip_prefix('[') {
            return stripped.split(']').next().unwrap_or(stripped);
        }
        r.rsplit_once(':').map(|(h, _)| h).unwrap_or(r)
    }

    /// Whether the registry is on the loopback interface.
    pub fn is_loopback(&self) -> bool {
        let h = self.host();
        h == "localhost"
            || h.parse::<std::net::IpAddr>().map(|ip| ip.is_loopback()).unwrap_or(false)
    }

    fn to_reference(&self) -> Result<Reference, HelmError> {
        let s = match (&self.tag, &self.digest) {
            (_, Some(d)) => format!("{}/{}@{d}", self.registry, self.repository),
            (Some(t), None) => format!("{}/{}:{t}", self.registry, self.repository),
            (None, None) => {
                return Err(HelmError::Oci("a chart version (tag) or digest is required".into()));
            }
        };
        Reference::try_from(s.as_str())
            .map_err(|e| HelmError::Oci(format!("invalid reference {s:?}: {e}")))
    }
}

fn client_for(r: &ChartRef, plain_http: bool) -> Client {
    install_crypto_provider();
    let protocol = if plain_http || r.is_loopback() {
        ClientProtocol::HttpsExcept(vec![r.registry.clone()])
    } else {
        ClientProtocol::Https
    };
    Client::new(ClientConfig { protocol, ..Default::default() })
}

fn auth(c: &Credentials) -> RegistryAuth {
    match c {
        Credentials::Anonymous => RegistryAuth::Anonymous,
        Credentials::Basic { username, password } => {
            RegistryAuth::Basic(username.clone(), password.clone())
        }
        Credentials::Bearer(t) => RegistryAuth::Bearer(t.clone()),
    }
}

/// `sha256:<hex>` of bytes.
pub fn sha256_digest(data: &[u8]) -> String {
    let d = sha2::Sha256::digest(data);
    format!("sha256:{}", d.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// Checks `data` against an OCI digest (`sha256:` only).
pub fn verify_digest(data: &[u8], digest: &str) -> Result<(), HelmError> {
    if !digest.starts_with("sha256:") {
        return Err(HelmError::Oci(format!("unsupported digest algorithm in {digest}")));
    }
    let actual = sha256_digest(data);
    if actual != digest {
        return Err(HelmError::Oci(format!("digest mismatch: expected {digest}, got {actual}")));
    }
    Ok(())
}

/// Whether `digest` is `sha256:` and 64 lower-case hex digits: only then may it name a cache
/// file.
fn valid_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

fn cache_path(dir: &Path, digest: &str) -> PathBuf {
    let hex = digest.trim_start_matches("sha256:");
    dir.join("sha256").join(format!("{hex}.tgz"))
}

/// Pulls the chart archive of `reference` (`oci://HOST/REPO/NAME:VERSION`).
pub async fn pull_archive(reference: &str, opts: &PullOptions) -> Result<PulledChart, HelmError> {
    let r = ChartRef::parse(reference, None)?;
    let oref = r.to_reference()?;
    let client = client_for(&r, opts.plain_http);
    let a = auth(&opts.credentials);
    let (manifest, manifest_digest) = client
        .pull_image_manifest(&oref, &a)
        .await
        .map_err(|e| HelmError::Oci(format!("{reference}: fetching manifest: {e}")))?;
    if let Some(pinned) = &r.digest
        && *pinned != manifest_digest
    {
        return Err(HelmError::Oci(format!(
            "{reference}: the registry served manifest {manifest_digest}, not the pinned {pinned}"
        )));
    }
    if manifest.config.media_type != HELM_CONFIG_MEDIA_TYPE {
        return Err(HelmError::Oci(format!(
            "{reference}: not a Helm chart (config media type {:?})",
            manifest.config.media_type
        )));
    }
    let layer: &OciDescriptor = manifest
        .layers
        .iter()
        .find(|l| l.media_type == HELM_CHART_MEDIA_TYPE || l.media_type == LEGACY_CHART_MEDIA_TYPE)
        .ok_or_else(|| HelmError::Oci(format!("{reference}: manifest has no chart layer")))?;
    let digest = layer.digest.clone();
    if !valid_digest(&digest) {
        return Err(HelmError::Oci(format!("{reference}: the chart layer's digest is not sha256")));
    }
    if u64::try_from(layer.size).unwrap_or(u64::MAX) > limits::MAX_ARCHIVE_BYTES {
        return Err(HelmError::Oci(format!(
            "{reference}: the chart layer is larger than {} MiB",
            limits::MAX_ARCHIVE_BYTES >> 20
        )));
    }
    if let Some(dir) = &opts.cache_dir {
        let p = cache_path(dir, &digest);
        if let Ok(data) = std::fs::read(&p) {
            if verify_digest(&data, &digest).is_ok() {
                return Ok(PulledChart {
                    archive: data,
                    digest,
                    manifest_digest,
                    from_cache: true,
                });
            }
            let _ = std::fs::remove_file(&p);
        }
    }
    let mut data: Vec<u8> = Vec::new();
    client
        .pull_blob(&oref, layer, &mut data)
        .await
        .map_err(|e| HelmError::Oci(format!("{reference}: fetching chart layer: {e}")))?;
    if data.len() as u64 > limits::MAX_ARCHIVE_BYTES {
        return Err(HelmError::Oci(format!(
            "{reference}: the chart layer is larger than {} MiB",
            limits::MAX_ARCHIVE_BYTES >> 20
        )));
    }
    verify_digest(&data, &digest)?;
    if let Some(dir) = &opts.cache_dir {
        let p = cache_path(dir, &digest);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| HelmError::Io(parent.display().to_string(), e))?;
        }
        let tmp = p.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, &data).map_err(|e| HelmError::Io(tmp.display().to_string(), e))?;
        std::fs::rename(&tmp, &p).map_err(|e| HelmError::Io(p.display().to_string(), e))?;
    }
    Ok(PulledChart { archive: data, digest, manifest_digest, from_cache: false })
}

/// Pulls and loads a chart.
pub async fn pull(reference: &str, opts: &PullOptions) -> Result<Chart, HelmError> {
    let pulled = pull_archive(reference, opts).await?;
    Chart::load_tgz_bytes(&pulled.archive, reference)
}

/// Pushes a chart archive as `oci://HOST/REPO` + `/NAME:VERSION` (the
/// name and version come from the archive's Chart.yaml). Returns the
/// full reference pushed.
pub async fn push(
    archive: &[u8],
    repository: &str,
    opts: &PullOptions,
) -> Result<String, HelmError> {
    let chart = Chart::load_tgz_bytes(archive, "archive")?;
    let reference =
        format!("{}/{}:{}", repository.trim_end_matches('/'), chart.name(), chart.version());
    let r = ChartRef::parse(&reference, None)?;
    let oref = r.to_reference()?;
    let client = client_for(&r, opts.plain_http);
    let config = serde_json::to_vec(&chart.metadata).map_err(|e| HelmError::Oci(e.to_string()))?;
    let layers = vec![ImageLayer::new(archive.to_vec(), HELM_CHART_MEDIA_TYPE.to_string(), None)];
    client
        .push(
            &oref,
            &layers,
            Config::new(config, HELM_CONFIG_MEDIA_TYPE.to_string(), None),
            &auth(&opts.credentials),
            None,
        )
        .await
        .map_err(|e| HelmError::Oci(format!("{reference}: push: {e}")))?;
    Ok(reference)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references() {
        let r = ChartRef::parse(
            "oci://ghcr.io/controlplaneio-fluxcd/charts/flux-operator:0.49.0",
            None,
        )
        .unwrap();
        assert_eq!(r.registry, "ghcr.io");
        assert_eq!(r.repository, "controlplaneio-fluxcd/charts/flux-operator");
        assert_eq!(r.tag.as_deref(), Some("0.49.0"));
        assert!(!r.is_loopback());
        let r = ChartRef::parse("oci://127.0.0.1:5000/charts/cilium:1.2.3+meta", None).unwrap();
        assert_eq!(r.host(), "127.0.0.1");
        assert!(r.is_loopback());
        assert_eq!(r.tag.as_deref(), Some("1.2.3_meta"));
        assert!(ChartRef::parse("https://x/y", None).is_err());
        let r = ChartRef::parse("oci://localhost:5000/c/n@sha256:abcd", None).unwrap();
        assert_eq!(r.digest.as_deref(), Some("sha256:abcd"));
    }

    #[test]
    fn only_sha256_digests_name_cache_files() {
        assert!(valid_digest(&sha256_digest(b"abc")));
        for bad in ["sha256:../../etc/passwd", "sha512:abcd", "sha256:ABCD", "", "sha256:"] {
            assert!(!valid_digest(bad), "{bad}");
        }
        let long = format!("sha256:{}/x", "a".repeat(64));
        assert!(!valid_digest(&long));
    }

    #[test]
    fn digests() {
        let d = sha256_digest(b"abc");
        assert_eq!(d, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert!(verify_digest(b"abc", &d).is_ok());
        assert!(verify_digest(b"abd", &d).is_err());
    }
}
