//! Go `text/template`: parser and executor.

mod exec;
mod parse;

use std::collections::HashMap;
use std::rc::Rc;

pub use exec::{Exec, FnError};
pub use parse::{Tree, parse};

/// A template parse or execution error, formatted like Helm's.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum TemplateError {
    /// Syntax error.
    #[error("parse error at ({location}): {message}")]
    Parse {
        /// `file:line`.
        location: String,
        /// What is wrong.
        message: String,
    },
    /// `fail` / `required` (Helm's wrapped errors).
    #[error("execution error at ({location}): {message}")]
    Fail {
        /// `file:line:col` of the outermost call.
        location: String,
        /// The user message.
        message: String,
    },
    /// Any other execution error.
    #[error("{location}\n  executing \"{name}\" at <{node}>:\n    {message}")]
    Exec {
        /// `file:line:col`.
        location: String,
        /// Template being executed.
        name: String,
        /// The command being evaluated.
        node: String,
        /// What went wrong.
        message: String,
    },
    /// A template name that does not exist.
    #[error("template: no template {name:?} associated with template \"gotpl\"")]
    NoTemplate {
        /// The missing name.
        name: String,
    },
}

/// A set of named templates (files and `define`s).
#[derive(Default, Clone)]
pub struct TemplateSet {
    /// Templates by name.
    pub templates: HashMap<String, Rc<Tree>>,
}

