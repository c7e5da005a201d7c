//! Cloud DNS kinds: the private managed zone (labelled, so ownership works as on AWS) and the
//! DNS server policy and record sets (no labels: found by name).

pub(crate) mod managed_zone;
pub(crate) mod policy;
pub(crate) mod record_set;
