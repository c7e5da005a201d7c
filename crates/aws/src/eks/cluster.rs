//! `aws_eks_cluster`: the control plane. Named by the spec, so a cluster whose create timed
//! out, or whose run was killed before writing state, is found again by its name and adopted
//! when it carries this resource's address tag (never created a second time).
//!
//! Updates happen in place where EKS allows it, one update at a time, each waited for with
//! `DescribeUpdate` and the cluster `ACTIVE` again: the version (one minor at a time), endpoint
//! access, subnets and security groups, logging, the authentication mode (only towards `API`),
//! tags.

use super::{NOT_FOUND, Status, UpdateOf, decode_ca, eks_map, endpoint_host, map_of};
use super::{retag, retryable_if, wait_gone, wait_status, wait_update};
use crate::AwsClients;
use crate::error::SdkResult;
use crate::lookup::{read_named, still_there};
use aws_sdk_eks::operation::update_cluster_config::builders::UpdateClusterConfigFluentBuilder;
use aws_sdk_eks::types::{
    AuthenticationMode, CreateAccessConfigRequest, EncryptionConfig,
    KubernetesNetworkConfigRequest, LogSetup, LogType, Logging, Provider, Update as EksUpdate,
    UpdateAccessConfigRequest, VpcConfigRequest,
};
use engine::TypedKind;
use engine::prelude::*;
use engine::wait::timeout_or;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct EksCluster {
    #[attr(replace)]
    pub name: String,
    #[attr(in_place)]
    pub version: String,
    #[attr(replace)]
    pub role_arn: String,
    #[attr(in_place, unordered)]
    pub subnet_ids: Vec<String>,
    #[attr(in_place, unordered)]
    pub security_group_ids: Vec<String>,
    #[attr(in_place)]
    pub endpoint_private_access: bool,
    #[attr(in_place)]
    pub endpoint_public_access: bool,
    /// `CONFIG_MAP`, `API_AND_CONFIG_MAP` or `API`, in the only order EKS moves between them.
    #[attr(in_place)]
    pub authentication_mode: String,
    #[attr(replace)]
    pub bootstrap_creator_admin: bool,
    /// The KMS key encrypting Kubernetes secrets.
    #[attr(replace)]
    pub encryption_key_arn: Option<String>,
    #[attr(replace, normalize = engine::normalize::cidr)]
    pub service_cidr: Option<String>,
    /// The control plane log types sent to CloudWatch.
    #[attr(in_place, unordered)]
    #[serde(default)]
    pub logging: Vec<String>,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(setting)]
    pub timeout_seconds: Option<u64>,
    #[attr(computed)]
    pub arn: Option<String>,
    #[attr(computed)]
    pub endpoint: Option<String>,
    /// The endpoint's host name (what clients connect and verify against).
    #[attr(computed)]
    pub endpoint_host: Option<String>,
    /// The cluster CA as PEM text.
    #[attr(computed)]
    pub ca_pem: Option<String>,
    #[attr(computed)]
    pub oidc_issuer: Option<String>,
    /// The issuer without its scheme (what IAM trust conditions and Flux's vars name).
    #[attr(computed)]
    #[serde(default)]
    pub oidc_issuer_host: Option<String>,
    /// The account the cluster is in (from its ARN).
    #[attr(computed)]
    #[serde(default)]
    pub account_id: Option<String>,
    #[attr(computed)]
    pub cluster_security_group_id: Option<String>,
    #[attr(computed)]
    pub status: Option<String>,
}

impl Status for EksCluster {
    fn status(&self) -> Option<&str> {
        self.status.as_deref()
    }
}

pub(crate) struct EksClusterKind(pub Arc<AwsClients>);

const TIMEOUT: Duration = Duration::from_secs(30 * 60);
const AUTHENTICATION_MODES: [&str; 3] = ["CONFIG_MAP", "API_AND_CONFIG_MAP", "API"];

/// Control plane logging: the types of `want` on, those of `have` no longer wanted off.
fn logging(want: &[String], have: &[String]) -> Logging {
    let off: Vec<String> = have.iter().filter(|t| !want.contains(t)).cloned().collect();
    let setups = [(want, true), (&off[..], false)].into_iter().filter(|(t, _)| !t.is_empty());
    let setups = setups.map(|(types, on)| {
        let types = types.iter().map(|t| LogType::from(t.as_str())).collect();
        LogSetup::builder().set_types(Some(types)).enabled(on).build()
    });
    Logging::builder().set_cluster_logging(Some(setups.collect())).build()
}

