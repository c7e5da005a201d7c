"""In-memory resources, keyed by service and resource path (`compute:projects/p/global/networks/n`)."""
import re
from dataclasses import dataclass, field


@dataclass
class Entry:
    collection: str  # key of the collection the resource belongs to
    resource: dict
    meta: dict = field(default_factory=dict)  # state that is not part of the resource


class Store:
    def __init__(self):
        self.entries = {}

    def get(self, key):
        return self.entries.get(key)

    def put(self, key, collection, resource, **meta):
        entry = Entry(collection, resource, meta)
        self.entries[key] = entry
        return entry

    def delete(self, key):
        return self.entries.pop(key, None)

    def children(self, collection):
        return [(k, e) for k, e in self.entries.items() if e.collection == collection]

    def matching(self, collection_regex):
        rx = re.compile(collection_regex)
        return [(k, e) for k, e in self.entries.items() if rx.fullmatch(e.collection)]

    def under(self, prefix):
        return [(k, e) for k, e in self.entries.items() if k.startswith(prefix + "/")]
