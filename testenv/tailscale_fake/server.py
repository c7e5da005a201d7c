#!/usr/bin/env python3
"""A local stand-in for the parts of Tailscale's public API v2 the engine drives, for tests on
loopback: a tailnet's policy file (ACL), its DNS nameservers, search paths and split DNS, and
its auth keys. Its shapes are checked by Tailscale's official Go client
(`tailscale.com/client/tailscale/v2`) in `conformance/`.

    testenv/tailscale_fake/server.py -p 0 [--api-key KEY]     # prints `port N` once listening

Every request needs the API key, as HTTP basic auth (user = key, what the Go client sends) or
a bearer token; the tailnet is `-` (the key's own) or its name. Errors have the API's shape:
`{"message": ..., "data": [...]}` with the HTTP status.

- `GET|POST /api/v2/tailnet/T/acl`: the policy as JSON, or as the HuJSON text last posted
  (`Accept: application/hujson`), with an `ETag`; a POST with `If-Match` that is not the current
  ETag is 412; a policy that does not parse (HuJSON: comments and trailing commas allowed) is 400.
- `POST /api/v2/tailnet/T/acl/validate`: 200 `{}` for a valid policy, `{"message": ...}` otherwise.
- `GET|POST /api/v2/tailnet/T/dns/nameservers` (`{"dns": [...]}`),
  `GET|POST .../dns/searchpaths` (`{"searchPaths": [...]}`),
  `GET|PATCH|PUT .../dns/split-dns` (domain → nameservers; a PATCH merges, `null` removes),
  `GET|POST .../dns/preferences` (`{"magicDNS": bool}`).
- `POST|GET /api/v2/tailnet/T/keys`, `GET|DELETE .../keys/ID`: auth keys; the secret `key` is
  answered only by the create; a deleted key is gone (404).
"""
import argparse
import base64
import hashlib
import json
import re
import secrets
import sys
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

DEFAULT_POLICY = '{\n  "acls": [{"action": "accept", "src": ["*"], "dst": ["*:*"]}],\n}\n'


class ApiError(Exception):
    def __init__(self, status, message, data=None):
        super().__init__(message)
        self.status, self.message, self.data = status, message, data or []


