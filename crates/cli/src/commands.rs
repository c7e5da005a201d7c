//! The commands: build the engine, run, print, choose the exit code.

use crate::args::{Cli, Command, Common, GraphFormatArg, PkiCommand, StateArgs, StateCommand};
use crate::progress::Progress;
use crate::style::Style;
use crate::{json, render_plan};
use engine::spec::StateLocation;
use engine::{
    Backend, ChangedScope, Engine, GraphFormat, Interrupt, Plan, Selection, StateDocument,
    Workspace,
};
use engine_lanes::LaneBuilder;
use miette::{IntoDiagnostic, Result, WrapErr, miette};
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Exit codes.
const OK: u8 = 0;
const FAILED: u8 = 1;
const CHANGES: u8 = 2;

pub async fn run(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Plan(a) => {
            let Some(ws) = build(&a.common, 10, Destroying::default(), Interrupt::new()).await?
            else {
                return Ok(OK);
            };
            let plans = if a.destroy { ws.plan_destroy().await } else { ws.plan().await };
            let plans = all_or_first_error(plans)?;
            if a.json {
                let rendered: Vec<_> = plans.iter().map(json::plan).collect();
                let value = match rendered.len() {
                    1 => rendered.into_iter().next().unwrap_or_default(),
                    _ => serde_json::Value::Array(rendered),
                };
                println!("{}", serde_json::to_string_pretty(&value).into_diagnostic()?);
            } else {
                for (engine, plan) in ws.engines().iter().zip(&plans) {
                    print_header(&ws, engine);
                    print!("{}", render_plan::plan_text(plan, &Style::stdout()));
                }
            }
            let changes = plans.iter().any(Plan::has_changes);
            Ok(if a.detailed_exitcode && changes { CHANGES } else { OK })
        }
        Command::Apply(a) => {
            let interrupt = stop_on_signals();
            let Some(ws) =
                build(&a.common, a.parallelism, Destroying::default(), interrupt).await?
            else {
                return Ok(OK);
            };
            let plans = all_or_first_error(ws.plan().await)?;
            execute(&ws, plans, a.auto_approve, a.json).await
        }
        Command::Destroy(a) => {
            let interrupt = stop_on_signals();
            let how = Destroying {
                confirm_protected: a.confirm_protected,
                delete_retained: a.delete_retained,
                skip_snapshot: a.skip_snapshot,
            };
            let built = build(&a.common, a.parallelism, how, interrupt).await?;
            let Some(ws) = built else {
                return Ok(OK);
            };
            let plans = all_or_first_error(ws.plan_destroy().await)?;
            execute(&ws, plans, a.auto_approve, false).await
        }
        Command::Drift(a) => {
            let Some(ws) = build(&a.common, 10, Destroying::default(), Interrupt::new()).await?
            else {
                return Ok(OK);
            };
            let reports = all_or_first_error(ws.drift(a.against.into()).await)?;
            if a.json {
                let rendered: Vec<_> = reports.iter().map(json::drift).collect();
                let value = match rendered.len() {
                    1 => rendered.into_iter().next().unwrap_or_default(),
                    _ => serde_json::Value::Array(rendered),
                };
                println!("{}", serde_json::to_string_pretty(&value).into_diagnostic()?);
            } else {
                for (engine, report) in ws.engines().iter().zip(&reports) {
                    print_header(&ws, engine);
                    print!("{}", render_plan::drift_text(report, &Style::stdout()));
                }
            }
            Ok(if reports.iter().all(engine::DriftReport::is_clean) { OK } else { CHANGES })
        }
        Command::Graph(a) => {
            // Every lane's graph can be shown; only the feature gates select.
            let selection = Selection::decide(Some("all"), &a.features, &|k| std::env::var(k).ok())
                .map_err(|e| miette!("{e}"))?;
            let source = read_spec(&a.spec, a.overlay.as_deref())?;
            let builder = Engine::builder().spec(source.clone()).selection(selection);
            let engine = LaneBuilder::new(&source).build().await.add_to(builder).build()?;
            for note in engine.notes() {
                eprintln!("{note}");
            }
            let format = match a.format {
                GraphFormatArg::Dot => GraphFormat::Dot,
                GraphFormatArg::Mermaid => GraphFormat::Mermaid,
            };
            let graph = engine.graph();
            if a.target.is_empty() {
                print!("{}", graph.render(format));
            } else {
                let keep = graph.select(&a.target, &[]);
                let subset = engine::ResourceGraph::build(
                    graph.resources().filter(|r| keep.contains(&r.address)).cloned().collect(),
                )
                .map_err(|e| {
                    let messages: Vec<&str> = e.iter().map(|(_, m)| m.as_str()).collect();
                    miette!("{}", messages.join("\n"))
                })?;
                print!("{}", subset.render(format));
            }
            Ok(OK)
        }
        Command::State(StateCommand::Migrate(m)) => crate::migrate::run(&m).await,
        Command::State(StateCommand::List(s)) => {
            let doc = load_state(&s).await?;
            for address in doc.resources.keys() {
                println!("{address}");
            }
            Ok(OK)
        }
        Command::State(StateCommand::Show { address, args }) => {
            let doc = load_state(&args).await?;
            let r = doc
                .resources
                .get(&address)
                .ok_or_else(|| miette!("no resource {address} in the state"))?;
            println!("# {address}\nkind = {}\nid   = {}", r.kind, r.id);
            for (k, v) in &r.attributes {
                println!("{k} = {v}");
            }
            if !r.dependencies.is_empty() {
                println!("depends_on = {:?}", r.dependencies);
            }
            Ok(OK)
        }
        Command::Output(o) => {
            let doc = load_state(&o.args).await?;
            let selected: Vec<_> = doc
                .resources
                .iter()
                .filter(|(a, _)| {
                    o.address
                        .as_ref()
                        .is_none_or(|p| engine::Address::new(a.as_str()).matches_prefix(p))
                })
                .collect();
            if o.json {
                let map: serde_json::Map<String, serde_json::Value> = selected
                    .iter()
                    .map(|(a, r)| {
                        let mut attrs = r.attributes.clone();
                        attrs.insert("id".into(), serde_json::Value::String(r.id.clone()));
                        (a.to_string(), serde_json::Value::Object(attrs))
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&map).into_diagnostic()?);
            } else {
                for (a, r) in selected {
                    println!("{a}.id = {:?}", r.id);
                    for (k, v) in &r.attributes {
                        println!("{a}.{k} = {v}");
                    }
                }
            }
            Ok(OK)
        }
        Command::Render(args) => {
            crate::render::run(args).await?;
            Ok(OK)
        }
        Command::Pki(PkiCommand::Intermediate { spec, overlay, root }) => {
            let dir = pki_dir(root)?;
            let source = read_spec(&spec, overlay.as_deref())?;
            let lane = LaneBuilder::new(&source).build().await;
            let globals = source.globals().map_err(engine::EngineError::from)?;
            // Validates the cloud's sections and readies its clients; no API call yet. (Not
            // OpenBao's: its `certificate_file` is what this command writes.)
            let cloud: &dyn engine::Provider = match &lane.gcp {
                Some(gcp) => gcp.as_ref(),
                None => lane.aws.as_ref(),
            };
            cloud.expand(&source).map_err(engine::EngineError::from)?;
            let Some(pki) = source
                .section::<engine_openbao::OpenBaoConfig>("openbao")
                .map_err(engine::EngineError::from)?
                .and_then(|c| c.pki)
            else {
                return Err(miette!("{} has no [openbao.pki] section", spec.display()));
            };
            let root = engine_pki::load_root(&dir).into_diagnostic()?;
            let outcome = engine_cli::pki::ensure_intermediate(
                &root,
                &globals.cloud,
                &pki.bundle_secret,
                lane.secrets.as_ref(),
            )
            .await
            .map_err(|e| miette!("{e}"))?;
            println!("{outcome} `{}`", pki.bundle_secret);
            if let Some(file) = &pki.certificate_file {
                let path = spec.parent().unwrap_or(Path::new(".")).join(file);
                std::fs::write(&path, outcome.certificate()).into_diagnostic()?;
                println!("  certificate: {}", path.display());
            }
            Ok(OK)
        }
        Command::Pki(PkiCommand::InitRoot { dir }) => {
            let dir = pki_dir(dir)?;
            let existed = dir.join("root-ca.key").exists();
            let root = engine_pki::init_root(&dir).into_diagnostic()?;
            let verb = if existed { "Kept the existing" } else { "Created the" };
            println!("{verb} offline root CA:");
            println!("  certificate: {}", root.cert_path.display());
            println!(
                "  key:         {} (keep it offline; never commit it)",
                root.key_path.display()
            );
            Ok(OK)
        }
        Command::ForceUnlock(f) => force_unlock(&f).await,
        Command::Import(i) => {
            if i.common.specs.len() > 1 {
                return Err(miette!("import takes one spec: the state it records into"));
            }
            let Some(ws) = build(&i.common, 10, Destroying::default(), Interrupt::new()).await?
            else {
                return Ok(OK);
            };
            let engine = &ws.engines()[0];
            let mut instances = Vec::new();
            for from in &i.from_tofu {
                let text = read_tofu_state(from, engine).await?;
                instances.extend(
                    engine::tofu_import::read_tofu_state(from, &text)
                        .map_err(|e| miette!("{e}"))?,
                );
            }
            let matching = engine.import_from_tofu(&instances)?;
            print!("{}", render_plan::import_text(&matching, &Style::stdout()));
            let plan = engine.plan().await?;
            print!("{}", render_plan::plan_text(&plan, &Style::stdout()));
            Ok(OK)
        }
    }
}

