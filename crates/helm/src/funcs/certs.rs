//! Sprig's certificate functions (real X.509 certificates, RSA keys made and used by
//! [`super::rsa`]).

use std::rc::Rc;

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_RSA_SHA256, SanType,
};

use super::rsa::{Prime, RsaKey};
use super::{Func, arity, s, to_i64};
use crate::objects::CertObj;
use crate::template::{Exec, FnError};
use crate::value::Value;

type R = Result<Value, FnError>;

pub(super) static FUNCS: &[(&str, Func)] = &[
    ("genCA", gen_ca),
    ("genCAWithKey", gen_ca_with_key),
    ("genSelfSignedCert", gen_self_signed_cert),
    ("genSelfSignedCertWithKey", gen_self_signed_cert_with_key),
    ("genSignedCert", gen_signed_cert),
    ("genSignedCertWithKey", gen_signed_cert_with_key),
    ("buildCustomCert", build_custom_cert),
    ("genPrivateKey", gen_private_key),
];

/// A certificate signing key: RSA on aws-lc's bignums ([`RsaKey`]), P-256 in pure Rust (its
/// deterministic signatures need no random generator), other PKCS#8 keys through aws-lc. The
/// first two keep a render free of aws-lc's entropy initialisation.
enum Signer {
    Rsa(RsaKey),
    Aws(KeyPair),
    P256 { key: p256::ecdsa::SigningKey, public: Vec<u8> },
}

impl Signer {
    fn new_p256() -> Result<Signer, FnError> {
        loop {
            let mut bytes = [0u8; 32];
            rand::Rng::fill(&mut rand::rng(), &mut bytes[..]);
            if let Ok(secret) = p256::SecretKey::from_slice(&bytes) {
                return Ok(Signer::from_p256(p256::ecdsa::SigningKey::from(secret)));
            }
        }
    }

    fn from_p256(key: p256::ecdsa::SigningKey) -> Signer {
        let public = key.verifying_key().to_encoded_point(false).as_bytes().to_vec();
        Signer::P256 { key, public }
    }

    fn key_pem(&self) -> String {
        match self {
            Signer::Rsa(k) => pem_encode("RSA PRIVATE KEY", &k.to_pkcs1_der()),
            Signer::Aws(k) => key_pem(k),
            Signer::P256 { key, .. } => {
                use p256::pkcs8::EncodePrivateKey as _;
                match p256::SecretKey::from(key.as_nonzero_scalar()).to_pkcs8_der() {
                    Ok(doc) => pem_encode("PRIVATE KEY", doc.as_bytes()),
                    Err(_) => String::new(),
                }
            }
        }
    }
}

impl rcgen::PublicKeyData for Signer {
    fn der_bytes(&self) -> &[u8] {
        match self {
            Signer::Rsa(k) => k.public_der(),
            Signer::Aws(k) => k.der_bytes(),
            Signer::P256 { public, .. } => public,
        }
    }
    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        match self {
            Signer::Rsa(_) => &PKCS_RSA_SHA256,
            Signer::Aws(k) => k.algorithm(),
            Signer::P256 { .. } => &rcgen::PKCS_ECDSA_P256_SHA256,
        }
    }
}

impl rcgen::SigningKey for Signer {
    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, rcgen::Error> {
        match self {
            Signer::Rsa(k) => k.sign_pkcs1_sha256(msg).map_err(|_| rcgen::Error::RemoteKeyError),
            Signer::Aws(k) => k.sign(msg),
            Signer::P256 { key, .. } => {
                use p256::ecdsa::signature::Signer as _;
                let sig: p256::ecdsa::Signature = key.sign(msg);
                Ok(sig.to_der().as_bytes().to_vec())
            }
        }
    }
}

fn err(e: impl std::fmt::Display) -> FnError {
    FnError::Msg(format!("error generating certificate: {e}"))
}

// ---- tiny DER helpers (PKCS#1 <-> PKCS#8 for RSA keys) -----------------------

fn der_len(n: usize) -> Vec<u8> {
    if n < 0x80 {
        vec![n as u8]
    } else {
        let bytes: Vec<u8> = n.to_be_bytes().iter().copied().skip_while(|b| *b == 0).collect();
        let mut v = vec![0x80 | bytes.len() as u8];
        v.extend(bytes);
        v
    }
}