def hujson_to_json(text):
    """Standard JSON from HuJSON: comments and trailing commas removed (strings untouched)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(c)
            i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


def parse_policy(text):
    try:
        policy = json.loads(hujson_to_json(text))
    except ValueError as e:
        raise ApiError(400, f"parsing policy: {e}")
    if not isinstance(policy, dict):
        raise ApiError(400, "the policy must be an object")
    for entry in policy.get("acls", []):
        if entry.get("action") != "accept":
            raise ApiError(400, f'acl action "{entry.get("action")}" is not "accept"')
        if not entry.get("src") or not entry.get("dst"):
            raise ApiError(400, "an acl needs src and dst")
    for tag, owners in policy.get("tagOwners", {}).items():
        if not tag.startswith("tag:"):
            raise ApiError(400, f'tagOwners: "{tag}" is not a tag (tag:name)')
    return policy


def now():
    return datetime.now(timezone.utc).replace(microsecond=0)


def stamp(t):
    return t.isoformat().replace("+00:00", "Z")


class Tailnet:
    def __init__(self):
        self.lock = threading.Lock()
        self.policy_text = DEFAULT_POLICY
        self.nameservers = []
        self.search_paths = []
        self.split_dns = {}
        self.magic_dns = True
        self.keys = {}

    def etag(self):
        return '"' + hashlib.sha256(self.policy_text.encode()).hexdigest()[:16] + '"'


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "tailscale-fake"

    def handle(self):
        try:
            super().handle()
        except ConnectionError:
            pass  # a client that went away (a killed engine): expected in the tests, no traceback

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("%s %s\n" % (self.command, self.path))

    # --- plumbing -------------------------------------------------------------------------

    def send(self, status, body=None, headers=None, raw=None, content_type="application/json"):
        data = raw.encode() if raw is not None else (b"" if body is None else json.dumps(body).encode())
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body_text(self):
        return self.body

    def body_json(self):
        text = self.body_text()
        try:
            return json.loads(text) if text else None
        except ValueError as e:
            raise ApiError(400, f"invalid JSON body: {e}")

    def authorised(self):
        header = self.headers.get("Authorization") or ""
        key = self.server.api_key
        if header.startswith("Bearer "):
            return secrets.compare_digest(header[7:], key)
        if header.startswith("Basic "):
            try:
                user = base64.b64decode(header[6:]).decode().split(":", 1)[0]
            except ValueError:
                return False
            return secrets.compare_digest(user, key)
        return False

    def tailnet(self, name):
        if name not in ("-", self.server.tailnet_name):
            raise ApiError(404, "tailnet not found")
        return self.server.tailnet

    def handle_any(self):
        # The body is read whatever the answer, so the connection stays in step.
        length = int(self.headers.get("Content-Length") or 0)
        self.body = self.rfile.read(length).decode() if length else ""
        try:
            if not self.authorised():
                raise ApiError(401, "API token invalid")
            url = urlparse(self.path)
            m = re.fullmatch(r"/api/v2/tailnet/([^/]+)/(.+)", url.path)
            if not m:
                raise ApiError(404, "not found")
            tailnet = self.tailnet(m.group(1))
            with tailnet.lock:
                self.route(tailnet, m.group(2), parse_qs(url.query))
        except ApiError as e:
            self.send(e.status, {"message": e.message, "data": e.data})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any

    # --- routes ---------------------------------------------------------------------------

    def route(self, t, rest, query):
        method = self.command
        if rest == "acl" and method == "GET":
            if "application/hujson" in (self.headers.get("Accept") or ""):
                return self.send(200, raw=t.policy_text, headers={"ETag": t.etag()}, content_type="application/hujson")
            return self.send(200, parse_policy(t.policy_text), headers={"ETag": t.etag()})
        if rest == "acl" and method == "POST":
            # `ts-default`: only while the policy is still the tailnet's default.
            match = (self.headers.get("If-Match") or "").strip('"')
            current = "ts-default" if t.policy_text == DEFAULT_POLICY else None
            if match and match not in (t.etag().strip('"'), current):
                raise ApiError(412, "precondition failed, invalid old hash")
            text = self.body_text()
            policy = parse_policy(text)
            t.policy_text = text
            if "application/hujson" in (self.headers.get("Accept") or ""):
                return self.send(200, raw=text, headers={"ETag": t.etag()}, content_type="application/hujson")
            return self.send(200, policy, headers={"ETag": t.etag()})
        if rest == "acl/validate" and method == "POST":
            try:
                parse_policy(self.body_text())
            except ApiError as e:
                return self.send(200, {"message": e.message})
            return self.send(200, {})
        if rest == "dns/nameservers":
            return self.list_setting(t, "nameservers", "dns", method)
        if rest == "dns/searchpaths":
            return self.list_setting(t, "search_paths", "searchPaths", method)
        if rest == "dns/split-dns":
            return self.split_dns(t, method)
        if rest == "dns/preferences":
            if method == "POST":
                body = self.body_json() or {}
                if not isinstance(body.get("magicDNS"), bool):
                    raise ApiError(400, "magicDNS must be a boolean")
                t.magic_dns = body["magicDNS"]
            elif method != "GET":
                raise ApiError(405, "method not allowed")
            return self.send(200, {"magicDNS": t.magic_dns})
        if rest == "keys":
            if method == "POST":
                return self.create_key(t)
            if method == "GET":
                keys = [{"id": k["id"], "description": k["description"]} for k in t.keys.values()]
                return self.send(200, {"keys": keys})
        m = re.fullmatch(r"keys/([^/]+)", rest)
        if m:
            key = t.keys.get(m.group(1))
            if key is None:
                raise ApiError(404, "key not found")
            if method == "GET":
                shown = {k: v for k, v in key.items() if k != "key"}
                # An expired key stays listed, marked invalid, as Tailscale shows it.
                shown["invalid"] = key["invalid"] or key["expires"] <= stamp(now())
                return self.send(200, shown)
            if method == "DELETE":
                del t.keys[m.group(1)]
                return self.send(200, raw="", content_type="application/json")
        raise ApiError(404 if method in ("GET", "DELETE") else 405, f"no {method} /{rest}")

    def list_setting(self, t, attr, field, method):
        if method == "POST":
            body = self.body_json() or {}
            values = body.get(field)
            if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
                raise ApiError(400, f"{field} must be a list of non-empty strings")
            if attr == "nameservers":
                for v in values:
                    if not re.fullmatch(r"[0-9a-fA-F:.]+", v):
                        raise ApiError(400, f'"{v}" is not an IP address')
            setattr(t, attr, list(values))
        elif method != "GET":
            raise ApiError(405, "method not allowed")
        out = {field: getattr(t, attr)}
        if attr == "nameservers" and method == "POST":
            out["magicDNS"] = t.magic_dns
        return self.send(200, out)

    def split_dns(self, t, method):
        if method in ("PATCH", "PUT"):
            body = self.body_json()
            if not isinstance(body, dict):
                raise ApiError(400, "the body must map domains to nameservers")
            for domain, servers in body.items():
                if servers is not None and (not isinstance(servers, list) or not all(isinstance(s, str) for s in servers)):
                    raise ApiError(400, f"{domain}: nameservers must be a list of strings")
            if method == "PUT":
                t.split_dns = {d: s for d, s in body.items() if s}
            else:
                for domain, servers in body.items():
                    if servers:
                        t.split_dns[domain] = list(servers)
                    else:
                        t.split_dns.pop(domain, None)
            if method == "PUT":
                return self.send(200, raw="", content_type="application/json")
        elif method != "GET":
            raise ApiError(405, "method not allowed")
        return self.send(200, t.split_dns)

    def create_key(self, t):
        body = self.body_json() or {}
        if body.get("keyType") not in (None, "", "auth"):
            raise ApiError(400, f'key type "{body.get("keyType")}" is not served here')
        create = ((body.get("capabilities") or {}).get("devices") or {}).get("create")
        if not isinstance(create, dict):
            raise ApiError(400, "capabilities.devices.create is required")
        for tag in create.get("tags") or []:
            if not tag.startswith("tag:"):
                raise ApiError(400, f'"{tag}" is not a tag (tag:name)')
        seconds = int(body.get("expirySeconds") or 90 * 86400)
        if not 0 < seconds <= 90 * 86400:
            raise ApiError(400, "expirySeconds must be between 1 and 7776000")
        created = now()
        key_id = "k" + secrets.token_hex(8)
        key = {
            "id": key_id,
            "keyType": "auth",
            "key": f"tskey-auth-{key_id}-{secrets.token_hex(16)}",
            "description": body.get("description") or "",
            "created": stamp(created),
            "updated": stamp(created),
            "expires": stamp(created + timedelta(seconds=seconds)),
            "invalid": False,
            "capabilities": {"devices": {"create": {
                "reusable": bool(create.get("reusable")),
                "ephemeral": bool(create.get("ephemeral")),
                "preauthorized": bool(create.get("preauthorized")),
                "tags": list(create.get("tags") or []),
            }}},
        }
        t.keys[key_id] = key
        return self.send(200, key)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-p", "--port", type=int, default=0)
    parser.add_argument("--api-key", default="tskey-api-test")
    parser.add_argument("--tailnet", default="example.com", help="the tailnet's name (`-` always works)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.api_key, server.tailnet_name, server.verbose = args.api_key, args.tailnet, args.verbose
    server.tailnet = Tailnet()
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
