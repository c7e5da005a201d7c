"""Compute Engine v1: operations, server-set fields, references between resources."""
import copy
import ipaddress
import itertools
import re
import time
import uuid

from api import fingerprint, load, new_id, rfc3339
from errors import ApiError, invalid, not_found
from hooks.base import Flavor, Hooks

HOST = "https://www.googleapis.com/"


class ComputeFlavor(Flavor):
    host = HOST
    server_set = ("id", "kind", "selfLink", "selfLinkWithId", "creationTimestamp", "region", "zone")

    def field_path(self, name):
        return f"resource.{name}"

    def exists_message(self, rel):
        return f"The resource '{rel}' already exists"

    def missing_message(self, rel):
        return f"The resource '{rel}' was not found"

    def server_fields(self, ctx, res, rel, new):
        props = (ctx.service.schema(ctx.resource_schema()) or {}).get("properties", {})
        if "kind" in props and "default" in props["kind"]:
            res["kind"] = props["kind"]["default"]
        if new:
            res["id"] = new_id()
            res["creationTimestamp"] = rfc3339(offset=True)
        parts = rel.split("/")
        if parts[2] == "regions" and "region" in props:
            res["region"] = self.link("/".join(parts[:4]))
        if parts[2] == "zones" and "zone" in props:
            res["zone"] = self.link("/".join(parts[:4]))
        res["selfLink"] = self.link(rel)
        if "labelFingerprint" in props:
            if "labels" in props and new:
                res.setdefault("labels", {})
            res["labelFingerprint"] = fingerprint({"labels": res.get("labels") or {}})
        if "fingerprint" in props:
            res["fingerprint"] = fingerprint(res)

    def list_envelope(self, ctx, schema, rel):
        props = (ctx.service.schema(schema) or {}).get("properties", {})
        out = {}
        if "default" in props.get("kind", {}):
            out["kind"] = props["kind"]["default"]
        out["id"] = rel
        out["selfLink"] = self.link(rel)
        return out

    def filter(self, ctx, items):
        expr = (ctx.query.get("filter") or "").strip().strip("()")
        if not expr:
            return items
        m = re.fullmatch(r'(\w+)\s*(=|!=|eq|ne)\s*"?([^"]*)"?', expr)
        if not m:
            raise invalid(f"Invalid value for field 'filter': '{expr}'. Invalid list filter expression.", field="filter")
        field, op, value = m.groups()
        if op in ("eq", "ne"):
            keep = lambda v: re.fullmatch(value, str(v)) is not None
        else:
            keep = lambda v: str(v).lower() == value.lower() if isinstance(v, bool) else str(v) == value
        positive = op in ("=", "eq")
        return [i for i in items if keep(i.get(field, "")) == positive]

    def operation(self, ctx, kind, target_rel, finish=None):
        parts = target_rel.split("/")
        scope = "/".join(parts[:4]) if parts[2] in ("regions", "zones") else f"{parts[0]}/{parts[1]}/global"
        name = f"operation-{int(time.time() * 1000)}-{uuid.uuid4().hex[:13]}-{uuid.uuid4().hex[:8]}-{uuid.uuid4().hex[:8]}"
        rel = f"{scope}/operations/{name}"
        entry = ctx.app.store.get(ctx.key(target_rel))
        target_id = entry.resource.get("id") if entry else getattr(ctx, "deleted_id", None)
        op_id = new_id()

        def render(op):
            out = {
                "kind": "compute#operation",
                "id": op_id,
                "name": name,
                "operationType": kind,
                "targetLink": self.link(target_rel),
                "status": "DONE" if op.done else "RUNNING",
                "user": "fake@gcp-fake.local",
                "progress": 100 if op.done else 0,
                "insertTime": rfc3339(op.start, offset=True),
                "startTime": rfc3339(op.start, offset=True),
                "selfLink": self.link(rel),
            }
            if op.meta.get("target_id"):
                out["targetId"] = op.meta["target_id"]
            if op.done:
                out["endTime"] = rfc3339(op.end, offset=True)
            if parts[2] == "regions":
                out["region"] = self.link(scope)
            elif parts[2] == "zones":
                out["zone"] = self.link(scope)
            return out

        op = ctx.app.ops.start(ctx.key(rel), ctx.key(f"{scope}/operations"), kind, target_rel, ctx.route.method_id, render, finish)
        op.meta["target_id"] = target_id
        return op


# References ---------------------------------------------------------------------------------


