//! `engine`: plan, apply, drift and destroy a platform spec.
//!
//! This crate is thin: it parses arguments, builds an [`engine::Engine`] with the cloud
//! providers, and prints. It is the only place that knows about colours, prompts, progress bars
//! and the JSON output formats.

mod args;
mod changed;
mod commands;
mod json;
mod migrate;
mod progress;
mod render;
mod render_plan;
mod style;

use clap::Parser;
use std::process::ExitCode;

/// mimalloc rather than the C library's allocator: a chart's render allocates and frees
/// hundreds of thousands of small objects (template trees, values, strings), and glibc's
/// allocator spent about a sixth of Cilium's render (`bench/helm/run.sh`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    quiet_on_closed_stdout();
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    // Long messages (paths, lock ids) stay on one line so they can be copied and searched.
    let _ = miette::set_hook(Box::new(|_| {
        Box::new(
            miette::MietteHandlerOpts::new()
                .wrap_lines(false)
                .color(style::Style::stderr().color)
                .build(),
        )
    }));
    init_tracing(cli.verbose);
    // Cloud SDK messages (GKE's `Cluster` is 21 KB) make deep futures: 8 MiB per worker, not 2.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(8 << 20)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(report) => {
            eprintln!("{report:?}");
            ExitCode::from(1)
        }
    }
}

/// A command line clap rejects exits 1, as in OpenTofu: exit 2 means only "differences found"
/// (`drift`, `plan --detailed-exitcode`). `--help` and `--version` print and exit 0.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let _ = e.print();
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}

/// `RUST_LOG` controls logs (to stderr); `-v` raises the default from `warn` to `info`.
fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}

/// `engine plan ... | head` ends quietly like other Unix tools when the reader closes stdout.
/// SIGPIPE stays ignored (the Rust runtime's choice): with its default action, a peer that
/// resets a connection while the engine writes to it (OpenBao, the cluster's API server) would
/// kill the process mid-step, before the state write and the lock release. Printing to a closed
/// stdout panics instead; this hook turns that panic into a quiet exit 1.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") {
            std::process::exit(1);
        }
        default(info);
    }));
}
