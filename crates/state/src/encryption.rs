//! Encryption of state at rest: an envelope, AES-256-GCM under a data key that a [`KeySource`]
//! makes and finds again (a passphrase through PBKDF2, a cloud KMS's data keys).
//!
//! An encrypted state is still JSON, so a reader can tell what it is:
//!
//! ```json
//! { "spec": "aws", "lineage": "…", "serial": 7,
//!   "encrypted": { "method": "passphrase", "key": { "salt": "…", "iterations": 600000 },
//!                  "nonce": "…", "ciphertext": "…" } }
//! ```
//!
//! `spec`, `lineage` and `serial` stay in clear (a save checks the serial it replaces) and are
//! bound to the ciphertext as associated data: an envelope's header cannot be swapped. A run
//! makes one data key and seals every save with it under a fresh random nonce.
//!
//! Hand-written on `ring`'s AEAD and PBKDF2 (both already in the build through TLS): the
//! envelope is a few lines around them.

use crate::{StateDocument, StateError};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};

/// A 256-bit data key, wiped when dropped.
pub struct DataKey([u8; 32]);

impl DataKey {
    /// A key of these 32 bytes.
    pub fn new(bytes: [u8; 32]) -> Self {
        DataKey(bytes)
    }

    /// A new key from the system's secure random source.
    pub fn random() -> Result<Self, String> {
        let mut bytes = [0u8; 32];
        SystemRandom::new().fill(&mut bytes).map_err(|_| "no randomness".to_string())?;
        Ok(DataKey(bytes))
    }

    /// The key's bytes, for a key service that seals it (Cloud KMS `Encrypt`); never log them.
    pub fn expose(&self) -> &[u8; 32] {
        &self.0
    }
}

impl Drop for DataKey {
    fn drop(&mut self) {
        // Volatile writes: the wipe is not optimised away.
        for b in self.0.iter_mut() {
            unsafe { std::ptr::write_volatile(b, 0) };
        }
    }
}

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DataKey(sensitive)")
    }
}

/// Where data keys come from: makes one for new saves, and finds again the one an envelope
/// names by what [`KeySource::new_key`] stored beside it (never the key itself in clear).
pub trait KeySource: Send + Sync + fmt::Debug {
    /// The method's name in the envelope (`passphrase`, `aws_kms`).
    fn method(&self) -> &'static str;

    /// A new data key and what to store to find it again.
    fn new_key(&self) -> Result<(DataKey, serde_json::Value), String>;

    /// The data key that `stored` (from [`KeySource::new_key`]) names.
    fn open_key(&self, stored: &serde_json::Value) -> Result<DataKey, String>;
}

/// How a backend stores documents: in clear, or sealed with the data keys of a [`KeySource`].
/// Reading opens envelopes of any method it has a source for, so a state can move from one
/// method to another.
#[derive(Debug, Default)]
pub struct Encryption {
    /// Seals new saves; `None` writes clear JSON.
    write: Option<Arc<dyn KeySource>>,
    /// Opens envelopes, by method.
    read: Vec<Arc<dyn KeySource>>,
    /// The data key of this run's saves.
    sealing: Mutex<Option<Arc<(DataKey, serde_json::Value)>>>,
    /// Data keys already opened, by what names them.
    opened: Mutex<Vec<(serde_json::Value, Arc<DataKey>)>>,
}

#[derive(Serialize, Deserialize)]
struct Envelope {
    spec: String,
    lineage: String,
    serial: u64,
    encrypted: Sealed,
}

#[derive(Serialize, Deserialize)]
struct Sealed {
    method: String,
    key: serde_json::Value,
    nonce: String,
    ciphertext: String,
}

/// The associated data binding an envelope's clear header to its ciphertext.
fn header(spec: &str, lineage: &str, serial: u64) -> Vec<u8> {
    format!("engine-state\n{spec}\n{lineage}\n{serial}").into_bytes()
}

impl Encryption {
    /// Clear JSON; encrypted states can still be read with `read` sources.
    pub fn clear(read: Vec<Arc<dyn KeySource>>) -> Self {
        Encryption { read, ..Encryption::default() }
    }

    /// Saves sealed with `source`'s data keys; envelopes of `source` and of `read` are opened.
    pub fn sealed_with(source: Arc<dyn KeySource>, mut read: Vec<Arc<dyn KeySource>>) -> Self {
        read.push(source.clone());
        Encryption { write: Some(source), read, ..Encryption::default() }
    }

