//! What the AWS provider's (`hashicorp/aws`) resource instances in an OpenTofu state are in the
//! engine's AWS kinds: the same name for most types, the same id, the same attribute names
//! (the kinds follow the provider's naming); where they differ, the difference is here.

use engine::tofu_import::TofuResource;
use serde_json::{Map, Value as Json, json};

/// The engine's view of an instance of `resource_type`; `None` for a type with no kind here.
pub(crate) fn tofu_resources(resource_type: &str, id: &str, a: &Json) -> Option<Vec<TofuResource>> {
    let resource = |kind: &str, id: &str, attributes: Map<String, Json>| TofuResource {
        kind: kind.to_string(),
        id: id.to_string(),
        attributes,
        source: String::new(),
    };
    let same = |kind: &str| Some(vec![resource(kind, id, fields(a))]);
    match resource_type {
        "aws_vpc"
        | "aws_subnet"
        | "aws_eip"
        | "aws_nat_gateway"
        | "aws_route_table"
        | "aws_route_table_association"
        | "aws_vpc_endpoint"
        | "aws_security_group"
        | "aws_cloudwatch_log_group" => same(resource_type),
        "aws_vpc_ipv4_cidr_block_association" => same("aws_vpc_cidr_association"),
        "aws_iam_role" => {
            let mut f = fields(a);
            parse_json_string(&mut f, "assume_role_policy");
            Some(vec![resource("aws_iam_role", id, f)])
        }
        // A managed policy: its id is its ARN in both.
        "aws_iam_policy" => {
            let mut f = fields(a);
            parse_json_string(&mut f, "policy");
            Some(vec![resource("aws_iam_policy", id, f)])
        }
        "aws_iam_role_policy" => {
            let mut f = fields(a);
            rename(&mut f, "role", "role_name");
            parse_json_string(&mut f, "policy");
            Some(vec![resource("aws_iam_role_policy", id, f)])
        }
        // The engine keeps a route by its table and destination.
        "aws_route" => {
            let table = a["route_table_id"].as_str()?;
            let destination = a["destination_cidr_block"].as_str()?;
            Some(vec![resource("aws_route", &format!("{table}/{destination}"), fields(a))])
        }
        // The provider's gateway carries its attachment; the engine has a kind for each.
        "aws_internet_gateway" => {
            let mut out = vec![resource("aws_internet_gateway", id, Map::new())];
            if let Some(vpc) = a["vpc_id"].as_str().filter(|v| !v.is_empty()) {
                let attachment = json!({ "internet_gateway_id": id, "vpc_id": vpc });
                out.push(resource(
                    "aws_internet_gateway_attachment",
                    &format!("{id}/{vpc}"),
                    fields(&attachment),
                ));
            }
            Some(out)
        }
        "aws_vpc_security_group_ingress_rule" => security_group_rule("ingress", id, a),
        "aws_vpc_security_group_egress_rule" => security_group_rule("egress", id, a),
        "aws_flow_log" => {
            let mut f = fields(a);
            let target = ["vpc_id", "subnet_id", "eni_id", "transit_gateway_id"]
                .iter()
                .find_map(|k| a[*k].as_str().filter(|v| !v.is_empty()));
            if let Some(target) = target {
                f.insert("resource_id".into(), json!(target));
            }
            rename(&mut f, "iam_role_arn", "deliver_logs_permission_arn");
            let group = a["log_destination"]
                .as_str()
                .and_then(|arn| arn.split_once(":log-group:"))
                .map(|(_, name)| name.trim_end_matches(":*").to_string());
            if let Some(group) = group.filter(|_| f.get("log_group_name").is_none_or(Json::is_null))
            {
                f.insert("log_group_name".into(), json!(group));
            }
            Some(vec![resource("aws_flow_log", id, f)])
        }
        // OpenBao's lineage: the keys, their aliases, the replica, the snapshot bucket.
        "aws_kms_key" => {
            let mut f = fields(a);
            rename(&mut f, "customer_master_key_spec", "key_spec");
            Some(vec![resource("aws_kms_key", id, f)])
        }
        "aws_kms_alias" | "aws_s3_bucket" => same(resource_type),
        "aws_kms_replica_key" => {
            let mut f = fields(a);
            // arn:aws:kms:<region>:<account>:key/<id>
            let key_id = |arn: &str| arn.rsplit_once("key/").map(|(_, k)| k.to_string());
            if let Some(primary) = a["primary_key_arn"].as_str().and_then(key_id) {
                f.insert("primary_key_id".into(), json!(primary));
            }
            if let Some(region) = a["arn"].as_str().and_then(|arn| arn.split(':').nth(3)) {
                f.insert("region".into(), json!(region));
            }
            Some(vec![resource("aws_kms_replica_key", id, f)])
        }
        // A bucket's settings, one resource each in the provider, are fields of the engine's
        // bucket: taking over the bucket takes them over, and its plan shows any difference.
        "aws_s3_bucket_versioning"
        | "aws_s3_bucket_server_side_encryption_configuration"
        | "aws_s3_bucket_public_access_block"
        | "aws_s3_bucket_lifecycle_configuration" => Some(vec![]),
        "aws_route53_zone" => {
            let mut f = fields(a);
            if let Some(vpc) = a["vpc"].as_array().and_then(|v| v.first()) {
                f.insert("vpc_id".into(), vpc["vpc_id"].clone());
                f.insert("vpc_region".into(), vpc["vpc_region"].clone());
            }
            f.remove("vpc");
            Some(vec![resource("aws_route53_zone", id, f)])
        }
        _ => None,
    }
}

