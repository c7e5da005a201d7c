//! `openbao_init`: an initialised, unsealed OpenBao.
//!
//! The resource exists once the server is initialised. Attributes: `shares`, `threshold` (the
//! recovery shares with an auto-unseal seal, the unseal shares with Shamir) and `sealed`
//! (desired `false`) in place; `seal_type`, `recovery_seal`, `cluster_id` computed. Input only:
//! `secret_prefix`, under which the credentials go to the secret sink:
//! `<prefix>/root-token` and `<prefix>/recovery-keys` (auto-unseal) or `<prefix>/unseal-keys`
//! (Shamir), the keys as a JSON array of base64 strings.
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

use super::client::BaoClient;
use super::shared::{Shared, live, opt_int, str_attr};
use crate::Secret;
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde::Deserialize;
use serde_json::{Value as Json, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) struct Init(pub Arc<Shared>);

const FIELDS: &[Field] = &[
    Field::in_place("shares"),
    Field::in_place("threshold"),
    Field::in_place("sealed"),
    Field::computed("seal_type"),
    Field::computed("recovery_seal"),
    Field::computed("cluster_id"),
];

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

fn keys_from_json(value: &Secret) -> Result<Vec<Secret>, KindError> {
    let parsed: Vec<Secret> = serde_json::from_str(value.expose())
        .map_err(|_| KindError::new("the stored unseal keys are not a JSON array of strings"))?;
    Ok(parsed)
}

async fn seal_status(client: &BaoClient) -> Result<SealStatus, KindError> {
    let body = client.read("GetSealStatus", "sys/seal-status").await?.unwrap_or_default();
    serde_json::from_value(body)
        .map_err(|e| KindError::new(format!("GetSealStatus: unexpected answer: {e}")))
}

fn status_live(id: Option<&str>, s: &SealStatus) -> Live {
    let id = s
        .cluster_id
        .clone()
        .filter(|c| !c.is_empty())
        .or_else(|| id.map(String::from))
        .unwrap_or_else(|| "openbao".into());
    live(
        id,
        [
            ("shares", json!(s.n)),
            ("threshold", json!(s.t)),
            ("sealed", json!(s.sealed)),
            ("seal_type", json!(s.seal_type)),
            ("recovery_seal", json!(s.auto_unseal())),
            ("cluster_id", s.cluster_id.clone().map(Json::from).unwrap_or(Json::Null)),
        ],
    )
}

