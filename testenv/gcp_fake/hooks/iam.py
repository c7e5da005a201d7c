"""IAM v1 service accounts and Resource Manager v3 projects (which exist implicitly)."""
import copy
import random
import re
import zlib

from api import load, masked, merge
from errors import invalid
from hooks.base import Flavor, Hooks


def project_number(project):
    return str(100000000000 + zlib.crc32(project.encode()) % 900000000000)


class IamFlavor(Flavor):
    server_set = ("name", "projectId", "uniqueId", "email", "oauth2ClientId", "disabled", "etag")

    def missing_message(self, rel):
        return "Unknown service account" if "/serviceAccounts/" in rel else super().missing_message(rel)

    def resolve(self, ctx, rel):
        """`projects/-/serviceAccounts/X` and unique ids name the account too."""
        parts = rel.split("/")
        if len(parts) >= 4 and parts[2] == "serviceAccounts":
            ident = parts[3]
            for key, entry in ctx.app.store.matching(r"iam:projects/[^/]+/serviceAccounts"):
                if entry.resource["email"] == ident or entry.resource["uniqueId"] == ident:
                    return "/".join(key.split(":", 1)[1].split("/")[:4] + parts[4:])
        return rel


class ServiceAccountHooks(Hooks):
    def name_of(self, ctx, resource):
        account = ctx.body.get("accountId") if isinstance(ctx.body, dict) else None
        if not account:
            raise invalid("Required field 'account_id' not specified", field="accountId", reason="required")
        if not re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])", account) or not 6 <= len(account) <= 30:
            raise invalid(f"Invalid account id: {account}. Account ids must be 6-30 characters of [a-z0-9-] starting with a letter.", field="accountId")
        return f"{account}@{ctx.params['projectsId']}.iam.gserviceaccount.com"

    def on_create(self, ctx, res, rel):
        project = ctx.params["projectsId"]
        email = rel.rsplit("/", 1)[1]
        unique = str(random.randint(10**20, 10**21 - 1))
        res.update({"name": rel, "projectId": project, "uniqueId": unique, "email": email, "oauth2ClientId": unique})
        res["etag"] = "MDEwMjE5MjA="

    def patch(self, ctx):
        rel, entry = load(ctx)
        body = ctx.validated_body()
        change = body.get("serviceAccount") or {}
        if body.get("updateMask"):
            change = masked(change, body["updateMask"])
        merge(entry.resource, {k: v for k, v in change.items() if k in ("displayName", "description")})
        return copy.deepcopy(entry.resource)

    def update(self, ctx):
        rel, entry = load(ctx)
        body = ctx.validated_body()
        merge(entry.resource, {k: v for k, v in body.items() if k in ("displayName", "description")})
        return copy.deepcopy(entry.resource)

    def _disabled(value):
        def method(self, ctx):
            rel, entry = load(ctx)
            entry.resource["disabled"] = value
            if not value:
                entry.resource.pop("disabled")
            return {}

        return method

    methods = {"patch": patch, "update": update, "disable": _disabled(True), "enable": _disabled(False)}


class ResourceManagerFlavor(Flavor):
    def require(self, ctx, rel):
        pass  # every project exists

    def server_fields(self, ctx, res, rel, new):
        pass


class ProjectHooks(Hooks):
    def get(self, ctx):
        project = ctx.params["projectsId"]
        return {
            "name": f"projects/{project_number(project)}",
            "projectId": project,
            "displayName": project,
            "state": "ACTIVE",
            "parent": "organizations/0",
            "createTime": "2024-01-01T00:00:00.000Z",
            "etag": "W/\"0\"",
        }

    methods = {"get": get}


def register(hooks):
    hooks.update({"iam.projects.serviceAccounts": ServiceAccountHooks(), "cloudresourcemanager.projects": ProjectHooks()})
