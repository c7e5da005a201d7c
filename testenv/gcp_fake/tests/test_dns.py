"""Cloud DNS v1 driven by google-cloud-dns; private zones and policies, which that client does
not cover, over raw HTTP."""
import pytest
from google.api_core import exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import compute_v1, dns

from conftest import PROJECT


@pytest.fixture
def client(endpoint):
    return dns.Client(project=PROJECT, credentials=AnonymousCredentials(), client_options={"api_endpoint": endpoint})


def test_zone_lifecycle(client, name):
    zone = client.zone(name, f"{name}.example.com.", description="engine test zone")
    assert not zone.exists()
    zone.create()
    assert zone.zone_id and zone.created and len(zone.name_servers) == 4
    assert zone.exists()

    again = client.zone(name)
    again.reload()
    assert again.dns_name == f"{name}.example.com." and again.description == "engine test zone"
    assert name in [z.name for z in client.list_zones()]
    with pytest.raises(exceptions.Conflict):
        client.zone(name, f"{name}.example.com.", description="x").create()

    records = {(r.name, r.record_type) for r in zone.list_resource_record_sets()}
    assert records == {(f"{name}.example.com.", "NS"), (f"{name}.example.com.", "SOA")}
    zone.delete()
    assert not zone.exists()


def test_record_changes(client, name):
    zone = client.zone(name, f"{name}.example.com.", description="records")
    zone.create()
    api = f"api.{name}.example.com."
    changes = zone.changes()
    changes.add_record_set(zone.resource_record_set(api, "A", 300, ["10.0.0.10"]))
    changes.create()
    assert changes.status == "done" and changes.name
    rrs = {r.name: r for r in zone.list_resource_record_sets() if r.record_type == "A"}
    assert rrs[api].rrdatas == ["10.0.0.10"] and rrs[api].ttl == 300

    dup = zone.changes()
    dup.add_record_set(zone.resource_record_set(api, "A", 300, ["10.0.0.11"]))
    with pytest.raises(exceptions.Conflict):
        dup.create()

    swap = zone.changes()
    swap.delete_record_set(zone.resource_record_set(api, "A", 300, ["10.0.0.10"]))
    swap.add_record_set(zone.resource_record_set(api, "A", 60, ["10.0.0.11"]))
    swap.create()
    rrs = {r.name: r for r in zone.list_resource_record_sets() if r.record_type == "A"}
    assert rrs[api].rrdatas == ["10.0.0.11"] and rrs[api].ttl == 60
    assert [c.name for c in zone.list_changes()] == ["1", "2"]

    stale = zone.changes()
    stale.delete_record_set(zone.resource_record_set(api, "A", 300, ["10.0.0.10"]))
    with pytest.raises(exceptions.PreconditionFailed):
        stale.create()

    with pytest.raises(exceptions.BadRequest):  # not empty
        zone.delete()
    last = zone.changes()
    last.delete_record_set(zone.resource_record_set(api, "A", 60, ["10.0.0.11"]))
    last.create()
    zone.delete()


def test_missing_zone(client, name):
    with pytest.raises(exceptions.NotFound):
        client.zone(name).reload()


