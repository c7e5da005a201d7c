//! The JSON documents printed by `--json` (documented in docs/json.md). Built here, from the
//! typed results, so the library's types can change without breaking the format.

use engine::{ApplyReport, DriftReport, Plan, PlannedValue};
use serde_json::{Value as Json, json};

/// Version of the JSON formats below.
pub const FORMAT_VERSION: &str = "1";

pub fn plan(plan: &Plan) -> Json {
    let s = plan.summary();
    json!({
        "format_version": FORMAT_VERSION,
        "spec": plan.spec,
        "mode": plan.mode,
        "state": {"serial": plan.state_serial, "lineage": plan.state_lineage},
        "summary": {"add": s.add, "change": s.change, "destroy": s.destroy, "adopt": s.adopt, "forget": s.forget},
        "has_changes": plan.has_changes(),
        "refreshed": plan.refreshed,
        "api_calls": plan.api_calls.by_operation,
        "kept": plan.kept,
        "handing_over": plan.handing_over.iter().map(|(address, to)| json!({"address": address, "to": to})).collect::<Vec<_>>(),
        "left_out": plan.left_out.iter().map(|(address, why)| json!({"address": address, "why": why})).collect::<Vec<_>>(),
        "resource_changes": plan.changes.iter().map(|c| json!({
            "address": c.address,
            "kind": c.kind,
            "action": c.action,
            "id": c.id,
            "protected": c.protected,
            "retained": c.retained,
            "depends_on": c.dependencies,
            "fields": c.fields.iter().map(|f| json!({
                "name": f.name,
                "before": f.before,
                "after": match &f.after { PlannedValue::Known(v) => v.clone(), PlannedValue::Unknown => Json::Null },
                "after_unknown": f.after == PlannedValue::Unknown,
                "forces_replacement": f.forces_replacement,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

pub fn drift(report: &DriftReport) -> Json {
    json!({
        "format_version": FORMAT_VERSION,
        "clean": report.is_clean(),
        "against": report.against,
        "checked": report.checked,
        "drifted": report.drifted,
        "not_applied": report.not_applied,
        "spec_changes": report.spec_plan.as_ref().map(|p| plan(p)["resource_changes"]
            .as_array()
            .map(|changes| changes.iter().filter(|c| c["action"] != "no-op").cloned().collect::<Vec<_>>())),
        "api_calls": report.api_calls.by_operation,
    })
}

pub fn apply(report: &ApplyReport) -> Json {
    json!({
        "format_version": FORMAT_VERSION,
        "success": report.is_success(),
        "elapsed_seconds": report.elapsed.as_secs_f64(),
        "steps": report.steps,
        "api_calls": report.api_calls.by_operation,
        "mutating_api_calls": report.api_calls.mutating(),
    })
}
