//! What the cloud-neutral bootstrap does on each cloud, as data: a [`ClusterProfile`] per
//! cluster type, and where the AWS lane's cluster outputs come from.

use engine::Value;
use engine_bootstrap::{ClusterOutputs, ClusterProfile};
use engine_openbao::ClusterIssuer;
use serde_json::json;

/// The EKS cluster of the spec: references to its outputs, and the addons that install the
/// DaemonSets the bootstrap parks.
pub fn eks_outputs() -> ClusterOutputs {
    let cluster = engine_aws::stages::eks::cluster_address();
    ClusterOutputs {
        section: "eks",
        endpoint: Value::reference(&cluster, "endpoint"),
        ca_pem: Value::reference(&cluster, "ca_pem"),
        host: Value::reference(&cluster, "endpoint_host"),
        installed_by: engine_aws::stages::eks::daemonset_installers(),
    }
}

/// What the bootstrap does on EKS: Cilium in ENI mode (with its CNI configuration) replacing
/// the VPC CNI and kube-proxy, `eks-<cluster>-vars`, Flux's `aws` cluster type, and OpenBao's
/// cluster JWT mounts trusting the EKS cluster's OIDC issuer.
pub fn eks_profile() -> ClusterProfile {
    // The reference's CNI configuration (its version follows Cilium's minor releases).
    let cni = json!({
        "cniVersion": "1.0.0",
        "name": "cilium",
        "plugins": [{
            "type": "cilium-cni",
            "eni": {
                "first-interface-index": 1,
                "subnet-tags": {"cilium.io/pod-subnet": "true"},
                "disable-prefix-delegation": false,
            },
        }],
    });
    let cluster = engine_aws::stages::eks::cluster_address();
    ClusterProfile {
        vars_config_map: "eks-{cluster}-vars".into(),
        // The reference's values; `{cluster}` is the cluster's name.
        cilium_values: json!({
            "cluster": {"name": "{cluster}"},
            "kubeProxyReplacement": true,
            "k8sServicePort": 443,
            "ipam": {"mode": "eni"},
            "eni": {
                "enabled": true,
                "awsEnablePrefixDelegation": true,
                "subnetTagsFilter": ["cilium.io/pod-subnet=true"],
                "instanceTagsFilter": ["aws:eks:cluster-name={cluster}"],
                "nodeSpec": {"securityGroupTags": ["karpenter.sh/discovery={cluster}"]},
            },
            "routingMode": "native",
            "devices": "eth+ enp+ ens+ pod-id-link+",
            "egressMasqueradeInterfaces": "eth0",
            "loadBalancer": {"mode": "hybrid"},
            "socketLB": {"enabled": true, "hostNamespaceOnly": true},
            "bandwidthManager": {"enabled": true},
            "bpf": {"preallocateMaps": true},
            "installNoConntrackIptablesRules": true,
            "cni": {"customConf": true, "configMap": "cilium-cni-configuration"},
            // Required on EKS (works around cilium#43493).
            "encryption": {"enabled": true, "type": "wireguard"},
            "gatewayAPI": {"enabled": true},
            "envoy": {"enabled": true},
            "envoyConfig": {"enabled": true},
            "operator": {
                "replicas": 1,
                "rollOutPods": true,
                "unmanagedPodWatcher": {
                    "restart": true,
                    "intervalSeconds": 15,
                    // Agent run pods are left alone.
                    "selector": "!agents.ogenki.io/run-id",
                },
                "prometheus": {"enabled": true, "serviceMonitor": {"enabled": false}},
            },
            "prometheus": {"enabled": true, "serviceMonitor": {"enabled": false}},
            "hubble": {
                "enabled": true,
                "metrics": {"enabled": ["dns", "drop", "tcp", "flow", "port-distribution", "icmp", "httpV2"]},
                "relay": {"enabled": true},
                "ui": {"enabled": true},
            },
            "resources": {"limits": {"cpu": "300m", "memory": "512Mi"}},
        }),
        cni_configuration: Some(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cilium-cni-configuration", "namespace": "kube-system"},
            "data": {"cni-config": serde_json::to_string_pretty(&cni).unwrap_or_default()},
        })),
        parked_daemonsets: vec!["aws-node".into(), "kube-proxy".into()],
        flux_cluster_type: "aws".into(),
        storage_class: None,
        jwt_issuer: Some(ClusterIssuer {
            section: "eks",
            url: Value::reference(&cluster, "oidc_issuer"),
            ca_pem: None,
        }),
    }
}

/// The GKE cluster of the spec: references to its outputs (GKE installs nothing the bootstrap
/// patches).
pub fn gke_outputs() -> ClusterOutputs {
    let cluster = engine_gcp::stages::gke_cluster();
    ClusterOutputs {
        section: "gke",
        endpoint: Value::reference(&cluster, "endpoint_url"),
        ca_pem: Value::reference(&cluster, "ca_pem"),
        host: Value::reference(&cluster, "endpoint"),
        installed_by: vec![],
    }
}

/// What the bootstrap does on GKE: Cilium with Kubernetes IPAM and native routing, installed
/// in GKE's CNI directory (COS's default is read-only) and taking the CNI over exclusively, on
/// GKE's `ens` interfaces, without WireGuard; `gke-<cluster>-vars`; Flux's `gcp` cluster type.
/// The pods range (`ipv4NativeRoutingCIDR`) comes from the spec's Cilium values.
pub fn gke_profile() -> ClusterProfile {
    ClusterProfile {
        vars_config_map: "gke-{cluster}-vars".into(),
        cilium_values: json!({
            "kubeProxyReplacement": true,
            "k8sServicePort": 443,
            "ipam": {"mode": "kubernetes"},
            "routingMode": "native",
            "cni": {"binPath": "/home/kubernetes/bin", "exclusive": true},
            "devices": "ens+",
            "egressMasqueradeInterfaces": "ens4",
            "bandwidthManager": {"enabled": true},
            "gatewayAPI": {"enabled": true},
            "hubble": {"enabled": true, "relay": {"enabled": true}},
            "operator": {"replicas": 1},
        }),
        flux_cluster_type: "gcp".into(),
        // OpenBao's `jwt/gcp-0` trusts the cluster's service-account token issuer.
        jwt_issuer: Some(ClusterIssuer {
            section: "gke",
            url: Value::reference(&engine_gcp::stages::gke_cluster(), "issuer"),
            ca_pem: None,
        }),
        ..ClusterProfile::default()
    }
}
