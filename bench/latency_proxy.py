#!/usr/bin/env python3
"""An HTTP proxy in front of the AWS emulator that delays the answers of slow AWS operations.

    latency_proxy.py UPSTREAM_URL SCALE

Listens on a free 127.0.0.1 port (printed on stdout as `port N` once ready), forwards every request
to UPSTREAM_URL unchanged and answers after the production duration of the operation divided by
SCALE. The emulator completes these operations at once; the real cloud takes minutes, most of it in
the waiter that follows the call. Delaying the call itself gives the same wall-clock effect.

Operations are recognised from the request, whatever the protocol:
  - query protocol (EC2, ELBv2, Auto Scaling, IAM): `Action=` in the form body;
  - JSON protocol (KMS, Secrets Manager, ...): the `X-Amz-Target` header;
  - REST (EKS): the method and path.

Written for the benchmark (not a test peer): a per-operation delay needs the request parsed, which a
TCP-level latency tool (toxiproxy, tc netem) does not do.
"""

import http.client
import http.server
import re
import sys
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

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-authorization", "proxy-authenticate"}


def operation(method, path, headers, body):
    """The AWS operation of a request, or None."""
    target = headers.get("X-Amz-Target")
    if target:
        return target.rsplit(".", 1)[-1]
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
    return action[0] if action else None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream = None
    scale = 100.0
    lock = threading.Lock()
    delayed = {}

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

    def forward(self):
        body = self.read_body()
        op = operation(self.command, self.path, self.headers, body)
        started = time.monotonic()
        connection = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port,
                                                timeout=300)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        headers["Content-Length"] = str(len(body))
        connection.request(self.command, self.path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        delay = LATENCIES.get(op, 0) / self.scale - (time.monotonic() - started)
        if op in LATENCIES and 200 <= response.status < 300:
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
        connection.close()

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = forward


def main():
    upstream, scale = sys.argv[1], float(sys.argv[2])
    Handler.upstream = urllib.parse.urlparse(upstream)
    Handler.scale = scale
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
