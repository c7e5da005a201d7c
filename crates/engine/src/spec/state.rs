//! `[state]`: where the spec's state is kept and how its lock is held.
//!
//! ```toml
//! [state]
//! backend = "s3"                      # "local" (default), "s3" or "gcs"
//! bucket = "acme-platform-state"
//! key = "aws/platform.state.json"     # default: engine/<spec>.state.json
//! region = "eu-west-3"                # s3 only; default: [globals] region
//! lease_seconds = 60                  # how long a lock lasts unless its run renews it
//!
//! [state.encryption]                  # optional: sealed at rest (AES-256-GCM envelope)
//! method = "passphrase"               # or "aws_kms", "gcp_kms"
//! passphrase_env = "ENGINE_STATE_PASSPHRASE"  # the variable holding it (default shown)
//! # kms_key_id = "alias/engine-state"         # with aws_kms
//! # kms_key_id = "projects/p/locations/europe-west4/keyRings/r/cryptoKeys/k"  # with gcp_kms
//! ```
//!
//! The command line's `--state` overrides it: a path, `s3://bucket/key` or `gs://bucket/key`.

use super::{FieldPath, SpecError, SpecErrors, SpecSource};
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `[state]` section as written.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StateSection {
    #[serde(default)]
    pub backend: BackendChoice,
    /// The state file (local), relative to the spec's directory.
    pub path: Option<String>,
    /// The bucket (s3, gcs).
    pub bucket: Option<String>,
    /// The object key (s3, gcs).
    pub key: Option<String>,
    /// The bucket's region (s3).
    pub region: Option<String>,
    /// How long a lock lasts unless renewed (s3, gcs).
    pub lease_seconds: Option<u64>,
    /// How the state is sealed at rest (default: clear JSON, sensitive values as digests).
    pub encryption: Option<EncryptionSection>,
}

/// `[state.encryption]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EncryptionSection {
    pub method: EncryptionMethod,
    /// The environment variable holding the passphrase (never the spec).
    pub passphrase_env: Option<String>,
    /// The KMS key data keys are made under: AWS (id, ARN or `alias/...`) or Cloud KMS
    /// (`projects/P/locations/L/keyRings/R/cryptoKeys/K`).
    pub kms_key_id: Option<String>,
}

/// Where the data key of a sealed state comes from.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EncryptionMethod {
    /// PBKDF2 from a passphrase in the environment.
    Passphrase,
    /// AWS KMS data keys.
    AwsKms,
    /// Data keys sealed by a Cloud KMS crypto key.
    GcpKms,
}

impl EncryptionMethod {
    /// The method as the spec writes it.
    pub fn name(self) -> &'static str {
        match self {
            EncryptionMethod::Passphrase => "passphrase",
            EncryptionMethod::AwsKms => "aws_kms",
            EncryptionMethod::GcpKms => "gcp_kms",
        }
    }
}

/// The variable a passphrase is read from unless `passphrase_env` names another.
pub const PASSPHRASE_ENV: &str = "ENGINE_STATE_PASSPHRASE";

impl EncryptionSection {
    /// The environment variable holding the passphrase.
    pub fn passphrase_variable(&self) -> &str {
        self.passphrase_env.as_deref().unwrap_or(PASSPHRASE_ENV)
    }
}

/// Which backend keeps the state.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    #[default]
    Local,
    S3,
    Gcs,
}

/// Where a spec's state is, decided from `[state]` and the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateLocation {
    /// A file on this machine.
    Local { path: PathBuf },
    /// An object in an S3 bucket, locked by a lease object beside it.
    S3 { bucket: String, key: String, region: String, lease: Duration },
    /// An object in a Cloud Storage bucket, locked by a lease object beside it.
    Gcs { bucket: String, key: String, lease: Duration },
}

impl fmt::Display for StateLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateLocation::Local { path } => write!(f, "{}", path.display()),
            StateLocation::S3 { bucket, key, .. } => write!(f, "s3://{bucket}/{key}"),
            StateLocation::Gcs { bucket, key, .. } => write!(f, "gs://{bucket}/{key}"),
        }
    }
}

impl StateLocation {
    /// The location a command line names: `s3://BUCKET/KEY` (in `region`), `gs://BUCKET/KEY`
    /// (both locked by leases of `lease`) or a path; `None` for a malformed bucket address.
    pub fn from_arg(arg: &str, region: String, lease: Duration) -> Option<StateLocation> {
        let split = |rest: &str, valid: fn(&str) -> bool| {
            let (bucket, key) = rest.split_once('/')?;
            (valid(bucket) && !key.is_empty() && !key.starts_with('/'))
                .then(|| (bucket.to_string(), key.to_string()))
        };
        if let Some(rest) = arg.strip_prefix("s3://") {
            let (bucket, key) = split(rest, bucket_name)?;
            return Some(StateLocation::S3 { bucket, key, region, lease });
        }
        if let Some(rest) = arg.strip_prefix("gs://") {
            let (bucket, key) = split(rest, gcs_bucket_name)?;
            return Some(StateLocation::Gcs { bucket, key, lease });
        }
        Some(StateLocation::Local { path: PathBuf::from(arg) })
    }
}

