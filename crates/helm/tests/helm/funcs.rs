//! Table-driven tests of template constructs and functions. Each case is
//! one template of a generated chart; the expected output is produced by
//! the reference `helm template` in the same run.

use std::collections::BTreeMap;

use super::common::{Inputs, helm_template, ours, split_stream, temp_chart};

const VALUES: &str = r#"
str: hello world
upper: HELLO
int: 42
neg: -7
float: 1.5
big: 1000000
small: 0.00001
zero: 0
bool: true
falsy: false
nullv: null
empty: ""
list: [a, b, c]
nums: [3, 1, 2]
mixed: [1, "two", 3.5, true, null]
map:
  b: 2
  a: 1
  c: {d: e}
nested:
  a:
    b:
      c: deep
yes: yes
date: 2024-01-02
version: v1.2.3-rc.1+build5
text: |
  line one
  line two
long: "this is a very long string value that should be folded by the yaml emitter because it is long"
special: "a: b # c"
tabbed: "a\tb"
quoted: "'single' and \"double\""
ip: 10.0.0.1
keys:
  a10: 1
  a2: 2
  B: 3
  _x: 4
  "on": 5
"#;

/// Renders every case with helm and with this crate, compares outputs.
fn check(group: &str, cases: &[&str]) {
    let templates: Vec<(String, String)> = cases
        .iter()
        .enumerate()
        .map(|(i, body)| {
            (
                format!("c{i:03}.yaml"),
                format!("{{{{- define \"case{i}\" }}}}{body}{{{{ end -}}}}\nv: |2+\n{{{{ include \"case{i}\" . | indent 2 }}}}\n"),
            )
        })
        .chain([
            ("_helpers.tpl".to_string(), "{{- define \"helper\" }}helper:{{ . }}{{ end }}\n{{- define \"dict.helper\" }}{{ .a }}-{{ .b }}{{ end }}".to_string()),
        ])
        .collect();
    let dir = temp_chart("t", VALUES, &templates);
    let root = dir.path().join("t");
    std::fs::create_dir_all(root.join("files/conf")).expect("mkdir");
    std::fs::write(root.join("files/a.txt"), "alpha\nbeta\n").expect("write");
    std::fs::write(root.join("files/conf/b.yaml"), "key: value\n").expect("write");
    std::fs::write(root.join("files/conf/c.yaml"), "other: 1\n").expect("write");
    let inp = Inputs { sets: vec!["setint=5".into(), "setstr=abc".into()], ..Default::default() };
    let reference = helm_template(&root, &inp)
        .unwrap_or_else(|e| panic!("helm template failed for {group}: {e}"));
    let mine = ours(&root, &inp).unwrap_or_else(|e| panic!("engine-helm failed for {group}: {e}"));
    let a: BTreeMap<String, String> = split_stream(&reference).into_iter().collect();
    let b: BTreeMap<String, String> = split_stream(&mine).into_iter().collect();
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let key = format!("t/templates/c{i:03}.yaml");
        let exp = a.get(&key).unwrap_or_else(|| panic!("helm produced no output for case {case}"));
        let got = b.get(&key).cloned().unwrap_or_default();
        if *exp != got {
            failures.push(format!("case {case:?}\n  helm: {exp:?}\n  ours: {got:?}"));
        }
    }
    assert!(a.len() == b.len(), "{group}: different number of documents");
    assert!(
        failures.is_empty(),
        "{group}: {} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    eprintln!("{group}: {} cases identical to helm", cases.len());
}

