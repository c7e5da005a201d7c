//! The AWS provider: spec sections, expansion, kinds, and the clients they share.

use crate::clients::AwsClients;
use crate::stages;
use aws_config::SdkConfig;
use aws_config::retry::RetryConfig;
use engine::spec::{SpecErrors, SpecSource};
use engine::{Address, ApiCallCounter, ApiCalls, Kind, Provider, ResourceSpec, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// The `aws` lane: its clients are made for the spec's regions when the provider is built, so
/// expanding the spec is pure and every kind shares one set of clients.
pub struct AwsProvider {
    counter: ApiCallCounter,
    clients: Arc<AwsClients>,
}

impl AwsProvider {
    /// A provider using `base` for credentials, endpoint (`AWS_ENDPOINT_URL`) and retries, in
    /// `region` (and KMS in `secondary_region`, for replicas).
    pub fn new(base: &SdkConfig, region: &str, secondary_region: Option<&str>) -> Self {
        let counter = ApiCallCounter::default();
        let clients = Arc::new(AwsClients::new(base, region, secondary_region, &counter));
        AwsProvider { counter, clients }
    }

    /// A provider in the regions of the spec's `[globals]` (none when they do not read: the
    /// engine then reports the spec's errors before any call).
    pub fn for_spec(base: &SdkConfig, spec: &SpecSource) -> Self {
        let globals = spec.globals().ok();
        let region = globals.as_ref().map(|g| g.region.as_str()).unwrap_or_default();
        let secondary = globals.as_ref().and_then(|g| g.secondary_region.as_deref());
        AwsProvider::new(base, region, secondary)
    }

    /// The clients (for tests and tools that inspect the cloud).
    pub fn clients(&self) -> &Arc<AwsClients> {
        &self.clients
    }
}

impl Provider for AwsProvider {
    fn lane(&self) -> &'static str {
        "aws"
    }

    fn sections(&self) -> &'static [&'static str] {
        &["network", "access", "openbao", "eks", "federation", "llm_platform"]
    }

    fn expand(&self, spec: &SpecSource) -> Result<Vec<ResourceSpec>, SpecErrors> {
        let globals = spec.globals()?;
        // Every stage's errors at once.
        let mut resources = Vec::new();
        let mut errors: Option<SpecErrors> = None;
        for stage in [
            stages::network::expand(spec, &globals),
            stages::access::expand(spec, &globals),
            stages::openbao::expand(spec, &globals),
            stages::eks::expand(spec, &globals),
            stages::federation::expand(spec, &globals),
            stages::llm_platform::expand(spec, &globals),
        ] {
            match (stage, &mut errors) {
                (Ok(r), _) => resources.extend(r),
                (Err(e), Some(all)) => all.extend(e),
                (Err(e), None) => errors = Some(e),
            }
        }
        if let Some(errors) = errors {
            return Err(errors);
        }
        watch_roles(&mut resources);
        Ok(resources)
    }

    fn kinds(&self) -> Vec<Arc<dyn Kind>> {
        crate::kinds::all(&self.clients)
    }

    fn api_calls(&self) -> ApiCalls {
        self.counter.snapshot()
    }

    fn tofu_resources(
        &self,
        resource_type: &str,
        id: &str,
        attributes: &serde_json::Value,
    ) -> Option<Vec<engine::tofu_import::TofuResource>> {
        crate::tofu::tofu_resources(resource_type, id, attributes)
    }
}

/// Every role gets the policies the spec puts on it (`declared_policies`: its attachments'
/// ARNs, its inline policies as `inline:<name>`) and wants nothing else (`foreign_policies`).
fn watch_roles(resources: &mut [ResourceSpec]) {
    let mut declared: HashMap<Address, Vec<Value>> = HashMap::new();
    for r in resources.iter() {
        let Some(Value::Ref(role)) = r.attributes.get("role_name") else { continue };
        let entry = match r.kind.as_str() {
            "aws_iam_role_policy_attachment" => r.attributes.get("policy_arn").cloned(),
            "aws_iam_role_policy" => match r.attributes.get("name") {
                Some(Value::Str(name)) => Some(Value::Str(format!("inline:{name}"))),
                _ => None,
            },
            _ => None,
        };
        if let Some(entry) = entry {
            declared.entry(role.address.clone()).or_default().push(entry);
        }
    }
    for r in resources.iter_mut().filter(|r| r.kind == "aws_iam_role") {
        let policies = declared.remove(&r.address).unwrap_or_default();
        r.attributes.insert("declared_policies".into(), Value::List(policies));
        r.attributes.insert("foreign_policies".into(), Value::List(vec![]));
    }
}

/// The SDK configuration from the environment's credential chain, with the engine's retry
/// settings, in `region` when given. The SDK retries throttling and transient failures of each
/// call (adaptive mode); see `engine::retry` for the layers above it.
pub async fn sdk_config_from_env(region: Option<&str>) -> aws_config::SdkConfig {
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .retry_config(RetryConfig::adaptive().with_max_attempts(8));
    if let Some(region) = region.filter(|r| !r.is_empty()) {
        loader = loader.region(aws_config::Region::new(region.to_string()));
    }
    loader.load().await
}
