//! The production wiring of the `engine` binary, usable by test harnesses: the providers of a
//! lane and the bridges between them ([`providers`]), and the intermediate CA's issuance ([`pki`]).

pub mod pki;
pub mod providers;
