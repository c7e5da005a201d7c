"""Secret Manager v1: secrets, their versions and payload access (`versions/latest` too)."""
import base64
import copy
import uuid

import google_crc32c

from api import load, rfc3339
from errors import ApiError, invalid
from hooks.base import Flavor, Hooks


def _etag():
    return f'"{uuid.uuid4().int % 10**16:016d}"'


class SecretManagerFlavor(Flavor):
    def missing_message(self, rel):
        kind = "Secret Version" if "/versions/" in rel else "Secret"
        return f"{kind} [{rel}] not found."

    def exists_message(self, rel):
        return f"Secret [{rel}] already exists."

    def server_fields(self, ctx, res, rel, new):
        super().server_fields(ctx, res, rel, new)
        if "etag" in res:
            res["etag"] = _etag()

    def resolve(self, ctx, rel):
        """`versions/latest` is the newest enabled version."""
        if rel.endswith("/versions/latest"):
            secret = rel.rsplit("/versions/", 1)[0]
            enabled = [
                (int(k.rsplit("/", 1)[1]), k)
                for k, e in ctx.app.store.children(ctx.key(f"{secret}/versions"))
                if e.resource["state"] == "ENABLED"
            ]
            if enabled:
                return max(enabled)[1].split(":", 1)[1]
        return rel


class SecretHooks(Hooks):
    def on_create(self, ctx, res, rel):
        if not res.get("replication"):
            raise invalid("Secret.replication is required.", field="secret.replication", reason="required")
        res["etag"] = ""

    def on_delete(self, ctx, rel, entry):
        given = ctx.query.get("etag")
        if given and given != entry.resource.get("etag"):
            raise ApiError(400, "The etag does not match the current etag of the secret.", status="FAILED_PRECONDITION", reason="failedPrecondition")

    def add_version(self, ctx):
        rel, entry = load(ctx)
        body = ctx.validated_body()
        payload = body.get("payload")
        if payload is None or "data" not in payload:
            raise invalid("Secret payload is required.", field="payload", reason="required")
        data = base64.b64decode(payload["data"])
        if "dataCrc32c" in payload and int(payload["dataCrc32c"]) != google_crc32c.value(data):
            raise invalid("Checksum mismatch: data_crc32c does not match the payload.", field="payload.dataCrc32c")
        number = len(ctx.app.store.children(ctx.key(f"{rel}/versions"))) + 1
        version = {
            "name": f"{rel}/versions/{number}",
            "createTime": rfc3339(),
            "state": "ENABLED",
            "replicationStatus": {"automatic": {}},
            "etag": _etag(),
            "clientSpecifiedPayloadChecksum": "dataCrc32c" in payload,
        }
        ctx.app.store.put(ctx.key(version["name"]), ctx.key(f"{rel}/versions"), version, data=data)
        return copy.deepcopy(version)

    methods = {"addVersion": add_version}


class VersionHooks(Hooks):
    def access(self, ctx):
        rel, entry = load(ctx)
        state = entry.resource["state"]
        if state != "ENABLED":
            raise ApiError(400, f"Secret Version [{rel}] is in {state} state.", status="FAILED_PRECONDITION", reason="failedPrecondition")
        data = entry.meta["data"]
        return {"name": rel, "payload": {"data": base64.b64encode(data).decode(), "dataCrc32c": str(google_crc32c.value(data))}}

    def _state(target):
        def method(self, ctx):
            rel, entry = load(ctx)
            body = ctx.validated_body()
            if body.get("etag") and body["etag"] != entry.resource["etag"]:
                raise ApiError(400, "The etag does not match the current etag of the secret version.", status="FAILED_PRECONDITION", reason="failedPrecondition")
            if entry.resource["state"] == "DESTROYED":
                raise ApiError(400, f"Secret Version [{rel}] is in DESTROYED state.", status="FAILED_PRECONDITION", reason="failedPrecondition")
            entry.resource["state"] = target
            entry.resource["etag"] = _etag()
            if target == "DESTROYED":
                entry.resource["destroyTime"] = rfc3339()
                entry.meta["data"] = b""
            return copy.deepcopy(entry.resource)

        return method

    methods = {"access": access, "enable": _state("ENABLED"), "disable": _state("DISABLED"), "destroy": _state("DESTROYED")}


def register(hooks):
    hooks.update({"secretmanager.projects.secrets": SecretHooks(), "secretmanager.projects.secrets.versions": VersionHooks()})