    /// The method new saves are sealed with (`None`: clear).
    pub fn method(&self) -> Option<&'static str> {
        self.write.as_ref().map(|s| s.method())
    }

    /// The bytes `doc` is stored as: pretty JSON, sealed when a key source writes.
    pub fn encode(&self, location: &str, doc: &StateDocument) -> Result<Vec<u8>, StateError> {
        let clear = serde_json::to_vec_pretty(doc).unwrap_or_default();
        let Some(source) = &self.write else {
            let mut text = clear;
            text.push(b'\n');
            return Ok(text);
        };
        let failed =
            |message: String| StateError::Encryption { location: location.into(), message };
        let key = {
            let mut sealing = self.sealing.lock().unwrap_or_else(|p| p.into_inner());
            match &*sealing {
                Some(key) => key.clone(),
                None => {
                    let made = Arc::new(source.new_key().map_err(failed)?);
                    *sealing = Some(made.clone());
                    made
                }
            }
        };
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new().fill(&mut nonce).map_err(|_| failed("no randomness".into()))?;
        let mut sealed = clear;
        aead_key(&key.0.0)
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(header(&doc.spec, &doc.lineage, doc.serial)),
                &mut sealed,
            )
            .map_err(|_| failed("sealing failed".into()))?;
        let envelope = Envelope {
            spec: doc.spec.clone(),
            lineage: doc.lineage.clone(),
            serial: doc.serial,
            encrypted: Sealed {
                method: source.method().into(),
                key: key.1.clone(),
                nonce: BASE64.encode(nonce),
                ciphertext: BASE64.encode(sealed),
            },
        };
        let mut text = serde_json::to_vec_pretty(&envelope).unwrap_or_default();
        text.push(b'\n');
        Ok(text)
    }

    /// The document stored as `bytes`, opening its envelope if it has one.
    pub fn decode(&self, location: &str, bytes: &[u8]) -> Result<StateDocument, StateError> {
        let parse = |bytes: &[u8]| {
            serde_json::from_slice::<StateDocument>(bytes)
                .map_err(|source| StateError::Parse { location: location.into(), source })
        };
        #[derive(Deserialize)]
        struct Probe {
            encrypted: Option<serde_json::Value>,
        }
        let probe: Probe = serde_json::from_slice(bytes)
            .map_err(|source| StateError::Parse { location: location.into(), source })?;
        if probe.encrypted.is_none() {
            return parse(bytes);
        }
        let failed =
            |message: String| StateError::Encryption { location: location.into(), message };
        let envelope: Envelope = serde_json::from_slice(bytes)
            .map_err(|source| StateError::Parse { location: location.into(), source })?;
        let sealed = &envelope.encrypted;
        let Some(source) = self.read.iter().find(|s| s.method() == sealed.method) else {
            return Err(failed(format!(
                "it is encrypted with `{}`; give its key ([state.encryption] or the environment)",
                sealed.method
            )));
        };
        let key = self.opened_key(source.as_ref(), &sealed.key).map_err(failed)?;
        let nonce: [u8; NONCE_LEN] = BASE64
            .decode(&sealed.nonce)
            .ok()
            .and_then(|n| n.try_into().ok())
            .ok_or_else(|| failed("its nonce is not valid".into()))?;
        let mut data = BASE64
            .decode(&sealed.ciphertext)
            .map_err(|_| failed("its ciphertext is not base64".into()))?;
        let clear = aead_key(&key.0)
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(header(&envelope.spec, &envelope.lineage, envelope.serial)),
                &mut data,
            )
            .map_err(|_| failed("it does not open with this key (wrong key, or altered)".into()))?;
        let doc = parse(clear)?;
        if (doc.spec.as_str(), doc.lineage.as_str(), doc.serial)
            != (envelope.spec.as_str(), envelope.lineage.as_str(), envelope.serial)
        {
            return Err(failed("its header does not match its contents".into()));
        }
        Ok(doc)
    }

    fn opened_key(
        &self,
        source: &dyn KeySource,
        stored: &serde_json::Value,
    ) -> Result<Arc<DataKey>, String> {
        if let Some(sealing) = &*self.sealing.lock().unwrap_or_else(|p| p.into_inner())
            && &sealing.1 == stored
        {
            return Ok(Arc::new(DataKey(sealing.0.0)));
        }
        let mut opened = self.opened.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, key)) = opened.iter().find(|(names, _)| names == stored) {
            return Ok(key.clone());
        }
        let key = Arc::new(source.open_key(stored)?);
        opened.push((stored.clone(), key.clone()));
        Ok(key)
    }
}

fn aead_key(bytes: &[u8; 32]) -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, bytes).expect("a 32-byte key"))
}

/// Data keys derived from a passphrase with PBKDF2-HMAC-SHA512 and a random salt per run.
pub struct Passphrase {
    passphrase: String,
    iterations: NonZeroU32,
}

/// PBKDF2 iterations for new keys (OWASP's recommendation for HMAC-SHA512, as OpenTofu uses).
pub const PBKDF2_ITERATIONS: u32 = 600_000;

/// The shortest passphrase accepted.
pub const PASSPHRASE_MIN_LEN: usize = 16;

impl fmt::Debug for Passphrase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Passphrase").field("iterations", &self.iterations).finish_non_exhaustive()
    }
}

