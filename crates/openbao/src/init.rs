//! `openbao_init`: an initialised, unsealed OpenBao.
//!
//! The resource exists once the server is initialised. Attributes: `shares`, `threshold` (the
//! recovery shares with an auto-unseal seal, the unseal shares with Shamir) and `sealed`
//! (desired `false`) in place; `seal_type`, `recovery_seal`, `cluster_id` computed. Settings:
//! where the credentials go in the secret sink: `root_token_secret` and `recovery_keys_secret`
//! (auto-unseal; `NAME` or `NAME#field`, a JSON object holding the value in `field`), else
//! `<secret_prefix>/root-token`, `<secret_prefix>/recovery-keys`, and `<secret_prefix>/unseal-keys`
//! (Shamir); the keys as a JSON array of base64 strings.
//!
//! Create:
//! 1. asks the snapshot source for the newest snapshot of the lineage;
//! 2. initialises (`PUT sys/init`), with recovery shares for an auto-unseal seal, unseal shares
//!    otherwise, and unseals with the new keys under Shamir;
//! 3. without a snapshot: hands the root token and keys to the sink at once, before anything
//!    else can fail; with one: restores it (`sys/storage/raft/snapshot-force`) with the
//!    throw-away root token of step 2 (never stored), after which the lineage's own credentials
//!    (already in the sink) are the valid ones. A Shamir server sealed by the restore is
//!    unsealed with the lineage's keys from the secret source;
//! 4. waits until the server is unsealed and active.
//!
//! Update can only unseal (Shamir, keys from the secret source) or wait for auto-unseal;
//! changing shares needs a rekey, which is refused. Delete does nothing: a server cannot be
//! uninitialised, its storage goes with its instances.

use crate::client::BaoClient;
use crate::escrow::Escrow;
use crate::shared::Shared;
use crate::stores::SecretRef;
use engine::prelude::*;
use engine::retry::RetryPolicy;
use engine::wait::{Poll, Wait};
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Init {
    #[attr(in_place)]
    pub shares: i64,
    #[attr(in_place)]
    pub threshold: i64,
    #[attr(in_place)]
    pub sealed: bool,
    #[attr(computed)]
    #[serde(default)]
    pub seal_type: String,
    #[attr(computed)]
    #[serde(default)]
    pub recovery_seal: bool,
    #[attr(computed)]
    pub cluster_id: Option<String>,
    /// Whether the root token and keys are in the secret store (desired `true`): `false` while
    /// they wait in escrow after an interrupted run, or when they were lost.
    #[attr(in_place)]
    #[serde(default = "stored")]
    pub credentials_stored: bool,
    /// Where the credentials go (input only; never read back).
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_prefix: Option<String>,
    /// Where the root token goes, `NAME` or `NAME#field` (input only).
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_token_secret: Option<String>,
    /// Where the recovery keys go, `NAME` or `NAME#field` (input only).
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_keys_secret: Option<String>,
    /// Where a Shamir server's unseal keys go (input only).
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unseal_keys_secret: Option<String>,
}

/// Where the credentials of an initialisation are kept in the secret store.
struct Places {
    root_token: SecretRef,
    recovery_keys: SecretRef,
    unseal_keys: SecretRef,
}

impl Places {
    fn of(desired: &Init) -> KindResult<Places> {
        let prefix = desired.secret_prefix.as_deref();
        let prefix = prefix.ok_or_else(|| KindError::new("openbao_init needs `secret_prefix`"))?;
        let place = |set: &Option<String>, default: &str| {
            SecretRef::chosen_or(set.as_deref(), format!("{prefix}/{default}"))
        };
        Ok(Places {
            root_token: place(&desired.root_token_secret, "root-token"),
            recovery_keys: place(&desired.recovery_keys_secret, "recovery-keys"),
            unseal_keys: place(&desired.unseal_keys_secret, "unseal-keys"),
        })
    }
}

fn stored() -> bool {
    true
}

pub(crate) struct InitKind(pub Arc<Shared>);

