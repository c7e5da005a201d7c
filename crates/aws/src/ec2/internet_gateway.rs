//! `aws_internet_gateway` and `aws_internet_gateway_attachment`.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{filter, live, owned, read_owned_then_ids, str_attr};
use crate::settle::read_back;
use crate::tags;
use async_trait::async_trait;
use aws_sdk_ec2::types::ResourceType;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::json;
use std::sync::Arc;

pub(crate) struct InternetGateway(pub Arc<AwsClients>);
pub(crate) struct InternetGatewayAttachment(pub Arc<AwsClients>);

const IGW_FIELDS: &[Field] =
    &[Field::in_place("tags"), Field::computed("id"), Field::computed("attached_vpc_ids")];
const ATTACHMENT_FIELDS: &[Field] =
    &[Field::replace("internet_gateway_id"), Field::replace("vpc_id"), Field::computed("id")];

/// Internet gateways matching `filter`, with the VPCs each is attached to.
async fn describe(
    shared: &AwsClients,
    filter: aws_sdk_ec2::types::Filter,
) -> Result<Vec<Live>, KindError> {
    let ec2 = &shared.ec2;
    let igws: Vec<_> = ec2
        .describe_internet_gateways()
        .filters(filter)
        .into_paginator()
        .items()
        .send()
        .collect::<Result<_, _>>()
        .await
        .map_err(|e| api_error("ec2:DescribeInternetGateways", e))?;
    Ok(igws
        .into_iter()
        .map(|g| {
            let vpcs: Vec<&str> = g.attachments().iter().filter_map(|a| a.vpc_id()).collect();
            live(
                g.internet_gateway_id().unwrap_or_default(),
                [("tags", tags::ec2_to_json(g.tags())), ("attached_vpc_ids", json!(vpcs))],
            )
        })
        .collect())
}

#[async_trait]
impl Kind for InternetGateway {
    fn name(&self) -> &'static str {
        "aws_internet_gateway"
    }

    fn fields(&self) -> &'static [Field] {
        IGW_FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_owned_then_ids(ctx, requests, "internet-gateway-id", |f| describe(&self.0, f)).await
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.ec2;
        let out = ec2
            .create_internet_gateway()
            .tag_specifications(tags::ec2_spec(ResourceType::InternetGateway, desired))
            .send()
            .await
            .map_err(|e| api_error("ec2:CreateInternetGateway", e))?;
        let id = out
            .internet_gateway()
            .and_then(|g| g.internet_gateway_id())
            .ok_or_else(|| KindError::new("CreateInternetGateway returned no id"))?
            .to_string();
        read_back(&format!("internet gateway {id}"), || async {
            Ok(describe(&self.0, filter("internet-gateway-id", vec![id.clone()]))
                .await?
                .into_iter()
                .next())
        })
        .await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        tags::ec2_retag(&self.0.ec2, current, desired).await
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let ec2 = &self.0.ec2;
        match ec2.delete_internet_gateway().internet_gateway_id(&current.id).send().await {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "InvalidInternetGatewayID.NotFound") => Ok(()),
            Err(e) => Err(api_error("ec2:DeleteInternetGateway", e)),
        }
    }
}

/// Attachment ids are `igw-id/vpc-id`.
fn attachment(igw: &str, vpc: &str) -> Live {
    live(format!("{igw}/{vpc}"), [("internet_gateway_id", json!(igw)), ("vpc_id", json!(vpc))])
}

#[async_trait]
impl Kind for InternetGatewayAttachment {
    fn name(&self) -> &'static str {
        "aws_internet_gateway_attachment"
    }

    fn fields(&self) -> &'static [Field] {
        ATTACHMENT_FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        // The gateway named by the spec, or by the recorded id.
        let igw_of = |r: &ReadRequest| -> Option<String> {
            r.desired
                .as_ref()
                .and_then(|d| d.get("internet_gateway_id"))
                .and_then(|v| v.as_str())
                .map(str::to_string)
                .or_else(|| r.id.as_ref().and_then(|id| id.split('/').next().map(str::to_string)))
        };
        let mut found: Vec<Live> =
            owned(ctx, "internet-gateway-id", &|f| describe(&self.0, f)).await?.as_ref().clone();
        let mut others: Vec<String> = requests
            .iter()
            .filter_map(igw_of)
            .filter(|g| !found.iter().any(|l| &l.id == g))
            .collect();
        others.sort();
        others.dedup();
        if !others.is_empty() {
            found.extend(describe(&self.0, filter("internet-gateway-id", others)).await?);
        }
        Ok(requests
            .iter()
            .map(|r| {
                let igw = igw_of(r)?;
                let gateway = found.iter().find(|l| l.id == igw)?;
                let vpcs: Vec<String> = gateway
                    .attributes
                    .get("attached_vpc_ids")
                    .and_then(|v| v.as_array())
                    .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
                    .unwrap_or_default();
                let want_vpc = r
                    .desired
                    .as_ref()
                    .and_then(|d| d.get("vpc_id"))
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
                    .or_else(|| {
                        r.id.as_ref().and_then(|id| id.split('/').nth(1).map(str::to_string))
                    });
                let vpc = match want_vpc {
                    Some(v) if vpcs.contains(&v) => v,
                    _ => vpcs.first()?.clone(),
                };
                Some(attachment(&igw, &vpc))
            })
            .collect())
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.ec2;
        let igw = str_attr(desired, "internet_gateway_id")?;
        let vpc = str_attr(desired, "vpc_id")?;
        ec2.attach_internet_gateway()
            .internet_gateway_id(igw)
            .vpc_id(vpc)
            .send()
            .await
            .map_err(|e| api_error("ec2:AttachInternetGateway", e))?;
        Ok(attachment(igw, vpc))
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        _desired: &Attrs,
    ) -> Result<Live, KindError> {
        Ok(current.clone())
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let ec2 = &self.0.ec2;
        let (igw, vpc) = current
            .id
            .split_once('/')
            .ok_or_else(|| KindError::new(format!("bad attachment id {}", current.id)))?;
        match ec2.detach_internet_gateway().internet_gateway_id(igw).vpc_id(vpc).send().await {
            Ok(_) => Ok(()),
            Err(e)
                if has_code(&e, "Gateway.NotAttached")
                    || has_code(&e, "InvalidInternetGatewayID.NotFound") =>
            {
                Ok(())
            }
            Err(e) => Err(api_error("ec2:DetachInternetGateway", e)),
        }
    }
}
