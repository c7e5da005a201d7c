"""Per-service conventions (flavors) and per-resource hooks."""
from hooks import compute, container, dns, iam, kms, secretmanager, storage, storagetransfer
from hooks.base import Flavor, Hooks

FLAVORS = {
    "compute": compute.ComputeFlavor,
    "container": container.ContainerFlavor,
    "dns": dns.DnsFlavor,
    "iam": iam.IamFlavor,
    "cloudresourcemanager": iam.ResourceManagerFlavor,
    "cloudkms": kms.KmsFlavor,
    "secretmanager": secretmanager.SecretManagerFlavor,
    "storage": storage.StorageFlavor,
    "storagetransfer": storagetransfer.StorageTransferFlavor,
}


def build(services):
    flavors = {s.name: FLAVORS.get(s.name, Flavor)(s) for s in services}
    hooks = {"*": Hooks()}
    for module in (compute, container, dns, iam, kms, secretmanager, storage, storagetransfer):
        module.register(hooks)
    return flavors, hooks
