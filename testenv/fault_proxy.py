#!/usr/bin/env python3
"""The fault proxy: an HTTP(S) proxy in front of a test peer (moto, OpenBao, kube-apiserver) that
makes it behave like the real cloud in time, or injects faults at chosen calls so a test can kill
the engine at a known point, lose an answer, or make the peer unreachable for a while.

    fault_proxy.py UPSTREAM_URL [--latency-scale SCALE] [--hold OPERATION[:TEXT]]...
                 [--kill-after N --report FILE] [--throttle RATE] [--seed SEED]
                 [--reset-after OPERATION]... [--fail-for OPERATION:CODE:SECONDS]...
                 [--down-after OPERATION:SECONDS [--report FILE]]
                 [--tls-cert CHAIN --tls-key KEY] [--upstream-ca FILE] [--journal FILE]

Listens on a free 127.0.0.1 port (printed on stdout as `port N` once ready) and forwards every
request to UPSTREAM_URL unchanged, except:
  --latency-scale SCALE  answers the slow operations after their production duration divided by
                         SCALE (the emulator completes them at once; the real cloud takes minutes,
                         most of it in the waiter that follows the call: delaying the call itself
                         gives the same wall-clock effect). Used by the critical-path benchmark.
  --hold OPERATION[:TEXT]  never answers requests of OPERATION (whose body contains TEXT, if
                         given): the caller waits until it is killed. Used by the crash tests to
                         stop the engine between a create and the state write that follows it.

  --kill-after N --report FILE  after the N-th mutating call (anything but a read) has been
                         answered by the emulator, i.e. has committed, writes `N OPERATION` to
                         FILE and never answers that call: the test then kills the engine, which
                         never learnt the call's result. Used by the fault-injection suite.
  --reset-after OPERATION  forwards the first call of OPERATION, then resets the connection
                         instead of answering: the call committed, its answer is lost.
  --fail-for OPERATION:CODE:SECONDS  answers OPERATION with error CODE (e.g. a security
                         group's DependencyViolation) for SECONDS after its first call.
  --throttle RATE        answers this fraction of calls (0 to 1) with the service's throttling
                         error, in the service's own error shape, without forwarding them.
  --down-after OPERATION:SECONDS  forwards the first call of OPERATION, then resets its
                         connection and every other for SECONDS: the call committed, then the
                         peer became unreachable (its answer is lost). Writes `down OPERATION`
                         to the --report FILE when the outage starts.

  --journal FILE         appends `sent OPERATION` to FILE when a call is forwarded and
                         `answered OPERATION STATUS` once its answer is written back: a test that
                         kills the engine learns which calls were in flight.

TLS: with --tls-cert/--tls-key the proxy serves HTTPS with that certificate chain and key (the
client must trust its issuer); an https UPSTREAM_URL is reached over TLS trusting --upstream-ca.

Operations are recognised from the request, whatever the protocol:
  - query protocol (EC2, ELBv2, Auto Scaling, IAM): `Action=` in the form body;
  - JSON protocol (KMS, Secrets Manager, ...): the `X-Amz-Target` header;
  - REST (EKS): the method and path;
  - any other peer (OpenBao, kube-apiserver): `METHOD /path` without the query, e.g.
    `PUT /v1/sys/init`; a rule whose name ends in `*` matches every path it starts.

Hand-written: a per-operation rule needs the request parsed, which a TCP-level tool (toxiproxy,
tc netem) does not do.
"""

import argparse
import json
import random
import socket
import ssl
import struct
import sys

import http.client
import http.server
import re
import threading
import time
import urllib.parse

# Production durations in seconds: the call and the wait until the resource is usable.
LATENCIES = {
    "CreateNatGateway": 90,           # NAT gateway available
    "CreateLoadBalancer": 180,        # OpenBao's NLB active
    "CreateAutoScalingGroup": 120,    # OpenBao's servers booted and answering
    "CreateCluster": 540,             # EKS control plane active
    "CreateNodegroup": 180,           # managed node group active
    "CreateAddon": 60,                # EKS addon active
}

