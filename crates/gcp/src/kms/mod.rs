//! Cloud KMS: the key ring and crypto key that seal OpenBao on GCP. Cloud KMS never deletes
//! either: a key ring stays forever and a crypto key only loses its key material (its versions
//! are scheduled for destruction). Both are therefore found by name, whoever made them (the
//! reference made them by hand), and are lineage: protected from destroy.

pub(crate) mod crypto_key;
pub(crate) mod key_ring;