def reference(ctx, value, collection, region=None):
    """Full URL of a referenced resource (given as URL, partial path or bare name); it must exist."""
    project = ctx.params.get("project")
    value = value.split("/compute/v1/", 1)[-1]
    if not value.startswith("projects/"):
        if value.startswith(("global/", "regions/", "zones/")):
            value = f"projects/{project}/{value}"
        elif region:
            value = f"projects/{project}/regions/{region}/{collection}/{value}"
        else:
            value = f"projects/{project}/global/{collection}/{value}"
    if ctx.app.store.get(ctx.key(value)) is None:
        raise not_found(f"The resource '{value}' was not found")
    return ctx.flavor.link(value)


def cidr(value, field):
    try:
        return ipaddress.ip_network(value, strict=True)
    except ValueError:
        raise invalid(f"Invalid value for field '{field}': '{value}'. Invalid IPCidrRange: {value}", field=field)


def users_of(ctx, link):
    out = []
    for key, entry in ctx.app.store.entries.items():
        if key.startswith("compute:") and entry.resource.get("network") == link and "/operations/" not in key:
            out.append(key.split(":", 1)[1])
    return out


# Resources ----------------------------------------------------------------------------------


class NetworkHooks(Hooks):
    required = ("name",)

    def on_create(self, ctx, res, rel):
        if res.get("IPv4Range"):
            cidr(res["IPv4Range"], "resource.IPv4Range")
        res.setdefault("autoCreateSubnetworks", False)
        res.setdefault("routingConfig", {}).setdefault("routingMode", "REGIONAL")
        res.setdefault("mtu", 1460)
        res.setdefault("networkFirewallPolicyEnforcementOrder", "AFTER_CLASSIC_FIREWALL")

    def render(self, ctx, rel, entry):
        out = copy.deepcopy(entry.resource)
        link = ctx.flavor.link(rel)
        subnets = [
            e.resource["selfLink"]
            for k, e in ctx.app.store.matching(r"compute:projects/[^/]+/regions/[^/]+/subnetworks")
            if e.resource.get("network") == link
        ]
        if subnets:
            out["subnetworks"] = subnets
        return out

    def on_delete(self, ctx, rel, entry):
        users = users_of(ctx, ctx.flavor.link(rel))
        if users:
            raise ApiError(
                400,
                f"The network resource '{rel}' is already being used by '{users[0]}'",
                reason="resourceInUseByAnotherResource",
                status="FAILED_PRECONDITION",
            )


class SubnetworkHooks(Hooks):
    required = ("name", "network", "ipCidrRange")

    def on_create(self, ctx, res, rel):
        res["network"] = reference(ctx, res["network"], "networks")
        net = cidr(res["ipCidrRange"], "resource.ipCidrRange")
        self._check_secondary(res)
        res["gatewayAddress"] = str(next(net.hosts()))
        res.setdefault("privateIpGoogleAccess", False)
        res.setdefault("stackType", "IPV4_ONLY")
        res.setdefault("purpose", "PRIVATE")
        res["state"] = "READY"

    def _check_secondary(self, res):
        names = set()
        for i, rng in enumerate(res.get("secondaryIpRanges") or []):
            field = f"resource.secondaryIpRanges[{i}]"
            if not rng.get("rangeName"):
                raise invalid(f"Required field '{field}.rangeName' not specified", field=field, reason="required")
            if rng["rangeName"] in names:
                raise invalid(f"Invalid value for field '{field}.rangeName': '{rng['rangeName']}'. Duplicate range name.", field=field)
            names.add(rng["rangeName"])
            cidr(rng.get("ipCidrRange", ""), f"{field}.ipCidrRange")

    def on_update(self, ctx, patch, entry, rel):
        if "network" in patch:
            patch["network"] = reference(ctx, patch["network"], "networks")
        for field in ("network", "ipCidrRange"):
            if field in patch and patch[field] != entry.resource.get(field):
                raise invalid(f"Invalid value for field 'resource.{field}': '{patch[field]}'. Field cannot be changed.", field=field)
        self._check_secondary(patch)

    def set_private_ip_google_access(self, ctx):
        rel, entry = load(ctx)
        body = ctx.validated_body()
        entry.resource["privateIpGoogleAccess"] = bool(body.get("privateIpGoogleAccess"))
        ctx.flavor.server_fields(ctx, entry.resource, rel, new=False)
        return self.respond(ctx, "setPrivateIpGoogleAccess", rel, entry)

    def expand_ip_cidr_range(self, ctx):
        rel, entry = load(ctx)
        body = ctx.validated_body()
        if not body.get("ipCidrRange"):
            raise invalid("Required field 'ipCidrRange' not specified", field="ipCidrRange", reason="required")
        new, old = cidr(body["ipCidrRange"], "ipCidrRange"), ipaddress.ip_network(entry.resource["ipCidrRange"])
        if new.version != old.version or not old.subnet_of(new) or new == old:
            raise invalid(
                f"Invalid value for field 'ipCidrRange': '{new}'. The new range must contain the current range {old} and be larger.",
                field="ipCidrRange",
            )
        entry.resource["ipCidrRange"] = str(new)
        ctx.flavor.server_fields(ctx, entry.resource, rel, new=False)
        return self.respond(ctx, "expandIpCidrRange", rel, entry)

    methods = {"setPrivateIpGoogleAccess": set_private_ip_google_access, "expandIpCidrRange": expand_ip_cidr_range}


