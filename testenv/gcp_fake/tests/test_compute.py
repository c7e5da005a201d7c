"""Compute Engine v1 driven by google-cloud-compute (REST)."""
import pytest
from google.api_core import exceptions
from google.cloud import compute_v1

from conftest import PROJECT, REGION, kwargs_for


@pytest.fixture
def clients(client_kwargs):
    class C:
        networks = compute_v1.NetworksClient(**client_kwargs)
        subnetworks = compute_v1.SubnetworksClient(**client_kwargs)
        firewalls = compute_v1.FirewallsClient(**client_kwargs)
        routers = compute_v1.RoutersClient(**client_kwargs)
        addresses = compute_v1.AddressesClient(**client_kwargs)
        global_addresses = compute_v1.GlobalAddressesClient(**client_kwargs)
        global_ops = compute_v1.GlobalOperationsClient(**client_kwargs)
        region_ops = compute_v1.RegionOperationsClient(**client_kwargs)
        zone_ops = compute_v1.ZoneOperationsClient(**client_kwargs)
        templates = compute_v1.InstanceTemplatesClient(**client_kwargs)
        groups = compute_v1.RegionInstanceGroupManagersClient(**client_kwargs)
        health_checks = compute_v1.RegionHealthChecksClient(**client_kwargs)
        backends = compute_v1.RegionBackendServicesClient(**client_kwargs)
        rules = compute_v1.ForwardingRulesClient(**client_kwargs)

    return C


def make_network(clients, name, mode="REGIONAL"):
    net = compute_v1.Network(name=name, auto_create_subnetworks=False, routing_config=compute_v1.NetworkRoutingConfig(routing_mode=mode))
    clients.networks.insert(project=PROJECT, network_resource=net).result(timeout=10)
    return clients.networks.get(project=PROJECT, network=name)


def make_subnet(clients, name, network, cidr="10.0.0.0/20"):
    sub = compute_v1.Subnetwork(
        name=name,
        network=network.self_link,
        ip_cidr_range=cidr,
        private_ip_google_access=True,
        secondary_ip_ranges=[
            compute_v1.SubnetworkSecondaryRange(range_name="pods", ip_cidr_range="10.16.0.0/14"),
            compute_v1.SubnetworkSecondaryRange(range_name="services", ip_cidr_range="10.20.0.0/20"),
        ],
    )
    clients.subnetworks.insert(project=PROJECT, region=REGION, subnetwork_resource=sub).result(timeout=10)
    return clients.subnetworks.get(project=PROJECT, region=REGION, subnetwork=name)


def test_network_lifecycle(clients, name):
    net = make_network(clients, name, "GLOBAL")
    assert net.name == name
    assert net.id > 0
    assert net.self_link == f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/networks/{name}"
    assert net.routing_config.routing_mode == "GLOBAL"
    assert net.creation_timestamp
    assert name in [n.name for n in clients.networks.list(project=PROJECT)]

    op = clients.networks.patch(
        project=PROJECT, network=name, network_resource=compute_v1.Network(routing_config=compute_v1.NetworkRoutingConfig(routing_mode="REGIONAL"))
    )
    op.result(timeout=10)
    assert clients.networks.get(project=PROJECT, network=name).routing_config.routing_mode == "REGIONAL"

    clients.networks.delete(project=PROJECT, network=name).result(timeout=10)
    with pytest.raises(exceptions.NotFound):
        clients.networks.get(project=PROJECT, network=name)


def test_network_errors(clients, name):
    with pytest.raises(exceptions.NotFound):
        clients.networks.get(project=PROJECT, network=name)
    make_network(clients, name)
    with pytest.raises(exceptions.Conflict):
        make_network(clients, name)
    with pytest.raises(exceptions.BadRequest):
        clients.networks.insert(project=PROJECT, network_resource=compute_v1.Network(name="Upper_Case")).result(timeout=10)
    with pytest.raises(exceptions.BadRequest):
        clients.networks.insert(project=PROJECT, network_resource=compute_v1.Network()).result(timeout=10)


def test_operation_wait_and_list(clients, name):
    op = clients.networks.insert(project=PROJECT, network_resource=compute_v1.Network(name=name, auto_create_subnetworks=False))
    waited = clients.global_ops.wait(project=PROJECT, operation=op.name)
    assert waited.status == compute_v1.Operation.Status.DONE
    assert waited.operation_type == "insert"
    assert waited.target_link.endswith(f"/global/networks/{name}")
    assert waited.target_id == clients.networks.get(project=PROJECT, network=name).id
    got = clients.global_ops.get(project=PROJECT, operation=op.name)
    assert got.id == waited.id
    assert op.name in [o.name for o in clients.global_ops.list(project=PROJECT)]
    with pytest.raises(exceptions.NotFound):
        clients.global_ops.get(project=PROJECT, operation="operation-missing")


