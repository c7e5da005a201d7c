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


def test_objects_generations_and_versions(gcs, name):
    bucket = gcs.bucket(name)
    bucket.versioning_enabled = True
    gcs.create_bucket(bucket, location="europe-west1")
    key = "engine/aws.state.json"

    blob = bucket.blob(key)
    blob.upload_from_string(b'{"serial": 1}', content_type="application/json", if_generation_match=0)
    first = bucket.get_blob(key)
    assert first.generation > 0 and first.metageneration == 1 and first.size == 13
    assert first.content_type == "application/json" and first.crc32c and first.md5_hash
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob(key).upload_from_string(b"again", if_generation_match=0)

    bucket.blob(key).upload_from_string(b'{"serial": 2}', if_generation_match=first.generation)
    second = bucket.get_blob(key)
    assert second.generation > first.generation
    assert bucket.blob(key).download_as_bytes() == b'{"serial": 2}'
    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob(key).upload_from_string(b"stale", if_generation_match=first.generation)
    # Versioning keeps the overwritten generation, readable by its number.
    assert bucket.blob(key, generation=first.generation).download_as_bytes() == b'{"serial": 1}'
    versions = [b.generation for b in gcs.list_blobs(name, prefix="engine/", versions=True)]
    assert versions == [first.generation, second.generation]
    assert [b.name for b in gcs.list_blobs(name)] == [key]

    with pytest.raises(exceptions.PreconditionFailed):
        bucket.blob(key).delete(if_generation_match=first.generation)
    bucket.blob(key).delete(if_generation_match=second.generation)
    with pytest.raises(exceptions.NotFound):
        bucket.blob(key).download_as_bytes()
    assert len(list(gcs.list_blobs(name, versions=True))) == 2
    with pytest.raises(exceptions.Conflict):
        bucket.delete()
    for version in gcs.list_blobs(name, versions=True):
        bucket.blob(key, generation=version.generation).delete()
    bucket.delete()


def test_objects_without_versioning_and_errors(gcs, http, name):
    bucket = gcs.create_bucket(name)
    bucket.blob("a/b").upload_from_string(b"one")
    bucket.blob("a/b").upload_from_string(b"two")
    assert len(list(gcs.list_blobs(name, versions=True))) == 1
    status, body = http("GET", f"/storage/v1/b/{name}/o/missing")
    assert status == 404 and body["error"]["message"] == f"No such object: {name}/missing"
    status, body = http("GET", "/storage/v1/b/no-such-bucket-here/o/x")
    assert status == 404 and body["error"]["message"] == "The specified bucket does not exist."
    status, body = http("GET", f"/storage/v1/b/{name}/o/a%2Fb")
    assert status == 200 and body["kind"] == "storage#object" and body["name"] == "a/b"
    assert body["id"] == f"{name}/a/b/{body['generation']}" and body["selfLink"].endswith("/o/a%2Fb")


def test_a_chunked_form_data_upload_with_trailing_checksums(gcs, endpoint, name):
    """The shape Google's Rust client sends: multipart/form-data in chunks, the checksums the
    client computed in a third part; a checksum that does not match is refused."""
    import base64
    import http.client
    import json as jsonlib
    from urllib.parse import urlsplit

    import google_crc32c

    gcs.create_bucket(name)
    data = b'{"serial": 7}'

    def upload(crc):
        boundary = "engine-boundary"
        parts = [
            ("metadata", "application/json; charset=UTF-8", b"{}"),
            ("media", None, data),
            ("checksums", "application/json; charset=UTF-8", jsonlib.dumps({"crc32c": crc}).encode()),
        ]
        body = b""
        for part, kind, payload in parts:
            body += f"--{boundary}\r\nContent-Disposition: form-data; name=\"{part}\"\r\n".encode()
            if kind:
                body += f"Content-Type: {kind}\r\n".encode()
            body += b"\r\n" + payload + b"\r\n"
        body += f"--{boundary}--\r\n".encode()
        host = urlsplit(endpoint)
        conn = http.client.HTTPConnection(host.hostname, host.port)
        conn.putrequest("POST", f"/upload/storage/v1/b/{name}/o?uploadType=multipart&name=a%2Fstate.json&ifGenerationMatch=0")
        conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        for i in range(0, len(body), 7):
            chunk = body[i : i + 7]
            conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        conn.send(b"0\r\n\r\n")
        answer = conn.getresponse()
        return answer.status, jsonlib.loads(answer.read())

    good = base64.b64encode(google_crc32c.value(data).to_bytes(4, "big")).decode()
    status, body = upload("AAAAAA==")
    assert status == 400 and "doesn't match calculated CRC32C" in body["error"]["message"]
    status, body = upload(good)
    assert status == 200 and body["name"] == "a/state.json" and body["crc32c"] == good
    assert gcs.bucket(name).blob("a/state.json").download_as_bytes() == data
