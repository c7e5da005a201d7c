//! The platform's cluster bootstrap: the `[bootstrap]` section, validated and expanded into kube
//! resources, with what differs per cloud given as a [`ClusterProfile`].

mod expand;
mod profile;
pub mod spec;

pub use expand::{ClusterOutputs, FLUX_NAMESPACE, Inputs, merge, resources};
pub use profile::ClusterProfile;
pub use spec::BootstrapSpec;

use engine::spec::{FieldPath, SpecError, SpecErrors, SpecSource};
use std::path::{Path, PathBuf};

/// The section, validated: every check is done before any API call, with errors naming the
/// field.
pub fn load(spec: &SpecSource) -> Result<Option<BootstrapSpec>, SpecErrors> {
    let Some(b) = spec.section::<BootstrapSpec>("bootstrap")? else {
        return Ok(None);
    };
    let globals = spec.globals()?;
    let root = FieldPath::root("bootstrap");
    let mut errors: Vec<SpecError> = Vec::new();
    let charts = [
        ("cilium", b.cilium.as_ref().map(|r| &r.chart)),
        ("flux_operator", b.flux_operator.as_ref().map(|r| &r.chart)),
        ("flux_instance", b.flux_instance.as_ref().map(|r| &r.chart)),
    ];
    for (key, chart) in charts {
        let Some(chart) = chart else { continue };
        if !chart.starts_with("oci://") {
            errors.push(spec.error(
                &root.key(key).key("chart"),
                format!("`{chart}` is not an OCI chart reference (oci://host/repository/chart)"),
            ));
        }
        if chart.rsplit('/').next().is_some_and(|last| last.contains(':')) {
            errors.push(spec.error(
                &root.key(key).key("chart"),
                "give the chart without a tag: the version comes from [globals.versions]",
            ));
        }
        if !globals.versions.contains_key(key) {
            errors.push(spec.error(
                &FieldPath::root("globals").key("versions"),
                format!("`{key}` version is missing (needed by [bootstrap.{key}])"),
            ));
        }
    }
    if b.cilium.as_ref().is_some_and(|c| c.hand_over_to_flux.is_some()) {
        errors.push(spec.error(
            &root.key("cilium").key("hand_over_to_flux"),
            "only the Flux Operator's release is handed over to Flux",
        ));
    }
    if let Some(gw) = &b.gateway_api {
        if !matches!(gw.channel.as_str(), "experimental" | "standard") {
            errors.push(spec.error(
                &root.key("gateway_api").key("channel"),
                format!("`{}`: expected `experimental` or `standard`", gw.channel),
            ));
        }
        if !globals.versions.contains_key("gateway_api") {
            errors.push(spec.error(
                &FieldPath::root("globals").key("versions"),
                "`gateway_api` version is missing (needed by [bootstrap.gateway_api])",
            ));
        }
    }
    if b.flux_instance.is_some() && globals.flux.is_none() {
        errors.push(spec.error(
            &FieldPath::root("globals"),
            "[bootstrap.flux_instance] syncs [globals.flux] repository, which is missing",
        ));
    }
    if let Some(path) = &b.kubeconfig
        && !kubeconfig_path(spec, path).is_file()
    {
        errors.push(spec.error(&root.key("kubeconfig"), format!("no kubeconfig file at `{path}`")));
    }
    if b.context.is_some() && b.kubeconfig.is_none() {
        errors.push(spec.error(&root.key("context"), "`context` needs `kubeconfig`"));
    }
    spec.errors(errors).into_result()?;
    Ok(Some(b))
}

/// A kubeconfig path of the spec: `~/` expanded, relative paths from the spec's directory.
pub fn kubeconfig_path(spec: &SpecSource, path: &str) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return Path::new(&home).join(rest);
    }
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new(spec.file()).parent().unwrap_or(Path::new(".")).join(p)
    }
}

/// The host of the API server a kubeconfig (context) points at.
pub fn kubeconfig_host(path: &Path, context: Option<&str>) -> Result<String, String> {
    let file = kube::config::Kubeconfig::read_from(path).map_err(|e| e.to_string())?;
    let context_name = context
        .map(str::to_string)
        .or(file.current_context.clone())
        .ok_or("the kubeconfig has no current context")?;
    let ctx = file
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .ok_or_else(|| format!("no context `{context_name}` in the kubeconfig"))?;
    let server = file
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.server.clone())
        .ok_or_else(|| format!("context `{context_name}` names no cluster with a server"))?;
    let uri: http::Uri = server.parse().map_err(|e| format!("server `{server}`: {e}"))?;
    uri.host().map(str::to_string).ok_or_else(|| format!("server `{server}` has no host"))
}
