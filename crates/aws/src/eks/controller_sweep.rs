//! `aws_eks_controller_sweep`: what controllers inside the cluster made in the cloud (the engine
//! never created it, and OpenTofu would leave it behind), deleted by a destroy once the cluster
//! is gone and before the network goes, as the reference's teardown sweeps it.
//!
//! The resource sits between the network and the cluster: it depends on the VPC, the subnets
//! and the zones, and the cluster depends on it. A destroy therefore deletes it after the
//! cluster (no controller is left to make more) and before the subnets, the VPC and the zones
//! (which what it deletes would otherwise hold). Its delete finds, each by the tags its
//! controller sets, and deletes in this order:
//!
//! 1. Karpenter's instances in the VPC (`karpenter.sh/nodepool`, with
//!    `kubernetes.io/cluster/<cluster>=owned`), waiting until they are terminated;
//! 2. load balancers and target groups in the VPC of the AWS Load Balancer Controller
//!    (`elbv2.k8s.aws/cluster=<cluster>`) or of Kubernetes' service controller
//!    (`kubernetes.io/cluster/<cluster>=owned`), waiting until the load balancers are gone;
//! 3. security groups in the VPC that those controllers made (same tags), and the one EKS makes
//!    for the cluster (`aws:eks:cluster-name=<cluster>`, named `eks-cluster-sg-<cluster>-*`),
//!    after revoking the rules of other groups that refer to them;
//! 4. EBS volumes of the cluster's persistent volumes (`kubernetes.io/cluster/<cluster>=owned`);
//! 5. ExternalDNS's records in the zones: the TXT registry records of its owner id, and the
//!    A, AAAA and CNAME records they own.
//!
//! Whatever carries the engine's own `engine:address` tag is left to its own resource. What is
//! still held (a volume still attached, a group still used by a lingering interface) fails the
//! step as draining, and the executor tries the whole sweep again for minutes; every pass lists
//! afresh, so a sweep cut short is simply run again.
//!
//! A read for a destroy (nothing desired) lists what the delete would take, so the destroy's
//! plan shows it (`found`); a read for an apply or drift makes no call. Creating it calls
//! nothing. Its id holds what it covers, so a destroy's read needs nothing else.

use crate::AwsClients;
use crate::error::{Listing, SdkResult};
use crate::lookup::filter;
use aws_sdk_ec2::types::{IpPermission, SecurityGroup, UserIdGroupPair};
use aws_sdk_route53::types::{Change, ChangeAction, ChangeBatch, ResourceRecordSet, RrType};
use engine::TAG_ADDRESS;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct ControllerSweep {
    #[attr(in_place)]
    pub cluster_name: String,
    #[attr(in_place)]
    pub vpc_id: String,
    /// Hosted zones where ExternalDNS writes records.
    #[attr(in_place, unordered)]
    pub zone_ids: Vec<String>,
    /// ExternalDNS's `--txt-owner-id`.
    #[attr(in_place)]
    pub external_dns_owner: String,
    /// What a destroy's sweep would delete now, one line each.
    #[attr(computed)]
    #[serde(default)]
    pub found: Vec<String>,
}

pub(crate) struct ControllerSweepKind(pub Arc<AwsClients>);

/// The Kubernetes cluster tag: `owned` on what the cluster's controllers made for it alone.
fn cluster_tag(cluster: &str) -> String {
    format!("kubernetes.io/cluster/{cluster}")
}
const LOAD_BALANCER_CONTROLLER: &str = "elbv2.k8s.aws/cluster";
const EKS_CLUSTER: &str = "aws:eks:cluster-name";
const KARPENTER_NODE_POOL: &str = "karpenter.sh/nodepool";
const PVC_NAME: &str = "kubernetes.io/created-for/pvc/name";
/// How long one pass waits for instances to terminate or load balancers to go.
const SETTLE: Duration = Duration::from_secs(600);

