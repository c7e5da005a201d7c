"""Google Kubernetes Engine v1: clusters and node pools that provision, run and stop through
operations (projects/P/locations/L/operations/N)."""
import copy
import hashlib
import itertools
import re
import time
import uuid
import zlib

import certs
from api import load, merge
from errors import ApiError, invalid, not_found
from hooks.base import Flavor, Hooks

DEFAULT_VERSION = "1.33.5-gke.1308000"
VERSIONS = ["1.34.1-gke.1829001", "1.33.5-gke.1308000", "1.32.9-gke.1108000", "1.31.13-gke.1023000"]
SET_VERBS = {
    "setAddons": "UPDATE_CLUSTER",
    "setLegacyAbac": "UPDATE_CLUSTER",
    "setLocations": "UPDATE_CLUSTER",
    "setLogging": "UPDATE_CLUSTER",
    "setMonitoring": "UPDATE_CLUSTER",
    "setMaintenancePolicy": "SET_MAINTENANCE_POLICY",
    "setNetworkPolicy": "SET_NETWORK_POLICY",
    "setMasterAuth": "SET_MASTER_AUTH",
    "updateMaster": "UPGRADE_MASTER",
    "setAutoscaling": "UPDATE_CLUSTER",
    "setManagement": "SET_NODE_POOL_MANAGEMENT",
}
REQUEST_ONLY = ("projectId", "zone", "clusterId", "nodePoolId", "name", "parent", "labelFingerprint")
_endpoints = itertools.count(1)


class ContainerFlavor(Flavor):
    host = "https://container.googleapis.com/"
    server_set = ()

    def exists_message(self, rel):
        return f"Already exists: {rel}."

    def missing_message(self, rel):
        return f"Not found: {rel}."

    def server_fields(self, ctx, res, rel, new):
        pass

    def operation(self, ctx, kind, target_rel, finish=None):
        project, location = target_rel.split("/")[1], target_rel.split("/")[3]
        name = f"operation-{int(time.time() * 1000)}-{uuid.uuid4().hex[:8]}"
        rel = f"projects/{project}/locations/{location}/operations/{name}"

        def render(op):
            out = {
                "name": name,
                "zone": location,
                "operationType": kind,
                "status": "DONE" if op.done else "RUNNING",
                "selfLink": self.link(rel),
                "targetLink": self.link(target_rel),
                "startTime": _time(op.start),
            }
            if op.done:
                out["endTime"] = _time(op.end)
            return out

        op = ctx.app.ops.start(ctx.key(rel), ctx.key(f"projects/{project}/locations/{location}/operations"), kind, target_rel, ctx.route.method_id, render, finish)
        return op


def _time(ts):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1e9):09d}Z"


def _version(requested):
    if not requested or requested in ("latest", "-"):
        return DEFAULT_VERSION
    for v in VERSIONS:
        if v == requested or v.startswith(requested + "."):
            return v
    raise invalid(f'Master version "{requested}" is unsupported.', field="cluster.initialClusterVersion")


def _cluster_rel(ctx):
    p = ctx.params
    return f"projects/{p['projectsId']}/locations/{p['locationsId']}/clusters/{p['clustersId']}"


def _busy(ctx, entry, rel):
    op = entry.meta.get("op")
    if op is not None and not op.done:
        raise ApiError(
            400,
            f"Cluster is running incompatible operation {op.key.rsplit('/', 1)[-1]}.",
            status="FAILED_PRECONDITION",
            reason="failedPrecondition",
        )


def _cluster(ctx, rel):
    entry = ctx.app.store.get(ctx.key(rel))
    if entry is None:
        raise not_found(f"Not found: {rel}.")
    return entry


def _track(ctx, cluster, op):
    cluster.meta["op"] = op
    return op.render()


def _compute_network(ctx, project, network, subnetwork, region):
    """GKE refuses a named network or subnetwork that does not exist; returns the subnetwork."""
    store = ctx.app.store
    if network and not store.get(f"compute:projects/{project}/global/networks/{network.rsplit('/', 1)[-1]}"):
        raise invalid(f'Network "{network}" does not exist.', field="cluster.network")
    if subnetwork:
        sub = store.get(f"compute:projects/{project}/regions/{region}/subnetworks/{subnetwork.rsplit('/', 1)[-1]}")
        if sub is None:
            raise invalid(f'Subnetwork "{subnetwork}" does not exist.', field="cluster.subnetwork")
        return sub.resource
    return None


