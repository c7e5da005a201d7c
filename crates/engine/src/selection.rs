//! Which lanes (clouds) and feature gates a run may touch: decided here and nowhere else.

use std::collections::BTreeSet;

/// A cloud lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lane {
    Aws,
    Gcp,
}

impl Lane {
    pub const ALL: [Lane; 2] = [Lane::Aws, Lane::Gcp];

    pub fn name(self) -> &'static str {
        match self {
            Lane::Aws => "aws",
            Lane::Gcp => "gcp",
        }
    }

    pub fn parse(name: &str) -> Option<Lane> {
        match name.trim() {
            "aws" => Some(Lane::Aws),
            "gcp" => Some(Lane::Gcp),
            _ => None,
        }
    }
}

/// The lanes and feature gates selected for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    lanes: BTreeSet<Lane>,
    features: BTreeSet<String>,
}

/// Environment variable read when `--cloud` is not given.
pub const CLOUD_ENV: &str = "ENGINE_CLOUD";
/// The reference platform's variable, read when neither `--cloud` nor `ENGINE_CLOUD` is set.
pub const REFERENCE_CLOUD_ENV: &str = "TM_CLOUD";
/// The lane of specs that serve every cloud (`[globals] lane = "shared"`): always selected.
pub const SHARED_LANE: &str = "shared";
/// Feature gates known to the engine: (gate, the environment variable that enables it, the
/// reference platform's variable, read when the engine's is not set).
pub const FEATURE_GATES: [(&str, &str, &str); 1] =
    [("llm-platform", "ENGINE_LLM_PLATFORM_ENABLED", "TM_LLM_PLATFORM_ENABLED")];

/// Spec sections behind a feature gate: (section, gate). A spec may always hold them; a run
/// expands them only when the gate is on.
pub const GATED_SECTIONS: [(&str, &str); 1] = [("llm_platform", "llm-platform")];

impl Default for Selection {
    fn default() -> Self {
        Selection { lanes: [Lane::Aws].into(), features: BTreeSet::new() }
    }
}

