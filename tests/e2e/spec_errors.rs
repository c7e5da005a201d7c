//! Invalid specs are rejected with file:line:column and the field, before any API call.
//!
//! One table of mistakes, every section of the reference spec (`specs/aws.toml`) and its overlay
//! file: each case edits the reference spec (and may add an overlay), runs the engine, and
//! expects exit 1, the file and line of the mistake, the message and the field, no state and no
//! connection to the cloud's endpoint.

use engine_tests::{aws_spec_text, engine_command, text, workspace};
use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
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

/// 1-based line of the first occurrence of `needle` in `text`, comments left out (the reference
/// spec's comments name its sections).
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| !l.trim_start().starts_with('#') && l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` not in\n{text}"))
        + 1
}

/// Where an error must point: the first line holding this text, in the spec or in the overlay.
enum At {
    Spec(&'static str),
    Overlay(&'static str),
}
use At::{Overlay, Spec};

struct Case {
    name: &'static str,
    /// Replacements in the reference spec, each of the first occurrence of its text.
    edits: &'static [(&'static str, &'static str)],
    /// An overlay file merged over the spec (`--overlay`); empty: none.
    overlay: &'static str,
    at: At,
    message: &'static str,
    /// The field the error names (empty for TOML syntax errors, which name none).
    field: &'static str,
}

/// Cases run `plan`; one in this many (spread over the sections) runs `apply` and `drift` too.
const EVERY_COMMAND: usize = 10;

const CASES: &[Case] = &[
    // [globals], its tags, versions and flux.
    Case {
        name: "globals: unknown key",
        edits: &[("domain = ", "regoin = \"eu-west-3\"\ndomain = ")],
        overlay: "",
        at: Spec("regoin"),
        message: "unknown field `regoin`",
        field: "globals.regoin",
    },
    Case {
        name: "globals: missing required field",
        edits: &[("cluster_name = \"aws-0\"\n", "")],
        overlay: "",
        at: Spec("[globals]"),
        message: "missing field `cluster_name`",
        field: "globals",
    },
    Case {
        name: "globals: a shared resource the spec does not make",
        edits: &[("domain = ", "shared = [\"aws.network.security_group.nothing\"]\ndomain = ")],
        overlay: "",
        at: Spec("shared = "),
        message: "`aws.network.security_group.nothing` is no resource of this spec",
        field: "globals.shared[0]",
    },
    Case {
        name: "globals: unknown cloud",
        edits: &[("cloud = \"aws\"", "cloud = \"azure\"")],
        overlay: "",
        at: Spec("cloud = "),
        message: "unknown cloud `azure`",
        field: "globals.cloud",
    },
    Case {
        name: "globals: secondary region equal to the region",
        edits: &[("secondary_region = \"eu-west-1\"", "secondary_region = \"eu-west-3\"")],
        overlay: "",
        at: Spec("secondary_region"),
        message: "must be in another region than `region`",
        field: "globals.secondary_region",
    },
    Case {
        name: "globals: empty domain",
        edits: &[("domain = \"cloud.ogenki.io\"", "domain = \"\"")],
        overlay: "",
        at: Spec("domain = "),
        message: "is not a DNS name",
        field: "globals.domain",
    },
    Case {
        name: "globals: spec name that is a path",
        edits: &[(
            "domain = \"cloud.ogenki.io\"",
            "domain = \"cloud.ogenki.io\"\nname = \"../aws\"",
        )],
        overlay: "",
        at: Spec("name = \"../aws\""),
        message: "is not a spec name",
        field: "globals.name",
    },
    Case {
        name: "globals: cluster name too long for load balancer names",
        edits: &[("cluster_name = \"aws-0\"", "cluster_name = \"aws-0-platform-production\"")],
        overlay: "",
        at: Spec("cluster_name"),
        message: "longer than the 32 characters AWS allows",
        field: "globals.cluster_name",
    },
    Case {
        name: "globals.tags: empty key",
        edits: &[("owner = \"platform\"", "\"\" = \"platform\"")],
        overlay: "",
        at: Spec("\"\" = "),
        message: "tag keys must be 1 to 128 characters",
        field: "globals.tags.\"\"",
    },
    Case {
        name: "globals.tags: value too long",
        edits: &[(
            "owner = \"platform\"",
            concat!(
                "owner = \"",
                "platform-team-",
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\""
            ),
        )],
        overlay: "",
        at: Spec("owner = "),
        message: "tag values must be at most 256 characters",
        field: "globals.tags.owner",
    },
    Case {
        name: "globals.versions: not a Kubernetes minor version",
        edits: &[("kubernetes = \"1.36\"", "kubernetes = \"1.36.2\"")],
        overlay: "",
        at: Spec("kubernetes = "),
        message: "`1.36.2` is not a Kubernetes minor version",
        field: "globals.versions.kubernetes",
    },
    Case {
        name: "globals.versions: empty version",
        edits: &[("cilium = \"1.20.1\"", "cilium = \"\"")],
        overlay: "",
        at: Spec("cilium = \"\""),
        message: "the `cilium` version is empty",
        field: "globals.versions.cilium",
    },
    Case {
        name: "globals.versions: version a section needs is missing",
        edits: &[("flux_operator = \"0.59.0\"\n", "")],
        overlay: "",
        at: Spec("[globals.versions]"),
        message: "`flux_operator` version is missing (needed by [bootstrap.flux_operator])",
        field: "globals.versions",
    },
    Case {
        name: "globals.flux: repository that is not a URL",
        edits: &[(
            "repository = \"https://github.com/Smana/cloud-native-ref.git\"",
            "repository = \"github.com/Smana/cloud-native-ref\"",
        )],
        overlay: "",
        at: Spec("repository = "),
        message: "is not a repository URL",
        field: "globals.flux.repository",
    },
    Case {
        name: "globals.flux: missing while the Flux instance syncs it",
        edits: &[(
            "[globals.flux]\nrepository = \"https://github.com/Smana/cloud-native-ref.git\"\nreference = \"refs/heads/main\"\n",
            "",
        )],
        overlay: "",
        at: Spec("[globals]"),
        message: "[bootstrap.flux_instance] syncs [globals.flux] repository, which is missing",
        field: "globals",
    },
    // [network] and its subnet tiers.
    Case {
        name: "network: unknown key",
        edits: &[("vpc_cidr = ", "vpc_cdir = \"10.0.0.0/16\"\nvpc_cidr = ")],
        overlay: "",
        at: Spec("vpc_cdir"),
        message: "unknown field `vpc_cdir`",
        field: "network.vpc_cdir",
    },
    Case {
        name: "network: wrong type",
        edits: &[("s3_gateway_endpoint = true", "s3_gateway_endpoint = \"yes\"")],
        overlay: "",
        at: Spec("s3_gateway_endpoint"),
        message: "invalid type: string \"yes\", expected a boolean",
        field: "network.s3_gateway_endpoint",
    },
    Case {
        name: "network: availability zone of another region",
        edits: &[("azs = [\"eu-west-3a\"", "azs = [\"us-east-1a\"")],
        overlay: "",
        at: Spec("us-east-1a"),
        message: "is not an availability zone of region eu-west-3",
        field: "network.azs[0]",
    },
    Case {
        name: "network: availability zone listed twice",
        edits: &[("\"eu-west-3c\"]", "\"eu-west-3a\"]")],
        overlay: "",
        at: Spec("azs = "),
        message: "availability zone `eu-west-3a` is listed twice",
        field: "network.azs[2]",
    },
    Case {
        name: "network: NAT gateway without a public tier",
        edits: &[(
            "[network.subnets.public]\ncidrs = [\"10.0.48.0/24\", \"10.0.49.0/24\", \"10.0.50.0/24\"]\ntags = { \"kubernetes.io/role/elb\" = \"1\" }\n",
            "",
        )],
        overlay: "",
        at: Spec("nat = "),
        message: "NAT gateways need a `public` subnet tier",
        field: "network.nat",
    },
    Case {
        name: "network: private zone name that is not a DNS name",
        edits: &[("name = \"priv.aws.ogenki.io\" }", "name = \"priv aws\" }")],
        overlay: "",
        at: Spec("private_zone"),
        message: "`priv aws` is not a DNS name",
        field: "network.private_zone.name",
    },
    Case {
        name: "network: private access CIDR out of range",
        edits: &[("\"100.100.0.0/16\"", "\"100.100.0.0/33\"")],
        overlay: "",
        at: Spec("allowed_cidrs"),
        message: "`100.100.0.0/33` is not an IPv4 CIDR",
        field: "network.private_access.allowed_cidrs[0]",
    },
    Case {
        name: "network.subnets: overlapping subnets",
        edits: &[("\"10.0.16.0/20\"", "\"10.0.8.0/21\"")],
        overlay: "",
        at: Spec("10.0.8.0/21"),
        message: "overlaps `10.0.0.0/20`",
        field: "network.subnets.private.cidrs[1]",
    },
    Case {
        name: "network.subnets: subnet outside the VPC",
        edits: &[("\"10.0.49.0/24\"", "\"10.9.49.0/24\"")],
        overlay: "",
        at: Spec("10.9.49.0/24"),
        message: "is not inside the VPC CIDRs",
        field: "network.subnets.public.cidrs[1]",
    },
    Case {
        name: "network.subnets: fewer CIDRs than zones",
        edits: &[("\"10.0.53.0/24\", \"10.0.54.0/24\"]", "\"10.0.53.0/24\"]")],
        overlay: "",
        at: Spec("10.0.52.0/24"),
        message: "2 CIDRs for 3 availability zones",
        field: "network.subnets.intra.cidrs",
    },
    Case {
        name: "network.subnets: unknown tier",
        edits: &[("[network.subnets.intra]", "[network.subnets.database]")],
        overlay: "",
        at: Spec("[network.subnets.database]"),
        message: "unknown field `database`",
        field: "network.subnets.database",
    },
    Case {
        name: "network.subnets: tier tag key the engine owns",
        edits: &[("\"cilium.io/pod-subnet\" = \"true\"", "\"engine:spec\" = \"true\"")],
        overlay: "",
        at: Spec("engine:spec"),
        message: "tag keys starting with `engine:` are the engine's own",
        field: "network.subnets.pod.tags.\"engine:spec\"",
    },
    // [openbao.server] and its snapshots.
    Case {
        name: "openbao.server: unknown mode",
        edits: &[("mode = \"dev\"", "mode = \"prod\"")],
        overlay: "",
        at: Spec("mode = "),
        message: "unknown variant `prod`, expected `dev` or `ha`",
        field: "openbao.server.mode",
    },
    Case {
        name: "openbao.server: missing mode",
        edits: &[("mode = \"dev\"                  # 1 node; \"ha\" runs 5\n", "")],
        overlay: "",
        at: Spec("[openbao.server]"),
        message: "missing field `mode`",
        field: "openbao.server",
    },
    Case {
        name: "openbao.server: plugin over plain http",
        edits: &[("kms_plugin_url = \"https://", "kms_plugin_url = \"http://")],
        overlay: "",
        at: Spec("kms_plugin_url"),
        message: "the KMS plugin must be downloaded over https://",
        field: "openbao.server.kms_plugin_url",
    },
    Case {
        name: "openbao.server: host name with a dot",
        edits: &[("hostname = \"bao\"", "hostname = \"bao.internal\"")],
        overlay: "",
        at: Spec("hostname = "),
        message: "`bao.internal` is not a DNS label",
        field: "openbao.server.hostname",
    },
    Case {
        name: "openbao.server: the same alias for both keys",
        edits: &[(
            "snapshot_key_alias = \"xplane-openbao-snapshot\"",
            "snapshot_key_alias = \"openbao-seal\"",
        )],
        overlay: "",
        at: Spec("snapshot_key_alias"),
        message: "the snapshot key needs its own alias",
        field: "openbao.server.snapshot_key_alias",
    },
    Case {
        name: "openbao.server: needs the private subnet tier",
        edits: &[(
            "[network.subnets.private]\ncidrs = [\"10.0.0.0/20\", \"10.0.16.0/20\", \"10.0.32.0/20\"]\ntags = { \"kubernetes.io/role/internal-elb\" = \"1\", \"karpenter.sh/discovery\" = \"aws-0\" }\n",
            "",
        )],
        overlay: "",
        at: Spec("[openbao.server]"),
        message: "the OpenBao nodes and load balancer need `[network.subnets.private]`",
        field: "openbao.server",
    },
    Case {
        name: "openbao.server.snapshots: bucket name S3 refuses",
        edits: &[(
            "bucket = \"eu-west-3-ogenki-openbao-snapshot\"",
            "bucket = \"Snapshots_Bucket\"",
        )],
        overlay: "",
        at: Spec("bucket = "),
        message: "`Snapshots_Bucket` is not a valid S3 bucket name",
        field: "openbao.server.snapshots.bucket",
    },
    Case {
        name: "openbao.server.snapshots: zero retention",
        edits: &[("retention_days = 30", "retention_days = 0")],
        overlay: "",
        at: Spec("retention_days = 0"),
        message: "snapshots must be kept at least 1 day",
        field: "openbao.server.snapshots.retention_days",
    },
    // [eks], its timeouts, node groups, addons, access entries, pod identities, karpenter.
    Case {
        name: "eks: unknown key",
        edits: &[("public_access = false", "public_access = false\nversion = \"1.36\"")],
        overlay: "",
        at: Spec("version = \"1.36\""),
        message: "unknown field `version`",
        field: "eks.version",
    },
    Case {
        name: "eks: service CIDR too large",
        edits: &[("service_cidr = \"172.20.0.0/16\"", "service_cidr = \"172.20.0.0/8\"")],
        overlay: "",
        at: Spec("service_cidr"),
        message: "is not a service CIDR EKS accepts",
        field: "eks.service_cidr",
    },
    Case {
        name: "eks.timeouts: duration without a unit",
        edits: &[("cluster = \"30m\"", "cluster = \"30\"")],
        overlay: "",
        at: Spec("cluster = \"30\""),
        message: "`30` is not a duration",
        field: "eks.timeouts.cluster",
    },
    Case {
        name: "eks.timeouts: zero duration",
        edits: &[("addon = \"20m\"", "addon = \"0m\"")],
        overlay: "",
        at: Spec("addon = "),
        message: "`0m` is not a duration",
        field: "eks.timeouts.addon",
    },
    Case {
        name: "eks.node_groups: negative size",
        edits: &[("min_size = 2", "min_size = -1")],
        overlay: "",
        at: Spec("max_size"),
        message: "sizes need 0 <= min_size <= max_size",
        field: "eks.node_groups.main.max_size",
    },
    Case {
        name: "eks.node_groups: max_pods out of range",
        edits: &[("max_pods = 110", "max_pods = 2000")],
        overlay: "",
        at: Spec("max_pods"),
        message: "max_pods must be between 1 and 1024",
        field: "eks.node_groups.main.max_pods",
    },
    Case {
        name: "eks.node_groups: max_pods on an image that is not Bottlerocket",
        edits: &[("ami_type = \"BOTTLEROCKET_x86_64\"", "ami_type = \"AL2023_x86_64_STANDARD\"")],
        overlay: "",
        at: Spec("ami_type"),
        message: "needs a BOTTLEROCKET_* ami_type",
        field: "eks.node_groups.main.ami_type",
    },
    Case {
        name: "eks.node_groups: label value with a space",
        edits: &[("max_pods = 110", "max_pods = 110\nlabels = { role = \"system nodes\" }")],
        overlay: "",
        at: Spec("labels = "),
        message: "`system nodes` is not a Kubernetes label value",
        field: "eks.node_groups.main.labels.role",
    },
    Case {
        name: "eks.node_groups: taint with an empty key",
        edits: &[("key = \"node.cilium.io/agent-not-ready\"", "key = \"\"")],
        overlay: "",
        at: Spec("taints = "),
        message: "`` is not a Kubernetes label key",
        field: "eks.node_groups.main.taints[0].key",
    },
    Case {
        name: "eks.node_groups: subnet tier is not a node group setting",
        edits: &[("max_pods = 110", "max_pods = 110\nsubnet_tier = \"intra\"")],
        overlay: "",
        at: Spec("subnet_tier"),
        message: "unknown field `subnet_tier`",
        field: "eks.node_groups.main.subnet_tier",
    },
    Case {
        name: "eks.addons: version in another format",
        edits: &[("[eks.addons.kube-proxy]", "[eks.addons.kube-proxy]\nversion = \"1.33.0\"")],
        overlay: "",
        at: Spec("version = \"1.33.0\""),
        message: "`1.33.0` is not an addon version",
        field: "eks.addons.kube-proxy.version",
    },
    Case {
        name: "eks.access_entries: principal that is not an IAM ARN",
        edits: &[(
            "[eks.addons.kube-proxy]",
            "[eks.access_entries.ops]\nprincipal_arn = \"arn:aws:iam::123:role/ops\"\n\n[eks.addons.kube-proxy]",
        )],
        overlay: "",
        at: Spec("principal_arn"),
        message: "is not an IAM role or user ARN",
        field: "eks.access_entries.ops.principal_arn",
    },
    Case {
        name: "eks.pod_identities: namespace that is not a Kubernetes name",
        edits: &[("namespace = \"crossplane-system\"", "namespace = \"Crossplane_System\"")],
        overlay: "",
        at: Spec("Crossplane_System"),
        message: "is not a Kubernetes namespace name",
        field: "eks.pod_identities.crossplane.namespace",
    },
    Case {
        name: "eks.pod_identities: empty service account",
        edits: &[("service_account = \"provider-aws\"", "service_account = \"\"")],
        overlay: "",
        at: Spec("service_account = \"\""),
        message: "`service_account` must not be empty",
        field: "eks.pod_identities.crossplane.service_account",
    },
    Case {
        name: "eks.pod_identities: no policy at all",
        edits: &[("[\"arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy\"]", "[]")],
        overlay: "",
        at: Spec("[eks.pod_identities.ebs-csi]"),
        message: "give `managed_policies`, an inline `policy` or named inline `policies`",
        field: "eks.pod_identities.ebs-csi",
    },
    Case {
        name: "eks.pod_identities: the name karpenter takes",
        edits: &[("[eks.pod_identities.ebs-csi]", "[eks.pod_identities.karpenter]")],
        overlay: "",
        at: Spec("[eks.pod_identities.karpenter]"),
        message: "`karpenter` is the pod identity `[eks.karpenter]` makes",
        field: "eks.pod_identities.karpenter",
    },
    Case {
        name: "eks.node_role_policies: effect neither Allow nor Deny",
        edits: &[("Effect = \"Allow\"", "Effect = \"Permit\"")],
        overlay: "",
        at: Spec("Effect = "),
        message: "Effect must be \"Allow\" or \"Deny\"",
        field: "eks.node_role_policies.cilium_eni_aws-0.Statement[0].Effect",
    },
    Case {
        name: "eks.pod_identities.policies: action without its service",
        edits: &[("\"ec2:CreateTags\",", "\"CreateTags\",")],
        overlay: "",
        at: Spec("\"CreateTags\""),
        message: "`CreateTags` is not an IAM action",
        field: "eks.pod_identities.crossplane.policies.crossplane_ec2_aws-0.Statement[0].Action[9]",
    },
    Case {
        name: "eks.node_role_policies: principal in a role's own policy",
        edits: &[("Sid = \"CiliumEni\", ", "Sid = \"CiliumEni\", Principal = \"*\", ")],
        overlay: "",
        at: Spec("Principal = "),
        message: "unknown statement key `Principal`",
        field: "eks.node_role_policies.cilium_eni_aws-0.Statement[0].Principal",
    },
    Case {
        name: "eks.karpenter: service account another pod identity has",
        edits: &[(
            "namespace = \"karpenter\"",
            "namespace = 'crossplane-system'\nservice_account = 'provider-aws'",
        )],
        overlay: "",
        at: Spec("'provider-aws'"),
        message: "`crossplane-system/provider-aws` already has pod identity `crossplane`",
        field: "eks.karpenter.service_account",
    },
    // [openbao]: OpenBao's configuration.
    Case {
        name: "openbao: address that is not a URL",
        edits: &[(
            "address = \"https://bao.priv.aws.ogenki.io:8200\"",
            "address = \"bao.priv:8200\"",
        )],
        overlay: "",
        at: Spec("address = "),
        message: "`bao.priv:8200` is not an http(s) URL",
        field: "openbao.address",
    },
    Case {
        name: "openbao: CA file that does not exist",
        edits: &[(
            "ca_file = \"~/.config/engine/pki/root-ca.crt\"",
            "ca_file = \"pki/root-ca.crt\"",
        )],
        overlay: "",
        at: Spec("ca_file = "),
        message: "No such file or directory",
        field: "openbao.ca_file",
    },
    Case {
        name: "openbao.init: empty secret prefix",
        edits: &[("secret_prefix = \"openbao/cloud-native-ref\"", "secret_prefix = \"\"")],
        overlay: "",
        at: Spec("secret_prefix"),
        message: "the prefix must not be empty",
        field: "openbao.init.secret_prefix",
    },
    Case {
        name: "openbao.init: a secret place without a name",
        edits: &[(
            "root_token_secret = \"openbao/cloud-native-ref/tokens/root#token\"",
            "root_token_secret = \"#token\"",
        )],
        overlay: "",
        at: Spec("root_token_secret"),
        message: "expected NAME or NAME#field",
        field: "openbao.init.root_token_secret",
    },
    Case {
        name: "openbao.mounts: path with an empty segment",
        edits: &[("[openbao.mounts.apps]", "[openbao.mounts.\"apps//v2\"]")],
        overlay: "",
        at: Spec("apps//v2"),
        message: "`apps//v2` is not a valid OpenBao path",
        field: "openbao.mounts.\"apps//v2\"",
    },
    Case {
        name: "openbao.mounts: path OpenBao keeps",
        edits: &[("[openbao.mounts.apps]", "[openbao.mounts.sys]")],
        overlay: "",
        at: Spec("[openbao.mounts.sys]"),
        message: "`sys/` is OpenBao's own path",
        field: "openbao.mounts.sys",
    },
    Case {
        name: "openbao.mounts: duration in weeks",
        edits: &[("max_lease_ttl = \"94670856s\"", "max_lease_ttl = \"5w\"")],
        overlay: "",
        at: Spec("max_lease_ttl"),
        message: "unknown duration unit `w`",
        field: "openbao.mounts.pki_private_issuer.max_lease_ttl",
    },
    Case {
        name: "openbao.policies: a policy defined twice",
        edits: &[(
            "dir = \"openbao/policies\"",
            "dir = \"openbao/policies\"\ninline = { admin = 'path \"*\" { capabilities = [\"read\"] }' }",
        )],
        overlay: "",
        at: Spec("inline = "),
        message: "policy `admin` is also defined in `dir` or `files`",
        field: "openbao.policies.inline.admin",
    },
    Case {
        name: "openbao.pki: mount that is not a PKI engine",
        edits: &[("mount = \"pki_private_issuer\"", "mount = \"platform\"")],
        overlay: "",
        at: Spec("mount = \"platform\""),
        message: "`platform` must be listed in [openbao.mounts] with type \"pki\"",
        field: "openbao.pki.mount",
    },
    Case {
        name: "openbao.pki.roles: ttl above max_ttl",
        edits: &[("max_ttl = \"90d\"", "max_ttl = \"7d\"")],
        overlay: "",
        at: Spec("[openbao.pki.roles.ogenki]"),
        message: "ttl exceeds max_ttl",
        field: "openbao.pki.roles.ogenki",
    },
    Case {
        name: "openbao.pki.roles: unknown key type",
        edits: &[("key_type = \"any\"", "key_type = \"dsa\"")],
        overlay: "",
        at: Spec("key_type = \"dsa\""),
        message: "`dsa` is not a key type",
        field: "openbao.pki.roles.ogenki.key_type",
    },
    Case {
        name: "openbao.tls: renewal window longer than the certificate",
        edits: &[(
            "secret = \"certificates/priv.aws.ogenki.io/openbao\"   # read",
            "secret = \"certificates/priv.aws.ogenki.io/openbao\"\nrenew_before_days = 400   # read",
        )],
        overlay: "",
        at: Spec("renew_before_days"),
        message: "400 is not between 1 and 364",
        field: "openbao.tls.renew_before_days",
    },
    Case {
        name: "openbao.userpass: a password in the spec",
        edits: &[(
            "policies = [\"admin\", \"pki-admin\"]",
            "policies = [\"admin\", \"pki-admin\"]\npassword = \"hunter2\"",
        )],
        overlay: "",
        at: Spec("password = "),
        message: "unknown field `password`",
        field: "openbao.userpass.users.admin.password",
    },
    Case {
        name: "openbao.userpass: policy that is not defined",
        edits: &[("policies = [\"admin\", \"pki-admin\"]", "policies = [\"admins\"]")],
        overlay: "",
        at: Spec("policies = [\"admins\"]"),
        message: "policy `admins` is not defined in [openbao.policies]",
        field: "openbao.userpass.users.admin.policies",
    },
    Case {
        name: "openbao.userpass: mount path of a secrets engine",
        edits: &[(
            "[openbao.userpass.users.admin]",
            "[openbao.userpass]\nmount = \"platform\"\n\n[openbao.userpass.users.admin]",
        )],
        overlay: "",
        at: Spec("mount = \"platform\""),
        message: "`platform` is also a secrets engine path",
        field: "openbao.userpass.mount",
    },
    Case {
        name: "openbao.jwt: two sources of keys",
        edits: &[(
            "cluster_issuer = true",
            "cluster_issuer = true\noidc_discovery_url = \"https://oidc.example.org\"",
        )],
        overlay: "",
        at: Spec("[openbao.jwt.\"jwt/aws-0\"]"),
        message: "set exactly one of oidc_discovery_url, jwt_validation_pubkeys or cluster_issuer",
        field: "openbao.jwt.\"jwt/aws-0\"",
    },
    Case {
        name: "openbao.jwt.roles: policy that is not defined",
        edits: &[("token_policies = [\"cert-manager\"]", "token_policies = [\"certmanager\"]")],
        overlay: "",
        at: Spec("certmanager"),
        message: "policy `certmanager` is not defined in [openbao.policies]",
        field: "openbao.jwt.\"jwt/aws-0\".roles.cert-manager.token_policies",
    },
    // [bootstrap] and its releases.
    Case {
        name: "bootstrap: unknown key",
        edits: &[(
            "timeout_seconds = 600",
            "timeout_seconds = 600\nkubeconfig_path = \"kube/config\"",
        )],
        overlay: "",
        at: Spec("kubeconfig_path"),
        message: "unknown field `kubeconfig_path`",
        field: "bootstrap.kubeconfig_path",
    },
    Case {
        name: "bootstrap: zero timeout",
        edits: &[("timeout_seconds = 600", "timeout_seconds = 0")],
        overlay: "",
        at: Spec("timeout_seconds = 0"),
        message: "a timeout of 0 seconds",
        field: "bootstrap.timeout_seconds",
    },
    Case {
        name: "bootstrap: kubeconfig that does not exist",
        edits: &[(
            "timeout_seconds = 600",
            "timeout_seconds = 600\nkubeconfig = \"kube/missing.yaml\"",
        )],
        overlay: "",
        at: Spec("kubeconfig = "),
        message: "no kubeconfig file at `kube/missing.yaml`",
        field: "bootstrap.kubeconfig",
    },
    Case {
        name: "bootstrap: vars key a ConfigMap refuses",
        edits: &[(
            "environment = \"dev\"\npublic_domain_name",
            "\"team name\" = \"dev\"\npublic_domain_name",
        )],
        overlay: "",
        at: Spec("[bootstrap.vars]"),
        message: "`team name` is not a ConfigMap or Secret key",
        field: "bootstrap.vars",
    },
    Case {
        name: "bootstrap.gateway_api: unknown channel",
        edits: &[("channel = \"experimental\"", "channel = \"beta\"")],
        overlay: "",
        at: Spec("channel = "),
        message: "`beta`: expected `experimental` or `standard`",
        field: "bootstrap.gateway_api.channel",
    },
    Case {
        name: "bootstrap.cilium: chart that is not OCI",
        edits: &[(
            "chart = \"oci://quay.io/cilium/charts/cilium\"",
            "chart = \"https://helm.cilium.io/cilium\"",
        )],
        overlay: "",
        at: Spec("helm.cilium.io"),
        message: "is not an OCI chart reference",
        field: "bootstrap.cilium.chart",
    },
    Case {
        name: "bootstrap.flux_operator: missing chart",
        edits: &[(
            "chart = \"oci://ghcr.io/controlplaneio-fluxcd/charts/flux-operator\"",
            "wait = true",
        )],
        overlay: "",
        at: Spec("[bootstrap.flux_operator]"),
        message: "missing field `chart`",
        field: "bootstrap.flux_operator",
    },
    Case {
        name: "bootstrap.flux_instance: misspelt component",
        edits: &[(
            "storage_class = \"gp3\"\n",
            "storage_class = \"gp3\"\ncomponents = [\"source-controller\", \"kustomize-controler\"]\n",
        )],
        overlay: "",
        at: Spec("components = "),
        message: "`kustomize-controler` is not a Flux component",
        field: "bootstrap.flux_instance.components",
    },
    Case {
        name: "bootstrap.flux_instance: storage class that is not a Kubernetes name",
        edits: &[("storage_class = \"gp3\"", "storage_class = \"GP3 SSD\"")],
        overlay: "",
        at: Spec("GP3 SSD"),
        message: "`GP3 SSD` is not a Kubernetes object name",
        field: "bootstrap.flux_instance.storage_class",
    },
    Case {
        name: "bootstrap.flux_secret: empty secret-store name",
        edits: &[("githubAppID = \"github/flux-app/app-id\"", "githubAppID = \"\"")],
        overlay: "",
        at: Spec("data = "),
        message: "`githubAppID`: the secret-store entry name is empty",
        field: "bootstrap.flux_secret.data",
    },
    Case {
        name: "bootstrap.storage_class: unknown binding mode",
        edits: &[(
            "provisioner = \"ebs.csi.aws.com\"",
            "provisioner = \"ebs.csi.aws.com\"\nvolume_binding_mode = \"Lazy\"",
        )],
        overlay: "",
        at: Spec("volume_binding_mode"),
        message: "`Lazy`: expected `Immediate` or `WaitForFirstConsumer`",
        field: "bootstrap.storage_class.volume_binding_mode",
    },
    // [llm_platform], behind its feature gate: present, it is still a table.
    Case {
        name: "llm_platform: misspelt section",
        edits: &[("[llm_platform]", "[llm_platfrom]")],
        overlay: "",
        at: Spec("[llm_platfrom]"),
        message: "unknown section `llm_platfrom`",
        field: "llm_platfrom",
    },
    Case {
        name: "llm_platform: not a table",
        edits: &[
            ("[llm_platform]\nbucket = \"eu-west-3-ogenki-llm-models\"\n", ""),
            ("[globals]\n", "llm_platform = true\n\n[globals]\n"),
        ],
        overlay: "",
        at: Spec("llm_platform = true"),
        message: "`llm_platform` must be a table",
        field: "llm_platform",
    },
    Case {
        name: "llm_platform: not a bucket name",
        edits: &[("bucket = \"eu-west-3-ogenki-llm-models\"", "bucket = \"LLM_Models\"")],
        overlay: "",
        at: Spec("bucket = \"LLM_Models\""),
        message: "`LLM_Models` is not an S3 bucket name",
        field: "llm_platform.bucket",
    },
    Case {
        name: "llm_platform: access point mode not octal",
        edits: &[(
            "bucket = \"eu-west-3-ogenki-llm-models\"",
            "bucket = \"eu-west-3-ogenki-llm-models\"\naccess_point = { permissions = \"rwx\" }",
        )],
        overlay: "",
        at: Spec("access_point = { permissions"),
        message: "`rwx` is not an octal mode",
        field: "llm_platform.access_point.permissions",
    },
    // [state]: where state is kept and how it is sealed.
    Case {
        name: "state: a backend that does not exist",
        edits: &[],
        overlay: "[state]\nbackend = \"azurerm\"\n",
        at: Overlay("backend"),
        message: "unknown variant `azurerm`, expected one of `local`, `s3`, `gcs`",
        field: "state.backend",
    },
    Case {
        name: "state: not a bucket name",
        edits: &[],
        overlay: "[state]\nbackend = \"s3\"\nbucket = \"Not_A_Bucket\"\n",
        at: Overlay("bucket"),
        message: "`Not_A_Bucket` is not an S3 bucket name",
        field: "state.bucket",
    },
    Case {
        name: "state.encryption: a passphrase written in the spec",
        edits: &[],
        overlay: "[state.encryption]\nmethod = \"passphrase\"\npassphrase = \"hunter2-hunter2-hunter2\"\n",
        at: Overlay("hunter2"),
        message: "unknown field `passphrase`",
        field: "state.encryption.passphrase",
    },
    // TOML syntax.
    Case {
        name: "toml: unclosed string",
        edits: &[("nat = \"single\"", "nat = \"single")],
        overlay: "",
        at: Spec("nat = \"single"),
        message: "expected newline",
        field: "",
    },
    Case {
        name: "toml: duplicate key",
        edits: &[("nat = \"single\"", "nat = \"single\"\nnat = \"none\"")],
        overlay: "",
        at: Spec("nat = \"none\""),
        message: "duplicate key",
        field: "",
    },
    Case {
        name: "toml: table declared twice",
        edits: &[("[eks.addons.coredns]", "[eks.addons.\"kube-proxy\"]")],
        overlay: "",
        at: Spec("[eks.addons.\"kube-proxy\"]"),
        message: "duplicate key",
        field: "",
    },
    // Overlays: an error in a value the overlay gives names the overlay and its line.
    Case {
        name: "overlay: unknown key",
        edits: &[],
        overlay: "# the sandbox's peers\n[network]\nvpc_cdir = \"10.1.0.0/16\"\n",
        at: Overlay("vpc_cdir"),
        message: "unknown field `vpc_cdir`",
        field: "network.vpc_cdir",
    },
    Case {
        name: "overlay: wrong type",
        edits: &[],
        overlay: "[eks.node_groups.main]\nmin_size = \"2\"\n",
        at: Overlay("min_size"),
        message: "invalid type: string \"2\", expected i64",
        field: "eks.node_groups.main.min_size",
    },
    Case {
        name: "overlay: array replaced by overlapping subnets",
        edits: &[],
        overlay: "[network.subnets.private]\ncidrs = [\"10.0.0.0/20\", \"10.0.8.0/21\", \"10.0.32.0/20\"]\n",
        at: Overlay("cidrs"),
        message: "subnet `10.0.8.0/21` overlaps `10.0.0.0/20`",
        field: "network.subnets.private.cidrs[1]",
    },
    Case {
        name: "overlay: OpenBao over plain http off this machine",
        edits: &[],
        overlay: "[openbao]\naddress = \"http://10.1.2.3:8200\"\n",
        at: Overlay("address"),
        message: "would send OpenBao's root token across the network in clear",
        field: "openbao.address",
    },
    Case {
        name: "overlay: JWT role given a policy that is not defined",
        edits: &[],
        overlay: "[openbao.jwt.\"jwt/aws-0\".roles.external-secrets]\ntoken_policies = [\"eso\"]\n",
        at: Overlay("token_policies"),
        message: "policy `eso` is not defined in [openbao.policies]",
        field: "openbao.jwt.\"jwt/aws-0\".roles.external-secrets.token_policies",
    },
    Case {
        name: "overlay: kubeconfig that does not exist",
        edits: &[],
        overlay: "[bootstrap]\nkubeconfig = \"/nonexistent/kubeconfig\"\n",
        at: Overlay("kubeconfig"),
        message: "no kubeconfig file at `/nonexistent/kubeconfig`",
        field: "bootstrap.kubeconfig",
    },
    Case {
        name: "overlay: pod identity for a service account another one has",
        edits: &[],
        overlay: "[eks.pod_identities.ebs-csi]\nnamespace = \"crossplane-system\"\nservice_account = \"provider-aws\"\n",
        at: Overlay("service_account"),
        message: "`crossplane-system/provider-aws` already has pod identity `crossplane`",
        field: "eks.pod_identities.ebs-csi.service_account",
    },
    Case {
        name: "overlay: unknown section",
        edits: &[],
        overlay: "[netwrok]\nvpc_cidr = \"10.0.0.0/16\"\n",
        at: Overlay("[netwrok]"),
        message: "unknown section `netwrok`",
        field: "netwrok",
    },
    Case {
        name: "overlay: TOML syntax",
        edits: &[],
        overlay: "[bootstrap\nkubeconfig = \"kube/config\"\n",
        at: Overlay("[bootstrap"),
        message: "unclosed table, expected `]`",
        field: "",
    },
    Case {
        name: "overlay: valid, the spec's own mistake still names the spec",
        edits: &[("nat = \"single\"", "nat = \"sngle\"")],
        overlay: "[openbao]\naddress = \"http://127.0.0.1:8200\"\n",
        at: Spec("nat = "),
        message: "unknown variant `sngle`",
        field: "network.nat",
    },
];