# EKS is a REST API: the operation is the method and the path.
REST_OPERATIONS = [
    ("POST", re.compile(r"^/clusters/?$"), "CreateCluster"),
    ("POST", re.compile(r"^/clusters/[^/]+/node-groups/?$"), "CreateNodegroup"),
    ("POST", re.compile(r"^/clusters/[^/]+/addons/?$"), "CreateAddon"),
]

# Operations that only read: every other call is mutating.
READ_PREFIXES = ("Describe", "List", "Get", "Head", "Check", "Lookup", "Search", "Query",
                 "Scan", "Test", "Validate", "Simulate", "Estimate", "Preview")

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-authorization", "proxy-authenticate"}


# S3 names its operations by method, path depth and the query's subresource.
S3_SUBRESOURCES = {
    "tagging": "BucketTagging",
    "versioning": "BucketVersioning",
    "encryption": "BucketEncryption",
    "publicAccessBlock": "PublicAccessBlock",
    "lifecycle": "BucketLifecycleConfiguration",
    "policy": "BucketPolicy",
}
S3_VERBS = {"GET": "Get", "PUT": "Put", "DELETE": "Delete"}
S3_PLAIN = {
    ("bucket", "PUT"): "CreateBucket",
    ("bucket", "DELETE"): "DeleteBucket",
    ("bucket", "HEAD"): "HeadBucket",
    ("bucket", "GET"): "ListObjectsV2",
    ("object", "PUT"): "PutObject",
    ("object", "GET"): "GetObject",
    ("object", "DELETE"): "DeleteObject",
    ("object", "HEAD"): "HeadObject",
}


def s3_operation(method, path):
    """The S3 operation of a path-style request, or None."""
    route, _, query = path.partition("?")
    keys = [k.split("=", 1)[0] for k in query.split("&") if k]
    level = "object" if "/" in route.strip("/") else "bucket"
    for key in keys:
        if key in S3_SUBRESOURCES and method in S3_VERBS:
            if (method, key) == ("DELETE", "lifecycle"):
                return "DeleteBucketLifecycle"
            return S3_VERBS[method] + S3_SUBRESOURCES[key]
    return S3_PLAIN.get((level, method))


def operation(method, path, headers, body):
    """The AWS operation of a request, or None."""
    target = headers.get("X-Amz-Target")
    if target:
        return target.rsplit(".", 1)[-1]
    if service(headers) == "s3":
        return s3_operation(method, path)
    route = path.split("?", 1)[0]
    for verb, pattern, name in REST_OPERATIONS:
        if method == verb and pattern.match(route):
            return name
    if body and headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
        action = urllib.parse.parse_qs(body.decode("utf-8", "replace")).get("Action")
        if action:
            return action[0]
    query = urllib.parse.urlparse(path).query
    action = urllib.parse.parse_qs(query).get("Action")
    if action:
        return action[0]
    if "AWS4-HMAC-SHA256" in headers.get("Authorization", ""):
        return None
    return f"{method} {route}"


def matches(rule, op):
    """Whether operation `op` is named by `rule` (exactly, or by a prefix ending in `*`)."""
    if op is None:
        return False
    return op.startswith(rule[:-1]) if rule.endswith("*") else op == rule


def mutating(op, method):
    """Whether a call changes something: by its AWS operation name, else by its HTTP method."""
    if op and " " not in op:
        return not op.startswith(READ_PREFIXES)
    return method not in ("GET", "HEAD", "OPTIONS", "LIST")