def test_subnetwork_lifecycle(clients, name):
    net = make_network(clients, name)
    sub = make_subnet(clients, name, net)
    assert sub.network == net.self_link
    assert sub.region.endswith(f"/regions/{REGION}")
    assert sub.private_ip_google_access is True
    assert [(r.range_name, r.ip_cidr_range) for r in sub.secondary_ip_ranges] == [("pods", "10.16.0.0/14"), ("services", "10.20.0.0/20")]
    assert sub.gateway_address == "10.0.0.1"
    assert sub.fingerprint
    assert sub.self_link in clients.networks.get(project=PROJECT, network=name).subnetworks

    # patch needs the current fingerprint
    ranges = list(sub.secondary_ip_ranges) + [compute_v1.SubnetworkSecondaryRange(range_name="extra", ip_cidr_range="10.30.0.0/20")]
    stale = compute_v1.Subnetwork(secondary_ip_ranges=ranges, fingerprint="AAAAAAAAAAA=")
    with pytest.raises(exceptions.PreconditionFailed):
        clients.subnetworks.patch(project=PROJECT, region=REGION, subnetwork=name, subnetwork_resource=stale).result(timeout=10)
    with pytest.raises(exceptions.BadRequest):
        clients.subnetworks.patch(project=PROJECT, region=REGION, subnetwork=name, subnetwork_resource=compute_v1.Subnetwork(secondary_ip_ranges=ranges)).result(timeout=10)
    good = compute_v1.Subnetwork(secondary_ip_ranges=ranges, fingerprint=sub.fingerprint)
    clients.subnetworks.patch(project=PROJECT, region=REGION, subnetwork=name, subnetwork_resource=good).result(timeout=10)
    after = clients.subnetworks.get(project=PROJECT, region=REGION, subnetwork=name)
    assert [r.range_name for r in after.secondary_ip_ranges] == ["pods", "services", "extra"]
    assert after.fingerprint != sub.fingerprint

    req = compute_v1.SubnetworksSetPrivateIpGoogleAccessRequest(private_ip_google_access=False)
    clients.subnetworks.set_private_ip_google_access(
        project=PROJECT, region=REGION, subnetwork=name, subnetworks_set_private_ip_google_access_request_resource=req
    ).result(timeout=10)
    assert clients.subnetworks.get(project=PROJECT, region=REGION, subnetwork=name).private_ip_google_access is False

    expand = compute_v1.SubnetworksExpandIpCidrRangeRequest(ip_cidr_range="10.0.0.0/19")
    clients.subnetworks.expand_ip_cidr_range(
        project=PROJECT, region=REGION, subnetwork=name, subnetworks_expand_ip_cidr_range_request_resource=expand
    ).result(timeout=10)
    assert clients.subnetworks.get(project=PROJECT, region=REGION, subnetwork=name).ip_cidr_range == "10.0.0.0/19"
    with pytest.raises(exceptions.BadRequest):
        shrink = compute_v1.SubnetworksExpandIpCidrRangeRequest(ip_cidr_range="10.0.0.0/24")
        clients.subnetworks.expand_ip_cidr_range(
            project=PROJECT, region=REGION, subnetwork=name, subnetworks_expand_ip_cidr_range_request_resource=shrink
        ).result(timeout=10)

    assert name in [s.name for s in clients.subnetworks.list(project=PROJECT, region=REGION)]
    scoped = dict(clients.subnetworks.aggregated_list(project=PROJECT))
    assert name in [s.name for s in scoped[f"regions/{REGION}"].subnetworks]

    # a network in use cannot go
    with pytest.raises(exceptions.BadRequest):
        clients.networks.delete(project=PROJECT, network=name).result(timeout=10)
    clients.subnetworks.delete(project=PROJECT, region=REGION, subnetwork=name).result(timeout=10)
    clients.networks.delete(project=PROJECT, network=name).result(timeout=10)


def test_subnetwork_needs_existing_network(clients, name):
    sub = compute_v1.Subnetwork(name=name, network=f"global/networks/{name}-missing", ip_cidr_range="10.0.0.0/24")
    with pytest.raises(exceptions.NotFound):
        clients.subnetworks.insert(project=PROJECT, region=REGION, subnetwork_resource=sub).result(timeout=10)
    net = make_network(clients, name)
    bad = compute_v1.Subnetwork(name=name, network=net.self_link, ip_cidr_range="10.0.0.1/24")
    with pytest.raises(exceptions.BadRequest):
        clients.subnetworks.insert(project=PROJECT, region=REGION, subnetwork_resource=bad).result(timeout=10)


