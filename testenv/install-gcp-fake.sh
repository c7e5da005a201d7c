#!/usr/bin/env bash
# Installs the Python environment of the GCP fake (testenv/gcp_fake) into a virtualenv cached
# under ~/.cache/engine/gcp-fake-<version>: Google's API descriptions (google-api-python-client
# ships the discovery documents), the official Google Cloud clients the conformance suite drives
# the fake with (their proto descriptors also name enum numbers), cryptography and pytest.
# Idempotent: a second run only prints the path of the virtualenv. Changing GCP_FAKE_VERSION or
# any pin below reinstalls.
set -euo pipefail
GCP_FAKE_VERSION=1
PINS=(
    "google-api-python-client==2.202.0"
    "google-cloud-compute==1.57.0"
    "google-cloud-container==2.67.0"
    "google-cloud-dns==0.37.2"
    "google-cloud-kms==3.18.0"
    "google-cloud-secret-manager==2.32.0"
    "google-cloud-iam==2.27.0"
    "google-cloud-resource-manager==1.19.0"
    "google-cloud-storage==3.17.1"
    "cryptography==50.0.2"
    "pytest==9.2.0"
)
# Everything they pull in, as resolved when the pins above were chosen.
DEPENDENCIES=(
    "certifi==2026.10.19.post1"
    "cffi==2.1.1"
    "charset-normalizer==3.5.3"
    "google-api-core==2.44.0"
    "google-auth==2.63.0"
    "google-auth-httplib2==0.4.4"
    "google-cloud-core==2.8.0"
    "google-crc32c==1.9.0"
    "google-resumable-media==2.11.0"
    "googleapis-common-protos==1.76.0"
    "grpc-google-iam-v1==0.14.6"
    "grpcio==1.85.3"
    "grpcio-status==1.85.3"
    "httplib2==0.32.1"
    "idna==3.20"
    "iniconfig==2.3.1"
    "opentelemetry-api==1.45.2"
    "packaging==26.4"
    "pluggy==1.7.0"
    "proto-plus==1.29.0"
    "protobuf==7.36.2"
    "pyasn1==0.6.5"
    "pyasn1_modules==0.4.2"
    "pycparser==3.12"
    "Pygments==2.21.0"
    "pyparsing==3.3.3"
    "requests==2.34.2"
    "typing_extensions==4.16.0"
    "uritemplate==4.2.0"
    "urllib3==2.8.0"
)
PREFIX="${ENGINE_CACHE:-$HOME/.cache/engine}/gcp-fake-$GCP_FAKE_VERSION"
key="$(printf '%s\n' "${PINS[@]}" "${DEPENDENCIES[@]}" | sha256sum | cut -c1-16)"
if [[ ! -x "$PREFIX/bin/python" ]] || [[ "$(cat "$PREFIX/.installed" 2>/dev/null)" != "$key" ]]; then
    rm -rf "$PREFIX"
    python3 -m venv "$PREFIX"
    constraints="$(mktemp)"
    trap 'rm -f "$constraints"' EXIT
    printf '%s\n' "${DEPENDENCIES[@]}" > "$constraints"
    "$PREFIX/bin/pip" install --quiet --disable-pip-version-check -c "$constraints" "${PINS[@]}" >&2
    echo "$key" > "$PREFIX/.installed"
fi
echo "$PREFIX"
