//! Rendering a chart into manifests, like `helm template`.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::Value as Json;

use crate::capabilities::Capabilities;
use crate::chart::Chart;
use crate::error::HelmError;
use crate::lookup::Lookup;
use crate::objects::{ApiVersions, Capabilities as CapsObj, Files, KubeVersion};
use crate::template::{Exec, TemplateSet};
use crate::value::{Map, Value};
use crate::yaml::{Numbers, parse};

/// Inputs of a render.
pub struct RenderOptions<'a> {
    /// `.Release.Name`.
    pub release_name: String,
    /// `.Release.Namespace`.
    pub namespace: String,
    /// User values (values files and `--set` merged; see
    /// [`crate::values::user_values`]).
    pub values: Json,
    /// `.Capabilities`.
    pub capabilities: Capabilities,
    /// Backend of the `lookup` function.
    pub lookup: &'a dyn Lookup,
    /// `.Release.IsUpgrade` (otherwise an install).
    pub is_upgrade: bool,
    /// `.Release.Revision`.
    pub revision: i64,
    /// Key algorithm of generated certificates (Sprig uses RSA 2048).
    pub key_algorithm: crate::funcs::KeyAlgorithm,
}

impl<'a> RenderOptions<'a> {
    /// Options as `helm template RELEASE CHART -n NAMESPACE` uses them.
    pub fn new(release_name: &str, namespace: &str, values: Json, lookup: &'a dyn Lookup) -> Self {
        RenderOptions {
            release_name: release_name.to_string(),
            namespace: namespace.to_string(),
            values,
            capabilities: Capabilities::default(),
            lookup,
            is_upgrade: false,
            revision: 1,
            key_algorithm: crate::funcs::KeyAlgorithm::default(),
        }
    }
}

/// A rendered, non-hook manifest document.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// Template path, e.g. `cilium/templates/cilium-agent/daemonset.yaml`.
    pub source: String,
    /// Document text.
    pub content: String,
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
}

/// A rendered hook document.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    /// Template path.
    pub source: String,
    /// Document text.
    pub content: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// Hook events (`pre-install`, ...).
    pub events: Vec<String>,
    /// `helm.sh/hook-weight`.
    pub weight: i64,
    /// `helm.sh/hook-delete-policy` entries.
    pub delete_policies: Vec<String>,
}

/// A parsed object with its source template.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedObject {
    /// Template path.
    pub source: String,
    /// The object.
    pub object: Json,
}

/// The result of rendering a chart.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// Manifests in Helm's install order.
    pub manifests: Vec<Manifest>,
    /// Hooks (in kind order, as `helm template` prints them).
    pub hooks: Vec<Hook>,
    /// Rendered NOTES.txt of the root chart.
    pub notes: String,
    /// Every rendered template file (after `<no value>` removal).
    pub files: BTreeMap<String, String>,
}

impl Rendered {
    /// The manifest stream exactly as `helm template` prints it (hooks
    /// included, CRDs not).
    pub fn manifest_text(&self) -> String {
        let mut body = String::new();
        for m in &self.manifests {
            body.push_str("---\n# Source: ");
            body.push_str(&m.source);
            body.push('\n');
            body.push_str(&m.content);
            body.push('\n');
        }
        let mut out = body.trim().to_string();
        out.push('\n');
        for h in &self.hooks {
            out.push_str("---\n# Source: ");
            out.push_str(&h.source);
            out.push('\n');
            out.push_str(&h.content);
            out.push('\n');
        }
        out
    }

    /// Parsed objects (manifests, then hooks), in output order.
    pub fn objects(&self) -> Result<Vec<RenderedObject>, HelmError> {
        let mut out = Vec::new();
        let docs = self
            .manifests
            .iter()
            .map(|m| (&m.source, &m.content))
            .chain(self.hooks.iter().map(|h| (&h.source, &h.content)));
        for (source, content) in docs {
            let v = parse(content, Numbers::Native).map_err(|e| HelmError::Manifest {
                path: source.clone(),
                message: e.to_string(),
            })?;
            if v.is_nil() {
                continue;
            }
            out.push(RenderedObject { source: source.clone(), object: v.to_json() });
        }
        Ok(out)
    }
}

const INSTALL_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

const HOOK_EVENTS: &[&str] = &[
    "pre-install",
    "post-install",
    "pre-delete",
    "post-delete",
    "pre-upgrade",
    "post-upgrade",
    "pre-rollback",
    "post-rollback",
    "test",
    "test-success",
];

