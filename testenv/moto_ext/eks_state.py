"""State and request validation for the EKS calls moto 5.2.5 does not implement.

Requests are checked against botocore's own EKS service model: required members,
member types, enum values, lengths, ranges and patterns. Errors are moto's EKS
exceptions (HTTP status, `x-amzn-ErrorType` header, JSON body with `message`).

State hangs off moto's own `Cluster` objects (attribute `ext_state`), so like moto's
it is per account and region, goes away with its cluster, and is cleared by moto's
reset API. Every change completes at once, as in moto: addons are ACTIVE and updates
are Successful as soon as they are created.
"""

from __future__ import annotations

import json
import re
from typing import Any

from botocore.loaders import create_loader
from botocore.model import Shape, ServiceModel
from moto.core.utils import utcnow
from moto.eks.exceptions import (
    InvalidParameterException,
    InvalidRequestException,
    ResourceInUseException,
    ResourceNotFoundException,
)
from moto.eks.models import Cluster, EKSBackend
from moto.moto_api._internal import mock_random as random

Json = dict[str, Any]  # request members, response members, stored resources

MODEL = ServiceModel(create_loader().load_service_model("eks", "service-2"), "eks")

# Addons CreateAddon accepts and DescribeAddonVersions lists: name -> (type, namespace).
# One version each; CreateAddon takes any version of the form vX.Y.Z-eksbuild.N.
ADDONS = {
    "vpc-cni": ("networking", "kube-system"),
    "coredns": ("networking", "kube-system"),
    "kube-proxy": ("networking", "kube-system"),
    "aws-ebs-csi-driver": ("storage", "kube-system"),
    "aws-efs-csi-driver": ("storage", "kube-system"),
    "aws-mountpoint-s3-csi-driver": ("storage", "kube-system"),
    "snapshot-controller": ("storage", "kube-system"),
    "eks-pod-identity-agent": ("security", "kube-system"),
    "aws-guardduty-agent": ("security", "amazon-guardduty"),
    "amazon-cloudwatch-observability": ("observability", "amazon-cloudwatch"),
    "eks-node-monitoring-agent": ("observability", "kube-system"),
    "metrics-server": ("observability", "kube-system"),
}
ADDON_VERSION = "v1.0.0-eksbuild.1"
ADDON_VERSION_FORMAT = re.compile(r"^v\d+\.\d+\.\d+-eksbuild\.\d+$")
KUBERNETES_VERSIONS = ["1.29", "1.30", "1.31", "1.32", "1.33", "1.34"]

ACCESS_POLICIES = [
    "AmazonEKSAdminPolicy",
    "AmazonEKSAdminViewPolicy",
    "AmazonEKSClusterAdminPolicy",
    "AmazonEKSEditPolicy",
    "AmazonEKSViewPolicy",
    "AmazonEKSAutoNodePolicy",
    "AmazonEKSBlockStoragePolicy",
    "AmazonEKSComputePolicy",
    "AmazonEKSLoadBalancingPolicy",
    "AmazonEKSNetworkingPolicy",
]
# Access entry types (a plain string in the model; the values are from its documentation).
ACCESS_ENTRY_TYPES = ["STANDARD", "FARGATE_LINUX", "EC2_LINUX", "EC2_WINDOWS", "EC2", "HYBRID_LINUX", "HYPERPOD_LINUX"]
AUTH_MODES = ["CONFIG_MAP", "API_AND_CONFIG_MAP", "API"]  # the only direction a cluster may move
IAM_PRINCIPAL = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:(role|user)/(?:.*/)?([^/]+)$")
IAM_ROLE = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/.+$")

# CreateCluster members moto drops; kept on the cluster so DescribeCluster returns them.
KEPT_CLUSTER_MEMBERS = ["upgradePolicy", "zonalShiftConfig", "computeConfig", "storageConfig", "deletionProtection"]
# UpdateClusterConfig members other than vpc config, logging and access config:
# member -> (update type, update param type).
CONFIG_UPDATES = {
    "upgradePolicy": ("UpgradePolicyUpdate", "UpgradePolicy"),
    "zonalShiftConfig": ("ZonalShiftConfigUpdate", "ZonalShiftConfig"),
    "computeConfig": ("AutoModeUpdate", "ComputeConfig"),
    "storageConfig": ("AutoModeUpdate", "StorageConfig"),
    "kubernetesNetworkConfig": ("AutoModeUpdate", "KubernetesNetworkConfig"),
    "remoteNetworkConfig": ("RemoteNetworkConfigUpdate", "RemoteNetworkConfig"),
    "deletionProtection": ("DeletionProtectionUpdate", "DeletionProtection"),
}


# ---------------------------------------------------------------- validation


