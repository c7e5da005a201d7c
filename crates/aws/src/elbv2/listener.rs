//! `aws_lb_listener`: the load balancer's TCP listener forwarding to the target group. Found
//! through its load balancer: by recorded ARN, else by this resource's address tag.

use super::{ElbResource, elb_tags, retag, with_tags};
use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{desired_str, int_attr, live, match_request, still_there, str_attr};
use crate::settle::read_back;
use async_trait::async_trait;
use aws_sdk_elasticloadbalancingv2::types::{Action, ActionTypeEnum, Listener, ProtocolEnum};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct LbListener(pub Arc<AwsClients>);

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

impl ElbResource for Listener {
    fn arn(&self) -> Option<&str> {
        self.listener_arn()
    }

    fn name(&self) -> Option<&str> {
        None
    }

    fn to_live(&self, tags: Json) -> Live {
        let arn = self.listener_arn().unwrap_or_default();
        live(
            arn,
            [
                ("load_balancer_arn", json!(self.load_balancer_arn())),
                ("port", json!(self.port())),
                ("protocol", json!(self.protocol().map(|p| p.as_str()))),
                (
                    "target_group_arn",
                    json!(self.default_actions().first().and_then(|a| a.target_group_arn())),
                ),
                ("tags", tags),
                ("arn", json!(arn)),
            ],
        )
    }
}

impl LbListener {
    fn elb(&self) -> Result<&aws_sdk_elasticloadbalancingv2::Client, KindError> {
        Ok(&self.0.elbv2)
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
        with_tags(elb, &listeners.iter().collect::<Vec<_>>()).await
    }

    async fn by_arn(&self, arn: &str) -> Result<Option<Live>, KindError> {
        Ok(self.describe(None, vec![arn.to_string()]).await?.into_iter().next())
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
            let found = match (desired_str(r, "load_balancer_arn"), &r.id) {
                (Some(lb), _) => self.describe(Some(&lb), vec![]).await?,
                (None, Some(id)) => self.describe(None, vec![id.clone()]).await?,
                (None, None) => vec![],
            };
            out.push(match_request(r, &found));
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
            .port(int_attr(desired, "port")?)
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
                .port(int_attr(desired, "port")?)
                .protocol(ProtocolEnum::from(str_attr(desired, "protocol")?))
                .default_actions(forward(desired)?)
                .send()
                .await
                .map_err(|e| api_error("elasticloadbalancing:ModifyListener", e))?;
        }
        retag(elb, arn, &current.attributes, desired).await?;
        still_there(&format!("listener {arn}"), self.by_arn(arn).await?)
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let result = self.elb()?.delete_listener().listener_arn(&current.id).send().await;
        crate::error::deleted("elasticloadbalancing:DeleteListener", result, &["ListenerNotFound"])
    }
}
