//! `aws_eks_cluster`: the control plane. Named by the spec, so a cluster whose create timed
//! out, or whose run was killed before writing state, is found again by its name and adopted
//! when it carries this resource's address tag (never created a second time).
//!
//! Updates happen in place where EKS allows it, one update at a time, each waited for with
//! `DescribeUpdate`: the version (one minor at a time), endpoint access, subnets and security
//! groups, logging, the authentication mode (only towards `API`), tags.

use crate::AwsClients;
use crate::eks::wait::{Poll, timeout_of, wait_for};
use crate::error::{api_error, has_code};
use crate::lookup_json::{bool_attr, live, ours_by_name, str_attr};
use async_trait::async_trait;
use aws_sdk_eks::types::{
    AuthenticationMode, CreateAccessConfigRequest, EncryptionConfig,
    KubernetesNetworkConfigRequest, LogSetup, LogType, Logging, Provider,
    UpdateAccessConfigRequest, UpdateStatus, VpcConfigRequest,
};
use base64::Engine as _;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct EksCluster(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("name"),
    Field::in_place("version"),
    Field::replace("role_arn"),
    Field::in_place("subnet_ids").unordered(),
    Field::in_place("security_group_ids").unordered(),
    Field::in_place("endpoint_private_access"),
    Field::in_place("endpoint_public_access"),
    Field::in_place("authentication_mode"),
    Field::replace("bootstrap_creator_admin"),
    Field::replace("encryption_key_arn"),
    Field::replace("service_cidr"),
    Field::in_place("logging").unordered(),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
    Field::computed("endpoint"),
    Field::computed("endpoint_host"),
    Field::computed("ca_pem"),
    Field::computed("oidc_issuer"),
    Field::computed("cluster_security_group_id"),
    Field::computed("status"),
];

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The PEM text of a cluster's `certificateAuthority.data` (base64 of the PEM).
pub fn decode_ca(data: &str) -> Result<String, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("the cluster CA is not base64: {e}"))?;
    let pem = String::from_utf8(bytes).map_err(|_| "the cluster CA is not PEM text".to_string())?;
    if !pem.trim_start().starts_with("-----BEGIN CERTIFICATE-----") {
        return Err("the cluster CA is not a PEM certificate".into());
    }
    Ok(pem)
}

