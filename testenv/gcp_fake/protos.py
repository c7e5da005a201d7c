"""Enum numbers of proto-based APIs.

Google's generated clients may send enums as numbers (`$alt=json;enum-encoding=int`). A
description lists enum names only, in an order that need not follow the proto numbering, so
numbers are translated with the API's own proto descriptors, which ship in the official
client packages. Without them, a number is taken as the index into the description's list.
"""
import functools
import importlib

# service -> (module that registers the descriptors, proto package)
PACKAGES = {
    "container": ("google.cloud.container_v1", "google.container.v1"),
    "cloudkms": ("google.cloud.kms_v1", "google.cloud.kms.v1"),
    "secretmanager": ("google.cloud.secretmanager_v1", "google.cloud.secretmanager.v1"),
    "cloudresourcemanager": ("google.cloud.resourcemanager_v3", "google.cloud.resourcemanager.v3"),
    "iam": ("google.iam.v1.policy_pb2", "google.iam.v1"),
}


@functools.lru_cache(maxsize=None)
def _pool(service):
    module, package = PACKAGES.get(service, (None, None))
    if module is None:
        return None, None
    try:
        importlib.import_module(module)
        from google.protobuf import descriptor_pool

        return descriptor_pool.Default(), package
    except ImportError:
        return None, None


@functools.lru_cache(maxsize=None)
def enum_name(service, message, field, number, fallback):
    """Name of enum value `number` of `message.field`; `fallback` is the description's list."""
    pool, package = _pool(service)
    if pool is not None and message:
        for pkg in (package, "google.iam.v1", "google.type"):
            try:
                descriptor = pool.FindMessageTypeByName(f"{pkg}.{message}")
            except KeyError:
                continue
            spec = descriptor.fields_by_camelcase_name.get(field)
            if spec is not None and spec.enum_type is not None:
                value = spec.enum_type.values_by_number.get(number)
                return value.name if value else None
    return fallback[number] if 0 <= number < len(fallback) else None
