"""IAM policies on any resource: getIamPolicy, setIamPolicy, testIamPermissions.

A policy belongs to the resource the method is called on; setting it with a stale etag fails
with 409 ABORTED, as Google's IAM does. The caller holds every permission it asks about.
"""
import base64
import hashlib
import json

from errors import ApiError, invalid


def _etag(policy):
    data = json.dumps({k: v for k, v in policy.items() if k != "etag"}, sort_keys=True)
    return base64.b64encode(hashlib.sha256(data.encode()).digest()[:8]).decode()


def _resource(ctx):
    rel = ctx.item_rel()
    ctx.flavor.require(ctx, rel)
    return rel


def _policies(ctx):
    return ctx.app.policies


def _current(ctx, rel):
    policy = _policies(ctx).get(ctx.key(rel))
    if policy is None:
        policy = {"version": 1, "bindings": []}
        policy["etag"] = _etag(policy)
    return dict(policy)


def _shape(ctx, rel, policy):
    return ctx.flavor.policy_shape(ctx, rel, dict(policy))


def get_iam_policy(ctx):
    rel = _resource(ctx)
    return _shape(ctx, rel, _current(ctx, rel))


def set_iam_policy(ctx):
    rel = _resource(ctx)
    body = ctx.validated_body()
    policy = body.get("policy", body) if ctx.route.request != "Policy" else body
    if not isinstance(policy, dict):
        raise invalid("Required field 'policy' not specified", field="policy", reason="required")
    current = _current(ctx, rel)
    if policy.get("etag") and policy["etag"] != current["etag"]:
        raise ApiError(
            409,
            "There were concurrent policy changes. Please retry the whole read-modify-write with exponential backoff.",
            reason="aborted",
            status="ABORTED",
        )
    for i, binding in enumerate(policy.get("bindings") or []):
        if not binding.get("role"):
            raise invalid(f"Required field 'policy.bindings[{i}].role' not specified", reason="required")
        if not binding.get("members"):
            raise invalid(f"Policy binding {i} for role {binding['role']} has no members.")
        for member in binding["members"]:
            if ":" not in member and member not in ("allUsers", "allAuthenticatedUsers"):
                raise invalid(f"Invalid member: {member}. Must be of the form type:value.")
    stored = {
        "version": policy.get("version") or 1,
        "bindings": [b for b in policy.get("bindings") or [] if b.get("members")],
    }
    if policy.get("auditConfigs"):
        stored["auditConfigs"] = policy["auditConfigs"]
    stored["etag"] = _etag(dict(stored, previous=current["etag"]))
    _policies(ctx)[ctx.key(rel)] = stored
    return _shape(ctx, rel, stored)


def test_iam_permissions(ctx):
    _resource(ctx)
    body = ctx.validated_body() if ctx.route.request else {}
    permissions = body.get("permissions") or ctx.query.get("permissions", "").split(",")
    out = {"permissions": [p for p in permissions if p]}
    return ctx.flavor.permissions_shape(out)