/// The host of an endpoint URL (`https://ABC.gr7.eu-west-3.eks.amazonaws.com` -> the host).
pub fn endpoint_host(endpoint: &str) -> String {
    let rest = endpoint.split_once("://").map_or(endpoint, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or_default();
    authority
        .rsplit_once(':')
        .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
        .map_or(authority, |(host, _)| host)
        .to_string()
}

fn strings(attrs: &Attrs, name: &str) -> Vec<String> {
    attrs
        .get(name)
        .and_then(Json::as_array)
        .map(|a| a.iter().filter_map(Json::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

pub(crate) fn tag_map(attrs: &Attrs) -> HashMap<String, String> {
    crate::tags::from_attrs(attrs).into_iter().collect()
}

fn tags_json(tags: Option<&HashMap<String, String>>) -> Json {
    let mut pairs: Vec<(&str, &str)> =
        tags.map(|t| t.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()).unwrap_or_default();
    pairs.sort();
    crate::tags::to_json(pairs)
}

/// Brings the tags of EKS resource `arn` from `current` to `desired`.
pub(crate) async fn retag(
    eks: &aws_sdk_eks::Client,
    arn: &str,
    current: &Attrs,
    desired: &Attrs,
) -> Result<(), KindError> {
    let have = crate::tags::from_attrs(current);
    let want = crate::tags::from_attrs(desired);
    let remove: Vec<String> = have.keys().filter(|k| !want.contains_key(*k)).cloned().collect();
    if !remove.is_empty() {
        eks.untag_resource()
            .resource_arn(arn)
            .set_tag_keys(Some(remove))
            .send()
            .await
            .map_err(|e| api_error("eks:UntagResource", e))?;
    }
    let add: HashMap<String, String> =
        want.into_iter().filter(|(k, v)| have.get(k) != Some(v)).collect();
    if !add.is_empty() {
        eks.tag_resource()
            .resource_arn(arn)
            .set_tags(Some(add))
            .send()
            .await
            .map_err(|e| api_error("eks:TagResource", e))?;
    }
    Ok(())
}

/// What an update belongs to (DescribeUpdate needs it).
pub(crate) enum UpdateOf<'a> {
    Cluster,
    NodeGroup(&'a str),
    Addon(&'a str),
}

/// Waits until update `id` of `cluster` has succeeded.
pub(crate) async fn wait_update(
    ctx: &Context,
    eks: &aws_sdk_eks::Client,
    cluster: &str,
    of: UpdateOf<'_>,
    id: &str,
    timeout: Duration,
) -> Result<(), KindError> {
    wait_for(ctx, &format!("update {id} of {cluster}"), timeout, || async {
        let mut call = eks.describe_update().name(cluster).update_id(id);
        call = match of {
            UpdateOf::Cluster => call,
            UpdateOf::NodeGroup(n) => call.nodegroup_name(n),
            UpdateOf::Addon(a) => call.addon_name(a),
        };
        let out = call.send().await.map_err(|e| api_error("eks:DescribeUpdate", e))?;
        let update =
            out.update().ok_or_else(|| KindError::new("eks:DescribeUpdate returned no update"))?;
        match update.status() {
            Some(UpdateStatus::Successful) => Ok(Poll::Done(())),
            Some(UpdateStatus::Failed) | Some(UpdateStatus::Cancelled) => {
                let errors: Vec<String> = update
                    .errors()
                    .iter()
                    .map(|e| e.error_message().unwrap_or_default().to_string())
                    .collect();
                Err(KindError::new(format!(
                    "update {id} of {cluster} {}: {}",
                    update.status().map(|s| s.as_str()).unwrap_or_default(),
                    errors.join("; ")
                )))
            }
            other => Ok(Poll::Pending(other.map(|s| s.as_str()).unwrap_or("unknown").to_string())),
        }
    })
    .await
}

impl EksCluster {
    fn eks(&self) -> Result<&aws_sdk_eks::Client, KindError> {
        Ok(&self.0.eks)
    }

    /// The cluster as an attribute set, or `None` when there is none of that name.
    pub(crate) async fn read_one(&self, name: &str) -> Result<Option<Live>, KindError> {
        let out = match self.eks()?.describe_cluster().name(name).send().await {
            Ok(out) => out,
            Err(e) if has_code(&e, "ResourceNotFoundException") => return Ok(None),
            Err(e) => return Err(api_error("eks:DescribeCluster", e)),
        };
        let Some(c) = out.cluster() else {
            return Ok(None);
        };
        let vpc = c.resources_vpc_config();
        let endpoint = c.endpoint().unwrap_or_default();
        let ca_pem = match c.certificate_authority().and_then(|a| a.data()) {
            Some(data) => {
                decode_ca(data).map_err(|e| KindError::new(format!("cluster {name}: {e}")))?
            }
            None => String::new(),
        };
        let mut logging: Vec<String> = c
            .logging()
            .map(|l| {
                l.cluster_logging()
                    .iter()
                    .filter(|s| s.enabled() == Some(true))
                    .flat_map(|s| s.types().iter().map(|t| t.as_str().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        logging.sort();
        logging.dedup();
        let key_arn =
            c.encryption_config().iter().find_map(|e| e.provider()).and_then(|p| p.key_arn());
        let access = c.access_config();
        Ok(Some(live(
            c.name().unwrap_or(name),
            [
                ("name", json!(c.name())),
                ("version", json!(c.version())),
                ("role_arn", json!(c.role_arn())),
                (
                    "subnet_ids",
                    json!(sorted(vpc.map(|v| v.subnet_ids().to_vec()).unwrap_or_default())),
                ),
                (
                    "security_group_ids",
                    json!(sorted(vpc.map(|v| v.security_group_ids().to_vec()).unwrap_or_default())),
                ),
                (
                    "endpoint_private_access",
                    json!(vpc.is_some_and(|v| v.endpoint_private_access())),
                ),
                ("endpoint_public_access", json!(vpc.is_some_and(|v| v.endpoint_public_access()))),
                (
                    "authentication_mode",
                    json!(
                        access
                            .and_then(|a| a.authentication_mode())
                            .map(|m| m.as_str())
                            .unwrap_or("CONFIG_MAP")
                    ),
                ),
                (
                    "bootstrap_creator_admin",
                    json!(
                        access
                            .and_then(|a| a.bootstrap_cluster_creator_admin_permissions())
                            .unwrap_or(true)
                    ),
                ),
                ("encryption_key_arn", json!(key_arn)),
                (
                    "service_cidr",
                    json!(c.kubernetes_network_config().and_then(|k| k.service_ipv4_cidr())),
                ),
                ("logging", json!(logging)),
                ("tags", tags_json(c.tags())),
                ("arn", json!(c.arn())),
                ("endpoint", json!(endpoint)),
                ("endpoint_host", json!(endpoint_host(endpoint))),
                ("ca_pem", json!(ca_pem)),
                (
                    "oidc_issuer",
                    json!(c.identity().and_then(|i| i.oidc()).and_then(|o| o.issuer())),
                ),
                (
                    "cluster_security_group_id",
                    json!(vpc.and_then(|v| v.cluster_security_group_id())),
                ),
                ("status", json!(c.status().map(|s| s.as_str()))),
            ],
        )))
    }

    /// Waits until the cluster is `ACTIVE` and returns it.
    async fn wait_active(
        &self,
        ctx: &Context,
        name: &str,
        timeout: Duration,
    ) -> Result<Live, KindError> {
        wait_for(ctx, &format!("cluster {name}"), timeout, || async {
            let Some(l) = self.read_one(name).await? else {
                return Ok(Poll::Pending("not visible yet".into()));
            };
            match l.attributes.get("status").and_then(Json::as_str) {
                Some("ACTIVE") => Ok(Poll::Done(l)),
                Some("FAILED") => Err(KindError::new(format!("cluster {name} is FAILED"))),
                other => Ok(Poll::Pending(other.unwrap_or("unknown").to_string())),
            }
        })
        .await
    }

    fn vpc_config(desired: &Attrs, with_network: bool) -> VpcConfigRequest {
        let mut b = VpcConfigRequest::builder()
            .endpoint_private_access(bool_attr(desired, "endpoint_private_access"))
            .endpoint_public_access(bool_attr(desired, "endpoint_public_access"));
        if with_network {
            b = b
                .set_subnet_ids(Some(strings(desired, "subnet_ids")))
                .set_security_group_ids(Some(strings(desired, "security_group_ids")));
        }
        b.build()
    }

    fn logging(types: &[String], enabled: bool) -> Logging {
        Logging::builder()
            .cluster_logging(
                LogSetup::builder()
                    .set_types(Some(types.iter().map(|t| LogType::from(t.as_str())).collect()))
                    .enabled(enabled)
                    .build(),
            )
            .build()
    }

    /// Sends one cluster update and waits for it and for the cluster to be `ACTIVE` again.
    async fn apply_update(
        &self,
        ctx: &Context,
        name: &str,
        what: &str,
        update_id: Option<&str>,
        timeout: Duration,
    ) -> Result<(), KindError> {
        let id = update_id.ok_or_else(|| KindError::new(format!("{what}: no update id")))?;
        tracing::info!(cluster = name, update = id, "{what}");
        wait_update(ctx, self.eks()?, name, UpdateOf::Cluster, id, timeout).await?;
        self.wait_active(ctx, name, timeout).await.map(|_| ())
    }
}

#[async_trait]
impl Kind for EksCluster {
    fn name(&self) -> &'static str {
        "aws_eks_cluster"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let mut out = Vec::new();
        for r in requests {
            let name = r
                .desired
                .as_ref()
                .and_then(|d| d.get("name"))
                .and_then(Json::as_str)
                .map(str::to_string)
                .or_else(|| r.id.clone());
            out.push(match name {
                Some(n) => ours_by_name(r, self.read_one(&n).await?),
                None => None,
            });
        }
        Ok(out)
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn create(
        &self,
        ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let eks = self.eks()?;
        let name = str_attr(desired, "name")?;
        let logging = strings(desired, "logging");
        let mut call = eks
            .create_cluster()
            .name(name)
            .version(str_attr(desired, "version")?)
            .role_arn(str_attr(desired, "role_arn")?)
            .resources_vpc_config(Self::vpc_config(desired, true))
            .kubernetes_network_config(
                KubernetesNetworkConfigRequest::builder()
                    .service_ipv4_cidr(str_attr(desired, "service_cidr")?)
                    .build(),
            )
            .access_config(
                CreateAccessConfigRequest::builder()
                    .authentication_mode(AuthenticationMode::from(str_attr(
                        desired,
                        "authentication_mode",
                    )?))
                    .bootstrap_cluster_creator_admin_permissions(bool_attr(
                        desired,
                        "bootstrap_creator_admin",
                    ))
                    .build(),
            )
            .set_tags(Some(tag_map(desired)));
        if let Some(key) = desired.get("encryption_key_arn").and_then(Json::as_str) {
            call = call.encryption_config(
                EncryptionConfig::builder()
                    .provider(Provider::builder().key_arn(key).build())
                    .build(),
            );
        }
        if !logging.is_empty() {
            call = call.logging(Self::logging(&logging, true));
        }
        match call.send().await {
            Ok(_) => {}
            Err(e) => {
                let mut err = api_error("eks:CreateCluster", e);
                // A role or key that IAM has not propagated yet: nothing was created.
                err.retryable |= err.code.as_deref() == Some("InvalidParameterException")
                    && (err.message.contains("assume") || err.message.contains("KMS"));
                return Err(err);
            }
        }
        tracing::info!(cluster = name, "created EKS cluster, waiting until ACTIVE");
        self.wait_active(ctx, name, timeout_of(desired, DEFAULT_TIMEOUT)).await
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
        let name = str_attr(desired, "name")?;
        let timeout = timeout_of(desired, DEFAULT_TIMEOUT);
        let have = &current.attributes;
        let changed = |f: &str| {
            let unordered = matches!(f, "subnet_ids" | "security_group_ids" | "logging");
            let norm = |v: Option<&Json>| match (unordered, v) {
                (true, Some(Json::Array(a))) => {
                    let mut a: Vec<String> = a.iter().map(|x| x.to_string()).collect();
                    a.sort();
                    json!(a)
                }
                (_, v) => v.cloned().unwrap_or(Json::Null),
            };
            norm(have.get(f)) != norm(desired.get(f))
        };
        // A cluster adopted while still being created: let it finish first.
        if have.get("status").and_then(Json::as_str) != Some("ACTIVE") {
            self.wait_active(ctx, name, timeout).await?;
        }
        if changed("version") {
            let want = str_attr(desired, "version")?;
            let out = eks
                .update_cluster_version()
                .name(name)
                .version(want)
                .send()
                .await
                .map_err(|e| api_error("eks:UpdateClusterVersion", e))?;
            let id = out.update().and_then(|u| u.id());
            self.apply_update(ctx, name, &format!("version to {want}"), id, timeout).await?;
        }
        let network = changed("subnet_ids") || changed("security_group_ids");
        if network || changed("endpoint_private_access") || changed("endpoint_public_access") {
            let out = eks
                .update_cluster_config()
                .name(name)
                .resources_vpc_config(Self::vpc_config(desired, network))
                .send()
                .await
                .map_err(|e| api_error("eks:UpdateClusterConfig", e))?;
            let id = out.update().and_then(|u| u.id());
            self.apply_update(ctx, name, "VPC configuration", id, timeout).await?;
        }
        if changed("logging") {
            let want = strings(desired, "logging");
            let off: Vec<String> =
                strings(have, "logging").into_iter().filter(|t| !want.contains(t)).collect();
            let mut logging = Self::logging(&want, true);
            if !off.is_empty() {
                let mut setups = logging.cluster_logging().to_vec();
                setups.retain(|s| !s.types().is_empty());
                setups.extend(Self::logging(&off, false).cluster_logging().to_vec());
                logging = Logging::builder().set_cluster_logging(Some(setups)).build();
            }
            let out = eks
                .update_cluster_config()
                .name(name)
                .logging(logging)
                .send()
                .await
                .map_err(|e| api_error("eks:UpdateClusterConfig", e))?;
            let id = out.update().and_then(|u| u.id());
            self.apply_update(ctx, name, "logging", id, timeout).await?;
        }
        if changed("authentication_mode") {
            let want = str_attr(desired, "authentication_mode")?;
            let order = ["CONFIG_MAP", "API_AND_CONFIG_MAP", "API"];
            let rank = |m: &str| order.iter().position(|o| *o == m);
            let have_mode =
                have.get("authentication_mode").and_then(Json::as_str).unwrap_or("CONFIG_MAP");
            if rank(want) <= rank(have_mode) {
                return Err(KindError::new(format!(
                    "cluster {name}: the authentication mode only moves towards API ({have_mode} -> {want} is not possible)"
                )));
            }
            let out = eks
                .update_cluster_config()
                .name(name)
                .access_config(
                    UpdateAccessConfigRequest::builder()
                        .authentication_mode(AuthenticationMode::from(want))
                        .build(),
                )
                .send()
                .await
                .map_err(|e| api_error("eks:UpdateClusterConfig", e))?;
            let id = out.update().and_then(|u| u.id());
            self.apply_update(ctx, name, "authentication mode", id, timeout).await?;
        }
        if changed("tags") {
            let arn = str_attr(have, "arn")?;
            retag(eks, arn, have, desired).await?;
        }
        self.read_one(name).await?.ok_or_else(|| KindError::new(format!("cluster {name} vanished")))
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn delete(
        &self,
        ctx: &Context,
        address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let eks = self.eks()?;
        let name = current.id.as_str();
        match eks.delete_cluster().name(name).send().await {
            Ok(_) => {}
            Err(e) if has_code(&e, "ResourceNotFoundException") => return Ok(()),
            // Node groups or addons still going away.
            Err(e) if has_code(&e, "ResourceInUseException") => {
                return Err(KindError::retryable(format!(
                    "eks:DeleteCluster: {name} is still in use"
                )));
            }
            Err(e) => return Err(api_error("eks:DeleteCluster", e)),
        }
        wait_for(ctx, &format!("cluster {name} deletion"), DEFAULT_TIMEOUT, || async {
            Ok(match self.read_one(name).await? {
                None => Poll::Done(()),
                Some(l) => Poll::Pending(
                    l.attributes
                        .get("status")
                        .and_then(Json::as_str)
                        .unwrap_or("DELETING")
                        .to_string(),
                ),
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_is_decoded_to_pem() {
        let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let data = base64::engine::general_purpose::STANDARD.encode(pem);
        assert_eq!(decode_ca(&data).unwrap(), pem);
        assert!(decode_ca("not base64!").unwrap_err().contains("base64"));
        let garbage = base64::engine::general_purpose::STANDARD.encode("hello");
        assert!(decode_ca(&garbage).unwrap_err().contains("PEM"));
    }

    #[test]
    fn endpoint_hosts() {
        assert_eq!(
            endpoint_host("https://ABC123.gr7.eu-west-3.eks.amazonaws.com"),
            "ABC123.gr7.eu-west-3.eks.amazonaws.com"
        );
        assert_eq!(endpoint_host("https://10.0.0.1:6443/"), "10.0.0.1");
        assert_eq!(endpoint_host("example.org"), "example.org");
    }
}