/// The shortest and longest lease a spec may ask for.
const LEASE_SECONDS: std::ops::RangeInclusive<u64> = 2..=3600;

impl SpecSource {
    /// The `[state]` section (defaults when absent).
    pub fn state_section(&self) -> Result<StateSection, SpecErrors> {
        Ok(self.section::<StateSection>("state")?.unwrap_or_default())
    }

    /// How this spec's state is sealed (`None`: clear), checked.
    pub fn state_encryption(&self) -> Result<Option<EncryptionSection>, SpecErrors> {
        let Some(section) = self.state_section()?.encryption else {
            return Ok(None);
        };
        let at = FieldPath::root("state").key("encryption");
        let mut errors = Vec::new();
        match section.method {
            EncryptionMethod::Passphrase => {
                if section.kms_key_id.is_some() {
                    errors.push(self.error(
                        &at.key("kms_key_id"),
                        "`kms_key_id` is a setting of the aws_kms and gcp_kms methods",
                    ));
                }
                if section
                    .passphrase_env
                    .as_deref()
                    .is_some_and(|v| v.is_empty() || v.contains('='))
                {
                    errors.push(
                        self.error(&at.key("passphrase_env"), "must name an environment variable"),
                    );
                }
            }
            EncryptionMethod::AwsKms | EncryptionMethod::GcpKms => {
                let method = section.method.name();
                if section.passphrase_env.is_some() {
                    errors.push(self.error(
                        &at.key("passphrase_env"),
                        "`passphrase_env` is a setting of the passphrase method",
                    ));
                }
                match section.kms_key_id.as_deref() {
                    None | Some("") => errors
                        .push(self.error(&at, format!("the {method} method needs `kms_key_id`"))),
                    Some(key)
                        if section.method == EncryptionMethod::GcpKms
                            && !cloud_kms_key_name(key) =>
                    {
                        errors.push(self.error(
                            &at.key("kms_key_id"),
                            format!(
                                "`{key}` is not a Cloud KMS key name \
                                 (projects/P/locations/L/keyRings/R/cryptoKeys/K)"
                            ),
                        ))
                    }
                    Some(_) => {}
                }
            }
        }
        self.errors(errors).into_result()?;
        Ok(Some(section))
    }

    /// Where this spec's state is: `over` (`--state`: a path, `s3://bucket/key` or
    /// `gs://bucket/key`) if given,
    /// else as `[state]` says, else `.engine/<name>.state.json` beside the spec.
    pub fn state_location(&self, over: Option<&str>) -> Result<StateLocation, SpecErrors> {
        let section = self.state_section()?;
        let root = FieldPath::root("state");
        let mut errors: Vec<SpecError> = Vec::new();
        let lease = section.lease_seconds.unwrap_or(engine_state::DEFAULT_LEASE.as_secs());
        if !LEASE_SECONDS.contains(&lease) {
            errors.push(self.error(
                &root.key("lease_seconds"),
                format!(
                    "must be between {} and {} seconds",
                    LEASE_SECONDS.start(),
                    LEASE_SECONDS.end()
                ),
            ));
        }
        let only_for = |field: &str, set: bool, backend: &str, errors: &mut Vec<SpecError>| {
            if set {
                errors.push(
                    self.error(&root.key(field), format!("`{field}` is a setting of {backend}")),
                );
            }
        };
        let remote = "the s3 and gcs backends";
        let s3 = section.backend == BackendChoice::S3;
        only_for("region", section.region.is_some() && !s3, "the s3 backend", &mut errors);
        match section.backend {
            BackendChoice::Local => {
                only_for("bucket", section.bucket.is_some(), remote, &mut errors);
                only_for("key", section.key.is_some(), remote, &mut errors);
                only_for("lease_seconds", section.lease_seconds.is_some(), remote, &mut errors);
            }
            BackendChoice::S3 | BackendChoice::Gcs => {
                only_for("path", section.path.is_some(), "the local backend", &mut errors);
                let gcs = !s3;
                let (valid, rule): (fn(&str) -> bool, _) = if gcs {
                    (
                        gcs_bucket_name,
                        "a Cloud Storage bucket name (3-63 of a-z, 0-9, `.`, `-`, `_`)",
                    )
                } else {
                    (bucket_name, "an S3 bucket name (3-63 of a-z, 0-9, `.`, `-`)")
                };
                let backend = if gcs { "gcs" } else { "s3" };
                match &section.bucket {
                    None => errors
                        .push(self.error(&root, format!("the {backend} backend needs `bucket`"))),
                    Some(b) if !valid(b) => {
                        errors.push(self.error(&root.key("bucket"), format!("`{b}` is not {rule}")))
                    }
                    Some(_) => {}
                }
                if section.key.as_deref().is_some_and(|k| k.is_empty() || k.starts_with('/')) {
                    errors.push(
                        self.error(
                            &root.key("key"),
                            "must be a non-empty key without a leading `/`",
                        ),
                    );
                }
            }
        }
        self.errors(errors).into_result()?;
        let region = || match &section.region {
            Some(r) => r.clone(),
            None => self.globals().map(|g| g.region).unwrap_or_default(),
        };
        let lease = Duration::from_secs(lease);
        if let Some(over) = over {
            return StateLocation::from_arg(over, region(), lease).ok_or_else(|| {
                self.errors(vec![self.general_error(format!(
                    "--state {over}: expected s3://BUCKET/KEY or gs://BUCKET/KEY"
                ))])
            });
        }
        Ok(match section.backend {
            BackendChoice::Local => StateLocation::Local {
                path: match &section.path {
                    Some(p) => self.directory().join(p),
                    None => crate::state_path_of(self),
                },
            },
            BackendChoice::S3 => StateLocation::S3 {
                bucket: section.bucket.clone().unwrap_or_default(),
                key: self.state_key(&section),
                region: region(),
                lease,
            },
            BackendChoice::Gcs => StateLocation::Gcs {
                bucket: section.bucket.clone().unwrap_or_default(),
                key: self.state_key(&section),
                lease,
            },
        })
    }

