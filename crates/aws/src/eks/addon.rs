//! `aws_eks_addon`: an EKS addon with its configuration values. An addon is unique by name
//! within its cluster; one made by a run that died is adopted by its address tag. Version and
//! configuration change with `UpdateAddon` (conflicts overwritten), waited for with
//! `DescribeUpdate`; the version is diffed only when the spec gives one.

use super::cluster::{UpdateOf, retag, tag_map, wait_update};
use crate::AwsClients;
use crate::eks::wait::{Poll, timeout_of, wait_for};
use crate::error::{api_error, has_code};
use crate::lookup_json::{live, read_by_key, str_attr};
use async_trait::async_trait;
use aws_sdk_eks::types::ResolveConflicts;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct EksAddon(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("cluster_name"),
    Field::replace("name"),
    Field::in_place("version"),
    Field::in_place("configuration"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
    Field::computed("status"),
];

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// The configuration values as sent: compact JSON.
fn configuration(desired: &Attrs) -> Option<String> {
    desired.get("configuration").filter(|c| !c.is_null()).map(Json::to_string)
}

/// Configuration values as read: JSON when they parse, else the text itself.
fn parse_configuration(text: Option<&str>) -> Json {
    match text.map(str::trim) {
        None | Some("") => Json::Null,
        Some(t) => serde_json::from_str(t).unwrap_or_else(|_| Json::String(t.to_string())),
    }
}

impl EksAddon {
    fn eks(&self) -> Result<&aws_sdk_eks::Client, KindError> {
        Ok(&self.0.eks)
    }

    async fn read_one(&self, cluster: &str, name: &str) -> Result<Option<Live>, KindError> {
        let out = match self
            .eks()?
            .describe_addon()
            .cluster_name(cluster)
            .addon_name(name)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if has_code(&e, "ResourceNotFoundException") => return Ok(None),
            Err(e) => return Err(api_error("eks:DescribeAddon", e)),
        };
        let Some(a) = out.addon() else {
            return Ok(None);
        };
        let mut tags: Vec<(&str, &str)> = a
            .tags()
            .map(|t| t.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect())
            .unwrap_or_default();
        tags.sort();
        Ok(Some(live(
            format!("{cluster}:{name}"),
            [
                ("cluster_name", json!(cluster)),
                ("name", json!(name)),
                ("version", json!(a.addon_version())),
                ("configuration", parse_configuration(a.configuration_values())),
                ("tags", crate::tags::to_json(tags)),
                ("arn", json!(a.addon_arn())),
                ("status", json!(a.status().map(|s| s.as_str()))),
            ],
        )))
    }

    async fn wait_active(
        &self,
        ctx: &Context,
        cluster: &str,
        name: &str,
        timeout: Duration,
    ) -> Result<Live, KindError> {
        wait_for(ctx, &format!("addon {name}"), timeout, || async {
            let Some(l) = self.read_one(cluster, name).await? else {
                return Ok(Poll::Pending("not visible yet".into()));
            };
            match l.attributes.get("status").and_then(Json::as_str) {
                Some("ACTIVE") => Ok(Poll::Done(l)),
                Some("CREATE_FAILED") => {
                    Err(KindError::new(format!("addon {name} of {cluster} is CREATE_FAILED")))
                }
                // DEGRADED: nothing to run on yet (no nodes); the addon exists and is usable.
                Some("DEGRADED") => Ok(Poll::Done(l)),
                other => Ok(Poll::Pending(other.unwrap_or("unknown").to_string())),
            }
        })
        .await
    }
}

#[async_trait]
impl Kind for EksAddon {
    fn name(&self) -> &'static str {
        "aws_eks_addon"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_by_key(requests, super::cluster_and_name, |(c, n)| async move {
            self.read_one(&c, &n).await
        })
        .await
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn create(
        &self,
        ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let cluster = str_attr(desired, "cluster_name")?;
        let name = str_attr(desired, "name")?;
        self.eks()?
            .create_addon()
            .cluster_name(cluster)
            .addon_name(name)
            .set_addon_version(desired.get("version").and_then(Json::as_str).map(str::to_string))
            .set_configuration_values(configuration(desired))
            .resolve_conflicts(ResolveConflicts::Overwrite)
            .set_tags(Some(tag_map(desired)))
            .send()
            .await
            .map_err(|e| api_error("eks:CreateAddon", e))?;
        tracing::info!(cluster, addon = name, "created addon, waiting until ACTIVE");
        self.wait_active(ctx, cluster, name, timeout_of(desired, DEFAULT_TIMEOUT)).await
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn update(
        &self,
        ctx: &Context,
        address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let eks = self.eks()?;
        let cluster = str_attr(desired, "cluster_name")?;
        let name = str_attr(desired, "name")?;
        let timeout = timeout_of(desired, DEFAULT_TIMEOUT);
        let have = &current.attributes;
        let version_changed =
            desired.contains_key("version") && have.get("version") != desired.get("version");
        let config_changed = desired.contains_key("configuration")
            && have.get("configuration") != desired.get("configuration");
        if version_changed || config_changed {
            let out = eks
                .update_addon()
                .cluster_name(cluster)
                .addon_name(name)
                .set_addon_version(
                    version_changed
                        .then(|| desired.get("version").and_then(Json::as_str))
                        .flatten()
                        .map(str::to_string),
                )
                .set_configuration_values(
                    config_changed.then(|| configuration(desired).unwrap_or_default()),
                )
                .resolve_conflicts(ResolveConflicts::Overwrite)
                .send()
                .await
                .map_err(|e| api_error("eks:UpdateAddon", e))?;
            let id = out
                .update()
                .and_then(|u| u.id())
                .ok_or_else(|| KindError::new("eks:UpdateAddon returned no update"))?;
            wait_update(ctx, eks, cluster, UpdateOf::Addon(name), id, timeout).await?;
        }
        if have.get("tags") != desired.get("tags") {
            retag(eks, str_attr(have, "arn")?, have, desired).await?;
        }
        self.wait_active(ctx, cluster, name, timeout).await
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn delete(
        &self,
        ctx: &Context,
        address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let (cluster, name) = current
            .id
            .split_once(':')
            .ok_or_else(|| KindError::new(format!("bad addon id {}", current.id)))?;
        match self.eks()?.delete_addon().cluster_name(cluster).addon_name(name).send().await {
            Ok(_) => {}
            Err(e) if has_code(&e, "ResourceNotFoundException") => return Ok(()),
            Err(e) => return Err(api_error("eks:DeleteAddon", e)),
        }
        wait_for(ctx, &format!("addon {name} deletion"), DEFAULT_TIMEOUT, || async {
            Ok(match self.read_one(cluster, name).await? {
                None => Poll::Done(()),
                Some(_) => Poll::Pending("DELETING".into()),
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_round_trips_as_json() {
        let mut desired = Attrs::new();
        desired.insert(
            "configuration".into(),
            json!({"env": {"WARM_ENI_TARGET": "0", "WARM_IP_TARGET": "1"}}),
        );
        let sent = configuration(&desired).unwrap();
        assert_eq!(parse_configuration(Some(&sent)), desired["configuration"]);
        assert_eq!(parse_configuration(None), Json::Null);
        assert_eq!(parse_configuration(Some("a: b")), json!("a: b"));
    }
}
