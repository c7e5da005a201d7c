//! `aws_lb_listener`: the load balancer's TCP listener forwarding to the target group. Found
//! through its load balancer: by recorded ARN, else by this resource's address tag.

use super::{Described, ElbTags, elb_tags, with_tags};
use crate::AwsClients;
use crate::error::{SdkResult, required};
use crate::lookup::{match_requests, still_there};
use crate::tagging::retag;
use aws_sdk_elasticloadbalancingv2::types::{self as elb, Action, ActionTypeEnum, ProtocolEnum};
use engine::prelude::*;
use engine::retry::read_back;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Listener {
    #[attr(replace)]
    pub load_balancer_arn: String,
    #[attr(in_place)]
    pub port: i32,
    #[attr(in_place)]
    pub protocol: String,
    #[attr(in_place)]
    pub target_group_arn: String,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

impl Listener {
    fn forward(&self) -> Action {
        let action = Action::builder().r#type(ActionTypeEnum::Forward);
        action.target_group_arn(&self.target_group_arn).build()
    }
}

impl Described for elb::Listener {
    type Attrs = Listener;
    const ARN: &'static str = "elasticloadbalancing:DescribeListeners: ListenerArn";

    fn arn(&self) -> Option<&str> {
        self.listener_arn()
    }

    fn attributes(&self, tags: Tags) -> Listener {
        let target_group = self.default_actions().first().and_then(|a| a.target_group_arn());
        Listener {
            load_balancer_arn: self.load_balancer_arn().unwrap_or_default().to_string(),
            port: self.port().unwrap_or_default(),
            protocol: self.protocol().map(|p| p.as_str().to_string()).unwrap_or_default(),
            target_group_arn: target_group.unwrap_or_default().to_string(),
            tags,
            arn: self.listener_arn().map(str::to_string),
        }
    }
}

pub(crate) struct ListenerKind(pub Arc<AwsClients>);

impl ListenerKind {
    /// The listeners of a load balancer, or the listeners with these ARNs.
    async fn describe(
        &self,
        load_balancer: Option<&str>,
        arns: Vec<String>,
    ) -> KindResult<Vec<Live<Listener>>> {
        let call = self.0.elbv2.describe_listeners();
        let call = call.set_load_balancer_arn(load_balancer.map(str::to_string));
        let call = call.set_listener_arns((!arns.is_empty()).then_some(arns));
        let gone = ["ListenerNotFound", "LoadBalancerNotFound"];
        let out = call.send().await.or_absent("elasticloadbalancing:DescribeListeners", &gone)?;
        let listeners = out.as_ref().map(|o| o.listeners()).unwrap_or_default();
        with_tags(&self.0.elbv2, &listeners.iter().collect::<Vec<_>>()).await
    }

    async fn by_arn(&self, arn: &str) -> KindResult<Option<Live<Listener>>> {
        Ok(self.describe(None, vec![arn.to_string()]).await?.pop())
    }
}

impl TypedKind for ListenerKind {
    type Attrs = Listener;
    const NAME: &'static str = "aws_lb_listener";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let mut out = Vec::new();
        for r in requests {
            let found = match (&r.desired, &r.id) {
                (Some(d), _) => self.describe(Some(&d.load_balancer_arn), vec![]).await?,
                (None, Some(id)) => self.describe(None, vec![id.clone()]).await?,
                (None, None) => vec![],
            };
            out.extend(match_requests(std::slice::from_ref(r), &found));
        }
        Ok(out)
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let out = self
            .0
            .elbv2
            .create_listener()
            .load_balancer_arn(&desired.load_balancer_arn)
            .port(desired.port)
            .protocol(ProtocolEnum::from(desired.protocol.as_str()))
            .default_actions(desired.forward())
            .set_tags(Some(elb_tags(&desired.tags)))
            .send()
            .await
            .api("elasticloadbalancing:CreateListener")?;
        let arn = out.listeners().first().and_then(|l| l.listener_arn());
        let arn = required(arn, "elasticloadbalancing:CreateListener: ListenerArn")?;
        read_back(&format!("listener {arn}"), || self.by_arn(arn)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let (elb, arn) = (&self.0.elbv2, &current.id);
        if changes.port || changes.protocol || changes.target_group_arn {
            let protocol = ProtocolEnum::from(desired.protocol.as_str());
            let call =
                elb.modify_listener().listener_arn(arn).port(desired.port).protocol(protocol);
            let call = call.default_actions(desired.forward());
            call.send().await.api("elasticloadbalancing:ModifyListener")?;
        }
        if changes.tags {
            retag(&ElbTags(elb), arn, &current.attributes.tags, &desired.tags).await?;
        }
        still_there(&format!("listener {arn}"), self.by_arn(arn).await?)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.elbv2.delete_listener().listener_arn(&current.id);
        call.send().await.or_gone("elasticloadbalancing:DeleteListener", &["ListenerNotFound"])
    }
}