impl Selection {
    /// The one decision point: `--cloud` (else `ENGINE_CLOUD`, else `TM_CLOUD`, else `aws`) and
    /// `--feature` flags (else each gate's environment variable set to `true`). `env` is the
    /// environment lookup. The `shared` lane is always selected.
    pub fn decide(
        cloud: Option<&str>,
        features: &[String],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Selection, String> {
        let cloud = cloud
            .map(str::to_string)
            .or_else(|| env(CLOUD_ENV))
            .or_else(|| env(REFERENCE_CLOUD_ENV))
            .unwrap_or_else(|| "aws".into());
        let mut lanes = BTreeSet::new();
        for part in cloud.split(',').filter(|p| !p.trim().is_empty()) {
            match part.trim() {
                "all" => lanes.extend(Lane::ALL),
                other => {
                    lanes.insert(Lane::parse(other).ok_or_else(|| {
                        format!("unknown cloud `{other}` (expected aws, gcp, aws,gcp or all)")
                    })?);
                }
            }
        }
        let mut selected = BTreeSet::new();
        for f in features {
            if !FEATURE_GATES.iter().any(|(name, _, _)| name == f) {
                return Err(format!("unknown feature gate `{f}`"));
            }
            selected.insert(f.clone());
        }
        let enabled = |v: String| v.eq_ignore_ascii_case("true") || v == "1";
        for (name, var, reference) in FEATURE_GATES {
            if env(var).or_else(|| env(reference)).is_some_and(enabled) {
                selected.insert(name.to_string());
            }
        }
        Ok(Selection { lanes, features: selected })
    }

    /// The stages (`<lane>.<section>`) of the gated sections whose gate is off in this run.
    pub fn gated_off_stages(&self, lane: &str) -> Vec<String> {
        GATED_SECTIONS
            .iter()
            .filter(|(_, gate)| !self.has_feature(gate))
            .map(|(section, _)| format!("{lane}.{section}"))
            .collect()
    }

    /// One line for each gated section a spec holds (`present`): a `[skip]` line when its gate
    /// is off; when it is on but no provider of the lane owns the section (`owned`), a line
    /// saying it makes nothing yet.
    pub fn gated_notes(
        &self,
        present: &dyn Fn(&str) -> bool,
        owned: &dyn Fn(&str) -> bool,
    ) -> Vec<String> {
        GATED_SECTIONS
            .iter()
            .filter(|(section, _)| present(section))
            .filter_map(|&(section, gate)| {
                if !self.has_feature(gate) {
                    let var = FEATURE_GATES
                        .iter()
                        .find(|(name, _, _)| *name == gate)
                        .map(|(_, var, _)| *var)
                        .unwrap_or_default();
                    Some(format!(
                        "[skip] [{section}]: feature gate `{gate}` is off \
                         (--feature {gate} or {var}=true)"
                    ))
                } else if !owned(section) {
                    Some(format!(
                        "[{section}]: feature gate `{gate}` is on; no provider makes resources \
                         for this section yet"
                    ))
                } else {
                    None
                }
            })
            .collect()
    }

    /// The one `[skip]` line of a spec (its `[globals]`, its file) whose lane this run does
    /// not select; `None` when it runs (its cloud's lane is selected, or it serves every lane).
    pub fn skip_line(&self, globals: &crate::spec::Globals, file: &str) -> Option<String> {
        if globals.lane.as_deref() == Some(SHARED_LANE) {
            return None;
        }
        let lane = Lane::parse(&globals.cloud)?;
        (!self.has_lane(lane)).then(|| {
            format!(
                "[skip] {} lane not selected (cloud: {}): {file}",
                lane.name(),
                self.lanes_text()
            )
        })
    }

    /// Whether `lane` runs.
    pub fn has_lane(&self, lane: Lane) -> bool {
        self.lanes.contains(&lane)
    }

    /// Whether the feature gate `name` is on.
    pub fn has_feature(&self, name: &str) -> bool {
        self.features.contains(name)
    }

    /// The selected lanes, comma separated.
    pub fn lanes_text(&self) -> String {
        self.lanes.iter().map(|l| l.name()).collect::<Vec<_>>().join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn default_is_aws_only() {
        let s = Selection::decide(None, &[], &no_env).unwrap();
        assert!(s.has_lane(Lane::Aws) && !s.has_lane(Lane::Gcp));
        assert!(!s.has_feature("llm-platform"));
    }

    #[test]
    fn flag_wins_over_environment_and_all_means_every_lane() {
        let env = |k: &str| (k == CLOUD_ENV).then(|| "gcp".to_string());
        let s = Selection::decide(Some("all"), &[], &env).unwrap();
        assert!(s.has_lane(Lane::Aws) && s.has_lane(Lane::Gcp));
        let s = Selection::decide(None, &[], &env).unwrap();
        assert_eq!(s.lanes_text(), "gcp");
        let s = Selection::decide(Some("aws, gcp"), &[], &no_env).unwrap();
        assert_eq!(s.lanes_text(), "aws,gcp");
        // The reference's variable, when the engine's is not set.
        let reference = |k: &str| (k == REFERENCE_CLOUD_ENV).then(|| " gcp ,".to_string());
        assert_eq!(Selection::decide(None, &[], &reference).unwrap().lanes_text(), "gcp");
        let both = |k: &str| match k {
            CLOUD_ENV => Some("aws".to_string()),
            REFERENCE_CLOUD_ENV => Some("gcp".to_string()),
            _ => None,
        };
        assert_eq!(Selection::decide(None, &[], &both).unwrap().lanes_text(), "aws");
    }

    #[test]
    fn gates_from_flag_or_environment() {
        let env = |k: &str| (k == "ENGINE_LLM_PLATFORM_ENABLED").then(|| "true".to_string());
        assert!(Selection::decide(None, &[], &env).unwrap().has_feature("llm-platform"));
        assert!(
            Selection::decide(None, &["llm-platform".into()], &no_env)
                .unwrap()
                .has_feature("llm-platform")
        );
        assert!(Selection::decide(None, &["nope".into()], &no_env).is_err());
        // The reference's variable, unless the engine's says otherwise.
        let reference = |k: &str| (k == "TM_LLM_PLATFORM_ENABLED").then(|| "true".to_string());
        assert!(Selection::decide(None, &[], &reference).unwrap().has_feature("llm-platform"));
        let both = |k: &str| match k {
            "ENGINE_LLM_PLATFORM_ENABLED" => Some("false".to_string()),
            "TM_LLM_PLATFORM_ENABLED" => Some("true".to_string()),
            _ => None,
        };
        assert!(!Selection::decide(None, &[], &both).unwrap().has_feature("llm-platform"));
        let off = Selection::decide(None, &[], &no_env).unwrap();
        assert_eq!(off.gated_off_stages("aws"), ["aws.llm_platform"]);
        let on = Selection::decide(None, &["llm-platform".into()], &no_env).unwrap();
        assert!(on.gated_off_stages("aws").is_empty());
        let present = |s: &str| s == "llm_platform";
        let (owned, unowned) = (|_: &str| true, |_: &str| false);
        let off = Selection::decide(None, &[], &no_env).unwrap();
        let skipped = off.gated_notes(&present, &owned);
        assert_eq!(skipped.len(), 1);
        assert!(
            skipped[0].starts_with("[skip] [llm_platform]")
                && skipped[0].contains("ENGINE_LLM_PLATFORM_ENABLED=true"),
            "{}",
            skipped[0]
        );
        let on = Selection::decide(None, &["llm-platform".into()], &no_env).unwrap();
        assert!(on.gated_notes(&present, &owned).is_empty());
        assert!(on.gated_notes(&present, &unowned)[0].contains("no provider makes resources"));
        assert!(off.gated_notes(&|_| false, &owned).is_empty());
        assert!(Selection::decide(Some("azure"), &[], &no_env).is_err());
    }
}
