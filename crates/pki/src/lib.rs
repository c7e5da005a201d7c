//! The platform's offline PKI: a root CA whose key stays on the operator's machine, one
//! intermediate CA per cloud (imported into OpenBao's `pki_private_issuer` mount), and the TLS
//! leaf OpenBao serves.
//!
//! - [`init_root`]: EC P-384, 10 years, written as `root-ca.crt` + `root-ca.key` (mode 0600).
//!   Never overwrites: an existing root in the directory is loaded instead.
//! - [`intermediate`]: EC P-384, 5 years, `pathlen:0`, signed by the root; a PEM bundle of
//!   certificate, key and root certificate, the shape OpenBao's `issuers/import/bundle` takes.
//! - [`server_leaf`]: EC P-256 with DNS SANs, signed by an intermediate.
//! - [`verify_server_chain`]: path validation with rustls-webpki (signatures, validity, basic
//!   constraints and path length, EKU, and the name).

use engine::Secret;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, PKCS_ECDSA_P384_SHA384, SerialNumber,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use std::io::Write;
use std::path::{Path, PathBuf};
use time::{Duration, OffsetDateTime};

/// File name of the root certificate in its directory.
pub const ROOT_CERT_FILE: &str = "root-ca.crt";
/// File name of the root key in its directory (mode 0600).
pub const ROOT_KEY_FILE: &str = "root-ca.key";

const ROOT_VALIDITY_DAYS: i64 = 3653; // 10 years
const INTERMEDIATE_VALIDITY_DAYS: i64 = 1827; // 5 years
const LEAF_VALIDITY_DAYS: i64 = 365;
/// Certificates start a little in the past so clock skew between machines does not reject them.
const BACKDATE: Duration = Duration::minutes(5);

/// A PKI failure. Never carries key material.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("certificate generation failed: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("invalid PEM: {0}")]
    Pem(String),
    #[error("{0}")]
    Invalid(String),
    #[error("chain verification failed: {0}")]
    Verify(String),
}

/// The offline root CA.
pub struct RootCa {
    /// The certificate (PEM): public, distributed as the platform's trust anchor.
    pub cert_pem: String,
    pub cert_path: PathBuf,
    pub key_path: PathBuf,
    key: KeyPair,
}

impl std::fmt::Debug for RootCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RootCa")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .field("key", &"(sensitive)")
            .finish()
    }
}

/// A per-cloud intermediate CA: certificate, key and the root's certificate.
pub struct IntermediateBundle {
    /// The intermediate certificate (PEM).
    pub cert_pem: String,
    /// The root certificate (PEM).
    pub root_cert_pem: String,
    key_pem: Secret,
}

impl std::fmt::Debug for IntermediateBundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntermediateBundle")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &self.key_pem)
            .finish()
    }
}

/// A TLS server certificate and its key.
pub struct ServerLeaf {
    /// The leaf certificate (PEM).
    pub cert_pem: String,
    /// Leaf then intermediate (PEM): what a server presents.
    pub chain_pem: String,
    key_pem: Secret,
}

impl std::fmt::Debug for ServerLeaf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerLeaf")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &self.key_pem)
            .finish()
    }
}

impl ServerLeaf {
    /// The private key (PKCS#8 PEM).
    pub fn key_pem(&self) -> &Secret {
        &self.key_pem
    }
}

impl IntermediateBundle {
    /// The private key (PKCS#8 PEM).
    pub fn key_pem(&self) -> &Secret {
        &self.key_pem
    }

    /// Certificate, key and root certificate as one PEM document: what is stored in the cloud's
    /// secret store and imported into OpenBao.
    pub fn bundle_pem(&self) -> Secret {
        Secret::new(format!(
            "{}\n{}\n{}\n",
            self.cert_pem.trim_end(),
            self.key_pem.expose().trim_end(),
            self.root_cert_pem.trim_end()
        ))
    }