/// The id: what the sweep covers, `<cluster>/<vpc>/<zone,zone>/<owner>`.
fn id_of(s: &ControllerSweep) -> String {
    let mut zones = s.zone_ids.clone();
    zones.sort();
    format!("{}/{}/{}/{}", s.cluster_name, s.vpc_id, zones.join(","), s.external_dns_owner)
}

fn from_id(id: &str) -> Option<ControllerSweep> {
    let mut parts = id.splitn(4, '/');
    let (cluster, vpc, zones, owner) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    Some(ControllerSweep {
        cluster_name: cluster.to_string(),
        vpc_id: vpc.to_string(),
        zone_ids: zones.split(',').filter(|z| !z.is_empty()).map(str::to_string).collect(),
        external_dns_owner: owner.to_string(),
        found: vec![],
    })
}

/// What one pass found.
#[derive(Default)]
struct Survey {
    instances: Vec<String>,
    load_balancers: Vec<String>,
    target_groups: Vec<String>,
    security_groups: Vec<(String, String)>,
    /// Rules of other groups that refer to the swept ones: (group, ingress?, permission).
    references: Vec<(String, bool, IpPermission)>,
    volumes: Vec<(String, String, bool)>,
    records: Vec<(String, ResourceRecordSet)>,
}

impl Survey {
    fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        out.extend(self.instances.iter().map(|i| format!("instance {i} (Karpenter)")));
        out.extend(self.load_balancers.iter().map(|a| format!("load balancer {a}")));
        out.extend(self.target_groups.iter().map(|a| format!("target group {a}")));
        out.extend(self.security_groups.iter().map(|(id, n)| format!("security group {id} ({n})")));
        out.extend(self.volumes.iter().map(|(id, pvc, _)| format!("EBS volume {id} ({pvc})")));
        out.extend(self.records.iter().map(|(zone, r)| {
            format!("Route53 {} {} in {zone}", r.r#type().as_str(), dns_name(r.name()))
        }));
        out
    }
}

fn dns_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// Whether the tags say the cluster's controllers made it (and the engine did not).
fn made_by_controller(cluster: &str, tags: &[(String, String)]) -> bool {
    let has = |k: &str, v: &str| tags.iter().any(|(tk, tv)| tk == k && tv == v);
    let engine_made = tags.iter().any(|(k, _)| k == TAG_ADDRESS);
    !engine_made
        && (has(LOAD_BALANCER_CONTROLLER, cluster)
            || has(&cluster_tag(cluster), "owned")
            || has(EKS_CLUSTER, cluster))
}

fn ec2_tags(tags: &[aws_sdk_ec2::types::Tag]) -> Vec<(String, String)> {
    let pair = |t: &aws_sdk_ec2::types::Tag| {
        (t.key().unwrap_or_default().to_string(), t.value().unwrap_or_default().to_string())
    };
    tags.iter().map(pair).collect()
}

/// Whether a TXT record's value is ExternalDNS's registry entry for `owner`.
fn registry_of(owner: &str, set: &ResourceRecordSet) -> bool {
    set.r#type() == &RrType::Txt
        && set.resource_records().iter().any(|r| {
            let parts: BTreeSet<&str> = r.value().trim_matches('"').split(',').collect();
            parts.contains("heritage=external-dns")
                && parts.contains(format!("external-dns/owner={owner}").as_str())
        })
}

/// The names a registry record at `txt_name` owns: its own, and (ExternalDNS's newer format,
/// `a-<name>`, `cname-<name>`) the name without the record type's prefix.
fn owned_names(txt_name: &str) -> Vec<String> {
    let name = dns_name(txt_name);
    let mut out = vec![name.clone()];
    for prefix in ["a-", "aaaa-", "cname-"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            out.push(rest.to_string());
        }
    }
    out
}

/// Still held by something that lets go in time: the executor tries again for minutes.
fn draining(message: String) -> KindError {
    let mut e = KindError::retryable(message);
    e.draining = true;
    e
}

