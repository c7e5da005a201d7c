//! SQS kinds: queues and their policies.

mod queue;
mod queue_policy;

use crate::AwsClients;
use engine::Kind;
use std::sync::Arc;

pub(crate) fn kinds(shared: &Arc<AwsClients>) -> Vec<Arc<dyn Kind>> {
    vec![
        Arc::new(queue::SqsQueue(shared.clone())),
        Arc::new(queue_policy::SqsQueuePolicy(shared.clone())),
    ]
}
