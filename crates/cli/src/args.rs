//! Command-line arguments.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Native infrastructure engine: plan, apply, drift-check and destroy a platform spec.
#[derive(Debug, Parser)]
#[command(name = "engine", version, about)]
pub struct Cli {
    /// More logs (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show what apply would do.
    Plan(PlanArgs),
    /// Plan, confirm, and make the changes.
    Apply(ApplyArgs),
    /// Compare live resources with what was last applied, or with the spec (--against spec|both);
    /// exit 0 clean, 2 drift, 1 error.
    Drift(DriftArgs),
    /// Delete every resource of the spec, dependents first.
    Destroy(DestroyArgs),
    /// Inspect the state.
    #[command(subcommand)]
    State(StateCommand),
    /// Print the attributes recorded for resources (all, or those under ADDRESS).
    Output(OutputArgs),
    /// Print the resource graph.
    Graph(GraphArgs),
    /// Remove a lock left by a run that is gone.
    ForceUnlock(ForceUnlockArgs),
    /// Take over what OpenTofu or Terraform built: record its resources in the engine's state
    /// by their cloud ids, then show the plan.
    Import(ImportArgs),
    /// Render a Helm chart natively, like `helm template`.
    Render(crate::render::RenderArgs),
    /// The platform's offline PKI.
    #[command(subcommand)]
    Pki(PkiCommand),
}

#[derive(Debug, Subcommand)]
pub enum PkiCommand {
    /// Create the offline root CA (EC P-384, 10 years). Its key stays in DIR (mode 0600) and never
    /// enters a cloud or the state. An existing root in DIR is kept, never replaced.
    InitRoot {
        /// Where the root's certificate and key go (default: ~/.config/engine/pki).
        dir: Option<PathBuf>,
    },
    /// Issue the spec's cloud intermediate CA (EC P-384, 5 years, path length 0) from the
    /// offline root and store it as a bundle in the secret store, under `[openbao.pki]
    /// bundle_secret` (and its certificate in `certificate_file`, if set). A stored intermediate
    /// that chains to this root is kept.
    Intermediate {
        /// The spec file, e.g. specs/aws.toml.
        spec: PathBuf,
        /// A spec file merged over the spec: its tables merge key by key, its other values replace
        /// the spec's (e.g. the sandbox's local peers). Default: $ENGINE_OVERLAY.
        #[arg(long, env = "ENGINE_OVERLAY")]
        overlay: Option<PathBuf>,
        /// The offline root's directory (default: ~/.config/engine/pki).
        #[arg(long)]
        root: Option<PathBuf>,
    },
}

/// What every spec-driven command takes.
#[derive(Debug, Args)]
pub struct Common {
    /// The spec files, e.g. specs/aws.toml, or specs/shared.toml specs/aws.toml specs/gcp.toml
    /// to run several lanes at once (each spec keeps its own state).
    #[arg(required = true, num_args = 1..)]
    pub specs: Vec<PathBuf>,
    /// A spec file merged over the spec: its tables merge key by key, its other values replace
    /// the spec's (e.g. the sandbox's local peers). With several specs, NAME=FILE for the spec
    /// named NAME (repeatable, or comma-separated in $ENGINE_OVERLAY).
    #[arg(long, env = "ENGINE_OVERLAY", value_delimiter = ',')]
    pub overlay: Vec<String>,
    /// Where the state is: a file, s3://BUCKET/KEY or gs://BUCKET/KEY (default: $ENGINE_STATE,
    /// else the spec's [state], else .engine/<spec-name>.state.json beside the spec). With
    /// several specs, NAME=LOCATION for the spec named NAME (repeatable, or comma-separated).
    #[arg(long, env = "ENGINE_STATE", value_delimiter = ',')]
    pub state: Vec<String>,
    /// Cloud lanes to run: aws, gcp, aws,gcp or all (default: $ENGINE_CLOUD, else $TM_CLOUD, else
    /// aws). Specs of the `shared` lane always run.
    #[arg(long)]
    pub cloud: Option<String>,
    /// Turn on a feature gate (e.g. llm-platform); also $ENGINE_LLM_PLATFORM_ENABLED=true.
    #[arg(long = "feature")]
    pub features: Vec<String>,
    /// Only resources under this address prefix, plus what they depend on (repeatable).
    #[arg(long)]
    pub target: Vec<String>,
    /// Leave out resources under this address prefix and their dependents (repeatable).
    #[arg(long)]
    pub exclude: Vec<String>,
    /// Only the stages whose spec sections changed since a git revision (default: HEAD^ on
    /// main, else origin/main), as Terramate's `--changed`; a spec-wide change ([globals],
    /// [state]) runs the whole spec, an unchanged spec is one `[skip]` line.
    #[arg(long, value_name = "REV", num_args = 0..=1, require_equals = true, default_missing_value = "", conflicts_with = "target")]
    pub changed: Option<String>,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub common: Common,
    /// Print the plan as JSON (documented in docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// Exit 0 with no changes, 2 with changes, 1 on error.
    #[arg(long)]
    pub detailed_exitcode: bool,
    /// Plan a destroy instead.
    #[arg(long)]
    pub destroy: bool,
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub common: Common,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub auto_approve: bool,
    /// How many resource operations run at once.
    #[arg(long, default_value_t = engine_defaults::PARALLELISM)]
    pub parallelism: usize,
    /// Print the apply report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DriftArgs {
    #[command(flatten)]
    pub common: Common,
    /// What the live resources are compared with: `applied` (the state: changes made outside
    /// the engine), `spec` (what an apply would change, as `plan --detailed-exitcode`: also
    /// spec edits not applied yet), or `both`.
    #[arg(long, value_enum, default_value_t = Against::Applied)]
    pub against: Against,
    /// Print the drift report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `engine drift --against`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Against {
    Applied,
    Spec,
    Both,
}

