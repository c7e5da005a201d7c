"""Cloud Storage objects (JSON API v1): media and multipart uploads, metadata and media reads,
deletes and lists, with generation preconditions and bucket object versioning.

Objects do not fit the generic JSON verbs: uploads carry bytes (`/upload/storage/v1/...`),
reads answer bytes with the object's metadata in `x-goog-*` headers (`alt=media`), and object
names are one URL segment that may hold encoded slashes (`o/engine%2Faws.state.json`). So this
module serves them on the raw path, before the generic routing; the metadata a client sends is
still validated against the description's `Object` schema.
"""
import base64
import copy
import email.parser
import email.policy
import hashlib
import json
import re
import time
from urllib.parse import quote, unquote

import google_crc32c

from api import rfc3339
from errors import ApiError, invalid, not_found
from schema import Validator

UPLOAD = re.compile(r"/upload/storage/v1/b/(?P<bucket>[^/]+)/o")
OBJECT = re.compile(r"(?:/download)?/storage/v1/b/(?P<bucket>[^/]+)/o/(?P<object>[^/]+)")
LISTING = re.compile(r"/storage/v1/b/(?P<bucket>[^/]+)/o")
HOST = "https://www.googleapis.com/storage/v1"
DOWNLOAD = "https://storage.googleapis.com/download/storage/v1"


def claims(raw_path):
    """Whether `raw_path` (still percent-encoded) is an object URL this module serves."""
    return any(rx.fullmatch(raw_path) for rx in (UPLOAD, OBJECT, LISTING))


class Version:
    def __init__(self, resource, data):
        self.resource = resource
        self.data = data


