"""Amazon S3 Files (`s3files`, API 2025-05-05), which moto 5.2.5 lacks: file systems on an S3
bucket, their mount targets, access points and file-system policies, and tags.

Requests are checked against botocore's own S3 Files service model (required members, member
types and constraints, through `eks_state.check`); errors are S3 Files' (HTTP status,
`x-amzn-ErrorType`, JSON `message`). Like the rest of moto, everything completes at once: a
file system is `available` when made. State is per account and region (moto's BackendDict).
`install()` registers the service with moto's server before it handles its first request.
"""

from .models import s3files_backends  # noqa: F401