def invalid(message: str) -> InvalidParameterException:
    return InvalidParameterException(message=message)


def parse_request(
    operation: str, uri: dict[str, str], query: dict[str, list[str]], body: Any, model: ServiceModel = MODEL
) -> Json:
    """The operation's input members, read from where `model` (EKS's by default) puts them,
    then checked."""
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object")
    shape = model.operation_model(operation).input_shape
    params: Json = {}
    for name, member in shape.members.items():
        location = member.serialization.get("location")
        wire_name = member.serialization.get("name", name)
        if location == "uri":
            value = uri.get(wire_name)
        elif location == "querystring":
            values = query.get(wire_name)
            if values is not None and member.type_name != "list":
                values = _from_query(member, values[-1], name)
            value = values
        elif location is None:
            value = body.get(name)
        else:
            continue
        if value is not None:
            params[name] = value
    check(shape, params, "")
    return params


def _from_query(shape: Shape, raw: str, path: str) -> Any:
    if shape.type_name in ("integer", "long"):
        try:
            return int(raw)
        except ValueError:
            raise invalid(_violation(raw, path, "Member must be an integer")) from None
    if shape.type_name == "boolean":
        if raw.lower() not in ("true", "false"):
            raise invalid(_violation(raw, path, "Member must be a boolean"))
        return raw.lower() == "true"
    return raw


# Unicode classes the models' (Java) patterns use, as Python's `re` can say them.
_UNICODE_CLASSES = {r"\p{L}": r"\w", r"\p{Z}": r"\s", r"\p{N}": r"\d"}


def _matches(pattern: str, value: str) -> bool:
    r"""Whether `value` matches a model's pattern; `\p{L}`, `\p{Z}` and `\p{N}` (Java's letters,
    separators, digits) are read as `\w`, `\s` and `\d` (for letters, a little wider)."""
    for java, python in _UNICODE_CLASSES.items():
        pattern = pattern.replace(java, python)
    return re.match(pattern, value) is not None


def _violation(value: Any, path: str, constraint: str) -> str:
    shown = "null" if value is None else f"'{value}'"
    return f"1 validation error detected: Value {shown} at '{path}' failed to satisfy constraint: {constraint}"


def check(shape: Shape, value: Any, path: str) -> None:
    """Raises InvalidParameterException where `value` breaks `shape`'s constraints."""
    kind = shape.type_name
    python_types = {"structure": dict, "map": dict, "list": list, "string": str, "boolean": bool,
                    "integer": int, "long": int}
    expected = python_types.get(kind)
    if expected and (not isinstance(value, expected) or (expected is int and isinstance(value, bool))):
        raise invalid(_violation(value, path, f"Member must be of type {kind}"))
    meta = shape.metadata
    if kind == "structure":
        for name in shape.required_members:
            if value.get(name) is None:
                raise invalid(_violation(None, _join(path, name), "Member must not be null"))
        for name, member in shape.members.items():
            if value.get(name) is not None:
                check(member, value[name], _join(path, name))
    elif kind == "list":
        for item in value:
            check(shape.member, item, f"{path}.member")
    elif kind == "map":
        for key, item in value.items():
            check(shape.key, key, f"{path}.key")
            check(shape.value, item, f"{path}.value")
    elif kind == "string":
        if shape.enum and value not in shape.enum:
            raise invalid(_violation(value, path, f"Member must satisfy enum value set: [{', '.join(shape.enum)}]"))
        if len(value) < meta.get("min", 0) or len(value) > meta.get("max", len(value)):
            limits = f"{meta.get('min', 0)} and {meta.get('max')}"
            raise invalid(_violation(value, path, f"Member must have length between {limits}"))
        if "pattern" in meta and not _matches(meta["pattern"], value):
            raise invalid(_violation(value, path, f"Member must satisfy regular expression pattern: {meta['pattern']}"))
    elif kind in ("integer", "long"):
        if value < meta.get("min", value) or value > meta.get("max", value):
            limits = f"{meta.get('min')} and {meta.get('max')}"
            raise invalid(_violation(value, path, f"Member must have value between {limits}"))


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def page(items: list[Any], params: Json) -> tuple[list[Any], str | None]:
    """One page of `items` for maxResults / nextToken (an offset into the list)."""
    start = 0
    token = params.get("nextToken")
    if token is not None:
        if not token.isdigit() or int(token) > len(items):
            raise invalid(f"The nextToken is not valid: {token}")
        start = int(token)
    end = start + params.get("maxResults", 100)
    return items[start:end], (str(end) if end < len(items) else None)


# ---------------------------------------------------------------- state