pub(super) fn der_tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    v.extend(der_len(content.len()));
    v.extend_from_slice(content);
    v
}

/// Reads one TLV: (tag, content, rest).
pub(super) fn der_read(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let tag = *b.first()?;
    let l0 = *b.get(1)? as usize;
    let (len, hdr) = if l0 < 0x80 {
        (l0, 2)
    } else {
        let n = l0 & 0x7f;
        let mut len = 0usize;
        for i in 0..n {
            len = (len << 8) | *b.get(2 + i)? as usize;
        }
        (len, 2 + n)
    };
    let content = b.get(hdr..hdr + len)?;
    Some((tag, content, &b[hdr + len..]))
}

const RSA_ALG_ID: [u8; 15] =
    [0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00];

fn pkcs8_to_pkcs1(pkcs8: &[u8]) -> Option<Vec<u8>> {
    let (_, seq, _) = der_read(pkcs8)?;
    let (_, _, rest) = der_read(seq)?; // version
    let (_, alg, rest) = der_read(rest)?; // algorithm
    if !alg.starts_with(&RSA_ALG_ID[2..13]) {
        return None;
    }
    let (tag, key, _) = der_read(rest)?;
    (tag == 0x04).then(|| key.to_vec())
}

fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or(""));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

fn pem_decode(pem: &str) -> Option<(String, Vec<u8>)> {
    let start = pem.find("-----BEGIN ")?;
    let rest = &pem[start + 11..];
    let label_end = rest.find("-----")?;
    let label = rest[..label_end].to_string();
    let body_start = label_end + 5;
    let end = rest.find("-----END ")?;
    let b64: String = rest[body_start..end].chars().filter(|c| !c.is_whitespace()).collect();
    let der = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    Some((label, der))
}

/// Key algorithm used by genCA / genSignedCert / genSelfSignedCert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyAlgorithm {
    /// RSA 2048, as Sprig generates (default).
    #[default]
    Rsa2048,
    /// ECDSA P-256: much faster to generate; keys are PKCS#8 PEM.
    EcdsaP256,
}

thread_local! {
    /// The key algorithm of this thread's render.
    static ALGORITHM: std::cell::Cell<KeyAlgorithm> =
        const { std::cell::Cell::new(KeyAlgorithm::Rsa2048) };
}

/// The functions that make keys (all of them begin with `gen`).
const KEY_FUNCTIONS: [&[u8]; 4] =
    [b"genCA", b"genSignedCert", b"genSelfSignedCert", b"genPrivateKey"];

/// Whether a template calls a key-making function.
pub fn calls_key_function(template: &[u8]) -> bool {
    memchr::memmem::find_iter(template, b"gen")
        .any(|at| KEY_FUNCTIONS.iter().any(|f| template[at..].starts_with(f)))
}

/// Primes made ahead for the RSA keys of the process's renders. Workers make primes and a key
/// takes two. Ahead of a render there is one worker per processor but one: the thread that
/// loads and renders keeps a core of its own (the exponentiations would slow it more than they
/// gain). A render waiting for a key searches for its primes too, racing the workers.
struct PrimeReserve {
    rx: std::sync::Mutex<std::sync::mpsc::Receiver<Prime>>,
    tx: std::sync::mpsc::Sender<Prime>,
    /// Primes no worker has started yet.
    to_start: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Primes asked for and not taken: being made or made.
    promised: std::sync::atomic::AtomicUsize,
}

fn prime_reserve() -> &'static PrimeReserve {
    static RESERVE: std::sync::OnceLock<PrimeReserve> = std::sync::OnceLock::new();
    RESERVE.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        PrimeReserve {
            rx: std::sync::Mutex::new(rx),
            tx,
            to_start: Default::default(),
            promised: Default::default(),
        }
    })
}

