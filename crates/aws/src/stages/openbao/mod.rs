//! The OpenBao server stage (`[openbao.server]`): the lineage that outlives clusters (seal key
//! and its replica, snapshot key and bucket) and the cluster itself (role, security groups,
//! launch template, autoscaling group, internal load balancer, DNS record). The section and its
//! expansion only; the kinds live by service.

mod expand;
pub mod spec;
pub mod user_data;

pub use expand::{JOIN_TAG, STAGE, serving};

use crate::stages::network::spec::NetworkSpec;
use engine::ResourceSpec;
use engine::spec::{Globals, SpecErrors, SpecSource};

/// Validates `[openbao.server]` (if present) and expands it. Other keys of `[openbao]` belong
/// to another provider and are left alone.
pub fn expand(spec: &SpecSource, globals: &Globals) -> Result<Vec<ResourceSpec>, SpecErrors> {
    let Some(section) = spec.section::<spec::OpenBaoSection>("openbao")? else {
        return Ok(vec![]);
    };
    let Some(server) = section.server else {
        return Ok(vec![]);
    };
    let net = spec.section::<NetworkSpec>("network")?;
    let errors = spec::validate(spec, globals, net.as_ref(), &server);
    spec.errors(errors).into_result()?;
    let net = net.expect("validated: [network] is present");
    Ok(expand::resources(&spec.name(), globals, &net, &server))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::testing::{errors_of, expand_with};

    const BASE: &str = r#"
[globals]
cloud = "aws"
region = "eu-west-3"
secondary_region = "eu-west-1"
cluster_name = "aws-0"
domain = "example.org"

[network]
vpc_cidr = "10.0.0.0/16"
azs = ["eu-west-3a", "eu-west-3b"]
nat = "none"
private_zone = {}

[network.subnets.private]
cidrs = ["10.0.0.0/20", "10.0.16.0/20"]
"#;

    const SERVER: &str = r#"
[openbao]
other_crate_key = "left alone"

[openbao.server]
mode = "dev"
kms_plugin_url = "https://example.org/openbao-plugin-kms-aws"
"#;

    fn expand_text(text: &str) -> Result<Vec<ResourceSpec>, SpecErrors> {
        expand_with(expand, text)
    }

    fn error_text(text: &str) -> String {
        errors_of(expand, text)
    }

    #[test]
    fn dev_mode_expands_one_node_behind_an_internal_nlb() {
        let rs = expand_text(&format!("{BASE}{SERVER}")).unwrap();
        let get = |a: &str| {
            rs.iter().find(|r| r.address.as_str() == a).unwrap_or_else(|| panic!("{a} missing"))
        };
        let asg = get("aws.openbao.autoscaling_group.server");
        assert_eq!(asg.attributes["desired_capacity"], engine::Value::Int(1));
        assert_eq!(asg.attributes["max_size"], engine::Value::Int(1));
        assert!(get("aws.openbao.kms_key.seal").protected);
        assert!(get("aws.openbao.kms_replica_key.seal").protected);
        assert!(get("aws.openbao.s3_bucket.snapshots").protected);
        assert!(!get("aws.openbao.lb.api").protected);
        assert_eq!(
            get("aws.openbao.route53_record.api").attributes["name"],
            engine::Value::from("bao.priv.aws.example.org")
        );
        assert_eq!(
            get("aws.openbao.kms_replica_key.seal").attributes["region"],
            engine::Value::from("eu-west-1")
        );
        let deps = get("aws.openbao.route53_record.api").dependencies();
        assert!(deps.iter().any(|d| d.as_str() == "aws.network.route53_zone.private"));
        // Every address is unique.
        let mut addrs: Vec<&str> = rs.iter().map(|r| r.address.as_str()).collect();
        addrs.sort();
        addrs.dedup();
        assert_eq!(addrs.len(), rs.len());
    }

    #[test]
    fn ha_mode_runs_five_nodes() {
        let text = format!("{BASE}{SERVER}").replace("mode = \"dev\"", "mode = \"ha\"");
        let rs = expand_text(&text).unwrap();
        let asg = rs.iter().find(|r| r.kind == "aws_autoscaling_group").unwrap();
        assert_eq!(asg.attributes["desired_capacity"], engine::Value::Int(5));
    }

    #[test]
    fn no_server_table_means_no_resources() {
        let text = format!("{BASE}\n[openbao]\nother = 1\n");
        assert!(expand_text(&text).unwrap().is_empty());
    }

    #[test]
    fn unknown_mode_is_an_error_at_its_line() {
        let text = format!("{BASE}{SERVER}").replace("mode = \"dev\"", "mode = \"big\"");
        let err = error_text(&text);
        assert!(err.contains("specs/test.toml:22 "), "{err}");
        assert!(err.contains("dev") && err.contains("ha"), "{err}");
    }

    #[test]
    fn unknown_server_keys_are_errors() {
        let text = format!("{BASE}{SERVER}nodes = 3\n");
        let err = error_text(&text);
        assert!(err.contains("nodes"), "{err}");
    }

    #[test]
    fn the_server_needs_a_private_zone_and_a_secondary_region() {
        let text = format!("{BASE}{SERVER}")
            .replace("private_zone = {}\n", "")
            .replace("secondary_region = \"eu-west-1\"\n", "");
        let err = error_text(&text);
        assert!(err.contains("private_zone"), "{err}");
        assert!(err.contains("secondary_region"), "{err}");
    }

    #[test]
    fn the_server_needs_the_network() {
        let text = format!("{BASE}{SERVER}");
        let without_network = text.split("[network]").next().unwrap().to_string() + SERVER;
        let err = error_text(&without_network);
        assert!(err.contains("[network]"), "{err}");
    }

    #[test]
    fn bad_values_point_at_their_lines() {
        let text = format!(
            "{BASE}{SERVER}version = \"latest\"\nkms_plugin_sha256 = \"xyz\"\n\n[openbao.server.snapshots]\nbucket = \"Bad_Bucket\"\nretention_days = 0\n"
        );
        let err = error_text(&text);
        for (line, needle) in
            [(24, "version"), (25, "kms_plugin_sha256"), (28, "bucket"), (29, "retention_days")]
        {
            assert!(
                err.lines()
                    .any(|l| l.contains(&format!("test.toml:{line} ")) && l.contains(needle)),
                "line {line} {needle}: {err}"
            );
        }
    }
}