class ClusterState:
    """What a moto Cluster lacks."""

    def __init__(self) -> None:
        self.addons: dict[str, Json] = {}
        self.access_entries: dict[str, Json] = {}
        self.access_policies: dict[str, dict[str, Json]] = {}  # principal -> policy ARN -> association
        self.pod_identities: dict[str, Json] = {}  # association id -> association
        self.updates: dict[str, tuple[str, Json]] = {}  # update id -> (scope, update)


class EksExtension:
    """The extra EKS calls for one account and region (one moto EKS backend).

    Each public method is named after an operation, takes the parsed request
    members and returns the response members.
    """

    def __init__(self, backend: EKSBackend):
        self.backend = backend

    # ---------------------------------------------------------------- helpers

    def _arn(self, resource: str) -> str:
        b = self.backend
        return f"arn:{b.partition}:eks:{b.region_name}:{b.account_id}:{resource}"

    def _cluster(self, name: str) -> tuple[Cluster, ClusterState]:
        cluster = self.backend.clusters.get(name)
        if cluster is None:
            raise ResourceNotFoundException(clusterName=name, message=f"No cluster found for name: {name}.")
        if not hasattr(cluster, "ext_state"):
            cluster.ext_state = ClusterState()
        return cluster, cluster.ext_state

    def _record_update(self, state: ClusterState, scope: str, kind: str, params: list[tuple[str, Any]]) -> Json:
        update = {
            "id": str(random.uuid4()),
            "status": "Successful",
            "type": kind,
            "params": [{"type": t, "value": v if isinstance(v, str) else json.dumps(v)} for t, v in params],
            "createdAt": utcnow(),
            "errors": [],
        }
        state.updates[update["id"]] = (scope, update)
        return update

    def _update_scope(self, cluster: Cluster, state: ClusterState, params: Json) -> str:
        if "nodegroupName" in params:
            name = params["nodegroupName"]
            if name not in cluster.nodegroups:
                raise ResourceNotFoundException(nodegroupName=name, message=f"No node group found for name: {name}.")
            return f"nodegroup/{name}"
        if "addonName" in params:
            return f"addon/{self._addon(cluster, state, params['addonName'])['addonName']}"
        if "capabilityName" in params:
            raise ResourceNotFoundException(message=f"No capability found for name: {params['capabilityName']}.")
        return "cluster"

    # ---------------------------------------------------------------- clusters

    def after_create_cluster(self, cluster: Cluster, params: Json, caller_arn: str) -> None:
        """Keeps what moto drops from CreateCluster; bootstraps the creator's access entry."""
        access = params.get("accessConfig", {})
        cluster.access_config = {
            "authenticationMode": access.get("authenticationMode", "CONFIG_MAP"),
            "bootstrapClusterCreatorAdminPermissions": access.get("bootstrapClusterCreatorAdminPermissions", True),
        }
        for member in KEPT_CLUSTER_MEMBERS:
            if member in params:
                setattr(cluster, _snake(member), params[member])
        # moto returns random text as the CA; AWS returns a base64 PEM certificate.
        cluster.certificate_authority = {"data": _cluster_ca(cluster.name)}
        principal = _iam_principal(caller_arn)
        if (
            cluster.access_config["authenticationMode"] != "CONFIG_MAP"
            and cluster.access_config["bootstrapClusterCreatorAdminPermissions"]
            and IAM_PRINCIPAL.match(principal)
        ):
            self.create_access_entry({"clusterName": cluster.name, "principalArn": principal})
            self.associate_access_policy({
                "clusterName": cluster.name,
                "principalArn": principal,
                "policyArn": self._policy_arn("AmazonEKSClusterAdminPolicy"),
                "accessScope": {"type": "cluster"},
            })

    def before_delete_cluster(self, name: str) -> None:
        cluster = self.backend.clusters.get(name)
        if cluster is None:
            return  # moto answers ResourceNotFoundException
        if getattr(cluster, "deletion_protection", False):
            raise InvalidRequestException(
                clusterName=name, message=f"Cluster {name} has deletion protection enabled; disable it first."
            )
        if cluster.fargate_profiles:
            raise ResourceInUseException(clusterName=name, message="Cluster has fargate profiles attached")

    def update_cluster_version(self, p: Json) -> Json:
        cluster, state = self._cluster(p["name"])
        current, target = cluster.version, p["version"]
        if not re.fullmatch(r"\d+\.\d+", target):
            raise invalid(f"Unsupported Kubernetes version: {target}")
        cur_major, cur_minor = (int(x) for x in current.split("."))
        if [int(x) for x in target.split(".")] != [cur_major, cur_minor + 1]:
            raise invalid(f"Unsupported Kubernetes minor version update from {current} to {target}")
        cluster.version = target
        update = self._record_update(
            state, "cluster", "VersionUpdate", [("Version", target), ("PlatformVersion", cluster.platformVersion)]
        )
        return {"update": update}

    def update_cluster_config(self, p: Json) -> Json:
        cluster, state = self._cluster(p["name"])
        given = [m for m in ("resourcesVpcConfig", "logging", "accessConfig", *CONFIG_UPDATES) if m in p]
        if not given:
            raise invalid("No changes needed: the request does not specify a configuration to update")
        kinds = {CONFIG_UPDATES.get(m, (m,))[0] for m in given}
        if len(kinds) > 1:
            raise invalid("Only one type of update can be allowed.")
        member = given[0]
        value = p[member]
        if member == "resourcesVpcConfig":
            merged = {**cluster.resources_vpc_config, **value}
            if merged.get("endpointPublicAccess") is False and merged.get("endpointPrivateAccess") is False:
                raise invalid("The cluster endpoint must be reachable: enable public or private access")
            cluster.resources_vpc_config = merged
            names = {"subnetIds": "Subnets", "securityGroupIds": "SecurityGroups", "endpointPublicAccess":
                     "EndpointPublicAccess", "endpointPrivateAccess": "EndpointPrivateAccess",
                     "publicAccessCidrs": "PublicAccessCidrs"}
            kind = "VpcConfigUpdate" if {"subnetIds", "securityGroupIds"} & set(value) else "EndpointAccessUpdate"
            params = [(names[k], v) for k, v in value.items() if k in names]
        elif member == "logging":
            cluster.logging = _merge_logging(cluster.logging, value)
            kind, params = "LoggingUpdate", [("ClusterLogging", value.get("clusterLogging", []))]
        elif member == "accessConfig":
            current = cluster.access_config["authenticationMode"]
            mode = value.get("authenticationMode", current)
            if AUTH_MODES.index(mode) <= AUTH_MODES.index(current):
                raise invalid(f"Unsupported authentication mode update from {current} to {mode}")
            cluster.access_config["authenticationMode"] = mode
            kind, params = "AccessConfigUpdate", [("AuthenticationMode", mode)]
        else:
            for m in given:
                setattr(cluster, _snake(m), p[m])
            kind, params = CONFIG_UPDATES[member][0], [(CONFIG_UPDATES[m][1], p[m]) for m in given]
        return {"update": self._record_update(state, "cluster", kind, params)}

    def record_nodegroup_update(self, cluster_name: str, nodegroup_name: str, update: Json) -> None:
        _, state = self._cluster(cluster_name)
        state.updates[update["id"]] = (f"nodegroup/{nodegroup_name}", update)

    def update_nodegroup_version(self, p: Json) -> Json:
        """Moves a node group to the control plane's version (or an older one it names), and to
        another version of its launch template when the request names one."""
        cluster, state = self._cluster(p["clusterName"])
        name = p["nodegroupName"]
        nodegroup = cluster.nodegroups.get(name)
        if nodegroup is None:
            raise ResourceNotFoundException(nodegroupName=name, message=f"No node group found for name: {name}.")
        target = p.get("version", cluster.version)
        if not re.fullmatch(r"\d+\.\d+", target):
            raise invalid(f"Unsupported Kubernetes version: {target}")
        if [int(x) for x in target.split(".")] > [int(x) for x in cluster.version.split(".")]:
            raise invalid(f"Nodegroup version {target} is newer than the cluster version {cluster.version}")
        template = p.get("launchTemplate")
        if template is not None:
            current = nodegroup.launch_template
            if not current:
                raise invalid("A launch template can only be given for node groups created with one")
            if "id" in template and "name" in template:
                raise invalid("Either launchTemplate id or name can be given, not both")
            if ("id" in template and template["id"] != current.get("id")) or (
                "name" in template and template["name"] != current.get("name")
            ):
                raise invalid("The launch template of a node group cannot be changed, only its version")
        nodegroup.version = target
        if "releaseVersion" in p:
            nodegroup.release_version = p["releaseVersion"]
        params = [("Version", target), ("ReleaseVersion", nodegroup.release_version)]
        if template is not None:
            # Without a version EKS uses the template's default version; moto keeps no versions, so "$Default".
            nodegroup.launch_template["version"] = template.get("version", "$Default")
            params += [
                ("LaunchTemplateName", nodegroup.launch_template.get("name")),
                ("LaunchTemplateVersion", nodegroup.launch_template["version"]),
            ]
        return {"update": self._record_update(state, f"nodegroup/{name}", "VersionUpdate", params)}

    def describe_update(self, p: Json) -> Json:
        cluster, state = self._cluster(p["name"])
        scope = self._update_scope(cluster, state, p)
        found = state.updates.get(p["updateId"])
        if found is None or found[0] != scope:
            message = f"No update found for ID: {p['updateId']}."
            raise ResourceNotFoundException(clusterName=cluster.name, message=message)
        return {"update": found[1]}

    def list_updates(self, p: Json) -> Json:
        cluster, state = self._cluster(p["name"])
        scope = self._update_scope(cluster, state, p)
        ids, token = page([i for i, (s, _) in state.updates.items() if s == scope], p)
        return {"updateIds": ids, "nextToken": token}

    # ---------------------------------------------------------------- addons

    def _addon(self, cluster: Cluster, state: ClusterState, name: str) -> Json:
        if name not in state.addons:
            raise ResourceNotFoundException(
                clusterName=cluster.name, addonName=name, message=f"No addon: {name} found in cluster: {cluster.name}"
            )
        return state.addons[name]

    def _addon_identities(self, cluster: Cluster, state: ClusterState, addon: Json, wanted: list[Json]) -> None:
        """Replaces the pod identity associations the addon owns with `wanted`."""
        namespace = addon["namespaceConfig"]["namespace"]
        owned = set(addon["podIdentityAssociations"])
        for item in wanted:
            _check_role(item["roleArn"], "podIdentityAssociations.roleArn")
            for other in state.pod_identities.values():
                taken = (other["namespace"], other["serviceAccount"]) == (namespace, item["serviceAccount"])
                if taken and other["associationArn"] not in owned:
                    raise ResourceInUseException(
                        clusterName=cluster.name, addonName=addon["addonName"],
                        message=f"Association already exists: {other['associationId']}",
                    )
        for assoc_id in [i for i, a in state.pod_identities.items() if a["associationArn"] in owned]:
            del state.pod_identities[assoc_id]
        addon["podIdentityAssociations"] = [
            self._new_association(cluster, state, {"namespace": namespace, **item}, addon["addonArn"])["associationArn"]
            for item in wanted
        ]

    def create_addon(self, p: Json) -> Json:
        cluster, state = self._cluster(p["clusterName"])
        name = p["addonName"]
        if name not in ADDONS:
            raise InvalidParameterException(
                clusterName=cluster.name, addonName=name,
                message=f"Addon {name} specified is not supported in {cluster.version} kubernetes version",
            )
        if name in state.addons:
            raise ResourceInUseException(clusterName=cluster.name, addonName=name, message="Addon already exists.")
        version = p.get("addonVersion", ADDON_VERSION)
        _check_addon_version(name, version)
        if "serviceAccountRoleArn" in p:
            _check_role(p["serviceAccountRoleArn"], "serviceAccountRoleArn")
        now = utcnow()
        addon = {
            "addonName": name,
            "clusterName": cluster.name,
            "status": "ACTIVE",
            "addonVersion": version,
            "health": {"issues": []},
            "addonArn": self._arn(f"addon/{cluster.name}/{name}/{random.uuid4()}"),
            "createdAt": now,
            "modifiedAt": now,
            "serviceAccountRoleArn": p.get("serviceAccountRoleArn"),
            "tags": p.get("tags", {}),
            "publisher": "eks",
            "owner": "aws",
            "configurationValues": p.get("configurationValues"),
            "podIdentityAssociations": [],
            "namespaceConfig": {"namespace": p.get("namespaceConfig", {}).get("namespace", ADDONS[name][1])},
        }
        self._addon_identities(cluster, state, addon, p.get("podIdentityAssociations", []))
        state.addons[name] = addon
        return {"addon": addon}

    def describe_addon(self, p: Json) -> Json:
        cluster, state = self._cluster(p["clusterName"])
        return {"addon": self._addon(cluster, state, p["addonName"])}

    def list_addons(self, p: Json) -> Json:
        _, state = self._cluster(p["clusterName"])
        names, token = page(sorted(state.addons), p)
        return {"addons": names, "nextToken": token}

    def update_addon(self, p: Json) -> Json:
        cluster, state = self._cluster(p["clusterName"])
        addon = self._addon(cluster, state, p["addonName"])
        if "addonVersion" in p:
            _check_addon_version(addon["addonName"], p["addonVersion"])
        if "serviceAccountRoleArn" in p:
            _check_role(p["serviceAccountRoleArn"], "serviceAccountRoleArn")
        if "podIdentityAssociations" in p:
            self._addon_identities(cluster, state, addon, p["podIdentityAssociations"])
        names = {"addonVersion": "AddonVersion", "serviceAccountRoleArn": "ServiceAccountRoleArn",
                 "resolveConflicts": "ResolveConflicts", "configurationValues": "ConfigurationValues",
                 "podIdentityAssociations": "PodIdentityAssociations"}
        for member in ("addonVersion", "serviceAccountRoleArn", "configurationValues"):
            if member in p:
                addon[member] = p[member]
        addon["modifiedAt"] = utcnow()
        params = [(names[m], p[m]) for m in names if m in p]
        return {"update": self._record_update(state, f"addon/{addon['addonName']}", "AddonUpdate", params)}

    def delete_addon(self, p: Json) -> Json:
        cluster, state = self._cluster(p["clusterName"])
        addon = self._addon(cluster, state, p["addonName"])
        self._addon_identities(cluster, state, addon, [])
        del state.addons[addon["addonName"]]
        return {"addon": {**addon, "status": "DELETING"}}

    def describe_addon_versions(self, p: Json) -> Json:
        wanted_version = p.get("kubernetesVersion")
        infos = []
        for name, (kind, namespace) in sorted(ADDONS.items()):
            if (
                p.get("addonName", name) != name
                or kind not in p.get("types", [kind])
                or "eks" not in p.get("publishers", ["eks"])
                or "aws" not in p.get("owners", ["aws"])
                or (wanted_version is not None and wanted_version not in KUBERNETES_VERSIONS)
            ):
                continue
            compat = [{"clusterVersion": v, "platformVersions": ["*"], "defaultVersion": True}
                      for v in KUBERNETES_VERSIONS if wanted_version in (None, v)]
            infos.append({
                "addonName": name, "type": kind, "publisher": "eks", "owner": "aws", "defaultNamespace": namespace,
                "addonVersions": [{"addonVersion": ADDON_VERSION, "architecture": ["amd64", "arm64"],
                                   "computeTypes": ["ec2"], "compatibilities": compat,
                                   "requiresConfiguration": False, "requiresIamPermissions": False}],
            })
        addons, token = page(infos, p)
        return {"addons": addons, "nextToken": token}

    # ---------------------------------------------------------------- access entries and policies

    def _policy_arn(self, name: str) -> str:
        return f"arn:{self.backend.partition}:eks::aws:cluster-access-policy/{name}"

    def _api_auth_cluster(self, name: str) -> tuple[Cluster, ClusterState]:
        cluster, state = self._cluster(name)
        if cluster.access_config["authenticationMode"] == "CONFIG_MAP":
            raise InvalidRequestException(
                clusterName=name,
                message="The cluster's authentication mode must be set to one of [API, API_AND_CONFIG_MAP] "
                "to perform this operation.",
            )
        return cluster, state

    def _entry(self, cluster: Cluster, state: ClusterState, principal: str) -> Json:
        if principal not in state.access_entries:
            raise ResourceNotFoundException(
                clusterName=cluster.name, message=f"The specified principalArn could not be found: {principal}."
            )
        return state.access_entries[principal]

    def create_access_entry(self, p: Json) -> Json:
        cluster, state = self._api_auth_cluster(p["clusterName"])
        principal = p["principalArn"]
        match = IAM_PRINCIPAL.match(principal)
        if not match:
            raise invalid(f"The principalArn is not an IAM role or user ARN: {principal}")
        if principal in state.access_entries:
            raise ResourceInUseException(
                clusterName=cluster.name,
                message="The specified access entry resource is already in use on this cluster.",
            )
        kind = p.get("type", "STANDARD")
        if kind not in ACCESS_ENTRY_TYPES:
            raise invalid(f"The access entry type {kind} is not valid. Valid types: {', '.join(ACCESS_ENTRY_TYPES)}")
        if kind != "STANDARD":
            if p.get("kubernetesGroups") or "username" in p:
                raise invalid(f"kubernetesGroups and username cannot be set for access entries of type {kind}")
            if match.group(1) != "role":
                raise invalid(f"An access entry of type {kind} needs an IAM role as principalArn")
        partition, account = principal.split(":")[1], principal.split(":")[4]
        if kind == "STANDARD":
            default_user = (principal if match.group(1) == "user"
                            else f"arn:{partition}:sts::{account}:assumed-role/{match.group(2)}/{{{{SessionName}}}}")
        else:
            default_user = "system:node:{{EC2PrivateDNSName}}" if kind.startswith("EC2") else \
                "system:node:{{SessionName}}"
        now = utcnow()
        entry = {
            "clusterName": cluster.name,
            "principalArn": principal,
            "kubernetesGroups": p.get("kubernetesGroups", []),
            "accessEntryArn": self._arn(
                f"access-entry/{cluster.name}/{match.group(1)}/{account}/{match.group(2)}/{random.uuid4()}"
            ),
            "createdAt": now,
            "modifiedAt": now,
            "tags": p.get("tags", {}),
            "username": p.get("username", default_user),
            "type": kind,
        }
        state.access_entries[principal] = entry
        state.access_policies[principal] = {}
        return {"accessEntry": entry}

    def describe_access_entry(self, p: Json) -> Json:
        cluster, state = self._api_auth_cluster(p["clusterName"])
        return {"accessEntry": self._entry(cluster, state, p["principalArn"])}

    def list_access_entries(self, p: Json) -> Json:
        _, state = self._api_auth_cluster(p["clusterName"])
        policy = p.get("associatedPolicyArn")
        arns = [a for a in sorted(state.access_entries) if policy is None or policy in state.access_policies[a]]
        arns, token = page(arns, p)
        return {"accessEntries": arns, "nextToken": token}

    def update_access_entry(self, p: Json) -> Json:
        cluster, state = self._api_auth_cluster(p["clusterName"])
        entry = self._entry(cluster, state, p["principalArn"])
        if entry["type"] != "STANDARD" and (p.get("kubernetesGroups") or "username" in p):
            raise invalid(f"kubernetesGroups and username cannot be set for access entries of type {entry['type']}")
        for member in ("kubernetesGroups", "username"):
            if member in p:
                entry[member] = p[member]
        entry["modifiedAt"] = utcnow()
        return {"accessEntry": entry}

    def delete_access_entry(self, p: Json) -> Json:
        cluster, state = self._api_auth_cluster(p["clusterName"])
        self._entry(cluster, state, p["principalArn"])
        del state.access_entries[p["principalArn"]]
        del state.access_policies[p["principalArn"]]
        return {}

    def associate_access_policy(self, p: Json) -> Json:
        cluster, state = self._api_auth_cluster(p["clusterName"])
        entry = self._entry(cluster, state, p["principalArn"])
        if entry["type"] != "STANDARD":
            raise InvalidRequestException(
                clusterName=cluster.name,
                message=f"Access policies cannot be associated with an access entry of type {entry['type']}.",
            )
        policy = p["policyArn"]
        if policy not in [self._policy_arn(n) for n in ACCESS_POLICIES]:
            message = f"The specified policy could not be found: {policy}."
            raise ResourceNotFoundException(clusterName=cluster.name, message=message)
        scope = p["accessScope"]
        namespaces = scope.get("namespaces", [])
        if scope.get("type") is None:
            raise invalid(_violation(None, "accessScope.type", "Member must not be null"))
        if (scope["type"] == "namespace") != bool(namespaces):
            raise invalid("namespaces must be given when, and only when, the access scope type is namespace")
        now = utcnow()
        policies = state.access_policies[entry["principalArn"]]
        association = {
            "policyArn": policy,
            "accessScope": {"type": scope["type"], "namespaces": namespaces},
            "associatedAt": policies[policy]["associatedAt"] if policy in policies else now,
            "modifiedAt": now,
        }
        policies[policy] = association
        return {"clusterName": cluster.name, "principalArn": entry["principalArn"],
                "associatedAccessPolicy": association}

    def disassociate_access_policy(self, p: Json) -> Json:
        cluster, state = self._api_auth_cluster(p["clusterName"])
        entry = self._entry(cluster, state, p["principalArn"])
        if state.access_policies[entry["principalArn"]].pop(p["policyArn"], None) is None:
            raise ResourceNotFoundException(
                clusterName=cluster.name,
                message=f"The policy {p['policyArn']} is not associated with {entry['principalArn']}.",
            )
        return {}

    def list_associated_access_policies(self, p: Json) -> Json:
        cluster, state = self._api_auth_cluster(p["clusterName"])
        entry = self._entry(cluster, state, p["principalArn"])
        policies = state.access_policies[entry["principalArn"]]
        items, token = page([policies[a] for a in sorted(policies)], p)
        return {"clusterName": cluster.name, "principalArn": entry["principalArn"],
                "associatedAccessPolicies": items, "nextToken": token}

    def list_access_policies(self, p: Json) -> Json:
        items, token = page([{"name": n, "arn": self._policy_arn(n)} for n in ACCESS_POLICIES], p)
        return {"accessPolicies": items, "nextToken": token}

    # ---------------------------------------------------------------- pod identity associations

    def _new_association(self, cluster: Cluster, state: ClusterState, p: Json, owner: str | None = None) -> Json:
        assoc_id = "a-" + random.get_random_string(17, lower_case=True)
        now = utcnow()
        association = {
            "clusterName": cluster.name,
            "namespace": p["namespace"],
            "serviceAccount": p["serviceAccount"],
            "roleArn": p["roleArn"],
            "associationArn": self._arn(f"podidentityassociation/{cluster.name}/{assoc_id}"),
            "associationId": assoc_id,
            "tags": p.get("tags", {}),
            "createdAt": now,
            "modifiedAt": now,
            "ownerArn": owner,
            "disableSessionTags": p.get("disableSessionTags", False),
            "policy": p.get("policy"),
        }
        _set_target_role(association, p.get("targetRoleArn"))
        state.pod_identities[assoc_id] = association
        return association

    def _association(self, cluster: Cluster, state: ClusterState, assoc_id: str) -> Json:
        if assoc_id not in state.pod_identities:
            message = f"No association found for ID: {assoc_id}."
            raise ResourceNotFoundException(clusterName=cluster.name, message=message)
        return state.pod_identities[assoc_id]

    def create_pod_identity_association(self, p: Json) -> Json:
        cluster, state = self._cluster(p["clusterName"])
        _check_role(p["roleArn"], "roleArn")
        if "targetRoleArn" in p:
            _check_role(p["targetRoleArn"], "targetRoleArn")
        for other in state.pod_identities.values():
            if (other["namespace"], other["serviceAccount"]) == (p["namespace"], p["serviceAccount"]):
                message = f"Association already exists: {other['associationId']}"
                raise ResourceInUseException(clusterName=cluster.name, message=message)
        return {"association": self._new_association(cluster, state, p)}

    def describe_pod_identity_association(self, p: Json) -> Json:
        cluster, state = self._cluster(p["clusterName"])
        return {"association": self._association(cluster, state, p["associationId"])}

    def list_pod_identity_associations(self, p: Json) -> Json:
        _, state = self._cluster(p["clusterName"])
        summary = ("clusterName", "namespace", "serviceAccount", "associationArn", "associationId", "ownerArn")
        items = [
            {k: a[k] for k in summary}
            for a in sorted(state.pod_identities.values(), key=lambda a: (a["namespace"], a["serviceAccount"]))
            if p.get("namespace", a["namespace"]) == a["namespace"]
            and p.get("serviceAccount", a["serviceAccount"]) == a["serviceAccount"]
        ]
        items, token = page(items, p)
        return {"associations": items, "nextToken": token}

    def update_pod_identity_association(self, p: Json) -> Json:
        cluster, state = self._cluster(p["clusterName"])
        association = self._association(cluster, state, p["associationId"])
        if "roleArn" in p:
            _check_role(p["roleArn"], "roleArn")
        if "targetRoleArn" in p:
            if p["targetRoleArn"]:
                _check_role(p["targetRoleArn"], "targetRoleArn")
            _set_target_role(association, p["targetRoleArn"] or None)
        for member in ("roleArn", "disableSessionTags", "policy"):
            if member in p:
                association[member] = p[member]
        association["modifiedAt"] = utcnow()
        return {"association": association}

    def delete_pod_identity_association(self, p: Json) -> Json:
        cluster, state = self._cluster(p["clusterName"])
        association = self._association(cluster, state, p["associationId"])
        del state.pod_identities[association["associationId"]]
        return {"association": association}