#[test]
fn template_constructs() {
    check(
        "constructs",
        &[
            "{{ .Values.str }}",
            "{{ .Values.missing }}",
            "[{{ .Values.nullv }}]",
            "{{ .Values.int }} {{ .Values.neg }} {{ .Values.float }} {{ .Values.big }} {{ .Values.small }}",
            "{{ .Values.list }} {{ .Values.map }} {{ .Values.mixed }}",
            "{{ .Values.bool }} {{ .Values.yes }} {{ .Values.date }}",
            "{{ .Values.setint }} {{ .Values.setstr }} {{ typeOf .Values.setint }} {{ typeOf .Values.int }}",
            "{{ if .Values.bool }}T{{ else }}F{{ end }}",
            "{{ if .Values.missing }}A{{ else if .Values.empty }}B{{ else if .Values.str }}C{{ else }}D{{ end }}",
            "{{ with .Values.map }}{{ .a }}{{ end }}{{ with .Values.missing }}x{{ else }}none{{ end }}",
            "{{ range $i, $v := .Values.list }}{{ $i }}={{ $v }};{{ end }}",
            "{{ range $k, $v := .Values.map }}{{ $k }}:{{ $v }},{{ end }}",
            "{{ range .Values.list }}{{ . }}{{ $.Values.int }}{{ end }}",
            "{{ range .Values.missing }}x{{ else }}empty{{ end }}",
            "{{ range $i, $v := .Values.list }}{{ if eq $v \"b\" }}{{ continue }}{{ end }}{{ if eq $v \"c\" }}{{ break }}{{ end }}{{ $v }}{{ end }}",
            "{{ range 3 }}{{ . }}{{ end }}",
            "{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ $y := 3 }}{{ end }}{{ $x }}",
            "a  {{- \" b \" -}}  c",
            "x{{/* comment */}}y {{- /* trimmed */ -}} z",
            "{{ and 1 0 }} {{ and 1 2 }} {{ or 0 \"\" }} {{ or 0 \"x\" }} {{ not .Values.empty }}",
            "{{ and .Values.missing .Values.missing.foo }}{{ or .Values.str .Values.missing.foo }}",
            "{{ eq 1 1 }} {{ eq \"a\" \"b\" \"a\" }} {{ ne 1 2 }} {{ lt 1 2 }} {{ le 2 2 }} {{ gt \"b\" \"a\" }} {{ ge 1.5 1.5 }}",
            "{{ eq .Values.int 42.0 }} {{ eq .Values.missing \"x\" }} {{ eq .Values.setint 5 }}",
            "{{ len .Values.list }} {{ len .Values.map }} {{ len .Values.str }}",
            "{{ index .Values.list 1 }} {{ index .Values.map \"a\" }} {{ index .Values.nested \"a\" \"b\" \"c\" }} [{{ index .Values.map \"zz\" }}]",
            "{{ print 1 2 \"a\" 3 }}|{{ print \"a\" \"b\" }}|{{ println \"x\" 1 }}",
            "{{ printf \"%s-%d-%v-%q-%t\" \"s\" 7 .Values.list \"q\" true }}",
            "{{ printf \"%5s|%-5s|%05d|%x|%X|%o|%.2f|%8.3f|%e|%g\" \"a\" \"b\" 42 255 255 8 3.14159 2.5 123456.789 0.000012 }}",
            "{{ printf \"%v %v %v %v\" .Values.int .Values.big .Values.nullv .Values.map }}",
            "{{ printf \"%d %s\" \"x\" 5 }}|{{ printf \"%s\" }}|{{ printf \"%s\" 1 2 }}",
            "{{ html \"<a href='x'>&</a>\" }} {{ js \"it's <b>\" }} {{ urlquery \"a b&c=d\" }}",
            "{{ template \"helper\" \"T\" }} {{ include \"helper\" 5 }}",
            "{{ include \"dict.helper\" (dict \"a\" 1 \"b\" \"two\") }}",
            "{{ block \"blk\" .Values.str }}block:{{ . }}{{ end }}",
            "{{ .Chart.Name }} {{ .Chart.Version }} {{ .Chart.AppVersion }} {{ .Chart.IsRoot }} {{ .Chart.APIVersion }}",
            "{{ .Release.Name }} {{ .Release.Namespace }} {{ .Release.Service }} {{ .Release.IsInstall }} {{ .Release.IsUpgrade }} {{ .Release.Revision }}",
            "{{ .Template.Name }} {{ .Template.BasePath }}",
            "{{ .Capabilities.KubeVersion }} {{ .Capabilities.KubeVersion.Version }} {{ .Capabilities.KubeVersion.Major }}.{{ .Capabilities.KubeVersion.Minor }} {{ .Capabilities.KubeVersion.GitVersion }}",
            "{{ .Capabilities.APIVersions.Has \"apps/v1\" }} {{ .Capabilities.APIVersions.Has \"foo/v9\" }}",
            "{{ .Files.Get \"files/a.txt\" }}|{{ .Files.Get \"nope\" }}|{{ .Files.Lines \"files/a.txt\" }}",
            "{{ (.Files.Glob \"files/conf/*.yaml\").AsConfig }}",
            "{{ (.Files.Glob \"files/**\").AsSecrets }}",
            "{{ range $p, $_ := .Files.Glob \"files/conf/*\" }}{{ $p }};{{ end }}",
            "{{ $d := dict \"k\" \"v\" }}{{ $_ := set $d \"n\" 1 }}{{ $d }}",
            "{{ $_ := set . \"shared\" \"s\" }}{{ .shared }}",
            "{{ (list 1 2 3) | len }} {{ \"abc\" | upper | repeat 2 }}",
            "{{ \"x\" | printf \"%s-%s\" \"y\" }}",
            "{{ 0x1F }} {{ 1e3 }} {{ 'a' }} {{ -5 }} {{ 010 }} {{ 1_000 }}",
            "{{ `raw\\n` }} {{ \"esc\\t\\u00e9\" }}",
            "{{ $.Values.str }} {{ $.Chart.Annotations }}",
        ],
    );
}

