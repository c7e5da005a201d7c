"""Routing and dispatch for the EKS calls moto 5.2.5 does not implement.

moto picks the operation of a REST request from botocore's EKS model, then calls
the response method of the same name, so the extension needs two things: URL
routes in moto's Flask app for the new paths, and response methods for the new
operations. `install()` points every EKS route (moto's and the new ones) at
`ExtendedEKSResponse`, a subclass of moto's EKS response class; it must run
before the server handles its first EKS request, when moto builds the EKS app.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from botocore import xform_name
from moto.core.responses import ActionResult
from moto.eks import urls as moto_eks_urls
from moto.eks.responses import EKSResponse
from moto.sts.models import sts_backends

from . import eks_state

# Served entirely by eks_state.EksExtension.
NEW_OPERATIONS = [
    "CreateAddon", "DescribeAddon", "ListAddons", "UpdateAddon", "DeleteAddon", "DescribeAddonVersions",
    "CreateAccessEntry", "DescribeAccessEntry", "ListAccessEntries", "UpdateAccessEntry", "DeleteAccessEntry",
    "AssociateAccessPolicy", "DisassociateAccessPolicy", "ListAssociatedAccessPolicies", "ListAccessPolicies",
    "CreatePodIdentityAssociation", "DescribePodIdentityAssociation", "ListPodIdentityAssociations",
    "UpdatePodIdentityAssociation", "DeletePodIdentityAssociation",
    "UpdateClusterVersion", "UpdateClusterConfig", "DescribeUpdate", "ListUpdates",
    "UpdateNodegroupVersion",
]

# Flask matches the percent-decoded path, so segments holding ARNs (which contain
# "/") take the rest of the path; moto then matches the raw path against the model.
NEW_PATHS = [
    "{0}/clusters/(?P<name>[^/]+)/addons$",
    "{0}/clusters/(?P<name>[^/]+)/addons/(?P<addonName>[^/]+)$",
    "{0}/clusters/(?P<name>[^/]+)/addons/(?P<addonName>[^/]+)/update$",
    "{0}/addons/supported-versions$",
    "{0}/clusters/(?P<name>[^/]+)/access-entries$",
    "{0}/clusters/(?P<name>[^/]+)/access-entries/(?P<principalArn>.+)$",
    "{0}/access-policies$",
    "{0}/clusters/(?P<name>[^/]+)/pod-identity-associations$",
    "{0}/clusters/(?P<name>[^/]+)/pod-identity-associations/(?P<associationId>[^/]+)$",
    "{0}/clusters/(?P<name>[^/]+)/updates$",
    "{0}/clusters/(?P<name>[^/]+)/updates/(?P<updateId>[^/]+)$",
    "{0}/clusters/(?P<name>[^/]+)/node-groups/(?P<nodegroupName>[^/]+)/update-version$",
]


class ExtendedEKSResponse(EKSResponse):
    """moto's EKS responses, plus NEW_OPERATIONS and fixes to some of moto's own."""

    def _params(self, operation: str) -> dict[str, Any]:
        try:
            body = json.loads(self.body) if self.body else {}
        except ValueError:
            raise eks_state.invalid("The request body is not valid JSON") from None
        query = parse_qs(self.parsed_url.query, keep_blank_values=True)
        return eks_state.parse_request(operation, self.uri_match, query, body)

    def _extension(self) -> eks_state.EksExtension:
        return eks_state.EksExtension(self.eks_backend)

    def _serve(self, operation: str) -> ActionResult:
        params = self._params(operation)
        return ActionResult(getattr(self._extension(), xform_name(operation))(params))

    def _caller_arn(self) -> str:
        sts = sts_backends[self.current_account][self.partition]
        return sts.get_caller_identity(self.get_access_key(), self.region)[1]

    # moto's own calls, extended.

    def create_cluster(self) -> ActionResult:
        params = self._params("CreateCluster")
        result = super().create_cluster()
        self._extension().after_create_cluster(result.result["cluster"], params, self._caller_arn())
        return result

    def delete_cluster(self) -> ActionResult:
        self._extension().before_delete_cluster(self._get_param("name"))
        return super().delete_cluster()

    def update_nodegroup_config(self) -> ActionResult:
        result = super().update_nodegroup_config()
        self._extension().record_nodegroup_update(
            self._get_param("name"), self._get_param("nodegroupName"), result.result["update"]
        )
        return result


def _response_method(operation: str) -> Any:
    def method(self: ExtendedEKSResponse) -> ActionResult:
        return self._serve(operation)

    method.__name__ = xform_name(operation)
    return method


# moto's update_cluster_config answers with the cluster instead of an update, so it is replaced too.
for _operation in NEW_OPERATIONS:
    setattr(ExtendedEKSResponse, xform_name(_operation), _response_method(_operation))


def install() -> None:
    """Routes every EKS URL to ExtendedEKSResponse."""
    paths = moto_eks_urls.url_paths
    for path in [*paths, *NEW_PATHS]:
        paths[path] = ExtendedEKSResponse.dispatch
