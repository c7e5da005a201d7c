"""Corrections of moto 5.2.5's S3 responses where they differ from S3's wire format.

GetBucketVersioning: S3 answers with the root element `VersioningConfiguration` (see the S3 API
reference's response syntax). moto 5.2.5 names it `GetBucketVersioningResponse`; botocore does
not look at the root's name, but strict XML clients (the AWS SDK for Rust) reject the response.

Conditional writes (`If-None-Match: *`, `If-Match: <etag>` on PutObject and DeleteObject): S3
checks the precondition and writes as one step, so of two racing writers exactly one wins.
moto's threaded server checks, then writes; two requests can both pass the check. Object writes
and deletes are serialised here, so each one's check and write are one step, as on S3.
"""

import threading

from moto.s3.responses import S3Response

WRONG = "GetBucketVersioningResponse"
RIGHT = "VersioningConfiguration"


def _fixed_root(body):
    text = body.decode("utf-8") if isinstance(body, bytes) else body
    return text.replace("<" + WRONG, "<" + RIGHT).replace("</" + WRONG + ">", "</" + RIGHT + ">")


_OBJECT_WRITES = threading.Lock()


def _one_at_a_time(original):
    def handler(self):
        with _OBJECT_WRITES:
            return original(self)

    return handler


def install():
    """Patches moto's S3 response class (once)."""
    original = S3Response.get_bucket_versioning
    if getattr(original, "_engine_fixed", False):
        return
    S3Response.put_object = _one_at_a_time(S3Response.put_object)
    S3Response.delete_object = _one_at_a_time(S3Response.delete_object)

    def get_bucket_versioning(self):
        status, headers, body = original(self)
        return status, headers, _fixed_root(body)

    get_bucket_versioning._engine_fixed = True
    S3Response.get_bucket_versioning = get_bucket_versioning