#[test]
fn sprig_strings() {
    check(
        "strings",
        &[
            "{{ trim \"  a b  \" }}|{{ trimAll \"$\" \"$$x$\" }}|{{ trimPrefix \"he\" .Values.str }}|{{ trimSuffix \"ld\" .Values.str }}",
            "{{ upper .Values.str }} {{ lower .Values.upper }} {{ title .Values.str }} {{ untitle \"Hello World\" }}",
            "{{ repeat 3 \"ab\" }} {{ substr 1 4 .Values.str }} {{ substr 6 -1 .Values.str }} {{ nospace \"a b\\tc\" }}",
            "{{ trunc 5 .Values.str }} {{ trunc -3 .Values.str }} {{ trunc 63 \"short\" }}",
            "{{ abbrev 8 .Values.str }} {{ initials \"Hello big World\" }}",
            "{{ wrap 5 \"aaa bbb ccc ddd\" }}|{{ wrapWith 5 \"<br>\" \"aaa bbb ccc\" }}",
            "{{ contains \"wor\" .Values.str }} {{ hasPrefix \"hel\" .Values.str }} {{ hasSuffix \"x\" .Values.str }}",
            "{{ quote .Values.str 1 .Values.missing true }} {{ squote \"a\" 2 }} {{ cat \"a\" 1 .Values.missing \"b\" }}",
            "{{ quote .Values.quoted }} {{ quote .Values.tabbed }} {{ quote \"é\\u2028\" }}",
            "{{ indent 4 .Values.text }}|{{ nindent 2 \"a\\nb\" }}",
            "{{ replace \" \" \"-\" .Values.str }} {{ replace \"\" \"|\" \"ab\" }}",
            "{{ plural \"one\" \"many\" 1 }} {{ plural \"one\" \"many\" 2 }}",
            "{{ snakecase \"FirstName\" }} {{ camelcase \"http_server\" }} {{ kebabcase \"FirstName\" }} {{ swapcase \"Hello\" }}",
            "{{ toString 5 }} {{ toString .Values.float }} {{ toString .Values.nullv }} {{ toString .Values.list }} {{ toStrings (list 1 \"a\" 2.5) }}",
            "{{ join \",\" .Values.list }} {{ join \"-\" (list 1 .Values.nullv 2) }} {{ join \",\" \"single\" }}",
            "{{ sortAlpha (list \"b\" \"C\" \"a\") }} {{ split \"/\" \"a/b/c\" }} {{ (split \"/\" \"a/b\")._1 }}",
            "{{ splitList \",\" \"a,b,,c\" }} {{ splitn \":\" 2 \"a:b:c\" }}",
            "{{ sha1sum \"x\" }} {{ sha256sum \"x\" }} {{ adler32sum \"x\" }}",
            "{{ sha512sum \"x\" }}",
            "{{ b64enc .Values.str }} {{ b64dec \"aGVsbG8=\" }} {{ b32enc \"hi\" }} {{ b32dec \"NBUQ====\" }}",
            "{{ regexMatch \"^h.*d$\" .Values.str }} {{ regexFind \"[a-z]+\" \"12abc34\" }} {{ regexFindAll \"[0-9]\" \"a1b2c3\" 2 }}",
            "{{ regexReplaceAll \"(o)\" .Values.str \"[${1}]\" }} {{ regexReplaceAllLiteral \"o\" .Values.str \"$1\" }} {{ regexSplit \"[,;]\" \"a,b;c\" -1 }}",
            "{{ regexQuoteMeta \"a.b*c\" }}",
            "{{ base \"/a/b/c.txt\" }} {{ dir \"/a/b/c.txt\" }} {{ ext \"c.tar.gz\" }} {{ clean \"a//b/../c/\" }} {{ isAbs \"/x\" }}",
            "{{ print (toYaml .Values.text) }}|{{ .Values.long | toYaml }}",
            "{{ printf \"%s\" .Values.special | toYaml }} {{ toYaml .Values.ip }} {{ toYaml \"true\" }} {{ toYaml \"\" }} {{ toYaml \"0755\" }}",
        ],
    );
}

