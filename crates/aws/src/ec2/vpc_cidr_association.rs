//! `aws_vpc_cidr_association`: a secondary IPv4 CIDR of the VPC. Read through the VPCs'
//! association sets (one batched `DescribeVpcs`, shared with the VPC kind).

use super::vpc::{Vpc, VpcKind};
use crate::AwsClients;
use crate::error::{SdkResult, required};
use crate::lookup::{filter, owned};
use engine::prelude::*;
use engine::retry::read_back;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct VpcCidrAssociation {
    #[attr(replace)]
    pub vpc_id: String,
    #[attr(replace, normalize = engine::normalize::cidr)]
    pub cidr_block: String,
}

pub(crate) struct VpcCidrAssociationKind(pub Arc<AwsClients>);

/// The live secondary CIDR associations of `vpcs`.
fn associations(vpcs: &[Live<Vpc>]) -> Vec<Live<VpcCidrAssociation>> {
    vpcs.iter()
        .flat_map(|v| {
            v.attributes
                .cidr_associations
                .iter()
                .filter(|a| matches!(a.state.as_str(), "associated" | "associating"))
                .map(|a| {
                    Live::new(
                        a.id.clone(),
                        VpcCidrAssociation {
                            vpc_id: v.id.clone(),
                            cidr_block: a.cidr_block.clone(),
                        },
                    )
                })
        })
        .collect()
}

impl VpcCidrAssociationKind {
    fn vpcs(&self) -> VpcKind {
        VpcKind(self.0.clone())
    }

    async fn of_vpcs(&self, vpc_ids: Vec<String>) -> KindResult<Vec<Live<VpcCidrAssociation>>> {
        if vpc_ids.is_empty() {
            return Ok(vec![]);
        }
        Ok(associations(&self.vpcs().describe(filter("vpc-id", vpc_ids)).await?))
    }
}

impl TypedKind for VpcCidrAssociationKind {
    type Attrs = VpcCidrAssociation;
    const NAME: &'static str = "aws_vpc_cidr_association";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let vpc = self.vpcs();
        let owned = owned(ctx, "vpc-id", &|f| vpc.describe(f)).await?;
        let mut found = associations(&owned);
        let mut others: Vec<String> = requests
            .iter()
            .filter_map(|r| r.desired.as_ref().map(|d| d.vpc_id.clone()))
            .filter(|v| !owned.iter().any(|o| &o.id == v))
            .collect();
        others.sort();
        others.dedup();
        found.extend(self.of_vpcs(others).await?);
        // Recorded associations whose VPC the spec no longer names: look them up by id.
        let unmatched: Vec<String> = requests
            .iter()
            .filter_map(|r| r.id.clone())
            .filter(|id| !found.iter().any(|l| &l.id == id))
            .collect();
        if !unmatched.is_empty() {
            let out = self
                .0
                .ec2
                .describe_vpcs()
                .filters(filter("cidr-block-association.association-id", unmatched))
                .send()
                .await
                .api("ec2:DescribeVpcs")?;
            let vpcs = out.vpcs().iter().filter_map(|v| v.vpc_id().map(str::to_string));
            found.extend(self.of_vpcs(vpcs.collect()).await?);
        }
        // Untagged: found by id, else by the VPC and CIDR the spec wants.
        Ok(requests
            .iter()
            .map(|r| {
                let by_id = r.id.as_ref().and_then(|id| found.iter().find(|l| &l.id == id));
                let by_cidr = || {
                    let d = r.desired.as_ref()?;
                    found.iter().find(|l| l.attributes == *d)
                };
                by_id.or_else(by_cidr).cloned()
            })
            .collect())
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let out = self
            .0
            .ec2
            .associate_vpc_cidr_block()
            .vpc_id(&desired.vpc_id)
            .cidr_block(&desired.cidr_block)
            .send()
            .await
            .api("ec2:AssociateVpcCidrBlock")?;
        let id = required(
            out.cidr_block_association().and_then(|a| a.association_id()),
            "ec2:AssociateVpcCidrBlock: AssociationId",
        )?;
        read_back(&format!("CIDR association {id}"), || async {
            let all = self.of_vpcs(vec![desired.vpc_id.clone()]).await?;
            Ok(all.into_iter().find(|l| l.id == id))
        })
        .await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        self.0
            .ec2
            .disassociate_vpc_cidr_block()
            .association_id(&current.id)
            .send()
            .await
            .or_gone("ec2:DisassociateVpcCidrBlock", &["InvalidVpcCidrBlockAssociationID.NotFound"])
    }
}
