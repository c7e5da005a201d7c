//! `openbao_contents`: what a server the engine initialised holds beyond what the spec declares.
//!
//! The engine owns such a server whole. Its policies, secrets engines, auth methods, and the
//! entries of the mounts the spec configures (JWT roles, PKI roles, userpass users) are each a
//! resource of their own; this kind watches for the ones that are not. `foreign_policies`,
//! `foreign_mounts`, `foreign_auth` and `foreign_entries` list what the server holds that the
//! spec does not declare (OpenBao's built-ins aside); the spec wants none, so anything added out
//! of band is drift that `drift` names and `apply` removes, exactly the names the plan showed.
//!
//! The declared names travel in `declared` (a setting: never diffed). A spec that names the
//! resource in `[globals] shared` leaves the `foreign_*` attributes out: nothing is watched.
//! Expanded only when the spec initialises the server (`[openbao.init]`): a server configured
//! but not made by the engine may hold what others put there. A sealed server, or one whose
//! token is not at hand, cannot be looked into: nothing is reported until it can (both are
//! drift of `openbao_init`, whose apply repairs it or fails loudly).

use crate::shared::{Shared, forget, mount_table};
use crate::{BaoClient, BaoError};
use engine::TypedKind;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The resource's only id: there is one per server.
const ID: &str = "contents";

/// What OpenBao holds from its first start, never the spec's to declare.
const BUILTIN_POLICIES: &[&str] = &["root", "default"];
const BUILTIN_MOUNTS: &[&str] = &["sys", "cubbyhole", "identity"];
const BUILTIN_AUTH: &[&str] = &["token"];

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Contents {
    /// What the spec declares on the server.
    #[attr(setting)]
    #[serde(default)]
    pub declared: Declared,
    #[attr(in_place, unordered)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_policies: Option<Vec<String>>,
    #[attr(in_place, unordered)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_mounts: Option<Vec<String>>,
    #[attr(in_place, unordered)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_auth: Option<Vec<String>>,
    /// Full paths, e.g. `auth/jwt/aws-0/role/intruder`.
    #[attr(in_place, unordered)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_entries: Option<Vec<String>>,
}

/// The names the spec declares: policies, secrets engine paths, auth method paths, and for each
/// watched `LIST` endpoint (`auth/jwt/aws-0/role`, `pki/roles`, `auth/userpass/users`) the
/// entries declared there.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct Declared {
    pub policies: BTreeSet<String>,
    pub mounts: BTreeSet<String>,
    pub auth: BTreeSet<String>,
    pub entries: BTreeMap<String, BTreeSet<String>>,
}

/// The names of `found` (trailing `/` dropped) that are neither built in nor declared.
fn foreign<'a>(
    found: impl IntoIterator<Item = &'a str>,
    builtin: &[&str],
    declared: &BTreeSet<String>,
) -> Vec<String> {
    let mut out: Vec<String> = found
        .into_iter()
        .map(|n| n.trim_end_matches('/'))
        .filter(|n| !builtin.contains(n) && !declared.contains(*n))
        .map(str::to_string)
        .collect();
    out.sort();
    out
}

/// A path the server answers "nothing here" for: 404, or 400 for a mount that does not exist.
fn nothing_there(e: &BaoError) -> bool {
    matches!(e.status(), Some(400 | 404))
}

pub(crate) struct ContentsKind(pub Arc<Shared>);

impl ContentsKind {
    /// The entries under a `LIST` endpoint; none when its mount does not exist (yet).
    async fn entries(client: &BaoClient, path: &str) -> KindResult<Vec<String>> {
        match client.list("ListEntries", path).await {
            Ok(keys) => Ok(keys),
            Err(e) if nothing_there(&e) => Ok(vec![]),
            Err(e) => Err(e.into()),
        }
    }

    /// What the server holds beyond `desired.declared`, for the `foreign_*` attributes
    /// `desired` sets (all, unless shared). The mount tables are the run's shared reads.
    async fn look(
        &self,
        ctx: &Context,
        client: &BaoClient,
        desired: &Contents,
    ) -> KindResult<Live<Contents>> {
        let declared = &desired.declared;
        let mut live = Contents { declared: declared.clone(), ..Contents::unwatched() };
        if desired.foreign_policies.is_some() {
            let names = client.list("ListPolicies", "sys/policies/acl").await?;
            let names = names.iter().map(String::as_str);
            live.foreign_policies = Some(foreign(names, BUILTIN_POLICIES, &declared.policies));
        }
        if desired.foreign_mounts.is_some() {
            let op = "ListSecretsEngine";
            let table = mount_table(&self.0, ctx, client, op, "sys/mounts").await?;
            let paths = table.keys().map(String::as_str);
            live.foreign_mounts = Some(foreign(paths, BUILTIN_MOUNTS, &declared.mounts));
        }
        if desired.foreign_auth.is_some() {
            let table = mount_table(&self.0, ctx, client, "ListAuthMethod", "sys/auth").await?;
            let paths = table.keys().map(String::as_str);
            live.foreign_auth = Some(foreign(paths, BUILTIN_AUTH, &declared.auth));
        }
        if desired.foreign_entries.is_some() {
            let mut found = Vec::new();
            for (list, names) in &declared.entries {
                let keys = Self::entries(client, list).await?;
                let extra = foreign(keys.iter().map(String::as_str), &[], names);
                found.extend(extra.into_iter().map(|k| format!("{list}/{k}")));
            }
            found.sort();
            live.foreign_entries = Some(found);
        }
        Ok(Live::new(ID, live))
    }