class ClusterHooks(Hooks):
    def name_of(self, ctx, resource):
        name = resource.get("name") or ""
        if not re.fullmatch(r"[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?", name):
            raise invalid(
                f'Invalid value for field "cluster.name": "{name}". Must be a match of regex "(?:[a-z](?:[-a-z0-9]{{0,38}}[a-z0-9])?)"',
                field="cluster.name",
            )
        return name

    def on_create(self, ctx, res, rel):
        project, location = rel.split("/")[1], rel.split("/")[3]
        region = location if location.count("-") == 1 else location.rsplit("-", 1)[0]
        if res.get("initialNodeCount") and res.get("nodePools"):
            raise invalid("Cannot specify both initial_node_count and node_pools.", field="cluster.node_pools")
        sub = _compute_network(ctx, project, res.get("network"), res.get("subnetwork"), region)
        policy = res.get("ipAllocationPolicy") or {}
        ranges = {r["rangeName"]: r["ipCidrRange"] for r in (sub or {}).get("secondaryIpRanges", [])}
        for field in ("clusterSecondaryRangeName", "servicesSecondaryRangeName"):
            if policy.get(field) and sub is not None and policy[field] not in ranges:
                raise invalid(
                    f'Retry budget exhausted: secondary range "{policy[field]}" not found in subnetwork "{res["subnetwork"]}".',
                    field=f"cluster.ipAllocationPolicy.{field}",
                )
        version = _version(res.get("initialClusterVersion"))
        n = next(_endpoints)
        res.update(
            {
                "selfLink": ctx.flavor.link(rel),
                "id": hashlib.sha256(f"{rel}{time.time()}".encode()).hexdigest(),
                "location": location,
                "zone": location,
                "createTime": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
                "status": "PROVISIONING",
                "endpoint": f"35.{200 + n // 65536 % 50}.{n // 256 % 256}.{n % 256}",
                "initialClusterVersion": version,
                "currentMasterVersion": version,
                "currentNodeVersion": version,
                "labelFingerprint": _label_fp(res.get("resourceLabels")),
            }
        )
        res.setdefault("locations", [location] if location.count("-") == 2 else [f"{region}-a", f"{region}-b", f"{region}-c"])
        res.setdefault("network", "default")
        res.setdefault("subnetwork", "default")
        res.setdefault("loggingService", "logging.googleapis.com/kubernetes")
        res.setdefault("monitoringService", "monitoring.googleapis.com/kubernetes")
        res.setdefault("releaseChannel", {"channel": "REGULAR"})
        res.setdefault("nodeIpv4CidrSize", 24)
        res["masterAuth"] = dict(res.get("masterAuth") or {})
        res["masterAuth"]["clusterCaCertificate"] = certs.ca_certificate_b64(str(uuid.uuid4()))
        if policy.get("useIpAliases") and sub is not None:
            policy.setdefault("clusterIpv4CidrBlock", ranges.get(policy.get("clusterSecondaryRangeName"), "10.4.0.0/14"))
            policy.setdefault("servicesIpv4CidrBlock", ranges.get(policy.get("servicesSecondaryRangeName"), "10.8.0.0/20"))
        res["clusterIpv4Cidr"] = res.get("clusterIpv4Cidr") or policy.get("clusterIpv4CidrBlock") or "10.4.0.0/14"
        res["servicesIpv4Cidr"] = policy.get("servicesIpv4CidrBlock") or "10.8.0.0/20"
        if res.get("workloadIdentityConfig", {}).get("workloadPool") not in (None, f"{project}.svc.id.goog"):
            raise invalid(f"Workload pool must be {project}.svc.id.goog.", field="cluster.workloadIdentityConfig.workloadPool")
        pools = res.pop("nodePools", None) or []
        if not pools and not res.get("autopilot", {}).get("enabled"):
            pools = [{"name": "default-pool", "initialNodeCount": res.pop("initialNodeCount", 3), "config": res.pop("nodeConfig", {})}]
        ctx.pending_pools = [(p, NodePoolHooks.build(ctx, p, f"{rel}/nodePools/{p['name']}", res)) for p in pools]

    def after_write(self, ctx, kind, rel, entry):
        for pool, np_rel in ctx.pending_pools:
            ctx.app.store.put(ctx.key(np_rel), ctx.key(f"{rel}/nodePools"), pool)
        pools = [ctx.app.store.get(ctx.key(r)) for _, r in ctx.pending_pools]

        def finish():
            entry.resource["status"] = "RUNNING"
            for p in pools:
                p.resource["status"] = "RUNNING"

        return _track(ctx, entry, ctx.latency_op("CREATE_CLUSTER", rel, finish))

    def render(self, ctx, rel, entry):
        out = copy.deepcopy(entry.resource)
        pools = [copy.deepcopy(e.resource) for _, e in sorted(ctx.app.store.children(ctx.key(f"{rel}/nodePools")), key=lambda kv: kv[0])]
        if pools:
            out["nodePools"] = pools
            out["currentNodeCount"] = sum(p.get("initialNodeCount", 0) * len(p.get("locations", [1])) for p in pools)
            out["instanceGroupUrls"] = [u for p in pools for u in p.get("instanceGroupUrls", [])]
        return out

    def delete(self, ctx):
        rel, entry = load(ctx)
        _busy(ctx, entry, rel)
        entry.resource["status"] = "STOPPING"
        store = ctx.app.store

        def finish():
            store.delete(ctx.key(rel))
            for key, _ in store.under(ctx.key(rel)):
                store.delete(key)

        return _track(ctx, entry, ctx.latency_op("DELETE_CLUSTER", rel, finish))

    def update(self, ctx):
        rel, entry = load(ctx)
        _busy(ctx, entry, rel)
        update = ctx.validated_body().get("update") or {}
        cluster = entry.resource
        props = ctx.service.schema("Cluster")["properties"]
        kind = "UPDATE_CLUSTER"
        pool_id = update.pop("desiredNodePoolId", None)
        for field, value in update.items():
            if not field.startswith("desired"):
                continue
            target = field[len("desired")].lower() + field[len("desired") + 1 :]  # desiredFooBar -> fooBar
            if field == "desiredMasterVersion":
                cluster["currentMasterVersion"] = _version(value)
                kind = "UPGRADE_MASTER"
            elif field in ("desiredNodeVersion", "desiredImageType", "desiredNodePoolAutoscaling"):
                kind = "UPGRADE_NODES" if field == "desiredNodeVersion" else kind
                for key, np in ctx.app.store.children(ctx.key(f"{rel}/nodePools")):
                    if pool_id and not key.endswith("/" + pool_id):
                        continue
                    if field == "desiredNodeVersion":
                        np.resource["version"] = _version(value)
                        cluster["currentNodeVersion"] = np.resource["version"]
                    elif field == "desiredImageType":
                        np.resource.setdefault("config", {})["imageType"] = value
                    else:
                        np.resource["autoscaling"] = value
            elif target in props:
                cluster[target] = merge(cluster.get(target, {}), value) if isinstance(value, dict) and isinstance(cluster.get(target), dict) else value
            elif field == "desiredEnablePrivateEndpoint":
                cluster.setdefault("privateClusterConfig", {})["enablePrivateEndpoint"] = value
        return self._reconcile(ctx, entry, rel, kind)

    def _reconcile(self, ctx, entry, rel, kind):
        entry.resource["status"] = "RECONCILING"

        def finish():
            if entry.resource.get("status") == "RECONCILING":
                entry.resource["status"] = "RUNNING"

        return _track(ctx, entry, ctx.latency_op(kind, rel, finish))

    def set_resource_labels(self, ctx):
        rel, entry = load(ctx)
        _busy(ctx, entry, rel)
        body = ctx.validated_body()
        if body.get("labelFingerprint") != entry.resource.get("labelFingerprint"):
            raise ApiError(
                400,
                "Labels could not be set due to fingerprint mismatch.",
                status="FAILED_PRECONDITION",
                reason="failedPrecondition",
            )
        entry.resource["resourceLabels"] = body.get("resourceLabels") or {}
        entry.resource["labelFingerprint"] = _label_fp(entry.resource["resourceLabels"])
        return self._reconcile(ctx, entry, rel, "SET_LABELS")

    def setter(self, ctx):
        """set* calls whose request fields are cluster fields of the same name."""
        rel, entry = load(ctx)
        _busy(ctx, entry, rel)
        body = ctx.validated_body()
        props = ctx.service.schema("Cluster")["properties"]
        for field, value in body.items():
            if field == "masterVersion":
                entry.resource["currentMasterVersion"] = _version(value)
            elif field == "enabled" and ctx.route.verb == "setLegacyAbac":
                entry.resource["legacyAbac"] = {"enabled": value}
            elif field in props and field not in REQUEST_ONLY:
                entry.resource[field] = value
        return self._reconcile(ctx, entry, rel, SET_VERBS.get(ctx.route.verb, "UPDATE_CLUSTER"))

    def list(self, ctx):
        """Clusters of one location, or of all (`locations/-`)."""
        project, location = ctx.params["projectsId"], ctx.params["locationsId"]
        pattern = f"container:projects/{re.escape(project)}/locations/{'[^/]+' if location == '-' else re.escape(location)}/clusters"
        entries = sorted(ctx.app.store.matching(pattern), key=lambda kv: kv[0])
        return {"clusters": [self.render(ctx, k.split(":", 1)[1], e) for k, e in entries]}

    methods = {"delete": delete, "update": update, "setResourceLabels": set_resource_labels, "list": list}


