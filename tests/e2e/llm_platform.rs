//! The LLM platform (`[llm_platform]` of specs/aws.toml, behind the `llm-platform` feature gate)
//! through the `engine` binary against moto (S3 Files from the project's extension): with the
//! gate off one `[skip]` line and nothing made or removed; with it on, a plan that stops while
//! the models bucket is missing, then the file system on the bucket with its mount targets,
//! access point, policy, roles and pod identities; a no-op second apply; what a killed run did
//! not record adopted, not made twice; drift found and repaired; a destroy that leaves the bucket.

use aws_sdk_s3::types::{BucketLocationConstraint, CreateBucketConfiguration};
use engine_tests::{Moto, aws_spec_block, network_spec_text, run_engine, spec_text_through, text};
use serde_json::Value as Json;
use std::path::Path;

const BUCKET: &str = "eu-west-3-ogenki-llm-models";
const GATE: [&str; 2] = ["--feature", "llm-platform"];

/// The network, the EKS stage and `[llm_platform]` of specs/aws.toml, as `<dir>/aws.toml`.
fn spec(dir: &Path) -> String {
    let through_eks = spec_text_through(3);
    let eks = &through_eks[through_eks.find("# Stage 3").expect("the EKS stage")..];
    let path = dir.join("aws.toml");
    let block = aws_spec_block("llm_platform");
    std::fs::write(&path, format!("{}\n{eks}\n{block}", network_spec_text())).unwrap();
    path.display().to_string()
}

struct Run<'a> {
    moto: &'a Moto,
    spec: String,
    state: String,
}

impl Run<'_> {
    fn engine(&self, args: &[&str]) -> std::process::Output {
        let mut all = args.to_vec();
        all.extend([self.spec.as_str(), "--state", self.state.as_str()]);
        run_engine(&self.moto.endpoint(), &all, &[])
    }

    fn gated(&self, args: &[&str]) -> std::process::Output {
        let mut all = args.to_vec();
        all.extend(GATE);
        self.engine(&all)
    }

    fn recorded(&self) -> Vec<String> {
        let Ok(state) = std::fs::read_to_string(&self.state) else { return vec![] };
        let state: Json = serde_json::from_str(&state).unwrap();
        let resources = state["resources"].as_object().unwrap();
        resources.keys().filter(|a| a.starts_with("aws.llm_platform.")).cloned().collect()
    }
}

fn skip_lines(out: &std::process::Output) -> usize {
    text(out).lines().filter(|l| l.contains("[skip] [llm_platform]")).count()
}