/// The text of an OpenTofu state: a file, or an object `s3://BUCKET/KEY` (in the spec's
/// region, reached as the engine reaches AWS) or `gs://BUCKET/KEY` (e.g. the GCS backend's
/// `<prefix>/default.tfstate`).
async fn read_tofu_state(from: &str, engine: &Engine) -> Result<String> {
    let region = engine.spec().globals().map(|g| g.region).unwrap_or_default();
    let (store, key): (Box<dyn engine_state::ObjectStore>, String) =
        match StateLocation::from_arg(from, region.clone(), engine::DEFAULT_LEASE) {
            Some(StateLocation::Local { .. }) => {
                return std::fs::read_to_string(from)
                    .into_diagnostic()
                    .wrap_err_with(|| format!("reading OpenTofu state {from}"));
            }
            Some(StateLocation::S3 { bucket, key, region, .. }) => {
                let aws = engine_aws::sdk_config_from_env(Some(&region)).await;
                (Box::new(engine_aws::S3StateStore::new(&aws, &bucket, &region)), key)
            }
            Some(StateLocation::Gcs { bucket, key, .. }) => {
                let endpoint = std::env::var(engine_lanes::GCP_ENDPOINT_ENV).ok();
                let store = engine_gcp::GcsStateStore::new(&bucket, endpoint.as_deref())
                    .map_err(|e| miette!("reading OpenTofu state {from}: {e}"))?;
                (Box::new(store), key)
            }
            None => {
                return Err(miette!("{from}: expected a path, s3://BUCKET/KEY or gs://BUCKET/KEY"));
            }
        };
    let object = tokio::task::spawn_blocking(move || store.get(&key))
        .await
        .into_diagnostic()?
        .map_err(|e| miette!("reading OpenTofu state {from}: {e}"))?
        .ok_or_else(|| miette!("no OpenTofu state at {from}"))?;
    String::from_utf8(object.bytes).map_err(|_| miette!("{from} is not UTF-8 text"))
}

