"""The wire format itself, over raw HTTP: Google's error shape, typed ids and timestamps,
proto3 JSON type checks, routing of services that share URL prefixes."""
import re

from conftest import PROJECT, REGION

COMPUTE = f"/compute/v1/projects/{PROJECT}"
GKE = f"/v1/projects/{PROJECT}/locations/{REGION}"
RFC3339_OFFSET = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d")


def assert_error(resp, code, status, reason):
    got_code, body = resp
    assert got_code == code, body
    error = body["error"]
    assert error["code"] == code and error["status"] == status
    assert error["message"] and error["errors"][0]["message"] == error["message"]
    assert error["errors"][0]["domain"] == "global" and error["errors"][0]["reason"] == reason
    return error


def network(http, name, **fields):
    return http("POST", f"{COMPUTE}/global/networks", {"name": name, "autoCreateSubnetworks": False, **fields})


def test_unknown_field_is_invalid_argument(http, name):
    error = assert_error(network(http, name, colour="blue"), 400, "INVALID_ARGUMENT", "invalid")
    assert 'Unknown name "colour"' in error["message"]
    error = assert_error(network(http, name, routingConfig={"mode": "GLOBAL"}), 400, "INVALID_ARGUMENT", "invalid")
    assert "routingConfig" in error["message"]
    error = assert_error(
        http("POST", f"{GKE}/clusters", {"cluster": {"name": name, "nodeConfig": {"machine": "x"}}}), 400, "INVALID_ARGUMENT", "invalid"
    )
    assert error["details"][0]["@type"] == "type.googleapis.com/google.rpc.BadRequest"


def test_wrong_json_types(http, name):
    assert_error(network(http, name, autoCreateSubnetworks="no"), 400, "INVALID_ARGUMENT", "invalid")
    assert_error(network(http, name, mtu="big"), 400, "INVALID_ARGUMENT", "invalid")
    assert_error(network(http, name, mtu=1460.5), 400, "INVALID_ARGUMENT", "invalid")
    assert_error(network(http, name, routingConfig={"routingMode": "WORLDWIDE"}), 400, "INVALID_ARGUMENT", "invalid")
    assert_error(network(http, name, description=7), 400, "INVALID_ARGUMENT", "invalid")
    assert_error(network(http, name, peerings={}), 400, "INVALID_ARGUMENT", "invalid")
    # proto3 JSON: int32 may come as a string
    assert network(http, name, mtu="1500")[0] == 200
    assert http("GET", f"{COMPUTE}/global/networks/{name}")[1]["mtu"] == 1500


def test_uint64_fields(http, name):
    assert network(http, name)[0] == 200
    router = {"name": name, "network": f"global/networks/{name}"}
    assert_error(http("POST", f"{COMPUTE}/regions/{REGION}/routers", dict(router, id="twelve")), 400, "INVALID_ARGUMENT", "invalid")
    assert_error(http("POST", f"{COMPUTE}/regions/{REGION}/routers", dict(router, id="-1")), 400, "INVALID_ARGUMENT", "invalid")
    status, op = http("POST", f"{COMPUTE}/regions/{REGION}/routers", dict(router, id=12))
    assert status == 200, op
    status, got = http("GET", f"{COMPUTE}/regions/{REGION}/routers/{name}")
    assert isinstance(got["id"], str) and got["id"].isdigit() and got["id"] != "12"


def test_server_set_fields(http, name):
    status, op = network(http, name, id="1", creationTimestamp="yesterday", selfLink="https://example.com/x")
    assert status == 200, op
    assert op["kind"] == "compute#operation"
    assert isinstance(op["id"], str) and 0 < int(op["id"]) < 2**64
    assert isinstance(op["targetId"], str) and op["targetId"].isdigit()
    assert op["status"] == "DONE" and op["progress"] == 100
    assert RFC3339_OFFSET.fullmatch(op["insertTime"])
    assert op["selfLink"] == f"https://www.googleapis.com{COMPUTE}/global/operations/{op['name']}"
    _, net = http("GET", f"{COMPUTE}/global/networks/{name}")
    assert net["kind"] == "compute#network"
    assert net["id"] == op["targetId"] and net["id"] != "1"
    assert RFC3339_OFFSET.fullmatch(net["creationTimestamp"])
    assert net["selfLink"] == f"https://www.googleapis.com{COMPUTE}/global/networks/{name}"
    assert net["routingConfig"] == {"routingMode": "REGIONAL"}
    _, listing = http("GET", f"{COMPUTE}/global/networks")
    assert listing["kind"] == "compute#networkList" and listing["id"] == f"projects/{PROJECT}/global/networks"