# ---------------------------------------------------------------- small helpers


def _cluster_ca(name: str) -> str:
    """A self-signed CA certificate for a cluster, as base64 of its PEM (like EKS)."""
    import base64
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()


def _snake(member: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", member).lower()


def _check_role(arn: str, path: str) -> None:
    if not IAM_ROLE.match(arn):
        raise invalid(f"{path} is not an IAM role ARN: {arn}")


def _check_addon_version(name: str, version: str) -> None:
    if not ADDON_VERSION_FORMAT.match(version):
        raise InvalidParameterException(addonName=name, message=f"Addon version specified is not supported: {version}")


def _set_target_role(association: Json, target: str | None) -> None:
    association["targetRoleArn"] = target
    association["externalId"] = str(random.uuid4()) if target else None


def _iam_principal(caller_arn: str) -> str:
    """The IAM principal behind a caller identity ARN (an assumed role becomes its role)."""
    match = re.match(r"^arn:([^:]+):sts::(\d+):assumed-role/([^/]+)/", caller_arn)
    if match:
        return f"arn:{match.group(1)}:iam::{match.group(2)}:role/{match.group(3)}"
    return caller_arn.replace(":sts::", ":iam::", 1)


def _merge_logging(current: Json, requested: Json) -> Json:
    """Applies requested log type switches to the current logging setup, AWS-style:
    one entry with the enabled types and one with the disabled types."""
    enabled = {t for s in current.get("clusterLogging", []) if s.get("enabled") for t in s.get("types", [])}
    for setup in requested.get("clusterLogging", []):
        types = set(setup.get("types", []))
        enabled = enabled | types if setup.get("enabled") else enabled - types
    all_types = MODEL.shape_for("LogType").enum
    setups = [
        {"types": [t for t in all_types if t in enabled], "enabled": True},
        {"types": [t for t in all_types if t not in enabled], "enabled": False},
    ]
    return {"clusterLogging": [s for s in setups if s["types"]]}
