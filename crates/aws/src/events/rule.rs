//! `aws_event_rule`: an EventBridge rule on the default event bus with its one target (the
//! Karpenter interruption queue). Named by the spec, so one whose create was not recorded is
//! found again by name and adopted with its address tag; a same-named rule without that tag is
//! never taken over (`PutRule` would silently overwrite it, so the create checks first).
//! Description, pattern and state change in place with `PutRule`, the target with
//! `PutTargets`/`RemoveTargets`. The name is fixed; the pattern is compared by meaning.

use super::{EventTags, event_tags};
use crate::AwsClients;
use crate::error::{SdkResult, required};
use crate::lookup::{read_named, still_there};
use crate::tagging::{from_pairs, retag};
use aws_sdk_eventbridge::types::{RuleState, Tag, Target};
use engine::prelude::*;
use engine::retry::{read_back, settle};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::sync::Arc;

/// What EventBridge answers when the rule does not exist.
const GONE: &[&str] = &["ResourceNotFoundException"];

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct EventRule {
    #[attr(replace)]
    pub name: String,
    #[attr(in_place)]
    pub description: Option<String>,
    /// The pattern document (as EventBridge returns it: parsed when it is JSON).
    #[attr(in_place, normalize = engine::normalize::json_document)]
    #[serde(default)]
    pub event_pattern: Json,
    #[attr(in_place)]
    pub state: String,
    #[attr(in_place)]
    pub target_id: Option<Targets>,
    #[attr(in_place)]
    pub target_arn: Option<Targets>,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

/// The ids (or ARNs) of a rule's targets: the one the engine gives it, or several when someone
/// added more (a change; the update removes the others).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub(crate) enum Targets {
    One(String),
    Several(Vec<String>),
}

impl Targets {
    /// `values` as targets; none when there are none.
    fn of<'a>(values: impl Iterator<Item = &'a str>) -> Option<Targets> {
        let mut all: Vec<String> = values.map(str::to_string).collect();
        match all.len() {
            0 | 1 => all.pop().map(Targets::One),
            _ => Some(Targets::Several(all)),
        }
    }
}

impl EventRule {
    /// The ids of the rule's targets.
    fn target_ids(&self) -> Vec<String> {
        match &self.target_id {
            Some(Targets::One(id)) => vec![id.clone()],
            Some(Targets::Several(ids)) => ids.clone(),
            None => vec![],
        }
    }

    /// The one target the spec gives the rule.
    fn target(&self) -> KindResult<Target> {
        let (Some(Targets::One(id)), Some(Targets::One(arn))) = (&self.target_id, &self.target_arn)
        else {
            return Err(KindError::new("aws_event_rule: target_id and target_arn name one target"));
        };
        Target::builder().id(id).arn(arn).build().map_err(|e| KindError::new(e.to_string()))
    }
}

/// The pattern as the JSON text `PutRule` takes.
fn pattern_text(pattern: &Json) -> KindResult<String> {
    let text = pattern.is_object().then(|| pattern.to_string());
    text.ok_or_else(|| KindError::new("attribute `event_pattern` is missing or not a document"))
}

pub(crate) struct EventRuleKind(pub Arc<AwsClients>);

impl EventRuleKind {
    async fn read_one(&self, name: &str) -> KindResult<Option<Live<EventRule>>> {
        let events = &self.0.events;
        let call = events.describe_rule().name(name);
        let Some(rule) = call.send().await.or_absent("events:DescribeRule", GONE)? else {
            return Ok(None);
        };
        let arn = required(rule.arn(), "events:DescribeRule: Arn")?;
        let targets = events.list_targets_by_rule().rule(name).send().await;
        let targets = targets.or_absent("events:ListTargetsByRule", GONE)?;
        let tags = events.list_tags_for_resource().resource_arn(arn).send().await;
        let tags = tags.or_absent("events:ListTagsForResource", GONE)?;
        let (Some(targets), Some(tags)) = (targets, tags) else {
            return Ok(None);
        };
        let pattern =
            rule.event_pattern().map(|p| serde_json::from_str(p).unwrap_or_else(|_| Json::from(p)));
        let targets = targets.targets();
        let found = EventRule {
            name: name.to_string(),
            description: rule.description().map(str::to_string),
            event_pattern: pattern.unwrap_or_default(),
            state: rule.state().map(|s| s.as_str().to_string()).unwrap_or_default(),
            target_id: Targets::of(targets.iter().map(|t| t.id())),
            target_arn: Targets::of(targets.iter().map(|t| t.arn())),
            tags: from_pairs(tags.tags().iter().map(|t| (t.key(), t.value()))),
            arn: Some(arn.to_string()),
        };
        Ok(Some(Live::new(name, found)))
    }

    /// `PutRule` with the desired description, pattern and state (tags only when creating).
    async fn put_rule(&self, desired: &EventRule, tags: Option<Vec<Tag>>) -> KindResult<()> {
        let call = self.0.events.put_rule().name(&desired.name);
        let call = call.set_description(desired.description.clone());
        let call = call.event_pattern(pattern_text(&desired.event_pattern)?);
        let call = call.state(RuleState::from(desired.state.as_str())).set_tags(tags);
        call.send().await.api("events:PutRule").map(|_| ())
    }