impl PrimeReserve {
    /// Makes sure at least `primes` primes are made or being made, by `workers` new workers
    /// when more are needed.
    fn ensure(&self, primes: usize, workers: usize) {
        use std::sync::atomic::Ordering;
        let promised = self.promised.load(Ordering::SeqCst);
        if promised >= primes {
            return;
        }
        let more = primes - promised;
        self.promised.fetch_add(more, Ordering::SeqCst);
        self.to_start.fetch_add(more, Ordering::SeqCst);
        for _ in 0..workers.min(more) {
            let (tx, to_start) = (self.tx.clone(), self.to_start.clone());
            // A worker that cannot be started only leaves its primes to the renders' threads.
            let _ = std::thread::Builder::new().name("engine-helm-rsa".into()).spawn(move || {
                while to_start
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok()
                {
                    let Ok(prime) = Prime::generate() else { return };
                    if tx.send(prime).is_err() {
                        return;
                    }
                }
            });
        }
    }

    /// A key of primes made ahead or, past them, made now: on the workers and on the calling
    /// thread, which would otherwise only wait.
    fn take(&self) -> Option<RsaKey> {
        let rx = self.rx.lock().ok()?;
        loop {
            self.ensure(2, background_workers());
            let a = self.next_prime(&rx)?;
            let b = self.next_prime(&rx)?;
            if let Some(key) = RsaKey::from_primes(a, b).ok()? {
                return Some(key);
            }
        }
    }

    /// The reserve's next prime. While none is ready the calling thread searches too and keeps
    /// whichever prime is found first; a worker's prime found later stays in the reserve.
    fn next_prime(&self, rx: &std::sync::mpsc::Receiver<Prime>) -> Option<Prime> {
        let mut theirs = rx.try_recv().ok();
        if theirs.is_none() {
            match Prime::generate_unless(|| {
                theirs = rx.try_recv().ok();
                theirs.is_some()
            }) {
                Ok(Some(ours)) => return Some(ours),
                Ok(None) => {}
                // The search failed here (out of memory): a worker's prime is the last chance.
                Err(_) => theirs = rx.recv_timeout(std::time::Duration::from_secs(30)).ok(),
            }
        }
        let prime = theirs?;
        self.promised.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        Some(prime)
    }
}

/// Starts making the primes of `keys` RSA keys in the background, unless as many are made or
/// being made; the next renders of the process take them. Loading a chart whose templates make
/// keys calls it, and so does a render of one as it begins.
pub fn reserve_rsa_keys(keys: usize) {
    prime_reserve().ensure(2 * keys, background_workers());
}

/// Workers started for primes: one per processor but one (the loading or rendering thread's),
/// at least one, and two at most (a render asks for two primes at a time).
fn background_workers() -> usize {
    let processors = std::thread::available_parallelism().map_or(1, |n| n.get());
    processors.saturating_sub(1).clamp(1, 2)
}

/// Configures key generation for the current thread's renders. With RSA, `prefetch` keys
/// are made ahead in the background (see [`reserve_rsa_keys`]), overlapping key generation
/// with template work; keys past them are made when asked for.
pub fn start_key_pool(algorithm: KeyAlgorithm, prefetch: usize) {
    ALGORITHM.set(algorithm);
    if algorithm == KeyAlgorithm::Rsa2048 {
        reserve_rsa_keys(prefetch);
    }
}

/// Ends the current thread's configuration (keys made ahead stay for the next render).
pub fn stop_key_pool() {
    ALGORITHM.set(KeyAlgorithm::default());
}

fn new_key() -> Result<Signer, FnError> {
    match ALGORITHM.get() {
        KeyAlgorithm::EcdsaP256 => Signer::new_p256(),
        KeyAlgorithm::Rsa2048 => rsa_key(),
    }
}

fn rsa_key() -> Result<Signer, FnError> {
    match prime_reserve().take() {
        Some(key) => Ok(Signer::Rsa(key)),
        None => RsaKey::generate().map(Signer::Rsa).map_err(err),
    }
}

/// PEM of the key in Sprig's format (PKCS#1 for RSA).
fn key_pem(k: &KeyPair) -> String {
    let der = k.serialize_der();
    match pkcs8_to_pkcs1(&der) {
        Some(p1) => pem_encode("RSA PRIVATE KEY", &p1),
        None => pem_encode("PRIVATE KEY", &der),
    }
}

/// Parses a PEM private key (PKCS#1 RSA, PKCS#8, or EC).
const EC_PUBLIC_KEY_OID: [u8; 9] = [0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];

