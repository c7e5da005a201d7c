"""GKE v1 driven by google-cloud-container (REST)."""
import base64
import time

import pytest
from cryptography import x509
from google.api_core import exceptions
from google.cloud import compute_v1, container_v1

from conftest import PROJECT, REGION, kwargs_for

LOCATION = REGION


@pytest.fixture
def gke(client_kwargs):
    return container_v1.ClusterManagerClient(**client_kwargs)


@pytest.fixture
def network(client_kwargs, name):
    """A VPC with a subnetwork holding pod and service ranges, as a GKE cluster needs."""
    nets = compute_v1.NetworksClient(**client_kwargs)
    subs = compute_v1.SubnetworksClient(**client_kwargs)
    nets.insert(project=PROJECT, network_resource=compute_v1.Network(name=name, auto_create_subnetworks=False)).result(timeout=10)
    sub = compute_v1.Subnetwork(
        name=name,
        network=f"projects/{PROJECT}/global/networks/{name}",
        ip_cidr_range="10.0.0.0/20",
        secondary_ip_ranges=[
            compute_v1.SubnetworkSecondaryRange(range_name="pods", ip_cidr_range="10.16.0.0/14"),
            compute_v1.SubnetworkSecondaryRange(range_name="services", ip_cidr_range="10.20.0.0/20"),
        ],
    )
    subs.insert(project=PROJECT, region=REGION, subnetwork_resource=sub).result(timeout=10)
    return name


def parent():
    return f"projects/{PROJECT}/locations/{LOCATION}"


def cluster_spec(name, network):
    return container_v1.Cluster(
        name=name,
        network=network,
        subnetwork=network,
        initial_cluster_version="1.33",
        ip_allocation_policy=container_v1.IPAllocationPolicy(
            use_ip_aliases=True, cluster_secondary_range_name="pods", services_secondary_range_name="services"
        ),
        workload_identity_config=container_v1.WorkloadIdentityConfig(workload_pool=f"{PROJECT}.svc.id.goog"),
        release_channel=container_v1.ReleaseChannel(channel=container_v1.ReleaseChannel.Channel.REGULAR),
        node_pools=[
            container_v1.NodePool(
                name="system",
                initial_node_count=1,
                config=container_v1.NodeConfig(machine_type="e2-standard-4", labels={"role": "system"}),
                autoscaling=container_v1.NodePoolAutoscaling(enabled=True, min_node_count=1, max_node_count=3),
            )
        ],
        resource_labels={"owner": "engine"},
    )


def wait(gke, op, timeout=10):
    deadline = time.time() + timeout
    while op.status != container_v1.Operation.Status.DONE:
        assert time.time() < deadline, op
        time.sleep(0.05)
        op = gke.get_operation(name=f"{parent()}/operations/{op.name}")
    return op


def make_cluster(gke, name, network):
    op = gke.create_cluster(parent=parent(), cluster=cluster_spec(name, network))
    assert op.operation_type == container_v1.Operation.Type.CREATE_CLUSTER
    wait(gke, op)
    return gke.get_cluster(name=f"{parent()}/clusters/{name}")


def test_cluster_lifecycle(gke, name, network):
    cluster = make_cluster(gke, name, network)
    assert cluster.status == container_v1.Cluster.Status.RUNNING
    assert cluster.self_link == f"https://container.googleapis.com/v1/{parent()}/clusters/{name}"
    assert cluster.endpoint.count(".") == 3
    assert cluster.current_master_version.startswith("1.33.")
    assert cluster.location == LOCATION and len(cluster.locations) == 3
    assert cluster.ip_allocation_policy.cluster_ipv4_cidr_block == "10.16.0.0/14"
    assert cluster.workload_identity_config.workload_pool == f"{PROJECT}.svc.id.goog"
    assert dict(cluster.resource_labels) == {"owner": "engine"}
    pem = base64.b64decode(cluster.master_auth.cluster_ca_certificate)
    ca = x509.load_pem_x509_certificate(pem)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert [p.name for p in cluster.node_pools] == ["system"]
    assert cluster.node_pools[0].status == container_v1.NodePool.Status.RUNNING
    assert name in [c.name for c in gke.list_clusters(parent=parent()).clusters]
    assert name in [c.name for c in gke.list_clusters(parent=f"projects/{PROJECT}/locations/-").clusters]
    assert name not in [c.name for c in gke.list_clusters(parent=f"projects/{PROJECT}/locations/europe-west1").clusters]

    op = gke.delete_cluster(name=f"{parent()}/clusters/{name}")
    assert op.operation_type == container_v1.Operation.Type.DELETE_CLUSTER
    wait(gke, op)
    with pytest.raises(exceptions.NotFound):
        gke.get_cluster(name=f"{parent()}/clusters/{name}")