fn kind_less(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let ia = INSTALL_ORDER.iter().position(|k| *k == a);
    let ib = INSTALL_ORDER.iter().position(|k| *k == b);
    match (ia, ib) {
        (None, None) => a.cmp(b),
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => x.cmp(&y),
    }
}

/// Helm's SplitManifests: split on `^---[ \t]*`, left-trim documents.
pub(crate) fn split_manifests(content: &str) -> Vec<String> {
    let text = content.trim_start();
    let mut docs = Vec::new();
    let mut start = 0;
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let at_line_start = i == 0 || b[i - 1] == b'\n';
        if at_line_start && b[i..].starts_with(b"---") {
            docs.push(&text[start..i]);
            let mut j = i + 3;
            while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                j += 1;
            }
            start = j;
            i = j;
            continue;
        }
        i += 1;
    }
    docs.push(&text[start..]);
    docs.into_iter().filter(|d| !d.trim().is_empty()).map(|d| d.trim_start().to_string()).collect()
}

fn chart_map(chart: &Chart, is_root: bool) -> Value {
    let md = &chart.metadata;
    let sget = |k: &str| -> Value {
        match md.get(k) {
            Some(Json::String(s)) => Value::str(s),
            Some(Json::Number(n)) => match n.as_i64() {
                Some(i) if !n.is_f64() => Value::str(i.to_string()),
                _ => Value::str(crate::value::format_float_g(n.as_f64().unwrap_or(0.0))),
            },
            Some(Json::Bool(b)) => Value::str(b.to_string()),
            _ => Value::str(""),
        }
    };
    let list = |k: &str| -> Value {
        match md.get(k) {
            Some(Json::Array(a)) => Value::from(a.iter().map(Value::from_json).collect::<Vec<_>>()),
            _ => Value::from(Vec::new()),
        }
    };
    let mut m = Map::new();
    m.insert("Name".into(), Value::str(chart.name()));
    for (go, key) in [
        ("Home", "home"),
        ("Version", "version"),
        ("Description", "description"),
        ("Icon", "icon"),
        ("APIVersion", "apiVersion"),
        ("Condition", "condition"),
        ("Tags", "tags"),
        ("AppVersion", "appVersion"),
        ("KubeVersion", "kubeVersion"),
        ("Type", "type"),
    ] {
        m.insert(go.into(), sget(key));
    }
    m.insert("Sources".into(), list("sources"));
    m.insert("Keywords".into(), list("keywords"));
    let maint: Vec<Value> = match md.get("maintainers") {
        Some(Json::Array(a)) => a
            .iter()
            .map(|x| {
                let mut mm = Map::new();
                for (go, key) in [("Name", "name"), ("Email", "email"), ("URL", "url")] {
                    mm.insert(
                        go.into(),
                        Value::str(x.get(key).and_then(Json::as_str).unwrap_or("")),
                    );
                }
                Value::from(mm)
            })
            .collect(),
        _ => Vec::new(),
    };
    m.insert("Maintainers".into(), Value::from(maint));
    m.insert(
        "Deprecated".into(),
        Value::Bool(md.get("deprecated").and_then(Json::as_bool).unwrap_or(false)),
    );
    m.insert(
        "Annotations".into(),
        match md.get("annotations") {
            Some(a @ Json::Object(_)) => Value::from_json(a),
            _ => Value::new_map(),
        },
    );
    let deps: Vec<Value> = match md.get("dependencies") {
        Some(Json::Array(a)) => a
            .iter()
            .map(|d| {
                let mut dm = Map::new();
                for (go, key) in [
                    ("Name", "name"),
                    ("Version", "version"),
                    ("Repository", "repository"),
                    ("Condition", "condition"),
                    ("Alias", "alias"),
                ] {
                    dm.insert(
                        go.into(),
                        Value::str(d.get(key).and_then(Json::as_str).unwrap_or("")),
                    );
                }
                dm.insert(
                    "Tags".into(),
                    d.get("tags").map(Value::from_json).unwrap_or(Value::from(Vec::new())),
                );
                dm.insert(
                    "Enabled".into(),
                    Value::Bool(d.get("enabled").and_then(Json::as_bool).unwrap_or(false)),
                );
                dm.insert(
                    "ImportValues".into(),
                    d.get("import-values").map(Value::from_json).unwrap_or(Value::from(Vec::new())),
                );
                Value::from(dm)
            })
            .collect(),
        _ => Vec::new(),
    };
    m.insert("Dependencies".into(), Value::from(deps));
    m.insert("IsRoot".into(), Value::Bool(is_root));
    m.into()
}

