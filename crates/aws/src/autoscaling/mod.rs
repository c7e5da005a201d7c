//! Auto Scaling kinds: autoscaling groups.

mod group;

use crate::AwsClients;
use engine::Kind;
use std::sync::Arc;

pub(crate) fn kinds(shared: &Arc<AwsClients>) -> Vec<Arc<dyn Kind>> {
    vec![Arc::new(group::AutoscalingGroup(shared.clone()))]
}