/// The offline root's directory: `dir`, else ~/.config/engine/pki.
fn pki_dir(dir: Option<PathBuf>) -> Result<PathBuf> {
    Ok(match dir {
        Some(d) => d,
        None => PathBuf::from(std::env::var("HOME").into_diagnostic()?).join(".config/engine/pki"),
    })
}

/// Builds one engine per spec (all validation happens here, before any API call) into the
/// run's workspace. A spec whose lane is not selected is left out with one `[skip]` line;
/// `None` when no spec is left.
/// What a destroy may delete besides the rest.
#[derive(Clone, Copy, Default)]
struct Destroying {
    confirm_protected: bool,
    delete_retained: bool,
    skip_snapshot: bool,
}

async fn build(
    common: &Common,
    parallelism: usize,
    destroying: Destroying,
    interrupt: Interrupt,
) -> Result<Option<Workspace>> {
    let selection =
        Selection::decide(common.cloud.as_deref(), &common.features, &|k| std::env::var(k).ok())
            .map_err(|e| miette!("{e}"))?;
    let several = common.specs.len() > 1;
    let mut sources = Vec::new();
    for path in &common.specs {
        let plain = engine::spec::SpecSource::from_file(path)
            .into_diagnostic()
            .wrap_err_with(|| format!("reading {}", path.display()))?;
        // A spec of a lane this run does not select is one line, whatever else it holds.
        let globals = plain.globals().map_err(engine::EngineError::from)?;
        if let Some(line) = selection.skip_line(&globals, plain.file()) {
            println!("{line}");
            continue;
        }
        let name = plain.name();
        let overlay = per_spec("--overlay", &common.overlay, &name, several)?.map(Path::new);
        let state = per_spec("--state", &common.state, &name, several)?;
        sources.push((path, overlay, read_spec(path, overlay)?, state));
    }
    let mut engines = Vec::new();
    for (path, overlay, source, state) in sources {
        let builder = Engine::builder()
            .spec(source.clone())
            .selection(selection.clone())
            .parallelism(parallelism)
            // The tailnet-wide pieces have their own confirmation, as in the reference.
            .confirm_protected(
                destroying.confirm_protected
                    || (source.has_section("tailnet")
                        && engine_tailscale::destroy_confirmed(&|k| std::env::var(k).ok())),
            )
            .delete_retained(destroying.delete_retained)
            .interrupt(interrupt.clone())
            .observer(Arc::new(Progress::new()));
        let location = source.state_location(state).map_err(engine::EngineError::from)?;
        // A new OpenBao's credentials wait beside a local state, or beside the spec.
        let escrow_beside = match &location {
            StateLocation::Local { path } => path.clone(),
            StateLocation::S3 { .. } | StateLocation::Gcs { .. } => engine::state_path_of(&source),
        };
        let encryption = source.state_encryption().map_err(engine::EngineError::from)?;
        let lane = LaneBuilder::new(&source)
            .state_path(&escrow_beside)
            .snapshot_before_destroy(!destroying.skip_snapshot)
            .build()
            .await;
        let backend = lane
            .state_backend(&location, encryption.as_ref())
            .map_err(|e| miette!("opening the state at {location}: {e}"))?;
        let mut builder = lane.add_to(builder).shared_state(backend);
        for t in &common.target {
            builder = builder.target(t);
        }
        for e in &common.exclude {
            builder = builder.exclude(e);
        }
        let mut engine = builder.build()?;
        if let Some(reference) = &common.changed {
            match changed_scope(&engine, reference, path, overlay, &source)? {
                (reference, ChangedScope::Nothing) => {
                    println!("[skip] {}: unchanged since {reference}", source.file());
                    continue;
                }
                (reference, ChangedScope::Stages(stages)) => {
                    eprintln!(
                        "{}: changed since {reference}: {}",
                        source.file(),
                        stages.join(", ")
                    );
                    engine = engine.narrowed_to(&stages);
                }
                (_, ChangedScope::Everything) => {}
            }
        }
        for note in engine.notes() {
            eprintln!("{note}");
        }
        engines.push(engine);
    }
    if engines.is_empty() {
        return Ok(None);
    }
    Ok(Some(Workspace::new(engines)?))
}