/// The files the reference spec reads beside it and in the home directory: its policies, and
/// the offline root's certificate (a placeholder: it is only read, not parsed, before any call).
fn reference_files(dir: &Path) {
    let policies = dir.join("openbao/policies");
    std::fs::create_dir_all(&policies).unwrap();
    for entry in std::fs::read_dir(workspace().join("specs/openbao/policies")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), policies.join(entry.file_name())).unwrap();
    }
    let pki = dir.join(".config/engine/pki");
    std::fs::create_dir_all(&pki).unwrap();
    std::fs::write(pki.join("root-ca.crt"), "-----BEGIN CERTIFICATE-----\n").unwrap();
}

#[test]
fn invalid_specs_are_rejected_with_location_and_no_api_call() {
    let tripwire = Tripwire::start();
    let dir = tempfile::tempdir().unwrap();
    reference_files(dir.path());
    let home = dir.path().to_str().unwrap();
    let path = dir.path().join("aws.toml");
    let overlay_path = dir.path().join("overlay.toml");
    let state = dir.path().join("state.json");
    let lock = dir.path().join("state.json.lock");
    let run = |args: &[&str]| {
        let out = engine_command(&tripwire.endpoint(), args).env("HOME", home).output().unwrap();
        (out.status.code(), text(&out))
    };

    // The reference spec itself is valid here: every error below is its case's.
    let base = aws_spec_text();
    std::fs::write(&path, &base).unwrap();
    let (code, all) = run(&["graph", path.to_str().unwrap()]);
    assert_eq!(code, Some(0), "the reference spec is valid: {all}");

    for (i, case) in CASES.iter().enumerate() {
        let mut bad = base.clone();
        for (from, to) in case.edits {
            assert!(bad.contains(from), "{}: `{from}` not in the reference spec", case.name);
            bad = bad.replacen(from, to, 1);
        }
        std::fs::write(&path, &bad).unwrap();
        let (file, line) = match case.at {
            Spec(needle) => (&path, line_of(&bad, needle)),
            Overlay(needle) => (&overlay_path, line_of(case.overlay, needle)),
        };
        let location = format!("{}:{line}:", file.display());
        let commands: &[&str] =
            if i % EVERY_COMMAND == 0 { &["plan", "apply", "drift"] } else { &["plan"] };
        for command in commands {
            let mut args =
                vec![*command, path.to_str().unwrap(), "--state", state.to_str().unwrap()];
            if !case.overlay.is_empty() {
                std::fs::write(&overlay_path, case.overlay).unwrap();
                args.extend(["--overlay", overlay_path.to_str().unwrap()]);
            }
            if *command == "apply" {
                args.push("--auto-approve");
            }
            let (code, all) = run(&args);
            let name = format!("{} ({command})", case.name);
            assert_eq!(code, Some(1), "{name}: {all}");
            assert!(all.contains("invalid spec "), "{name}: not a spec error\n{all}");
            assert!(all.contains(&location), "{name}: expected {location} in\n{all}");
            assert!(all.contains(case.message), "{name}: expected `{}` in\n{all}", case.message);
            if !case.field.is_empty() {
                let field = format!(": {}: ", case.field);
                assert!(all.contains(&field), "{name}: expected field {} in\n{all}", case.field);
            }
            assert!(!state.exists() && !lock.exists(), "{name}: no state written, no lock taken");
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(tripwire.hits.load(Ordering::SeqCst), 0, "an API call was made for an invalid spec");
}
