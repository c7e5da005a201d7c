//! Route53 kinds: private hosted zones and their records.

mod record;
mod zone;

use crate::AwsClients;
use engine::Kind;
use std::sync::Arc;

pub(crate) fn kinds(shared: &Arc<AwsClients>) -> Vec<Arc<dyn Kind>> {
    vec![
        Arc::new(zone::Route53Zone(shared.clone())),
        Arc::new(record::Route53Record(shared.clone())),
    ]
}