class Objects:
    """Every bucket's objects: per name, its versions oldest first; the live one (if any) last
    with no `timeDeleted`."""

    def __init__(self, app):
        self.app = app
        self.by_bucket = {}
        self.last_generation = 0
        self.validator = Validator(next(s for s in app.router.services if s.name == "storage"))

    # --- helpers -------------------------------------------------------------------------
    def bucket(self, name):
        entry = self.app.store.get(f"storage:b/{name}")
        if entry is None:
            raise not_found("The specified bucket does not exist.")
        return entry.resource

    def has_objects(self, bucket):
        """Whether any version of any object (live or noncurrent) is in `bucket`."""
        return any(self.by_bucket.get(bucket, {}).values())

    @staticmethod
    def live(versions):
        return versions[-1] if versions and "timeDeleted" not in versions[-1].resource else None

    def next_generation(self):
        # Generations are microsecond timestamps that only grow, as Cloud Storage's are.
        self.last_generation = max(self.last_generation + 1, int(time.time() * 1_000_000))
        return self.last_generation

    def find(self, bucket, name, query):
        versions = self.by_bucket.get(bucket, {}).get(name, [])
        if "generation" in query:
            wanted = query["generation"]
            found = next((v for v in versions if v.resource["generation"] == wanted), None)
        else:
            found = self.live(versions)
        if found is None:
            raise not_found(f"No such object: {bucket}/{name}")
        return found

    @staticmethod
    def check_preconditions(query, current):
        """`current` is the live version or None; generation 0 means "no live object"."""
        generation = current.resource["generation"] if current else "0"
        metageneration = current.resource["metageneration"] if current else None
        failed = (
            ("ifGenerationMatch" in query and query["ifGenerationMatch"] != generation)
            or ("ifGenerationNotMatch" in query and query["ifGenerationNotMatch"] == generation)
            or ("ifMetagenerationMatch" in query and query["ifMetagenerationMatch"] != metageneration)
            or ("ifMetagenerationNotMatch" in query and query["ifMetagenerationNotMatch"] == metageneration)
        )
        for param in ("ifGenerationMatch", "ifGenerationNotMatch", "ifMetagenerationMatch", "ifMetagenerationNotMatch"):
            if param in query and not re.fullmatch(r"-?\d+", query[param]):
                raise invalid(f"Invalid argument for {param}: {query[param]}", field=param)
        if failed:
            raise ApiError(412, "At least one of the pre-conditions you specified did not hold.", reason="conditionNotMet", status="FAILED_PRECONDITION")

    def retire(self, bucket_resource, versions, now):
        """The live version stops being live: kept as noncurrent under versioning, else gone."""
        live = self.live(versions)
        if live is None:
            return
        if (bucket_resource.get("versioning") or {}).get("enabled"):
            live.resource["timeDeleted"] = now
        else:
            versions.remove(live)

    # --- verbs ---------------------------------------------------------------------------
    def insert(self, bucket, query, content_type, raw):
        bucket_resource = self.bucket(bucket)
        upload = query.get("uploadType")
        if upload == "media":
            metadata, data, checksums = {}, raw, {}
            if content_type:
                metadata["contentType"] = content_type
        elif upload == "multipart":
            metadata, data, checksums = self.multipart(content_type, raw)
        elif upload == "resumable":
            raise ApiError(501, "Resumable uploads are not served by this fake.")
        else:
            raise invalid(f"Invalid upload type: {upload!r}", field="uploadType")
        metadata = self.validator.validate(metadata, {"$ref": "Object"})
        name = query.get("name") or metadata.get("name")
        if not name:
            raise invalid("Required", field="name", reason="required")
        crc32c = base64.b64encode(google_crc32c.value(data).to_bytes(4, "big")).decode()
        md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
        for field, computed in (("crc32c", crc32c), ("md5Hash", md5)):
            sent = checksums.get(field) or metadata.get(field)
            if sent and sent != computed:
                raise invalid(f"Provided {field.upper() if field == 'crc32c' else 'MD5'} \"{sent}\" doesn't match calculated {field.upper() if field == 'crc32c' else 'MD5'} \"{computed}\".")
        with self.app.lock:
            versions = self.by_bucket.setdefault(bucket, {}).setdefault(name, [])
            self.check_preconditions(query, self.live(versions))
            now = rfc3339()
            self.retire(bucket_resource, versions, now)
            generation = str(self.next_generation())
            quoted = quote(name, safe="")
            resource = {k: v for k, v in metadata.items() if k in ("contentType", "contentEncoding", "contentLanguage", "contentDisposition", "cacheControl", "metadata")}
            resource.update(
                kind="storage#object",
                id=f"{bucket}/{name}/{generation}",
                selfLink=f"{HOST}/b/{bucket}/o/{quoted}",
                mediaLink=f"{DOWNLOAD}/b/{bucket}/o/{quoted}?generation={generation}&alt=media",
                name=name,
                bucket=bucket,
                generation=generation,
                metageneration="1",
                storageClass=metadata.get("storageClass") or bucket_resource.get("storageClass", "STANDARD"),
                size=str(len(data)),
                md5Hash=md5,
                crc32c=crc32c,
                etag=_etag(int(generation), 1),
                timeCreated=now,
                updated=now,
                timeStorageClassUpdated=now,
                timeFinalized=now,
            )
            resource.setdefault("contentType", "application/octet-stream")
            versions.append(Version(resource, data))
            return copy.deepcopy(resource)

    @staticmethod
    def multipart(content_type, raw):
        """The metadata, media and optional trailing checksums of a multipart upload (related or
        form-data: Google takes both)."""
        if not content_type or not content_type.startswith("multipart/"):
            raise invalid("Multipart uploads need a multipart Content-Type.")
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw
        )
        parts = list(message.iter_parts()) if message.is_multipart() else []
        if len(parts) < 2:
            raise invalid("Multipart uploads need a metadata part and a media part.")
        try:
            metadata = json.loads(parts[0].get_payload(decode=True) or b"{}")
            checksums = json.loads(parts[2].get_payload(decode=True)) if len(parts) > 2 else {}
        except ValueError as e:
            raise invalid(f"Invalid JSON in a multipart upload: {e}")
        media = parts[1]
        if "contentType" not in metadata and media.get("Content-Type"):
            metadata["contentType"] = media.get_content_type()  # the media part's type, as Google takes it
        return metadata, media.get_payload(decode=True) or b"", checksums

    def get(self, bucket, name, query):
        self.bucket(bucket)
        with self.app.lock:
            found = self.find(bucket, name, query)
            self.check_preconditions(query, found)
            return found

    def delete(self, bucket, name, query):
        bucket_resource = self.bucket(bucket)
        with self.app.lock:
            versions = self.by_bucket.get(bucket, {}).get(name, [])
            if "generation" in query:
                found = self.find(bucket, name, query)
                self.check_preconditions(query, found)
                versions.remove(found)
                return
            live = self.live(versions)
            if live is None:
                raise not_found(f"No such object: {bucket}/{name}")
            self.check_preconditions(query, live)
            self.retire(bucket_resource, versions, rfc3339())

    def list(self, bucket, query):
        self.bucket(bucket)
        prefix, all_versions = query.get("prefix", ""), query.get("versions", "").lower() == "true"
        with self.app.lock:
            items = []
            for name in sorted(self.by_bucket.get(bucket, {})):
                if not name.startswith(prefix):
                    continue
                versions = self.by_bucket[bucket][name]
                chosen = versions if all_versions else [v for v in versions if "timeDeleted" not in v.resource]
                items.extend(copy.deepcopy(v.resource) for v in chosen)
        out = {"kind": "storage#objects"}
        if items:
            out["items"] = items
        return out

    # --- HTTP ----------------------------------------------------------------------------
    def handle(self, method, raw_path, query, headers, raw):
        """Answers (status, headers, body bytes)."""
        try:
            return self._handle(method, raw_path, query, headers, raw)
        except ApiError as e:
            return e.code, {"Content-Type": "application/json; charset=UTF-8"}, json.dumps(e.body()).encode()

    def _handle(self, method, raw_path, query, headers, raw):
        if (m := UPLOAD.fullmatch(raw_path)) and method == "POST":
            made = self.insert(unquote(m["bucket"]), query, headers.get("Content-Type"), raw)
            return _json(200, made)
        if m := OBJECT.fullmatch(raw_path):
            bucket, name = unquote(m["bucket"]), unquote(m["object"])
            if method == "GET":
                found = self.get(bucket, name, query)
                if query.get("alt") == "media":
                    return 200, _media_headers(found.resource), found.data
                return _json(200, copy.deepcopy(found.resource))
            if method == "DELETE":
                self.delete(bucket, name, query)
                return 204, {}, b""
        if (m := LISTING.fullmatch(raw_path)) and method == "GET":
            return _json(200, self.list(unquote(m["bucket"]), query))
        raise ApiError(501, f"{method} {raw_path} is not served by this fake.")


def _json(status, payload):
    return status, {"Content-Type": "application/json; charset=UTF-8"}, json.dumps(payload).encode()


def _media_headers(resource):
    return {
        "Content-Type": resource["contentType"],
        "ETag": resource["etag"],
        "x-goog-generation": resource["generation"],
        "x-goog-metageneration": resource["metageneration"],
        "x-goog-stored-content-length": resource["size"],
        "x-goog-stored-content-encoding": resource.get("contentEncoding", "identity"),
        "x-goog-storage-class": resource["storageClass"],
        "x-goog-hash": f"crc32c={resource['crc32c']},md5={resource['md5Hash']}",
        **{f"x-goog-meta-{k}": v for k, v in (resource.get("metadata") or {}).items()},
    }


def _etag(generation, metageneration):
    """An object etag as Storage makes them: the protobuf of generation and metageneration."""
    out = bytearray()
    for field, n in ((1, generation), (2, metageneration)):
        out.append(field << 3)
        while True:
            byte, n = n & 0x7F, n >> 7
            out.append(byte | (0x80 if n else 0))
            if not n:
                break
    return base64.b64encode(bytes(out)).decode()