    /// Parses a bundle made by [`IntermediateBundle::bundle_pem`]: the first certificate is the
    /// intermediate, the last one the root.
    pub fn from_bundle_pem(bundle: &Secret) -> Result<Self, PkiError> {
        let blocks = pem_blocks(bundle.expose());
        let certs: Vec<&str> = blocks
            .iter()
            .filter(|(label, _)| *label == "CERTIFICATE")
            .map(|(_, b)| b.as_str())
            .collect();
        let key = blocks
            .iter()
            .find(|(label, _)| label.ends_with("PRIVATE KEY"))
            .map(|(_, b)| b.clone())
            .ok_or_else(|| PkiError::Invalid("the bundle holds no private key".into()))?;
        if certs.len() < 2 {
            return Err(PkiError::Invalid(
                "the bundle needs the intermediate and the root certificate".into(),
            ));
        }
        Ok(IntermediateBundle {
            cert_pem: certs[0].to_string(),
            root_cert_pem: certs[certs.len() - 1].to_string(),
            key_pem: Secret::new(key),
        })
    }

    fn issuer(&self) -> Result<Issuer<'static, KeyPair>, PkiError> {
        let key = KeyPair::from_pem(self.key_pem.expose())?;
        Ok(Issuer::from_ca_cert_pem(&self.cert_pem, key)?)
    }
}

/// The PEM blocks of `text` as (label, block text including its armour).
fn pem_blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(label) = line.strip_prefix("-----BEGIN ").and_then(|l| l.strip_suffix("-----"))
        {
            current = Some((label.to_string(), format!("{line}\n")));
        } else if let Some((label, mut block)) = current.take() {
            block.push_str(line);
            block.push('\n');
            if line.starts_with("-----END ") {
                out.push((label, block));
            } else {
                current = Some((label, block));
            }
        }
    }
    out
}

fn random_serial() -> Result<SerialNumber, PkiError> {
    let mut bytes = [0u8; 16];
    aws_lc_rs::rand::fill(&mut bytes)
        .map_err(|_| PkiError::Invalid("the system random generator failed".into()))?;
    bytes[0] &= 0x7f; // positive
    bytes[0] |= 0x01; // no leading zero byte to strip
    Ok(SerialNumber::from_slice(&bytes))
}

fn name(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "Platform PKI");
    dn.push(DnType::CommonName, common_name);
    dn
}

fn ca_params(
    common_name: &str,
    constraints: BasicConstraints,
    days: i64,
) -> Result<CertificateParams, PkiError> {
    let now = OffsetDateTime::now_utc();
    let mut params = CertificateParams::default();
    params.distinguished_name = name(common_name);
    params.is_ca = IsCa::Ca(constraints);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = now - BACKDATE;
    params.not_after = now + Duration::days(days);
    params.serial_number = Some(random_serial()?);
    Ok(params)
}

