//! IAM: service accounts, and members of roles on the resources OpenBao's servers use (the seal
//! key, the TLS secret). A role member is one binding's member, added to and removed from the
//! resource's IAM policy with its etag, so members others grant are kept.

pub(crate) mod member;
pub(crate) mod service_account;
