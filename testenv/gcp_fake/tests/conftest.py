"""Fixtures: the fake (started by run-tests.sh, or here), clients pointed at it, raw HTTP."""
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
import uuid

import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(os.path.dirname(HERE), "server.py")
PROJECT = "test-project"
REGION = "us-central1"


def start_server(*args):
    proc = subprocess.Popen([sys.executable, SERVER, "-p", "0", *args], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().split()
    assert line[:1] == ["port"], line
    return proc, f"http://127.0.0.1:{line[1]}"


@pytest.fixture(scope="session")
def endpoint():
    if os.environ.get("GCP_FAKE_ENDPOINT"):
        yield os.environ["GCP_FAKE_ENDPOINT"]
        return
    proc, url = start_server()
    yield url
    proc.terminate()
    proc.wait()


@pytest.fixture(scope="session")
def slow_endpoint():
    """A second fake whose operations take a while, to watch them run."""
    proc, url = start_server("--operation-seconds", "0.6", "--operation-latency", "clusters.create=1.0")
    yield url
    proc.terminate()
    proc.wait()


@pytest.fixture
def client_kwargs(endpoint):
    return dict(credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=endpoint))


def kwargs_for(url):
    return dict(credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=url))


@pytest.fixture
def name():
    return f"t-{uuid.uuid4().hex[:10]}"


class Http:
    """Raw JSON over urllib: returns (status, body)."""

    def __init__(self, base):
        self.base = base

    def __call__(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())


@pytest.fixture
def http(endpoint):
    return Http(endpoint)


@pytest.fixture
def slow_http(slow_endpoint):
    return Http(slow_endpoint)
