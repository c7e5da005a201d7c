"""Cloud Storage JSON API v1: buckets (global names, listed per project) and their IAM policies."""
import base64
import copy
import re

from api import load, merge, rfc3339
from errors import ApiError, invalid
from hooks.base import Flavor, Hooks
from hooks.iam import project_number

MULTI_REGIONS = ("US", "EU", "ASIA")
DUAL_REGIONS = ("NAM4", "EUR4", "ASIA1", "EUR5", "EUR7", "EUR8")


def _etag(metageneration):
    n, out = int(metageneration), bytearray([0x08])  # protobuf varint, as Storage's etags are
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return base64.b64encode(bytes(out)).decode()


class StorageFlavor(Flavor):
    host = "https://www.googleapis.com/"
    server_set = ("kind", "id", "selfLink", "projectNumber", "timeCreated", "updated", "metageneration", "etag", "generation", "name")

    def missing_message(self, rel):
        return "The specified bucket does not exist."

    def exists_message(self, rel):
        return "Your previous request to create the named bucket succeeded and you already own it."

    def server_fields(self, ctx, res, rel, new):
        pass

    def policy_shape(self, ctx, rel, policy):
        bucket = rel.split("/")[1]
        if not policy.get("bindings"):
            owner = ctx.app.store.get(ctx.key(rel)).meta["project"]
            policy["bindings"] = [
                {"role": "roles/storage.legacyBucketOwner", "members": [f"projectEditor:{owner}", f"projectOwner:{owner}"]},
                {"role": "roles/storage.legacyBucketReader", "members": [f"projectViewer:{owner}"]},
            ]
        return dict(kind="storage#policy", resourceId=f"projects/_/buckets/{bucket}", **policy)

    def permissions_shape(self, out):
        return dict(kind="storage#testIamPermissionsResponse", **out)


def _metageneration_preconditions(ctx, entry):
    current = entry.resource["metageneration"]
    match, not_match = ctx.query.get("ifMetagenerationMatch"), ctx.query.get("ifMetagenerationNotMatch")
    if (match is not None and match != current) or (not_match is not None and not_match == current):
        raise ApiError(412, "At least one of the pre-conditions you specified did not hold.", reason="conditionNotMet", status="FAILED_PRECONDITION")


class BucketHooks(Hooks):
    def name_of(self, ctx, resource):
        name = resource.get("name") or ""
        if not re.fullmatch(r"[a-z0-9][-a-z0-9_.]{1,61}[a-z0-9]", name) or ".." in name or name.startswith("goog"):
            raise invalid("Invalid bucket name: '%s'" % name, field="name")
        return name

    def create(self, ctx):
        project = ctx.query.get("project")
        if not project:
            raise invalid("Required parameter: project", field="project", reason="required")
        body = ctx.validated_body()
        name = self.name_of(ctx, body)
        rel = f"b/{name}"
        if ctx.app.store.get(ctx.key(rel)):
            owner = ctx.app.store.get(ctx.key(rel)).meta["project"]
            if owner == project:
                raise ApiError(409, ctx.flavor.exists_message(rel), reason="conflict", status="ALREADY_EXISTS")
            raise ApiError(409, "The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again.", reason="conflict", status="ALREADY_EXISTS")
        now = rfc3339(offset=False)[:23] + "Z"
        res = {k: v for k, v in body.items() if k not in ctx.flavor.server_set}
        location = (res.get("location") or "US").upper()
        res.update(
            {
                "kind": "storage#bucket",
                "id": name,
                "selfLink": ctx.flavor.link(rel),
                "projectNumber": project_number(project),
                "name": name,
                "timeCreated": now,
                "updated": now,
                "metageneration": "1",
                "location": location,
                "locationType": "multi-region" if location in MULTI_REGIONS else "dual-region" if location in DUAL_REGIONS else "region",
                "etag": _etag(1),
            }
        )
        res.setdefault("storageClass", "STANDARD")
        res.setdefault("softDeletePolicy", {"retentionDurationSeconds": "604800", "effectiveTime": now})
        iam = res.setdefault("iamConfiguration", {})
        ubla = iam.setdefault("uniformBucketLevelAccess", {"enabled": False})
        iam["bucketPolicyOnly"] = dict(ubla)
        iam.setdefault("publicAccessPrevention", "inherited")
        if res["locationType"] != "region":
            res.setdefault("rpo", "DEFAULT")
        entry = ctx.app.store.put(ctx.key(rel), ctx.key("b"), res, project=project)
        return copy.deepcopy(entry.resource)

    def list(self, ctx):
        project = ctx.query.get("project")
        if not project:
            raise invalid("Required parameter: project", field="project", reason="required")
        prefix = ctx.query.get("prefix", "")
        items = [
            copy.deepcopy(e.resource)
            for k, e in sorted(ctx.app.store.children(ctx.key("b")), key=lambda kv: kv[0])
            if e.meta["project"] == project and e.resource["name"].startswith(prefix)
        ]
        out = {"kind": "storage#buckets"}
        if items:
            out["items"] = items
        return out

    def _change(replace):
        def method(self, ctx):
            rel, entry = load(ctx)
            _metageneration_preconditions(ctx, entry)
            body = {k: v for k, v in ctx.validated_body().items() if k not in ctx.flavor.server_set}
            if "location" in body and body["location"].upper() != entry.resource["location"]:
                raise invalid("Cannot change the location of a bucket.", field="location")
            if replace:
                kept = {k: v for k, v in entry.resource.items() if k in ctx.flavor.server_set or k in ("location", "locationType")}
                entry.resource.clear()
                entry.resource.update(body, **kept)
            else:
                merge(entry.resource, body)
            generation = str(int(entry.resource["metageneration"]) + 1)
            entry.resource.update(metageneration=generation, etag=_etag(generation), updated=rfc3339()[:23] + "Z")
            return copy.deepcopy(entry.resource)

        return method

    def delete(self, ctx):
        rel, entry = load(ctx)
        _metageneration_preconditions(ctx, entry)
        if ctx.app.objects.has_objects(entry.resource["name"]):
            raise ApiError(409, "The bucket you tried to delete is not empty.", reason="conflict", status="FAILED_PRECONDITION")
        ctx.app.store.delete(ctx.key(rel))
        return None

    methods = {"insert": create, "list": list, "patch": _change(False), "update": _change(True), "delete": delete}


def register(hooks):
    hooks.update({"storage.buckets": BucketHooks()})
