//! The AWS spec sections and their expansion into resources: `[network]`, `[access]`,
//! `[openbao.server]`, `[eks]`, `[federation]`, `[llm_platform]`. Expansion is pure: it reads the spec and makes `ResourceSpec`s, and calls no API.

pub mod access;
pub mod eks;
pub mod federation;
pub mod llm_platform;
pub mod network;
pub mod openbao;

use engine::spec::SpecSource;
use engine::{Address, Value};

/// A role's trust policy letting AWS `service` take it with `actions`.
pub(crate) fn service_trust(service: &str, actions: &[&str]) -> Value {
    Value::Json(serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Service": service},
            "Action": actions,
        }]
    }))
}

/// The keys of the cluster's vars ConfigMap (`eks-<cluster>-vars`) that come from the AWS
/// stages, under the names the reference's Kustomizations substitute: values of the spec, and
/// references to the outputs of the network, OpenBao and the cluster in the same graph.
/// Sections that do not read give no keys (the expansion reports their errors). The keys that
/// are plain values of the platform (`public_domain_name`, ...) are the spec's
/// `[bootstrap.vars]`.
pub fn flux_vars(spec: &SpecSource) -> Vec<(String, Value)> {
    let Ok(globals) = spec.globals() else { return vec![] };
    let mut vars: Vec<(String, Value)> = Vec::new();
    let str_var = |k: &str, v: &str| (k.to_string(), Value::from(v));
    if let Ok(Some(net)) = spec.section::<network::spec::NetworkSpec>("network") {
        let vpc = Address::new(format!("{}.vpc.main", network::STAGE));
        vars.push(("vpc_id".into(), Value::reference(&vpc, "id")));
        vars.push(str_var("vpc_cidr_block", &net.vpc_cidr));
        // OpenBao's servers answer in the VPC: its range is where they are.
        vars.push(str_var("openbao_cidr", &net.vpc_cidr));
        if let Some(zone) = openbao::spec::zone_name(&globals, &net) {
            vars.push(str_var("private_domain_name", &zone));
        }
    }
    if let Ok(Some(section)) = spec.section::<openbao::spec::OpenBaoSection>("openbao")
        && let Some(server) = section.server
    {
        vars.push(str_var(
            "openbao_snapshot_bucket",
            &openbao::spec::bucket_name(&globals, &server),
        ));
    }
    if let Ok(Some(eks)) = spec.section::<eks::spec::EksSpec>("eks") {
        let cluster = eks::cluster_address();
        let out = |k: &str, attribute: &str| (k.to_string(), Value::reference(&cluster, attribute));
        vars.push(out("cluster_endpoint", "endpoint_host"));
        vars.push(out("cluster_endpoint_full", "endpoint"));
        vars.push(out("oidc_issuer_url", "oidc_issuer"));
        vars.push(out("oidc_issuer_host", "oidc_issuer_host"));
        vars.push(out("aws_account_id", "account_id"));
        let provider = Address::new(format!("{}.iam_openid_connect_provider.main", eks::STAGE));
        vars.push(("oidc_provider_arn".into(), Value::reference(&provider, "arn")));
        if let Some(k) = eks.karpenter.filter(|k| k.enabled) {
            let queue = k.queue_name.unwrap_or_else(|| globals.cluster_name.clone());
            vars.push(str_var("karpenter_queue_name", &queue));
        }
    }
    vars
}

/// What the stages' tests share: expanding a spec text, and its errors as `file:line field:
/// message` lines.
#[cfg(test)]
pub(crate) mod testing {
    use engine::ResourceSpec;
    use engine::spec::{Globals, SpecErrors, SpecSource};

    /// A stage's expansion function.
    pub type Expand = fn(&SpecSource, &Globals) -> Result<Vec<ResourceSpec>, SpecErrors>;

    /// The spec `text`, as `specs/test.toml`.
    pub fn source(text: &str) -> SpecSource {
        SpecSource::from_text("specs/test.toml", "test", text)
    }

    /// `text` expanded by `expand`.
    pub fn expand_with(expand: Expand, text: &str) -> Result<Vec<ResourceSpec>, SpecErrors> {
        let s = source(text);
        let globals = s.globals()?;
        expand(&s, &globals)
    }

    /// The errors of expanding `text`, one line each; panics when it expands.
    pub fn errors_of(expand: Expand, text: &str) -> String {
        let e = expand_with(expand, text).expect_err("invalid");
        let lines: Vec<String> = e
            .errors
            .iter()
            .map(|e| format!("{}:{} {}: {}", e.file, e.line, e.field, e.message))
            .collect();
        lines.join("\n")
    }
}