/// Parses a PEM private key (PKCS#1 RSA, PKCS#8 RSA or P-256, SEC1 P-256).
fn parse_key(pem: &str) -> Result<Signer, FnError> {
    let (label, der) =
        pem_decode(pem).ok_or_else(|| FnError::Msg("error decoding key PEM".into()))?;
    let bad = |e: String| FnError::Msg(format!("error parsing private key: {e}"));
    if label == "EC PRIVATE KEY" {
        let secret = p256::SecretKey::from_sec1_der(&der).map_err(|e| bad(e.to_string()))?;
        return Ok(Signer::from_p256(p256::ecdsa::SigningKey::from(secret)));
    }
    if label == "RSA PRIVATE KEY" {
        return RsaKey::from_pkcs1_der(&der).map(Signer::Rsa).map_err(|e| bad(e.to_string()));
    }
    if let Some(pkcs1) = pkcs8_to_pkcs1(&der) {
        return RsaKey::from_pkcs1_der(&pkcs1).map(Signer::Rsa).map_err(|e| bad(e.to_string()));
    }
    let pkcs8 = der;
    let is_ec = pkcs8.windows(EC_PUBLIC_KEY_OID.len()).take(32).any(|w| w == EC_PUBLIC_KEY_OID);
    if is_ec {
        use p256::pkcs8::DecodePrivateKey as _;
        let key =
            p256::ecdsa::SigningKey::from_pkcs8_der(&pkcs8).map_err(|e| bad(e.to_string()))?;
        return Ok(Signer::from_p256(key));
    }
    KeyPair::from_pem(&pem_encode("PRIVATE KEY", &pkcs8))
        .map(Signer::Aws)
        .map_err(|e| bad(e.to_string()))
}

fn base_params(cn: &str, days: i64) -> Result<CertificateParams, FnError> {
    let mut p = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    p.distinguished_name = dn;
    let now = time::OffsetDateTime::now_utc();
    p.not_before = now;
    p.not_after = now + time::Duration::hours(24 * days);
    let mut serial = [0u8; 16];
    rand::Rng::fill(&mut rand::rng(), &mut serial[..]);
    serial[0] &= 0x7f;
    p.serial_number = Some(rcgen::SerialNumber::from_slice(&serial));
    Ok(p)
}

fn ca_params(cn: &str, days: i64) -> Result<CertificateParams, FnError> {
    let mut p = base_params(cn, days)?;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyCertSign,
    ];
    Ok(p)
}

fn gen_ca_impl(cn: &str, days: i64, key: Signer) -> R {
    let p = ca_params(cn, days)?;
    let cert = p.self_signed(&key).map_err(err)?;
    Ok(Value::Object(Rc::new(CertObj { cert: cert.pem(), key: key.key_pem() })))
}

fn gen_ca(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("genCA", a, 2)?;
    gen_ca_impl(&s(&a[0]), to_i64(&a[1]), new_key()?)
}

fn gen_ca_with_key(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("genCAWithKey", a, 3)?;
    gen_ca_impl(&s(&a[0]), to_i64(&a[1]), parse_key(&s(&a[2]))?)
}

fn sans(ips: &Value, dns: &Value) -> Result<Vec<SanType>, FnError> {
    let mut out = Vec::new();
    let items = |v: &Value| -> Vec<String> {
        match v {
            Value::List(l) => l.iter().map(|x| x.to_go_string()).collect(),
            Value::Nil => Vec::new(),
            other => vec![other.to_go_string()],
        }
    };
    for ip in items(ips) {
        let addr: std::net::IpAddr =
            ip.parse().map_err(|_| FnError::Msg(format!("error parsing ip: {ip}")))?;
        out.push(SanType::IpAddress(addr));
    }
    for d in items(dns) {
        out.push(SanType::DnsName(d.try_into().map_err(err)?));
    }
    Ok(out)
}

