//! `aws_eks_addon`: an EKS addon with its configuration values. An addon is unique by name
//! within its cluster; one made by a run that died is adopted by its address tag. Version and
//! configuration change with `UpdateAddon` (conflicts overwritten), waited for with
//! `DescribeUpdate`; the version is diffed only when the spec gives one.

use super::{NOT_FOUND, Status, UpdateOf, cluster_and_name, eks_map, id_parts, map_of, retag};
use super::{wait_gone, wait_status, wait_update};
use crate::AwsClients;
use crate::error::SdkResult;
use crate::lookup::read_by_key;
use aws_sdk_eks::types::ResolveConflicts;
use engine::prelude::*;
use engine::wait::timeout_or;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::sync::Arc;
use std::time::Duration;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct EksAddon {
    #[attr(replace)]
    pub cluster_name: String,
    #[attr(replace)]
    pub name: String,
    /// `None` in the spec: EKS's default version, whichever it is.
    #[attr(in_place)]
    pub version: Option<String>,
    /// The configuration values: sent as JSON, read back as JSON when they parse (as text
    /// otherwise); compared by meaning, so YAML set by hand that says the same is no change.
    #[attr(in_place, normalize = engine::normalize::yaml_document)]
    pub configuration: Option<Json>,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(setting)]
    pub timeout_seconds: Option<u64>,
    #[attr(computed)]
    pub arn: Option<String>,
    #[attr(computed)]
    pub status: Option<String>,
}

impl Status for EksAddon {
    fn status(&self) -> Option<&str> {
        self.status.as_deref()
    }
}

pub(crate) struct EksAddonKind(pub Arc<AwsClients>);

const TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// The configuration values as sent: compact JSON.
fn configuration(desired: &EksAddon) -> Option<String> {
    desired.configuration.as_ref().map(Json::to_string)
}

/// Configuration values as read: JSON when they parse, else the text itself.
fn parse_configuration(text: Option<&str>) -> Option<Json> {
    let text = text.map(str::trim).filter(|t| !t.is_empty())?;
    Some(serde_json::from_str(text).unwrap_or_else(|_| Json::String(text.to_string())))
}

impl EksAddonKind {
    async fn read_one(&self, cluster: &str, name: &str) -> KindResult<Option<Live<EksAddon>>> {
        let call = self.0.eks.describe_addon().cluster_name(cluster).addon_name(name);
        let out = call.send().await.or_absent("eks:DescribeAddon", NOT_FOUND)?;
        let Some(a) = out.and_then(|o| o.addon) else {
            return Ok(None);
        };
        let addon = EksAddon {
            cluster_name: cluster.to_string(),
            name: name.to_string(),
            version: a.addon_version().map(str::to_string),
            configuration: parse_configuration(a.configuration_values()),
            tags: map_of(a.tags()),
            timeout_seconds: None,
            arn: a.addon_arn().map(str::to_string),
            status: a.status().map(|s| s.as_str().to_string()),
        };
        Ok(Some(Live::new(format!("{cluster}:{name}"), addon)))
    }

    async fn wait_active(
        &self,
        ctx: &Context,
        cluster: &str,
        name: &str,
        timeout: Duration,
    ) -> KindResult<Live<EksAddon>> {
        let what = format!("addon {name} of {cluster}");
        // DEGRADED: nothing to run on yet (no nodes); the addon exists and is usable.
        let done = ["ACTIVE", "DEGRADED"];
        wait_status(ctx, &what, timeout, &done, &["CREATE_FAILED"], || self.read_one(cluster, name))
            .await
    }
}

impl TypedKind for EksAddonKind {
    type Attrs = EksAddon;
    const NAME: &'static str = "aws_eks_addon";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let key = |r: &ReadRequest<EksAddon>| cluster_and_name(r, |d| [&d.cluster_name, &d.name]);
        read_by_key(requests, key, |[c, n]| async move { self.read_one(&c, &n).await }).await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let (cluster, name) = (&desired.cluster_name, &desired.name);
        let call = self
            .0
            .eks
            .create_addon()
            .cluster_name(cluster)
            .addon_name(name)
            .set_addon_version(desired.version.clone())
            .set_configuration_values(configuration(desired))
            .resolve_conflicts(ResolveConflicts::Overwrite)
            .set_tags(Some(eks_map(&desired.tags)));
        call.send().await.api("eks:CreateAddon")?;
        tracing::info!(cluster, addon = name, "created addon, waiting until ACTIVE");
        let timeout = timeout_or(desired.timeout_seconds, TIMEOUT);
        self.wait_active(ctx, cluster, name, timeout).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let (eks, have) = (&self.0.eks, &current.attributes);
        let [cluster, name] = id_parts(&current.id, ':')?;
        let timeout = timeout_or(desired.timeout_seconds, TIMEOUT);
        if changes.version || changes.configuration {
            let version = desired.version.clone().filter(|_| changes.version);
            let values = changes.configuration.then(|| configuration(desired).unwrap_or_default());
            let call = eks.update_addon().cluster_name(cluster).addon_name(name);
            let call = call.set_addon_version(version).set_configuration_values(values);
            let out = call.resolve_conflicts(ResolveConflicts::Overwrite).send().await;
            let out = out.api("eks:UpdateAddon")?;
            let of = UpdateOf::Addon(name);
            wait_update(ctx, eks, cluster, of, "eks:UpdateAddon", out.update(), timeout).await?;
        }
        if changes.tags {
            retag(eks, have.arn.as_deref(), &have.tags, &desired.tags).await?;
        }
        self.wait_active(ctx, cluster, name, timeout).await
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let [cluster, name] = id_parts(&current.id, ':')?;
        let call = self.0.eks.delete_addon().cluster_name(cluster).addon_name(name);
        if call.send().await.or_absent("eks:DeleteAddon", NOT_FOUND)?.is_none() {
            return Ok(());
        }
        let what = format!("addon {name} of {cluster}");
        wait_gone(ctx, &what, TIMEOUT, || self.read_one(cluster, name)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::Field;
    use serde_json::json;

    #[test]
    fn configuration_round_trips_as_json() {
        let values = json!({"env": {"WARM_ENI_TARGET": "0", "WARM_IP_TARGET": "1"}});
        let addon = EksAddon {
            cluster_name: "aws-0".into(),
            name: "vpc-cni".into(),
            version: None,
            configuration: Some(values.clone()),
            tags: Tags::new(),
            timeout_seconds: None,
            arn: None,
            status: None,
        };
        let sent = configuration(&addon).unwrap();
        assert_eq!(parse_configuration(Some(&sent)), Some(values.clone()));
        assert_eq!(parse_configuration(None), None);
        assert_eq!(parse_configuration(Some("a: b")), Some(json!("a: b")));
        let field = EksAddon::FIELDS.iter().find(|f| f.name == "configuration").unwrap();
        let yaml = json!("env:\n  WARM_IP_TARGET: \"1\"\n  WARM_ENI_TARGET: \"0\"\n");
        assert!(Field::same(field, &yaml, &values), "the same values as YAML");
    }
}