/// How often `sys/health` is asked while waiting for the server.
const POLL: Duration = Duration::from_millis(250);

/// How long a Shamir server may take to seal itself after a restore.
const RESEAL_WINDOW: Duration = Duration::from_millis(500);

/// Handing the credentials to the sink: after init they exist nowhere else.
const STORE: RetryPolicy = RetryPolicy {
    attempts: 5,
    first_delay: Duration::from_millis(200),
    max_delay: Duration::from_millis(3200),
};

#[derive(Debug, Deserialize)]
struct SealStatus {
    #[serde(rename = "type", default)]
    seal_type: String,
    #[serde(default)]
    initialized: bool,
    #[serde(default)]
    sealed: bool,
    #[serde(default)]
    t: i64,
    #[serde(default)]
    n: i64,
    #[serde(default)]
    recovery_seal: bool,
    #[serde(default)]
    cluster_id: Option<String>,
}

impl SealStatus {
    fn auto_unseal(&self) -> bool {
        self.recovery_seal || (!self.seal_type.is_empty() && self.seal_type != "shamir")
    }

    fn live(&self, id: Option<&str>, credentials_stored: bool) -> Live<Init> {
        let cluster_id = self.cluster_id.clone().filter(|c| !c.is_empty());
        let id = cluster_id.clone().or_else(|| id.map(String::from));
        let init = Init {
            shares: self.n,
            threshold: self.t,
            sealed: self.sealed,
            seal_type: self.seal_type.clone(),
            recovery_seal: self.auto_unseal(),
            cluster_id: self.cluster_id.clone(),
            credentials_stored,
            secret_prefix: None,
            unseal_keys_secret: None,
            root_token_secret: None,
            recovery_keys_secret: None,
        };
        Live::new(id.unwrap_or_else(|| "openbao".into()), init)
    }
}

/// The answer of `sys/init`: nothing in it may be printed.
#[derive(Deserialize)]
struct InitResponse {
    root_token: Secret,
    #[serde(default)]
    keys_base64: Vec<Secret>,
    #[serde(default)]
    recovery_keys_base64: Vec<Secret>,
}

fn keys_json(keys: &[Secret]) -> Secret {
    Secret::new(Json::Array(keys.iter().map(|k| Json::from(k.expose())).collect()).to_string())
}

fn keys_from_json(value: &Secret) -> KindResult<Vec<Secret>> {
    serde_json::from_str(value.expose())
        .map_err(|_| KindError::new("the stored unseal keys are not a JSON array of strings"))
}

/// A key count of the spec or the server, at least 1.
fn count(n: i64) -> usize {
    usize::try_from(n.max(1)).unwrap_or(1)
}

async fn seal_status(client: &BaoClient) -> KindResult<SealStatus> {
    let body = client.read("GetSealStatus", "sys/seal-status").await?.unwrap_or_default();
    serde_json::from_value(body)
        .map_err(|e| KindError::new(format!("GetSealStatus: unexpected answer: {e}")))
}

impl InitKind {
    /// Waits until the server answers `sys/health` with 200 (initialised, unsealed, active).
    /// With `restored` (a Shamir server after a restore: where the lineage's keys are and their
    /// threshold), a server the restore sealed is unsealed with the lineage's keys, and the
    /// server counts as active only once the restore had time to seal it. A timeout is
    /// retryable (the step is tried again); other errors are returned as they are.
    async fn wait_active(
        &self,
        ctx: &Context,
        client: &BaoClient,
        restored: Option<(&Places, usize)>,
    ) -> KindResult<()> {
        let started = Instant::now();
        let wait = Wait::new("OpenBao", self.0.ready_timeout).every(POLL, POLL);
        let outcome = wait
            .until(ctx, || async {
                match self.look(client, restored, started).await {
                    Err(e) if !e.retryable => Ok(Poll::Done(Err(e))),
                    Err(e) => Err(e),
                    Ok(None) => Ok(Poll::Done(Ok(()))),
                    Ok(Some(status)) => Ok(Poll::Pending(status)),
                }
            })
            .await;
        match outcome {
            Ok(done) => done,
            Err(timeout) => Err(KindError::retryable(timeout.message)),
        }
    }