impl TemplateSet {
    /// Parses `src` as template `name`, adding it and its defines.
    pub fn add(&mut self, name: &str, src: &str) -> Result<(), TemplateError> {
        let (tree, defines) = parse(name, src, &|_| false)?;
        self.templates.insert(name.to_string(), tree);
        for (k, v) in defines {
            self.templates.insert(k, v);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lookup::NoLookup;
    use crate::value::{Map, Value};

    fn run(src: &str, dot: Value) -> Result<String, TemplateError> {
        let mut set = TemplateSet::default();
        set.add("t", src)?;
        let mut e = Exec::new(&set, &NoLookup);
        e.execute("t", dot)
    }

    fn data() -> Value {
        crate::yaml::parse(
            "m: {b: 2, a: 1}\nl: [x, w, z]\ns: str\nn: null\nz: 0\n",
            crate::yaml::Numbers::Float,
        )
        .unwrap()
    }

    #[test]
    fn functions_that_multiply_their_input_are_bounded() {
        for src in [
            "{{ repeat 100000000 \"abcdefgh\" }}",
            "{{ randBytes 1000000000 }}",
            "{{ randAlphaNum 1000000000 }}",
            "{{ len (until 100000000) }}",
            "{{ len (untilStep 0 100000000 1) }}",
        ] {
            let err = run(src, Value::Nil).unwrap_err().to_string();
            assert!(err.contains("would exceed"), "{src}: {err}");
        }
        assert_eq!(run("{{ repeat 3 \"ab\" }}", Value::Nil).unwrap(), "ababab");
        assert_eq!(run("{{ len (until 5) }}", Value::Nil).unwrap(), "5");
    }

    #[test]
    fn a_renders_output_and_steps_are_bounded() {
        // 2^20 iterations of 128 bytes: 128 MiB of output from bounded functions.
        let wide = "{{ range until 1048576 }}{{ repeat 128 \"x\" }}{{ end }}";
        let err = run(wide, Value::Nil).unwrap_err().to_string();
        assert!(err.contains("template output exceeds 64 MiB"), "{err}");
        // Loops that write nothing: 2^40 iterations stop at the step bound.
        let deep = "{{ range until 1048576 }}{{ range until 1048576 }}{{ end }}{{ end }}";
        let err = run(deep, Value::Nil).unwrap_err().to_string();
        assert!(err.contains("exceeds 50000000 steps"), "{err}");
        // `include` output counts too.
        let nested = "{{ define \"d\" }}{{ repeat 1000000 \"y\" }}{{ end }}{{ range until 100 }}{{ $x := include \"d\" . }}{{ end }}";
        let err = run(nested, Value::Nil).unwrap_err().to_string();
        assert!(err.contains("template output exceeds"), "{err}");
    }

    #[test]
    fn actions_and_control_flow() {
        let cases = [
            ("{{ range $k, $v := .m }}{{ $k }}={{ $v }} {{ end }}", "a=1 b=2 "),
            (
                "{{ range $i, $e := .l }}{{ if eq $e \"w\" }}{{ continue }}{{ end }}{{ $i }}{{ $e }}{{ end }}",
                "0x2z",
            ),
            ("{{ range .l }}{{ if eq . \"w\" }}{{ break }}{{ end }}{{ . }}{{ end }}", "x"),
            ("{{ range .missing }}a{{ else }}empty{{ end }}", "empty"),
            ("{{ $x := 1 }}{{ with .m }}{{ $x = .a }}{{ end }}{{ $x }}", "1"),
            ("{{ if .n }}a{{ else if .z }}b{{ else }}c{{ end }}", "c"),
            ("{{ with .missing }}a{{ else with .s }}{{ . }}{{ end }}", "str"),
            ("a {{- 1 -}} b", "a1b"),
            ("{{/* c */}}x{{- /* c */ -}} y", "xy"),
            ("{{ .missing }}|{{ .m.zz }}", "<no value>|<no value>"),
            ("{{ and .missing .missing.deeper }}", "<no value>"),
            ("{{ or .s .missing.deeper }}", "str"),
            ("{{ define \"d\" }}[{{ . }}]{{ end }}{{ template \"d\" .s }}", "[str]"),
            ("{{ block \"b\" .s }}<{{ . }}>{{ end }}", "<str>"),
            ("{{ $m := .m }}{{ $_ := set $m \"c\" 3 }}{{ .m.c }}", "3"),
            ("{{ (.m).a }} {{ $.s }}", "1 str"),
            (
                "{{ 3 }} {{ 2.5 }} {{ 0x10 }} {{ 'a' }} {{ \"q\\\"\" }} {{ `r` }}",
                "3 2.5 16 97 q\" r",
            ),
        ];
        for (src, want) in cases {
            assert_eq!(run(src, data()).unwrap(), want, "template {src}");
        }
    }

    #[test]
    fn nil_pointer_in_chain_is_an_error() {
        let e = run("x\n{{ .missing.deeper }}", data()).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("t:2:") && msg.contains("nil pointer evaluating interface {}.deeper"),
            "{msg}"
        );
    }

    #[test]
    fn parse_errors_name_the_line() {
        for (src, want) in [
            ("a\n{{ if true }}", "parse error at (t:2): unexpected EOF"),
            ("{{ nofunc }}", "parse error at (t:1): function \"nofunc\" not defined"),
            ("\n\n{{ $x }}", "parse error at (t:3): undefined variable \"$x\""),
            ("{{ end }}", "parse error at (t:1): unexpected {{end}}"),
            ("{{ break }}", "parse error at (t:1): {{break}} outside {{range}}"),
        ] {
            let e = run(src, Value::Nil).unwrap_err();
            assert_eq!(e.to_string(), want, "template {src:?}");
        }
    }

    #[test]
    fn fail_and_required_report_location() {
        let e = run("a\n  {{ required \"need x\" .x }}", Value::from(Map::new())).unwrap_err();
        assert_eq!(e.to_string(), "execution error at (t:2:5): need x");
        let e = run("{{ fail \"stop\" }}", Value::Nil).unwrap_err();
        assert_eq!(e.to_string(), "execution error at (t:1:3): stop");
    }

    #[test]
    fn tpl_sees_its_own_defines_and_include() {
        let out = run(
            "{{ define \"outer\" }}O{{ end }}{{ tpl \"{{ define \\\"in\\\" }}I{{ end }}{{ include \\\"in\\\" . }}{{ include \\\"outer\\\" . }}\" . }}",
            Value::Nil,
        )
        .unwrap();
        assert_eq!(out, "IO");
    }
}