/// Creates the offline root CA in `dir` (EC P-384, 10 years): `root-ca.crt` and `root-ca.key`,
/// the key with mode 0600. If both files already exist, loads them instead: a root is never
/// replaced by accident.
pub fn init_root(dir: &Path) -> Result<RootCa, PkiError> {
    let cert_path = dir.join(ROOT_CERT_FILE);
    let key_path = dir.join(ROOT_KEY_FILE);
    if cert_path.exists() && key_path.exists() {
        return load_root(dir);
    }
    if cert_path.exists() || key_path.exists() {
        return Err(PkiError::Invalid(format!(
            "{} holds only half of a root CA ({ROOT_CERT_FILE} / {ROOT_KEY_FILE}); refusing to \
             overwrite it",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir)
        .map_err(|source| PkiError::Io { path: dir.to_path_buf(), source })?;
    let key = KeyPair::generate_for(&PKCS_ECDSA_P384_SHA384)?;
    let params =
        ca_params("Platform Root CA", BasicConstraints::Unconstrained, ROOT_VALIDITY_DAYS)?;
    let cert = params.self_signed(&key)?;
    let key_pem = Secret::new(key.serialize_pem());
    write_private(&key_path, key_pem.expose().as_bytes())?;
    std::fs::write(&cert_path, cert.pem())
        .map_err(|source| PkiError::Io { path: cert_path.clone(), source })?;
    Ok(RootCa { cert_pem: cert.pem(), cert_path, key_path, key })
}

/// Loads the root CA that [`init_root`] wrote in `dir`.
pub fn load_root(dir: &Path) -> Result<RootCa, PkiError> {
    let cert_path = dir.join(ROOT_CERT_FILE);
    let key_path = dir.join(ROOT_KEY_FILE);
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|source| PkiError::Io { path: p.to_path_buf(), source })
    };
    let cert_pem = read(&cert_path)?;
    let key_pem = Secret::new(read(&key_path)?);
    let key = KeyPair::from_pem(key_pem.expose())?;
    Ok(RootCa { cert_pem, cert_path, key_path, key })
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), PkiError> {
    let io = |source| PkiError::Io { path: path.to_path_buf(), source };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)
}

/// A per-cloud intermediate CA (EC P-384, 5 years, path length 0) signed by `root`.
pub fn intermediate(root: &RootCa, cloud: &str) -> Result<IntermediateBundle, PkiError> {
    if cloud.is_empty() || !cloud.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(PkiError::Invalid(format!(
            "cloud name `{cloud}` must be letters, digits and dashes"
        )));
    }
    let root_issuer = Issuer::from_ca_cert_pem(&root.cert_pem, &root.key)?;
    let key = KeyPair::generate_for(&PKCS_ECDSA_P384_SHA384)?;
    let mut params = ca_params(
        &format!("Platform Intermediate CA {cloud}"),
        BasicConstraints::Constrained(0),
        INTERMEDIATE_VALIDITY_DAYS,
    )?;
    params.use_authority_key_identifier_extension = true;
    let cert = params.signed_by(&key, &root_issuer)?;
    Ok(IntermediateBundle {
        cert_pem: cert.pem(),
        root_cert_pem: root.cert_pem.clone(),
        key_pem: Secret::new(key.serialize_pem()),
    })
}

/// OpenBao's TLS server certificate (EC P-256, DNS SANs, 1 year) signed by `intermediate`.
pub fn server_leaf(
    intermediate: &IntermediateBundle,
    dns_names: &[&str],
) -> Result<ServerLeaf, PkiError> {
    let first = dns_names
        .first()
        .ok_or_else(|| PkiError::Invalid("a server certificate needs a DNS name".into()))?;
    let issuer = intermediate.issuer()?;
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let names: Vec<String> = dns_names.iter().map(|s| s.to_string()).collect();
    let mut params = CertificateParams::new(names)?;
    if params.subject_alt_names.iter().any(|s| !matches!(s, rcgen::SanType::DnsName(_))) {
        return Err(PkiError::Invalid("server names must be DNS names".into()));
    }
    let now = OffsetDateTime::now_utc();
    params.distinguished_name = name(first);
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = now - BACKDATE;
    params.not_after = now + Duration::days(LEAF_VALIDITY_DAYS);
    params.serial_number = Some(random_serial()?);
    params.use_authority_key_identifier_extension = true;
    let cert = params.signed_by(&key, &issuer)?;
    Ok(ServerLeaf {
        chain_pem: format!("{}\n{}\n", cert.pem().trim_end(), intermediate.cert_pem.trim_end()),
        cert_pem: cert.pem(),
        key_pem: Secret::new(key.serialize_pem()),
    })
}

/// The DER certificates of a PEM text, in order.
pub fn certificates_der(pem: &str) -> Result<Vec<CertificateDer<'static>>, PkiError> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PkiError::Pem(e.to_string()))?;
    if certs.is_empty() {
        return Err(PkiError::Pem("no certificate found".into()));
    }
    Ok(certs)
}