#[test]
fn sprig_data() {
    check(
        "data",
        &[
            "{{ list 1 \"a\" .Values.nullv }} {{ tuple 1 2 }} {{ append .Values.list \"d\" }} {{ prepend .Values.list \"z\" }}",
            "{{ first .Values.list }} {{ rest .Values.list }} {{ last .Values.list }} {{ initial .Values.list }} {{ reverse .Values.list }}",
            "{{ uniq (list 1 1 2 \"a\" \"a\") }} {{ without .Values.list \"b\" }} {{ has \"b\" .Values.list }} {{ has 4 .Values.nums }}",
            "{{ slice .Values.list 1 }} {{ slice .Values.list 0 2 }} {{ concat .Values.list .Values.nums }} {{ compact (list 0 1 \"\" \"a\" .Values.nullv) }}",
            "{{ chunk 2 (list 1 2 3 4 5) }} {{ until 3 }} {{ untilStep 0 10 3 }} {{ seq 3 }} {{ seq 2 5 }}",
            "{{ dict \"b\" 1 \"a\" 2 }} {{ dict \"odd\" }} {{ get .Values.map \"a\" }} [{{ get .Values.map \"zz\" }}] {{ hasKey .Values.map \"a\" }}",
            "{{ keys .Values.map | sortAlpha }} {{ pick .Values.map \"a\" \"c\" }} {{ omit .Values.map \"a\" }} {{ values (dict \"x\" 1) }}",
            "{{ pluck \"a\" (dict \"a\" 1) (dict \"b\" 2) (dict \"a\" 3) }}",
            "{{ $d := dict \"a\" 1 }}{{ $_ := unset $d \"a\" }}{{ $d }} {{ $e := dict \"x\" (dict \"y\" 1) }}{{ $c := deepCopy $e }}{{ $_ := set $c.x \"y\" 2 }}{{ $e }} {{ $c }}",
            "{{ dig \"nested\" \"a\" \"b\" \"c\" \"dflt\" .Values.AsMap }} {{ dig \"nested\" \"zz\" \"dflt\" .Values.AsMap }}",
            "{{ $a := dict \"x\" 1 \"n\" (dict \"p\" 1) }}{{ $b := dict \"x\" 2 \"y\" 3 \"n\" (dict \"q\" 2) }}{{ merge $a $b }}",
            "{{ $a := dict \"x\" 1 \"n\" (dict \"p\" 1) }}{{ $b := dict \"x\" 2 \"y\" 3 \"n\" (dict \"p\" 5) }}{{ mergeOverwrite $a $b }}",
            "{{ default \"d\" .Values.missing }} {{ default \"d\" .Values.empty }} {{ default \"d\" .Values.zero }} {{ default \"d\" .Values.str }} {{ default 5 false }}",
            "{{ empty .Values.list }} {{ empty (list) }} {{ empty dict }} {{ empty 0 }} {{ empty \"\" }} {{ empty .Values.missing }}",
            "{{ coalesce .Values.missing \"\" 0 \"x\" }} {{ all 1 \"a\" }} {{ all 1 0 }} {{ any 0 \"\" 1 }}",
            "{{ ternary \"y\" \"n\" true }} {{ ternary \"y\" \"n\" false }}",
            "{{ typeOf 1 }} {{ typeOf 1.5 }} {{ typeOf \"s\" }} {{ typeOf .Values.list }} {{ typeOf .Values.map }} {{ typeOf .Values.nullv }} {{ typeOf (int64 1) }}",
            "{{ kindOf 1 }} {{ kindOf .Values.float }} {{ kindOf .Values.list }} {{ kindOf .Values.map }} {{ kindOf \"x\" }} {{ kindOf true }}",
            "{{ kindIs \"map\" .Values.map }} {{ kindIs \"string\" 1 }} {{ typeIs \"int\" 1 }} {{ deepEqual (list 1 2) (list 1 2) }}",
            "{{ toJson .Values.map }} {{ toJson .Values.mixed }} {{ toJson \"<&>\" }} {{ toRawJson \"<&>\" }}",
            "{{ toPrettyJson .Values.map }}",
            "{{ toJson .Values.big }} {{ toJson .Values.small }} {{ toJson .Values.float }} {{ toJson 3 }}",
            "{{ (fromJson \"{\\\"a\\\": [1, 2.5, {\\\"b\\\": null}]}\") }} {{ fromJsonArray \"[1, \\\"x\\\"]\" }} {{ (fromJson \"bad\").Error }}",
            "{{ $y := fromYaml \"a: 1\\nb: [x, y]\\nc: {d: e}\\n\" }}{{ $y }} {{ typeOf $y.a }} {{ fromYamlArray \"- 1\\n- b\" }} {{ fromYaml \"- x\" }}",
            "{{ toYaml .Values.map }}",
            "{{ toYaml .Values.keys }}",
            "{{ toYaml .Values.mixed }}",
            "{{ toYaml .Values.nested | nindent 2 }}",
            "{{ toYaml (dict \"text\" .Values.text \"long\" .Values.long \"sp\" .Values.special \"t\" .Values.tabbed \"q\" .Values.quoted \"e\" \"\" \"n\" .Values.nullv) }}",
            "{{ toYaml (list (list 1 2) (dict) (list) (dict \"a\" (list (dict \"b\" 1)))) }}",
            "{{ toYaml (dict \"lead\" \" x\" \"trail\" \"x \" \"colon\" \"a:\" \"dash\" \"- a\" \"star\" \"*x\" \"num\" \"123\" \"float\" \"1.5\" \"b\" \"y\" \"tilde\" \"~\") }}",
            "{{ toYaml (dict \"ml\" \"a\\n\\nb\\n\" \"mlsp\" \" a\\nb\" \"mltrail\" \"a \\nb\" \"k: v\" 1 \"\" 2) }}",
            "{{ toToml (dict \"a\" 1 \"b\" \"x\" \"t\" (dict \"c\" true)) }}",
            "{{ int \"42\" }} {{ int 3.9 }} {{ int64 \"7\" }} {{ float64 \"1.25\" }} {{ atoi \"12\" }} {{ int \"abc\" }} {{ int .Values.missing }}",
            "{{ add 1 2 3 }} {{ add1 5 }} {{ sub 10 3 }} {{ mul 2 3 4 }} {{ div 10 3 }} {{ mod 10 3 }} {{ max 1 5 3 }} {{ min 4 2 8 }}",
            "{{ add .Values.float 1 }} {{ mul .Values.int 2 }} {{ addf 1.5 2 }} {{ subf 5 1.5 }} {{ mulf 1.5 2 }} {{ divf 5 2 }}",
            "{{ floor 1.7 }} {{ ceil 1.2 }} {{ round 1.2345 2 }} {{ maxf 1 2.5 }} {{ minf 1 2.5 }}",
            "{{ semverCompare \">=1.16-0\" \"1.30.2\" }} {{ semverCompare \">=1.16-0, <1.19-0\" \"v1.20.0\" }} {{ semverCompare \"^1.2\" \"1.9.9\" }} {{ semverCompare \"~1.2.3\" \"1.3.0\" }}",
            "{{ semverCompare \">=1.16-0\" .Capabilities.KubeVersion.Version }} {{ semverCompare \"<1.16\" .Capabilities.KubeVersion.GitVersion }}",
            "{{ (semver .Values.version).Major }} {{ (semver .Values.version).Minor }} {{ (semver .Values.version).Patch }} {{ (semver .Values.version).Prerelease }} {{ (semver .Values.version).Metadata }} {{ semver \"1.2\" }}",
            "{{ tpl \"{{ .Values.str }}-{{ .x }}\" (dict \"Values\" .Values \"x\" 1) }} {{ tpl \"{{ define \\\"inner\\\" }}I{{ end }}{{ include \\\"inner\\\" . }}\" . }}",
            "{{ required \"needed\" .Values.str }} {{ lookup \"v1\" \"Secret\" \"ns\" \"name\" }} {{ getHostByName \"example.com\" }}",
            "{{ $u := urlParse \"https://user@host:8080/p/a?q=1#f\" }}{{ $u.scheme }} {{ $u.host }} {{ $u.path }} {{ $u.query }} {{ $u.fragment }} {{ $u.userinfo }} {{ urlJoin $u }}",
            "{{ duration 3700 }} {{ dateModify \"0s\" (toDate \"2006-01-02\" \"2024-03-05\") | date \"2006-01-02\" }} {{ toDate \"2006-01-02\" \"2024-03-05\" | date \"Jan 2, 2006\" }}",
            "{{ $n := now }}{{ ne $n ($n | dateModify \"0s\") }} {{ ne $n ($n | dateModify \"1h\") }} {{ kindOf $n }}",
            "{{ len (randAlphaNum 12) }} {{ len (randNumeric 4) }} {{ len uuidv4 }} {{ kindOf (genCA \"x\" 1) }} {{ regexMatch \"^-----BEGIN RSA PRIVATE KEY-----\" (genCA \"x\" 1).Key }}",
        ],
    );
}