    /// The object key of a remote state: `key`, else `engine/<spec>.state.json`.
    fn state_key(&self, section: &StateSection) -> String {
        section.key.clone().unwrap_or_else(|| format!("engine/{}.state.json", self.name()))
    }

    /// The directory of the spec file (`.` when it has none).
    pub fn directory(&self) -> PathBuf {
        Path::new(self.file())
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(|p| p.to_path_buf())
            .unwrap_or_else(|| PathBuf::from("."))
    }
}

/// Whether `name` is a valid Cloud Storage bucket name (names with dots, up to 222 characters,
/// are domain-verified buckets; the engine takes the common form).
fn gcs_bucket_name(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-' || b == b'_'
        })
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && !name.starts_with("goog")
}

/// Whether `name` is a Cloud KMS crypto key's resource name.
fn cloud_kms_key_name(name: &str) -> bool {
    let parts: Vec<&str> = name.split('/').collect();
    parts.len() == 8
        && ["projects", "locations", "keyRings", "cryptoKeys"]
            .iter()
            .enumerate()
            .all(|(i, word)| parts[2 * i] == *word && !parts[2 * i + 1].is_empty())
}

/// Whether `name` is a valid S3 bucket name (the general rules; no dots next to each other).
fn bucket_name(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && !name.contains("..")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(state: &str) -> SpecSource {
        let text = format!(
            "[globals]\ncloud = \"aws\"\nregion = \"eu-west-3\"\ncluster_name = \"aws-0\"\ndomain = \"example.com\"\n\n{state}"
        );
        SpecSource::from_text("specs/aws.toml", "aws", text)
    }

    #[test]
    fn without_a_section_the_state_is_beside_the_spec() {
        let at = spec("").state_location(None).unwrap();
        assert_eq!(at, StateLocation::Local { path: "specs/.engine/aws.state.json".into() });
        let at = spec("[state]\npath = \"state/aws.json\"\n").state_location(None).unwrap();
        assert_eq!(at.to_string(), "specs/state/aws.json");
    }

    #[test]
    fn an_s3_backend_takes_the_globals_region_and_a_key_per_spec() {
        let at = spec("[state]\nbackend = \"s3\"\nbucket = \"acme-state\"\n")
            .state_location(None)
            .unwrap();
        assert_eq!(
            at,
            StateLocation::S3 {
                bucket: "acme-state".into(),
                key: "engine/aws.state.json".into(),
                region: "eu-west-3".into(),
                lease: engine_state::DEFAULT_LEASE,
            }
        );
        assert_eq!(at.to_string(), "s3://acme-state/engine/aws.state.json");
    }

    #[test]
    fn the_command_line_overrides_the_section() {
        let s = spec("[state]\nbackend = \"s3\"\nbucket = \"acme-state\"\nlease_seconds = 5\n");
        let at = s.state_location(Some("s3://other-bucket/team/aws.json")).unwrap();
        let StateLocation::S3 { bucket, key, lease, .. } = at else { panic!("{at:?}") };
        assert_eq!(
            (bucket.as_str(), key.as_str(), lease.as_secs()),
            ("other-bucket", "team/aws.json", 5)
        );
        let at = s.state_location(Some("/tmp/aws.json")).unwrap();
        assert_eq!(at, StateLocation::Local { path: "/tmp/aws.json".into() });
        let err = s.state_location(Some("s3://Bad_Bucket")).unwrap_err();
        assert!(err.details().contains("expected s3://BUCKET/KEY"), "{err}");
        let at = s.state_location(Some("gs://ogenki_tfstate/cloud-native-ref/gcp.json")).unwrap();
        assert_eq!(at.to_string(), "gs://ogenki_tfstate/cloud-native-ref/gcp.json");
        assert!(matches!(at, StateLocation::Gcs { lease, .. } if lease.as_secs() == 5));
        assert!(s.state_location(Some("gs://bucket-only")).is_err());
    }

    #[test]
    fn a_gcs_backend_keeps_a_key_per_spec_and_takes_cloud_kms_keys() {
        let key = "projects/p/locations/europe-west4/keyRings/state/cryptoKeys/engine";
        let s = spec(&format!(
            "[state]\nbackend = \"gcs\"\nbucket = \"acme_state\"\n\n\
             [state.encryption]\nmethod = \"gcp_kms\"\nkms_key_id = \"{key}\"\n"
        ));
        let at = s.state_location(None).unwrap();
        assert_eq!(
            at,
            StateLocation::Gcs {
                bucket: "acme_state".into(),
                key: "engine/aws.state.json".into(),
                lease: engine_state::DEFAULT_LEASE,
            }
        );
        let sealing = s.state_encryption().unwrap().unwrap();
        assert_eq!(
            (sealing.method, sealing.kms_key_id.as_deref()),
            (EncryptionMethod::GcpKms, Some(key))
        );
    }

    #[test]
    fn mistakes_name_the_line_and_field() {
        let cases = [
            ("[state]\nbackend = \"azurerm\"\n", "state.backend", "unknown variant `azurerm`"),
            ("[state]\nbackend = \"gcs\"\n", "state", "the gcs backend needs `bucket`"),
            (
                "[state]\nbackend = \"gcs\"\nbucket = \"goog-state\"\n",
                "state.bucket",
                "not a Cloud Storage bucket name",
            ),
            (
                "[state]\nbackend = \"gcs\"\nbucket = \"acme\"\nregion = \"eu\"\n",
                "state.region",
                "setting of the s3 backend",
            ),
            (
                "[state.encryption]\nmethod = \"gcp_kms\"\nkms_key_id = \"alias/x\"\n",
                "state.encryption.kms_key_id",
                "not a Cloud KMS key name",
            ),
            ("[state]\nbackend = \"s3\"\n", "state", "needs `bucket`"),
            (
                "[state]\nbackend = \"s3\"\nbucket = \"A\"\n",
                "state.bucket",
                "not an S3 bucket name",
            ),
            (
                "[state]\nbucket = \"acme-state\"\n",
                "state.bucket",
                "setting of the s3 and gcs backends",
            ),
            (
                "[state]\nbackend = \"s3\"\nbucket = \"acme\"\npath = \"x\"\n",
                "state.path",
                "of the local backend",
            ),
            (
                "[state]\nbackend = \"s3\"\nbucket = \"acme\"\nlease_seconds = 1\n",
                "state.lease_seconds",
                "between 2 and 3600",
            ),
            (
                "[state]\nbackend = \"s3\"\nbucket = \"acme\"\nkey = \"/x\"\n",
                "state.key",
                "leading `/`",
            ),
            ("[state]\nbucket_name = \"acme\"\n", "state.bucket_name", "unknown field"),
            (
                "[state.encryption]\nmethod = \"aws_kms\"\n",
                "state.encryption",
                "needs `kms_key_id`",
            ),
            (
                "[state.encryption]\nmethod = \"rot13\"\n",
                "state.encryption.method",
                "unknown variant `rot13`",
            ),
            (
                "[state.encryption]\nmethod = \"passphrase\"\nkms_key_id = \"k\"\n",
                "state.encryption.kms_key_id",
                "of the aws_kms and gcp_kms methods",
            ),
            (
                "[state.encryption]\nmethod = \"passphrase\"\npassphrase = \"hunter2\"\n",
                "state.encryption.passphrase",
                "unknown field",
            ),
        ];
        for (text, field, message) in cases {
            let s = spec(text);
            let err = s.state_location(None).and_then(|_| s.state_encryption()).unwrap_err();
            let details = err.details();
            assert!(details.contains(message), "{text}: {details}");
            assert!(details.contains(field), "{text}: {details}");
            assert!(details.contains("specs/aws.toml:"), "{text}: {details}");
        }
    }
}
