//! Human-readable plan and drift reports.

use crate::style::Style;
use engine::{Action, DriftReport, DriftStatus, FieldChange, Plan, PlanMode, PlannedValue};
use serde_json::Value as Json;
use std::fmt::Write;

const UNKNOWN: &str = "(known after apply)";

fn show(v: &Json) -> String {
    match v {
        Json::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn show_after(v: &PlannedValue) -> String {
    match v {
        PlannedValue::Known(j) => show(j),
        PlannedValue::Unknown => UNKNOWN.to_string(),
    }
}

fn symbol(style: &Style, action: Action) -> String {
    let s = action.symbol();
    match action {
        Action::Create => style.green(s),
        Action::Update => style.yellow(s),
        Action::Replace | Action::Delete => style.red(s),
        Action::Adopt | Action::Forget | Action::NoOp => s.to_string(),
    }
}

/// One field line (maps are expanded key by key on updates).
fn field_lines(out: &mut String, style: &Style, action: Action, f: &FieldChange, width: usize) {
    let note =
        if f.forces_replacement { style.red("  # forces replacement") } else { String::new() };
    match action {
        Action::Create => {
            let _ = writeln!(
                out,
                "      {} {:width$} = {}",
                style.green("+"),
                f.name,
                show_after(&f.after)
            );
        }
        Action::Delete => {
            let before = f.before.as_ref().map(show).unwrap_or_default();
            let _ = writeln!(out, "      {} {:width$} = {}", style.red("-"), f.name, before);
        }
        _ => {
            let before = f.before.clone().unwrap_or(Json::Null);
            if let (Json::Object(b), PlannedValue::Known(Json::Object(a))) = (&before, &f.after) {
                let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    let name = format!("{}.{k}", f.name);
                    match (b.get(k), a.get(k)) {
                        (Some(x), Some(y)) if x != y => {
                            let _ = writeln!(
                                out,
                                "      {} {name:width$} = {} -> {}{note}",
                                style.yellow("~"),
                                show(x),
                                show(y)
                            );
                        }
                        (Some(x), None) => {
                            let _ = writeln!(
                                out,
                                "      {} {name:width$} = {}",
                                style.red("-"),
                                show(x)
                            );
                        }
                        (None, Some(y)) => {
                            let _ = writeln!(
                                out,
                                "      {} {name:width$} = {}",
                                style.green("+"),
                                show(y)
                            );
                        }
                        _ => {}
                    }
                }
            } else {
                let _ = writeln!(
                    out,
                    "      {} {:width$} = {} -> {}{note}",
                    style.yellow("~"),
                    f.name,
                    show(&before),
                    show_after(&f.after)
                );
            }
        }
    }
}

/// The plan as text: one block per resource that changes, then the summary line.
pub fn plan_text(plan: &Plan, style: &Style) -> String {
    let mut out = changes_text(plan, style);
    for (address, to) in &plan.handing_over {
        let _ = writeln!(
            out,
            "  => {} will be handed over to {to} once applied: the state lets go of it, it keeps \
             running\n",
            style.bold(address.as_str())
        );
    }
    for (address, why) in &plan.left_out {
        let _ =
            writeln!(out, "  [skip] {} and what needs it: {why}\n", style.bold(address.as_str()));
    }
    if !plan.kept.is_empty() {
        let _ = writeln!(out, "  Kept (protected; destroy them with --confirm-protected):");
        for k in &plan.kept {
            let _ = writeln!(out, "    {k}");
        }
        out.push('\n');
    }
    let s = plan.summary();
    if plan.has_changes() {
        let mut adopt =
            if s.adopt > 0 { format!(" ({} to adopt into state)", s.adopt) } else { String::new() };
        if s.forget > 0 {
            adopt.push_str(&format!(" ({} to forget, left in place)", s.forget));
        }
        if !plan.handing_over.is_empty() {
            adopt.push_str(&format!(" ({} to hand over)", plan.handing_over.len()));
        }
        let _ = writeln!(
            out,
            "{} {} to add, {} to change, {} to destroy.{adopt}",
            style.bold("Plan:"),
            s.add,
            s.change,
            s.destroy
        );
    } else {
        let what = match plan.mode {
            PlanMode::Apply => "No changes. The infrastructure matches the spec.",
            PlanMode::Destroy => "No changes. Nothing to destroy.",
        };
        let _ = writeln!(out, "{}", style.bold(what));
    }
    out
}

/// One block per resource that changes.
fn changes_text(plan: &Plan, style: &Style) -> String {
    let mut out = String::new();
    for c in plan.actions() {
        let verb = match c.action {
            Action::Create => "will be created",
            Action::Update => "will be updated in place",
            Action::Replace => "must be replaced",
            Action::Delete => "will be destroyed",
            Action::Adopt => {
                "exists (found by its ownership tags or its name) and will be recorded in state"
            }
            Action::Forget => {
                "will be removed from the state and left in place (its data stays; \
                 --delete-retained deletes it)"
            }
            Action::NoOp => "",
        };
        let id = c.id.as_deref().map(|i| format!(" [{i}]")).unwrap_or_default();
        let _ =
            writeln!(out, "  {} {}", style.dim("#"), style.dim(&format!("{} {verb}", c.address)));
        let _ = writeln!(
            out,
            "  {} {} ({}){}",
            symbol(style, c.action),
            style.bold(c.address.as_str()),
            c.kind,
            id
        );
        let width = c.fields.iter().map(|f| f.name.len()).max().unwrap_or(0).min(28);
        let shows_fields = !matches!(c.action, Action::Adopt | Action::Forget);
        for f in c.fields.iter().filter(|_| shows_fields) {
            field_lines(&mut out, style, c.action, f, width);
        }
        out.push('\n');
    }
    out
}

/// The drift report as text.
pub fn drift_text(report: &DriftReport, style: &Style) -> String {
    let mut out = String::new();
    for d in &report.drifted {
        match &d.status {
            DriftStatus::Deleted => {
                let _ = writeln!(
                    out,
                    "  {} {} ({}) [{}]: deleted outside the engine",
                    style.red("-"),
                    style.bold(d.address.as_str()),
                    d.kind,
                    d.id
                );
            }
            DriftStatus::Modified { fields } => {
                let _ = writeln!(
                    out,
                    "  {} {} ({}) [{}]: changed outside the engine",
                    style.yellow("~"),
                    style.bold(d.address.as_str()),
                    d.kind,
                    d.id
                );
                for f in fields {
                    let _ = writeln!(
                        out,
                        "      {} {} = {} (applied) -> {} (live)",
                        style.yellow("~"),
                        f.name,
                        show(&f.applied),
                        show(&f.live)
                    );
                }
            }
        }
    }
    if report.against.compares_applied() {
        if report.drifted.is_empty() {
            let _ = writeln!(
                out,
                "{} {} resources match what was applied.",
                style.green("No drift:"),
                report.checked
            );
        } else {
            let _ = writeln!(
                out,
                "{} {} of {} resources drifted from what was applied.",
                style.red("Drift:"),
                report.drifted.len(),
                report.checked
            );
        }
    }
    match &report.spec_plan {
        Some(plan) if plan.has_changes() => {
            let s = plan.summary();
            if !report.drifted.is_empty() {
                out.push('\n');
            }
            let _ = writeln!(out, "  What an apply would change to match the spec:\n");
            out.push_str(&changes_text(plan, style));
            let _ = writeln!(
                out,
                "{} the spec differs: {} to add, {} to change, {} to destroy.",
                style.red("Drift:"),
                s.add,
                s.change,
                s.destroy
            );
        }
        Some(_) => {
            let _ = writeln!(
                out,
                "{} {} resources match the spec.",
                style.green("No drift:"),
                report.checked
            );
        }
        None if !report.not_applied.is_empty() => {
            let _ = writeln!(
                out,
                "{} resources of the spec were never applied.",
                report.not_applied.len()
            );
        }
        None => {}
    }
    out
}

/// What `engine import --from-tofu` took over, and what it did not.
pub fn import_text(matching: &engine::tofu_import::Matching, style: &Style) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Taken over from OpenTofu: {} resources recorded in the engine's state.",
        matching.matched.len()
    );
    for (address, found) in &matching.matched {
        let _ =
            writeln!(out, "  {} {address} <= {} ({})", style.green("<="), found.source, found.id);
    }
    if !matching.unmatched.is_empty() {
        let _ = writeln!(
            out,
            "\nNot taken over: {} resources match no resource of the spec (or several):",
            matching.unmatched.len()
        );
        for r in &matching.unmatched {
            let _ = writeln!(out, "  {} {} ({} {})", style.yellow("!"), r.source, r.kind, r.id);
        }
    }
    if !matching.unknown.is_empty() {
        let _ = writeln!(
            out,
            "\nNot taken over: {} resources of types the engine does not manage:",
            matching.unknown.len()
        );
        for i in &matching.unknown {
            let _ = writeln!(out, "  {} {}", style.yellow("!"), i.address);
        }
    }
    out.push('\n');
    out
}
