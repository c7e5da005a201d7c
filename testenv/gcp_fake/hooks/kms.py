"""Cloud KMS v1: key rings, crypto keys with their versions, encrypt and decrypt.

Ciphertext is the plaintext sealed with a per-version key held in memory (AES-GCM), so it
only decrypts with the key that made it, and only in this server's lifetime."""
import base64
import copy
import os

import google_crc32c
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from api import load, rfc3339
from errors import ApiError, invalid, not_found
from hooks.base import Flavor, Hooks

DESTROY_SCHEDULED = "DESTROY_SCHEDULED"


def crc32c(data):
    return str(google_crc32c.value(data))


class KmsFlavor(Flavor):
    def missing_message(self, rel):
        kind = rel.split("/")[-2][:-1] if "/" in rel else "resource"
        kinds = {"keyRing": "KeyRing", "cryptoKey": "CryptoKey", "cryptoKeyVersion": "CryptoKeyVersion"}
        return f"{kinds.get(kind, kind)} {rel} not found."

    def exists_message(self, rel):
        kind = rel.split("/")[-2][:-1]
        return f"{kind[0].upper() + kind[1:]} {rel} already exists."


def _version(ctx, key_rel, number, template):
    rel = f"{key_rel}/cryptoKeyVersions/{number}"
    version = {
        "name": rel,
        "state": "ENABLED",
        "createTime": rfc3339(),
        "generateTime": rfc3339(),
        "protectionLevel": template.get("protectionLevel", "SOFTWARE"),
        "algorithm": template.get("algorithm", "GOOGLE_SYMMETRIC_ENCRYPTION"),
    }
    ctx.app.store.put(ctx.key(rel), ctx.key(f"{key_rel}/cryptoKeyVersions"), version, secret=AESGCM.generate_key(256))
    return version


def _next_number(ctx, key_rel):
    return len(ctx.app.store.children(ctx.key(f"{key_rel}/cryptoKeyVersions"))) + 1


class CryptoKeyHooks(Hooks):
    def on_create(self, ctx, res, rel):
        ring = rel.rsplit("/cryptoKeys/", 1)[0]
        if ctx.app.store.get(ctx.key(ring)) is None:
            raise not_found(ctx.flavor.missing_message(ring))
        if not res.get("purpose"):
            raise invalid("The request must specify a purpose.", field="purpose", reason="required")
        template = res.setdefault("versionTemplate", {})
        template.setdefault("protectionLevel", "SOFTWARE")
        template.setdefault("algorithm", "GOOGLE_SYMMETRIC_ENCRYPTION" if res["purpose"] == "ENCRYPT_DECRYPT" else "")
        if not template["algorithm"]:
            raise invalid("versionTemplate.algorithm must be specified for this purpose.", field="versionTemplate.algorithm")
        res.setdefault("destroyScheduledDuration", "2592000s")
        ctx.initial_version = ctx.query.get("skipInitialVersionCreation", "false") != "true"

    def after_write(self, ctx, kind, rel, entry):
        if kind == "create" and ctx.initial_version:
            _version(ctx, rel, 1, entry.resource["versionTemplate"])
            entry.meta["primary"] = 1
        return self.render(ctx, rel, entry)

    def render(self, ctx, rel, entry):
        out = copy.deepcopy(entry.resource)
        primary = entry.meta.get("primary")
        if primary and out.get("purpose") == "ENCRYPT_DECRYPT":
            out["primary"] = copy.deepcopy(ctx.app.store.get(ctx.key(f"{rel}/cryptoKeyVersions/{primary}")).resource)
        return out

    def encrypt(self, ctx):
        rel, entry = load(ctx)
        body = ctx.validated_body()
        primary = entry.meta.get("primary")
        version = ctx.app.store.get(ctx.key(f"{rel}/cryptoKeyVersions/{primary}")) if primary else None
        if version is None or version.resource["state"] != "ENABLED":
            raise ApiError(400, f"{rel} has no enabled primary version.", status="FAILED_PRECONDITION", reason="failedPrecondition")
        plaintext = base64.b64decode(body.get("plaintext") or "")
        aad = base64.b64decode(body.get("additionalAuthenticatedData") or "")
        nonce = os.urandom(12)
        sealed = primary.to_bytes(4, "big") + nonce + AESGCM(version.meta["secret"]).encrypt(nonce, plaintext, aad)
        out = {
            "name": version.resource["name"],
            "ciphertext": base64.b64encode(sealed).decode(),
            "ciphertextCrc32c": crc32c(sealed),
            "protectionLevel": version.resource["protectionLevel"],
        }
        if "plaintextCrc32c" in body:
            out["verifiedPlaintextCrc32c"] = True
        if "additionalAuthenticatedDataCrc32c" in body:
            out["verifiedAdditionalAuthenticatedDataCrc32c"] = True
        return out

    def decrypt(self, ctx):
        rel, entry = load(ctx)
        body = ctx.validated_body()
        sealed = base64.b64decode(body.get("ciphertext") or "")
        aad = base64.b64decode(body.get("additionalAuthenticatedData") or "")
        number = int.from_bytes(sealed[:4], "big") if len(sealed) > 16 else 0
        version = ctx.app.store.get(ctx.key(f"{rel}/cryptoKeyVersions/{number}"))
        try:
            plaintext = AESGCM(version.meta["secret"]).decrypt(sealed[4:16], sealed[16:], aad)
        except Exception:
            raise invalid("Decryption failed: the ciphertext is invalid.", field="ciphertext")
        if version.resource["state"] != "ENABLED":
            raise ApiError(400, f"{version.resource['name']} is not enabled, current state is: {version.resource['state']}.", status="FAILED_PRECONDITION", reason="failedPrecondition")
        return {
            "plaintext": base64.b64encode(plaintext).decode(),
            "plaintextCrc32c": crc32c(plaintext),
            "protectionLevel": version.resource["protectionLevel"],
            "usedPrimary": number == entry.meta.get("primary"),
        }

    def update_primary(self, ctx):
        rel, entry = load(ctx)
        number = ctx.validated_body().get("cryptoKeyVersionId", "")
        version = ctx.app.store.get(ctx.key(f"{rel}/cryptoKeyVersions/{number}"))
        if version is None:
            raise not_found(ctx.flavor.missing_message(f"{rel}/cryptoKeyVersions/{number}"))
        entry.meta["primary"] = int(number)
        return self.render(ctx, rel, entry)

    def on_delete(self, ctx, rel, entry):
        for _, version in ctx.app.store.children(ctx.key(f"{rel}/cryptoKeyVersions")):
            if version.resource["state"] not in ("DESTROYED", DESTROY_SCHEDULED):
                raise ApiError(400, f"CryptoKey {rel} has versions that are not destroyed.", status="FAILED_PRECONDITION", reason="failedPrecondition")

    methods = {"encrypt": encrypt, "decrypt": decrypt, "updatePrimaryVersion": update_primary}