#[test]
fn common_chart_idioms() {
    check(
        "idioms",
        &[
            "{{- range $key, $val := .Values.map }}\n- name: {{ $key }}\n  value: {{ $val | quote }}\n{{- end }}",
            "{{ .Values.missing | default \"\" | quote }} {{ .Values.str | default \"x\" | upper | quote }}",
            "{{ tpl (toYaml .Values.nested) . }}",
            "{{ (include \"dict.helper\" (dict \"a\" \"k: v\" \"b\" 2) | fromYaml) }}",
            "{{- with .Values.map }}\nspec:\n  {{- toYaml . | nindent 2 }}\n{{- end }}",
            "{{ printf \"%s-%s\" .Release.Name .Chart.Name | trunc 63 | trimSuffix \"-\" }}",
            "{{ now | date \"2006\" | len }} {{ ternary \"a\" \"b\" (eq .Values.str \"hello world\") }}",
            "{{ regexReplaceAll \"[^a-z]\" \"AbC-dE\" \"\" }} {{ list \"a\" \"b\" | toJson }} {{ printf \"%03d\" 7 }}",
            "{{ float64 \"3.0\" | toString }} {{ 5 | toString }} {{ div 7 2 }} {{ add 1.9 1.9 }} {{ mulf 1.1 3 }} {{ round 2.675 2 }}",
            "{{ semver \"1.2.3-beta.1\" | toString }} {{ (semver \"v2.0.0\").Original }}",
            "{{ .Values.list | join \", \" }} {{ .Values.nums | sortAlpha }} {{ .Values.mixed | toStrings }}",
            "{{ $x := dict }}{{ range $i, $e := .Values.list }}{{ $_ := set $x $e $i }}{{ end }}{{ toJson $x }}",
            "{{ $l := list }}{{ range .Values.list }}{{ $l = append $l (upper .) }}{{ end }}{{ $l }}",
            "{{ if and .Values.bool (not .Values.falsy) (or .Values.missing .Values.int) }}yes{{ end }}",
            "{{ if (hasKey .Values \"map\") }}{{ get .Values.map \"a\" }}{{ end }} {{ .Values | keys | sortAlpha | first }}",
            "{{ toYaml (list \"a: b\" \"- c\" \"#d\" \"e #f\" \"@g\" \"`h\" \"!i\" \"%j\" \"&k\" \"*l\" \"|m\" \">n\" \"?o\" \"{p\" \"[q\" \"'r\" \"\\\"s\" \"t:\" \"u: \" \" v\" \"w \") }}",
            "{{ toYaml (list \"null\" \"Null\" \"~\" \"yes\" \"No\" \"on\" \"OFF\" \"1e3\" \"0x1F\" \"0o17\" \"017\" \"+1\" \"-.5\" \".inf\" \"1_000\" \"1:20\" \"2024-01-02\" \"2024-1-2\" \"12:30:00\" \"<<\" \"=\" \"-\" \"--\" \"---\" \"...\") }}",
            "{{ toYaml (dict \"uni\" \"héllo wörld ☃\" \"ctl\" \"a\\u0007b\" \"nbsp\" \"a\\u00a0b\" \"emoji\" \"🙂\") }}",
            "{{ toYaml (dict \"wrapme\" \"aaaaaaaaa bbbbbbbbb ccccccccc ddddddddd eeeeeeeee fffffffff ggggggggg hhhhhhhhh iiiiiiiii jjjjjjjjj\" \"nested\" (dict \"deeper\" (list \"aaaaaaaaa bbbbbbbbb ccccccccc ddddddddd eeeeeeeee fffffffff ggggggggg hhhhhhhhh iiiiiiiii\"))) }}",
            "{{ toYaml (dict \"q\" \"it's a 'quote' with a very long text that goes past the eighty column limit: yes it does\") }}",
            "{{ toYaml (dict \"dq\" \"tab\\there and a very long text that goes past the eighty column limit for sure, yes\") }}",
            "{{ toYaml (list 1.0 2.5 1e21 1e-7 100000000 0.1 -0.0 12345678901234567) }}",
            "{{ addf 0.1 0.2 }} {{ subf 1 0.9 }} {{ divf 1 3 }} {{ divf 10 4 }} {{ mulf 0.1 0.2 }} {{ add1f 0.2 }} {{ divf 2 3 7 }}",
            "{{ quote \"héllo\" }} {{ squote \"it's\" }} {{ printf \"%q\" \"tab\\tnew\\nline\" }} {{ printf \"%x\" \"hi\" }} {{ printf \"%5.1f|%-6d|%+d\" 3.14159 42 5 }}",
        ],
    );
}