    /// One look for [`Self::wait_active`]: `None` when active, else what is awaited.
    async fn look(
        &self,
        client: &BaoClient,
        restored: Option<(&Places, usize)>,
        started: Instant,
    ) -> KindResult<Option<String>> {
        if let Some((places, threshold)) = restored
            && seal_status(client).await?.sealed
        {
            self.unseal_with_stored_keys(client, places, threshold).await?;
            return Ok(Some("sealed by the restore: unsealing".into()));
        }
        Ok(match client.status("GetHealth", "sys/health").await? {
            200 if restored.is_some() && started.elapsed() < RESEAL_WINDOW => {
                Some("restored: waiting whether the restore seals it".into())
            }
            200 => None,
            code => Some(format!("not active and unsealed (sys/health answered {code})")),
        })
    }

    async fn unseal(
        &self,
        client: &BaoClient,
        keys: &[Secret],
        threshold: usize,
    ) -> KindResult<()> {
        for key in keys.iter().take(threshold.max(1)) {
            let body = json!({ "key": key.expose() });
            let resp = client.put("Unseal", "sys/unseal", &body).await?.unwrap_or_default();
            if resp.get("sealed").and_then(Json::as_bool) == Some(false) {
                return Ok(());
            }
        }
        Ok(())
    }

    async fn unseal_with_stored_keys(
        &self,
        client: &BaoClient,
        places: &Places,
        threshold: usize,
    ) -> KindResult<()> {
        let name = &places.unseal_keys;
        let keys = name.read(self.0.source.as_ref()).await;
        let keys =
            keys.map_err(|e| KindError::retryable(format!("reading `{name}`: {e}")))?.ok_or_else(
                || KindError::new(format!("OpenBao is sealed and `{name}` is not stored")),
            )?;
        self.unseal(client, &keys_from_json(&keys)?, threshold).await
    }

    /// Hands a credential to the sink, trying a few times: after init it exists nowhere else.
    async fn store(&self, name: &str, value: &Secret) -> KindResult<()> {
        let put = || async {
            let stored = self.0.sink.put(name, value).await;
            stored.map_err(|e| KindError::retryable(e.to_string()))
        };
        STORE.run(put, |_, _| {}).await.map_err(|e| match &self.0.escrow {
            Some(escrow) => KindError::new(format!(
                "OpenBao was initialised but storing `{name}` failed ({}); the credentials are \
                 kept in {} (readable by its owner only) and the next apply stores them",
                e.message,
                escrow.path().display()
            )),
            None => KindError::new(format!(
                "OpenBao was initialised but storing `{name}` failed ({}); the credential is \
                 lost: wipe the storage and initialise again",
                e.message
            )),
        })
    }

    /// Whether the secret store has the credentials: the connector found a token, and nothing
    /// waits in escrow.
    fn credentials_stored(&self, client: &BaoClient) -> bool {
        let held = self.0.escrow.as_ref().is_some_and(Escrow::is_held);
        client.has_token() && !held
    }

    /// Puts a new server's credentials in escrow (durable, owner-only) before anything else
    /// happens; [`Self::store_held`] later hands them to the secret store.
    fn hold(
        &self,
        client: &BaoClient,
        root_token: &Secret,
        entries: &[(String, Secret)],
    ) -> KindResult<()> {
        match &self.0.escrow {
            Some(escrow) => {
                escrow.hold(client.address(), root_token, entries).map_err(|e| escrow.failed(e))
            }
            None => Ok(()),
        }
    }

    /// Hands `entries` to the secret store, then releases the escrow.
    async fn store_held(&self, entries: &[(String, Secret)]) -> KindResult<()> {
        for (name, value) in entries {
            self.store(name, value).await?;
        }
        match &self.0.escrow {
            Some(escrow) => escrow.release().map_err(|e| escrow.failed(e)),
            None => Ok(()),
        }
    }

