//! End-to-end tests against real local peers (see testenv/). One test binary, one module per area.

mod access;
mod bootstrap;
mod cli;
mod crash;
mod eks;
mod faults;
mod gcp_lane;
mod gcs_state;
mod llm_platform;
mod lock;
mod network;
mod openbao_aws;
mod openbao_gcp;
mod outages;
mod ownership;
mod remote_state;
mod security;
mod spec_errors;
mod support;
mod tailnet;
mod takeover;
mod whole_lane;
mod workspace;