/// Endpoint access, with the subnets and security groups when `with_network`.
fn vpc_config(desired: &EksCluster, with_network: bool) -> VpcConfigRequest {
    let config = VpcConfigRequest::builder()
        .endpoint_private_access(desired.endpoint_private_access)
        .endpoint_public_access(desired.endpoint_public_access);
    let network = |v: &Vec<String>| with_network.then(|| v.clone());
    let config = config.set_subnet_ids(network(&desired.subnet_ids));
    config.set_security_group_ids(network(&desired.security_group_ids)).build()
}

impl EksClusterKind {
    async fn read_one(&self, name: &str) -> KindResult<Option<Live<EksCluster>>> {
        let out = self.0.eks.describe_cluster().name(name).send().await;
        let found = out.or_absent("eks:DescribeCluster", NOT_FOUND)?.and_then(|o| o.cluster);
        let Some(c) = found else {
            return Ok(None);
        };
        let vpc = c.resources_vpc_config();
        let ca = c.certificate_authority().and_then(|a| a.data()).map(decode_ca).transpose();
        let ca_pem = ca.map_err(|e| KindError::new(format!("cluster {name}: {e}")))?;
        let enabled = c.logging().map_or(&[][..], |l| l.cluster_logging());
        let enabled = enabled.iter().filter(|s| s.enabled() == Some(true));
        let mut logging: Vec<String> =
            enabled.flat_map(|s| s.types()).map(|t| t.as_str().to_string()).collect();
        logging.sort();
        logging.dedup();
        let access = c.access_config();
        let text = |v: Option<&str>| v.map(str::to_string);
        let cluster = EksCluster {
            name: name.to_string(),
            version: c.version().unwrap_or_default().to_string(),
            role_arn: c.role_arn().unwrap_or_default().to_string(),
            subnet_ids: vpc.map(|v| v.subnet_ids().to_vec()).unwrap_or_default(),
            security_group_ids: vpc.map(|v| v.security_group_ids().to_vec()).unwrap_or_default(),
            endpoint_private_access: vpc.is_some_and(|v| v.endpoint_private_access()),
            endpoint_public_access: vpc.is_some_and(|v| v.endpoint_public_access()),
            authentication_mode: access
                .and_then(|a| a.authentication_mode())
                .map_or("CONFIG_MAP", |m| m.as_str())
                .to_string(),
            bootstrap_creator_admin: access
                .and_then(|a| a.bootstrap_cluster_creator_admin_permissions())
                .unwrap_or(true),
            encryption_key_arn: text(
                c.encryption_config().iter().find_map(|e| e.provider()?.key_arn()),
            ),
            service_cidr: text(c.kubernetes_network_config().and_then(|k| k.service_ipv4_cidr())),
            logging,
            tags: map_of(c.tags()),
            timeout_seconds: None,
            arn: text(c.arn()),
            endpoint: text(c.endpoint()),
            endpoint_host: c.endpoint().map(endpoint_host),
            ca_pem,
            oidc_issuer: text(c.identity().and_then(|i| i.oidc()).and_then(|o| o.issuer())),
            oidc_issuer_host: c
                .identity()
                .and_then(|i| i.oidc())
                .and_then(|o| o.issuer())
                .map(|i| i.trim_start_matches("https://").to_string()),
            account_id: c.arn().and_then(|a| a.split(':').nth(4)).map(str::to_string),
            cluster_security_group_id: text(vpc.and_then(|v| v.cluster_security_group_id())),
            status: text(c.status().map(|s| s.as_str())),
        };
        Ok(Some(Live::new(name, cluster)))
    }

    async fn wait_active(
        &self,
        ctx: &Context,
        name: &str,
        timeout: Duration,
    ) -> KindResult<Live<EksCluster>> {
        let what = format!("cluster {name}");
        wait_status(ctx, &what, timeout, &["ACTIVE"], &["FAILED"], || self.read_one(name)).await
    }

    /// Waits for the update `operation` started, then for the cluster to be `ACTIVE` again.
    async fn finish(
        &self,
        ctx: &Context,
        name: &str,
        operation: &str,
        started: Option<&EksUpdate>,
        timeout: Duration,
    ) -> KindResult<()> {
        let eks = &self.0.eks;
        wait_update(ctx, eks, name, UpdateOf::Cluster, operation, started, timeout).await?;
        self.wait_active(ctx, name, timeout).await.map(|_| ())
    }