def test_firewall_lifecycle(clients, name):
    net = make_network(clients, name)
    fw = compute_v1.Firewall(
        name=name,
        network=net.self_link,
        allowed=[compute_v1.Allowed(I_p_protocol="tcp", ports=["443", "10250"])],
        target_tags=["gke-node"],
    )
    clients.firewalls.insert(project=PROJECT, firewall_resource=fw).result(timeout=10)
    got = clients.firewalls.get(project=PROJECT, firewall=name)
    assert got.direction == "INGRESS" and got.priority == 1000
    assert list(got.source_ranges) == ["0.0.0.0/0"]
    assert got.allowed[0].I_p_protocol == "tcp" and list(got.allowed[0].ports) == ["443", "10250"]
    clients.firewalls.patch(project=PROJECT, firewall=name, firewall_resource=compute_v1.Firewall(source_ranges=["10.0.0.0/8"])).result(timeout=10)
    assert list(clients.firewalls.get(project=PROJECT, firewall=name).source_ranges) == ["10.0.0.0/8"]
    assert name in [f.name for f in clients.firewalls.list(project=PROJECT)]
    clients.firewalls.delete(project=PROJECT, firewall=name).result(timeout=10)
    with pytest.raises(exceptions.NotFound):
        clients.firewalls.get(project=PROJECT, firewall=name)


def test_router_with_nat(clients, name):
    net = make_network(clients, name)
    sub = make_subnet(clients, name, net)
    router = compute_v1.Router(
        name=name,
        network=net.self_link,
        nats=[
            compute_v1.RouterNat(
                name="nat",
                nat_ip_allocate_option="AUTO_ONLY",
                source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
                subnetworks=[compute_v1.RouterNatSubnetworkToNat(name=sub.self_link, source_ip_ranges_to_nat=["ALL_IP_RANGES"])],
                log_config=compute_v1.RouterNatLogConfig(enable=True, filter="ERRORS_ONLY"),
            )
        ],
    )
    clients.routers.insert(project=PROJECT, region=REGION, router_resource=router).result(timeout=10)
    got = clients.routers.get(project=PROJECT, region=REGION, router=name)
    assert got.network == net.self_link
    assert got.nats[0].name == "nat" and got.nats[0].subnetworks[0].name == sub.self_link
    assert got.id > 0

    got.nats[0].min_ports_per_vm = 128
    clients.routers.patch(project=PROJECT, region=REGION, router=name, router_resource=compute_v1.Router(nats=got.nats)).result(timeout=10)
    assert clients.routers.get(project=PROJECT, region=REGION, router=name).nats[0].min_ports_per_vm == 128

    scoped = dict(clients.routers.aggregated_list(project=PROJECT))
    assert name in [r.name for r in scoped[f"regions/{REGION}"].routers]
    clients.routers.delete(project=PROJECT, region=REGION, router=name).result(timeout=10)
    with pytest.raises(exceptions.NotFound):
        clients.routers.get(project=PROJECT, region=REGION, router=name)


def test_router_nat_rejects_missing_subnetwork(clients, name):
    net = make_network(clients, name)
    router = compute_v1.Router(
        name=name,
        network=net.self_link,
        nats=[compute_v1.RouterNat(name="nat", nat_ip_allocate_option="AUTO_ONLY", source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
                                   subnetworks=[compute_v1.RouterNatSubnetworkToNat(name=f"{name}-missing", source_ip_ranges_to_nat=["ALL_IP_RANGES"])])],
    )
    with pytest.raises(exceptions.NotFound):
        clients.routers.insert(project=PROJECT, region=REGION, router_resource=router).result(timeout=10)