struct Renderable {
    top: Value,
    base_path: String,
}

/// Shared inputs of [`collect`].
struct Globals<'a> {
    release: &'a Value,
    caps: &'a Value,
}

fn collect(
    chart: &Chart,
    parent_path: Option<&str>,
    parent_values: &Value,
    g: &Globals<'_>,
    tpls: &mut BTreeMap<String, Renderable>,
    sources: &mut Vec<(String, String)>,
) -> Value {
    let is_root = parent_path.is_none();
    let full = match parent_path {
        None => chart.name(),
        Some(p) => format!("{p}/charts/{}", chart.name()),
    };
    let files: BTreeMap<String, Vec<u8>> =
        chart.files.iter().map(|f| (f.name.clone(), f.data.clone())).collect();
    let values = if is_root {
        parent_values.clone()
    } else {
        match parent_values.get(&chart.name()) {
            Some(v @ Value::Map(_)) => v,
            _ => Value::new_map(),
        }
    };
    let subcharts = Value::new_map();
    let mut top = Map::new();
    top.insert("Chart".into(), chart_map(chart, is_root));
    top.insert("Files".into(), Value::Object(Rc::new(Files { files: Rc::new(files) })));
    top.insert("Release".into(), g.release.clone());
    top.insert("Capabilities".into(), g.caps.clone());
    top.insert("Values".into(), values.clone());
    top.insert("Subcharts".into(), subcharts.clone());
    let top = Value::from(top);
    for sub in &chart.dependencies {
        let sv = collect(sub, Some(&full), &values, g, tpls, sources);
        if let Value::Map(m) = &subcharts {
            m.borrow_mut().insert(sub.name(), sv);
        }
    }
    for t in &chart.templates {
        let base = t.name.rsplit('/').next().unwrap_or(&t.name);
        if chart.is_library() && !base.starts_with('_') {
            continue;
        }
        let name = format!("{full}/{}", t.name);
        sources.push((name.clone(), String::from_utf8_lossy(&t.data).into_owned()));
        tpls.insert(name, Renderable { top: top.clone(), base_path: format!("{full}/templates") });
    }
    top
}

/// Helm's template order: deeper paths first, then reverse lexical.
fn sort_templates(names: &mut [String]) {
    names.sort_by(|a, b| {
        let (ca, cb) = (a.matches('/').count(), b.matches('/').count());
        cb.cmp(&ca).then_with(|| b.cmp(a))
    });
}

fn process_dependencies<'c>(
    chart: &'c Chart,
    user: &Json,
) -> Result<std::borrow::Cow<'c, Chart>, HelmError> {
    // A chart that declares no dependencies is rendered as loaded (a copy of Cilium's files
    // would take a millisecond).
    let deps = match chart.metadata.get("dependencies") {
        Some(Json::Array(a)) => a.clone(),
        _ => return Ok(std::borrow::Cow::Borrowed(chart)),
    };
    let mut chart = chart.clone();
    let values = crate::values::coalesce(&chart, user)?;
    let mut kept = Vec::new();
    let mut kept_meta = Vec::new();
    let loaded = std::mem::take(&mut chart.dependencies);
    let mut used = vec![false; loaded.len()];
    for d in &deps {
        let name = d.get("name").and_then(Json::as_str).unwrap_or("");
        let alias = d.get("alias").and_then(Json::as_str);
        let Some(idx) = loaded.iter().position(|c| c.name() == name) else {
            continue;
        };
        used[idx] = true;
        let mut sub = loaded[idx].clone();
        if let Some(a) = alias {
            sub.alias = Some(a.to_string());
        }
        let mut enabled = true;
        // tags
        if let Some(Json::Array(tags)) = d.get("tags") {
            let mut any_set = false;
            let mut any_true = false;
            for t in tags {
                if let Some(Json::Bool(b)) =
                    t.as_str().and_then(|t| values.get("tags").and_then(|g| g.get(t)))
                {
                    any_set = true;
                    any_true |= *b;
                }
            }
            if any_set {
                enabled = any_true;
            }
        }
        // condition wins over tags
        if let Some(cond) = d.get("condition").and_then(Json::as_str) {
            for path in cond.split(',') {
                let mut cur = Some(&values);
                for seg in path.trim().split('.') {
                    cur = cur.and_then(|c| c.get(seg));
                }
                if let Some(Json::Bool(b)) = cur {
                    enabled = *b;
                    break;
                }
            }
        }
        if enabled {
            kept.push(sub);
            // Helm rewrites the metadata of enabled dependencies.
            let mut m = d.clone();
            if let Json::Object(o) = &mut m {
                o.insert("enabled".into(), Json::Bool(true));
                if let Some(a) = alias {
                    o.insert("name".into(), Json::String(a.to_string()));
                }
                if let Some(Json::Array(iv)) = o.get("import-values").cloned() {
                    let norm: Vec<Json> = iv
                        .iter()
                        .map(|i| match i {
                            Json::String(s) => {
                                serde_json::json!({"child": format!("exports.{s}"), "parent": "."})
                            }
                            other => other.clone(),
                        })
                        .collect();
                    o.insert("import-values".into(), Json::Array(norm));
                }
            }
            kept_meta.push(m);
        }
    }
    if let Json::Object(o) = &mut chart.metadata {
        o.insert("dependencies".into(), Json::Array(kept_meta));
    }
    for (i, c) in loaded.into_iter().enumerate() {
        if !used[i] {
            kept.push(c);
        }
    }
    chart.dependencies = kept;
    Ok(std::borrow::Cow::Owned(chart))
}