impl ControllerSweepKind {
    async fn survey(&self, s: &ControllerSweep) -> KindResult<Survey> {
        let mut survey = Survey::default();
        let ec2 = &self.0.ec2;
        let cluster = s.cluster_name.as_str();
        let vpc = || filter("vpc-id", vec![s.vpc_id.clone()]);

        let call = ec2
            .describe_instances()
            .filters(vpc())
            .filters(filter("tag-key", vec![KARPENTER_NODE_POOL.into()]))
            .filters(filter(&format!("tag:{}", cluster_tag(cluster)), vec!["owned".into()]))
            .filters(filter(
                "instance-state-name",
                ["pending", "running", "stopping", "stopped"].map(String::from).to_vec(),
            ));
        let reservations =
            call.into_paginator().items().send().all("ec2:DescribeInstances").await?;
        for r in &reservations {
            survey
                .instances
                .extend(r.instances().iter().filter_map(|i| i.instance_id()).map(String::from));
        }

        let elb = &self.0.elbv2;
        let lbs = elb.describe_load_balancers().into_paginator().items().send();
        let lbs = lbs.all("elasticloadbalancing:DescribeLoadBalancers").await?;
        let arns: Vec<String> = lbs
            .iter()
            .filter(|l| l.vpc_id() == Some(s.vpc_id.as_str()))
            .filter_map(|l| l.load_balancer_arn().map(String::from))
            .collect();
        survey.load_balancers = self.controller_made_elb(cluster, arns).await?;
        let tgs = elb.describe_target_groups().into_paginator().items().send();
        let tgs = tgs.all("elasticloadbalancing:DescribeTargetGroups").await?;
        let arns: Vec<String> = tgs
            .iter()
            .filter(|t| t.vpc_id() == Some(s.vpc_id.as_str()))
            .filter_map(|t| t.target_group_arn().map(String::from))
            .collect();
        survey.target_groups = self.controller_made_elb(cluster, arns).await?;

        let groups = ec2.describe_security_groups().filters(vpc()).into_paginator().items().send();
        let groups: Vec<SecurityGroup> = groups.all("ec2:DescribeSecurityGroups").await?;
        let eks_made = format!("eks-cluster-sg-{cluster}-");
        for g in &groups {
            let name = g.group_name().unwrap_or_default();
            let tags = ec2_tags(g.tags());
            let ours = tags.iter().any(|(k, _)| k == TAG_ADDRESS);
            if made_by_controller(cluster, &tags) || (!ours && name.starts_with(&eks_made)) {
                survey.security_groups.push((g.group_id().unwrap_or_default().into(), name.into()));
            }
        }
        let swept: BTreeSet<&str> =
            survey.security_groups.iter().map(|(id, _)| id.as_str()).collect();
        for g in groups.iter().filter(|g| !swept.contains(g.group_id().unwrap_or_default())) {
            let id = g.group_id().unwrap_or_default().to_string();
            for (ingress, rules) in [(true, g.ip_permissions()), (false, g.ip_permissions_egress())]
            {
                for rule in rules {
                    let pairs: Vec<UserIdGroupPair> = rule
                        .user_id_group_pairs()
                        .iter()
                        .filter(|p| p.group_id().is_some_and(|id| swept.contains(id)))
                        .map(|p| {
                            UserIdGroupPair::builder()
                                .set_group_id(p.group_id().map(String::from))
                                .build()
                        })
                        .collect();
                    if pairs.is_empty() {
                        continue;
                    }
                    let permission = IpPermission::builder()
                        .set_ip_protocol(rule.ip_protocol().map(String::from))
                        .set_from_port(rule.from_port())
                        .set_to_port(rule.to_port())
                        .set_user_id_group_pairs(Some(pairs))
                        .build();
                    survey.references.push((id.clone(), ingress, permission));
                }
            }
        }

        let volumes = ec2
            .describe_volumes()
            .filters(filter(&format!("tag:{}", cluster_tag(cluster)), vec!["owned".into()]))
            .into_paginator()
            .items()
            .send();
        for v in volumes.all("ec2:DescribeVolumes").await? {
            let tags = ec2_tags(v.tags());
            if tags.iter().any(|(k, _)| k == TAG_ADDRESS) {
                continue;
            }
            let pvc = tags.iter().find(|(k, _)| k == PVC_NAME).map(|(_, v)| v.as_str());
            let attached = !v.attachments().is_empty();
            let id = v.volume_id().unwrap_or_default().to_string();
            survey.volumes.push((id, format!("pvc {}", pvc.unwrap_or("?")), attached));
        }

        for zone in &s.zone_ids {
            let sets = self.record_sets(zone).await?;
            let registry: Vec<&ResourceRecordSet> =
                sets.iter().filter(|r| registry_of(&s.external_dns_owner, r)).collect();
            let owned: BTreeSet<String> =
                registry.iter().flat_map(|r| owned_names(r.name())).collect();
            for set in &sets {
                let record = matches!(set.r#type(), RrType::A | RrType::Aaaa | RrType::Cname)
                    && owned.contains(&dns_name(set.name()));
                if record || registry.contains(&set) {
                    survey.records.push((zone.clone(), set.clone()));
                }
            }
        }
        Ok(survey)
    }

    /// Of `arns` (load balancers or target groups), those a controller of `cluster` made.
    async fn controller_made_elb(
        &self,
        cluster: &str,
        arns: Vec<String>,
    ) -> KindResult<Vec<String>> {
        let tags = crate::elbv2::tags(&self.0.elbv2, &arns).await?;
        Ok(arns
            .into_iter()
            .filter(|arn| {
                let pairs: Vec<(String, String)> = tags
                    .get(arn)
                    .map(|t| t.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                    .unwrap_or_default();
                made_by_controller(cluster, &pairs)
            })
            .collect())
    }

    /// Every record set of `zone` (Route53 pages by name and type).
    async fn record_sets(&self, zone: &str) -> KindResult<Vec<ResourceRecordSet>> {
        let op = "route53:ListResourceRecordSets";
        let mut out = Vec::new();
        let mut next: Option<(String, Option<RrType>, Option<String>)> = None;
        loop {
            let mut call = self.0.route53.list_resource_record_sets().hosted_zone_id(zone);
            if let Some((name, rtype, identifier)) = next.take() {
                call = call.start_record_name(name).set_start_record_type(rtype);
                call = call.set_start_record_identifier(identifier);
            }
            let Some(page) = call.send().await.or_absent(op, &["NoSuchHostedZone"])? else {
                return Ok(out);
            };
            out.extend(page.resource_record_sets().iter().cloned());
            match (page.is_truncated(), page.next_record_name()) {
                (true, Some(name)) => {
                    next = Some((
                        name.to_string(),
                        page.next_record_type().cloned(),
                        page.next_record_identifier().map(String::from),
                    ))
                }
                _ => return Ok(out),
            }
        }
    }

    /// One pass: deletes what `survey` found, in the order the module's documentation gives.
    async fn sweep(&self, s: &ControllerSweep, survey: &Survey) -> KindResult<()> {
        let ec2 = &self.0.ec2;
        if !survey.instances.is_empty() {
            let call = ec2.terminate_instances().set_instance_ids(Some(survey.instances.clone()));
            call.send().await.or_gone("ec2:TerminateInstances", &["InvalidInstanceID.NotFound"])?;
            self.until_terminated(&survey.instances).await?;
        }
        let elb = &self.0.elbv2;
        for arn in &survey.load_balancers {
            let call = elb.delete_load_balancer().load_balancer_arn(arn);
            call.send()
                .await
                .or_gone("elasticloadbalancing:DeleteLoadBalancer", &["LoadBalancerNotFound"])?;
        }
        self.until_load_balancers_gone(&survey.load_balancers).await?;
        for arn in &survey.target_groups {
            let call = elb.delete_target_group().target_group_arn(arn);
            call.send()
                .await
                .or_gone("elasticloadbalancing:DeleteTargetGroup", &["TargetGroupNotFound"])?;
        }
        for (group, ingress, permission) in &survey.references {
            let gone = &["InvalidPermission.NotFound", "InvalidGroup.NotFound"];
            if *ingress {
                let call = ec2.revoke_security_group_ingress().group_id(group);
                let call = call.ip_permissions(permission.clone());
                call.send().await.or_gone("ec2:RevokeSecurityGroupIngress", gone)?;
            } else {
                let call = ec2.revoke_security_group_egress().group_id(group);
                let call = call.ip_permissions(permission.clone());
                call.send().await.or_gone("ec2:RevokeSecurityGroupEgress", gone)?;
            }
        }
        for (id, _) in &survey.security_groups {
            let call = ec2.delete_security_group().group_id(id);
            call.send().await.or_gone("ec2:DeleteSecurityGroup", &["InvalidGroup.NotFound"])?;
        }
        for (id, pvc, attached) in &survey.volumes {
            if *attached {
                return Err(draining(format!(
                    "EBS volume {id} ({pvc}) of cluster {} is still attached",
                    s.cluster_name
                )));
            }
            let call = ec2.delete_volume().volume_id(id);
            call.send().await.or_gone("ec2:DeleteVolume", &["InvalidVolume.NotFound"])?;
        }
        let zones: BTreeSet<&String> = survey.records.iter().map(|(zone, _)| zone).collect();
        for zone in zones {
            let sets: Vec<&ResourceRecordSet> =
                survey.records.iter().filter(|(z, _)| z == zone).map(|(_, r)| r).collect();
            for chunk in sets.chunks(500) {
                let changes = chunk.iter().map(|set| {
                    Change::builder()
                        .action(ChangeAction::Delete)
                        .resource_record_set((*set).clone())
                        .build()
                });
                let changes = changes
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| KindError::new(e.to_string()))?;
                let batch = ChangeBatch::builder()
                    .comment(format!("ExternalDNS records of cluster {}", s.cluster_name))
                    .set_changes(Some(changes))
                    .build()
                    .map_err(|e| KindError::new(e.to_string()))?;
                let call = self.0.route53.change_resource_record_sets().hosted_zone_id(zone);
                call.change_batch(batch).send().await.api("route53:ChangeResourceRecordSets")?;
            }
        }
        Ok(())
    }

    async fn until_terminated(&self, ids: &[String]) -> KindResult<()> {
        let started = Instant::now();
        loop {
            let call = self.0.ec2.describe_instances().set_instance_ids(Some(ids.to_vec()));
            let out = call
                .send()
                .await
                .or_absent("ec2:DescribeInstances", &["InvalidInstanceID.NotFound"])?;
            let running: Vec<String> = out
                .iter()
                .flat_map(|o| o.reservations())
                .flat_map(|r| r.instances())
                .filter(|i| {
                    i.state().and_then(|s| s.name()).is_none_or(|n| n.as_str() != "terminated")
                })
                .filter_map(|i| i.instance_id().map(String::from))
                .collect();
            if running.is_empty() {
                return Ok(());
            }
            if started.elapsed() > SETTLE {
                return Err(draining(format!(
                    "instances not terminated yet: {}",
                    running.join(", ")
                )));
            }
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    }

    async fn until_load_balancers_gone(&self, arns: &[String]) -> KindResult<()> {
        let started = Instant::now();
        for arn in arns {
            loop {
                let call = self.0.elbv2.describe_load_balancers().load_balancer_arns(arn);
                let op = "elasticloadbalancing:DescribeLoadBalancers";
                if call.send().await.or_absent(op, &["LoadBalancerNotFound"])?.is_none() {
                    break;
                }
                if started.elapsed() > SETTLE {
                    return Err(draining(format!("load balancer {arn} not deleted yet")));
                }
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }
        Ok(())
    }
}

impl TypedKind for ControllerSweepKind {
    type Attrs = ControllerSweep;
    const NAME: &'static str = "aws_eks_controller_sweep";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let mut out = Vec::new();
        for r in requests.iter() {
            let Some(id) = &r.id else {
                out.push(None);
                continue;
            };
            let live = match &r.desired {
                // An apply's or a drift's read: nothing in the cloud to compare.
                Some(desired) => ControllerSweep { found: vec![], ..desired.clone() },
                // A destroy's read: what its delete would take, for the plan.
                None => {
                    let Some(mut sweep) = from_id(id) else {
                        return Err(KindError::new(format!(
                            "{}: not a sweep id: {id}",
                            Self::NAME
                        )));
                    };
                    sweep.found = self.survey(&sweep).await?.lines();
                    sweep
                }
            };
            out.push(Some(Live::new(id, live)));
        }
        Ok(out)
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        Ok(Live::new(id_of(desired), desired.clone()))
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        Ok(Live::new(id_of(update.desired), update.desired.clone()))
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let s = from_id(&current.id).unwrap_or_else(|| current.attributes.clone());
        let survey = self.survey(&s).await?;
        let found = survey.lines();
        if !found.is_empty() {
            tracing::info!(cluster = %s.cluster_name, found = ?found, "sweeping what the cluster's controllers made");
        }
        self.sweep(&s, &survey).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_holds_what_a_destroy_needs() {
        let s = ControllerSweep {
            cluster_name: "aws-0".into(),
            vpc_id: "vpc-1".into(),
            zone_ids: vec!["Z2".into(), "Z1".into()],
            external_dns_owner: "team/a".into(),
            found: vec![],
        };
        let id = id_of(&s);
        assert_eq!(id, "aws-0/vpc-1/Z1,Z2/team/a");
        let back = from_id(&id).unwrap();
        assert_eq!(
            (back.cluster_name.as_str(), back.external_dns_owner.as_str()),
            ("aws-0", "team/a")
        );
        assert_eq!(back.zone_ids, ["Z1", "Z2"]);
    }

    #[test]
    fn external_dns_registry_records_and_the_names_they_own() {
        let txt = |value: &str| {
            ResourceRecordSet::builder()
                .name("a-web.priv.aws.ogenki.io.")
                .r#type(RrType::Txt)
                .resource_records(
                    aws_sdk_route53::types::ResourceRecord::builder().value(value).build().unwrap(),
                )
                .build()
                .unwrap()
        };
        let ours = "\"heritage=external-dns,external-dns/owner=aws-0,external-dns/resource=service/default/web\"";
        assert!(registry_of("aws-0", &txt(ours)));
        assert!(!registry_of("gcp-0", &txt(ours)), "another owner's records are left");
        assert!(!registry_of("aws-0", &txt("\"v=spf1 -all\"")));
        assert_eq!(
            owned_names("a-web.priv.aws.ogenki.io."),
            ["a-web.priv.aws.ogenki.io", "web.priv.aws.ogenki.io"]
        );
    }

    #[test]
    fn what_the_engine_made_is_never_swept() {
        let tag = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert!(made_by_controller("aws-0", &[tag("elbv2.k8s.aws/cluster", "aws-0")]));
        assert!(made_by_controller("aws-0", &[tag("kubernetes.io/cluster/aws-0", "owned")]));
        assert!(!made_by_controller("aws-0", &[tag("kubernetes.io/cluster/aws-0", "shared")]));
        assert!(!made_by_controller("aws-0", &[tag("elbv2.k8s.aws/cluster", "aws-1")]));
        assert!(!made_by_controller(
            "aws-0",
            &[tag("kubernetes.io/cluster/aws-0", "owned"), tag(TAG_ADDRESS, "aws.eks.x")]
        ));
    }
}