def test_addresses(clients, name):
    net = make_network(clients, name)
    sub = make_subnet(clients, name, net, "10.1.0.0/24")
    clients.addresses.insert(project=PROJECT, region=REGION, address_resource=compute_v1.Address(name=f"{name}-ext")).result(timeout=10)
    ext = clients.addresses.get(project=PROJECT, region=REGION, address=f"{name}-ext")
    assert ext.address and ext.status == "RESERVED" and ext.address_type == "EXTERNAL"
    internal = compute_v1.Address(name=f"{name}-int", address_type="INTERNAL", subnetwork=sub.self_link)
    clients.addresses.insert(project=PROJECT, region=REGION, address_resource=internal).result(timeout=10)
    got = clients.addresses.get(project=PROJECT, region=REGION, address=f"{name}-int")
    assert got.address.startswith("10.1.0.")

    labels = compute_v1.RegionSetLabelsRequest(labels={"env": "test"}, label_fingerprint=ext.label_fingerprint)
    clients.addresses.set_labels(project=PROJECT, region=REGION, resource=f"{name}-ext", region_set_labels_request_resource=labels).result(timeout=10)
    labelled = clients.addresses.get(project=PROJECT, region=REGION, address=f"{name}-ext")
    assert dict(labelled.labels) == {"env": "test"}
    with pytest.raises(exceptions.PreconditionFailed):
        clients.addresses.set_labels(project=PROJECT, region=REGION, resource=f"{name}-ext", region_set_labels_request_resource=labels).result(timeout=10)

    scoped = dict(clients.addresses.aggregated_list(project=PROJECT))
    assert {f"{name}-ext", f"{name}-int"} <= {a.name for a in scoped[f"regions/{REGION}"].addresses}

    clients.global_addresses.insert(project=PROJECT, address_resource=compute_v1.Address(name=name)).result(timeout=10)
    assert clients.global_addresses.get(project=PROJECT, address=name).address
    for n in (f"{name}-ext", f"{name}-int"):
        clients.addresses.delete(project=PROJECT, region=REGION, address=n).result(timeout=10)
    assert f"{name}-ext" not in [a.name for a in clients.addresses.list(project=PROJECT, region=REGION)]


def test_instance_group_and_its_template(clients, name):
    net = make_network(clients, name)
    template = compute_v1.InstanceTemplate(
        name=f"{name}-t1",
        properties=compute_v1.InstanceProperties(
            machine_type="e2-small",
            network_interfaces=[compute_v1.NetworkInterface(network=net.self_link)],
        ),
    )
    clients.templates.insert(project=PROJECT, instance_template_resource=template).result(timeout=10)
    t1 = clients.templates.get(project=PROJECT, instance_template=f"{name}-t1")
    missing = compute_v1.InstanceGroupManager(name=name, base_instance_name=name, instance_template="global/instanceTemplates/nope", target_size=1)
    with pytest.raises(exceptions.NotFound):
        clients.groups.insert(project=PROJECT, region=REGION, instance_group_manager_resource=missing).result(timeout=10)
    group = compute_v1.InstanceGroupManager(name=name, base_instance_name=name, instance_template=t1.self_link, target_size=1)
    clients.groups.insert(project=PROJECT, region=REGION, instance_group_manager_resource=group).result(timeout=10)
    got = clients.groups.get(project=PROJECT, region=REGION, instance_group_manager=name)
    assert got.instance_group.endswith(f"/regions/{REGION}/instanceGroups/{name}")
    assert got.target_size == 1 and got.status.is_stable
    # A template in use cannot go.
    with pytest.raises(exceptions.BadRequest):
        clients.templates.delete(project=PROJECT, instance_template=f"{name}-t1").result(timeout=10)
    clients.groups.delete(project=PROJECT, region=REGION, instance_group_manager=name).result(timeout=10)
    clients.templates.delete(project=PROJECT, instance_template=f"{name}-t1").result(timeout=10)


