//! HuJSON (Tailscale's policy file format: JSON with comments and trailing commas) to JSON.
//! Comments and trailing commas become spaces, so a JSON error's line and column are the
//! file's. Hand-written: the JSON5 parsers on crates.io accept much more than HuJSON and bring
//! a parser generator; this is one pass over the text.

use serde_json::Value as Json;

/// The JSON value of HuJSON `text`; an error names the line and column.
pub fn parse(text: &str) -> Result<Json, String> {
    serde_json::from_str(&plain(text))
        .map_err(|e| format!("line {}, column {}: {e}", e.line(), e.column()))
}

/// `text` with comments and trailing commas blanked out.
fn plain(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    // Where the last comma outside strings was, if only blanks and comments followed it.
    let mut pending_comma: Option<usize> = None;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                pending_comma = None;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(bytes.len(), |e| i + 2 + e + 2);
                for b in &mut out[i..end] {
                    if *b != b'\n' {
                        *b = b' ';
                    }
                }
                i = end;
            }
            b',' => {
                pending_comma = Some(i);
                i += 1;
            }
            b'}' | b']' => {
                if let Some(c) = pending_comma.take() {
                    out[c] = b' ';
                }
                i += 1;
            }
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            _ => {
                pending_comma = None;
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comments_and_trailing_commas_go_strings_stay() {
        let text = "{\n  // who may reach what\n  \"acls\": [{\"src\": [\"*\"], \"dst\": [\"a//b:*\",],}, /* x, */],\n  \"s\": \"a, }\",\n}\n";
        assert_eq!(
            parse(text).unwrap(),
            json!({"acls": [{"src": ["*"], "dst": ["a//b:*"]}], "s": "a, }"})
        );
        let err = parse("{\n  \"a\": 1\n  \"b\": 2\n}").unwrap_err();
        assert!(err.starts_with("line 3, column 3"), "{err}");
    }
}