fn import_values(chart: &Chart, values: &mut Json) {
    let deps = match chart.metadata.get("dependencies") {
        Some(Json::Array(a)) => a.clone(),
        _ => return,
    };
    for d in deps {
        let name = d
            .get("alias")
            .or_else(|| d.get("name"))
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string();
        let Some(Json::Array(imports)) = d.get("import-values") else {
            continue;
        };
        for imp in imports {
            let (child, parent) = match imp {
                Json::String(s) => (format!("exports.{s}"), String::new()),
                Json::Object(o) => (
                    o.get("child").and_then(Json::as_str).unwrap_or("").to_string(),
                    o.get("parent").and_then(Json::as_str).unwrap_or("").to_string(),
                ),
                _ => continue,
            };
            let mut cur = values.get(&name).cloned();
            for seg in child.split('.').filter(|s| !s.is_empty()) {
                cur = cur.and_then(|c| c.get(seg).cloned());
            }
            let Some(v) = cur else { continue };
            let mut patch = v;
            for seg in
                parent.split('.').filter(|s| !s.is_empty()).collect::<Vec<_>>().into_iter().rev()
            {
                let mut m = serde_json::Map::new();
                m.insert(seg.to_string(), patch);
                patch = Json::Object(m);
            }
            // parent's own values win over imported ones
            let mut merged = patch;
            crate::values::merge_maps(&mut merged, values);
            *values = merged;
        }
    }
}

/// Whether a template of the chart or its subcharts calls a key-generating function.
fn makes_keys(chart: &Chart) -> bool {
    chart.templates.iter().any(|t| crate::funcs::calls_key_function(&t.data))
        || chart.dependencies.iter().any(makes_keys)
}

/// Stack of the rendering thread: templates may recurse deeply (Helm
/// allows 1000 nested includes of one template).
const RENDER_STACK: usize = 256 << 20;

/// Renders `chart` like `helm template`.
///
/// Rendering runs on a dedicated thread with a large stack, so deeply
/// recursive templates end with an error rather than a stack overflow;
/// a panic while rendering is reported as an error too.
pub fn render(chart: &Chart, opts: &RenderOptions<'_>) -> Result<Rendered, HelmError> {
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("engine-helm-render".into())
            .stack_size(RENDER_STACK)
            .spawn_scoped(s, || render_on_this_thread(chart, opts))
            .map_err(|e| HelmError::Chart(format!("cannot start the rendering thread: {e}")))?;
        handle
            .join()
            .unwrap_or_else(|_| Err(HelmError::Chart("internal error: rendering panicked".into())))
    })
}

