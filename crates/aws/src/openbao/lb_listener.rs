//! `aws_lb_listener`: the load balancer's TCP listener forwarding to the target group. Found
//! through its load balancer: by recorded ARN, else by this resource's address tag.

use super::elb::{elb_tags, int, retag, tags};
use crate::error::{api_error, has_code};
use crate::network::lookup::{address_tag, live, str_attr};
use crate::provider::Shared;
use crate::settle::read_back;
use async_trait::async_trait;
use aws_sdk_elasticloadbalancingv2::types::{Action, ActionTypeEnum, Listener, ProtocolEnum};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct LbListener(pub Arc<Shared>);

const FIELDS: &[Field] = &[
    Field::replace("load_balancer_arn"),
    Field::in_place("port"),
    Field::in_place("protocol"),
    Field::in_place("target_group_arn"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

fn forward(desired: &Attrs) -> Result<Action, KindError> {
    Ok(Action::builder()
        .r#type(ActionTypeEnum::Forward)
        .target_group_arn(str_attr(desired, "target_group_arn")?)
        .build())
}

impl LbListener {
    fn elb(&self) -> Result<&aws_sdk_elasticloadbalancingv2::Client, KindError> {
        Ok(&self.0.clients()?.elbv2)
    }

    /// Listeners of a load balancer, or the listeners with these ARNs.
    async fn describe(
        &self,
        load_balancer: Option<&str>,
        arns: Vec<String>,
    ) -> Result<Vec<Live>, KindError> {
        let elb = self.elb()?;
        let listeners: Vec<Listener> = match elb
            .describe_listeners()
            .set_load_balancer_arn(load_balancer.map(str::to_string))
            .set_listener_arns((!arns.is_empty()).then_some(arns))
            .send()
            .await
        {
            Ok(out) => out.listeners().to_vec(),
            Err(e) if has_code(&e, "ListenerNotFound") || has_code(&e, "LoadBalancerNotFound") => {
                vec![]
            }
            Err(e) => return Err(api_error("elasticloadbalancing:DescribeListeners", e)),
        };
        let listener_arns: Vec<String> = listeners
            .iter()
            .filter_map(|l| l.listener_arn().map(str::to_string))
            .collect();
        let tags = tags(elb, &listener_arns).await?;
        Ok(listeners
            .iter()
            .map(|l| {
                let arn = l.listener_arn().unwrap_or_default();
                live(
                    arn,
                    [
                        ("load_balancer_arn", json!(l.load_balancer_arn())),
                        ("port", json!(l.port())),
                        ("protocol", json!(l.protocol().map(|p| p.as_str()))),
                        (
                            "target_group_arn",
                            json!(
                                l.default_actions()
                                    .first()
                                    .and_then(|a| a.target_group_arn())
                            ),
                        ),
                        ("tags", tags.get(arn).cloned().unwrap_or(json!({}))),
                        ("arn", json!(arn)),
                    ],
                )
            })
            .collect())
    }

    async fn by_arn(&self, arn: &str) -> Result<Option<Live>, KindError> {
        Ok(self
            .describe(None, vec![arn.to_string()])
            .await?
            .into_iter()
            .next())
    }
}

#[async_trait]
impl Kind for LbListener {
    fn name(&self) -> &'static str {
        "aws_lb_listener"
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
            let lb = r
                .desired
                .as_ref()
                .and_then(|d| d.get("load_balancer_arn"))
                .and_then(Json::as_str);
            let found = match (lb, &r.id) {
                (Some(lb), _) => self.describe(Some(lb), vec![]).await?,
                (None, Some(id)) => self.describe(None, vec![id.clone()]).await?,
                (None, None) => vec![],
            };
            let by_id =
                r.id.as_ref()
                    .and_then(|id| found.iter().find(|l| &l.id == id));
            let by_tag = || {
                found
                    .iter()
                    .find(|l| address_tag(l) == Some(r.address.as_str()))
            };
            out.push(by_id.or_else(by_tag).cloned());
        }
        Ok(out)
    }

    async fn create(
        &self,
        _ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let out = self
            .elb()?
            .create_listener()
            .load_balancer_arn(str_attr(desired, "load_balancer_arn")?)
            .port(int(desired, "port")?)
            .protocol(ProtocolEnum::from(str_attr(desired, "protocol")?))
            .default_actions(forward(desired)?)
            .set_tags(Some(elb_tags(desired)))
            .send()
            .await
            .map_err(|e| api_error("elasticloadbalancing:CreateListener", e))?;
        let arn = out
            .listeners()
            .first()
            .and_then(|l| l.listener_arn())
            .ok_or_else(|| KindError::new("CreateListener returned no ARN"))?
            .to_string();
        tracing::info!(%address, %arn, "created listener");
        read_back(&format!("listener {arn}"), || self.by_arn(&arn)).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let elb = self.elb()?;
        let arn = &current.id;
        let differs = |f: &str| current.attributes.get(f) != desired.get(f);
        if differs("port") || differs("protocol") || differs("target_group_arn") {
            elb.modify_listener()
                .listener_arn(arn)
                .port(int(desired, "port")?)
                .protocol(ProtocolEnum::from(str_attr(desired, "protocol")?))
                .default_actions(forward(desired)?)
                .send()
                .await
                .map_err(|e| api_error("elasticloadbalancing:ModifyListener", e))?;
        }
        retag(elb, arn, &current.attributes, desired).await?;
        self.by_arn(arn)
            .await?
            .ok_or_else(|| KindError::new(format!("listener {arn} vanished")))
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let result = self
            .elb()?
            .delete_listener()
            .listener_arn(&current.id)
            .send()
            .await;
        crate::error::deleted(
            "elasticloadbalancing:DeleteListener",
            result,
            &["ListenerNotFound"],
        )
    }
}