ClusterHooks.methods.update(
    {verb: ClusterHooks.setter for verb in SET_VERBS if verb not in ("setAutoscaling", "setManagement")}
)


def _label_fp(labels):
    return f"{zlib.crc32(repr(sorted((labels or {}).items())).encode()):08x}"


class NodePoolHooks(Hooks):
    @staticmethod
    def build(ctx, pool, rel, cluster):
        if not re.fullmatch(r"[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?", pool.get("name") or ""):
            raise invalid(f'Invalid value for field "node_pool.name": "{pool.get("name", "")}".', field="nodePool.name")
        project, location = rel.split("/")[1], rel.split("/")[3]
        config = pool.setdefault("config", {})
        config.setdefault("machineType", "e2-medium")
        config.setdefault("diskSizeGb", 100)
        config.setdefault("diskType", "pd-balanced")
        config.setdefault("imageType", "COS_CONTAINERD")
        config.setdefault("serviceAccount", "default")
        config.setdefault("oauthScopes", ["https://www.googleapis.com/auth/cloud-platform"])
        pool.setdefault("initialNodeCount", 3 if not pool.get("autoscaling", {}).get("enabled") else 1)
        pool.setdefault("locations", list(cluster.get("locations") or [location]))
        pool.setdefault("version", cluster.get("currentNodeVersion", DEFAULT_VERSION))
        pool.setdefault("management", {"autoUpgrade": True, "autoRepair": True})
        pool.setdefault("upgradeSettings", {"maxSurge": 1, "strategy": "SURGE"})
        pool["podIpv4CidrSize"] = cluster.get("nodeIpv4CidrSize", 24)
        pool["selfLink"] = ctx.flavor.link(rel)
        pool["status"] = "PROVISIONING"
        cluster_name = rel.split("/")[5]
        pool["instanceGroupUrls"] = [
            f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{z}/instanceGroupManagers/gke-{cluster_name}-{pool['name']}-{hashlib.sha1((rel + z).encode()).hexdigest()[:8]}-grp"
            for z in pool["locations"]
        ]
        pool["etag"] = uuid.uuid4().hex
        return rel

    def name_of(self, ctx, resource):
        return resource.get("name") or ""

    def on_create(self, ctx, res, rel):
        cluster_rel = rel.rsplit("/nodePools/", 1)[0]
        cluster = _cluster(ctx, cluster_rel)
        _busy(ctx, cluster, cluster_rel)
        self.build(ctx, res, rel, cluster.resource)

    def after_write(self, ctx, kind, rel, entry):
        cluster = _cluster(ctx, rel.rsplit("/nodePools/", 1)[0])
        cluster.resource["status"] = "RECONCILING"

        def finish():
            entry.resource["status"] = "RUNNING"
            cluster.resource["status"] = "RUNNING"

        return _track(ctx, cluster, ctx.latency_op("CREATE_NODE_POOL", rel, finish))

    def _mutate(self, ctx, kind, change, status="RECONCILING", finish=None):
        rel, entry = load(ctx)
        cluster_rel = rel.rsplit("/nodePools/", 1)[0]
        cluster = _cluster(ctx, cluster_rel)
        _busy(ctx, cluster, cluster_rel)
        change(entry)
        entry.resource["status"] = status
        cluster.resource["status"] = "RECONCILING"

        def done():
            cluster.resource["status"] = "RUNNING"
            if finish:
                finish(rel)
            else:
                entry.resource["status"] = "RUNNING"

        return _track(ctx, cluster, ctx.latency_op(kind, rel, done))

    def delete(self, ctx):
        store = ctx.app.store
        return self._mutate(ctx, "DELETE_NODE_POOL", lambda e: None, "STOPPING", lambda rel: store.delete(ctx.key(rel)))

    def set_size(self, ctx):
        body = ctx.validated_body()
        if "nodeCount" not in body:
            raise invalid("Required field 'node_count' not specified", field="nodeCount", reason="required")

        def change(entry):
            entry.meta["nodeCount"] = int(body["nodeCount"])
            entry.resource["initialNodeCount"] = int(body["nodeCount"])

        return self._mutate(ctx, "SET_NODE_POOL_SIZE", change)

    def update(self, ctx):
        body = ctx.validated_body()
        config_props = ctx.service.schema("NodeConfig")["properties"]
        wrapped = {"labels": "labels", "resourceLabels": "labels", "taints": "taints", "tags": "tags"}

        def change(entry):
            pool = entry.resource
            for field, value in body.items():
                if field in REQUEST_ONLY or field == "etag":
                    continue
                if field == "nodeVersion":
                    pool["version"] = _version(value)
                elif field in ("locations", "upgradeSettings"):
                    pool[field] = value
                elif field in wrapped and isinstance(value, dict):
                    pool.setdefault("config", {})[field] = value.get(wrapped[field])
                elif field in config_props:
                    pool.setdefault("config", {})[field] = value
            pool["etag"] = uuid.uuid4().hex

        kind = "UPGRADE_NODES" if "nodeVersion" in body else "UPDATE_CLUSTER"
        return self._mutate(ctx, kind, change)

    def setter(self, ctx):
        body = ctx.validated_body()
        field = "autoscaling" if ctx.route.verb == "setAutoscaling" else "management"

        def change(entry):
            entry.resource[field] = body.get(field) or {}

        return self._mutate(ctx, SET_VERBS[ctx.route.verb], change)

    methods = {"delete": delete, "setSize": set_size, "update": update, "setAutoscaling": setter, "setManagement": setter}


