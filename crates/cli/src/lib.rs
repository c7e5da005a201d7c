//! The `engine` command's pieces that test harnesses use too: the intermediate CA's issuance
//! ([`pki`]). The lane's providers are wired in `engine-lanes`.

pub mod pki;
