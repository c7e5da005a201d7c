"""Long-running operations that finish after a configured latency.

An operation is DONE once its latency has passed; its `finish` callbacks then run (a GKE
cluster turns RUNNING, a deleted one disappears). Operations are settled lazily before each
request is served, so every read sees a consistent state.
"""
import itertools
import threading
import time

_ids = itertools.count(1)


class Operation:
    def __init__(self, key, collection, kind, target_key, method_id, seconds, render, finish=None):
        self.key = key
        self.collection = collection
        self.kind = kind  # operation type as the API names it (insert, CREATE_CLUSTER, ...)
        self.target_key = target_key
        self.method_id = method_id
        self.number = next(_ids)
        self.start = time.time()
        self.end = None
        self.seconds = seconds
        self.render_fn = render
        self.finish = [finish] if finish else []
        self.meta = {}

    @property
    def done(self):
        return self.end is not None

    def settle(self, now):
        if self.end is None and now >= self.start + self.seconds:
            self.end = self.start + self.seconds
            for fn in self.finish:
                fn()
        return self.done

    def render(self):
        return self.render_fn(self)


class Latency:
    """Seconds an operation takes: a default, overridden per method (suffix of the method id,
    e.g. `clusters.create=300`, `compute.networks.insert=2`)."""

    def __init__(self, default=0.0, overrides=None):
        self.default = default
        self.overrides = overrides or {}

    def for_method(self, method_id):
        best = None
        for suffix, seconds in self.overrides.items():
            if method_id == suffix or method_id.endswith("." + suffix):
                if best is None or len(suffix) > len(best[0]):
                    best = (suffix, seconds)
        return best[1] if best else self.default


class Operations:
    def __init__(self, latency):
        self.latency = latency
        self.ops = {}
        self.changed = threading.Condition()

    def start(self, key, collection, kind, target_key, method_id, render, finish=None):
        op = Operation(key, collection, kind, target_key, method_id, self.latency.for_method(method_id), render, finish)
        self.ops[key] = op
        op.settle(time.time())
        return op

    def settle_all(self):
        now = time.time()
        for op in list(self.ops.values()):
            op.settle(now)

    def get(self, key):
        return self.ops.get(key)

    def children(self, collection):
        return [op for op in self.ops.values() if op.collection == collection]

    def delete(self, key):
        return self.ops.pop(key, None)