    /// Makes sure the credentials of an initialised server are in the secret store: those held
    /// in escrow are stored now; none anywhere is an error, never an adoption.
    async fn secure_credentials(&self, client: &BaoClient, places: &Places) -> KindResult<()> {
        if let Some(escrow) = &self.0.escrow
            && let Some(entries) = escrow.entries().map_err(|e| escrow.failed(e))?
        {
            return self.store_held(&entries).await;
        }
        if client.has_token() {
            return Ok(());
        }
        let (root, keys, unseal) = (&places.root_token, &places.recovery_keys, &places.unseal_keys);
        Err(KindError::new(format!(
            "OpenBao at {} is initialised, but its root token is neither in the secret store \
             (`{root}`) nor in escrow: the credentials of that initialisation were lost or are \
             kept elsewhere, so the engine does not adopt it. If you hold them, store them as \
             `{root}` and `{keys}` (`{unseal}` with Shamir) and apply again; otherwise make a \
             new root token from the recovery keys (`bao operator generate-root`), or wipe the \
             server's storage and apply again",
            client.address()
        )))
    }

    async fn read_back(&self, client: &BaoClient, id: Option<&str>) -> KindResult<Live<Init>> {
        let s = seal_status(client).await?;
        if !s.initialized {
            return Err(KindError::retryable("OpenBao reports itself uninitialised"));
        }
        Ok(s.live(id, self.credentials_stored(client)))
    }

    /// Initialises a new server (or rehydrates it from the lineage's newest snapshot).
    async fn initialise(
        &self,
        ctx: &Context,
        client: &BaoClient,
        auto: bool,
        places: &Places,
        desired: &Init,
    ) -> KindResult<()> {
        let shares = desired.shares.max(1);
        let threshold = desired.threshold.clamp(1, shares);
        let snapshot = self.0.snapshots.newest().await;
        let snapshot =
            snapshot.map_err(|e| KindError::retryable(format!("looking for a snapshot: {e}")))?;
        let body = if auto {
            json!({ "recovery_shares": shares, "recovery_threshold": threshold })
        } else {
            json!({ "secret_shares": shares, "secret_threshold": threshold })
        };
        ctx.waiting("initialising OpenBao");
        let resp = client.put("Initialize", "sys/init", &body).await?;
        let resp = resp.ok_or_else(|| KindError::new("Initialize: empty answer"))?;
        let init: InitResponse = serde_json::from_value(resp).map_err(|e| {
            // serde's message may quote a value: report only the kind of problem.
            KindError::new(format!("Initialize: unexpected answer ({:?})", e.classify()))
        })?;
        let (keys, keys_place) = if auto {
            (&init.recovery_keys_base64, &places.recovery_keys)
        } else {
            (&init.keys_base64, &places.unseal_keys)
        };
        let threshold = count(threshold);
        let admin = client.with_token(init.root_token.clone());
        let Some(snapshot) = snapshot else {
            let root = &places.root_token;
            let entries = [
                (root.name.clone(), root.stored(&init.root_token)),
                (keys_place.name.clone(), keys_place.stored(&keys_json(keys))),
            ];
            self.hold(client, &init.root_token, &entries)?;
            // Unsealed before the slower secret-store writes: a run stopped during them leaves
            // an unsealed server whose contents the next plan can read.
            if !auto {
                self.unseal(client, keys, threshold).await?;
            }
            self.store_held(&entries).await?;
            return self.wait_active(ctx, &admin, None).await;
        };
        if !auto {
            self.unseal(client, keys, threshold).await?;
        }
        self.wait_active(ctx, &admin, None).await?;
        ctx.waiting(format!("restoring snapshot {}", snapshot.name));
        tracing::info!(snapshot = %snapshot.name, bytes = snapshot.data.len(), "restoring OpenBao snapshot");
        let restore = "sys/storage/raft/snapshot-force";
        admin.write_bytes("RestoreSnapshot", restore, snapshot.data).await?;
        // The restored barrier is sealed with the lineage's keys (Shamir).
        let restored = (!auto).then_some((places, threshold));
        self.wait_active(ctx, client, restored).await
    }
}