fn render_on_this_thread(chart: &Chart, opts: &RenderOptions<'_>) -> Result<Rendered, HelmError> {
    let (full, normalized, major, minor) =
        opts.capabilities.parse_kube_version().map_err(HelmError::Values)?;
    if let Some(req) = chart.metadata.get("kubeVersion").and_then(Json::as_str)
        && !req.is_empty()
    {
        let ok = crate::semver::Constraints::parse(req)
            .ok()
            .zip(crate::semver::Version::parse(&normalized).ok())
            .map(|(c, v)| c.check(&v))
            .unwrap_or(false);
        if !ok {
            return Err(HelmError::KubeVersion { required: req.to_string(), actual: full });
        }
    }
    let timing = std::env::var_os("ENGINE_HELM_TIMING").is_some();
    let t0 = std::time::Instant::now();
    let lap = |what: &str| {
        if timing {
            eprintln!("engine-helm: {what} at {:?}", t0.elapsed());
        }
    };
    let chart = process_dependencies(chart, &opts.values)?;
    lap("dependencies");
    // A chart that makes keys (Sprig's RSA keys take longer than the rest of a render) has its
    // first keys generated in the background from here, while values, parsing and execution go
    // on.
    struct PoolGuard;
    impl Drop for PoolGuard {
        fn drop(&mut self) {
            crate::funcs::stop_key_pool();
        }
    }
    let _pool = makes_keys(&chart).then(|| {
        crate::funcs::start_key_pool(opts.key_algorithm, crate::chart::KEYS_AHEAD);
        PoolGuard
    });
    let mut values = crate::values::coalesce(&chart, &opts.values)?;
    import_values(&chart, &mut values);
    crate::values::validate_schema(&chart, &values)?;
    lap("values+schema");

    let mut release = Map::new();
    release.insert("Name".into(), Value::str(&opts.release_name));
    release.insert("Namespace".into(), Value::str(&opts.namespace));
    release.insert("IsUpgrade".into(), Value::Bool(opts.is_upgrade));
    release.insert("IsInstall".into(), Value::Bool(!opts.is_upgrade));
    release.insert("Revision".into(), Value::Int(opts.revision));
    release.insert("Service".into(), Value::str("Helm"));
    let release = Value::from(release);
    let mut hv = Map::new();
    hv.insert("Version".into(), Value::str("v4.2.4"));
    hv.insert("GitCommit".into(), Value::str(""));
    hv.insert("GitTreeState".into(), Value::str(""));
    hv.insert("GoVersion".into(), Value::str(""));
    hv.insert("KubeClientVersion".into(), Value::str(format!("v{major}.{minor}")));
    let caps = Value::Object(Rc::new(CapsObj {
        kube_version: Rc::new(KubeVersion { version: full, normalized, major, minor }),
        api_versions: Rc::new(ApiVersions(opts.capabilities.api_versions.clone())),
        helm_version: Value::from(hv),
    }));

    let vals = Value::from_json(&values);
    let mut set = TemplateSet::default();
    let mut tpls = BTreeMap::new();
    let mut sources = Vec::new();
    let globals = Globals { release: &release, caps: &caps };
    collect(&chart, None, &vals, &globals, &mut tpls, &mut sources);
    let mut names: Vec<String> = tpls.keys().cloned().collect();
    sort_templates(&mut names);
    let src_map: BTreeMap<String, String> = sources.into_iter().collect();
    for n in &names {
        set.add(n, &src_map[n])?;
    }
    lap("parse");

    let mut files = BTreeMap::new();
    let mut exec = Exec::new(&set, opts.lookup);
    for n in &names {
        let base = n.rsplit('/').next().unwrap_or(n);
        if base.starts_with('_') {
            continue;
        }
        let r = &tpls[n];
        if let Value::Map(m) = &r.top {
            let mut t = Map::new();
            t.insert("Name".into(), Value::str(n));
            t.insert("BasePath".into(), Value::str(&r.base_path));
            m.borrow_mut().insert("Template".into(), Value::from(t));
        }
        let out = exec.execute(n, r.top.clone())?;
        files.insert(n.clone(), out.replace("<no value>", ""));
    }

    lap("execute");
    // NOTES.txt
    let root_notes = format!("{}/templates/NOTES.txt", chart.name());
    let mut notes = String::new();
    files.retain(|k, v| {
        if k.ends_with("NOTES.txt") {
            if *k == root_notes {
                notes = v.clone();
            }
            return false;
        }
        true
    });

    let mut manifests = Vec::new();
    let mut hooks = Vec::new();
    for (path, content) in &files {
        let base = path.rsplit('/').next().unwrap_or(path);
        if base.starts_with('_') || content.trim().is_empty() {
            continue;
        }
        for doc in split_manifests(content) {
            let head = parse(&doc, Numbers::Native).map_err(|e| HelmError::Manifest {
                path: path.clone(),
                message: format!("error converting YAML to JSON: yaml: {}", e.message),
            })?;
            let sget = |v: Option<Value>| {
                v.and_then(|x| x.as_str().map(str::to_string)).unwrap_or_default()
            };
            let kind = sget(head.get("kind"));
            let api_version = sget(head.get("apiVersion"));
            let meta = head.get("metadata");
            let name = sget(meta.as_ref().and_then(|m| m.get("name")));
            let annotations = meta.as_ref().and_then(|m| m.get("annotations"));
            let ann = |k: &str| -> Option<String> {
                annotations.as_ref().and_then(|a| a.get(k)).map(|v| v.to_go_string())
            };
            match ann("helm.sh/hook") {
                None => manifests.push(Manifest {
                    source: path.clone(),
                    content: doc,
                    api_version,
                    kind,
                    name,
                }),
                Some(h) => {
                    let events: Vec<String> =
                        h.split(',').map(|e| e.trim().to_lowercase()).collect();
                    if events.iter().any(|e| !HOOK_EVENTS.contains(&e.as_str())) {
                        continue;
                    }
                    let weight =
                        ann("helm.sh/hook-weight").and_then(|w| w.trim().parse().ok()).unwrap_or(0);
                    let delete_policies = ann("helm.sh/hook-delete-policy")
                        .map(|p| p.split(',').map(|e| e.trim().to_lowercase()).collect())
                        .unwrap_or_default();
                    hooks.push(Hook {
                        source: path.clone(),
                        content: doc,
                        kind,
                        name,
                        events,
                        weight,
                        delete_policies,
                    });
                }
            }
        }
    }
    lap("split");
    manifests.sort_by(|a, b| kind_less(&a.kind, &b.kind));
    hooks.sort_by(|a, b| kind_less(&a.kind, &b.kind));
    Ok(Rendered { manifests, hooks, notes, files })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_helm() {
        let docs = split_manifests("\n---\na: 1\n---   \nb: 2\n\n--- # c\n---\n");
        assert_eq!(docs, vec!["a: 1\n".to_string(), "b: 2\n\n".to_string(), "# c\n".to_string()]);
    }

    #[test]
    fn template_order() {
        let mut v = vec![
            "c/templates/a.yaml".to_string(),
            "c/templates/b.yaml".into(),
            "c/templates/x/y.yaml".into(),
        ];
        sort_templates(&mut v);
        assert_eq!(v, vec!["c/templates/x/y.yaml", "c/templates/b.yaml", "c/templates/a.yaml"]);
    }
}

