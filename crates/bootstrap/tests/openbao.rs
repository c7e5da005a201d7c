//! OpenBao kinds against real OpenBao servers (installed by `testenv/install-openbao.sh`).
//!
//! Each test starts its own servers on free loopback ports and stops them when it ends.

mod openbao {
    pub mod configure;
    pub mod init;
    pub mod server;
    pub mod support;
}
