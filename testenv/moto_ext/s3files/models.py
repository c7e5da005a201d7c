"""State of S3 Files and the checks S3 Files makes on it (the bucket, role, subnet and
security groups exist; one mount target per file system and zone; what still uses a file
system keeps it)."""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from botocore.loaders import create_loader
from botocore.model import ServiceModel
from moto.core.base_backend import BackendDict, BaseBackend
from moto.core.exceptions import AWSError
from moto.core.utils import utcnow
from moto.ec2.models import ec2_backends
from moto.eks.exceptions import InvalidParameterException
from moto.iam.models import iam_backends
from moto.moto_api._internal import mock_random as random
from moto.s3.models import s3_backends

from .. import eks_state

Json = dict[str, Any]

MODEL = ServiceModel(create_loader().load_service_model("s3files", "service-2"), "s3files")
REGIONS = ["eu-west-1", "eu-west-3", "eu-central-1", "us-east-1", "us-east-2", "us-west-2"]
BUCKET_ARN = re.compile(r"^arn:aws[a-z-]*:s3:::([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])$")


class S3FilesError(AWSError):
    TYPE = ""
    STATUS = 400

    def __init__(self, message: str):
        super(AWSError, self).__init__(error_type=self.TYPE, message="")  # type: ignore[call-arg]
        self.description = json.dumps({"message": message})
        self.headers = {"status": self.STATUS, "x-amzn-ErrorType": self.TYPE}
        self.code = self.STATUS

    def response(self) -> tuple[int, dict[str, Any], str]:  # type: ignore[override]
        return self.STATUS, self.headers, self.description


class ValidationException(S3FilesError):
    TYPE, STATUS = "ValidationException", 400


class ResourceNotFoundException(S3FilesError):
    TYPE, STATUS = "ResourceNotFoundException", 404


class ConflictException(S3FilesError):
    TYPE, STATUS = "ConflictException", 409


def parse_request(operation: str, uri: dict[str, str], query: dict[str, list[str]], body: Any) -> Json:
    """The operation's input, checked against S3 Files' model; a violation is a ValidationException."""
    try:
        return eks_state.parse_request(operation, uri, query, body, MODEL)
    except InvalidParameterException as e:
        raise ValidationException(json.loads(e.description).get("message", "invalid request")) from None


def _id(prefix: str) -> str:
    return f"{prefix}-{random.get_random_hex(17)}"


