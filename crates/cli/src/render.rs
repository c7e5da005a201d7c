//! `engine render`: renders a Helm chart natively, like `helm template`.

use std::path::PathBuf;

use engine_helm::oci::{self, PullOptions};
use engine_helm::{Capabilities, Chart, Credentials, NoLookup, RenderOptions, render, values};
use miette::{IntoDiagnostic, WrapErr, miette};

/// Render a Helm chart (directory, .tgz or oci:// reference) to manifests.
#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// Chart: a directory, a .tgz archive, or oci://HOST/REPO/NAME:VERSION.
    pub chart: String,
    /// Values file (repeatable; later files win).
    #[arg(short = 'f', long = "values", value_name = "FILE")]
    pub values: Vec<PathBuf>,
    /// Set a value, e.g. `a.b[0].c=x` (repeatable; applied after files).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Kubernetes version offered to templates (.Capabilities.KubeVersion).
    #[arg(long = "kube-version", value_name = "VERSION")]
    pub kube_version: Option<String>,
    /// Extra API versions offered to templates (repeatable).
    #[arg(short = 'a', long = "api-versions", value_name = "GROUP/VERSION")]
    pub api_versions: Vec<String>,
    /// Release name.
    #[arg(long = "release-name", default_value = "release-name")]
    pub release_name: String,
    /// Release namespace.
    #[arg(short = 'n', long = "namespace", default_value = "default")]
    pub namespace: String,
    /// Registry user name (OCI charts).
    #[arg(long, env = "ENGINE_REGISTRY_USERNAME")]
    pub username: Option<String>,
    /// Registry password (OCI charts).
    #[arg(long, env = "ENGINE_REGISTRY_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// Allow plain HTTP to a non-loopback registry.
    #[arg(long)]
    pub plain_http: bool,
    /// Generate certificates (genCA, genSignedCert, ...) with ECDSA P-256 keys instead of Sprig's
    /// RSA 2048: several times faster for charts such as Cilium; keys then differ in type from
    /// what helm would generate.
    #[arg(long)]
    pub ecdsa_keys: bool,
}

fn cache_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|d| d.join("engine").join("charts"))
}

async fn load_chart(args: &RenderArgs) -> miette::Result<Chart> {
    if args.chart.starts_with("oci://") {
        let credentials = match (&args.username, &args.password) {
            (Some(u), Some(p)) => Credentials::Basic { username: u.clone(), password: p.clone() },
            (None, None) => Credentials::Anonymous,
            _ => return Err(miette!("--username and --password must be given together")),
        };
        let opts = PullOptions { credentials, plain_http: args.plain_http, cache_dir: cache_dir() };
        return oci::pull(&args.chart, &opts)
            .await
            .into_diagnostic()
            .wrap_err_with(|| format!("pulling {}", args.chart));
    }
    Chart::load(&args.chart)
        .into_diagnostic()
        .wrap_err_with(|| format!("loading chart {}", args.chart))
}

/// Runs `engine render`: prints the manifest stream on stdout.
pub async fn run(args: RenderArgs) -> miette::Result<()> {
    let chart = load_chart(&args).await?;
    let mut files: Vec<serde_json::Value> = Vec::new();
    for f in &args.values {
        let text = std::fs::read_to_string(f)
            .into_diagnostic()
            .wrap_err_with(|| format!("reading values file {}", f.display()))?;
        files.push(
            values::parse_values_yaml(&text)
                .into_diagnostic()
                .wrap_err_with(|| format!("parsing values file {}", f.display()))?,
        );
    }
    let user = values::user_values(&files, &args.set).into_diagnostic()?;
    let mut opts = RenderOptions::new(&args.release_name, &args.namespace, user, &NoLookup);
    opts.capabilities = Capabilities::with(args.kube_version.as_deref(), &args.api_versions);
    if args.ecdsa_keys {
        opts.key_algorithm = engine_helm::funcs::KeyAlgorithm::EcdsaP256;
    }
    let rendered = render(&chart, &opts).into_diagnostic()?;
    print!("{}", rendered.manifest_text());
    Ok(())
}