class OperationHooks(Hooks):
    def get(self, ctx):
        op = ctx.app.ops.get(ctx.key(ctx.rel))
        if op is None:
            raise not_found(f"Not found: {ctx.rel}.")
        return op.render()

    def list(self, ctx):
        location = ctx.params["locationsId"]
        project = ctx.params["projectsId"]
        ops = [
            o
            for o in ctx.app.ops.ops.values()
            if o.key.startswith(f"container:projects/{project}/locations/")
            and (location == "-" or o.collection == ctx.key(ctx.rel))
        ]
        return {"operations": [o.render() for o in sorted(ops, key=lambda o: o.number)]}

    methods = {"get": get, "list": list}


class LocationHooks(Hooks):
    def server_config(self, ctx):
        return {
            "defaultClusterVersion": DEFAULT_VERSION,
            "validMasterVersions": VERSIONS,
            "validNodeVersions": VERSIONS,
            "defaultImageType": "COS_CONTAINERD",
            "validImageTypes": ["COS_CONTAINERD", "UBUNTU_CONTAINERD"],
            "channels": [
                {"channel": c, "defaultVersion": DEFAULT_VERSION, "validVersions": VERSIONS}
                for c in ("RAPID", "REGULAR", "STABLE")
            ],
        }

    methods = {"getServerConfig": server_config}


