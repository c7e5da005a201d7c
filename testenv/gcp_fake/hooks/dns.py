"""Cloud DNS v1: managed zones (public and private), record sets, changes and policies."""
import copy
import ipaddress
import itertools
import time

from api import new_id, rfc3339
from errors import ApiError, already_exists, invalid, not_found, precondition
from hooks.base import Flavor, Hooks, Immediate

NAME_SERVERS = ["ns-cloud-a1.googledomains.com.", "ns-cloud-a2.googledomains.com.", "ns-cloud-a3.googledomains.com.", "ns-cloud-a4.googledomains.com."]


def _dns_time(ts=None):
    ts = time.time() if ts is None else ts
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1000):03d}Z"


def _entity(rel):
    parts = rel.split("/")
    return parts[-2].rstrip("s") if len(parts) >= 2 else "resource", parts[-1]


class DnsFlavor(Flavor):
    host = "https://dns.googleapis.com/"
    server_set = ("id", "kind", "creationTime", "nameServers")

    def field_path(self, name):
        return f"entity.{name}"

    def exists_message(self, rel):
        kind, name = _entity(rel)
        return f"The resource 'entity.{kind}' named '{name}' already exists"

    def missing_message(self, rel):
        kind, name = _entity(rel)
        return f"The '{kind}' resource named '{name}' does not exist."

    def server_fields(self, ctx, res, rel, new):
        props = (ctx.service.schema(ctx.resource_schema()) or {}).get("properties", {})
        if "default" in props.get("kind", {}):
            res["kind"] = props["kind"]["default"]
        if new and "id" in props and props["id"].get("format") in ("int64", "uint64"):
            res["id"] = new_id()
        if new and "creationTime" in props:
            res["creationTime"] = _dns_time()

    def list_envelope(self, ctx, schema, rel):
        props = (ctx.service.schema(schema) or {}).get("properties", {})
        return {"kind": props["kind"]["default"]} if "default" in props.get("kind", {}) else {}

    def operation(self, ctx, kind, target_rel, finish=None):
        entry = ctx.app.store.get(ctx.key(target_rel))
        if finish:
            finish()
        zone_rel = "/".join(target_rel.split("/")[:4])
        number = str(next(_numbers))
        op = {
            "kind": "dns#operation",
            "id": number,
            "startTime": _dns_time(),
            "status": "done",
            "type": kind,
            "user": "fake@gcp-fake.local",
            "zoneContext": {"newValue": copy.deepcopy(entry.resource) if entry else {}},
        }
        ctx.app.store.put(ctx.key(f"{zone_rel}/operations/{number}"), ctx.key(f"{zone_rel}/operations"), op)
        return Immediate(op)


_numbers = itertools.count(1)


def _network_urls(ctx, config, field):
    for i, net in enumerate((config or {}).get("networks") or []):
        url = net.get("networkUrl", "")
        path = url.split("/compute/v1/", 1)[-1]
        if not path.startswith("projects/") or ctx.app.store.get(f"compute:{path}") is None:
            raise invalid(f"Invalid value for '{field}.networks[{i}].networkUrl': '{url}'", field=f"{field}.networks[{i}].networkUrl", reason="invalid")
        kinds = {"entity.policy": "dns#policyNetwork", "entity.responsePolicy": "dns#responsePolicyNetwork"}
        net.setdefault("kind", kinds.get(field, "dns#managedZonePrivateVisibilityConfigNetwork"))