class FirewallHooks(Hooks):
    required = ("name",)

    def on_create(self, ctx, res, rel):
        res["network"] = reference(ctx, res.get("network") or "default", "networks")
        self._defaults(res)

    def _defaults(self, res):
        if not res.get("allowed") and not res.get("denied"):
            raise invalid("Invalid value for field 'resource': ''. A firewall must have either allowed or denied rules.", field="resource")
        res.setdefault("direction", "INGRESS")
        res.setdefault("priority", 1000)
        res.setdefault("disabled", False)
        if res["direction"] == "INGRESS" and not any(res.get(f) for f in ("sourceRanges", "sourceTags", "sourceServiceAccounts")):
            res["sourceRanges"] = ["0.0.0.0/0"]
        if res["direction"] == "EGRESS" and not res.get("destinationRanges"):
            res["destinationRanges"] = ["0.0.0.0/0"]
        res.setdefault("logConfig", {"enable": False})

    def on_update(self, ctx, patch, entry, rel):
        if "network" in patch:
            patch["network"] = reference(ctx, patch["network"], "networks")


class RouterHooks(Hooks):
    required = ("name", "network")

    def on_create(self, ctx, res, rel):
        self._references(ctx, res)

    def on_update(self, ctx, patch, entry, rel):
        self._references(ctx, patch)

    def _references(self, ctx, res):
        region = ctx.params.get("region")
        if "network" in res:
            res["network"] = reference(ctx, res["network"], "networks")
        names = set()
        for i, nat in enumerate(res.get("nats") or []):
            if not nat.get("name"):
                raise invalid(f"Required field 'resource.nats[{i}].name' not specified", reason="required")
            if nat["name"] in names:
                raise invalid(f"Invalid value for field 'resource.nats[{i}].name': '{nat['name']}'. Duplicate NAT name.")
            names.add(nat["name"])
            if not nat.get("sourceSubnetworkIpRangesToNat"):
                raise invalid(f"Required field 'resource.nats[{i}].sourceSubnetworkIpRangesToNat' not specified", reason="required")
            if not nat.get("natIpAllocateOption"):
                raise invalid(f"Required field 'resource.nats[{i}].natIpAllocateOption' not specified", reason="required")
            for sub in nat.get("subnetworks") or []:
                sub["name"] = reference(ctx, sub.get("name", ""), "subnetworks", region)
            nat["natIps"] = [reference(ctx, ip, "addresses", region) for ip in nat.get("natIps") or []] or None
            if nat["natIps"] is None:
                del nat["natIps"]
            nat.setdefault("enableEndpointIndependentMapping", False)
            nat.setdefault("endpointTypes", ["ENDPOINT_TYPE_VM"])


_external = itertools.count(1)


class AddressHooks(Hooks):
    required = ("name",)

    def on_create(self, ctx, res, rel):
        res.setdefault("addressType", "EXTERNAL")
        region = ctx.params.get("region")
        if res.get("subnetwork"):
            res["subnetwork"] = reference(ctx, res["subnetwork"], "subnetworks", region)
        if res.get("network"):
            res["network"] = reference(ctx, res["network"], "networks")
        if not res.get("address"):
            res["address"] = self._allocate(ctx, res)
        if res["addressType"] == "EXTERNAL":
            res.setdefault("networkTier", "PREMIUM")
        if "/global/" in rel:
            res.setdefault("ipVersion", "IPV4")
        res["status"] = "RESERVED"

    def _allocate(self, ctx, res):
        if res["addressType"] == "INTERNAL" and res.get("subnetwork"):
            sub = ctx.app.store.get(ctx.key(res["subnetwork"].split("/compute/v1/", 1)[1])).resource
            taken = {e.resource.get("address") for _, e in ctx.app.store.matching(r"compute:.*/addresses")}
            for host in itertools.islice(ipaddress.ip_network(sub["ipCidrRange"]).hosts(), 2, None):
                if str(host) not in taken:
                    return str(host)
            raise ApiError(400, "IP space of the subnetwork is exhausted.", reason="ipSpaceExhausted")
        n = next(_external)
        return f"34.{100 + n // 65536 % 100}.{n // 256 % 256}.{n % 256}"