impl Init {
    /// Waits until the server answers `sys/health` with 200 (initialised, unsealed, active).
    async fn wait_active(&self, ctx: &Context, client: &BaoClient) -> Result<(), KindError> {
        let started = Instant::now();
        let mut reported = false;
        loop {
            match client.status("GetHealth", "sys/health").await {
                Ok(200) => return Ok(()),
                Ok(_) | Err(_) if started.elapsed() < self.0.ready_timeout => {
                    if !reported {
                        ctx.waiting("waiting for OpenBao to become active and unsealed");
                        reported = true;
                    }
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Ok(code) => {
                    return Err(KindError::retryable(format!(
                        "OpenBao is not active after {:?} (sys/health answered {code})",
                        self.0.ready_timeout
                    )));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    async fn unseal(
        &self,
        client: &BaoClient,
        keys: &[Secret],
        threshold: usize,
    ) -> Result<(), KindError> {
        for key in keys.iter().take(threshold.max(1)) {
            let resp = client
                .put("Unseal", "sys/unseal", &json!({ "key": key.expose() }))
                .await?
                .unwrap_or_default();
            if resp.get("sealed").and_then(Json::as_bool) == Some(false) {
                return Ok(());
            }
        }
        Ok(())
    }

    async fn unseal_with_stored_keys(
        &self,
        client: &BaoClient,
        prefix: &str,
        threshold: usize,
    ) -> Result<(), KindError> {
        let name = format!("{prefix}/unseal-keys");
        let keys = self
            .0
            .source
            .get(&name)
            .await
            .map_err(|e| KindError::retryable(format!("reading `{name}`: {e}")))?
            .ok_or_else(|| {
                KindError::new(format!("OpenBao is sealed and `{name}` is not stored"))
            })?;
        self.unseal(client, &keys_from_json(&keys)?, threshold).await
    }

    /// Hands the credentials to the sink, trying a few times: after init they exist nowhere else.
    async fn store(&self, name: &str, value: &Secret) -> Result<(), KindError> {
        let mut last = String::new();
        for attempt in 0..5u32 {
            match self.0.sink.put(name, value).await {
                Ok(()) => return Ok(()),
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(200 * 2u64.pow(attempt))).await;
        }
        Err(KindError::new(format!(
            "OpenBao was initialised but storing `{name}` failed ({last}); the credential is \
             lost: wipe the storage and initialise again"
        )))
    }

    async fn read_back(&self, client: &BaoClient, id: Option<&str>) -> Result<Live, KindError> {
        let s = seal_status(client).await?;
        if !s.initialized {
            return Err(KindError::retryable("OpenBao reports itself uninitialised"));
        }
        Ok(status_live(id, &s))
    }
}

#[async_trait]
impl Kind for Init {
    fn name(&self) -> &'static str {
        "openbao_init"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        if requests.is_empty() {
            return Ok(vec![]);
        }
        let client = self.0.connect().await?;
        let s = seal_status(&client).await?;
        Ok(requests
            .iter()
            .map(|r| s.initialized.then(|| status_live(r.id.as_deref(), &s)))
            .collect())
    }

    async fn create(
        &self,
        ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let prefix = str_attr(desired, "secret_prefix")?;
        let shares = opt_int(desired, "shares").unwrap_or(1).max(1);
        let threshold = opt_int(desired, "threshold").unwrap_or(1).clamp(1, shares);
        let client = self.0.connect().await?;
        let status = seal_status(&client).await?;
        if status.initialized {
            // Initialised since the plan was made: adopt it.
            if status.sealed && !status.auto_unseal() {
                self.unseal_with_stored_keys(&client, prefix, status.t.max(1) as usize).await?;
            }
            self.wait_active(ctx, &client).await?;
            return self.read_back(&client, None).await;
        }
        let snapshot = self
            .0
            .snapshots
            .newest()
            .await
            .map_err(|e| KindError::retryable(format!("looking for a snapshot: {e}")))?;
        let auto = status.auto_unseal();
        let body = if auto {
            json!({ "recovery_shares": shares, "recovery_threshold": threshold })
        } else {
            json!({ "secret_shares": shares, "secret_threshold": threshold })
        };
        ctx.waiting("initialising OpenBao");
        let resp = client
            .put("Initialize", "sys/init", &body)
            .await?
            .ok_or_else(|| KindError::new("Initialize: empty answer"))?;
        let init: InitResponse = serde_json::from_value(resp).map_err(|e| {
            // serde's message may quote a value: report only the kind of problem.
            KindError::new(format!("Initialize: unexpected answer ({:?})", e.classify()))
        })?;
        let (keys, keys_name) = if auto {
            (&init.recovery_keys_base64, format!("{prefix}/recovery-keys"))
        } else {
            (&init.keys_base64, format!("{prefix}/unseal-keys"))
        };
        let admin = client.with_token(init.root_token.clone());
        match snapshot {
            None => {
                self.store(&format!("{prefix}/root-token"), &init.root_token).await?;
                self.store(&keys_name, &keys_json(keys)).await?;
                if !auto {
                    self.unseal(&client, keys, threshold as usize).await?;
                }
                self.wait_active(ctx, &admin).await?;
            }
            Some(snapshot) => {
                if !auto {
                    self.unseal(&client, keys, threshold as usize).await?;
                }
                self.wait_active(ctx, &admin).await?;
                ctx.waiting(format!("restoring snapshot {}", snapshot.name));
                tracing::info!(snapshot = %snapshot.name, bytes = snapshot.data.len(), "restoring OpenBao snapshot");
                admin
                    .write_bytes(
                        "RestoreSnapshot",
                        "sys/storage/raft/snapshot-force",
                        snapshot.data,
                    )
                    .await?;
                if !auto {
                    // The restored barrier is sealed with the lineage's keys.
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    if seal_status(&client).await?.sealed {
                        self.unseal_with_stored_keys(&client, prefix, threshold as usize).await?;
                    }
                }
                self.wait_active(ctx, &client).await?;
            }
        }
        self.read_back(&client, None).await
    }

    async fn update(
        &self,
        ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        for field in ["shares", "threshold"] {
            if let Some(want) = desired.get(field)
                && Some(want) != current.attributes.get(field)
            {
                return Err(KindError::new(format!(
                    "changing `{field}` of an initialised OpenBao needs a rekey, which the \
                     engine does not do"
                )));
            }
        }
        let client = self.0.connect().await?;
        let status = seal_status(&client).await?;
        if status.sealed && !status.auto_unseal() {
            let prefix = str_attr(desired, "secret_prefix")?;
            self.unseal_with_stored_keys(&client, prefix, status.t.max(1) as usize).await?;
        }
        self.wait_active(ctx, &client).await?;
        self.read_back(&client, Some(&current.id)).await
    }

    async fn delete(
        &self,
        _ctx: &Context,
        address: &Address,
        _current: &Live,
    ) -> Result<(), KindError> {
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
        let l = status_live(None, &s);
        assert_eq!(l.id, "c-1");
        assert_eq!(l.attributes["recovery_seal"], json!(true));
        assert_eq!(l.attributes["shares"], json!(1));
    }
}