def test_private_zone_and_rrsets(http, client_kwargs, name):
    nets = compute_v1.NetworksClient(**client_kwargs)
    nets.insert(project=PROJECT, network_resource=compute_v1.Network(name=name, auto_create_subnetworks=False)).result(timeout=10)
    net_url = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/networks/{name}"
    base = f"/dns/v1/projects/{PROJECT}/managedZones"
    zone = {
        "name": name,
        "dnsName": "internal.example.",
        "description": "private",
        "visibility": "private",
        "privateVisibilityConfig": {"networks": [{"networkUrl": net_url}]},
    }
    status, body = http("POST", base, zone)
    assert status == 200, body
    assert body["kind"] == "dns#managedZone" and body["id"].isdigit()
    assert body["privateVisibilityConfig"]["networks"][0]["networkUrl"] == net_url

    bad = dict(zone, name=f"{name}-b", privateVisibilityConfig={"networks": [{"networkUrl": net_url + "-missing"}]})
    assert http("POST", base, bad)[0] == 400

    rr = {"name": "db.internal.example.", "type": "A", "ttl": 30, "rrdatas": ["10.0.0.5"]}
    status, body = http("POST", f"{base}/{name}/rrsets", rr)
    assert status == 200 and body["kind"] == "dns#resourceRecordSet"
    assert http("POST", f"{base}/{name}/rrsets", rr)[0] == 409
    status, body = http("PATCH", f"{base}/{name}/rrsets/db.internal.example./A", {"rrdatas": ["10.0.0.6"]})
    assert status == 200 and body["rrdatas"] == ["10.0.0.6"]
    status, body = http("GET", f"{base}/{name}/rrsets/db.internal.example./A")
    assert body["rrdatas"] == ["10.0.0.6"] and body["ttl"] == 30

    status, op = http("PATCH", f"{base}/{name}", {"description": "still private"})
    assert status == 200 and op["kind"] == "dns#operation" and op["status"] == "done"
    assert http("GET", f"{base}/{name}")[1]["description"] == "still private"

    assert http("DELETE", f"{base}/{name}/rrsets/db.internal.example./A")[0] == 200
    assert http("DELETE", f"{base}/{name}") == (204, None)
    assert http("GET", f"{base}/{name}")[0] == 404


def test_policies(http, client_kwargs, name):
    nets = compute_v1.NetworksClient(**client_kwargs)
    nets.insert(project=PROJECT, network_resource=compute_v1.Network(name=name, auto_create_subnetworks=False)).result(timeout=10)
    net_url = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/networks/{name}"
    base = f"/dns/v1/projects/{PROJECT}/policies"
    status, body = http("POST", base, {"name": name, "enableInboundForwarding": True, "networks": [{"networkUrl": net_url}]})
    assert status == 200 and body["kind"] == "dns#policy" and body["id"].isdigit()
    assert http("POST", base, {"name": name})[0] == 409
    status, body = http("PATCH", f"{base}/{name}", {"enableLogging": True})
    assert status == 200 and body["policy"]["enableLogging"] is True
    status, body = http("GET", base)
    assert name in [p["name"] for p in body["policies"]]
    assert http("DELETE", f"{base}/{name}") == (204, None)
    assert http("GET", f"{base}/{name}")[0] == 404


def test_response_policy_rules(http, client_kwargs, name):
    nets = compute_v1.NetworksClient(**client_kwargs)
    nets.insert(project=PROJECT, network_resource=compute_v1.Network(name=name, auto_create_subnetworks=False)).result(timeout=10)
    net_url = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/networks/{name}"
    base = f"/dns/v1/projects/{PROJECT}/responsePolicies"
    status, body = http("POST", base, {"responsePolicyName": name, "networks": [{"networkUrl": net_url}]})
    assert status == 200 and body["kind"] == "dns#responsePolicy" and body["id"].isdigit()
    rule = {"ruleName": "api", "dnsName": "api.example.", "localData": {"localDatas": [{"name": "api.example.", "type": "A", "ttl": 60, "rrdatas": ["10.0.0.9"]}]}}
    status, body = http("POST", f"{base}/{name}/rules", rule)
    assert status == 200, body
    assert http("GET", f"{base}/{name}/rules/api")[1]["dnsName"] == "api.example."
    assert http("DELETE", f"{base}/{name}/rules/api") == (204, None)
    assert http("DELETE", f"{base}/{name}") == (204, None)


@pytest.fixture
def dns_api(endpoint):
    """Google's discovery-based client (google-api-python-client), which covers what
    google-cloud-dns does not: private zones, `managedZones.update`, policies."""
    from googleapiclient.discovery import build

    return build("dns", "v1", credentials=AnonymousCredentials(), client_options={"api_endpoint": endpoint}, static_discovery=True)


