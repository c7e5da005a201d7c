//! End-to-end tests against real local peers (see testenv/). One test binary, one module per area.

// OpenBao servers for tests, shared with crates/openbao's own integration tests.
#[allow(dead_code)]
#[path = "../../crates/openbao/tests/openbao/server.rs"]
mod bao_server;
mod bootstrap;
mod cli;
mod crash;
mod eks;
mod lane;
mod lock;
mod network;
mod openbao_aws;
mod security;
mod spec_errors;
mod support;
mod whole_lane;
