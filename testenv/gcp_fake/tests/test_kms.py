"""Cloud KMS v1 driven by google-cloud-kms (REST)."""
import pytest
from google.api_core import exceptions
from google.cloud import kms_v1
from google.iam.v1 import policy_pb2

from conftest import PROJECT


@pytest.fixture
def kms(client_kwargs):
    return kms_v1.KeyManagementServiceClient(**client_kwargs)


def test_key_ring_and_keys(kms, name):
    parent = f"projects/{PROJECT}/locations/global"
    ring = kms.create_key_ring(parent=parent, key_ring_id=name, key_ring=kms_v1.KeyRing())
    assert ring.name == f"{parent}/keyRings/{name}" and ring.create_time
    assert kms.get_key_ring(name=ring.name).name == ring.name
    assert ring.name in [r.name for r in kms.list_key_rings(parent=parent)]
    with pytest.raises(exceptions.Conflict):
        kms.create_key_ring(parent=parent, key_ring_id=name, key_ring=kms_v1.KeyRing())

    key = kms.create_crypto_key(
        parent=ring.name,
        crypto_key_id="unseal",
        crypto_key=kms_v1.CryptoKey(purpose=kms_v1.CryptoKey.CryptoKeyPurpose.ENCRYPT_DECRYPT, labels={"use": "openbao"}),
    )
    assert key.name == f"{ring.name}/cryptoKeys/unseal"
    assert key.primary.name == f"{key.name}/cryptoKeyVersions/1"
    assert key.primary.state == kms_v1.CryptoKeyVersion.CryptoKeyVersionState.ENABLED
    assert key.version_template.algorithm == kms_v1.CryptoKeyVersion.CryptoKeyVersionAlgorithm.GOOGLE_SYMMETRIC_ENCRYPTION

    sealed = kms.encrypt(name=key.name, plaintext=b"root key")
    assert sealed.name == key.primary.name and sealed.ciphertext != b"root key"
    assert kms.decrypt(name=key.name, ciphertext=sealed.ciphertext).plaintext == b"root key"
    with pytest.raises(exceptions.BadRequest):
        kms.decrypt(name=key.name, ciphertext=b"garbage-garbage-garbage")

    updated = kms.update_crypto_key(
        crypto_key=kms_v1.CryptoKey(name=key.name, labels={"use": "other"}, rotation_period={"seconds": 86400 * 30}),
        update_mask={"paths": ["labels"]},
    )
    assert dict(updated.labels) == {"use": "other"} and not updated.rotation_period

    version = kms.create_crypto_key_version(parent=key.name, crypto_key_version=kms_v1.CryptoKeyVersion())
    assert version.name.endswith("/cryptoKeyVersions/2")
    kms.update_crypto_key_primary_version(name=key.name, crypto_key_version_id="2")
    assert kms.encrypt(name=key.name, plaintext=b"x").name == version.name
    assert kms.decrypt(name=key.name, ciphertext=sealed.ciphertext).plaintext == b"root key"  # old version still decrypts
    destroyed = kms.destroy_crypto_key_version(name=f"{key.name}/cryptoKeyVersions/1")
    assert destroyed.state == kms_v1.CryptoKeyVersion.CryptoKeyVersionState.DESTROY_SCHEDULED
    assert len(list(kms.list_crypto_key_versions(parent=key.name))) == 2

    with pytest.raises(exceptions.NotFound):
        kms.get_crypto_key(name=f"{ring.name}/cryptoKeys/missing")


def test_key_iam_policy(kms, name):
    parent = f"projects/{PROJECT}/locations/us-central1"
    ring = kms.create_key_ring(parent=parent, key_ring_id=name, key_ring=kms_v1.KeyRing())
    key = kms.create_crypto_key(parent=ring.name, crypto_key_id="k", crypto_key=kms_v1.CryptoKey(purpose=kms_v1.CryptoKey.CryptoKeyPurpose.ENCRYPT_DECRYPT))
    policy = kms.get_iam_policy(request={"resource": key.name})
    binding = policy_pb2.Binding(role="roles/cloudkms.cryptoKeyEncrypterDecrypter", members=[f"serviceAccount:bao@{PROJECT}.iam.gserviceaccount.com"])
    policy.bindings.append(binding)
    stored = kms.set_iam_policy(request={"resource": key.name, "policy": policy})
    assert stored.bindings[0].role == binding.role and stored.etag != policy.etag
    with pytest.raises(exceptions.Conflict):  # stale etag: ABORTED
        kms.set_iam_policy(request={"resource": key.name, "policy": policy})
    assert kms.get_iam_policy(request={"resource": key.name}).bindings[0].members == binding.members
