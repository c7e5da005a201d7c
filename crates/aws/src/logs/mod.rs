//! CloudWatch Logs kinds: log groups.

mod log_group;

use crate::AwsClients;
use engine::Kind;
use std::sync::Arc;

pub(crate) fn kinds(shared: &Arc<AwsClients>) -> Vec<Arc<dyn Kind>> {
    vec![Arc::new(log_group::LogGroup(shared.clone()))]
}
