//! The LLM platform (`[llm_platform]`, behind the `llm-platform` feature gate; the reference's
//! opt-in `aws/llm-platform`): the models' shared file system, S3 Files over the models bucket
//! (made outside the spec, looked up), its mount targets in the private subnets behind a
//! security group that lets the cluster's nodes in over NFS, the access point the pods use, a
//! file-system policy letting only the CSI driver mount and write, the role S3 Files takes to
//! sync with the bucket, and the CSI driver's bounded role with its pod identities. The section
//! (`spec.rs`) and its expansion (`expand.rs`); the kinds are the S3 Files, IAM, EC2 and EKS
//! ones. The engine leaves the stage out, with one `[skip]` line, unless the gate is on.

mod expand;
pub mod spec;

pub use expand::STAGE;

use crate::stages::eks::spec::EksSpec;
use crate::stages::network::spec::NetworkSpec;
use engine::ResourceSpec;
use engine::spec::{Globals, SpecErrors, SpecSource};

/// Validates `[llm_platform]` (if present) against `[network]` and `[eks]` and expands it.
pub fn expand(spec: &SpecSource, globals: &Globals) -> Result<Vec<ResourceSpec>, SpecErrors> {
    let Some(llm) = spec.section::<spec::LlmPlatformSpec>("llm_platform")? else {
        return Ok(vec![]);
    };
    let net = spec.section::<NetworkSpec>("network").ok().flatten();
    let eks = spec.section::<EksSpec>("eks").ok().flatten();
    let errors = spec::validate(spec, globals, net.as_ref(), eks.as_ref(), &llm);
    spec.errors(errors).into_result()?;
    let (net, eks) = (net.expect("validated"), eks.expect("validated"));
    Ok(expand::resources(&spec.name(), globals, &net, &eks, &llm))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::testing::{errors_of, expand_with};

    const BASE: &str = "[globals]\ncloud = \"aws\"\nregion = \"eu-west-3\"\ncluster_name = \"aws-0\"\ndomain = \"ogenki.io\"\n\
        [network]\nvpc_cidr = \"10.0.0.0/16\"\nazs = [\"eu-west-3a\", \"eu-west-3b\"]\n\
        [network.subnets.private]\ncidrs = [\"10.0.0.0/20\", \"10.0.16.0/20\"]\n\
        [eks]\n";

    #[test]
    fn the_reference_resources_with_their_names() {
        let text = format!("{BASE}[llm_platform]\nbucket = \"eu-west-3-ogenki-llm-models\"\n");
        let resources = expand_with(expand, &text).unwrap();
        let addresses: Vec<String> = resources.iter().map(|r| r.address.to_string()).collect();
        for expected in [
            "aws.llm_platform.s3_bucket_lookup.models",
            "aws.llm_platform.security_group.mount_targets",
            "aws.llm_platform.security_group_rule.nfs_from_nodes",
            "aws.llm_platform.iam_role.service",
            "aws.llm_platform.iam_role_policy.service_bucket",
            "aws.llm_platform.iam_role_policy.service_eventbridge",
            "aws.llm_platform.s3files_file_system.models",
            "aws.llm_platform.s3files_mount_target.models[\"eu-west-3a\"]",
            "aws.llm_platform.s3files_mount_target.models[\"eu-west-3b\"]",
            "aws.llm_platform.s3files_access_point[\"shared\"]",
            "aws.llm_platform.s3files_file_system_policy.models",
            "aws.llm_platform.iam_policy.csi_driver_boundary",
            "aws.llm_platform.iam_role.csi_driver",
            "aws.llm_platform.iam_role_policy_attachment[\"csi_driver/AmazonEFSCSIDriverPolicy\"]",
            "aws.llm_platform.iam_role_policy_attachment[\"csi_driver/AmazonS3FilesCSIDriverPolicy\"]",
            "aws.llm_platform.eks_pod_identity_association[\"efs-csi-controller-sa\"]",
            "aws.llm_platform.eks_pod_identity_association[\"efs-csi-node-sa\"]",
        ] {
            assert!(addresses.contains(&expected.to_string()), "{expected}: {addresses:?}");
        }
        assert_eq!(addresses.len(), 17, "{addresses:?}");
        let named = |a: &str| {
            let r = resources.iter().find(|r| r.address.as_str() == a).unwrap();
            r.attributes.get("name").cloned()
        };
        for (a, name) in [
            ("aws.llm_platform.security_group.mount_targets", "llm-models-fs-mount-targets"),
            ("aws.llm_platform.iam_role.service", "llm-models-fs-service"),
            ("aws.llm_platform.iam_role.csi_driver", "llm-models-fs-csi-driver"),
            (
                "aws.llm_platform.iam_policy.csi_driver_boundary",
                "llm-models-fs-csi-driver-boundary",
            ),
        ] {
            assert_eq!(named(a), Some(engine::Value::from(name)), "{a}");
        }
        let rule =
            resources.iter().find(|r| r.address.as_str().ends_with("nfs_from_nodes")).unwrap();
        assert_eq!(rule.attributes.get("from_port"), Some(&engine::Value::Int(2049)));
    }

    #[test]
    fn mistakes_name_their_field() {
        let text = "[globals]\ncloud = \"aws\"\nregion = \"eu-west-3\"\ncluster_name = \"aws-0\"\ndomain = \"ogenki.io\"\n\
            [network]\nvpc_cidr = \"10.0.0.0/16\"\nazs = [\"eu-west-3a\"]\n\
            [network.subnets.public]\ncidrs = [\"10.0.0.0/24\"]\n\
            [llm_platform]\nbucket = \"Models_Bucket\"\nname = \"a-name-far-too-long-for-the-roles-and-policies-it-stems\"\n\
            csi_service_accounts = [\"Bad_SA\"]\n\
            [llm_platform.access_point]\npath = \"models\"\npermissions = \"0999\"\n";
        let shown = errors_of(expand, text);
        for expected in [
            "mount targets are in `[network.subnets.private]`",
            "`[eks]` is missing",
            "test.toml:",
            "llm_platform.bucket: `Models_Bucket` is not an S3 bucket name",
            "llm_platform.name:",
            "llm_platform.access_point.path: `models` is not an absolute path",
            "llm_platform.access_point.permissions: `0999` is not an octal mode",
            "llm_platform.csi_service_accounts[0]: `Bad_SA` is not a service account name",
        ] {
            assert!(shown.contains(expected), "{expected}: {shown}");
        }
    }
}