#[test]
fn numbers_nil_and_ordering() {
    check(
        "numbers",
        &[
            "{{ .Values.int | int }} {{ .Values.big | int64 }} {{ .Values.float | int }} {{ 3.7 | int }} {{ \"12\" | int }}",
            "{{ printf \"%d\" .Values.int }} {{ printf \"%d\" (.Values.int | int) }} {{ .Values.int | toString }} {{ .Values.big | toString }}",
            "{{ range $i, $e := until 3 }}{{ $i }}{{ end }} {{ .Values.map.a | add 1 }} {{ coalesce .Values.nullv .Values.empty \"d\" }}",
            "{{ merge (dict) .Values.map | toJson }} {{ mergeOverwrite (deepCopy .Values.map) (dict \"a\" 9) | toJson }} {{ .Values.map | toJson }}",
            "{{ .Values.keys | toJson }} {{ dict \"a\" (list 1 2) | toYaml }} {{ \"a,b\" | splitList \",\" | last }}",
            "{{ b64enc \"é\" }} {{ \"hello\" | sha256sum | trunc 8 }} {{ urlquery \"a/b c\" }}",
            "{{ print nil }} {{ printf \"%v\" nil }} {{ printf \"%s\" nil }} {{ toString nil }} {{ empty .Values.map.zz }} {{ hasPrefix \"\" \"x\" }}",
            "{{ with $x := .Values.str }}{{ $x }}{{ end }} {{ range $k, $v := .Values.keys }}{{ $k }},{{ end }}",
            "{{ $.Release.Name | upper }} {{ .Values.neg | toString }} {{ .Values.small }} {{ mul .Values.float 2 }} {{ .Values.nums | first | typeOf }}",
            "{{ int64 .Values.setint | typeOf }} {{ float64 .Values.setint }} {{ .Values.setint | add 0.9 }} {{ .Values.setstr | int }}",
            "{{ max .Values.float 1 }} {{ min -1 .Values.neg }} {{ maxf 1 2 3.5 }} {{ minf .Values.float 0.25 }} {{ floor -1.5 }} {{ ceil -1.5 }}",
            "{{ until 0 }} {{ untilStep 10 0 -3 }} {{ seq 5 1 }} {{ seq 0 2 10 }}",
        ],
    );
}

