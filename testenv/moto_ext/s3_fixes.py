"""Corrections of moto 5.2.5's S3 responses where they differ from S3's wire format.

GetBucketVersioning: S3 answers with the root element `VersioningConfiguration` (see the S3 API
reference's response syntax). moto 5.2.5 names it `GetBucketVersioningResponse`; botocore does
not look at the root's name, but strict XML clients (the AWS SDK for Rust) reject the response.
"""

from moto.s3.responses import S3Response

WRONG = "GetBucketVersioningResponse"
RIGHT = "VersioningConfiguration"


def _fixed_root(body):
    text = body.decode("utf-8") if isinstance(body, bytes) else body
    return text.replace("<" + WRONG, "<" + RIGHT).replace("</" + WRONG + ">", "</" + RIGHT + ">")


def install():
    """Patches moto's S3 response class (once)."""
    original = S3Response.get_bucket_versioning
    if getattr(original, "_engine_fixed", False):
        return

    def get_bucket_versioning(self):
        status, headers, body = original(self)
        return status, headers, _fixed_root(body)

    get_bucket_versioning._engine_fixed = True
    S3Response.get_bucket_versioning = get_bucket_versioning