def test_cluster_errors(gke, name, network):
    with pytest.raises(exceptions.NotFound):
        gke.get_cluster(name=f"{parent()}/clusters/{name}")
    make_cluster(gke, name, network)
    with pytest.raises(exceptions.Conflict):
        gke.create_cluster(parent=parent(), cluster=cluster_spec(name, network))
    with pytest.raises(exceptions.BadRequest):
        gke.create_cluster(parent=parent(), cluster=cluster_spec(f"{name}-x", f"{network}-missing"))
    with pytest.raises(exceptions.BadRequest):
        gke.create_cluster(parent=parent(), cluster=container_v1.Cluster(name="Bad_Name"))


def test_cluster_update_and_labels(gke, name, network):
    cluster = make_cluster(gke, name, network)
    full = f"{parent()}/clusters/{name}"
    op = gke.update_cluster(name=full, update=container_v1.ClusterUpdate(desired_master_version="1.34"))
    assert op.operation_type == container_v1.Operation.Type.UPGRADE_MASTER
    wait(gke, op)
    op = gke.update_cluster(name=full, update=container_v1.ClusterUpdate(desired_logging_service="none"))
    wait(gke, op)
    got = gke.get_cluster(name=full)
    assert got.current_master_version.startswith("1.34.")
    assert got.logging_service == "none"
    # What the engine changes in place, one update at a time.
    networks = container_v1.MasterAuthorizedNetworksConfig(enabled=True, cidr_blocks=[container_v1.MasterAuthorizedNetworksConfig.CidrBlock(display_name="tailnet", cidr_block="10.10.0.0/16")])
    for update in (
        container_v1.ClusterUpdate(desired_master_authorized_networks_config=networks),
        container_v1.ClusterUpdate(desired_release_channel=container_v1.ReleaseChannel(channel=container_v1.ReleaseChannel.Channel.STABLE)),
        container_v1.ClusterUpdate(desired_workload_identity_config=container_v1.WorkloadIdentityConfig(workload_pool=f"{PROJECT}.svc.id.goog")),
        container_v1.ClusterUpdate(desired_monitoring_service="none"),
    ):
        wait(gke, gke.update_cluster(name=full, update=update))
    wait(gke, gke.set_network_policy(request=container_v1.SetNetworkPolicyRequest(name=full, network_policy=container_v1.NetworkPolicy(enabled=False))))
    got = gke.get_cluster(name=full)
    assert got.master_authorized_networks_config.cidr_blocks[0].cidr_block == "10.10.0.0/16"
    assert got.release_channel.channel == container_v1.ReleaseChannel.Channel.STABLE
    assert got.monitoring_service == "none" and not got.network_policy.enabled

    wait(gke, gke.set_labels(request=container_v1.SetLabelsRequest(name=full, resource_labels={"owner": "engine", "env": "test"}, label_fingerprint=cluster.label_fingerprint)))
    got = gke.get_cluster(name=full)
    assert dict(got.resource_labels) == {"owner": "engine", "env": "test"}
    with pytest.raises(exceptions.BadRequest):
        gke.set_labels(request=container_v1.SetLabelsRequest(name=full, resource_labels={}, label_fingerprint=cluster.label_fingerprint))