#[test]
fn sprig_derive_password() {
    // Two master password / user pairs: each costs one scrypt derivation.
    check(
        "derivePassword",
        &[
            "{{ derivePassword 1 \"long\" \"secret\" \"user\" \"example.com\" }}",
            "{{ derivePassword 1 \"maximum\" \"secret\" \"user\" \"example.com\" }}",
            "{{ derivePassword 1 \"medium\" \"secret\" \"user\" \"example.com\" }}",
            "{{ derivePassword 1 \"short\" \"secret\" \"user\" \"example.com\" }}",
            "{{ derivePassword 1 \"basic\" \"secret\" \"user\" \"example.com\" }}",
            "{{ derivePassword 1 \"pin\" \"secret\" \"user\" \"example.com\" }}",
            "{{ derivePassword 0 \"long\" \"secret\" \"user\" \"example.com\" }} {{ derivePassword 2 \"long\" \"secret\" \"user\" \"example.com\" }}",
            "{{ derivePassword 4294967295 \"maximum\" \"secret\" \"user\" \"example.com\" }} {{ derivePassword 65536 \"basic\" \"secret\" \"user\" \"example.com\" }}",
            "{{ derivePassword 3 \"long\" \"secret\" \"user\" \"db.internal\" }} {{ derivePassword 3 \"medium\" \"secret\" \"user\" \"\" }} {{ derivePassword 3 \"pin\" \"secret\" \"user\" \"sité ☃\" }}",
            "{{ derivePassword 1 \"long\" \"mäster pass\" \"Ann Other\" \"example.com\" }} {{ derivePassword 9 \"maximum\" \"mäster pass\" \"Ann Other\" .Values.str }}",
            "{{ derivePassword 1 \"short\" \"mäster pass\" \"Ann Other\" .Release.Name | quote }} {{ derivePassword 5 \"basic\" \"mäster pass\" \"Ann Other\" .Chart.Name | b64enc }}",
            "{{ derivePassword 1 \"nope\" \"secret\" \"user\" \"example.com\" }}|{{ derivePassword 1 \"Long\" \"secret\" \"user\" \"x\" }}",
        ],
    );
}