/// What `--changed[=REV]` leaves of `engine`'s run, and the revision compared with.
fn changed_scope(
    engine: &Engine,
    reference: &str,
    path: &Path,
    overlay: Option<&Path>,
    now: &engine::spec::SpecSource,
) -> Result<(String, ChangedScope)> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let reference = match reference {
        "" => crate::changed::default_reference(dir)?,
        given => given.to_string(),
    };
    let scope = match crate::changed::spec_at(&reference, path, overlay)? {
        // A new spec, or one that did not parse then: all of it is a change.
        None => ChangedScope::Everything,
        Some(earlier) => match now.sections_changed_since(&earlier) {
            Ok(sections) => engine.changed_scope(&sections),
            Err(_) => ChangedScope::Everything,
        },
    };
    Ok((reference, scope))
}

/// The value of a per-spec option (`--overlay`, `--state`) for the spec named `name`: an entry
/// `NAME=VALUE`, or, with one spec only, a plain value.
fn per_spec<'a>(
    flag: &str,
    values: &'a [String],
    name: &str,
    several: bool,
) -> Result<Option<&'a str>> {
    let mut chosen = None;
    for v in values {
        let named = v.split_once('=').filter(|(n, _)| {
            !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        });
        match named {
            Some((n, value)) if n == name => chosen = Some(value),
            Some(_) => {}
            None if several => {
                return Err(miette!(
                    "{flag} {v}: with several specs, say which spec it is for (NAME=VALUE)"
                ));
            }
            None => chosen = Some(v.as_str()),
        }
    }
    Ok(chosen)
}

