//! The local escrow of a new OpenBao's credentials.
//!
//! `PUT sys/init` answers the root token and the keys once; OpenBao never shows them again. Before
//! anything else can fail, `openbao_init` writes them to one file readable by its owner only
//! (0600, written to a temporary file, synced, then renamed), then hands them to the secret store,
//! then removes the file. A run killed in between leaves the file: the next run reads OpenBao with
//! the escrowed root token and its plan stores the credentials (`credentials_stored`).

use engine::Secret;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// One escrow file (`<state>.openbao-escrow.json` for the engine binary).
#[derive(Debug, Clone)]
pub struct Escrow {
    path: PathBuf,
}

/// What the file holds: the secret store's names and what is stored there, and the root token.
#[derive(Serialize, Deserialize)]
struct Held {
    /// The server the credentials belong to.
    address: String,
    entries: BTreeMap<String, String>,
    /// The root token itself (an entry may hold it inside a JSON document).
    #[serde(default)]
    root_token: Option<String>,
}

impl Escrow {
    /// The escrow kept in `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Escrow { path: path.into() }
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file exists (credentials not yet in the secret store).
    pub fn is_held(&self) -> bool {
        self.path.exists()
    }

    /// Keeps `entries` (secret store name, what is stored there) of the server at `address`,
    /// whose root token is `root_token`, durably.
    pub fn hold(
        &self,
        address: &str,
        root_token: &Secret,
        entries: &[(String, Secret)],
    ) -> std::io::Result<()> {
        let held = Held {
            address: address.to_string(),
            entries: entries.iter().map(|(n, v)| (n.clone(), v.expose().to_string())).collect(),
            root_token: Some(root_token.expose().to_string()),
        };
        let dir =
            self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = self.path.with_extension("tmp");
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&tmp)?;
        file.write_all(&serde_json::to_vec(&held).map_err(std::io::Error::other)?)?;
        file.sync_all()?;
        std::fs::rename(&tmp, &self.path)?;
        File::open(dir)?.sync_all()
    }

    fn held(&self) -> std::io::Result<Option<Held>> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        // serde's message could quote a value: say only where the file is.
        serde_json::from_slice(&bytes).map(Some).map_err(|_| {
            std::io::Error::other(format!("{} is not an escrow file", self.path.display()))
        })
    }

    /// The entries held, if the file exists.
    pub fn entries(&self) -> std::io::Result<Option<Vec<(String, Secret)>>> {
        Ok(self
            .held()?
            .map(|held| held.entries.into_iter().map(|(n, v)| (n, Secret::new(v))).collect()))
    }

    /// The held root token (from a file of an older engine: the entry named
    /// `<secret_prefix>/root-token`).
    pub fn root_token(&self) -> std::io::Result<Option<Secret>> {
        let Some(held) = self.held()? else {
            return Ok(None);
        };
        Ok(held
            .root_token
            .or_else(|| {
                held.entries.into_iter().find(|(n, _)| n.ends_with("/root-token")).map(|(_, v)| v)
            })
            .map(Secret::new))
    }

    /// A failure to read or write the file, as a kind's error.
    pub(crate) fn failed(&self, e: std::io::Error) -> engine::KindError {
        engine::KindError::new(format!("OpenBao credentials escrow {}: {e}", self.path.display()))
    }

    /// Removes the file once the secret store has everything.
    pub fn release(&self) -> std::io::Result<()> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_owner_only_and_releases() {
        let dir = tempfile::tempdir().unwrap();
        let escrow = Escrow::new(dir.path().join("sub/aws.openbao-escrow.json"));
        assert!(!escrow.is_held());
        assert!(escrow.entries().unwrap().is_none());
        let root = ("tokens/root".to_string(), Secret::new(r#"{"token":"s.root"}"#));
        let keys = ("openbao/aws-0/recovery-keys".to_string(), Secret::new("[\"a\"]"));
        escrow.hold("https://bao:8200", &Secret::new("s.root"), &[root, keys]).unwrap();
        assert!(escrow.is_held());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(escrow.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let token = escrow.root_token().unwrap().unwrap();
        assert_eq!(token.expose(), "s.root");
        assert_eq!(escrow.entries().unwrap().unwrap().len(), 2);
        escrow.release().unwrap();
        assert!(!escrow.is_held());
        escrow.release().unwrap();
    }

    #[test]
    fn a_damaged_file_is_an_error_that_quotes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.json");
        std::fs::write(&path, "{\"entries\": \"s.secret-value").unwrap();
        let err = Escrow::new(&path).entries().unwrap_err().to_string();
        assert!(!err.contains("s.secret-value"), "{err}");
        assert!(err.contains("is not an escrow file"), "{err}");
    }
}
