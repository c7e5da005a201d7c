"""Cloud Storage buckets driven by google-cloud-storage (JSON API)."""
import pytest
from google.api_core import exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage

from conftest import PROJECT


@pytest.fixture
def gcs(endpoint):
    return storage.Client(project=PROJECT, credentials=AnonymousCredentials(), client_options={"api_endpoint": endpoint})


def test_bucket_lifecycle(gcs, name):
    bucket = gcs.bucket(name)
    bucket.labels = {"owner": "engine"}
    bucket.versioning_enabled = True
    bucket.iam_configuration.uniform_bucket_level_access_enabled = True
    created = gcs.create_bucket(bucket, location="europe-west1")
    assert created.location == "EUROPE-WEST1" and created.location_type == "region"
    assert created.metageneration == 1 and created.time_created and created.project_number
    assert created.versioning_enabled and created.labels == {"owner": "engine"}
    with pytest.raises(exceptions.Conflict):
        gcs.create_bucket(name)
    assert name in [b.name for b in gcs.list_buckets()]

    got = gcs.get_bucket(name)
    got.labels = {"owner": "engine", "env": "test"}
    got.patch()
    assert gcs.get_bucket(name).labels == {"owner": "engine", "env": "test"}
    assert gcs.get_bucket(name).metageneration == 2
    with pytest.raises(exceptions.PreconditionFailed):
        got.patch(if_metageneration_match=1)

    policy = got.get_iam_policy()
    policy.bindings.append({"role": "roles/storage.objectAdmin", "members": {f"serviceAccount:engine@{PROJECT}.iam.gserviceaccount.com"}})
    got.set_iam_policy(policy)
    roles = {b["role"] for b in got.get_iam_policy().bindings}
    assert "roles/storage.objectAdmin" in roles

    got.delete()
    with pytest.raises(exceptions.NotFound):
        gcs.get_bucket(name)