/// With several specs, a line naming the spec before its plan or report.
fn print_header(ws: &Workspace, engine: &Engine) {
    if ws.engines().len() > 1 {
        let style = Style::stdout();
        println!(
            "\n{}",
            style.bold(&format!("── {} lane: {} ──", engine.lane_name(), engine.spec().file()))
        );
    }
}

/// Every member's result, or the first error (after saying which spec it came from).
fn all_or_first_error<T>(results: Vec<Result<T, engine::EngineError>>) -> Result<Vec<T>> {
    results.into_iter().collect::<Result<Vec<T>, _>>().map_err(miette::Report::from)
}

/// Shows the plans, asks once (unless approved), applies them all, reports per spec.
async fn execute(
    ws: &Workspace,
    plans: Vec<Plan>,
    auto_approve: bool,
    as_json: bool,
) -> Result<u8> {
    let style = Style::stdout();
    if !as_json {
        for (engine, plan) in ws.engines().iter().zip(&plans) {
            print_header(ws, engine);
            print!("{}", render_plan::plan_text(plan, &style));
        }
    }
    if !plans.iter().any(Plan::has_changes) {
        if as_json {
            let empty = json::apply(&Default::default());
            let value = match plans.len() {
                1 => empty,
                n => serde_json::Value::Array(vec![empty; n]),
            };
            println!("{}", serde_json::to_string_pretty(&value).into_diagnostic()?);
        }
        return Ok(OK);
    }
    if !auto_approve
        && !confirmed(
            "\nDo you want to perform these actions?",
            "refusing to change anything without approval: no terminal to ask on; pass --auto-approve",
        )?
    {
        println!("Cancelled: nothing was changed.");
        return Ok(FAILED);
    }
    let results = ws.apply(&plans).await;
    let mut rendered = Vec::new();
    let mut first_error = None;
    let mut success = true;
    for ((engine, plan), result) in ws.engines().iter().zip(&plans).zip(results) {
        let report = match result {
            Ok(report) => report,
            Err(e) => {
                success = false;
                if ws.engines().len() > 1 {
                    eprintln!("{}: {e}", engine.spec().file());
                }
                first_error.get_or_insert(e);
                continue;
            }
        };
        success &= report.is_success();
        if as_json {
            rendered.push(json::apply(&report));
        } else if plan.has_changes() {
            print_header(ws, engine);
            print_report(plan, &report, &style);
        }
    }
    if as_json {
        let value = match rendered.len() {
            1 => rendered.into_iter().next().unwrap_or_default(),
            _ => serde_json::Value::Array(rendered),
        };
        println!("{}", serde_json::to_string_pretty(&value).into_diagnostic()?);
    }
    if let Some(e) = first_error {
        return Err(e.into());
    }
    Ok(if success { OK } else { FAILED })
}

