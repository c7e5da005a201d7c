"""Starts the extended moto server (testenv/moto-server) once for the test session."""

import itertools
import os
import socket
import subprocess
import time
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

LAUNCHER = Path(__file__).resolve().parents[2] / "moto-server"
REGION = "eu-west-3"
_names = itertools.count(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def endpoint(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("moto")  # not the repository: the launcher must not care
    log_path = workdir / "moto.log"
    for _ in range(3):
        port = free_port()
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [str(LAUNCHER), "-H", "127.0.0.1", "-p", str(port)],
                cwd=workdir, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
        if _wait_ready(proc, port):
            break
        _stop(proc)
    else:
        pytest.fail(f"moto did not start:\n{log_path.read_text()}")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(proc)


def _wait_ready(proc: subprocess.Popen, port: int) -> bool:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def make_client(endpoint: str, service: str, account: str | None = None, validate: bool = True):
    client = boto3.client(
        service, endpoint_url=endpoint, region_name=REGION,
        aws_access_key_id="test", aws_secret_access_key="test",
        config=Config(parameter_validation=validate, retries={"max_attempts": 1}),
    )
    if account:
        def add_account(request, **_):
            request.headers["x-moto-account-id"] = account
        client.meta.events.register("before-sign", add_account)
    return client


@pytest.fixture
def eks(endpoint):
    return make_client(endpoint, "eks")


@pytest.fixture
def eks_unchecked(endpoint):
    """Sends requests botocore would refuse (missing members, bad enum values)."""
    return make_client(endpoint, "eks", validate=False)


@pytest.fixture
def ec2(endpoint):
    return make_client(endpoint, "ec2")


@pytest.fixture
def new_cluster(eks):
    """Creates a cluster with a fresh name; keyword arguments go to CreateCluster."""
    def create(**kwargs):
        name = f"c{next(_names)}-{os.getpid()}"
        kwargs.setdefault("version", "1.30")
        eks.create_cluster(
            name=name, roleArn="arn:aws:iam::123456789012:role/eks-cluster",
            resourcesVpcConfig={"subnetIds": ["subnet-1", "subnet-2"]}, **kwargs,
        )
        return name
    return create
