//! EventBridge kinds: rules with their target.

mod rule;

use crate::AwsClients;
use engine::Kind;
use std::sync::Arc;

pub(crate) fn kinds(shared: &Arc<AwsClients>) -> Vec<Arc<dyn Kind>> {
    vec![Arc::new(rule::EventRule(shared.clone()))]
}