def test_private_zone_update_replaces_labels(dns_api, client_kwargs, name):
    nets = compute_v1.NetworksClient(**client_kwargs)
    nets.insert(project=PROJECT, network_resource=compute_v1.Network(name=name, auto_create_subnetworks=False)).result(timeout=10)
    net_url = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/networks/{name}"
    zones = dns_api.managedZones()
    body = {
        "name": name, "dnsName": f"{name}.internal.", "description": "private", "visibility": "private",
        "labels": {"engine-managed-by": "engine", "team": "other"},
        "privateVisibilityConfig": {"networks": [{"networkUrl": net_url}]},
    }
    zone = zones.create(project=PROJECT, body=body).execute()
    assert zone["visibility"] == "private" and zone["privateVisibilityConfig"]["networks"][0]["networkUrl"] == net_url
    assert name in [z["name"] for z in zones.list(project=PROJECT).execute()["managedZones"]]
    # A patch merges maps; an update replaces the whole zone, so a label goes.
    zones.patch(project=PROJECT, managedZone=name, body={"labels": {"extra": "x"}}).execute()
    assert zones.get(project=PROJECT, managedZone=name).execute()["labels"]["team"] == "other"
    current = zones.get(project=PROJECT, managedZone=name).execute()
    op = zones.update(project=PROJECT, managedZone=name, body={**current, "labels": {"engine-managed-by": "engine"}}).execute()
    assert op["kind"] == "dns#operation"
    assert zones.get(project=PROJECT, managedZone=name).execute()["labels"] == {"engine-managed-by": "engine"}
    zones.delete(project=PROJECT, managedZone=name).execute()
    with pytest.raises(Exception) as gone:
        zones.get(project=PROJECT, managedZone=name).execute()
    assert gone.value.resp.status == 404


def test_policy_lifecycle_through_the_discovery_client(dns_api, client_kwargs, name):
    nets = compute_v1.NetworksClient(**client_kwargs)
    nets.insert(project=PROJECT, network_resource=compute_v1.Network(name=name, auto_create_subnetworks=False)).result(timeout=10)
    net_url = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/networks/{name}"
    policies = dns_api.policies()
    body = {"name": name, "description": "inbound", "enableInboundForwarding": True, "networks": [{"networkUrl": net_url}]}
    created = policies.create(project=PROJECT, body=body).execute()
    assert created["enableInboundForwarding"] is True
    patched = policies.patch(project=PROJECT, policy=name, body={"description": "changed", "enableInboundForwarding": False}).execute()
    assert patched["policy"]["description"] == "changed"
    got = policies.get(project=PROJECT, policy=name).execute()
    assert got["enableInboundForwarding"] is False and got["networks"][0]["networkUrl"] == net_url
    assert name in [p["name"] for p in policies.list(project=PROJECT).execute()["policies"]]
    policies.delete(project=PROJECT, policy=name).execute()


def test_inbound_forwarding_gives_each_subnetwork_a_resolver_address(dns_api, client_kwargs, name):
    nets = compute_v1.NetworksClient(**client_kwargs)
    nets.insert(project=PROJECT, network_resource=compute_v1.Network(name=name, auto_create_subnetworks=False)).result(timeout=10)
    net_url = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/networks/{name}"
    subnet = compute_v1.Subnetwork(name=f"{name}-a", network=net_url, ip_cidr_range="10.77.0.0/24")
    compute_v1.SubnetworksClient(**client_kwargs).insert(project=PROJECT, region="europe-west4", subnetwork_resource=subnet).result(timeout=10)
    addresses = compute_v1.AddressesClient(**client_kwargs)

    def resolvers():
        return [a for a in addresses.list(project=PROJECT, region="europe-west4") if a.purpose == "DNS_RESOLVER" and a.subnetwork.endswith(f"/subnetworks/{name}-a")]

    policies = dns_api.policies()
    body = {"name": name, "description": "inbound", "enableInboundForwarding": True, "networks": [{"networkUrl": net_url}]}
    policies.create(project=PROJECT, body=body).execute()
    found = resolvers()
    assert len(found) == 1 and found[0].address_type == "INTERNAL"
    assert found[0].address.startswith("10.77.0.")
    policies.patch(project=PROJECT, policy=name, body={"enableInboundForwarding": False}).execute()
    assert resolvers() == []
    policies.patch(project=PROJECT, policy=name, body={"enableInboundForwarding": True}).execute()
    assert len(resolvers()) == 1
    policies.delete(project=PROJECT, policy=name).execute()
    assert resolvers() == []
