"""Google API descriptions (discovery documents) and the HTTP routes built from them.

Every method of a description becomes a Route: its HTTP verb and a regular expression built
from its URL template. Templates use `{name}` for one path segment and `{+name}` for a
reserved expansion that may span segments (`projects/p/locations/l`).
"""
import json
import os
import re
from dataclasses import dataclass, field

# Services the fake serves, in routing priority order: when two services describe the same
# URL (container, cloudkms and secretmanager all start with /v1/projects/), the first wins,
# and a GET that finds nothing falls through to the next service that describes the URL.
SERVICES = [
    "compute.v1",
    "container.v1",
    "dns.v1",
    "iam.v1",
    "cloudkms.v1",
    "secretmanager.v1",
    "storage.v1",
    "cloudresourcemanager.v3",
    "storagetransfer.v1",
]

# Methods left out: the deprecated zonal GKE API duplicates projects.locations.*.
SKIPPED_PREFIXES = ("container.projects.zones.",)


def documents_dir():
    import googleapiclient

    return os.path.join(os.path.dirname(googleapiclient.__file__), "discovery_cache", "documents")


@dataclass
class Route:
    service: "Service"
    method_id: str  # e.g. compute.subnetworks.insert
    resource_id: str  # e.g. compute.subnetworks
    verb: str  # last part of method_id: insert, get, setLabels, ...
    http_method: str
    template: str  # full template, e.g. compute/v1/projects/{project}/global/networks
    regex: re.Pattern
    literal_len: int
    request: str | None  # schema name of the body
    response: str | None
    parameters: dict = field(default_factory=dict)

    def match(self, path):
        m = self.regex.fullmatch(path)
        return m.groupdict() if m else None


@dataclass
class Service:
    name: str  # compute
    version: str  # v1
    doc: dict
    root_url: str
    service_path: str
    routes: list = field(default_factory=list)
    resources: dict = field(default_factory=dict)  # resource_id -> {verb: Route}

    @property
    def schemas(self):
        return self.doc["schemas"]

    def schema(self, name):
        return self.doc["schemas"].get(name) if name else None

    def item_route(self, resource_id):
        return self.resources.get(resource_id, {}).get("get")


def template_regex(template):
    """Regex for a URL template; returns (compiled, number of literal characters)."""
    out, literal, pos = [], 0, 0
    for m in re.finditer(r"\{(\+?)([^}]+)\}", template):
        text = template[pos : m.start()]
        out.append(re.escape(text))
        literal += len(text)
        group = re.sub(r"\W", "_", m.group(2))
        out.append(f"(?P<{group}>.+?)" if m.group(1) else f"(?P<{group}>[^/:]+)")
        pos = m.end()
    out.append(re.escape(template[pos:]))
    literal += len(template) - pos
    return re.compile("".join(out)), literal


def _walk(resources, prefix):
    for name, res in resources.items():
        for verb, method in res.get("methods", {}).items():
            yield f"{prefix}{name}", verb, method
        yield from _walk(res.get("resources", {}), f"{prefix}{name}.")


def load_service(path):
    with open(path) as f:
        doc = json.load(f)
    svc = Service(doc["name"], doc["version"], doc, doc["rootUrl"], doc.get("servicePath", ""))
    for resource, verb, method in _walk(doc.get("resources", {}), f"{doc['name']}."):
        method_id = method.get("id", f"{resource}.{verb}")
        if method_id.startswith(SKIPPED_PREFIXES):
            continue
        template = svc.service_path + method.get("flatPath", method["path"])
        regex, literal = template_regex(template)
        route = Route(
            svc,
            method_id,
            resource,
            verb,
            method["httpMethod"],
            template,
            regex,
            literal,
            (method.get("request") or {}).get("$ref"),
            (method.get("response") or {}).get("$ref"),
            method.get("parameters", {}),
        )
        svc.routes.append(route)
        svc.resources.setdefault(resource, {})[verb] = route
    return svc


class Router:
    def __init__(self, services):
        self.services = services
        self.routes = [r for s in services for r in s.routes]

    def candidates(self, http_method, path):
        """Matching routes, most specific template first, then in service priority order."""
        order = {s.name: i for i, s in enumerate(self.services)}
        found = []
        for route in self.routes:
            if route.http_method != http_method:
                continue
            params = route.match(path)
            if params is not None:
                found.append((route, params))
        found.sort(key=lambda rp: (-rp[0].literal_len, order[rp[0].service.name]))
        return found


def load_all(names=SERVICES):
    base = documents_dir()
    return Router([load_service(os.path.join(base, f"{n}.json")) for n in names])