/// Verifies that the first certificate of `leaf_pem` chains to `root_pem` through the
/// certificates in `intermediates_pem` (and any further ones in `leaf_pem`), is valid now, is
/// usable for TLS server authentication and, when `dns_name` is given, is valid for that name.
pub fn verify_server_chain(
    leaf_pem: &str,
    intermediates_pem: &[&str],
    root_pem: &str,
    dns_name: Option<&str>,
) -> Result<(), PkiError> {
    let mut leaf_chain = certificates_der(leaf_pem)?;
    let leaf = leaf_chain.remove(0);
    let mut intermediates = leaf_chain;
    for pem in intermediates_pem {
        intermediates.extend(certificates_der(pem)?);
    }
    let root = certificates_der(root_pem)?.remove(0);
    let anchor =
        webpki::anchor_from_trusted_cert(&root).map_err(|e| PkiError::Verify(e.to_string()))?;
    let ee = webpki::EndEntityCert::try_from(&leaf).map_err(|e| PkiError::Verify(e.to_string()))?;
    ee.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &[anchor],
        &intermediates,
        UnixTime::now(),
        webpki::KeyUsage::server_auth(),
        None,
        None,
    )
    .map_err(|e| PkiError::Verify(e.to_string()))?;
    if let Some(dns) = dns_name {
        let name = ServerName::try_from(dns.to_string())
            .map_err(|e| PkiError::Verify(format!("`{dns}`: {e}")))?;
        ee.verify_is_valid_for_subject_name(&name)
            .map_err(|e| PkiError::Verify(format!("`{dns}`: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::prelude::{FromDer, X509Certificate};

    fn parse(pem: &str) -> Vec<u8> {
        certificates_der(pem).unwrap().remove(0).to_vec()
    }

    #[test]
    fn root_intermediate_and_leaf_form_a_valid_chain() {
        let dir = tempfile::tempdir().unwrap();
        let root = init_root(dir.path()).unwrap();
        let inter = intermediate(&root, "aws").unwrap();
        let leaf = server_leaf(&inter, &["bao.priv.aws.example.test", "localhost"]).unwrap();
        verify_server_chain(
            &leaf.cert_pem,
            &[&inter.cert_pem],
            &root.cert_pem,
            Some("bao.priv.aws.example.test"),
        )
        .unwrap();
        // The chain a server presents carries the intermediate itself.
        verify_server_chain(&leaf.chain_pem, &[], &root.cert_pem, Some("localhost")).unwrap();
        // Wrong name, missing intermediate, other root: all rejected.
        assert!(
            verify_server_chain(&leaf.chain_pem, &[], &root.cert_pem, Some("evil.test")).is_err()
        );
        assert!(verify_server_chain(&leaf.cert_pem, &[], &root.cert_pem, None).is_err());
        let other_dir = tempfile::tempdir().unwrap();
        let other = init_root(other_dir.path()).unwrap();
        assert!(verify_server_chain(&leaf.chain_pem, &[], &other.cert_pem, None).is_err());
    }

    #[test]
    fn path_length_zero_forbids_a_sub_ca() {
        let dir = tempfile::tempdir().unwrap();
        let root = init_root(dir.path()).unwrap();
        let inter = intermediate(&root, "aws").unwrap();
        // A CA signed by the intermediate, then a leaf under it: pathlen 0 must reject the path.
        let issuer = inter.issuer().unwrap();
        let sub_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let sub_params = ca_params("sub", BasicConstraints::Unconstrained, 30).unwrap();
        let sub_cert = sub_params.signed_by(&sub_key, &issuer).unwrap();
        let sub = IntermediateBundle {
            cert_pem: sub_cert.pem(),
            root_cert_pem: root.cert_pem.clone(),
            key_pem: Secret::new(sub_key.serialize_pem()),
        };
        let leaf = server_leaf(&sub, &["x.example.test"]).unwrap();
        let err = verify_server_chain(
            &leaf.cert_pem,
            &[&sub.cert_pem, &inter.cert_pem],
            &root.cert_pem,
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("verification failed"), "{err}");
    }

    #[test]
    fn certificates_have_the_platform_profile() {
        let dir = tempfile::tempdir().unwrap();
        let root = init_root(dir.path()).unwrap();
        let inter = intermediate(&root, "gcp").unwrap();
        let leaf = server_leaf(&inter, &["bao.priv.gcp.example.test"]).unwrap();

        let der = parse(&root.cert_pem);
        let (_, cert) = X509Certificate::from_der(&der).unwrap();
        let years = (cert.validity().not_after.timestamp()
            - cert.validity().not_before.timestamp())
            / (365 * 86400);
        assert_eq!(years, 10);
        assert_eq!(
            cert.public_key().algorithm.parameters.as_ref().unwrap().as_oid().unwrap(),
            x509_parser::oid_registry::OID_NIST_EC_P384
        );
        assert!(cert.basic_constraints().unwrap().unwrap().value.ca);

        let der = parse(&inter.cert_pem);
        let (_, cert) = X509Certificate::from_der(&der).unwrap();
        let bc = cert.basic_constraints().unwrap().unwrap().value;
        assert!(bc.ca);
        assert_eq!(bc.path_len_constraint, Some(0));
        let years = (cert.validity().not_after.timestamp()
            - cert.validity().not_before.timestamp())
            / (365 * 86400);
        assert_eq!(years, 5);
        assert_eq!(
            cert.public_key().algorithm.parameters.as_ref().unwrap().as_oid().unwrap(),
            x509_parser::oid_registry::OID_NIST_EC_P384
        );
        assert!(cert.subject().to_string().contains("gcp"));

        let der = parse(&leaf.cert_pem);
        let (_, cert) = X509Certificate::from_der(&der).unwrap();
        assert!(!cert.is_ca());
        assert_eq!(
            cert.public_key().algorithm.parameters.as_ref().unwrap().as_oid().unwrap(),
            x509_parser::oid_registry::OID_EC_P256
        );
        let sans: Vec<String> = cert
            .subject_alternative_name()
            .unwrap()
            .unwrap()
            .value
            .general_names
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(sans, vec!["DNSName(bao.priv.gcp.example.test)".to_string()]);
    }

    #[cfg(unix)]
    #[test]
    fn root_key_is_private_and_never_overwritten() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = init_root(dir.path()).unwrap();
        let mode = std::fs::metadata(&root.key_path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = init_root(dir.path()).unwrap();
        assert_eq!(again.cert_pem, root.cert_pem);
        std::fs::remove_file(&root.cert_path).unwrap();
        assert!(init_root(dir.path()).is_err());
    }

    #[test]
    fn bundles_round_trip_and_hide_their_key() {
        let dir = tempfile::tempdir().unwrap();
        let root = init_root(dir.path()).unwrap();
        let inter = intermediate(&root, "aws").unwrap();
        let bundle = inter.bundle_pem();
        let back = IntermediateBundle::from_bundle_pem(&bundle).unwrap();
        assert_eq!(back.cert_pem.trim(), inter.cert_pem.trim());
        assert_eq!(back.root_cert_pem.trim(), root.cert_pem.trim());
        assert_eq!(back.key_pem().expose().trim(), inter.key_pem().expose().trim());
        let shown = format!("{inter:?} {root:?} {bundle:?} {bundle}");
        assert!(!shown.contains("PRIVATE KEY"), "{shown}");
        // The re-parsed bundle still signs valid leaves.
        let leaf = server_leaf(&back, &["a.example.test"]).unwrap();
        verify_server_chain(&leaf.chain_pem, &[], &root.cert_pem, Some("a.example.test")).unwrap();
    }
}
