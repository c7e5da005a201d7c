//! How the kinds reach OpenBao: a [`BaoConnector`] answers the address, CA bundle and token at
//! the moment a kind needs them (at apply time, so a token `openbao_init` has just stored is
//! found). Which connector a run uses is decided before its provider is built: a harness's own,
//! or [`crate::spec_connector`] (the spec's address and CA, the root token from the secret store).

use crate::client::{BaoConnection, BaoError};
use crate::stores::{SecretRef, SecretSource};
use std::sync::Arc;

/// Supplies the connection to OpenBao when a kind needs it.
#[async_trait::async_trait]
pub trait BaoConnector: Send + Sync {
    async fn connect(&self) -> Result<BaoConnection, BaoError>;
}

/// A connector that always answers the same connection.
pub struct StaticConnector(pub BaoConnection);

#[async_trait::async_trait]
impl BaoConnector for StaticConnector {
    async fn connect(&self) -> Result<BaoConnection, BaoError> {
        Ok(self.0.clone())
    }
}

/// A connector whose token is read from a secret store at each connection, where
/// `openbao_init` stores it (`[openbao.init] root_token_secret`, default
/// `<secret_prefix>/root-token`): before init there is none, right after init (or a restore)
/// the lineage's token is found.
pub struct StoredTokenConnector {
    pub address: String,
    pub ca_bundle: Option<String>,
    pub source: Arc<dyn SecretSource>,
    /// The secret, e.g. `openbao/aws-0/root-token` or `openbao/cloud-native-ref/tokens/root#token`.
    pub token_secret: SecretRef,
    /// How the address is reached when it is private, said when it cannot be reached.
    pub route: Option<String>,
}

#[async_trait::async_trait]
impl BaoConnector for StoredTokenConnector {
    async fn connect(&self) -> Result<BaoConnection, BaoError> {
        let token = self
            .token_secret
            .read(self.source.as_ref())
            .await
            .map_err(|e| BaoError::Hook(format!("reading `{}`: {e}", self.token_secret)))?;
        Ok(BaoConnection {
            route: self.route.clone(),
            address: self.address.clone(),
            ca_bundle: self.ca_bundle.clone(),
            token,
        })
    }
}

/// No OpenBao to reach: the spec configures none and no harness gives one.
pub struct NoConnector;

#[async_trait::async_trait]
impl BaoConnector for NoConnector {
    async fn connect(&self) -> Result<BaoConnection, BaoError> {
        Err(BaoError::Hook("no OpenBao is configured by the spec".into()))
    }
}