class ManagedZoneHooks(Hooks):
    required = ("name", "dnsName", "description")

    def on_create(self, ctx, res, rel):
        if not res["dnsName"].endswith("."):
            raise invalid(f"Invalid value for 'entity.managedZone.dnsName': '{res['dnsName']}'", field="entity.managedZone.dnsName")
        res.setdefault("visibility", "public")
        if res["visibility"] == "private":
            _network_urls(ctx, res.get("privateVisibilityConfig"), "entity.managedZone.privateVisibilityConfig")
            res.setdefault("privateVisibilityConfig", {"kind": "dns#managedZonePrivateVisibilityConfig", "networks": []})
            res["privateVisibilityConfig"]["kind"] = "dns#managedZonePrivateVisibilityConfig"
        res["nameServers"] = NAME_SERVERS[:] if res["visibility"] == "public" else ["ns-gcp-private.googledomains.com."]
        res.setdefault("labels", {})
        res.setdefault("cloudLoggingConfig", {"kind": "dns#managedZoneCloudLoggingConfig"})
        ctx.zone_records = [
            {"name": res["dnsName"], "type": "NS", "ttl": 21600, "rrdatas": res["nameServers"]},
            {"name": res["dnsName"], "type": "SOA", "ttl": 21600, "rrdatas": [f"{res['nameServers'][0]} cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300"]},
        ]

    def after_write(self, ctx, kind, rel, entry):
        for rr in getattr(ctx, "zone_records", []):
            rr["kind"] = "dns#resourceRecordSet"
            ctx.app.store.put(ctx.key(f"{rel}/rrsets/{rr['name']}/{rr['type']}"), ctx.key(f"{rel}/rrsets"), rr)
        return self.respond(ctx, kind, rel, entry)

    def on_update(self, ctx, patch, entry, rel):
        if patch.get("dnsName", entry.resource["dnsName"]) != entry.resource["dnsName"]:
            raise invalid("Invalid value for 'entity.managedZone.dnsName': the DNS name of a zone cannot change", field="entity.managedZone.dnsName")
        if "privateVisibilityConfig" in patch:
            _network_urls(ctx, patch["privateVisibilityConfig"], "entity.managedZone.privateVisibilityConfig")

    def on_delete(self, ctx, rel, entry):
        for _, rr in ctx.app.store.children(ctx.key(f"{rel}/rrsets")):
            if not (rr.resource["type"] in ("NS", "SOA") and rr.resource["name"] == entry.resource["dnsName"]):
                raise ApiError(400, f"The resource named '{entry.resource['name']}' cannot be deleted because it is not empty", reason="containerNotEmpty", status="FAILED_PRECONDITION")


def _zone(ctx):
    p = ctx.params
    rel = f"projects/{p['project']}/managedZones/{p['managedZone']}"
    entry = ctx.app.store.get(ctx.key(rel))
    if entry is None:
        raise not_found(f"The 'parameters.managedZone' resource named '{p['managedZone']}' does not exist.")
    return rel, entry


def _check_record(zone, rr, field):
    for req in ("name", "type"):
        if not rr.get(req):
            raise invalid(f"Required field '{field}.{req}' not specified", field=f"{field}.{req}", reason="required")
    name, dns_name = rr["name"], zone.resource["dnsName"]
    if not name.endswith("."):
        raise invalid(f"Invalid value for '{field}.name': '{name}'", field=f"{field}.name")
    if not (name == dns_name or name.endswith("." + dns_name)):
        raise ApiError(400, f"The resource '{field}' named '{name} ({rr['type']})' does not match the zone's DNS name", reason="invalid")
    rr["kind"] = "dns#resourceRecordSet"


class RecordSetHooks(Hooks):
    def name_of(self, ctx, resource):
        _check_record(_zone(ctx)[1], resource, "entity.rrset")
        return f"{resource['name']}/{resource['type']}"

    def on_update(self, ctx, patch, entry, rel):
        patch.pop("name", None)
        patch.pop("type", None)


class ChangeHooks(Hooks):
    def create(self, ctx):
        zone_rel, zone = _zone(ctx)
        change = ctx.validated_body()
        store = ctx.app.store
        for i, rr in enumerate(change.get("deletions") or []):
            _check_record(zone, rr, f"entity.change.deletions[{i}]")
            current = store.get(ctx.key(f"{zone_rel}/rrsets/{rr['name']}/{rr['type']}"))
            if current is None:
                raise not_found(f"The resource 'entity.change.deletions[{i}]' named '{rr['name']} ({rr['type']})' does not exist.")
            if {k: current.resource.get(k) for k in ("ttl", "rrdatas")} != {k: rr.get(k) for k in ("ttl", "rrdatas")}:
                raise precondition(f"The resource 'entity.change.deletions[{i}]' named '{rr['name']} ({rr['type']})' does not match the current record set.")
        deleted = {(rr["name"], rr["type"]) for rr in change.get("deletions") or []}
        for i, rr in enumerate(change.get("additions") or []):
            _check_record(zone, rr, f"entity.change.additions[{i}]")
            if (rr["name"], rr["type"]) not in deleted and store.get(ctx.key(f"{zone_rel}/rrsets/{rr['name']}/{rr['type']}")):
                raise already_exists(f"The resource 'entity.change.additions[{i}]' named '{rr['name']} ({rr['type']})' already exists")
        if not change.get("additions") and not change.get("deletions"):
            raise invalid("The 'entity.change' resource must have additions or deletions.", field="entity.change")
        for rr in change.get("deletions") or []:
            store.delete(ctx.key(f"{zone_rel}/rrsets/{rr['name']}/{rr['type']}"))
        for rr in change.get("additions") or []:
            store.put(ctx.key(f"{zone_rel}/rrsets/{rr['name']}/{rr['type']}"), ctx.key(f"{zone_rel}/rrsets"), copy.deepcopy(rr))
        number = str(len(store.children(ctx.key(f"{zone_rel}/changes"))) + 1)
        change.update({"kind": "dns#change", "id": number, "startTime": _dns_time(), "status": "done"})
        store.put(ctx.key(f"{zone_rel}/changes/{number}"), ctx.key(f"{zone_rel}/changes"), change)
        return copy.deepcopy(change)

    methods = {"create": create}


