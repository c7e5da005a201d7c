"""Secret Manager v1 driven by google-cloud-secret-manager (REST)."""
import pytest
from google.api_core import exceptions
from google.cloud import secretmanager_v1

from conftest import PROJECT


@pytest.fixture
def sm(client_kwargs):
    return secretmanager_v1.SecretManagerServiceClient(**client_kwargs)


def test_secret_versions(sm, name):
    secret = sm.create_secret(
        parent=f"projects/{PROJECT}",
        secret_id=name,
        secret={"replication": {"automatic": {}}, "labels": {"app": "engine"}},
    )
    assert secret.name == f"projects/{PROJECT}/secrets/{name}" and secret.create_time and secret.etag
    with pytest.raises(exceptions.Conflict):
        sm.create_secret(parent=f"projects/{PROJECT}", secret_id=name, secret={"replication": {"automatic": {}}})
    with pytest.raises(exceptions.BadRequest):
        sm.create_secret(parent=f"projects/{PROJECT}", secret_id=f"{name}-x", secret={})

    v1 = sm.add_secret_version(parent=secret.name, payload={"data": b"one"})
    v2 = sm.add_secret_version(parent=secret.name, payload={"data": b"two"})
    assert v1.name.endswith("/versions/1") and v2.name.endswith("/versions/2")
    latest = sm.access_secret_version(name=f"{secret.name}/versions/latest")
    assert latest.name == v2.name and latest.payload.data == b"two"
    assert sm.access_secret_version(name=v1.name).payload.data == b"one"

    sm.disable_secret_version(name=v2.name)
    assert sm.access_secret_version(name=f"{secret.name}/versions/latest").payload.data == b"one"
    with pytest.raises(exceptions.BadRequest):
        sm.access_secret_version(name=v2.name)
    sm.destroy_secret_version(name=v1.name)
    assert sm.get_secret_version(name=v1.name).state == secretmanager_v1.SecretVersion.State.DESTROYED
    assert [v.name for v in sm.list_secret_versions(parent=secret.name)] == [v1.name, v2.name]

    updated = sm.update_secret(secret={"name": secret.name, "labels": {"app": "other"}}, update_mask={"paths": ["labels"]})
    assert dict(updated.labels) == {"app": "other"}
    assert secret.name in [s.name for s in sm.list_secrets(parent=f"projects/{PROJECT}")]
    sm.delete_secret(name=secret.name)
    with pytest.raises(exceptions.NotFound):
        sm.get_secret(name=secret.name)
    with pytest.raises(exceptions.NotFound):
        sm.access_secret_version(name=v1.name)


def test_secret_iam_policy(sm, name):
    """What OpenBao's nodes are granted on their TLS secret, read-modify-written with the etag."""
    from google.iam.v1 import policy_pb2

    secret = sm.create_secret(parent=f"projects/{PROJECT}", secret_id=name, secret={"replication": {"automatic": {}}})
    policy = sm.get_iam_policy(request={"resource": secret.name})
    binding = policy_pb2.Binding(role="roles/secretmanager.secretAccessor", members=[f"serviceAccount:openbao-node@{PROJECT}.iam.gserviceaccount.com"])
    policy.bindings.append(binding)
    stored = sm.set_iam_policy(request={"resource": secret.name, "policy": policy})
    assert stored.bindings[0].members == binding.members and stored.etag != policy.etag
    with pytest.raises(exceptions.Conflict):  # a stale etag is refused
        sm.set_iam_policy(request={"resource": secret.name, "policy": policy})
