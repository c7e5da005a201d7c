"""Defaults shared by all services: how a service names, links and reports its resources
(Flavor), and what a resource does around the generic verbs (Hooks)."""
import copy
import os

from api import OPERATION_SCHEMAS, fingerprint, new_id, rfc3339
from errors import invalid, not_found


class Flavor:
    """Per-service conventions. The default follows Google's resource-oriented APIs
    (`name` is the full resource name, operations are google.longrunning)."""

    host = None  # e.g. https://container.googleapis.com/
    server_set = ("name", "createTime", "updateTime", "etag")
    omit_empty_lists = True

    def __init__(self, service):
        self.service = service
        # Resource paths start after the version segment: compute/v1/, v1/, dns/v1/, v3/.
        prefix = os.path.commonprefix([r.template for r in service.routes])
        cut = prefix.find(f"{service.version}/")
        self.prefix = prefix[: cut + len(service.version) + 1] if cut >= 0 else ""

    def rel(self, path):
        path = path.lstrip("/")
        return path[len(self.prefix) :] if path.startswith(self.prefix) else path

    def link(self, rel):
        return f"{self.host or self.service.root_url}{self.prefix}{rel}"

    def field_path(self, name):
        return name

    def resolve(self, ctx, rel):
        """The stored path of a resource named by an alias (`projects/-/...`, `versions/latest`)."""
        return rel

    def require(self, ctx, rel):
        """Raises 404 unless the resource exists."""
        if ctx.app.store.get(ctx.key(rel)) is None:
            raise not_found(self.missing_message(rel))

    def policy_shape(self, ctx, rel, policy):
        return policy

    def permissions_shape(self, out):
        return out

    def exists_message(self, rel):
        return f"Resource '{rel}' already exists"

    def missing_message(self, rel):
        return f"Resource '{rel}' was not found"

    def server_fields(self, ctx, res, rel, new):
        props = (ctx.service.schema(ctx.resource_schema()) or {}).get("properties", {})
        now = rfc3339()
        if "name" in props and new:
            res["name"] = rel
        if "createTime" in props and new:
            res["createTime"] = now
        if "updateTime" in props:
            res["updateTime"] = now
        if "etag" in props:
            res["etag"] = fingerprint(res, skip=("etag",), urlsafe=False)

    def list_envelope(self, ctx, schema, rel):
        return {}

    def filter(self, ctx, items):
        return items

    def operation(self, ctx, kind, target_rel, finish=None):
        """A google.longrunning operation, done at once, carrying the resource."""
        entry = ctx.app.store.get(ctx.key(target_rel))
        if finish:
            finish()
        out = {"name": f"{target_rel}/operations/{new_id()}", "done": True}
        if entry is not None:
            out["response"] = copy.deepcopy(entry.resource)
        return Immediate(out)


class Immediate:
    """An operation that is over when it is returned."""

    def __init__(self, body):
        self.body = body

    def render(self):
        return self.body


class Hooks:
    """Resource behaviour around the generic verbs; subclass per resource."""

    required = ()
    methods = {}

    def method(self, verb, method_id):
        fn = self.methods.get(verb)
        return (lambda ctx: fn(self, ctx)) if fn else None

    def name_of(self, ctx, resource):
        for pname, spec in ctx.route.parameters.items():
            required = spec.get("required") or spec.get("description", "").startswith("Required.")
            if spec.get("location") == "query" and pname.endswith("Id") and required:
                value = ctx.query.get(pname)
                if not value:
                    raise invalid(f"Required parameter '{pname}' not specified", field=pname, reason="required")
                return value
        name = resource.get("name")
        if not name:
            raise invalid(f"Required field '{ctx.flavor.field_path('name')}' not specified", field="name", reason="required")
        return name.rsplit("/", 1)[-1]

    def on_create(self, ctx, resource, rel):
        pass

    def on_update(self, ctx, patch, entry, rel):
        pass

    def on_delete(self, ctx, rel, entry):
        pass

    def render(self, ctx, rel, entry):
        return copy.deepcopy(entry.resource)

    def respond(self, ctx, kind, rel, entry, finish=None):
        """The response of a mutation, shaped as the method's response schema says."""
        response = ctx.route.response
        if response in OPERATION_SCHEMAS:
            return ctx.latency_op(kind, rel, finish).render()
        if finish:
            finish()
        if entry is None or response is None:
            return {} if response else None
        resource = ctx.resource_schema()
        if response == resource:
            return self.render(ctx, rel, entry)
        for prop, spec in (ctx.service.schema(response) or {}).get("properties", {}).items():
            if spec.get("$ref") == resource:
                return {prop: self.render(ctx, rel, entry)}
        return {}

    def after_write(self, ctx, kind, rel, entry):
        return self.respond(ctx, kind, rel, entry)

    def after_delete(self, ctx, rel, entry):
        ctx.deleted_id = entry.resource.get("id")
        ctx.app.store.delete(ctx.key(rel))
        for key, _ in ctx.app.store.under(ctx.key(rel)):
            ctx.app.store.delete(key)
        return self.respond(ctx, "delete", rel, None)