impl Passphrase {
    /// Keys from `passphrase` (at least [`PASSPHRASE_MIN_LEN`] characters).
    pub fn new(passphrase: String) -> Result<Self, String> {
        if passphrase.chars().count() < PASSPHRASE_MIN_LEN {
            return Err(format!(
                "the passphrase must have at least {PASSPHRASE_MIN_LEN} characters"
            ));
        }
        let iterations = NonZeroU32::new(PBKDF2_ITERATIONS).expect("non-zero");
        Ok(Passphrase { passphrase, iterations })
    }

    fn derive(&self, salt: &[u8], iterations: NonZeroU32) -> DataKey {
        let mut key = [0u8; 32];
        ring::pbkdf2::derive(
            ring::pbkdf2::PBKDF2_HMAC_SHA512,
            iterations,
            salt,
            self.passphrase.as_bytes(),
            &mut key,
        );
        DataKey(key)
    }
}

impl KeySource for Passphrase {
    fn method(&self) -> &'static str {
        "passphrase"
    }

    fn new_key(&self) -> Result<(DataKey, serde_json::Value), String> {
        let mut salt = [0u8; 32];
        SystemRandom::new().fill(&mut salt).map_err(|_| "no randomness".to_string())?;
        let key = self.derive(&salt, self.iterations);
        let stored = serde_json::json!({
            "kdf": "pbkdf2-hmac-sha512",
            "salt": BASE64.encode(salt),
            "iterations": self.iterations.get(),
        });
        Ok((key, stored))
    }

    fn open_key(&self, stored: &serde_json::Value) -> Result<DataKey, String> {
        let salt = stored["salt"].as_str().and_then(|s| BASE64.decode(s).ok());
        let iterations = stored["iterations"].as_u64().and_then(|n| u32::try_from(n).ok());
        match (stored["kdf"].as_str(), salt, iterations.and_then(NonZeroU32::new)) {
            (Some("pbkdf2-hmac-sha512"), Some(salt), Some(iterations)) => {
                Ok(self.derive(&salt, iterations))
            }
            _ => Err("its passphrase key settings are not valid".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passphrase(text: &str) -> Arc<dyn KeySource> {
        Arc::new(Passphrase::new(text.into()).unwrap())
    }

    fn doc_with_secret() -> StateDocument {
        let mut doc = StateDocument::new("aws");
        doc.serial = 3;
        doc.resources.insert(
            "aws.openbao.config.mount.kv".into(),
            crate::ResourceState {
                kind: "openbao_mount".into(),
                id: "kv-ids-in-clear-text".into(),
                attributes: Default::default(),
                dependencies: vec![],
                protected: false,
                retained: false,
            },
        );
        doc
    }

    #[test]
    fn a_sealed_state_round_trips_and_shows_nothing_in_clear_but_its_header() {
        let sealed = Encryption::sealed_with(passphrase("correct horse battery staple"), vec![]);
        let doc = doc_with_secret();
        let bytes = sealed.encode("s", &doc).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(!text.contains("kv-ids-in-clear-text"), "{text}");
        assert!(
            text.contains("\"serial\": 3") && text.contains("\"method\": \"passphrase\""),
            "{text}"
        );
        assert_eq!(crate::backend::serial_of("s", &bytes).unwrap(), 3, "the serial reads in clear");
        assert_eq!(sealed.decode("s", &bytes).unwrap(), doc);
        let other_run = Encryption::clear(vec![passphrase("correct horse battery staple")]);
        assert_eq!(other_run.decode("s", &bytes).unwrap(), doc, "opened by another run");
    }

    #[test]
    fn a_wrong_key_a_missing_key_and_an_altered_header_are_refused() {
        let bytes = Encryption::sealed_with(passphrase("correct horse battery staple"), vec![])
            .encode("s", &doc_with_secret())
            .unwrap();
        let wrong = Encryption::clear(vec![passphrase("incorrect horse battery staple")]);
        let err = wrong.decode("s", &bytes).unwrap_err().to_string();
        assert!(err.contains("does not open with this key"), "{err}");
        let err = Encryption::default().decode("s", &bytes).unwrap_err().to_string();
        assert!(err.contains("encrypted with `passphrase`"), "{err}");
        let altered = String::from_utf8(bytes).unwrap().replace("\"serial\": 3", "\"serial\": 4");
        let right = Encryption::clear(vec![passphrase("correct horse battery staple")]);
        let err = right.decode("s", altered.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("does not open"), "{err}");
    }

    #[test]
    fn a_clear_state_reads_whatever_the_encryption() {
        let doc = doc_with_secret();
        let clear = Encryption::default().encode("s", &doc).unwrap();
        let sealed = Encryption::sealed_with(passphrase("correct horse battery staple"), vec![]);
        assert_eq!(sealed.decode("s", &clear).unwrap(), doc);
    }

    #[test]
    fn short_passphrases_are_refused() {
        assert!(Passphrase::new("short".into()).unwrap_err().contains("at least 16"));
    }
}
