//! OpenBao kinds against real OpenBao servers (installed by `testenv/install-openbao.sh`),
//! through the engine and the crate's own provider.
//!
//! Each test starts its own servers on free loopback ports and stops them when it ends.

mod configure;
mod contents;
mod escrow;
mod init;
mod support;
