//! `helm template`-like front end used by the benchmark:
//! `render CHART [-f FILE]... [--set K=V]... [--kube-version V]
//!  [--api-versions G/V]... [--release-name N] [--namespace NS] [--repeat N]
//!  [--ecdsa-keys]`

// The engine binary's allocator (crates/cli/src/main.rs), so that the benchmark measures what
// `engine render` does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use engine_helm::{Capabilities, Chart, NoLookup, RenderOptions, render, values};

fn main() {
    if let Err(e) = run() {
        eprintln!("Error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut chart = None;
    let mut files = Vec::new();
    let mut sets = Vec::new();
    let mut kube = None;
    let mut apis = Vec::new();
    let mut release = "release-name".to_string();
    let mut ns = "default".to_string();
    let mut repeat = 1usize;
    let mut ecdsa = false;
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "-f" | "--values" => files.push(val()?),
            "--set" => sets.push(val()?),
            "--kube-version" => kube = Some(val()?),
            "--api-versions" | "-a" => apis.push(val()?),
            "--release-name" => release = val()?,
            "-n" | "--namespace" => ns = val()?,
            "--repeat" => repeat = val()?.parse()?,
            "--ecdsa-keys" => ecdsa = true,
            _ => chart = Some(a),
        }
    }
    let chart_path = chart.ok_or("missing CHART")?;
    let mut parsed = Vec::new();
    for f in &files {
        parsed.push(values::parse_values_yaml(&std::fs::read_to_string(f)?)?);
    }
    let user = values::user_values(&parsed, &sets)?;
    let mut out = String::new();
    for _ in 0..repeat {
        let chart = Chart::load(&chart_path)?;
        let mut opts = RenderOptions::new(&release, &ns, user.clone(), &NoLookup);
        opts.capabilities = Capabilities::with(kube.as_deref(), &apis);
        if ecdsa {
            opts.key_algorithm = engine_helm::funcs::KeyAlgorithm::EcdsaP256;
        }
        out = render(&chart, &opts)?.manifest_text();
    }
    print!("{out}");
    Ok(())
}
