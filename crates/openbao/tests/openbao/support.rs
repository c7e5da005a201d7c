//! The engine side of the tests: the crate's provider with a test's kinds, an engine around it,
//! a JWT issuer, and a check that secrets appear nowhere.

use base64::Engine as _;
use engine::{Engine, LocalBackend, Secret};
use engine_openbao::{BaoClient, BaoConnection, OpenBao, OpenBaoProvider};
use engine_testpeers::BaoServer;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// What the tests reach a [`BaoServer`] with: the crate's own connection and client.
pub trait Connect {
    /// A connection to the server with `token`.
    fn connection(&self, token: Option<Secret>) -> BaoConnection;
    /// The dev server's root token.
    fn root_secret(&self) -> Secret;
    /// A client with `token`: the tests' own, independent of the kinds.
    fn client(&self, token: Secret) -> BaoClient {
        BaoClient::new(&self.connection(Some(token))).expect("a client")
    }
    /// A client with the dev server's root token.
    fn root_client(&self) -> BaoClient {
        self.client(self.root_secret())
    }
}

impl Connect for BaoServer {
    fn connection(&self, token: Option<Secret>) -> BaoConnection {
        BaoConnection {
            route: None,
            address: self.address.clone(),
            ca_bundle: self.ca_bundle.clone(),
            token,
        }
    }

    fn root_secret(&self) -> Secret {
        Secret::new(self.root_token.as_deref().expect("a dev server has a root token"))
    }
}

/// The provider of `[openbao]` at the AWS lane's addresses, with `bao`'s kinds.
pub fn provider(bao: OpenBao) -> Arc<OpenBaoProvider> {
    Arc::new(OpenBaoProvider::builder("aws", "aws.openbao.config", bao).build())
}

pub const GLOBALS: &str = r#"
[globals]
cloud = "aws"
region = "eu-west-3"
cluster_name = "aws-0"
domain = "example.test"
"#;

/// An engine for `openbao_section` (TOML under `[openbao]`) of a spec in `spec_dir` (its files
/// are relative to it), state in `state_dir`.
pub fn engine(
    provider: Arc<OpenBaoProvider>,
    openbao_section: &str,
    spec_dir: &Path,
    state_dir: &Path,
) -> Engine {
    let text = format!("{GLOBALS}\n{openbao_section}");
    let file = spec_dir.join("aws.toml").display().to_string();
    Engine::builder()
        .spec_str(&file, "aws", &text)
        .provider(provider)
        .state(LocalBackend::new(state_dir.join("aws.state.json")))
        .retry_backoff(Duration::from_millis(100))
        .build()
        .unwrap_or_else(|e| panic!("spec is valid: {e:?}"))
}

/// A JWT issuer with an EC P-256 key (ES256).
pub struct JwtIssuer {
    pub issuer: String,
    pub public_key_pem: String,
    key_der: Secret,
}

impl JwtIssuer {
    pub fn new(issuer: &str) -> JwtIssuer {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        JwtIssuer {
            issuer: issuer.to_string(),
            public_key_pem: key.public_key_pem(),
            key_der: Secret::new(
                base64::engine::general_purpose::STANDARD.encode(key.serialize_der()),
            ),
        }
    }

    /// A signed token for `subject` and `audience`, valid for five minutes.
    pub fn token(&self, subject: &str, audience: &str) -> Secret {
        self.token_with(subject, audience, serde_json::json!({}))
    }

    /// A signed token with `extra` claims as well.
    pub fn token_with(&self, subject: &str, audience: &str, extra: serde_json::Value) -> Secret {
        use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let header = serde_json::json!({"alg": "ES256", "typ": "JWT"});
        let mut claims = serde_json::json!({
            "iss": self.issuer, "sub": subject, "aud": [audience],
            "iat": now, "nbf": now - 5, "exp": now + 300,
        });
        if let (Some(c), Some(e)) = (claims.as_object_mut(), extra.as_object()) {
            c.extend(e.clone());
        }
        let signing_input =
            format!("{}.{}", b64.encode(header.to_string()), b64.encode(claims.to_string()));
        let der = base64::engine::general_purpose::STANDARD.decode(self.key_der.expose()).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der).unwrap();
        let sig =
            key.sign(&aws_lc_rs::rand::SystemRandom::new(), signing_input.as_bytes()).unwrap();
        Secret::new(format!("{signing_input}.{}", b64.encode(sig.as_ref())))
    }
}

/// Fails if any of `secrets` (or a recognisable piece of it) appears in `text`.
pub fn assert_no_secret(what: &str, text: &str, secrets: &[(&str, &Secret)]) {
    for (name, secret) in secrets {
        let value = secret.expose().trim();
        assert!(!value.is_empty(), "{name} is empty");
        assert!(!text.contains(value), "{what} contains the {name}");
        // PEM keys: any line of the base64 body is enough to leak.
        for line in value.lines().filter(|l| l.len() >= 32 && !l.starts_with("-----")) {
            assert!(!text.contains(line), "{what} contains part of the {name}");
        }
    }
    assert!(!text.contains("PRIVATE KEY"), "{what} contains a private key");
}
