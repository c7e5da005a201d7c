//! `aws_vpc_endpoint`: a gateway endpoint (S3) on route tables. `DescribeVpcEndpoints` has no
//! id filter everywhere: recorded ids not tagged as ours are looked up one by one (rare: someone
//! removed the tags).

use super::{Ec2Tags, tag_spec, tags_of};
use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::{match_requests, missing_ids, owned};
use crate::tagging::retag;
use aws_sdk_ec2::types::{
    Filter, ResourceType, State, VpcEndpoint as Ec2Endpoint, VpcEndpointType,
};
use engine::prelude::*;
use engine::retry::read_back;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct VpcEndpoint {
    #[attr(replace)]
    pub vpc_id: String,
    #[attr(replace)]
    pub service_name: String,
    #[attr(replace)]
    pub vpc_endpoint_type: String,
    #[attr(in_place, unordered)]
    #[serde(default)]
    pub route_table_ids: Vec<String>,
    #[attr(in_place, tags)]
    pub tags: Tags,
}

pub(crate) struct VpcEndpointKind(pub Arc<AwsClients>);

/// The endpoints that exist: deleted and deleting ones are left out. AWS documents capitalised
/// states but answers in lower case; both count.
fn live(endpoints: &[Ec2Endpoint]) -> KindResult<Vec<Live<VpcEndpoint>>> {
    let gone =
        |s: &State| ["deleted", "deleting"].iter().any(|g| s.as_str().eq_ignore_ascii_case(g));
    let mut out = Vec::new();
    for e in endpoints.iter().filter(|e| !e.state().is_some_and(gone)) {
        let endpoint = VpcEndpoint {
            vpc_id: e.vpc_id().unwrap_or_default().to_string(),
            service_name: e.service_name().unwrap_or_default().to_string(),
            vpc_endpoint_type: e.vpc_endpoint_type().map_or("Gateway", |t| t.as_str()).into(),
            route_table_ids: e.route_table_ids().to_vec(),
            tags: tags_of(e.tags()),
        };
        let id = required(e.vpc_endpoint_id(), "ec2:DescribeVpcEndpoints: VpcEndpointId")?;
        out.push(Live::new(id, endpoint));
    }
    Ok(out)
}

const NOT_FOUND: &[&str] = &["InvalidVpcEndpointId.NotFound"];

impl VpcEndpointKind {
    async fn describe(&self, filter: Filter) -> KindResult<Vec<Live<VpcEndpoint>>> {
        let pages = self.0.ec2.describe_vpc_endpoints().filters(filter).into_paginator();
        let all: Vec<_> = pages.items().send().all("ec2:DescribeVpcEndpoints").await?;
        live(&all)
    }

    /// One endpoint by id (`None` when it does not exist).
    async fn by_id(&self, id: &str) -> KindResult<Option<Live<VpcEndpoint>>> {
        let out = self.0.ec2.describe_vpc_endpoints().vpc_endpoint_ids(id).send().await;
        let out = out.or_absent("ec2:DescribeVpcEndpoints", NOT_FOUND)?;
        Ok(live(out.as_ref().map_or(&[], |o| o.vpc_endpoints()))?.pop())
    }

    async fn read_one(&self, id: &str) -> KindResult<Live<VpcEndpoint>> {
        read_back(&format!("VPC endpoint {id}"), || self.by_id(id)).await
    }
}

impl TypedKind for VpcEndpointKind {
    type Attrs = VpcEndpoint;
    const NAME: &'static str = "aws_vpc_endpoint";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let describe = |f| self.describe(f);
        let mut found = owned(ctx, "vpc-endpoint-id", &describe).await?.as_ref().clone();
        for id in missing_ids(requests, &found) {
            found.extend(self.by_id(&id).await?);
        }
        Ok(match_requests(requests, &found))
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let call = self.0.ec2.create_vpc_endpoint().vpc_id(&desired.vpc_id);
        let call = call.service_name(&desired.service_name);
        let call =
            call.vpc_endpoint_type(VpcEndpointType::from(desired.vpc_endpoint_type.as_str()));
        let call = call.set_route_table_ids(Some(desired.route_table_ids.clone()));
        let call = call.tag_specifications(tag_spec(ResourceType::VpcEndpoint, &desired.tags));
        let out = call.send().await.api("ec2:CreateVpcEndpoint")?;
        let id = out.vpc_endpoint().and_then(|e| e.vpc_endpoint_id());
        self.read_one(required(id, "ec2:CreateVpcEndpoint: VpcEndpointId")?).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        if changes.route_table_ids {
            let (have, want) = (&current.attributes.route_table_ids, &desired.route_table_ids);
            let add: Vec<String> = want.iter().filter(|t| !have.contains(t)).cloned().collect();
            let remove: Vec<String> = have.iter().filter(|t| !want.contains(t)).cloned().collect();
            let call = self.0.ec2.modify_vpc_endpoint().vpc_endpoint_id(&current.id);
            let call = call.set_add_route_table_ids((!add.is_empty()).then_some(add));
            let call = call.set_remove_route_table_ids((!remove.is_empty()).then_some(remove));
            call.send().await.api("ec2:ModifyVpcEndpoint")?;
        }
        if changes.tags {
            let ec2 = &self.0.ec2;
            retag(&Ec2Tags(ec2), &current.id, &current.attributes.tags, &desired.tags).await?;
        }
        self.read_one(&current.id).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.ec2.delete_vpc_endpoints().vpc_endpoint_ids(&current.id);
        call.send().await.or_gone("ec2:DeleteVpcEndpoints", NOT_FOUND)
    }
}
