"""IAM service accounts and project IAM policies: google-api-python-client for IAM v1 (the
official IAM admin client speaks only gRPC), google-cloud-resource-manager for projects."""
import pytest
from google.api_core import exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import resourcemanager_v3
from google.iam.v1 import policy_pb2
from googleapiclient import discovery, errors

from conftest import PROJECT


@pytest.fixture
def iam(endpoint):
    return discovery.build("iam", "v1", credentials=AnonymousCredentials(), client_options={"api_endpoint": endpoint}, static_discovery=True)


@pytest.fixture
def projects(client_kwargs):
    return resourcemanager_v3.ProjectsClient(**client_kwargs)


def test_service_account_lifecycle(iam, name):
    accounts = iam.projects().serviceAccounts()
    account_id = name.replace("t-", "sa-")
    sa = accounts.create(name=f"projects/{PROJECT}", body={"accountId": account_id, "serviceAccount": {"displayName": "Engine"}}).execute()
    email = f"{account_id}@{PROJECT}.iam.gserviceaccount.com"
    assert sa["email"] == email and sa["name"] == f"projects/{PROJECT}/serviceAccounts/{email}"
    assert sa["uniqueId"].isdigit() and sa["projectId"] == PROJECT
    with pytest.raises(errors.HttpError) as err:
        accounts.create(name=f"projects/{PROJECT}", body={"accountId": account_id}).execute()
    assert err.value.resp.status == 409

    assert accounts.get(name=f"projects/-/serviceAccounts/{email}").execute()["uniqueId"] == sa["uniqueId"]
    assert accounts.get(name=f"projects/{PROJECT}/serviceAccounts/{sa['uniqueId']}").execute()["email"] == email
    patched = accounts.patch(
        name=sa["name"], body={"serviceAccount": {"description": "runs the engine", "displayName": "ignored"}, "updateMask": "description"}
    ).execute()
    assert patched["description"] == "runs the engine" and patched["displayName"] == "Engine"
    assert email in [a["email"] for a in accounts.list(name=f"projects/{PROJECT}").execute()["accounts"]]

    policy = accounts.getIamPolicy(resource=sa["name"]).execute()
    policy["bindings"] = [{"role": "roles/iam.workloadIdentityUser", "members": [f"serviceAccount:{PROJECT}.svc.id.goog[ns/ksa]"]}]
    stored = accounts.setIamPolicy(resource=sa["name"], body={"policy": policy}).execute()
    assert stored["bindings"] == policy["bindings"] and stored["etag"] != policy["etag"]

    accounts.delete(name=sa["name"]).execute()
    with pytest.raises(errors.HttpError) as err:
        accounts.get(name=sa["name"]).execute()
    assert err.value.resp.status == 404


def test_bad_account_id(iam):
    with pytest.raises(errors.HttpError) as err:
        iam.projects().serviceAccounts().create(name=f"projects/{PROJECT}", body={"accountId": "X"}).execute()
    assert err.value.resp.status == 400


def test_project_iam_policy(projects, name):
    resource = f"projects/{name}"
    policy = projects.get_iam_policy(resource=resource)
    policy.bindings.append(policy_pb2.Binding(role="roles/container.admin", members=[f"serviceAccount:engine@{name}.iam.gserviceaccount.com"]))
    stored = projects.set_iam_policy(request={"resource": resource, "policy": policy})
    assert [b.role for b in stored.bindings] == ["roles/container.admin"]
    with pytest.raises(exceptions.Conflict):
        projects.set_iam_policy(request={"resource": resource, "policy": policy})
    bad = policy_pb2.Policy(bindings=[policy_pb2.Binding(role="roles/viewer", members=["nobody"])])
    with pytest.raises(exceptions.BadRequest):
        projects.set_iam_policy(request={"resource": resource, "policy": bad})
    assert projects.get_project(name=resource).project_id == name


def test_percent_encoded_paths(http, name):
    account_id = name.replace("t-", "sb-")
    status, sa = http("POST", f"/v1/projects/{PROJECT}/serviceAccounts", {"accountId": account_id})
    assert status == 200, sa
    encoded = sa["email"].replace("@", "%40")
    assert http("GET", f"/v1/projects/{PROJECT}/serviceAccounts/{encoded}")[1]["email"] == sa["email"]


def test_service_account_etags_are_standard_base64(iam, name):
    """Proto3 JSON writes `bytes` in standard base64; Google's Rust client reads no other."""
    import base64
    import binascii

    accounts = iam.projects().serviceAccounts()
    for i in range(12):
        account_id = f"{name.replace('t-', 'sa-')[:24]}-{i}"
        sa = accounts.create(name=f"projects/{PROJECT}", body={"accountId": account_id}).execute()
        assert "-" not in sa["etag"] and "_" not in sa["etag"], sa["etag"]
        try:
            base64.b64decode(sa["etag"], validate=True)
        except binascii.Error as e:
            pytest.fail(f"{sa['etag']}: {e}")