#[cfg(test)]
mod lookup_tests {
    use super::*;
    use crate::chart::ChartFile;

    struct Fake;
    impl Lookup for Fake {
        fn lookup(
            &self,
            api: &str,
            kind: &str,
            ns: &str,
            name: &str,
        ) -> Result<Option<Json>, String> {
            if (api, kind, ns, name) == ("v1", "Secret", "kube-system", "ca") {
                return Ok(Some(
                    serde_json::json!({"data": {"tls.crt": "Zm9v"}, "metadata": {"generation": 3}}),
                ));
            }
            Ok(None)
        }
    }

    #[test]
    fn lookup_is_answered_by_the_trait() {
        let files = vec![
            ChartFile { name: "Chart.yaml".into(), data: b"apiVersion: v2\nname: l\nversion: 1.0.0\n".to_vec() },
            ChartFile {
                name: "templates/a.yaml".into(),
                data: b"{{- $s := lookup \"v1\" \"Secret\" \"kube-system\" \"ca\" }}\nkind: ConfigMap\ndata:\n  crt: {{ $s.data | default dict | dig \"tls.crt\" \"none\" }}\n  gen: {{ dig \"metadata\" \"generation\" 0 $s }} {{ typeOf (dig \"metadata\" \"generation\" 0 $s) }}\n  missing: {{ lookup \"v1\" \"Secret\" \"x\" \"y\" | len }}\n".to_vec(),
            },
        ];
        let chart = Chart::from_files(files, "mem").unwrap();
        let r =
            render(&chart, &RenderOptions::new("r", "ns", serde_json::json!({}), &Fake)).unwrap();
        assert!(
            r.manifest_text().contains("crt: Zm9v\n  gen: 3 int64\n  missing: 0\n"),
            "{}",
            r.manifest_text()
        );
        let offline =
            render(&chart, &RenderOptions::new("r", "ns", serde_json::json!({}), &crate::NoLookup))
                .unwrap();
        assert!(offline.manifest_text().contains("crt: none"), "{}", offline.manifest_text());
    }
}