COMPUTE = "https://www.googleapis.com/compute/v1/"


def _compute_path(url):
    return url.split("/compute/v1/", 1)[-1]


class PolicyHooks(Hooks):
    """Inbound forwarding gives every subnetwork of the policy's networks a resolver address,
    as Cloud DNS does: an internal compute address with purpose DNS_RESOLVER, listed by
    `compute.addresses.list` in the subnetwork's region and gone with the forwarding."""

    required = ("name",)

    def on_create(self, ctx, res, rel):
        _network_urls(ctx, res, "entity.policy")
        res.setdefault("enableInboundForwarding", False)
        res.setdefault("enableLogging", False)
        self._resolvers(ctx, res)

    def on_update(self, ctx, patch, entry, rel):
        if "networks" in patch:
            _network_urls(ctx, patch, "entity.policy")
        patch.pop("name", None)
        self._resolvers(ctx, {**entry.resource, **patch})

    def on_delete(self, ctx, rel, entry):
        self._resolvers(ctx, {"name": entry.resource.get("name"), "enableInboundForwarding": False})

    def _resolvers(self, ctx, policy):
        store = ctx.app.store
        prefix = f"dns-forwarding-{policy.get('name')}-"
        for key, _ in list(store.matching(r"compute:.*/addresses")):
            if key.rsplit("/", 1)[-1].startswith(prefix):
                store.delete(key)
        if not policy.get("enableInboundForwarding"):
            return
        networks = {_compute_path(n.get("networkUrl", "")) for n in policy.get("networks") or []}
        taken = {e.resource.get("address") for _, e in store.matching(r"compute:.*/addresses")}
        for key, entry in list(store.matching(r"compute:.*/subnetworks")):
            sub = entry.resource
            if _compute_path(sub.get("network", "")) not in networks:
                continue
            path = key.split(":", 1)[1]
            region_rel = path.rsplit("/subnetworks/", 1)[0]
            hosts = itertools.islice(ipaddress.ip_network(sub["ipCidrRange"]).hosts(), 1, None)
            address = next(str(h) for h in hosts if str(h) not in taken)
            taken.add(address)
            name = f"{prefix}{sub['name']}"[:63]
            rel = f"{region_rel}/addresses/{name}"
            store.put(f"compute:{rel}", f"compute:{region_rel}/addresses", {
                "kind": "compute#address",
                "id": new_id(),
                "creationTimestamp": rfc3339(offset=True),
                "name": name,
                "description": f"DNS inbound forwarder of policy {policy.get('name')}",
                "address": address,
                "addressType": "INTERNAL",
                "purpose": "DNS_RESOLVER",
                "status": "IN_USE",
                "subnetwork": COMPUTE + path,
                "region": COMPUTE + region_rel,
                "selfLink": COMPUTE + rel,
            })


class ResponsePolicyHooks(Hooks):
    def name_of(self, ctx, resource):
        if not resource.get("responsePolicyName"):
            raise invalid("Required field 'entity.responsePolicy.responsePolicyName' not specified", field="responsePolicyName", reason="required")
        return resource["responsePolicyName"]

    def on_create(self, ctx, res, rel):
        _network_urls(ctx, res, "entity.responsePolicy")


class ResponsePolicyRuleHooks(Hooks):
    def name_of(self, ctx, resource):
        if not resource.get("ruleName"):
            raise invalid("Required field 'entity.responsePolicyRule.ruleName' not specified", field="ruleName", reason="required")
        return resource["ruleName"]

    def on_create(self, ctx, res, rel):
        policy = rel.rsplit("/rules/", 1)[0]
        if ctx.app.store.get(ctx.key(policy)) is None:
            raise not_found(f"The 'parameters.responsePolicy' resource named '{policy.rsplit('/', 1)[1]}' does not exist.")


def register(hooks):
    hooks.update(
        {
            "dns.managedZones": ManagedZoneHooks(),
            "dns.resourceRecordSets": RecordSetHooks(),
            "dns.changes": ChangeHooks(),
            "dns.policies": PolicyHooks(),
            "dns.responsePolicies": ResponsePolicyHooks(),
            "dns.responsePolicyRules": ResponsePolicyRuleHooks(),
        }
    )