class IdentityHooks(Hooks):
    """The cluster's OIDC issuer, which Workload Identity Federation trusts."""

    def openid(self, ctx):
        rel = _cluster_rel(ctx)
        _cluster(ctx, rel)
        issuer = ctx.flavor.link(rel)
        return {
            "issuer": issuer,
            "jwks_uri": f"{issuer}/jwks",
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "claims_supported": ["iss", "sub", "kubernetes.io"],
            "grant_types": ["urn:kubernetes:grant_type:programmatic_authorization"],
        }

    def jwks(self, ctx):
        rel = _cluster_rel(ctx)
        entry = _cluster(ctx, rel)
        return {"keys": [certs.signing_jwk(entry.resource["id"][:40])]}

    methods = {"getOpenid-configuration": openid, "getJwks": jwks}


ClusterHooks.methods["getJwks"] = IdentityHooks.jwks  # described under clusters, served here


def register(hooks):
    identity = IdentityHooks()
    hooks.update(
        {
            "container.projects.locations.clusters": ClusterHooks(),
            "container.projects.locations.clusters.nodePools": NodePoolHooks(),
            "container.projects.locations.operations": OperationHooks(),
            "container.projects.locations": LocationHooks(),
            "container.projects.locations.clusters.well-known": identity,
        }
    )
