//! Chart model features compared with `helm template`: subcharts (directory
//! and .tgz), conditions, tags, aliases, import-values, globals, hooks,
//! NOTES.txt, crds/, .helmignore, null removal, --set.

use std::io::Write as _;
use std::path::Path;

use engine_helm::{Chart, NoLookup, RenderOptions, render, values};

use super::common::{Inputs, helm_template, ours};

fn write(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, content).expect("write");
}

fn tgz_of(dir: &Path, name: &str) -> Vec<u8> {
    let mut buf = Vec::new();
    {
        let enc = flate2::write::GzEncoder::new(&mut buf, flate2::Compression::default());
        let mut tar = tar::Builder::new(enc);
        tar.append_dir_all(name, dir).expect("tar");
        tar.into_inner().expect("tar finish").finish().expect("gz finish").flush().expect("flush");
    }
    buf
}

/// Builds the parent chart with three subcharts in a temp dir.
fn build() -> tempfile::TempDir {
    let tmp = tempfile::Builder::new().prefix("engine-helm-model-").tempdir().expect("tempdir");
    let root = tmp.path().join("parent");
    write(
        &root,
        "Chart.yaml",
        r#"apiVersion: v2
name: parent
version: 1.0.0
appVersion: "2.0"
description: parent chart
keywords: [a, b]
maintainers:
  - name: me
    email: me@example.com
annotations:
  category: test
dependencies:
  - name: sub
    version: 0.1.0
    condition: sub.enabled
  - name: sub
    alias: subalias
    version: 0.1.0
    tags: [extra]
  - name: packed
    version: 0.2.0
    condition: packed.enabled,global.packed
    import-values:
      - child: exported
        parent: fromPacked
      - data
  - name: disabled
    version: 0.1.0
    condition: disabled.enabled
"#,
    );
    write(
        &root,
        "values.yaml",
        r#"global:
  region: eu-west-3
  packed: true
parentKey: p
removeMe: gone
nested:
  keep: 1
  drop: 2
tags:
  extra: true
sub:
  enabled: true
  fromParent: overridden
disabled:
  enabled: false
fromPacked:
  local: 1
"#,
    );
    write(&root, ".helmignore", "# ignored\n*.bak\nsecret/\n");
    write(&root, "ignored.bak", "nope");
    write(&root, "secret/x.txt", "nope");
    write(&root, "files/data.txt", "data\n");
    write(
        &root,
        "crds/crd.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: things.example.com\n",
    );
    write(
        &root,
        "templates/configmap.yaml",
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-parent
  annotations:
    files: "{{ range $k, $_ := .Files.Glob "**" }}{{ $k }},{{ end }}"
data:
  values: {{ toJson .Values | quote }}
  chart: {{ toJson .Chart | quote }}
  subcharts: {{ keys .Subcharts | sortAlpha | join "," | quote }}
  subValues: {{ .Subcharts.sub.Values.fromParent | quote }}
"#,
    );
    write(
        &root,
        "templates/hooks.yaml",
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: pre
  annotations:
    "helm.sh/hook": pre-install,pre-upgrade
    "helm.sh/hook-weight": "-5"
    "helm.sh/hook-delete-policy": before-hook-creation
spec: {}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: hook-sa
  annotations:
    "helm.sh/hook": pre-install
---
apiVersion: v1
kind: Pod
metadata:
  name: unknown-hook
  annotations:
    "helm.sh/hook": not-a-hook
---
apiVersion: v1
kind: Secret
metadata:
  name: plain
  annotations:
    other: x
"#,
    );
    write(&root, "templates/NOTES.txt", "Notes for {{ .Release.Name }}\n");
    write(&root, "templates/empty.yaml", "{{- if false }}\nkind: Nothing\n{{- end }}\n");
    write(
        &root,
        "templates/multi.yaml",
        "kind: Service\nmetadata:\n  name: s1\n---\n# only a comment\n---\nkind: Namespace\nmetadata:\n  name: ns\n---\nkind: Zebra\n---\nkind: Aardvark\n",
    );
    // subchart (directory)
    let sub = root.join("charts/sub");
    write(&sub, "Chart.yaml", "apiVersion: v2\nname: sub\nversion: 0.1.0\n");
    write(
        &sub,
        "values.yaml",
        "enabled: false\nfromParent: default\nsubOnly: s\nglobal:\n  region: default\n  subGlobal: g\n",
    );
    write(
        &sub,
        "templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Chart.Name }}-{{ .Release.Name }}\ndata:\n  values: {{ toJson .Values | quote }}\n  template: {{ .Template.Name | quote }}\n  base: {{ .Template.BasePath | quote }}\n  isRoot: {{ .Chart.IsRoot | quote }}\n",
    );
    write(&sub, "templates/_helpers.tpl", "{{- define \"shared\" }}from-sub{{ end }}\n");
    write(&root, "templates/_helpers.tpl", "{{- define \"shared\" }}from-parent{{ end }}\n");
    write(
        &root,
        "templates/uses-shared.yaml",
        "kind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  v: {{ include \"shared\" . }}\n",
    );
    // packed subchart (.tgz)
    let packed_src = tmp.path().join("packed-src");
    write(&packed_src, "Chart.yaml", "apiVersion: v2\nname: packed\nversion: 0.2.0\n");
    write(
        &packed_src,
        "values.yaml",
        "enabled: false\nexported:\n  fromChild: c\nexports:\n  data:\n    exportedData: d\n",
    );
    write(
        &packed_src,
        "templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: packed\ndata:\n  g: {{ toJson .Values.global | quote }}\n",
    );
    let archive = tgz_of(&packed_src, "packed");
    std::fs::write(root.join("charts/packed-0.2.0.tgz"), archive).expect("write tgz");
    // disabled subchart
    let off = root.join("charts/disabled");
    write(&off, "Chart.yaml", "apiVersion: v2\nname: disabled\nversion: 0.1.0\n");
    write(&off, "templates/cm.yaml", "kind: ConfigMap\nmetadata:\n  name: disabled\n");
    tmp
}