def test_not_found_and_conflict_shapes(http, name):
    error = assert_error(http("GET", f"{COMPUTE}/global/networks/{name}"), 404, "NOT_FOUND", "notFound")
    assert error["message"] == f"The resource 'projects/{PROJECT}/global/networks/{name}' was not found"
    network(http, name)
    error = assert_error(network(http, name), 409, "ALREADY_EXISTS", "alreadyExists")
    assert error["message"] == f"The resource 'projects/{PROJECT}/global/networks/{name}' already exists"
    error = assert_error(http("GET", f"{GKE}/clusters/{name}"), 404, "NOT_FOUND", "notFound")
    assert error["message"] == f"Not found: projects/{PROJECT}/locations/{REGION}/clusters/{name}."


def test_missing_required_fields(http):
    assert_error(http("POST", f"{COMPUTE}/global/networks", {}), 400, "INVALID_ARGUMENT", "required")
    assert_error(http("POST", f"{COMPUTE}/regions/{REGION}/subnetworks", {"name": "s"}), 400, "INVALID_ARGUMENT", "required")
    assert_error(http("POST", f"{COMPUTE}/global/networks"), 400, "INVALID_ARGUMENT", "invalid")


def test_unknown_url_and_bad_json(http, endpoint):
    import urllib.error
    import urllib.request

    assert http("GET", "/nothing/here")[0] == 404
    req = urllib.request.Request(f"{endpoint}{COMPUTE}/global/networks", data=b"{not json", method="POST")
    try:
        urllib.request.urlopen(req)
        raise AssertionError("accepted bad JSON")
    except urllib.error.HTTPError as e:
        assert e.code == 400


def test_services_sharing_v1_projects(http, name):
    """container, secretmanager and cloudkms all live under /v1/projects/ on one port."""
    status, op = http("POST", f"{GKE}/clusters", {"cluster": {"name": name, "initialNodeCount": 1}})
    assert status == 200 and op["operationType"] == "CREATE_CLUSTER"
    status, got = http("GET", f"{GKE}/operations/{op['name']}")
    assert status == 200 and got["status"] == "DONE"

    status, secret = http("POST", f"/v1/projects/{PROJECT}/secrets?secretId={name}", {"replication": {"automatic": {}}})
    assert status == 200, secret
    assert secret["name"] == f"projects/{PROJECT}/secrets/{name}" and secret["createTime"]
    assert http("GET", f"/v1/projects/{PROJECT}/secrets/{name}")[1]["name"] == secret["name"]
    assert http("POST", f"/v1/projects/{PROJECT}/secrets?secretId={name}", {"replication": {"automatic": {}}})[0] == 409

    ring = f"/v1/projects/{PROJECT}/locations/global/keyRings"
    status, body = http("POST", f"{ring}?keyRingId={name}", {})
    assert status == 200 and body["name"] == f"projects/{PROJECT}/locations/global/keyRings/{name}"
    status, key = http("POST", f"{ring}/{name}/cryptoKeys?cryptoKeyId=k", {"purpose": "ENCRYPT_DECRYPT"})
    assert status == 200, key
    assert_error(http("POST", f"{ring}/{name}/cryptoKeys?cryptoKeyId=k2", {"purpose": "MAKE_COFFEE"}), 400, "INVALID_ARGUMENT", "invalid")


def test_google_longrunning_operation(http, name):
    ring = f"/v1/projects/{PROJECT}/locations/global/keyRings"
    assert http("POST", f"{ring}?keyRingId={name}", {})[0] == 200
    assert http("POST", f"{ring}/{name}/cryptoKeys?cryptoKeyId=k", {"purpose": "ENCRYPT_DECRYPT"})[0] == 200
    assert_error(http("DELETE", f"{ring}/{name}"), 400, "FAILED_PRECONDITION", "failedPrecondition")
    assert http("POST", f"{ring}?keyRingId={name}-empty", {})[0] == 200
    status, op = http("DELETE", f"{ring}/{name}-empty")
    assert status == 200 and op["done"] is True and op["name"].startswith(f"projects/{PROJECT}/locations/global/keyRings/")


def test_enum_numbers_follow_the_proto(http, name):
    """KMS purpose MAC is 9 in the proto but sixth in the description's list."""
    ring = f"/v1/projects/{PROJECT}/locations/global/keyRings"
    http("POST", f"{ring}?keyRingId={name}", {})
    status, key = http("POST", f"{ring}/{name}/cryptoKeys?cryptoKeyId=mac", {"purpose": 9, "versionTemplate": {"algorithm": "HMAC_SHA256"}})
    assert status == 200, key
    assert key["purpose"] == "MAC"
    assert_error(http("POST", f"{ring}/{name}/cryptoKeys?cryptoKeyId=bad", {"purpose": 99}), 400, "INVALID_ARGUMENT", "invalid")