def test_node_pools(gke, name, network):
    make_cluster(gke, name, network)
    cluster = f"{parent()}/clusters/{name}"
    pool = container_v1.NodePool(
        name="workers",
        initial_node_count=2,
        config=container_v1.NodeConfig(
            machine_type="e2-standard-8",
            taints=[container_v1.NodeTaint(key="dedicated", value="workers", effect=container_v1.NodeTaint.Effect.NO_SCHEDULE)],
        ),
    )
    op = gke.create_node_pool(parent=cluster, node_pool=pool)
    assert op.operation_type == container_v1.Operation.Type.CREATE_NODE_POOL
    wait(gke, op)
    got = gke.get_node_pool(name=f"{cluster}/nodePools/workers")
    assert got.status == container_v1.NodePool.Status.RUNNING
    assert got.config.machine_type == "e2-standard-8"
    assert got.config.taints[0].effect == container_v1.NodeTaint.Effect.NO_SCHEDULE
    assert got.self_link.endswith(f"{cluster}/nodePools/workers")
    assert got.instance_group_urls
    assert [p.name for p in gke.list_node_pools(parent=cluster).node_pools] == ["system", "workers"]
    with pytest.raises(exceptions.Conflict):
        gke.create_node_pool(parent=cluster, node_pool=pool)

    wait(gke, gke.set_node_pool_size(request=container_v1.SetNodePoolSizeRequest(name=f"{cluster}/nodePools/workers", node_count=5)))
    wait(gke, gke.update_node_pool(request=container_v1.UpdateNodePoolRequest(name=f"{cluster}/nodePools/workers", node_version="1.33", labels=container_v1.NodeLabels(labels={"tier": "w"}))))
    got = gke.get_node_pool(name=f"{cluster}/nodePools/workers")
    assert got.version.startswith("1.33.")
    assert dict(got.config.labels) == {"tier": "w"}
    auto = container_v1.NodePoolAutoscaling(enabled=True, min_node_count=1, max_node_count=10)
    wait(gke, gke.set_node_pool_autoscaling(request=container_v1.SetNodePoolAutoscalingRequest(name=f"{cluster}/nodePools/workers", autoscaling=auto)))
    assert gke.get_node_pool(name=f"{cluster}/nodePools/workers").autoscaling.max_node_count == 10
    management = container_v1.NodeManagement(auto_repair=True, auto_upgrade=False)
    wait(gke, gke.set_node_pool_management(request=container_v1.SetNodePoolManagementRequest(name=f"{cluster}/nodePools/workers", management=management)))
    assert gke.get_node_pool(name=f"{cluster}/nodePools/workers").management.auto_upgrade is False
    taints = container_v1.NodeTaints(taints=[container_v1.NodeTaint(key="node.cilium.io/agent-not-ready", value="true", effect=container_v1.NodeTaint.Effect.NO_SCHEDULE)])
    wait(gke, gke.update_node_pool(request=container_v1.UpdateNodePoolRequest(name=f"{cluster}/nodePools/workers", taints=taints, workload_metadata_config=container_v1.WorkloadMetadataConfig(mode=container_v1.WorkloadMetadataConfig.Mode.GKE_METADATA))))
    got = gke.get_node_pool(name=f"{cluster}/nodePools/workers")
    assert got.config.taints[0].key == "node.cilium.io/agent-not-ready"
    assert got.config.workload_metadata_config.mode == container_v1.WorkloadMetadataConfig.Mode.GKE_METADATA

    wait(gke, gke.delete_node_pool(name=f"{cluster}/nodePools/workers"))
    with pytest.raises(exceptions.NotFound):
        gke.get_node_pool(name=f"{cluster}/nodePools/workers")
    with pytest.raises(exceptions.NotFound):
        gke.create_node_pool(parent=f"{parent()}/clusters/{name}-missing", node_pool=pool)


def test_operations_list_and_get(gke, name, network):
    make_cluster(gke, name, network)
    ops = gke.list_operations(parent=parent()).operations
    mine = [o for o in ops if o.target_link.endswith(f"/clusters/{name}")]
    assert mine and mine[0].status == container_v1.Operation.Status.DONE
    got = gke.get_operation(name=f"{parent()}/operations/{mine[0].name}")
    assert got.self_link.endswith(f"/operations/{mine[0].name}")
    with pytest.raises(exceptions.NotFound):
        gke.get_operation(name=f"{parent()}/operations/operation-missing")


def test_server_config(gke):
    config = gke.get_server_config(name=parent())
    assert config.default_cluster_version in config.valid_master_versions


def test_cluster_provisions_then_runs(slow_endpoint, name):
    kw = kwargs_for(slow_endpoint)
    gke = container_v1.ClusterManagerClient(**kw)
    full = f"{parent()}/clusters/{name}"
    op = gke.create_cluster(parent=parent(), cluster=container_v1.Cluster(name=name, initial_node_count=1))
    assert op.status == container_v1.Operation.Status.RUNNING
    assert gke.get_cluster(name=full).status == container_v1.Cluster.Status.PROVISIONING
    with pytest.raises(exceptions.BadRequest):
        gke.delete_cluster(name=full)
    wait(gke, op)
    cluster = gke.get_cluster(name=full)
    assert cluster.status == container_v1.Cluster.Status.RUNNING
    assert [p.name for p in cluster.node_pools] == ["default-pool"]
    op = gke.delete_cluster(name=full)
    assert gke.get_cluster(name=full).status == container_v1.Cluster.Status.STOPPING
    wait(gke, op)
    with pytest.raises(exceptions.NotFound):
        gke.get_cluster(name=full)


def test_workload_identity_issuer(http, gke, name, network):
    make_cluster(gke, name, network)
    status, config = http("GET", f"/v1/{parent()}/clusters/{name}/.well-known/openid-configuration")
    assert status == 200
    assert config["issuer"] == f"https://container.googleapis.com/v1/{parent()}/clusters/{name}"
    keys = gke.get_json_web_keys(request=container_v1.GetJSONWebKeysRequest(parent=f"{parent()}/clusters/{name}")).keys
    assert keys[0].kty == "RSA" and keys[0].alg == "RS256"