def service(headers):
    """The signing name of the service a request is for (`ec2`, `iam`, `eks`, ...)."""
    match = re.search(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/", headers.get("Authorization", ""))
    return match.group(1) if match else ""


def aws_error(headers, code, message, status):
    """(status, content type, body, extra headers): error `code` in the protocol of the
    request's service."""
    svc = service(headers)
    if headers.get("X-Amz-Target"):
        return status, "application/x-amz-json-1.1", json.dumps(
            {"__type": code, "message": message}), {}
    if svc == "ec2":
        doc = (f"<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message>"
               "</Error></Errors><RequestID>fault-proxy</RequestID></Response>")
        return status, "text/xml", doc, {}
    if svc == "s3":
        doc = (f"<Error><Code>{code}</Code><Message>{message}</Message>"
               "<RequestId>fault-proxy</RequestId></Error>")
        return status, "application/xml", doc, {}
    if svc in ("eks", "lambda"):
        return status, "application/json", json.dumps({"message": message}), {
            "x-amzn-ErrorType": code}
    # IAM, ELB, Auto Scaling, STS (query protocol) and Route53 (REST-XML) share this shape.
    doc = (f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code>"
           f"<Message>{message}</Message></Error><RequestId>fault-proxy</RequestId>"
           "</ErrorResponse>")
    return status, "text/xml", doc, {}


def throttling(headers):
    """The throttling error of the request's service, as that service sends it."""
    svc = service(headers)
    if svc == "ec2":
        return aws_error(headers, "RequestLimitExceeded", "Request limit exceeded.", 503)
    if svc == "s3":
        return aws_error(headers, "SlowDown", "Please reduce your request rate.", 503)
    if svc in ("eks", "lambda"):
        return aws_error(headers, "ThrottlingException", "Rate exceeded", 429)
    if headers.get("X-Amz-Target"):
        return aws_error(headers, "ThrottlingException", "Rate exceeded", 400)
    return aws_error(headers, "Throttling", "Rate exceeded", 400)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream = None
    scale = 0.0
    holds = []
    lock = threading.Lock()
    delayed = {}
    kill_after = 0
    report = None
    mutations = 0
    throttle = 0.0
    rng = random.Random(0)
    resets = set()
    # Operation -> (error code, seconds): answered with that error for that long after its
    # first call.
    fails = {}
    failing_since = {}
    upstream_tls = None
    # Operation -> seconds of outage after its first call; when the outage ends.
    down_after = {}
    down_until = 0.0
    journal = None

    def log_message(self, *args):
        pass

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def held(self, op, body):
        text = body.decode("utf-8", "replace")
        return any(matches(name, op) and (not needle or needle in text)
                   for name, needle in self.holds)

    def reset(self):
        """Closes the client's connection with a TCP reset, answering nothing."""
        self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.request.close()

    def upstream_connection(self):
        host, port = self.upstream.hostname, self.upstream.port
        if self.upstream.scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=300, context=self.upstream_tls)
        return http.client.HTTPConnection(host, port, timeout=300)

    def note(self, line):
        """Appends `line` to the --journal file."""
        if self.journal:
            with self.lock, open(self.journal, "a") as f:
                f.write(line + "\n")

    def forward(self):
        body = self.read_body()
        if self.down():
            self.reset()
            return
        op = operation(self.command, self.path, self.headers, body)
        if self.held(op, body):
            self.hang()
        if self.throttle:
            with self.lock:
                throttled = self.rng.random() < self.throttle
            if throttled:
                self.answer(*throttling(self.headers))
                return
        failing = self.failing(op)
        if failing:
            self.answer(*aws_error(self.headers, failing, f"{op}: {failing} (fault proxy)", 400))
            return
        started = time.monotonic()
        self.note(f"sent {op}")
        connection = self.upstream_connection()
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        headers["Content-Length"] = str(len(body))
        connection.request(self.command, self.path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        if self.outage_starts(op, response.status):
            self.reset()
            connection.close()
            return
        rule = next((r for r in self.resets if matches(r, op)), None)
        if rule and response.status < 300:
            with self.lock:
                reset = rule in Handler.resets
                Handler.resets.discard(rule)
            if reset:
                self.reset()
                connection.close()
                return
        if self.kill_after and mutating(op, self.command) and response.status < 300:
            with self.lock:
                Handler.mutations += 1
                point = Handler.mutations
            if point == self.kill_after:
                with open(self.report, "w") as f:
                    f.write(f"{point} {op or self.command + ' ' + self.path}\n")
                self.hang()
        scaled = LATENCIES.get(op, 0) / self.scale if self.scale else 0
        delay = scaled - (time.monotonic() - started)
        if self.scale and op in LATENCIES and 200 <= response.status < 300:
            with self.lock:
                self.delayed[op] = self.delayed.get(op, 0) + 1
            if delay > 0:
                time.sleep(delay)
        self.send_response_only(response.status, response.reason)
        head = self.command == "HEAD"
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP and (head or key.lower() != "content-length"):
                self.send_header(key, value)
        if not head:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not head:
            self.wfile.write(data)
        self.wfile.flush()
        self.note(f"answered {op} {response.status}")
        connection.close()

    def down(self):
        """Whether the peer is unreachable now."""
        return time.monotonic() < Handler.down_until

    def outage_starts(self, op, status):
        """Whether the answer to `op` starts an outage (--down-after): once per rule."""
        rule = next((r for r in self.down_after if matches(r, op)), None)
        if rule is None or status >= 300:
            return False
        with self.lock:
            seconds = Handler.down_after.pop(rule, None)
            if seconds is None:
                return False
            Handler.down_until = time.monotonic() + seconds
        if self.report:
            with open(self.report, "w") as f:
                f.write(f"down {op}\n")
        return True

    def failing(self, op):
        """The error code `op` is answered with now, if any."""
        if op not in self.fails:
            return None
        code, seconds = self.fails[op]
        with self.lock:
            since = Handler.failing_since.setdefault(op, time.monotonic())
        return code if time.monotonic() - since < seconds else None

    def hang(self):
        while True:
            time.sleep(3600)

    def answer(self, status, content_type, doc, extra):
        data = doc.encode()
        self.send_response_only(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in extra.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    # OpenBao lists with the LIST method.
    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_LIST = forward


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """A client that went away (a killed engine, a reset by a rule) is expected here."""
        if isinstance(sys.exc_info()[1], (ConnectionError, ssl.SSLError)):
            return
        super().handle_error(request, client_address)


def main():
    parser = argparse.ArgumentParser(description="HTTP proxy in front of the AWS emulator")
    parser.add_argument("upstream")
    parser.add_argument("--latency-scale", type=float, default=0.0)
    parser.add_argument("--hold", action="append", default=[])
    parser.add_argument("--kill-after", type=int, default=0)
    parser.add_argument("--report")
    parser.add_argument("--throttle", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reset-after", action="append", default=[])
    parser.add_argument("--fail-for", action="append", default=[])
    parser.add_argument("--down-after", action="append", default=[])
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--upstream-ca")
    parser.add_argument("--journal")
    args = parser.parse_args()
    for rule in args.fail_for:
        op, code, seconds = rule.split(":")
        Handler.fails[op] = (code, float(seconds))
    Handler.resets = set(args.reset_after)
    Handler.kill_after = args.kill_after
    Handler.report = args.report
    Handler.journal = args.journal
    Handler.throttle = args.throttle
    Handler.rng = random.Random(args.seed)
    Handler.upstream = urllib.parse.urlparse(args.upstream)
    Handler.scale = args.latency_scale
    Handler.holds = [tuple(h.split(":", 1)) if ":" in h else (h, "") for h in args.hold]
    for rule in args.down_after:
        op, seconds = rule.rsplit(":", 1)
        Handler.down_after[op] = float(seconds)
    if Handler.upstream.scheme == "https":
        Handler.upstream_tls = ssl.create_default_context(cafile=args.upstream_ca)
    server = Server(("127.0.0.1", 0), Handler)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
