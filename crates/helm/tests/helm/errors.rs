//! Error cases: our message must equal the one `helm template` prints
//! (file:line[:col] included), and rendering must never panic.

use super::common::{Inputs, helm_template, ours};

struct Case {
    name: &'static str,
    template: &'static str,
    values: &'static str,
    schema: Option<&'static str>,
}

fn chart(c: &Case) -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("engine-helm-err-").tempdir().expect("tempdir");
    let root = dir.path().join("e");
    std::fs::create_dir_all(root.join("templates")).expect("mkdir");
    std::fs::write(root.join("Chart.yaml"), "apiVersion: v2\nname: e\nversion: 0.1.0\n")
        .expect("write");
    std::fs::write(root.join("values.yaml"), c.values).expect("write");
    std::fs::write(
        root.join("templates/_helpers.tpl"),
        "{{- define \"inner\" }}{{ required \"deep required\" .x }}{{ end }}\n",
    )
    .expect("write");
    std::fs::write(root.join("templates/a.yaml"), c.template).expect("write");
    if let Some(s) = c.schema {
        std::fs::write(root.join("values.schema.json"), s).expect("write");
    }
    dir
}

/// helm's stderr without the "Error: " prefix and the debug hint.
fn helm_message(stderr: &str) -> String {
    let s = stderr.trim_start_matches("Error: ");
    let s = s.split("\n\nUse --debug flag").next().unwrap_or(s);
    s.trim_end().to_string()
}

const CASES: &[Case] = &[
    Case {
        name: "missing required value",
        template: "a: 1\nb: {{ required \"foo is required\" .Values.foo }}\n",
        values: "",
        schema: None,
    },
    Case {
        name: "required in a partial",
        template: "a: {{ include \"inner\" (dict) }}\n",
        values: "",
        schema: None,
    },
    Case {
        name: "fail",
        template: "x: {{ if true }}{{ fail \"boom here\" }}{{ end }}\n",
        values: "",
        schema: None,
    },
    Case {
        name: "unclosed if",
        template: "a: 1\nb: {{ if .Values.x }}\n",
        values: "",
        schema: None,
    },
    Case {
        name: "unknown function",
        template: "a: 1\n\nb: {{ nofunc 1 }}\n",
        values: "",
        schema: None,
    },
    Case {
        name: "missing partial",
        template: "a: 1\nb: {{ include \"nope\" . }}\n",
        values: "",
        schema: None,
    },
    Case { name: "nil pointer", template: "a: {{ .Values.a.b.c }}\n", values: "", schema: None },
    Case { name: "invalid YAML output", template: "a: b: c\n", values: "", schema: None },
    Case {
        name: "schema violation",
        template: "a: {{ .Values.replicas }}\n",
        values: "replicas: 0\n",
        schema: Some(
            r#"{"type":"object","properties":{"replicas":{"type":"integer","minimum":1},"name":{"type":"string"}},"required":["name"]}"#,
        ),
    },
    Case {
        name: "schema type violation",
        template: "a: {{ .Values.enabled }}\n",
        values: "enabled: \"yes\"\n",
        schema: Some(r#"{"type":"object","properties":{"enabled":{"type":"boolean"}}}"#),
    },
];

#[test]
fn error_messages_match_helm() {
    let mut failures = Vec::new();
    for c in CASES {
        let dir = chart(c);
        let root = dir.path().join("e");
        let inp = Inputs::default();
        let h = helm_template(&root, &inp).expect_err(c.name);
        let o = std::panic::catch_unwind(|| ours(&root, &inp))
            .unwrap_or_else(|_| panic!("{}: engine-helm panicked", c.name))
            .expect_err(c.name);
        let expected = helm_message(&h);
        if expected != o {
            failures.push(format!("{}:\n  helm: {expected:?}\n  ours: {o:?}", c.name));
        }
        assert!(
            o.contains("e/templates/a.yaml") || o.contains("schema"),
            "{}: no file location in {o:?}",
            c.name
        );
    }
    assert!(
        failures.is_empty(),
        "{} error messages differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn runaway_recursion_is_an_error() {
    for (template, expected) in [
        (
            "{{- define \"r\" }}{{ include \"r\" . }}{{ end }}a: {{ include \"r\" . }}\n",
            "rendering template has a nested reference name: r",
        ),
        (
            "{{- define \"t\" }}{{ template \"t\" . }}{{ end }}a: {{ template \"t\" . }}\n",
            "exceeded maximum template depth",
        ),
    ] {
        let c = Case { name: "recursion", template, values: "", schema: None };
        let dir = chart(&c);
        let root = dir.path().join("e");
        helm_template(&root, &Inputs::default()).expect_err("helm fails too");
        let err = ours(&root, &Inputs::default()).expect_err("recursion must fail");
        assert!(
            err.contains(expected),
            "unexpected error: {}",
            &err[err.len().saturating_sub(300)..]
        );
    }
}