fn compare(sets: &[&str], values_yaml: Option<&str>) {
    let tmp = build();
    let root = tmp.path().join("parent");
    let mut inp =
        Inputs { sets: sets.iter().map(|s| s.to_string()).collect(), ..Default::default() };
    if let Some(v) = values_yaml {
        let p = tmp.path().join("user.yaml");
        std::fs::write(&p, v).expect("write");
        inp.values.push(p);
    }
    let h = helm_template(&root, &inp).unwrap_or_else(|e| panic!("helm failed: {e}"));
    let o = ours(&root, &inp).unwrap_or_else(|e| panic!("engine-helm failed: {e}"));
    if h != o {
        let hl: Vec<&str> = h.lines().collect();
        let ol: Vec<&str> = o.lines().collect();
        let first =
            hl.iter().zip(ol.iter()).position(|(a, b)| a != b).unwrap_or(hl.len().min(ol.len()));
        panic!(
            "outputs differ at line {}:\n  helm: {:?}\n  ours: {:?}\n--- helm ---\n{h}\n--- ours ---\n{o}",
            first + 1,
            hl.get(first),
            ol.get(first)
        );
    }
}

#[test]
fn subcharts_hooks_notes_defaults() {
    compare(&[], None);
}

#[test]
fn subcharts_with_user_values_and_sets() {
    compare(
        &[
            "disabled.enabled=true",
            "tags.extra=false",
            "sub.subOnly=null",
            "global.region=us-east-1",
        ],
        Some(
            "removeMe: null\nnested:\n  drop: null\n  add: 3\npacked:\n  enabled: false\nglobal:\n  packed: true\n",
        ),
    );
}

#[test]
fn notes_hooks_and_objects_api() {
    let tmp = build();
    let chart = Chart::load_dir(tmp.path().join("parent")).expect("load");
    assert!(
        chart.files.iter().all(|f| !f.name.ends_with(".bak") && !f.name.starts_with("secret/")),
        ".helmignore not applied"
    );
    assert_eq!(chart.crds().len(), 1);
    let user = values::user_values(&[], &[]).expect("values");
    let r = render(&chart, &RenderOptions::new("rel", "ns", user, &NoLookup)).expect("render");
    assert_eq!(r.notes, "Notes for rel\n");
    assert_eq!(r.hooks.len(), 2, "unknown hook types are dropped");
    let job = r.hooks.iter().find(|h| h.kind == "Job").expect("job hook");
    assert_eq!(job.events, vec!["pre-install", "pre-upgrade"]);
    assert_eq!(job.weight, -5);
    assert_eq!(job.delete_policies, vec!["before-hook-creation"]);
    let objects = r.objects().expect("objects");
    assert!(
        objects
            .iter()
            .any(|o| o.object["kind"] == "Namespace" && o.source == "parent/templates/multi.yaml")
    );
    assert_eq!(objects.first().map(|o| o.object["kind"].clone()), Some("Namespace".into()));
}

#[test]
fn subchart_import_values_and_globals() {
    compare(
        &["packed.enabled=true", "global.extra=x"],
        Some("fromPacked:\n  fromChild: parent-wins\n"),
    );
}