    /// Removes what `current` lists and `desired` does not, in the order that frees each thing
    /// before what holds it: entries, then auth methods and secrets engines, then policies.
    async fn remove(&self, current: &Contents, desired: &Contents) -> KindResult<()> {
        let gone = |live: &Option<Vec<String>>, want: &Option<Vec<String>>| -> Vec<String> {
            let want = want.clone().unwrap_or_default();
            live.iter().flatten().filter(|n| !want.contains(n)).cloned().collect()
        };
        let client = self.0.client("RemoveForeign").await?;
        for path in gone(&current.foreign_entries, &desired.foreign_entries) {
            tolerate_absent(client.delete("DeleteEntry", &path).await)?;
        }
        {
            let _lock = self.0.mount_lock.lock().await;
            for path in gone(&current.foreign_auth, &desired.foreign_auth) {
                let path = format!("sys/auth/{path}");
                tolerate_absent(client.delete("DisableAuthMethod", &path).await)?;
            }
            for path in gone(&current.foreign_mounts, &desired.foreign_mounts) {
                let path = format!("sys/mounts/{path}");
                tolerate_absent(client.delete("DisableSecretsEngine", &path).await)?;
            }
        }
        for name in gone(&current.foreign_policies, &desired.foreign_policies) {
            let path = format!("sys/policies/acl/{name}");
            tolerate_absent(client.delete("DeletePolicy", &path).await)?;
        }
        Ok(())
    }
}

/// A removal of what is already gone is done.
fn tolerate_absent(result: Result<(), BaoError>) -> KindResult<()> {
    match result {
        Err(e) if nothing_there(&e) => Ok(()),
        other => other.map_err(KindError::from),
    }
}

impl TypedKind for ContentsKind {
    type Attrs = Contents;
    const NAME: &'static str = "openbao_contents";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let mut out = Vec::with_capacity(requests.len());
        for r in requests {
            let Some(desired) = &r.desired else {
                // No longer in the spec: a view with nothing of its own to delete.
                out.push(r.id.as_ref().map(|id| Live::new(id, Contents::unwatched())));
                continue;
            };
            let client = self.0.connect().await?;
            let status = client.read("GetSealStatus", "sys/seal-status").await?;
            let status = status.unwrap_or_default();
            let flag = |name: &str| status.get(name).and_then(Json::as_bool);
            if flag("initialized") == Some(false) {
                // Not initialised yet: nothing is there, the resource comes with the server.
                out.push(None);
                continue;
            }
            if flag("sealed") == Some(true) || !client.has_token() {
                // A sealed server cannot be looked into, nor one without its token: nothing is
                // reported until then (both are `openbao_init`'s drift, repaired by its apply).
                tracing::warn!("OpenBao cannot be looked into: what it holds is not checked");
                out.push(Some(Live::new(ID, desired.clone())));
                continue;
            }
            out.push(Some(self.look(ctx, &client, desired).await?));
        }
        Ok(out)
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        // Only looks: what a server holds when the engine first watches it is shown by the
        // next plan, never removed unseen. The mounts made in this run are forgotten by their
        // writes, so the tables read here are current.
        let client = self.0.client("ListPolicies").await?;
        self.look(ctx, &client, desired).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let touched = changes.foreign_policies
            || changes.foreign_mounts
            || changes.foreign_auth
            || changes.foreign_entries;
        let client = self.0.client("ListPolicies").await?;
        if touched {
            self.remove(&current.attributes, desired).await?;
            forget(ctx, &client, "sys/mounts");
            forget(ctx, &client, "sys/auth");
        }
        self.look(ctx, &client, desired).await
    }

    async fn delete(&self, _: &Context, _: &LiveOf<Self>) -> KindResult<()> {
        Ok(())
    }
}

impl Contents {
    fn unwatched() -> Contents {
        Contents {
            declared: Declared::default(),
            foreign_policies: None,
            foreign_mounts: None,
            foreign_auth: None,
            foreign_entries: None,
        }
    }
}

/// The watched contents of a server: `declared` as a spec value, every `foreign_*` wanted empty.
pub(crate) fn desired(declared: &Declared) -> Json {
    serde_json::to_value(declared).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_is_what_is_neither_built_in_nor_declared() {
        let declared = BTreeSet::from(["jwt/aws-0".to_string(), "userpass".to_string()]);
        let found = ["token/", "jwt/aws-0/", "userpass/", "approle/", "jwt/other/"];
        assert_eq!(foreign(found, BUILTIN_AUTH, &declared), ["approle", "jwt/other"]);
    }

    #[test]
    fn only_the_watched_lists_are_diffed() {
        let want = Contents {
            foreign_mounts: Some(vec![]),
            foreign_policies: Some(vec![]),
            ..Contents::unwatched()
        };
        let live = Contents {
            declared: Declared { policies: BTreeSet::from(["a".into()]), ..Default::default() },
            foreign_mounts: Some(vec!["kv-extra".into()]),
            foreign_policies: Some(vec![]),
            ..Contents::unwatched()
        };
        let changed = engine::testing::changed_fields(&live, &want);
        assert_eq!(changed, [("foreign_mounts", false)], "declared is a setting");
    }
}
