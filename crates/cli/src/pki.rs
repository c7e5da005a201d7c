//! The cloud intermediate CA in the secret store, issued from the offline root.

use engine::Secret;
use engine_openbao::{SecretSink, SecretSource};
use engine_pki::{self as pki, IntermediateBundle, RootCa};
use std::fmt;

/// What [`ensure_intermediate`] did.
pub enum Outcome {
    /// A new intermediate was issued and stored.
    Issued(IntermediateBundle),
    /// The stored one chains to the root and is kept.
    Kept(IntermediateBundle),
}

impl Outcome {
    /// The intermediate's certificate (PEM).
    pub fn certificate(&self) -> &str {
        match self {
            Outcome::Issued(b) | Outcome::Kept(b) => &b.cert_pem,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Issued(_) => write!(f, "Issued the intermediate CA into"),
            Outcome::Kept(_) => write!(f, "Kept the intermediate CA already in"),
        }
    }
}

/// Makes sure `name` in the store holds an intermediate of `root` for `cloud`: a stored one whose
/// certificate chains to `root` is kept, anything else is replaced by a new one.
pub async fn ensure_intermediate<S: SecretSink + SecretSource + ?Sized>(
    root: &RootCa,
    cloud: &str,
    name: &str,
    store: &S,
) -> Result<Outcome, String> {
    let place = engine_openbao::SecretRef::parse(name);
    if let Some(stored) = place.read(store).await.map_err(|e| e.to_string())?
        && let Ok(bundle) = IntermediateBundle::from_bundle_pem(&stored)
        && bundle.root_cert_pem.trim() == root.cert_pem.trim()
        && chains_to(&bundle, root)
    {
        return Ok(Outcome::Kept(bundle));
    }
    let bundle = pki::intermediate(root, cloud).map_err(|e| e.to_string())?;
    let pem: Secret = bundle.bundle_pem();
    store.put(&place.name, &place.stored(&pem)).await.map_err(|e| e.to_string())?;
    Ok(Outcome::Issued(bundle))
}

/// Whether a leaf issued by `bundle` verifies against `root` (the bundle's key and certificate
/// belong together and chain to the root).
fn chains_to(bundle: &IntermediateBundle, root: &RootCa) -> bool {
    pki::server_leaf(bundle, &["chain-check.invalid"])
        .and_then(|leaf| pki::verify_server_chain(&leaf.chain_pem, &[], &root.cert_pem, None))
        .is_ok()
}
