"""HTTP front end: one loopback port serves every described service by path.

    server.py -p PORT [--operation-seconds S] [--operation-latency METHOD=S ...]

Prints `port N` once listening (N is the chosen port when PORT is 0).
"""
import argparse
import json
import os
import sys
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import discovery  # noqa: E402
import hooks  # noqa: E402
import objects  # noqa: E402
from api import App  # noqa: E402
from errors import ApiError, invalid  # noqa: E402
from operations import Latency  # noqa: E402


def build_app(latency):
    router = discovery.load_all()
    flavors, registry = hooks.build(router.services)
    app = App(router, flavors, registry, latency)
    app.objects = objects.Objects(app)
    return app


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body leave in one segment, no delayed-ACK stall
    wbufsize = 1 << 16
    app = None
    quiet = True

    def handle(self):
        try:
            super().handle()
        except ConnectionError:
            pass  # a client that went away (a killed engine): expected in the tests, no traceback

    def _serve(self):
        url = urlsplit(self.path)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        if objects.claims(url.path):
            raw = self._raw_body()
            status, headers, data = self.app.objects.handle(self.command, url.path, query, self.headers, raw)
            self._send_bytes(status, headers, data)
            return
        try:
            body = self._body()
            status, payload = self.app.handle(self.command, unquote(url.path), query, body)
        except ApiError as e:
            status, payload = e.code, e.body()
        except Exception as e:  # a bug in the fake: report it the way Google reports its own
            traceback.print_exc()
            status, payload = 500, ApiError(500, f"Internal error: {e}").body()
        self._send(status, payload)

    def _raw_body(self):
        """The request's bytes, sent with a Content-Length or in chunks (a streamed upload)."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()  # the CRLF after each chunk
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _body(self):
        raw = self._raw_body()
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise invalid(f"Invalid JSON payload received. {raw[:64]!r} is not valid JSON.")

    def _send(self, status, payload):
        if payload is None:
            self.send_response(204 if status == 200 else status)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_bytes(self, status, headers, data):
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, fmt, *args):
        if not self.quiet:
            super().log_message(fmt, *args)


def parse_latency(values):
    out = {}
    for item in values:
        method, _, seconds = item.partition("=")
        if not seconds:
            raise SystemExit(f"--operation-latency wants METHOD=SECONDS, got {item!r}")
        out[method] = float(seconds)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description="Local fake of Google Cloud REST APIs")
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=0)
    parser.add_argument("--operation-seconds", type=float, default=0.0, help="latency of every operation")
    parser.add_argument(
        "--operation-latency",
        action="append",
        default=[],
        metavar="METHOD=SECONDS",
        help="latency for methods whose id ends with METHOD, e.g. clusters.create=300",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    Handler.app = build_app(Latency(args.operation_seconds, parse_latency(args.operation_latency)))
    Handler.quiet = not args.verbose
    httpd = ThreadingHTTPServer((args.host, args.port), Handler)
    httpd.daemon_threads = True
    print(f"port {httpd.server_address[1]}", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
