//! The providers of a run, and the bridges between them: the bootstrap reads Secret values from
//! AWS Secrets Manager through the AWS provider's clients. (The crates do not depend on each
//! other; the binary joins them.)

use engine::Provider;
use engine_aws::AwsProvider;
use engine_bootstrap::kube::Kube;
use engine_bootstrap::openbao::{HookError, SecretSource};
use engine_bootstrap::{BootstrapProvider, Secret};
use std::sync::Arc;

/// Every provider the `engine` binary knows, for the AWS lane.
pub async fn all() -> Vec<Arc<dyn Provider>> {
    let aws = Arc::new(AwsProvider::from_env().await);
    let secrets = Arc::new(SecretsManager(aws.clone()));
    let bootstrap = BootstrapProvider::builder("aws")
        .kube(move |connector| {
            Kube::builder(connector)
                .secret_source(secrets)
                .pull_options(engine_helm::PullOptions {
                    cache_dir: chart_cache(),
                    ..Default::default()
                })
                .build()
        })
        .build();
    vec![aws, Arc::new(bootstrap)]
}

/// Where pulled charts are cached (`~/.cache/engine/charts`).
fn chart_cache() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache/engine/charts"))
}

/// AWS Secrets Manager as the bootstrap's secret source.
struct SecretsManager(Arc<AwsProvider>);

#[async_trait::async_trait]
impl SecretSource for SecretsManager {
    async fn get(&self, name: &str) -> Result<Option<Secret>, HookError> {
        let clients = self
            .0
            .clients()
            .ok_or_else(|| HookError("AWS clients are not ready".into()))?;
        engine_aws::secrets_manager::get_secret_string(clients, name)
            .await
            .map(|v| v.map(|v| Secret::new(v.expose())))
            .map_err(|e| HookError(e.message))
    }
}