    /// Sends one `UpdateClusterConfig` (EKS takes one change at a time) and waits for it.
    async fn update_config(
        &self,
        ctx: &Context,
        name: &str,
        call: UpdateClusterConfigFluentBuilder,
        timeout: Duration,
    ) -> KindResult<()> {
        let out = call.send().await.api("eks:UpdateClusterConfig")?;
        self.finish(ctx, name, "eks:UpdateClusterConfig", out.update(), timeout).await
    }
}

impl TypedKind for EksClusterKind {
    type Attrs = EksCluster;
    const NAME: &'static str = "aws_eks_cluster";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_named(requests, |d| d.name.clone(), |n| async move { self.read_one(&n).await }).await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let access = CreateAccessConfigRequest::builder()
            .authentication_mode(AuthenticationMode::from(desired.authentication_mode.as_str()))
            .bootstrap_cluster_creator_admin_permissions(desired.bootstrap_creator_admin)
            .build();
        let network = KubernetesNetworkConfigRequest::builder()
            .set_service_ipv4_cidr(desired.service_cidr.clone())
            .build();
        let key = desired.encryption_key_arn.as_ref().map(|arn| {
            let provider = Provider::builder().key_arn(arn).build();
            vec![EncryptionConfig::builder().provider(provider).build()]
        });
        let logs = (!desired.logging.is_empty()).then(|| logging(&desired.logging, &[]));
        let call = self
            .0
            .eks
            .create_cluster()
            .name(&desired.name)
            .version(&desired.version)
            .role_arn(&desired.role_arn)
            .resources_vpc_config(vpc_config(desired, true))
            .kubernetes_network_config(network)
            .access_config(access)
            .set_encryption_config(key)
            .set_logging(logs)
            .set_tags(Some(eks_map(&desired.tags)));
        // A role or key that IAM has not propagated yet: nothing was created, tried again.
        let created = call.send().await.api("eks:CreateCluster");
        created.map_err(|e| retryable_if(e, "InvalidParameterException", &["assume", "KMS"]))?;
        tracing::info!(cluster = desired.name, "created EKS cluster, waiting until ACTIVE");
        self.wait_active(ctx, &desired.name, timeout_or(desired.timeout_seconds, TIMEOUT)).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let (eks, name, have) = (&self.0.eks, current.id.as_str(), &current.attributes);
        let timeout = timeout_or(desired.timeout_seconds, TIMEOUT);
        // A cluster adopted while still being created: let it finish first.
        if have.status.as_deref() != Some("ACTIVE") {
            self.wait_active(ctx, name, timeout).await?;
        }
        if changes.version {
            let call = eks.update_cluster_version().name(name).version(&desired.version);
            let out = call.send().await.api("eks:UpdateClusterVersion")?;
            self.finish(ctx, name, "eks:UpdateClusterVersion", out.update(), timeout).await?;
        }
        let network = changes.subnet_ids || changes.security_group_ids;
        if network || changes.endpoint_private_access || changes.endpoint_public_access {
            let config = vpc_config(desired, network);
            let call = eks.update_cluster_config().name(name).resources_vpc_config(config);
            self.update_config(ctx, name, call, timeout).await?;
        }
        if changes.logging {
            let logs = logging(&desired.logging, &have.logging);
            let call = eks.update_cluster_config().name(name).logging(logs);
            self.update_config(ctx, name, call, timeout).await?;
        }
        if changes.authentication_mode {
            let (from, to) = (&have.authentication_mode, &desired.authentication_mode);
            let rank = |m: &str| AUTHENTICATION_MODES.iter().position(|o| *o == m);
            if rank(to) <= rank(from) {
                return Err(KindError::new(format!(
                    "cluster {name}: the authentication mode only moves towards API ({from} -> \
                     {to} is not possible)"
                )));
            }
            let mode = AuthenticationMode::from(to.as_str());
            let access = UpdateAccessConfigRequest::builder().authentication_mode(mode).build();
            let call = eks.update_cluster_config().name(name).access_config(access);
            self.update_config(ctx, name, call, timeout).await?;
        }
        if changes.tags {
            retag(eks, have.arn.as_deref(), &have.tags, &desired.tags).await?;
        }
        still_there(&format!("cluster {name}"), self.read_one(name).await?)
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let name = current.id.as_str();
        let deleting = self.0.eks.delete_cluster().name(name).send().await;
        // Node groups or addons still going away: tried again.
        let deleting = deleting
            .or_absent("eks:DeleteCluster", NOT_FOUND)
            .map_err(|e| retryable_if(e, "ResourceInUseException", &[]))?;
        if deleting.is_none() {
            return Ok(());
        }
        wait_gone(ctx, &format!("cluster {name}"), TIMEOUT, || self.read_one(name)).await
    }
}