#[tokio::test]
async fn the_llm_platform_is_made_behind_its_gate_and_converges() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let run = Run {
        moto: &moto,
        spec: spec(dir.path()),
        state: dir.path().join("aws.state.json").display().to_string(),
    };
    let sdk = moto.sdk_config().await;
    let s3 = aws_sdk_s3::Client::new(&sdk);
    let files = aws_sdk_s3files::Client::new(&sdk);
    let iam = aws_sdk_iam::Client::new(&sdk);
    let eks = aws_sdk_eks::Client::new(&sdk);
    let ec2 = aws_sdk_ec2::Client::new(&sdk);

    // The models bucket is made elsewhere: without it the plan stops, naming it, and nothing
    // is made.
    let out = run.gated(&["apply", "--auto-approve"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("the S3 bucket `{BUCKET}` does not exist")),
        "{}",
        text(&out)
    );
    assert!(!Path::new(&run.state).exists() || run.recorded().is_empty(), "{}", text(&out));
    let vpcs = ec2.describe_vpcs().send().await.unwrap();
    assert!(vpcs.vpcs().iter().all(|v| v.is_default() == Some(true)), "nothing was made");
    let location = CreateBucketConfiguration::builder()
        .location_constraint(BucketLocationConstraint::EuWest3)
        .build();
    s3.create_bucket().bucket(BUCKET).create_bucket_configuration(location).send().await.unwrap();

    // Gate off: one [skip] line, the network and the cluster only.
    let out = run.engine(&["apply", "--auto-approve"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(skip_lines(&out), 1, "{}", text(&out));
    assert!(text(&out).contains("ENGINE_LLM_PLATFORM_ENABLED=true"), "{}", text(&out));
    assert!(run.recorded().is_empty(), "{:?}", run.recorded());

    // Gate on: the reference's resources.
    let out = run.gated(&["apply", "--auto-approve"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(skip_lines(&out), 0, "{}", text(&out));
    let listed = files.list_file_systems().send().await.unwrap();
    assert_eq!(listed.file_systems().len(), 1, "one file system");
    let fs_id = listed.file_systems()[0].file_system_id().to_string();
    let fs = files.get_file_system().file_system_id(&fs_id).send().await.unwrap();
    assert_eq!(fs.bucket(), Some(format!("arn:aws:s3:::{BUCKET}").as_str()));
    assert!(fs.role_arn().unwrap().ends_with(":role/llm-models-fs-service"), "{:?}", fs.role_arn());
    assert_eq!(fs.name(), Some("llm-models-fs"));

    let mounts = files.list_mount_targets().file_system_id(&fs_id).send().await.unwrap();
    assert_eq!(mounts.mount_targets().len(), 3, "one per private subnet (three zones)");
    let groups = ec2
        .describe_security_groups()
        .filters(
            aws_sdk_ec2::types::Filter::builder()
                .name("group-name")
                .values("llm-models-fs-mount-targets")
                .build(),
        )
        .send()
        .await
        .unwrap();
    let group = groups.security_groups()[0].clone();
    let nfs = group.ip_permissions().iter().find(|p| p.from_port() == Some(2049)).expect("NFS in");
    let from = nfs.user_id_group_pairs()[0].group_id().unwrap();
    let nodes = ec2.describe_security_groups().group_ids(from).send().await.unwrap();
    assert_eq!(
        nodes.security_groups()[0].group_name(),
        Some("aws-0-eks-node"),
        "NFS from the nodes"
    );
    for m in mounts.mount_targets() {
        let shown =
            files.get_mount_target().mount_target_id(m.mount_target_id()).send().await.unwrap();
        assert_eq!(shown.security_groups(), [group.group_id().unwrap().to_string()]);
    }

    let points = files.list_access_points().file_system_id(&fs_id).send().await.unwrap();
    assert_eq!(points.access_points().len(), 1);
    let ap = points.access_points()[0].clone();
    assert_eq!(ap.name(), Some("shared"));
    let posix = ap.posix_user().unwrap();
    assert_eq!((posix.uid(), posix.gid()), (1001, 1001));
    let root = ap.root_directory().unwrap();
    assert_eq!(root.path(), Some("/models"));
    assert_eq!(root.creation_permissions().unwrap().permissions(), "0775");

    let csi = iam.get_role().role_name("llm-models-fs-csi-driver").send().await.unwrap();
    let csi = csi.role().unwrap();
    let boundary = csi.permissions_boundary().and_then(|b| b.permissions_boundary_arn()).unwrap();
    assert!(boundary.ends_with(":policy/llm-models-fs-csi-driver-boundary"), "{boundary}");
    let attached = iam.list_attached_role_policies().role_name("llm-models-fs-csi-driver");
    let attached = attached.send().await.unwrap();
    let mut names: Vec<&str> =
        attached.attached_policies().iter().filter_map(|p| p.policy_name()).collect();
    names.sort();
    assert_eq!(names, ["AmazonEFSCSIDriverPolicy", "AmazonS3FilesCSIDriverPolicy"]);

    let policy = files.get_file_system_policy().file_system_id(&fs_id).send().await.unwrap();
    let policy: Json = serde_json::from_str(policy.policy()).unwrap();
    let statement = &policy["Statement"][0];
    assert_eq!(statement["Principal"]["AWS"], Json::from(csi.arn()), "{policy}");
    assert_eq!(
        statement["Action"],
        serde_json::json!(["s3files:ClientMount", "s3files:ClientWrite"])
    );

    let associations =
        eks.list_pod_identity_associations().cluster_name("aws-0").send().await.unwrap();
    let mut csi_accounts: Vec<(&str, &str)> = associations
        .associations()
        .iter()
        .filter(|a| a.service_account().is_some_and(|s| s.starts_with("efs-csi-")))
        .map(|a| (a.namespace().unwrap(), a.service_account().unwrap()))
        .collect();
    csi_accounts.sort();
    assert_eq!(
        csi_accounts,
        [("kube-system", "efs-csi-controller-sa"), ("kube-system", "efs-csi-node-sa")]
    );

    // The CSI driver's volume handle, as the reference outputs it.
    let args = ["output", "aws.llm_platform.s3files_access_point", "--json", "--state", &run.state];
    let out = run_engine(&moto.endpoint(), &args, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let handle = format!("s3files:{fs_id}::{}", ap.access_point_id());
    assert!(text(&out).contains(&handle), "{handle}: {}", text(&out));

    // A second apply has nothing to do.
    let out = run.gated(&["plan", "--detailed-exitcode"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // A run killed before it recorded the file system and the access point: the next apply
    // finds them by their tags and makes no second one.
    let mut state: Json =
        serde_json::from_str(&std::fs::read_to_string(&run.state).unwrap()).unwrap();
    let resources = state["resources"].as_object_mut().unwrap();
    resources.remove("aws.llm_platform.s3files_file_system.models").expect("recorded");
    resources.remove("aws.llm_platform.s3files_access_point[\"shared\"]").expect("recorded");
    std::fs::write(&run.state, serde_json::to_string(&state).unwrap()).unwrap();
    let out = run.gated(&["apply", "--auto-approve"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(files.list_file_systems().send().await.unwrap().file_systems().len(), 1);
    let points = files.list_access_points().file_system_id(&fs_id).send().await.unwrap();
    assert_eq!(points.access_points().len(), 1, "{}", text(&out));
    let out = run.gated(&["plan", "--detailed-exitcode"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // Drift: the policy deleted and the boundary taken off out of band; found, then repaired.
    files.delete_file_system_policy().file_system_id(&fs_id).send().await.unwrap();
    iam.delete_role_permissions_boundary()
        .role_name("llm-models-fs-csi-driver")
        .send()
        .await
        .unwrap();
    let out = run.gated(&["drift"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    for drifted in [
        "aws.llm_platform.s3files_file_system_policy.models",
        "aws.llm_platform.iam_role.csi_driver",
        "permissions_boundary",
    ] {
        assert!(text(&out).contains(drifted), "{drifted}: {}", text(&out));
    }
    let out = run.gated(&["apply", "--auto-approve"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run.gated(&["drift"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // With the gate off again, what it made is left as it is.
    let out = run.engine(&["plan", "--detailed-exitcode"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(skip_lines(&out), 1, "{}", text(&out));

    // A destroy of the stage removes all of it but the bucket, which it only looked up.
    let out = run.gated(&["destroy", "--target", "aws.llm_platform", "--auto-approve"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(files.list_file_systems().send().await.unwrap().file_systems().is_empty());
    assert!(iam.get_role().role_name("llm-models-fs-csi-driver").send().await.is_err());
    assert!(iam.get_role().role_name("llm-models-fs-service").send().await.is_err());
    let associations =
        eks.list_pod_identity_associations().cluster_name("aws-0").send().await.unwrap();
    assert!(
        associations
            .associations()
            .iter()
            .all(|a| !a.service_account().unwrap_or_default().starts_with("efs-csi-")),
        "{associations:?}"
    );
    s3.head_bucket().bucket(BUCKET).send().await.expect("the bucket stays");
    assert!(run.recorded().is_empty(), "{:?}", run.recorded());
}