/// One spec's apply or destroy report.
fn print_report(plan: &Plan, report: &engine::ApplyReport, style: &Style) {
    let done = |a| report.count(a);
    println!(
        "\n{} {} added, {} changed, {} destroyed in {:.1}s ({} API calls, {} mutating).",
        style.bold(match (plan.mode, report.is_success()) {
            (engine::PlanMode::Apply, true) => "Apply complete!",
            (engine::PlanMode::Apply, false) => "Apply failed.",
            (engine::PlanMode::Destroy, true) => "Destroy complete!",
            (engine::PlanMode::Destroy, false) => "Destroy failed.",
        }),
        done(engine::Action::Create),
        done(engine::Action::Update),
        done(engine::Action::Delete),
        report.elapsed.as_secs_f64(),
        report.api_calls.total(),
        report.api_calls.mutating(),
    );
    let forgotten = report.count(engine::Action::Forget);
    if forgotten > 0 {
        println!(
            "  {forgotten} retained resources forgotten: left in place, no longer in the state."
        );
    }
    for f in report.failures() {
        if let engine::StepOutcome::Failed(why) = &f.outcome {
            println!("  {} {}: {why}", style.red("✗"), f.address);
        }
    }
    // Why steps did not start: the run was interrupted, it lost its state lock, another
    // spec it waits for did not finish, or something they need failed.
    let skipped_because = |why: &dyn Fn(&str) -> bool| {
        let matches = |s: &&engine::StepResult| matches!(&s.outcome, engine::StepOutcome::Skipped(w) if why(w));
        report.steps.iter().filter(matches).count()
    };
    let interrupted = |w: &str| w.contains("interrupted");
    let lock_lost = |w: &str| w.contains("no longer this run's");
    let other_spec = |w: &str| w.contains("it waits for spec");
    let failed_need = skipped_because(&|w| !interrupted(w) && !lock_lost(w) && !other_spec(w));
    if failed_need > 0 {
        println!("  {failed_need} steps skipped because something they need failed.");
    }
    let waited = skipped_because(&other_spec);
    if waited > 0 {
        println!(
            "  {waited} steps not started: they wait for another spec of this run, which did \
             not finish."
        );
    }
    let not_started = skipped_because(&lock_lost);
    if not_started > 0 {
        println!(
            "  The state lock was lost: {not_started} steps not started, nothing more written. \
             Run apply again once the other run is done."
        );
    }
    if skipped_because(&interrupted) > 0 {
        println!(
            "  Interrupted: {} steps not started; steps in flight finished and are recorded. \
             Run apply again to finish.",
            skipped_because(&interrupted)
        );
    }
}

/// Asks `question` on the terminal; only `yes` confirms. Without a terminal, fails with
/// `no_terminal` (which names the flag that skips the question).
fn confirmed(question: &str, no_terminal: &str) -> Result<bool> {
    if !std::io::stdin().is_terminal() {
        return Err(miette!("{no_terminal}"));
    }
    print!("{question} Only 'yes' will be accepted: ");
    std::io::stdout().flush().into_diagnostic()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).into_diagnostic()?;
    Ok(answer.trim() == "yes")
}

/// An interrupt raised by the first SIGINT or SIGTERM: steps in flight finish and are recorded,
/// no new step starts. A second signal ends the process at once (the next run adopts what the
/// steps in flight made).
fn stop_on_signals() -> Interrupt {
    let interrupt = Interrupt::new();
    let handle = interrupt.clone();
    tokio::spawn(async move {
        #[cfg(unix)]
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return,
            };
        for first in [true, false] {
            #[cfg(unix)]
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            #[cfg(not(unix))]
            let _ = tokio::signal::ctrl_c().await;
            if first {
                handle.interrupt();
                eprintln!(
                    "Stopping: steps in flight finish and are recorded; no new step starts \
                     (signal again to stop at once)."
                );
            } else {
                eprintln!("Stopped at once: the next run adopts what steps in flight made.");
                std::process::exit(130);
            }
        }
    });
    interrupt
}

/// Where the state `args` name is (`--state`, else where the spec's `[state]` says) and how
/// the spec seals it.
pub(crate) fn locate_state(
    args: &StateArgs,
) -> Result<(
    StateLocation,
    Option<engine::spec::EncryptionSection>,
    Option<engine::spec::SpecSource>,
)> {
    match (&args.spec, &args.state) {
        (Some(spec), over) => {
            let source = read_spec(spec, None)?;
            let location =
                source.state_location(over.as_deref()).map_err(engine::EngineError::from)?;
            let encryption = source.state_encryption().map_err(engine::EngineError::from)?;
            Ok((location, encryption, Some(source)))
        }
        (None, Some(over)) => Ok((location_arg("--state", over)?, None, None)),
        (None, None) => {
            Err(miette!("give --state (a path, s3://BUCKET/KEY or gs://BUCKET/KEY) or --spec SPEC"))
        }
    }
}

