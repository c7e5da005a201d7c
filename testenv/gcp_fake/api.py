"""Generic verbs over the store, driven by the descriptions: create/insert, get, list,
aggregatedList, patch, update, delete, setLabels. Per-resource hooks add what a description
cannot say (server-set fields, references, dependencies, custom methods)."""
import base64
import hashlib
import json
import random
import re
import threading
import time
from datetime import datetime, timezone

import iam_policy
from errors import ApiError, invalid, not_found, already_exists, precondition, unimplemented
from operations import Operations
from schema import Validator, required_fields
from store import Store

OPERATION_SCHEMAS = ("Operation", "GoogleLongrunningOperation")


def rfc3339(ts=None, offset=False):
    ts = time.time() if ts is None else ts
    if offset:  # Compute style: 2026-01-02T03:04:05.678-08:00
        dt = datetime.fromtimestamp(ts, timezone.utc).astimezone()
        return dt.isoformat(timespec="milliseconds")
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def new_id(bits=64):
    return str(random.getrandbits(bits - 1) | (1 << (bits - 2)))


def fingerprint(resource, skip=("fingerprint", "labelFingerprint"), urlsafe=True):
    data = json.dumps({k: v for k, v in resource.items() if k not in skip}, sort_keys=True)
    digest = hashlib.sha256(data.encode()).digest()[:8]
    # URL-safe, as Compute sends its `format: byte` fields (Google's Rust client decodes no
    # other there); the resource-oriented APIs' `bytes` (an IAM service account's etag) travel
    # in standard base64, as the proto3 JSON mapping writes them.
    return (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(digest).decode()


def merge(target, patch):
    """JSON merge patch: objects merge, everything else (arrays too) replaces; null removes."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = value
    return target


class Context:
    """One request, resolved against its route."""

    def __init__(self, app, route, params, path, query, body):
        self.app = app
        self.route = route
        self.service = route.service
        self.params = params
        self.path = path
        self.query = query
        self.body = body
        self.flavor = app.flavors[self.service.name]
        self.hooks = app.hooks_for(route.resource_id)
        self.rel = self.flavor.rel(path.split(":", 1)[0] if ":" in path.rsplit("/", 1)[-1] else path)

    # keys
    def key(self, rel):
        return f"{self.service.name}:{rel}"

    def item_rel(self):
        """The resource a method acts on: the longest prefix of the URL its `get` matches."""
        get = self.service.item_route(self.route.resource_id)
        if get is None:
            return self.rel
        m = re.match(get.regex.pattern + r"(?=$|/|:)", self.path)
        rel = self.flavor.rel(m.group(0)) if m else self.rel
        return self.flavor.resolve(self, rel)

    # schemas
    def resource_schema(self):
        get = self.service.item_route(self.route.resource_id)
        return get.response if get else self.route.response

    def unwrap(self, body):
        """The resource inside a request body: the body itself, or the field of the request
        message that holds it (CreateClusterRequest.cluster)."""
        res_name = self.resource_schema()
        if self.route.request == res_name or not self.route.request:
            return body, None
        req = self.service.schema(self.route.request) or {}
        for prop, spec in req.get("properties", {}).items():
            if spec.get("$ref") == res_name:
                return body.get(prop), prop
        return body, None

    def validated_body(self):
        if self.route.request is None:
            return {}
        if self.body is None:
            raise invalid("Required request body is missing.")
        return Validator(self.service).validate(self.body, {"$ref": self.route.request})

    def latency_op(self, kind, target_rel, finish=None):
        return self.flavor.operation(self, kind, target_rel, finish)


class App:
    def __init__(self, router, flavors, hooks, latency):
        self.router = router
        self.flavors = flavors
        self.hooks = hooks
        self.store = Store()
        self.ops = Operations(latency)
        self.policies = {}  # IAM policies by resource key
        self.lock = threading.RLock()
        self.default_hooks = hooks.get("*")

    def hooks_for(self, resource_id):
        return self.hooks.get(resource_id) or self.default_hooks

    def handle(self, http_method, path, query, body):
        """Returns (status, body or None)."""
        path = path.lstrip("/")
        candidates = self.router.candidates(http_method, path)
        if not candidates:
            raise not_found(f"The requested URL /{path} was not found on this server.")
        first_error = None
        for route, params in candidates:
            try:
                with self.lock:
                    self.ops.settle_all()
                    ctx = Context(self, route, params, path, query, body)
                    return 200, self.dispatch(ctx)
            except ApiError as e:
                # Another service may describe the same URL: a GET that finds nothing tries it.
                if e.code != 404 or http_method != "GET":
                    raise
                first_error = first_error or e
        raise first_error

    def dispatch(self, ctx):
        custom = ctx.hooks.method(ctx.route.verb, ctx.route.method_id)
        if custom:
            return custom(ctx)
        verb = GENERIC.get(ctx.route.verb)
        if verb is None:
            raise unimplemented(f"Method {ctx.route.method_id} is not implemented by this server.")
        return verb(ctx)


# Generic verbs -----------------------------------------------------------------------------


def do_create(ctx):
    body = ctx.validated_body()
    for name in required_fields(ctx.service, ctx.route.request):
        if body.get(name) in (None, ""):
            raise invalid(f"Required field '{name}' not specified", field=name, reason="required")
    resource, _ = ctx.unwrap(body)
    resource = resource if isinstance(resource, dict) else {}
    for name in set(required_fields(ctx.service, ctx.resource_schema())) | set(ctx.hooks.required):
        if resource.get(name) in (None, "", [], {}):
            raise invalid(f"Required field '{ctx.flavor.field_path(name)}' not specified", field=name, reason="required")
    collection = ctx.rel
    name = ctx.hooks.name_of(ctx, resource)
    rel = f"{collection}/{name}"
    key = ctx.key(rel)
    if ctx.app.store.get(key):
        raise already_exists(ctx.flavor.exists_message(rel))
    resource = dict(resource)
    ctx.hooks.on_create(ctx, resource, rel)
    ctx.flavor.server_fields(ctx, resource, rel, new=True)
    entry = ctx.app.store.put(key, ctx.key(collection), resource)
    return ctx.hooks.after_write(ctx, "insert" if ctx.route.verb == "insert" else "create", rel, entry)


def load(ctx, rel=None):
    rel = rel or ctx.item_rel()
    entry = ctx.app.store.get(ctx.key(rel))
    if entry is None:
        raise not_found(ctx.flavor.missing_message(rel))
    return rel, entry


def do_get(ctx):
    rel, entry = load(ctx)
    return ctx.hooks.render(ctx, rel, entry)


def page(ctx, items):
    size = ctx.query.get("maxResults") or ctx.query.get("pageSize") or ctx.query.get("maxItems")
    start = int(ctx.query.get("pageToken") or 0)
    if size:
        size = int(size)
        if size > 0 and start + size < len(items):
            return items[start : start + size], str(start + size)
    return items[start:], None


def list_field(ctx, list_schema):
    res = ctx.resource_schema()
    schema = ctx.service.schema(list_schema) or {}
    for prop, spec in schema.get("properties", {}).items():
        if spec.get("type") == "array" and spec.get("items", {}).get("$ref") == res:
            return prop
    return "items"


def do_list(ctx):
    entries = sorted(ctx.app.store.children(ctx.key(ctx.rel)), key=lambda kv: kv[0])
    items = [ctx.hooks.render(ctx, k.split(":", 1)[1], e) for k, e in entries]
    items = ctx.flavor.filter(ctx, items)
    items, token = page(ctx, items)
    out = ctx.flavor.list_envelope(ctx, ctx.route.response, ctx.rel)
    if items or not ctx.flavor.omit_empty_lists:
        out[list_field(ctx, ctx.route.response)] = items
    if token:
        out["nextPageToken"] = token
    return out


def do_aggregated_list(ctx):
    listing = ctx.service.resources[ctx.route.resource_id].get("list")
    project = ctx.params.get("project")
    template = ctx.flavor.rel(listing.template).replace("{project}", re.escape(project))
    collection = ctx.key(re.sub(r"\\\{[^}]+\\\}|\{[^}]+\}", "[^/]+", template))
    scoped = ctx.service.schema(ctx.route.response)["properties"]["items"]["additionalProperties"]["$ref"]
    field = next(k for k, v in ctx.service.schema(scoped)["properties"].items() if v.get("type") == "array")
    groups = {}
    for key, entry in sorted(ctx.app.store.matching(collection), key=lambda kv: kv[0]):
        rel = key.split(":", 1)[1]
        parts = rel.split("/")
        scope = f"{parts[2]}/{parts[3]}" if parts[2] in ("regions", "zones") else "global"
        groups.setdefault(scope, []).append(ctx.hooks.render(ctx, rel, entry))
    out = ctx.flavor.list_envelope(ctx, ctx.route.response, ctx.rel)
    out["items"] = {scope: {field: items} for scope, items in groups.items()}
    return out


def check_fingerprint(ctx, patch, current, name="fingerprint"):
    spec = (ctx.service.schema(ctx.resource_schema()) or {}).get("properties", {}).get(name)
    if not spec or "must be provided" not in " ".join(spec.get("description", "").split()):
        return
    given = patch.get(name)
    if not given:
        raise invalid(f"Required field 'resource.{name}' not specified", field=name, reason="required")
    if given != current.get(name):
        raise precondition(
            f"Invalid fingerprint. Supplied fingerprint does not match current {name}."
        )


def masked(patch, mask):
    """The part of a patch an update mask selects; a selected field the patch lacks is cleared."""
    out = {}
    for path in [p.strip() for p in mask.split(",") if p.strip()]:
        src, dst = patch, out
        parts = path.split(".")
        for part in parts[:-1]:
            src = src.get(part) if isinstance(src, dict) else None
            dst = dst.setdefault(part, {})
        value = src.get(parts[-1]) if isinstance(src, dict) else None
        dst[parts[-1]] = value
    return out


def do_patch(ctx):
    rel, entry = load(ctx)
    body = ctx.validated_body()
    patch, _ = ctx.unwrap(body)
    check_fingerprint(ctx, patch, entry.resource)
    mask = ctx.query.get("updateMask") or body.get("updateMask")
    if mask:
        patch = masked(patch, mask)
    ctx.hooks.on_update(ctx, patch, entry, rel)
    patch = {k: v for k, v in patch.items() if k not in ctx.flavor.server_set}
    merge(entry.resource, patch)
    ctx.flavor.server_fields(ctx, entry.resource, rel, new=False)
    return ctx.hooks.after_write(ctx, "patch", rel, entry)


def do_update(ctx):
    rel, entry = load(ctx)
    body = ctx.validated_body()
    new, _ = ctx.unwrap(body)
    check_fingerprint(ctx, new, entry.resource)
    ctx.hooks.on_update(ctx, new, entry, rel)
    kept = {k: v for k, v in entry.resource.items() if k in ctx.flavor.server_set}
    entry.resource.clear()
    entry.resource.update({k: v for k, v in new.items() if k not in ctx.flavor.server_set})
    entry.resource.update(kept)
    ctx.flavor.server_fields(ctx, entry.resource, rel, new=False)
    return ctx.hooks.after_write(ctx, "update", rel, entry)


def do_delete(ctx):
    rel, entry = load(ctx)
    ctx.hooks.on_delete(ctx, rel, entry)
    return ctx.hooks.after_delete(ctx, rel, entry)


def do_set_labels(ctx):
    rel, entry = load(ctx)
    body = ctx.validated_body()
    given = body.get("labelFingerprint")
    if not given:
        raise invalid("Required field 'labelFingerprint' not specified", field="labelFingerprint", reason="required")
    if given != entry.resource.get("labelFingerprint"):
        raise precondition("Labels fingerprint either invalid or resource labels have changed")
    entry.resource["labels"] = body.get("labels") or {}
    ctx.flavor.server_fields(ctx, entry.resource, rel, new=False)
    return ctx.hooks.after_write(ctx, "setLabels", rel, entry)


GENERIC = {
    "getIamPolicy": iam_policy.get_iam_policy,
    "setIamPolicy": iam_policy.set_iam_policy,
    "testIamPermissions": iam_policy.test_iam_permissions,
    "insert": do_create,
    "create": do_create,
    "get": do_get,
    "list": do_list,
    "aggregatedList": do_aggregated_list,
    "patch": do_patch,
    "update": do_update,
    "delete": do_delete,
    "setLabels": do_set_labels,
}