    async fn put_target(&self, desired: &EventRule) -> KindResult<()> {
        let call = self.0.events.put_targets().rule(&desired.name).targets(desired.target()?);
        let out = call.send().await.api("events:PutTargets")?;
        match out.failed_entries().first() {
            None => Ok(()),
            Some(f) => Err(KindError::new(format!(
                "events:PutTargets: {}: {}",
                f.error_code().unwrap_or("failed"),
                f.error_message().unwrap_or_default()
            ))),
        }
    }

    async fn remove_targets(&self, name: &str, ids: Vec<String>) -> KindResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let call = self.0.events.remove_targets().rule(name).set_ids(Some(ids));
        call.send().await.or_gone("events:RemoveTargets", GONE)
    }
}

impl TypedKind for EventRuleKind {
    type Attrs = EventRule;
    const NAME: &'static str = "aws_event_rule";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_named(requests, |d| d.name.clone(), |n| async move { self.read_one(&n).await }).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let name = &desired.name;
        if self.read_one(name).await?.is_some() {
            return Err(KindError::new(format!(
                "events:PutRule: rule {name} already exists and is not this spec's"
            )));
        }
        self.put_rule(desired, Some(event_tags(&desired.tags)?)).await?;
        // The rule exists: its target is retried here, never the create.
        settle(|| self.put_target(desired)).await?;
        read_back(&format!("rule {name}"), || self.read_one(name)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let name = &current.id;
        if changes.description || changes.event_pattern || changes.state {
            self.put_rule(desired, None).await?;
        }
        if changes.target_id || changes.target_arn {
            let keep = desired.target_ids();
            let stale = current.attributes.target_ids().into_iter().filter(|t| !keep.contains(t));
            self.remove_targets(name, stale.collect()).await?;
            self.put_target(desired).await?;
        }
        if changes.tags {
            let arn = required(current.attributes.arn.as_deref(), "events:DescribeRule: Arn")?;
            let api = EventTags(&self.0.events);
            retag(&api, arn, &current.attributes.tags, &desired.tags).await?;
        }
        still_there(&format!("rule {name}"), self.read_one(name).await?)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let name = &current.id;
        // A rule with targets cannot be deleted.
        self.remove_targets(name, current.attributes.target_ids()).await?;
        let call = self.0.events.delete_rule().name(name);
        call.send().await.or_gone("events:DeleteRule", GONE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::testing::changed_fields;
    use serde_json::json;

    fn rule() -> EventRule {
        EventRule {
            name: "aws-0-karpenter-rebalance".into(),
            description: Some("d".into()),
            event_pattern: json!({"source": ["aws.ec2"], "detail-type": ["x"]}),
            state: "ENABLED".into(),
            target_id: Some(Targets::One("q".into())),
            target_arn: Some(Targets::One("arn:aws:sqs:eu-west-3:123456789012:aws-0".into())),
            tags: from_pairs([("a", "1")]),
            arn: None,
        }
    }

    #[test]
    fn pattern_target_and_tags_change_in_place_the_name_does_not() {
        let live = rule();
        // Key order and formatting of a pattern do not matter.
        let mut same = live.clone();
        same.event_pattern = json!(r#"{"detail-type": ["x"], "source": ["aws.ec2"]}"#);
        assert!(changed_fields(&live, &same).is_empty());
        let mut changed = live.clone();
        changed.event_pattern = json!({"source": ["aws.health"]});
        changed.target_arn = Some(Targets::One("arn:aws:sqs:eu-west-3:123456789012:other".into()));
        changed.state = "DISABLED".into();
        assert_eq!(
            changed_fields(&live, &changed),
            [("event_pattern", false), ("state", false), ("target_arn", false)]
        );
        let mut renamed = live.clone();
        renamed.name = "other".into();
        assert_eq!(changed_fields(&live, &renamed), [("name", true)]);
    }

    #[test]
    fn targets_of_one_many_or_none() {
        let mut r = rule();
        assert_eq!(r.target_ids(), ["q"]);
        assert_eq!(serde_json::to_value(&r.target_id).unwrap(), json!("q"));
        r.target_id = Targets::of(["q", "x"].into_iter());
        assert_eq!(r.target_ids(), ["q", "x"]);
        assert_eq!(serde_json::to_value(&r.target_id).unwrap(), json!(["q", "x"]));
        assert!(r.target().is_err(), "the spec gives one target");
        r.target_id = Targets::of(std::iter::empty());
        assert!(r.target_ids().is_empty());
        assert_eq!(serde_json::to_value(&r.target_id).unwrap(), json!(null));
    }

    #[test]
    fn patterns_are_sent_as_json_text() {
        let pattern = json!({"source": ["aws.ec2"]});
        assert_eq!(pattern_text(&pattern).unwrap(), r#"{"source":["aws.ec2"]}"#);
        assert!(pattern_text(&json!("x")).is_err());
    }
}