/// A state location given on the command line without a spec (an S3 bucket in `$AWS_REGION`).
pub(crate) fn location_arg(flag: &str, arg: &str) -> Result<StateLocation> {
    let region = std::env::var("AWS_REGION").unwrap_or_default();
    StateLocation::from_arg(arg, region, engine::DEFAULT_LEASE)
        .ok_or_else(|| miette!("{flag} {arg}: expected a path, s3://BUCKET/KEY or gs://BUCKET/KEY"))
}

/// The backend of the state `args` name.
pub(crate) async fn open_state(args: &StateArgs) -> Result<Arc<dyn Backend>> {
    let (location, encryption, _) = locate_state(args)?;
    open_at(&location, encryption.as_ref()).await
}

/// The backend at `location`, sealed as `encryption` says, reaching the clouds from the
/// environment.
pub(crate) async fn open_at(
    location: &StateLocation,
    encryption: Option<&engine::spec::EncryptionSection>,
) -> Result<Arc<dyn Backend>> {
    let region = match location {
        StateLocation::S3 { region, .. } => Some(region.clone()),
        StateLocation::Local { .. } | StateLocation::Gcs { .. } => std::env::var("AWS_REGION").ok(),
    };
    let access = engine_lanes::StateAccess::from_env(region.as_deref()).await;
    engine_lanes::state_backend(location, encryption, &access)
        .map_err(|e| miette!("opening the state at {location}: {e}"))
}

async fn load_state(args: &StateArgs) -> Result<StateDocument> {
    let backend = open_state(args).await?;
    let location = backend.location();
    tokio::task::spawn_blocking(move || backend.load())
        .await
        .into_diagnostic()?
        .map_err(engine::EngineError::from)?
        .ok_or_else(|| miette!("no state at {location}"))
        .wrap_err("reading state")
}

/// Removes a lock a run left, after saying who holds it and whether it is still held, and
/// asking (unless `--force`).
async fn force_unlock(args: &crate::args::ForceUnlockArgs) -> Result<u8> {
    let backend = open_state(&args.args).await?;
    let status = {
        let backend = backend.clone();
        tokio::task::spawn_blocking(move || backend.lock_status())
            .await
            .into_diagnostic()?
            .map_err(engine::EngineError::from)?
    };
    let Some(status) = status else {
        return Err(miette!("{} is not locked", backend.location()));
    };
    println!("Lock {} on {}: held by {}.", status.holder.id, backend.location(), status.holder);
    if status.live {
        println!(
            "Its holder still holds it (its process runs, or it still renews its lease): removing \
             it lets another run write while that one may still be working."
        );
    } else {
        println!("Its holder is gone: the lock is no longer renewed or held.");
    }
    if !args.force
        && !confirmed(
            "Remove it?",
            "refusing to remove the lock without confirmation: no terminal to ask on; pass --force",
        )?
    {
        println!("Cancelled: the lock is kept.");
        return Ok(FAILED);
    }
    let id = args.lock_id.clone();
    let location = backend.location();
    tokio::task::spawn_blocking(move || backend.force_unlock(&id))
        .await
        .into_diagnostic()?
        .map_err(engine::EngineError::from)?;
    println!("Lock {} removed from {location}.", args.lock_id);
    Ok(OK)
}

/// The spec at `path` with the overlay at `overlay` merged over it; a notice on stderr names the
/// overlay, so a run against other peers never goes unnoticed.
fn read_spec(path: &Path, overlay: Option<&Path>) -> Result<engine::spec::SpecSource> {
    let read = |p: &Path| {
        engine::spec::SpecSource::from_file(p)
            .into_diagnostic()
            .wrap_err_with(|| format!("reading {}", p.display()))
    };
    let source = read(path)?;
    let Some(overlay) = overlay else {
        return Ok(source);
    };
    eprintln!("spec {} with overlay {}", path.display(), overlay.display());
    Ok(source.with_overlay(read(overlay)?).map_err(engine::EngineError::from)?)
}