class S3FilesBackend(BaseBackend):
    def __init__(self, region_name: str, account_id: str):
        super().__init__(region_name, account_id)
        self.file_systems: dict[str, Json] = {}
        self.mount_targets: dict[str, Json] = {}
        self.access_points: dict[str, Json] = {}
        self.policies: dict[str, str] = {}
        self.synchronization: dict[str, Json] = {}
        self.tags: dict[str, dict[str, str]] = {}

    # Lookups.

    def _file_system(self, file_system_id: str) -> Json:
        found = self.file_systems.get(file_system_id)
        if found is None:
            raise ResourceNotFoundException(f"File system '{file_system_id}' does not exist.")
        return found

    def _arn(self, kind: str, resource_id: str) -> str:
        return f"arn:aws:s3files:{self.region_name}:{self.account_id}:{kind}/{resource_id}"

    def _tagged(self, resource_id: str, tags: list[Json] | None) -> list[Json]:
        self.tags[resource_id] = {t["key"]: t["value"] for t in tags or []}
        return self._tag_list(resource_id)

    def _tag_list(self, resource_id: str) -> list[Json]:
        return [{"key": k, "value": v} for k, v in sorted(self.tags.get(resource_id, {}).items())]

    # File systems.

    def create_file_system(self, bucket: str, roleArn: str, **params: Any) -> Json:
        token = params.get("clientToken")
        for fs in self.file_systems.values():
            if token and fs.get("clientToken") == token:
                return self._shown(fs)
        match = BUCKET_ARN.match(bucket)
        if not match:
            raise ValidationException(f"'{bucket}' is not an S3 bucket ARN")
        if match.group(1) not in s3_backends[self.account_id]["aws"].buckets:
            raise ValidationException(f"The bucket '{match.group(1)}' does not exist")
        role = roleArn.rsplit("/", 1)[-1]
        if not any(r.name == role for r in iam_backends[self.account_id]["aws"].roles.values()):
            raise ValidationException(f"The role '{roleArn}' does not exist")
        fs_id = _id("fs")
        fs = {
            "creationTime": utcnow(),
            "fileSystemArn": self._arn("file-system", fs_id),
            "fileSystemId": fs_id,
            "bucket": bucket,
            "prefix": params.get("prefix") or "",
            "clientToken": token or _id("token"),
            "kmsKeyId": params.get("kmsKeyId"),
            "status": "available",
            "roleArn": roleArn,
            "ownerId": self.account_id,
        }
        self._tagged(fs_id, params.get("tags"))
        self.file_systems[fs_id] = fs
        return self._shown(fs)

    def _shown(self, fs: Json) -> Json:
        return self._with_tags(fs, fs["fileSystemId"])

    def _with_tags(self, resource: Json, resource_id: str) -> Json:
        """`resource` as S3 Files shows it: set members, its tags, and its `Name` tag as `name`."""
        tags = self._tag_list(resource_id)
        name = next((t["value"] for t in tags if t["key"] == "Name"), None)
        shown = {k: v for k, v in resource.items() if v is not None}
        return {**shown, "tags": tags, **({"name": name} if name else {})}

    def get_file_system(self, fileSystemId: str) -> Json:
        return self._shown(self._file_system(fileSystemId))

    def list_file_systems(self, bucket: str | None = None, **_: Any) -> Json:
        found = [self._shown(fs) for fs in self.file_systems.values() if bucket in (None, fs["bucket"])]
        for fs in found:
            fs.pop("tags", None)
        return {"fileSystems": found}

    def delete_file_system(self, fileSystemId: str, forceDelete: bool = False) -> None:
        self._file_system(fileSystemId)
        users = [m for m in self.mount_targets.values() if m["fileSystemId"] == fileSystemId]
        users += [a for a in self.access_points.values() if a["fileSystemId"] == fileSystemId]
        if users and not forceDelete:
            raise ConflictException(f"File system '{fileSystemId}' has mount targets or access points.")
        for table in (self.mount_targets, self.access_points):
            for key in [k for k, v in table.items() if v["fileSystemId"] == fileSystemId]:
                del table[key]
        self.file_systems.pop(fileSystemId)
        self.policies.pop(fileSystemId, None)
        self.tags.pop(fileSystemId, None)

    # File-system policies and synchronization.

    def put_file_system_policy(self, fileSystemId: str, policy: str) -> Json:
        self._file_system(fileSystemId)
        try:
            doc = json.loads(policy)
        except ValueError:
            raise ValidationException("The policy is not valid JSON") from None
        if not isinstance(doc, dict) or "Statement" not in doc:
            raise ValidationException("The policy has no Statement")
        self.policies[fileSystemId] = policy
        return {}

    def get_file_system_policy(self, fileSystemId: str) -> Json:
        self._file_system(fileSystemId)
        if fileSystemId not in self.policies:
            raise ResourceNotFoundException(f"File system '{fileSystemId}' has no policy.")
        return {"fileSystemId": fileSystemId, "policy": self.policies[fileSystemId]}

    def delete_file_system_policy(self, fileSystemId: str) -> None:
        self._file_system(fileSystemId)
        self.policies.pop(fileSystemId, None)

    def put_synchronization_configuration(self, fileSystemId: str, **params: Any) -> Json:
        self._file_system(fileSystemId)
        current = self.synchronization.get(fileSystemId, {"latestVersionNumber": 0})
        if params.get("latestVersionNumber", current["latestVersionNumber"]) != current["latestVersionNumber"]:
            raise ConflictException("The synchronization configuration changed since it was read.")
        self.synchronization[fileSystemId] = {
            "latestVersionNumber": current["latestVersionNumber"] + 1,
            "importDataRules": params["importDataRules"],
            "expirationDataRules": params["expirationDataRules"],
        }
        return {}

    def get_synchronization_configuration(self, fileSystemId: str) -> Json:
        self._file_system(fileSystemId)
        return self.synchronization.get(
            fileSystemId, {"latestVersionNumber": 0, "importDataRules": [], "expirationDataRules": []}
        )

    # Mount targets.

    def _mount_target(self, mount_target_id: str) -> Json:
        found = self.mount_targets.get(mount_target_id)
        if found is None:
            raise ResourceNotFoundException(f"Mount target '{mount_target_id}' does not exist.")
        return found

    def _security_groups(self, groups: list[str], vpc_id: str) -> list[str]:
        ec2 = ec2_backends[self.account_id][self.region_name]
        for group in groups:
            try:
                found = ec2.describe_security_groups(group_ids=[group])
            except Exception:  # moto's InvalidGroup.NotFound
                found = []
            if not found:
                raise ValidationException(f"The security group '{group}' does not exist")
            if found[0].vpc_id != vpc_id:
                raise ValidationException(f"The security group '{group}' is not in {vpc_id}")
        return list(groups)

    def create_mount_target(self, fileSystemId: str, subnetId: str, **params: Any) -> Json:
        self._file_system(fileSystemId)
        ec2 = ec2_backends[self.account_id][self.region_name]
        try:
            subnets = ec2.describe_subnets(subnet_ids=[subnetId])
        except Exception:  # moto's InvalidSubnetID.NotFound
            subnets = []
        if not subnets:
            raise ValidationException(f"The subnet '{subnetId}' does not exist")
        subnet = subnets[0]
        for m in self.mount_targets.values():
            if m["fileSystemId"] == fileSystemId and m["availabilityZoneId"] == subnet.availability_zone_id:
                raise ConflictException(f"File system '{fileSystemId}' already has a mount target in this zone.")
        groups = self._security_groups(params.get("securityGroups") or [], subnet.vpc_id)
        taken = {m.get("ipv4Address") for m in self.mount_targets.values()}
        hosts = (str(h) for h in ipaddress.ip_network(subnet.cidr_block).hosts())
        address = params.get("ipv4Address") or next(h for i, h in enumerate(hosts) if i >= 3 and h not in taken)
        mount = {
            "availabilityZoneId": subnet.availability_zone_id,
            "ownerId": self.account_id,
            "mountTargetId": _id("fsmt"),
            "fileSystemId": fileSystemId,
            "subnetId": subnetId,
            "ipv4Address": address,
            "networkInterfaceId": _id("eni"),
            "vpcId": subnet.vpc_id,
            "securityGroups": groups,
            "status": "available",
        }
        self.mount_targets[mount["mountTargetId"]] = mount
        return dict(mount)

    def get_mount_target(self, mountTargetId: str) -> Json:
        return dict(self._mount_target(mountTargetId))

    def list_mount_targets(self, fileSystemId: str | None = None, accessPointId: str | None = None, **_: Any) -> Json:
        if accessPointId:
            fileSystemId = self._access_point(accessPointId)["fileSystemId"]
        found = [dict(m) for m in self.mount_targets.values() if fileSystemId in (None, m["fileSystemId"])]
        return {"mountTargets": found}

    def update_mount_target(self, mountTargetId: str, securityGroups: list[str]) -> Json:
        mount = self._mount_target(mountTargetId)
        mount["securityGroups"] = self._security_groups(securityGroups, mount["vpcId"])
        return dict(mount)

    def delete_mount_target(self, mountTargetId: str) -> None:
        self._mount_target(mountTargetId)
        del self.mount_targets[mountTargetId]

    # Access points.

    def _access_point(self, access_point_id: str) -> Json:
        found = self.access_points.get(access_point_id)
        if found is None:
            raise ResourceNotFoundException(f"Access point '{access_point_id}' does not exist.")
        return found

    def create_access_point(self, fileSystemId: str, **params: Any) -> Json:
        self._file_system(fileSystemId)
        token = params.get("clientToken")
        for ap in self.access_points.values():
            if token and ap["clientToken"] == token:
                return self._shown_access_point(ap)
        ap_id = _id("fsap")
        ap = {
            "accessPointArn": self._arn("access-point", ap_id),
            "accessPointId": ap_id,
            "clientToken": token or _id("token"),
            "fileSystemId": fileSystemId,
            "status": "available",
            "ownerId": self.account_id,
            "posixUser": params.get("posixUser"),
            "rootDirectory": params.get("rootDirectory") or {"path": "/"},
        }
        self._tagged(ap_id, params.get("tags"))
        self.access_points[ap_id] = ap
        return self._shown_access_point(ap)

    def _shown_access_point(self, ap: Json) -> Json:
        return self._with_tags(ap, ap["accessPointId"])

    def get_access_point(self, accessPointId: str) -> Json:
        return self._shown_access_point(self._access_point(accessPointId))

    def list_access_points(self, fileSystemId: str, **_: Any) -> Json:
        self._file_system(fileSystemId)
        found = [self._shown_access_point(a) for a in self.access_points.values() if a["fileSystemId"] == fileSystemId]
        return {"accessPoints": found}

    def delete_access_point(self, accessPointId: str) -> None:
        self._access_point(accessPointId)
        del self.access_points[accessPointId]
        self.tags.pop(accessPointId, None)

    # Tags.

    def _taggable(self, resource_id: str) -> None:
        if resource_id not in self.file_systems and resource_id not in self.access_points:
            raise ResourceNotFoundException(f"Resource '{resource_id}' does not exist.")

    def tag_resource(self, resourceId: str, tags: list[Json]) -> None:
        self._taggable(resourceId)
        self.tags.setdefault(resourceId, {}).update({t["key"]: t["value"] for t in tags})

    def untag_resource(self, resourceId: str, tagKeys: list[str]) -> None:
        self._taggable(resourceId)
        for key in tagKeys:
            self.tags.get(resourceId, {}).pop(key, None)

    def list_tags_for_resource(self, resourceId: str, **_: Any) -> Json:
        self._taggable(resourceId)
        return {"tags": self._tag_list(resourceId)}


s3files_backends = BackendDict(S3FilesBackend, "s3files", use_boto3_regions=False, additional_regions=REGIONS)