impl From<Against> for engine::DriftAgainst {
    fn from(a: Against) -> Self {
        match a {
            Against::Applied => engine::DriftAgainst::Applied,
            Against::Spec => engine::DriftAgainst::Spec,
            Against::Both => engine::DriftAgainst::Both,
        }
    }
}

#[derive(Debug, Args)]
pub struct DestroyArgs {
    #[command(flatten)]
    pub common: Common,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub auto_approve: bool,
    /// Also destroy protected resources (the OpenBao lineage: seal key, snapshot bucket).
    #[arg(long)]
    pub confirm_protected: bool,
    /// Also delete retained resources, which destroy otherwise only removes from the state
    /// (OpenBao's kv mounts: deleting them deletes their data).
    #[arg(long)]
    pub delete_retained: bool,
    /// Destroy without first keeping a snapshot of OpenBao in the lineage's bucket.
    #[arg(long)]
    pub skip_snapshot: bool,
    #[arg(long, default_value_t = engine_defaults::PARALLELISM)]
    pub parallelism: usize,
}

#[derive(Debug, Subcommand)]
pub enum StateCommand {
    /// List the addresses in the state.
    List(StateArgs),
    /// Show one resource of the state.
    Show {
        /// The address, e.g. aws.network.vpc.main
        address: String,
        #[command(flatten)]
        args: StateArgs,
    },
    /// Move the state to another place, or seal it another way, in one step with its lock held.
    Migrate(MigrateArgs),
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub from: StateArgs,
    /// Where to: a file, s3://BUCKET/KEY or gs://BUCKET/KEY (default: where it is, to change only its sealing).
    #[arg(long)]
    pub to: Option<String>,
    /// How the moved state is sealed: none, passphrase or aws_kms (default: as the spec's
    /// [state.encryption] says).
    #[arg(long, value_parser = ["none", "passphrase", "aws_kms", "gcp_kms"])]
    pub to_encryption: Option<String>,
    /// The variable holding the passphrase of --to-encryption passphrase.
    #[arg(long)]
    pub to_passphrase_env: Option<String>,
    /// The KMS key of --to-encryption aws_kms (id, ARN or alias/...) or gcp_kms
    /// (projects/P/locations/L/keyRings/R/cryptoKeys/K).
    #[arg(long)]
    pub to_kms_key_id: Option<String>,
}

#[derive(Debug, Args)]
pub struct StateArgs {
    /// The spec whose state to read, where its [state] says (or give --state).
    #[arg(long)]
    pub spec: Option<PathBuf>,
    /// Where the state is: a file, s3://BUCKET/KEY or gs://BUCKET/KEY (default: $ENGINE_STATE).
    #[arg(long, env = "ENGINE_STATE")]
    pub state: Option<String>,
}

#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Only resources under this address prefix.
    pub address: Option<String>,
    #[command(flatten)]
    pub args: StateArgs,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GraphFormatArg {
    Dot,
    Mermaid,
}

#[derive(Debug, Args)]
pub struct GraphArgs {
    /// The spec file.
    pub spec: PathBuf,
    /// A spec file merged over the spec: its tables merge key by key, its other values replace
    /// the spec's (e.g. the sandbox's local peers). Default: $ENGINE_OVERLAY.
    #[arg(long, env = "ENGINE_OVERLAY")]
    pub overlay: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "dot")]
    pub format: GraphFormatArg,
    /// Only resources under this address prefix, plus what they depend on (repeatable).
    #[arg(long)]
    pub target: Vec<String>,
    /// Turn on a feature gate (e.g. llm-platform); also $ENGINE_LLM_PLATFORM_ENABLED=true.
    #[arg(long = "feature")]
    pub features: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// An OpenTofu/Terraform state (format 4): a file, s3://BUCKET/KEY or gs://BUCKET/KEY (repeatable).
    #[arg(long = "from-tofu", required = true)]
    pub from_tofu: Vec<String>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Args)]
pub struct ForceUnlockArgs {
    /// The lock id reported by the refused run.
    pub lock_id: String,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub args: StateArgs,
}

/// Defaults shared with the engine library.
pub mod engine_defaults {
    pub const PARALLELISM: usize = 10;
}