def test_internal_load_balancer(clients, name):
    """What OpenBao's servers sit behind: a regional TCP health check, an INTERNAL backend service
    on an instance group, and a forwarding rule on a reserved internal address."""
    net = make_network(clients, name)
    sub = make_subnet(clients, name, net, "10.2.0.0/24")
    template = compute_v1.InstanceTemplate(name=f"{name}-t", properties=compute_v1.InstanceProperties(machine_type="e2-small"))
    clients.templates.insert(project=PROJECT, instance_template_resource=template).result(timeout=10)
    t = clients.templates.get(project=PROJECT, instance_template=f"{name}-t")
    group = compute_v1.InstanceGroupManager(name=name, base_instance_name=name, instance_template=t.self_link, target_size=1)
    clients.groups.insert(project=PROJECT, region=REGION, instance_group_manager_resource=group).result(timeout=10)
    ig = clients.groups.get(project=PROJECT, region=REGION, instance_group_manager=name).instance_group

    check = compute_v1.HealthCheck(name=name, type_="TCP", tcp_health_check=compute_v1.TCPHealthCheck(port=8200), check_interval_sec=10, timeout_sec=5)
    clients.health_checks.insert(project=PROJECT, region=REGION, health_check_resource=check).result(timeout=10)
    hc = clients.health_checks.get(project=PROJECT, region=REGION, health_check=name)
    assert hc.tcp_health_check.port == 8200 and hc.self_link
    clients.health_checks.patch(project=PROJECT, region=REGION, health_check=name, health_check_resource=compute_v1.HealthCheck(check_interval_sec=30)).result(timeout=10)
    assert clients.health_checks.get(project=PROJECT, region=REGION, health_check=name).check_interval_sec == 30

    backend = compute_v1.BackendService(
        name=name, load_balancing_scheme="INTERNAL", protocol="TCP", network=net.self_link,
        health_checks=[hc.self_link], backends=[compute_v1.Backend(group=ig, balancing_mode="CONNECTION")],
    )
    clients.backends.insert(project=PROJECT, region=REGION, backend_service_resource=backend).result(timeout=10)
    bs = clients.backends.get(project=PROJECT, region=REGION, backend_service=name)
    assert [b.group for b in bs.backends] == [ig] and list(bs.health_checks) == [hc.self_link]

    address = compute_v1.Address(name=name, address_type="INTERNAL", subnetwork=sub.self_link)
    clients.addresses.insert(project=PROJECT, region=REGION, address_resource=address).result(timeout=10)
    ip = clients.addresses.get(project=PROJECT, region=REGION, address=name).address
    rule = compute_v1.ForwardingRule(
        name=name, load_balancing_scheme="INTERNAL", I_p_address=ip, I_p_protocol="TCP", ports=["8200"],
        backend_service=bs.self_link, network=net.self_link, subnetwork=sub.self_link,
    )
    clients.rules.insert(project=PROJECT, region=REGION, forwarding_rule_resource=rule).result(timeout=10)
    fr = clients.rules.get(project=PROJECT, region=REGION, forwarding_rule=name)
    assert fr.I_p_address == ip and list(fr.ports) == ["8200"] and fr.backend_service == bs.self_link

    clients.rules.delete(project=PROJECT, region=REGION, forwarding_rule=name).result(timeout=10)
    clients.backends.delete(project=PROJECT, region=REGION, backend_service=name).result(timeout=10)
    clients.health_checks.delete(project=PROJECT, region=REGION, health_check=name).result(timeout=10)
    with pytest.raises(exceptions.NotFound):
        clients.health_checks.get(project=PROJECT, region=REGION, health_check=name)


def test_region_operations(clients, name):
    net = make_network(clients, name)
    op = clients.subnetworks.insert(
        project=PROJECT, region=REGION, subnetwork_resource=compute_v1.Subnetwork(name=name, network=net.self_link, ip_cidr_range="10.2.0.0/24")
    )
    got = clients.region_ops.get(project=PROJECT, region=REGION, operation=op.name)
    assert got.region.endswith(f"/regions/{REGION}")
    assert clients.region_ops.wait(project=PROJECT, region=REGION, operation=op.name).status == compute_v1.Operation.Status.DONE
    assert op.name in [o.name for o in clients.region_ops.list(project=PROJECT, region=REGION)]
    assert list(clients.zone_ops.list(project=PROJECT, zone=f"{REGION}-a")) == []
    scoped = dict(clients.global_ops.aggregated_list(project=PROJECT))
    assert op.name in [o.name for o in scoped[f"regions/{REGION}"].operations]
    assert scoped["global"].operations


def test_list_paging_and_filter(clients, name):
    for i in range(3):
        make_network(clients, f"{name}-{i}")
    pager = clients.networks.list(request=compute_v1.ListNetworksRequest(project=PROJECT, max_results=1))
    names = [n.name for n in pager]
    assert [f"{name}-{i}" for i in range(3)] == [n for n in names if n.startswith(name)]
    filtered = clients.networks.list(request=compute_v1.ListNetworksRequest(project=PROJECT, filter=f'name = "{name}-1"'))
    assert [n.name for n in filtered] == [f"{name}-1"]


def test_operations_take_their_latency(slow_endpoint, name):
    kw = kwargs_for(slow_endpoint)
    networks = compute_v1.NetworksClient(**kw)
    ops = compute_v1.GlobalOperationsClient(**kw)
    # The client polls through an operations client it builds itself, without the endpoint
    # override (a limitation of google-cloud-compute); hand it ours.
    networks._transport._extended_operations_services["global_operations"] = ops
    op = networks.insert(project=PROJECT, network_resource=compute_v1.Network(name=name, auto_create_subnetworks=False))
    assert not op.done()
    assert ops.get(project=PROJECT, operation=op.name).status == compute_v1.Operation.Status.RUNNING
    op.result(timeout=10)
    done = ops.get(project=PROJECT, operation=op.name)
    assert done.status == compute_v1.Operation.Status.DONE and done.progress == 100 and done.end_time
