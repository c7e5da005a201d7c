"""Storage Transfer Service: google-api-python-client for storagetransfer v1 (the service
agent, and a job mirroring an S3 bucket through an AWS role, as the engine makes it)."""
import json

import pytest
from google.auth.credentials import AnonymousCredentials
from googleapiclient import discovery, errors

from conftest import PROJECT


@pytest.fixture
def transfer(endpoint):
    return discovery.build("storagetransfer", "v1", credentials=AnonymousCredentials(), client_options={"api_endpoint": endpoint}, static_discovery=True)


def status_of(call):
    with pytest.raises(errors.HttpError) as err:
        call.execute()
    return err.value.resp.status


def mirror(name, role="arn:aws:iam::1:role/mirror"):
    return {
        "name": f"transferJobs/{name}",
        "projectId": PROJECT,
        "description": "mirror",
        "status": "ENABLED",
        "schedule": {"scheduleStartDate": {"year": 2026, "month": 1, "day": 1}, "repeatInterval": "86400s"},
        "transferSpec": {
            "awsS3DataSource": {"bucketName": "src", "roleArn": role},
            "gcsDataSink": {"bucketName": "dst", "path": "mirror/"},
            "transferOptions": {"overwriteWhen": "NEVER", "deleteObjectsUniqueInSink": False, "deleteObjectsFromSourceAfterTransfer": False},
        },
    }


def test_the_service_agent_is_stable_per_project(transfer):
    agent = transfer.googleServiceAccounts().get(projectId=PROJECT).execute()
    assert agent["accountEmail"].startswith("project-") and agent["accountEmail"].endswith("@storage-transfer-service.iam.gserviceaccount.com")
    assert agent["subjectId"].isdigit()
    assert transfer.googleServiceAccounts().get(projectId=PROJECT).execute() == agent
    assert transfer.googleServiceAccounts().get(projectId="other").execute()["subjectId"] != agent["subjectId"]


def test_job_lifecycle(transfer, name):
    jobs = transfer.transferJobs()
    job = jobs.create(body=mirror(name)).execute()
    assert job["name"] == f"transferJobs/{name}" and job["creationTime"] and job["status"] == "ENABLED"
    assert status_of(jobs.create(body=mirror(name))) == 409
    got = jobs.get(jobName=job["name"], projectId=PROJECT).execute()
    assert got["transferSpec"]["awsS3DataSource"]["roleArn"] == "arn:aws:iam::1:role/mirror"
    assert status_of(jobs.get(jobName=job["name"], projectId="other")) == 404

    spec = mirror(name, role="arn:aws:iam::1:role/other")["transferSpec"]
    patched = jobs.patch(
        jobName=job["name"],
        body={"projectId": PROJECT, "transferJob": {"transferSpec": spec, "description": "new"}, "updateTransferJobFieldMask": "transfer_spec,description"},
    ).execute()
    assert patched["transferSpec"]["awsS3DataSource"]["roleArn"].endswith("/other") and patched["description"] == "new"
    refused = jobs.patch(
        jobName=job["name"], body={"projectId": PROJECT, "transferJob": {"schedule": {}}, "updateTransferJobFieldMask": "schedule"}
    )
    assert status_of(refused) == 400
    listed = jobs.list(filter=json.dumps({"projectId": PROJECT, "jobNames": [job["name"]]})).execute()
    assert [j["name"] for j in listed["transferJobs"]] == [job["name"]]

    jobs.delete(jobName=job["name"], projectId=PROJECT).execute()
    gone = jobs.get(jobName=job["name"], projectId=PROJECT).execute()
    assert gone["status"] == "DELETED" and gone["deletionTime"]
    assert status_of(jobs.create(body=mirror(name))) == 409, "a deleted job's name stays taken"
    assert status_of(jobs.patch(jobName=job["name"], body={"projectId": PROJECT, "transferJob": {"status": "ENABLED"}, "updateTransferJobFieldMask": "status"})) == 400


def test_bad_jobs_are_refused(transfer, name):
    jobs = transfer.transferJobs()
    no_status = mirror(name)
    del no_status["status"]
    assert status_of(jobs.create(body=no_status)) == 400
    no_role = mirror(name)
    del no_role["transferSpec"]["awsS3DataSource"]["roleArn"]
    assert status_of(jobs.create(body=no_role)) == 400
    bad_name = mirror(name)
    bad_name["name"] = "jobs/x"
    assert status_of(jobs.create(body=bad_name)) == 400
    unnamed = mirror(name)
    del unnamed["name"]
    assigned = jobs.create(body=unnamed).execute()
    assert assigned["name"].startswith("transferJobs/")