/// A rule of the provider's one-rule-per-resource kinds (`aws_vpc_security_group_*_rule`,
/// id `sgr-...`, the engine's own): all ports are -1 for protocol `-1`.
fn security_group_rule(direction: &str, id: &str, a: &Json) -> Option<Vec<TofuResource>> {
    let mut f = fields(a);
    f.insert("direction".into(), json!(direction));
    rename(&mut f, "ip_protocol", "protocol");
    if a["ip_protocol"] == "-1" {
        f.insert("from_port".into(), json!(-1));
        f.insert("to_port".into(), json!(-1));
    }
    Some(vec![TofuResource {
        kind: "aws_security_group_rule".into(),
        id: id.to_string(),
        attributes: f,
        source: String::new(),
    }])
}

/// The instance's attributes, without the provider's bookkeeping (`id`, `tags_all`, timeouts)
/// and unset values (the provider stores an unset string as `""`).
fn fields(a: &Json) -> Map<String, Json> {
    a.as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, v)| {
                    !matches!(k.as_str(), "id" | "tags_all" | "timeouts")
                        && !v.is_null()
                        && v.as_str() != Some("")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn rename(f: &mut Map<String, Json>, from: &str, to: &str) {
    if from != to
        && let Some(v) = f.remove(from)
    {
        f.insert(to.to_string(), v);
    }
}

/// A JSON document the provider keeps as a string, as the engine keeps it: parsed.
fn parse_json_string(f: &mut Map<String, Json>, name: &str) {
    if let Some(Json::String(text)) = f.get(name)
        && let Ok(doc) = serde_json::from_str::<Json>(text)
    {
        f.insert(name.to_string(), doc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_is_kept_by_table_and_destination() {
        let a = json!({"id": "r-rtb-1", "route_table_id": "rtb-1", "destination_cidr_block": "0.0.0.0/0", "gateway_id": "igw-1"});
        let r = &tofu_resources("aws_route", "r-rtb-1", &a).unwrap()[0];
        assert_eq!((r.kind.as_str(), r.id.as_str()), ("aws_route", "rtb-1/0.0.0.0/0"));
        assert_eq!(r.attributes["gateway_id"], "igw-1");
    }

    #[test]
    fn a_managed_policy_is_kept_by_its_arn_with_its_document() {
        let arn = "arn:aws:iam::1:policy/llm-models-fs-csi-driver-boundary";
        let a = json!({"arn": arn, "name": "llm-models-fs-csi-driver-boundary", "policy": "{\"Version\":\"2012-10-17\",\"Statement\":[]}"});
        let p = &tofu_resources("aws_iam_policy", arn, &a).unwrap()[0];
        assert_eq!((p.kind.as_str(), p.id.as_str()), ("aws_iam_policy", arn));
        assert_eq!(p.attributes["policy"], json!({"Version": "2012-10-17", "Statement": []}));
    }

    #[test]
    fn an_internet_gateway_brings_its_attachment() {
        let a = json!({"id": "igw-1", "vpc_id": "vpc-1", "tags_all": {}});
        let out = tofu_resources("aws_internet_gateway", "igw-1", &a).unwrap();
        let ids: Vec<_> = out.iter().map(|r| (r.kind.as_str(), r.id.as_str())).collect();
        assert_eq!(
            ids,
            [("aws_internet_gateway", "igw-1"), ("aws_internet_gateway_attachment", "igw-1/vpc-1")]
        );
    }

    #[test]
    fn rules_flow_logs_zones_and_policies_take_the_kinds_field_names() {
        let rule = json!({"id": "sgr-1", "ip_protocol": "-1", "cidr_ipv4": "0.0.0.0/0", "security_group_id": "sg-1"});
        let r = &tofu_resources("aws_vpc_security_group_egress_rule", "sgr-1", &rule).unwrap()[0];
        assert_eq!(r.attributes["direction"], "egress");
        assert_eq!(
            (r.attributes["protocol"].clone(), r.attributes["from_port"].clone()),
            (json!("-1"), json!(-1))
        );
        let flow = json!({"id": "fl-1", "vpc_id": "vpc-1", "iam_role_arn": "arn:role", "log_destination": "arn:aws:logs:eu-west-3:1:log-group:/aws/vpc/x:*"});
        let f = &tofu_resources("aws_flow_log", "fl-1", &flow).unwrap()[0];
        assert_eq!(f.attributes["resource_id"], "vpc-1");
        assert_eq!(f.attributes["log_group_name"], "/aws/vpc/x");
        assert_eq!(f.attributes["deliver_logs_permission_arn"], "arn:role");
        let zone = json!({"id": "Z1", "name": "priv.example.com", "vpc": [{"vpc_id": "vpc-1", "vpc_region": "eu-west-3"}]});
        let z = &tofu_resources("aws_route53_zone", "Z1", &zone).unwrap()[0];
        assert_eq!(
            (z.attributes["vpc_id"].clone(), z.attributes.get("vpc")),
            (json!("vpc-1"), None)
        );
        let policy = json!({"id": "r:p", "role": "r", "name": "p", "policy": "{\"Version\":\"2012-10-17\"}"});
        let p = &tofu_resources("aws_iam_role_policy", "r:p", &policy).unwrap()[0];
        assert_eq!(p.attributes["role_name"], "r");
        assert_eq!(p.attributes["policy"], json!({"Version": "2012-10-17"}));
        assert!(tofu_resources("aws_default_network_acl", "acl-1", &json!({})).is_none());
    }

    #[test]
    fn the_lineages_keys_replica_and_bucket_take_the_kinds_names() {
        let key = json!({"id": "k-1", "customer_master_key_spec": "SYMMETRIC_DEFAULT", "multi_region": true});
        let k = &tofu_resources("aws_kms_key", "k-1", &key).unwrap()[0];
        assert_eq!(
            (k.attributes["key_spec"].clone(), k.attributes["multi_region"].clone()),
            (json!("SYMMETRIC_DEFAULT"), json!(true))
        );
        let replica = json!({
            "id": "mrk-1",
            "arn": "arn:aws:kms:eu-west-1:396740644681:key/mrk-1",
            "primary_key_arn": "arn:aws:kms:eu-west-3:396740644681:key/mrk-1",
        });
        let r = &tofu_resources("aws_kms_replica_key", "mrk-1", &replica).unwrap()[0];
        assert_eq!(
            (r.attributes["primary_key_id"].clone(), r.attributes["region"].clone()),
            (json!("mrk-1"), json!("eu-west-1"))
        );
        let bucket = json!({"id": "eu-west-3-ogenki-openbao-snapshot", "bucket": "eu-west-3-ogenki-openbao-snapshot"});
        let b =
            &tofu_resources("aws_s3_bucket", "eu-west-3-ogenki-openbao-snapshot", &bucket).unwrap();
        assert_eq!(b[0].kind, "aws_s3_bucket");
        let versioning = tofu_resources("aws_s3_bucket_versioning", "b", &json!({})).unwrap();
        assert!(versioning.is_empty(), "a bucket setting is the bucket's");
    }
}