fn leaf_params(
    cn: &str,
    ips: &Value,
    dns: &Value,
    days: i64,
) -> Result<CertificateParams, FnError> {
    let mut p = base_params(cn, days)?;
    p.subject_alt_names = sans(ips, dns)?;
    p.key_usages = vec![KeyUsagePurpose::KeyEncipherment, KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages =
        vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    Ok(p)
}

fn self_signed(a: &[Value], key: Signer) -> R {
    let p = leaf_params(&s(&a[0]), &a[1], &a[2], to_i64(&a[3]))?;
    let cert = p.self_signed(&key).map_err(err)?;
    Ok(Value::Object(Rc::new(CertObj { cert: cert.pem(), key: key.key_pem() })))
}

fn gen_self_signed_cert(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("genSelfSignedCert", a, 4)?;
    self_signed(a, new_key()?)
}

fn gen_self_signed_cert_with_key(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("genSelfSignedCertWithKey", a, 5)?;
    self_signed(a, parse_key(&s(&a[4]))?)
}

fn ca_parts(v: &Value) -> Result<(String, String), FnError> {
    match v {
        Value::Object(o) => match (o.field("Cert"), o.field("Key")) {
            (Some(c), Some(k)) => Ok((c.to_go_string(), k.to_go_string())),
            _ => Err(FnError::Msg("wrong type for value; expected sprig.certificate".into())),
        },
        Value::Map(m) => {
            let m = m.borrow();
            match (m.get("Cert"), m.get("Key")) {
                (Some(c), Some(k)) => Ok((c.to_go_string(), k.to_go_string())),
                _ => Err(FnError::Msg("wrong type for value; expected sprig.certificate".into())),
            }
        }
        other => Err(FnError::Msg(format!(
            "wrong type for value; expected sprig.certificate; got {}",
            other.type_name()
        ))),
    }
}

fn signed(a: &[Value], key: Signer) -> R {
    let (ca_cert, ca_key) = ca_parts(&a[4])?;
    let ca_kp = parse_key(&ca_key)?;
    let issuer = Issuer::from_ca_cert_pem(&ca_cert, ca_kp)
        .map_err(|e| FnError::Msg(format!("error parsing CA certificate: {e}")))?;
    let p = leaf_params(&s(&a[0]), &a[1], &a[2], to_i64(&a[3]))?;
    let cert = p.signed_by(&key, &issuer).map_err(err)?;
    Ok(Value::Object(Rc::new(CertObj { cert: cert.pem(), key: key.key_pem() })))
}

fn gen_signed_cert(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("genSignedCert", a, 5)?;
    signed(a, new_key()?)
}

fn gen_signed_cert_with_key(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("genSignedCertWithKey", a, 6)?;
    signed(a, parse_key(&s(&a[5]))?)
}

fn build_custom_cert(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("buildCustomCert", a, 2)?;
    let dec = |v: &Value| -> Result<String, FnError> {
        let b = base64::engine::general_purpose::STANDARD
            .decode(s(v).as_bytes())
            .map_err(|e| FnError::Msg(format!("unable to decode base64 certificate: {e}")))?;
        Ok(String::from_utf8_lossy(&b).into_owned())
    };
    let cert = dec(&a[0])?;
    let key = dec(&a[1])?;
    if pem_decode(&cert).is_none() {
        return Err(FnError::Msg("unable to decode certificate".into()));
    }
    if pem_decode(&key).is_none() {
        return Err(FnError::Msg("unable to decode key".into()));
    }
    Ok(Value::Object(Rc::new(CertObj { cert, key })))
}

fn gen_private_key(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("genPrivateKey", a, 1)?;
    let typ = s(&a[0]);
    let pem = match typ.as_str() {
        "" | "rsa" => {
            let key = rsa_key()?;
            key.key_pem()
        }
        "ecdsa" => {
            let mut bytes = [0u8; 32];
            let secret = loop {
                rand::Rng::fill(&mut rand::rng(), &mut bytes[..]);
                if let Ok(k) = p256::SecretKey::from_slice(&bytes) {
                    break k;
                }
            };
            let der = secret.to_sec1_der().map_err(err)?;
            pem_encode("EC PRIVATE KEY", &der)
        }
        "ed25519" => KeyPair::generate_for(&rcgen::PKCS_ED25519).map_err(err)?.serialize_pem(),
        other => return Ok(Value::str(format!("Unknown type {other}"))),
    };
    Ok(Value::str(pem))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain_ok(algorithm: KeyAlgorithm) {
        use crate::lookup::NoLookup;
        use crate::template::TemplateSet;
        start_key_pool(algorithm, 1);
        let set = TemplateSet::default();
        let mut e = Exec::new(&set, &NoLookup);
        let ca = gen_ca(&mut e, &[Value::str("Test CA"), Value::Int(365)]).unwrap();
        let leaf = gen_signed_cert(
            &mut e,
            &[
                Value::str("leaf"),
                Value::from(vec![Value::str("10.0.0.1")]),
                Value::from(vec![Value::str("a.example.com")]),
                Value::Int(30),
                ca.clone(),
            ],
        )
        .unwrap();
        stop_key_pool();
        let der = |v: &Value| {
            let pem = v.to_plain().get("Cert").unwrap().to_go_string();
            pem_decode(&pem).unwrap().1
        };
        let (ca_der, leaf_der) = (der(&ca), der(&leaf));
        let (_, ca_cert) = x509_parser::parse_x509_certificate(&ca_der).unwrap();
        let (_, leaf_cert) = x509_parser::parse_x509_certificate(&leaf_der).unwrap();
        assert!(ca_cert.is_ca());
        ca_cert.verify_signature(None).unwrap();
        leaf_cert.verify_signature(Some(ca_cert.public_key())).unwrap();
        let key = leaf.to_plain().get("Key").unwrap().to_go_string();
        let want =
            if algorithm == KeyAlgorithm::Rsa2048 { "RSA PRIVATE KEY" } else { "PRIVATE KEY" };
        assert_eq!(pem_decode(&key).unwrap().0, want);
        // keys round-trip through the parser (used for CA keys)
        parse_key(&key).unwrap();
    }

    #[test]
    fn certificates_chain_to_the_ca() {
        chain_ok(KeyAlgorithm::EcdsaP256);
        chain_ok(KeyAlgorithm::Rsa2048);
    }

    #[test]
    fn a_render_makes_the_primes_no_worker_brings_and_takes_those_that_come() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (tx, rx) = std::sync::mpsc::channel();
        // Two primes promised (so no worker is started) that no worker will bring.
        let reserve = PrimeReserve {
            rx: std::sync::Mutex::new(rx),
            tx: tx.clone(),
            to_start: Default::default(),
            promised: AtomicUsize::new(2),
        };
        assert!(reserve.take().is_some());
        assert_eq!(reserve.promised.load(Ordering::SeqCst), 2, "nothing came from the reserve");
        // A prime in the reserve is taken (no longer promised) before any search of its own.
        tx.send(Prime::generate().unwrap()).unwrap();
        let lock = reserve.rx.lock().unwrap();
        assert!(reserve.next_prime(&lock).is_some());
        assert_eq!(reserve.promised.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn keys_come_from_the_reserve_and_past_it_from_two_threads_all_different() {
        reserve_rsa_keys(1);
        let take = || {
            (0..3)
                .map(|_| match rsa_key().unwrap() {
                    Signer::Rsa(k) => k.public_der().to_vec(),
                    _ => panic!("not an RSA key"),
                })
                .collect::<Vec<_>>()
        };
        let other = std::thread::spawn(take);
        let mut all = take();
        all.extend(other.join().unwrap());
        let distinct: std::collections::BTreeSet<_> = all.iter().collect();
        assert_eq!(distinct.len(), 6);
    }

    #[test]
    fn templates_that_make_keys_are_told_apart() {
        assert!(calls_key_function(b"{{- $ca = genCA \"Cilium CA\" $validity -}}"));
        assert!(calls_key_function(b"{{ genPrivateKey \"rsa\" }}"));
        assert!(!calls_key_function(b"{{ .Values.hubble.tls.ca.cert | b64enc }}"));
        assert!(!calls_key_function(b"generation: {{ .Values.general.genC }}"));
        assert!(calls_key_function(b"generation: {{ genSelfSignedCert \"x\" nil nil 1 }}"));
    }

    #[test]
    fn an_rsa_pkcs8_key_gives_its_pkcs1_key() {
        let inner = vec![0x30, 0x03, 0x02, 0x01, 0x00];
        let mut body = der_tlv(0x02, &[0]);
        body.extend_from_slice(&RSA_ALG_ID);
        body.extend(der_tlv(0x04, &inner));
        assert_eq!(pkcs8_to_pkcs1(&der_tlv(0x30, &body)).unwrap(), inner);
    }
}
