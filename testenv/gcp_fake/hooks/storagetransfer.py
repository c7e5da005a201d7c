"""Storage Transfer Service v1: the project's service agent and transfer jobs.

The service agent (`googleServiceAccounts.get`) is Google's: every project has one, named by
its project number, with a stable numeric subject id (what AWS trusts a transfer by). Jobs are
named `transferJobs/...` (given or assigned), belong to a project (`projectId`, required on
every call), are patched only through an `UpdateTransferJobRequest` naming the fields it
changes, and a delete only marks a job DELETED: its name stays taken."""
import copy
import re
import zlib

from api import load, rfc3339, new_id
from errors import ApiError, invalid, not_found, already_exists
from hooks.base import Flavor, Hooks
from hooks.iam import project_number

JOB_NAME = re.compile(r"transferJobs/(?!OPI)[A-Za-z0-9._~-]*[A-Za-z0-9]")
# What `updateTransferJobFieldMask` may name (snake_case or camelCase).
UPDATABLE = {"description", "transferSpec", "notificationConfig", "loggingConfig", "status"}


def _camel(path):
    head, *rest = path.strip().split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


class StorageTransferFlavor(Flavor):
    server_set = ("name", "creationTime", "lastModificationTime", "deletionTime", "projectId", "latestOperationName")

    def missing_message(self, rel):
        return f"Transfer job {rel} not found." if rel.startswith("transferJobs/") else super().missing_message(rel)

    def server_fields(self, ctx, res, rel, new):
        pass


def _project(ctx, body=None):
    project = ctx.query.get("projectId") or (body or {}).get("projectId")
    if not project:
        raise invalid("Required parameter 'projectId' not specified", field="projectId", reason="required")
    return project


def _own_job(ctx, project):
    rel, entry = load(ctx)
    if entry.resource.get("projectId") != project:
        raise not_found(ctx.flavor.missing_message(rel))
    return rel, entry


def _check_spec(spec):
    if not isinstance(spec, dict) or not spec:
        raise invalid("transferSpec is required.", field="transferSpec", reason="required")
    sources = [k for k in spec if k.endswith("DataSource")]
    sinks = [k for k in spec if k.endswith("DataSink")]
    if len(sources) != 1 or len(sinks) != 1:
        raise invalid("A transfer spec names exactly one data source and one data sink.", field="transferSpec")
    s3 = spec.get("awsS3DataSource")
    if s3 is not None:
        if not s3.get("bucketName"):
            raise invalid("awsS3DataSource.bucketName is required.", field="transferSpec.awsS3DataSource.bucketName", reason="required")
        if not (s3.get("roleArn") or s3.get("awsAccessKey") or s3.get("credentialsSecret")):
            raise invalid("An AWS S3 source needs a role ARN, an access key or a credentials secret.", field="transferSpec.awsS3DataSource")
    sink = spec.get("gcsDataSink")
    if sink is not None and not sink.get("bucketName"):
        raise invalid("gcsDataSink.bucketName is required.", field="transferSpec.gcsDataSink.bucketName", reason="required")


class ServiceAccountHooks(Hooks):
    def get(self, ctx):
        project = ctx.params.get("projectId")
        number = project_number(project)
        subject = str(100000000000000000000 + zlib.crc32(f"sts:{project}".encode()) * 1000)
        return {"accountEmail": f"project-{number}@storage-transfer-service.iam.gserviceaccount.com", "subjectId": subject}

    methods = {"get": get}


class TransferJobHooks(Hooks):
    def name_of(self, ctx, resource):
        name = resource.get("name") or f"transferJobs/{new_id()}"
        if not JOB_NAME.fullmatch(name) or len(name) > 128:
            raise invalid(f"Invalid transfer job name: {name}", field="transferJob.name")
        resource["name"] = name
        return name.split("/", 1)[1]

    def on_create(self, ctx, res, rel):
        project = res.get("projectId")
        if not project:
            raise invalid("projectId is required.", field="projectId", reason="required")
        if res.get("status") in (None, "", "STATUS_UNSPECIFIED"):
            raise invalid("status must be specified.", field="status", reason="required")
        _check_spec(res.get("transferSpec"))
        now = rfc3339()
        res["creationTime"] = now
        res["lastModificationTime"] = now

    def get(self, ctx):
        rel, entry = _own_job(ctx, _project(ctx))
        return copy.deepcopy(entry.resource)

    def patch(self, ctx):
        body = ctx.validated_body()
        project = body.get("projectId")
        if not project:
            raise invalid("Required field 'projectId' not specified", field="projectId", reason="required")
        rel, entry = _own_job(ctx, project)
        job = entry.resource
        if job.get("status") == "DELETED":
            raise ApiError(400, f"Transfer job {rel} is deleted.", status="FAILED_PRECONDITION", reason="failedPrecondition")
        patch = body.get("transferJob") or {}
        mask = [p for p in (body.get("updateTransferJobFieldMask") or "").split(",") if p.strip()]
        fields = {_camel(p) for p in mask} or set(patch)
        refused = fields - UPDATABLE
        if refused:
            raise invalid(f"Fields that cannot be updated: {', '.join(sorted(refused))}", field="updateTransferJobFieldMask")
        if "transferSpec" in fields:
            _check_spec(patch.get("transferSpec"))
        for field in fields:
            if field in patch:
                job[field] = copy.deepcopy(patch[field])
            else:
                job.pop(field, None)
        now = rfc3339()
        job["lastModificationTime"] = now
        if job.get("status") == "DELETED":
            job["deletionTime"] = now
        return copy.deepcopy(job)

    def delete(self, ctx):
        rel, entry = _own_job(ctx, _project(ctx))
        now = rfc3339()
        entry.resource["status"] = "DELETED"
        entry.resource["deletionTime"] = now
        entry.resource["lastModificationTime"] = now
        return {}

    def list(self, ctx):
        import json

        try:
            wanted = json.loads(ctx.query.get("filter") or "")
        except ValueError:
            raise invalid("filter must be JSON with projectId.", field="filter")
        project = wanted.get("projectId") or wanted.get("project_id")
        if not project:
            raise invalid("filter must name projectId.", field="filter", reason="required")
        names = set(wanted.get("jobNames") or wanted.get("job_names") or [])
        statuses = set(wanted.get("jobStatuses") or wanted.get("job_statuses") or [])
        jobs = []
        for key, entry in sorted(ctx.app.store.children(ctx.key("transferJobs")), key=lambda kv: kv[0]):
            job = entry.resource
            if job.get("projectId") != project or (names and job["name"] not in names):
                continue
            if statuses and job.get("status") not in statuses:
                continue
            jobs.append(copy.deepcopy(job))
        return {"transferJobs": jobs} if jobs else {}

    methods = {"get": get, "patch": patch, "delete": delete, "list": list}


def register(hooks):
    hooks.update({"storagetransfer.googleServiceAccounts": ServiceAccountHooks(), "storagetransfer.transferJobs": TransferJobHooks()})