impl TypedKind for InitKind {
    type Attrs = Init;
    const NAME: &'static str = "openbao_init";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        if requests.is_empty() {
            return Ok(vec![]);
        }
        let client = self.0.connect().await?;
        let s = seal_status(&client).await?;
        let stored = self.credentials_stored(&client);
        Ok(requests
            .iter()
            .map(|r| s.initialized.then(|| s.live(r.id.as_deref(), stored)))
            .collect())
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let places = Places::of(desired)?;
        let client = self.0.connect().await?;
        let status = seal_status(&client).await?;
        if status.initialized {
            // Initialised since the plan was made (or by a try whose answer was lost): adopted
            // only with its credentials in hand (the client holds the token, stored or escrowed).
            self.secure_credentials(&client, &places).await?;
            if status.sealed && !status.auto_unseal() {
                self.unseal_with_stored_keys(&client, &places, count(status.t)).await?;
            }
            self.wait_active(ctx, &client, None).await?;
        } else {
            self.initialise(ctx, &client, status.auto_unseal(), &places, desired).await?;
        }
        // Read back as the next run reads: with the token the secret store now holds.
        self.read_back(&self.0.connect().await?, None).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        if let Some(field) = [(changes.shares, "shares"), (changes.threshold, "threshold")]
            .into_iter()
            .find_map(|(changed, name)| changed.then_some(name))
        {
            return Err(KindError::new(format!(
                "changing `{field}` of an initialised OpenBao needs a rekey, which the engine \
                 does not do"
            )));
        }
        let places = Places::of(desired)?;
        let client = self.0.connect().await?;
        if changes.credentials_stored {
            self.secure_credentials(&client, &places).await?;
        }
        let status = seal_status(&client).await?;
        if status.sealed && !status.auto_unseal() {
            self.unseal_with_stored_keys(&client, &places, count(status.t)).await?;
        }
        self.wait_active(ctx, &client, None).await?;
        self.read_back(&client, Some(&current.id)).await
    }

    async fn delete(&self, ctx: &Context, _: &LiveOf<Self>) -> KindResult<()> {
        let address = ctx.address().map(|a| a.to_string()).unwrap_or_default();
        tracing::warn!(%address, "an initialised OpenBao cannot be uninitialised; leaving it");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_answers_never_print() {
        let resp: InitResponse = serde_json::from_value(json!({
            "root_token": "s.root", "keys_base64": ["a2V5"], "recovery_keys_base64": []
        }))
        .unwrap();
        let shown = format!("{:?} {:?}", resp.root_token, resp.keys_base64);
        assert!(!shown.contains("s.root") && !shown.contains("a2V5"), "{shown}");
        let stored = keys_json(&resp.keys_base64);
        assert_eq!(stored.expose(), r#"["a2V5"]"#);
        assert_eq!(keys_from_json(&stored).unwrap(), resp.keys_base64);
    }

    #[test]
    fn seal_status_maps_to_attributes() {
        let s: SealStatus = serde_json::from_value(json!({
            "type": "transit", "initialized": true, "sealed": false, "t": 1, "n": 1,
            "recovery_seal": true, "cluster_id": "c-1"
        }))
        .unwrap();
        let l = s.live(None, true);
        assert_eq!(l.id, "c-1");
        let attrs = engine::encode("openbao_init", &l.attributes).unwrap();
        assert_eq!(attrs["recovery_seal"], json!(true));
        assert_eq!(attrs["shares"], json!(1));
        assert_eq!(attrs["cluster_id"], json!("c-1"));
        assert!(!attrs.contains_key("secret_prefix"), "an input is not read back");
        assert_eq!(count(0), 1);
        assert_eq!(count(3), 3);
    }
}
