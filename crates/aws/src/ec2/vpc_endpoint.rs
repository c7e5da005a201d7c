//! `aws_vpc_endpoint`: a gateway endpoint (S3) on route tables.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{live, match_requests, missing_ids, owned_filter, str_attr, strings_attr};
use crate::settle::read_back;
use crate::tags;
use async_trait::async_trait;
use aws_sdk_ec2::types::{ResourceType, State, VpcEndpointType};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::json;
use std::sync::Arc;

pub(crate) struct VpcEndpoint(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("vpc_id"),
    Field::replace("service_name"),
    Field::replace("vpc_endpoint_type"),
    Field::in_place("route_table_ids").unordered(),
    Field::in_place("tags"),
    Field::computed("id"),
];

/// Deleted or being deleted. AWS documents capitalised states but answers in lower case; accept
/// both.
fn gone(state: Option<&State>) -> bool {
    state.is_some_and(|s| {
        let s = s.as_str();
        s.eq_ignore_ascii_case("deleted") || s.eq_ignore_ascii_case("deleting")
    })
}

fn to_live(e: &aws_sdk_ec2::types::VpcEndpoint) -> Live {
    let mut tables: Vec<&str> = e.route_table_ids().iter().map(String::as_str).collect();
    tables.sort();
    live(
        e.vpc_endpoint_id().unwrap_or_default(),
        [
            ("vpc_id", json!(e.vpc_id().unwrap_or_default())),
            ("service_name", json!(e.service_name().unwrap_or_default())),
            (
                "vpc_endpoint_type",
                json!(e.vpc_endpoint_type().map(|t| t.as_str()).unwrap_or("Gateway")),
            ),
            ("route_table_ids", json!(tables)),
            ("tags", tags::ec2_to_json(e.tags())),
        ],
    )
}

impl VpcEndpoint {
    async fn describe(&self, filter: aws_sdk_ec2::types::Filter) -> Result<Vec<Live>, KindError> {
        let ec2 = &self.0.ec2;
        let eps: Vec<_> = ec2
            .describe_vpc_endpoints()
            .filters(filter)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(|e| api_error("ec2:DescribeVpcEndpoints", e))?;
        Ok(eps.iter().filter(|e| !gone(e.state())).map(to_live).collect())
    }

    /// One endpoint by id (`None` when it does not exist).
    async fn by_id(&self, id: &str) -> Result<Option<Live>, KindError> {
        let ec2 = &self.0.ec2;
        match ec2.describe_vpc_endpoints().vpc_endpoint_ids(id).send().await {
            Ok(out) => Ok(out.vpc_endpoints().iter().find(|e| !gone(e.state())).map(to_live)),
            Err(e) if has_code(&e, "InvalidVpcEndpointId.NotFound") => Ok(None),
            Err(e) => Err(api_error("ec2:DescribeVpcEndpoints", e)),
        }
    }

    async fn read_one(&self, id: &str) -> Result<Live, KindError> {
        read_back(&format!("VPC endpoint {id}"), || self.by_id(id)).await
    }
}

#[async_trait]
impl Kind for VpcEndpoint {
    fn name(&self) -> &'static str {
        "aws_vpc_endpoint"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        // DescribeVpcEndpoints has no id filter everywhere: recorded ids not tagged as ours are
        // looked up one by one (rare: someone removed the tags).
        let mut found = self.describe(owned_filter(ctx)).await?;
        for id in missing_ids(requests, &found) {
            found.extend(self.by_id(&id).await?);
        }
        Ok(match_requests(requests, &found))
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.ec2;
        let out = ec2
            .create_vpc_endpoint()
            .vpc_id(str_attr(desired, "vpc_id")?)
            .service_name(str_attr(desired, "service_name")?)
            .vpc_endpoint_type(VpcEndpointType::from(str_attr(desired, "vpc_endpoint_type")?))
            .set_route_table_ids(Some(strings_attr(desired, "route_table_ids")))
            .tag_specifications(tags::ec2_spec(ResourceType::VpcEndpoint, desired))
            .send()
            .await
            .map_err(|e| api_error("ec2:CreateVpcEndpoint", e))?;
        let id = out
            .vpc_endpoint()
            .and_then(|e| e.vpc_endpoint_id())
            .ok_or_else(|| KindError::new("CreateVpcEndpoint returned no id"))?
            .to_string();
        self.read_one(&id).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.ec2;
        let have = strings_attr(&current.attributes, "route_table_ids");
        let want = strings_attr(desired, "route_table_ids");
        let add: Vec<String> = want.iter().filter(|t| !have.contains(t)).cloned().collect();
        let remove: Vec<String> = have.iter().filter(|t| !want.contains(t)).cloned().collect();
        if !add.is_empty() || !remove.is_empty() {
            ec2.modify_vpc_endpoint()
                .vpc_endpoint_id(&current.id)
                .set_add_route_table_ids((!add.is_empty()).then_some(add))
                .set_remove_route_table_ids((!remove.is_empty()).then_some(remove))
                .send()
                .await
                .map_err(|e| api_error("ec2:ModifyVpcEndpoint", e))?;
        }
        tags::ec2_update(ec2, &current.id, &current.attributes, desired).await?;
        self.read_one(&current.id).await
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let ec2 = &self.0.ec2;
        match ec2.delete_vpc_endpoints().vpc_endpoint_ids(&current.id).send().await {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "InvalidVpcEndpointId.NotFound") => Ok(()),
            Err(e) => Err(api_error("ec2:DeleteVpcEndpoints", e)),
        }
    }
}
