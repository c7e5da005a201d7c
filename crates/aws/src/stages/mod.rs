//! The AWS spec sections and their expansion into resources: `[network]`, `[openbao.server]`,
//! `[eks]`. Expansion is pure: it reads the spec and makes `ResourceSpec`s, and calls no API.

pub mod eks;
pub mod network;
pub mod openbao;