class CryptoKeyVersionHooks(Hooks):
    def create(self, ctx):
        key_rel = ctx.rel.rsplit("/cryptoKeyVersions", 1)[0]
        key = ctx.app.store.get(ctx.key(key_rel))
        if key is None:
            raise not_found(ctx.flavor.missing_message(key_rel))
        ctx.validated_body()
        return _version(ctx, key_rel, _next_number(ctx, key_rel), key.resource["versionTemplate"])

    def _state(target, allowed):
        def method(self, ctx):
            rel, entry = load(ctx)
            if entry.resource["state"] not in allowed:
                raise ApiError(400, f"{rel} is not in a state that allows this change (current state {entry.resource['state']}).", status="FAILED_PRECONDITION", reason="failedPrecondition")
            entry.resource["state"] = target
            if target == DESTROY_SCHEDULED:
                entry.resource["destroyTime"] = rfc3339()
            else:
                entry.resource.pop("destroyTime", None)
            return copy.deepcopy(entry.resource)

        return method

    def on_update(self, ctx, patch, entry, rel):
        if patch.get("state") not in (None, "ENABLED", "DISABLED"):
            raise invalid(f"Invalid state for update: {patch['state']}", field="cryptoKeyVersion.state")

    methods = {
        "create": create,
        "destroy": _state(DESTROY_SCHEDULED, ("ENABLED", "DISABLED")),
        "restore": _state("DISABLED", (DESTROY_SCHEDULED,)),
    }


class KeyRingHooks(Hooks):
    def on_delete(self, ctx, rel, entry):
        if ctx.app.store.children(ctx.key(f"{rel}/cryptoKeys")):
            raise ApiError(400, f"KeyRing {rel} still contains CryptoKeys.", status="FAILED_PRECONDITION", reason="failedPrecondition")


def register(hooks):
    hooks.update(
        {
            "cloudkms.projects.locations.keyRings": KeyRingHooks(),
            "cloudkms.projects.locations.keyRings.cryptoKeys": CryptoKeyHooks(),
            "cloudkms.projects.locations.keyRings.cryptoKeys.cryptoKeyVersions": CryptoKeyVersionHooks(),
        }
    )
