//! Invalid specs are rejected with file:line:column and the field, before any API call.

use engine_tests::{aws_spec_text, engine_command, text};
use std::io::Read;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A loopback listener counting the connections it gets: the AWS endpoint for these tests, so
/// any API call would be seen.
struct Tripwire {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl Tripwire {
    fn start() -> Tripwire {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                counter.fetch_add(1, Ordering::SeqCst);
                let mut buf = [0u8; 1024];
                let _ = stream.read(&mut buf);
            }
        });
        Tripwire { port, hits }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// 1-based line of the first occurrence of `needle` in `text`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` not in spec"))
        + 1
}

struct Case {
    name: &'static str,
    from: &'static str,
    to: &'static str,
    /// Text on the line the error must point at (in the modified spec).
    line_with: &'static str,
    message: &'static str,
    field: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "overlapping subnets",
        from: "\"10.0.16.0/20\"",
        to: "\"10.0.8.0/21\"",
        line_with: "10.0.8.0/21",
        message: "overlaps `10.0.0.0/20`",
        field: "network.subnets.private.cidrs[1]",
    },
    Case {
        name: "subnet outside the VPC",
        from: "\"10.0.49.0/24\"",
        to: "\"10.9.49.0/24\"",
        line_with: "10.9.49.0/24",
        message: "is not inside the VPC CIDRs",
        field: "network.subnets.public.cidrs[1]",
    },
    Case {
        name: "availability zone of another region",
        from: "azs = [\"eu-west-3a\"",
        to: "azs = [\"us-east-1a\"",
        line_with: "us-east-1a",
        message: "is not an availability zone of region eu-west-3",
        field: "network.azs[0]",
    },
    Case {
        name: "unknown key",
        from: "vpc_cidr = ",
        to: "vpc_cdir = \"10.0.0.0/16\"\nvpc_cidr = ",
        line_with: "vpc_cdir",
        message: "unknown field `vpc_cdir`",
        field: "network.vpc_cdir",
    },
    Case {
        name: "wrong type",
        from: "s3_gateway_endpoint = true",
        to: "s3_gateway_endpoint = \"yes\"",
        line_with: "s3_gateway_endpoint",
        message: "invalid type",
        field: "network.s3_gateway_endpoint",
    },
    Case {
        name: "tag value too long",
        from: "owner = \"platform\"",
        to: "owner = \"platformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatformplatform\"",
        line_with: "owner = ",
        message: "tag values must be at most 256 characters",
        field: "globals.tags.owner",
    },
    Case {
        name: "TOML syntax",
        from: "nat = \"single\"",
        to: "nat = \"single",
        line_with: "nat = \"single",
        message: "",
        field: "",
    },
    Case {
        name: "unknown section",
        from: "# Stage 1: the network.",
        to: "[netwrok]\nx = 1\n",
        line_with: "[netwrok]",
        message: "unknown section `netwrok`",
        field: "netwrok",
    },
];

#[test]
fn invalid_specs_are_rejected_with_location_and_no_api_call() {
    let tripwire = Tripwire::start();
    let dir = tempfile::tempdir().unwrap();
    let base = aws_spec_text();
    for case in CASES {
        assert!(
            base.contains(case.from),
            "{}: `{}` not in the reference spec",
            case.name,
            case.from
        );
        let bad = base.replacen(case.from, case.to, 1);
        let path = dir.path().join("aws.toml");
        std::fs::write(&path, &bad).unwrap();
        let state = dir.path().join("state.json");
        for command in ["plan", "apply", "drift"] {
            let mut args =
                vec![command, path.to_str().unwrap(), "--state", state.to_str().unwrap()];
            if command == "apply" {
                args.push("--auto-approve");
            }
            let out = engine_command(&tripwire.endpoint(), &args).output().unwrap();
            let all = text(&out);
            assert_eq!(out.status.code(), Some(1), "{}: {all}", case.name);
            let line = line_of(&bad, case.line_with);
            let location = format!("{}:{line}:", path.display());
            assert!(all.contains(&location), "{}: expected {location} in\n{all}", case.name);
            assert!(
                all.contains(case.message),
                "{}: expected `{}` in\n{all}",
                case.name,
                case.message
            );
            if !case.field.is_empty() {
                assert!(
                    all.contains(&format!(": {}: ", case.field)),
                    "{}: expected field {} in\n{all}",
                    case.name,
                    case.field
                );
            }
            assert!(!state.exists(), "{}: no state written", case.name);
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(tripwire.hits.load(Ordering::SeqCst), 0, "an API call was made for an invalid spec");
}