class InstanceTemplateHooks(Hooks):
    required = ("name", "properties")

    def on_delete(self, ctx, rel, entry):
        link = ctx.flavor.link(rel)
        for key, e in ctx.app.store.matching(r"compute:projects/[^/]+/(regions|zones)/[^/]+/instanceGroupManagers"):
            if e.resource.get("instanceTemplate") == link:
                raise ApiError(
                    400,
                    f"The instance_template resource '{rel}' is already being used by "
                    f"'{key.split(':', 1)[1]}'",
                    reason="resourceInUseByAnotherResource",
                    status="FAILED_PRECONDITION",
                )


class InstanceGroupManagerHooks(Hooks):
    """A managed instance group: its template must exist; it reports the instance group it
    manages (what a backend service names) and is stable at once (no VM runs here)."""

    required = ("name", "baseInstanceName")

    def on_create(self, ctx, res, rel):
        self._template(ctx, res)
        res.setdefault("targetSize", 0)
        group = rel.replace("/instanceGroupManagers/", "/instanceGroups/")
        res["instanceGroup"] = ctx.flavor.link(group)
        res["status"] = {"isStable": True}

    def on_update(self, ctx, patch, entry, rel):
        self._template(ctx, patch)

    def _template(self, ctx, res):
        if res.get("instanceTemplate"):
            res["instanceTemplate"] = reference(ctx, res["instanceTemplate"], "instanceTemplates")


# Operations ---------------------------------------------------------------------------------


def _op(ctx):
    op = ctx.app.ops.get(ctx.key(ctx.item_rel()))
    if op is None:
        raise not_found(f"The resource '{ctx.item_rel()}' was not found")
    return op


class OperationHooks(Hooks):
    def get(self, ctx):
        return _op(ctx).render()

    def wait(self, ctx):
        op = _op(ctx)
        deadline = time.time() + 120
        lock = ctx.app.lock
        while not op.settle(time.time()) and time.time() < deadline:
            lock.release()
            try:
                time.sleep(min(0.05, max(0.0, op.start + op.seconds - time.time())) or 0.01)
            finally:
                lock.acquire()
        return op.render()

    def list(self, ctx):
        ops = sorted(ctx.app.ops.children(ctx.key(ctx.rel)), key=lambda o: o.number)
        out = ctx.flavor.list_envelope(ctx, ctx.route.response, ctx.rel)
        out["items"] = [o.render() for o in ops]
        if not out["items"]:
            del out["items"]
        return out

    def delete(self, ctx):
        _op(ctx)
        ctx.app.ops.delete(ctx.key(ctx.item_rel()))
        return {}

    def aggregated(self, ctx):
        project = ctx.params["project"]
        groups = {}
        for op in sorted(ctx.app.ops.ops.values(), key=lambda o: o.number):
            parts = op.key.split(":", 1)[1].split("/")
            if op.key.startswith("compute:") and parts[1] == project:
                scope = "global" if parts[2] == "global" else f"{parts[2]}/{parts[3]}"
                groups.setdefault(scope, []).append(op.render())
        out = ctx.flavor.list_envelope(ctx, ctx.route.response, ctx.rel)
        out["items"] = {scope: {"operations": ops} for scope, ops in groups.items()}
        return out

    methods = {"get": get, "wait": wait, "list": list, "delete": delete, "aggregatedList": aggregated}


def register(hooks):
    hooks.update(
        {
            "compute.networks": NetworkHooks(),
            "compute.subnetworks": SubnetworkHooks(),
            "compute.firewalls": FirewallHooks(),
            "compute.routers": RouterHooks(),
            "compute.addresses": AddressHooks(),
            "compute.globalAddresses": AddressHooks(),
            "compute.instanceTemplates": InstanceTemplateHooks(),
            "compute.regionInstanceGroupManagers": InstanceGroupManagerHooks(),
            "compute.instanceGroupManagers": InstanceGroupManagerHooks(),
            "compute.globalOperations": OperationHooks(),
            "compute.regionOperations": OperationHooks(),
            "compute.zoneOperations": OperationHooks(),
        }
    )
