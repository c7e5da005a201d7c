"""The EKS extension, driven with boto3 through testenv/moto-server."""

import json

import pytest
from botocore.exceptions import ClientError

from conftest import make_client

ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/app"
ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
VIEW_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"


def error_of(call, **kwargs):
    with pytest.raises(ClientError) as info:
        call(**kwargs)
    response = info.value.response
    return response["ResponseMetadata"]["HTTPStatusCode"], response["Error"]["Code"], response["Error"]["Message"]


# ---------------------------------------------------------------- clusters


def test_access_config_is_kept_and_returned(eks, new_cluster):
    name = new_cluster(accessConfig={"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False})
    assert eks.describe_cluster(name=name)["cluster"]["accessConfig"] == {
        "authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False}
    assert eks.list_access_entries(clusterName=name)["accessEntries"] == []

    default = new_cluster()
    assert eks.describe_cluster(name=default)["cluster"]["accessConfig"] == {
        "authenticationMode": "CONFIG_MAP", "bootstrapClusterCreatorAdminPermissions": True}


def test_cluster_creator_gets_an_admin_access_entry(eks, new_cluster):
    name = new_cluster(accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"})
    creator = f"arn:aws:iam::{ACCOUNT}:user/moto"  # moto's identity for unknown access keys
    assert eks.list_access_entries(clusterName=name)["accessEntries"] == [creator]
    policies = eks.list_associated_access_policies(clusterName=name, principalArn=creator)["associatedAccessPolicies"]
    assert [(p["policyArn"], p["accessScope"]["type"]) for p in policies] == [(ADMIN_POLICY, "cluster")]


def test_update_cluster_version_then_describe_update(eks, new_cluster):
    name = new_cluster(version="1.30")
    update = eks.update_cluster_version(name=name, version="1.31")["update"]
    assert (update["status"], update["type"]) == ("Successful", "VersionUpdate")
    assert {"type": "Version", "value": "1.31"} in update["params"]
    assert eks.describe_cluster(name=name)["cluster"]["version"] == "1.31"
    described = eks.describe_update(name=name, updateId=update["id"])["update"]
    assert (described["id"], described["type"], described["status"]) == (update["id"], "VersionUpdate", "Successful")
    assert eks.list_updates(name=name)["updateIds"] == [update["id"]]

    status, code, message = error_of(eks.update_cluster_version, name=name, version="1.33")
    assert (status, code) == (400, "InvalidParameterException")
    assert "1.31 to 1.33" in message
    status, code, _ = error_of(eks.describe_update, name=name, updateId="no-such-update")
    assert (status, code) == (404, "ResourceNotFoundException")


def test_update_cluster_config(eks, new_cluster):
    name = new_cluster(accessConfig={"authenticationMode": "CONFIG_MAP"})
    endpoint = eks.update_cluster_config(
        name=name, resourcesVpcConfig={"endpointPublicAccess": False, "endpointPrivateAccess": True})["update"]
    assert endpoint["type"] == "EndpointAccessUpdate"
    vpc = eks.describe_cluster(name=name)["cluster"]["resourcesVpcConfig"]
    assert (vpc["endpointPublicAccess"], vpc["endpointPrivateAccess"], vpc["subnetIds"]) == (
        False, True, ["subnet-1", "subnet-2"])

    logging = eks.update_cluster_config(
        name=name, logging={"clusterLogging": [{"types": ["api", "audit"], "enabled": True}]})["update"]
    assert logging["type"] == "LoggingUpdate"
    assert eks.describe_cluster(name=name)["cluster"]["logging"]["clusterLogging"] == [
        {"types": ["api", "audit"], "enabled": True},
        {"types": ["authenticator", "controllerManager", "scheduler"], "enabled": False},
    ]

    access = eks.update_cluster_config(name=name, accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"})["update"]
    assert access["type"] == "AccessConfigUpdate"
    assert access["params"] == [{"type": "AuthenticationMode", "value": "API_AND_CONFIG_MAP"}]
    assert eks.describe_cluster(name=name)["cluster"]["accessConfig"]["authenticationMode"] == "API_AND_CONFIG_MAP"
    assert eks.list_updates(name=name)["updateIds"] == [endpoint["id"], logging["id"], access["id"]]
    assert eks.describe_update(name=name, updateId=logging["id"])["update"]["type"] == "LoggingUpdate"

    # Back to CONFIG_MAP, two kinds of update at once, both endpoints off: all refused.
    refused = [
        {"accessConfig": {"authenticationMode": "CONFIG_MAP"}},
        {"accessConfig": {"authenticationMode": "API"}, "logging": {"clusterLogging": []}},
        {"resourcesVpcConfig": {"endpointPrivateAccess": False}},
    ]
    for request in refused:
        assert error_of(eks.update_cluster_config, name=name, **request)[1] == "InvalidParameterException"


def test_nodegroup_updates_are_describable(eks, new_cluster):
    name = new_cluster()
    eks.create_nodegroup(clusterName=name, nodegroupName="ng", nodeRole=ROLE, subnets=["subnet-1"])
    update = eks.update_nodegroup_config(
        clusterName=name, nodegroupName="ng", scalingConfig={"minSize": 1, "maxSize": 3, "desiredSize": 2})["update"]
    assert eks.describe_update(name=name, updateId=update["id"], nodegroupName="ng")["update"]["id"] == update["id"]
    assert eks.list_updates(name=name, nodegroupName="ng")["updateIds"] == [update["id"]]
    assert eks.list_updates(name=name)["updateIds"] == []


def test_deleting_a_cluster_drops_its_extension_state(eks, new_cluster):
    name = new_cluster(accessConfig={"authenticationMode": "API"})
    eks.create_addon(clusterName=name, addonName="coredns")
    eks.create_pod_identity_association(clusterName=name, namespace="ns", serviceAccount="sa", roleArn=ROLE)
    eks.delete_cluster(name=name)
    assert error_of(eks.list_addons, clusterName=name)[:2] == (404, "ResourceNotFoundException")
    eks.create_cluster(name=name, roleArn=ROLE, resourcesVpcConfig={"subnetIds": ["subnet-1"]})
    assert eks.list_addons(clusterName=name)["addons"] == []
    assert eks.list_pod_identity_associations(clusterName=name)["associations"] == []


def test_deletion_protection_blocks_delete_cluster(eks, new_cluster):
    name = new_cluster(deletionProtection=True)
    assert eks.describe_cluster(name=name)["cluster"]["deletionProtection"] is True
    assert error_of(eks.delete_cluster, name=name)[:2] == (400, "InvalidRequestException")
    eks.update_cluster_config(name=name, deletionProtection=False)
    eks.delete_cluster(name=name)


# ---------------------------------------------------------------- addons


def test_addon_lifecycle(eks, new_cluster):
    name = new_cluster()
    created = eks.create_addon(clusterName=name, addonName="vpc-cni", addonVersion="v1.19.2-eksbuild.1",
                               serviceAccountRoleArn=ROLE, resolveConflicts="OVERWRITE",
                               tags={"team": "infra"})["addon"]
    assert (created["status"], created["addonVersion"]) == ("ACTIVE", "v1.19.2-eksbuild.1")
    assert created["clusterName"] == name
    assert created["addonArn"].startswith(f"arn:aws:eks:eu-west-3:{ACCOUNT}:addon/{name}/vpc-cni/")
    eks.create_addon(clusterName=name, addonName="coredns")
    assert eks.list_addons(clusterName=name)["addons"] == ["coredns", "vpc-cni"]
    assert eks.describe_addon(clusterName=name, addonName="vpc-cni")["addon"]["tags"] == {"team": "infra"}

    update = eks.update_addon(clusterName=name, addonName="vpc-cni", addonVersion="v1.20.0-eksbuild.1",
                              configurationValues='{"env":{}}')["update"]
    assert (update["type"], update["status"]) == ("AddonUpdate", "Successful")
    assert {"type": "AddonVersion", "value": "v1.20.0-eksbuild.1"} in update["params"]
    described = eks.describe_addon(clusterName=name, addonName="vpc-cni")["addon"]
    assert (described["addonVersion"], described["configurationValues"]) == ("v1.20.0-eksbuild.1", '{"env":{}}')
    assert eks.describe_update(name=name, updateId=update["id"], addonName="vpc-cni")["update"]["id"] == update["id"]
    assert eks.list_updates(name=name, addonName="vpc-cni")["updateIds"] == [update["id"]]
    assert error_of(eks.describe_update, name=name, updateId=update["id"])[1] == "ResourceNotFoundException"

    deleted = eks.delete_addon(clusterName=name, addonName="vpc-cni")["addon"]
    assert deleted["status"] == "DELETING"
    assert error_of(eks.describe_addon, clusterName=name, addonName="vpc-cni")[:2] == (404, "ResourceNotFoundException")
    assert eks.list_addons(clusterName=name)["addons"] == ["coredns"]


def test_addon_pod_identity_associations_belong_to_the_addon(eks, new_cluster):
    name = new_cluster()
    addon = eks.create_addon(clusterName=name, addonName="aws-ebs-csi-driver", podIdentityAssociations=[
        {"serviceAccount": "ebs-csi-controller-sa", "roleArn": ROLE}])["addon"]
    [summary] = eks.list_pod_identity_associations(clusterName=name)["associations"]
    assert (summary["namespace"], summary["serviceAccount"], summary["ownerArn"]) == (
        "kube-system", "ebs-csi-controller-sa", addon["addonArn"])
    assert addon["podIdentityAssociations"] == [summary["associationArn"]]
    eks.delete_addon(clusterName=name, addonName="aws-ebs-csi-driver")
    assert eks.list_pod_identity_associations(clusterName=name)["associations"] == []


def test_describe_addon_versions(eks):
    [info] = eks.describe_addon_versions(addonName="kube-proxy", kubernetesVersion="1.31")["addons"]
    assert info["addonName"] == "kube-proxy"
    [version] = info["addonVersions"]
    assert [c["clusterVersion"] for c in version["compatibilities"]] == ["1.31"]
    assert len(eks.describe_addon_versions()["addons"]) > 5
    assert eks.describe_addon_versions(addonName="no-such-addon")["addons"] == []


def test_listing_pages(eks, new_cluster):
    name = new_cluster()
    for addon in ("coredns", "kube-proxy", "vpc-cni"):
        eks.create_addon(clusterName=name, addonName=addon)
    first = eks.list_addons(clusterName=name, maxResults=2)
    assert first["addons"] == ["coredns", "kube-proxy"]
    assert eks.list_addons(clusterName=name, maxResults=2, nextToken=first["nextToken"])["addons"] == ["vpc-cni"]
    pages = eks.get_paginator("list_addons").paginate(clusterName=name, PaginationConfig={"PageSize": 1})
    assert [n for p in pages for n in p["addons"]] == ["coredns", "kube-proxy", "vpc-cni"]


# ---------------------------------------------------------------- access entries and policies


def test_access_entry_and_policy_association(eks, new_cluster):
    name = new_cluster(accessConfig={"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False})
    principal = f"arn:aws:iam::{ACCOUNT}:role/teams/platform/admin"  # slashes in a path segment
    entry = eks.create_access_entry(clusterName=name, principalArn=principal, kubernetesGroups=["ops"])["accessEntry"]
    assert (entry["type"], entry["kubernetesGroups"], entry["principalArn"]) == ("STANDARD", ["ops"], principal)
    assert entry["username"] == f"arn:aws:sts::{ACCOUNT}:assumed-role/admin/{{{{SessionName}}}}"

    updated = eks.update_access_entry(clusterName=name, principalArn=principal, kubernetesGroups=["ops", "dev"],
                                      username="admin")["accessEntry"]
    assert (updated["kubernetesGroups"], updated["username"]) == (["ops", "dev"], "admin")
    assert eks.describe_access_entry(clusterName=name, principalArn=principal)["accessEntry"]["username"] == "admin"

    associated = eks.associate_access_policy(clusterName=name, principalArn=principal, policyArn=VIEW_POLICY,
                                             accessScope={"type": "namespace", "namespaces": ["apps"]})
    assert associated["associatedAccessPolicy"]["accessScope"] == {"type": "namespace", "namespaces": ["apps"]}
    eks.associate_access_policy(clusterName=name, principalArn=principal, policyArn=ADMIN_POLICY,
                                accessScope={"type": "cluster"})
    listed = eks.list_associated_access_policies(clusterName=name, principalArn=principal)
    assert [p["policyArn"] for p in listed["associatedAccessPolicies"]] == [ADMIN_POLICY, VIEW_POLICY]
    assert eks.list_access_entries(clusterName=name, associatedPolicyArn=VIEW_POLICY)["accessEntries"] == [principal]

    eks.disassociate_access_policy(clusterName=name, principalArn=principal, policyArn=VIEW_POLICY)
    assert error_of(eks.disassociate_access_policy, clusterName=name, principalArn=principal,
                    policyArn=VIEW_POLICY)[:2] == (404, "ResourceNotFoundException")
    assert eks.list_access_entries(clusterName=name, associatedPolicyArn=VIEW_POLICY)["accessEntries"] == []

    eks.delete_access_entry(clusterName=name, principalArn=principal)
    assert eks.list_access_entries(clusterName=name)["accessEntries"] == []
    assert error_of(eks.describe_access_entry, clusterName=name, principalArn=principal)[:2] == (
        404, "ResourceNotFoundException")


def test_access_entry_rules(eks, new_cluster):
    config_map = new_cluster()
    assert error_of(eks.create_access_entry, clusterName=config_map, principalArn=ROLE)[:2] == (
        400, "InvalidRequestException")

    name = new_cluster(accessConfig={"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False})
    node_role = f"arn:aws:iam::{ACCOUNT}:role/nodes"
    node = eks.create_access_entry(clusterName=name, principalArn=node_role, type="EC2_LINUX")["accessEntry"]
    assert node["username"] == "system:node:{{EC2PrivateDNSName}}"
    assert error_of(eks.associate_access_policy, clusterName=name, principalArn=node_role, policyArn=VIEW_POLICY,
                    accessScope={"type": "cluster"})[1] == "InvalidRequestException"
    for principal, kind in ((ROLE, "NOT_A_TYPE"), ("not-an-arn", "STANDARD")):
        code = error_of(eks.create_access_entry, clusterName=name, principalArn=principal, type=kind)[1]
        assert code == "InvalidParameterException"
    eks.create_access_entry(clusterName=name, principalArn=ROLE)
    assert error_of(eks.associate_access_policy, clusterName=name, principalArn=ROLE, policyArn=VIEW_POLICY,
                    accessScope={"type": "namespace"})[1] == "InvalidParameterException"
    assert error_of(eks.associate_access_policy, clusterName=name, principalArn=ROLE,
                    policyArn="arn:aws:eks::aws:cluster-access-policy/NoSuchPolicy",
                    accessScope={"type": "cluster"})[1] == "ResourceNotFoundException"


def test_list_access_policies(eks):
    policies = eks.list_access_policies()["accessPolicies"]
    assert {"name": "AmazonEKSClusterAdminPolicy", "arn": ADMIN_POLICY} in policies


# ---------------------------------------------------------------- pod identity associations


def test_pod_identity_association_lifecycle(eks, new_cluster):
    name = new_cluster()
    created = eks.create_pod_identity_association(clusterName=name, namespace="apps", serviceAccount="web",
                                                  roleArn=ROLE, tags={"a": "b"})["association"]
    assoc_id = created["associationId"]
    assert assoc_id.startswith("a-") and created["associationArn"].endswith(f"/{name}/{assoc_id}")
    eks.create_pod_identity_association(clusterName=name, namespace="jobs", serviceAccount="batch", roleArn=ROLE)

    described = eks.describe_pod_identity_association(clusterName=name, associationId=assoc_id)["association"]
    assert described["tags"] == {"a": "b"}
    listed = eks.list_pod_identity_associations(clusterName=name, namespace="apps")["associations"]
    assert [a["associationId"] for a in listed] == [assoc_id]
    assert len(eks.list_pod_identity_associations(clusterName=name)["associations"]) == 2

    other_role = f"arn:aws:iam::{ACCOUNT}:role/other"
    updated = eks.update_pod_identity_association(clusterName=name, associationId=assoc_id, roleArn=other_role,
                                                  disableSessionTags=True)["association"]
    assert (updated["roleArn"], updated["disableSessionTags"]) == (other_role, True)

    deleted = eks.delete_pod_identity_association(clusterName=name, associationId=assoc_id)["association"]
    assert deleted["associationId"] == assoc_id
    assert error_of(eks.describe_pod_identity_association, clusterName=name, associationId=assoc_id)[:2] == (
        404, "ResourceNotFoundException")


# ---------------------------------------------------------------- errors


def test_missing_cluster_is_not_found(eks):
    calls = [
        (eks.create_addon, {"clusterName": "missing", "addonName": "vpc-cni"}),
        (eks.list_addons, {"clusterName": "missing"}),
        (eks.create_access_entry, {"clusterName": "missing", "principalArn": ROLE}),
        (eks.create_pod_identity_association,
         {"clusterName": "missing", "namespace": "n", "serviceAccount": "s", "roleArn": ROLE}),
        (eks.update_cluster_version, {"name": "missing", "version": "1.31"}),
        (eks.describe_update, {"name": "missing", "updateId": "x"}),
    ]
    for call, kwargs in calls:
        assert error_of(call, **kwargs) == (404, "ResourceNotFoundException", "No cluster found for name: missing.")


def test_error_wire_format(endpoint):
    seen = {}
    client = make_client(endpoint, "eks")
    client.meta.events.register("after-call", lambda http_response, **_: seen.update(response=http_response))
    with pytest.raises(ClientError):
        client.describe_addon(clusterName="missing", addonName="vpc-cni")
    response = seen["response"]
    assert response.status_code == 404
    assert response.headers["x-amzn-ErrorType"] == "ResourceNotFoundException"
    assert json.loads(response.content)["message"] == "No cluster found for name: missing."


def test_duplicates_are_in_use(eks, new_cluster):
    name = new_cluster(accessConfig={"authenticationMode": "API"})
    eks.create_addon(clusterName=name, addonName="coredns")
    assert error_of(eks.create_addon, clusterName=name, addonName="coredns")[:2] == (409, "ResourceInUseException")
    eks.create_access_entry(clusterName=name, principalArn=ROLE)
    assert error_of(eks.create_access_entry, clusterName=name, principalArn=ROLE)[:2] == (409, "ResourceInUseException")
    eks.create_pod_identity_association(clusterName=name, namespace="n", serviceAccount="s", roleArn=ROLE)
    assert error_of(eks.create_pod_identity_association, clusterName=name, namespace="n", serviceAccount="s",
                    roleArn=ROLE)[:2] == (409, "ResourceInUseException")


def test_requests_are_checked_against_the_botocore_model(eks_unchecked, new_cluster):
    eks = eks_unchecked
    name = new_cluster(accessConfig={"authenticationMode": "API"})
    status, code, message = error_of(eks.create_access_entry, clusterName=name)
    assert (status, code) == (400, "InvalidParameterException") and "'principalArn'" in message
    _, code, message = error_of(eks.create_pod_identity_association, clusterName=name, namespace="n",
                                serviceAccount="s")
    assert code == "InvalidParameterException" and "'roleArn'" in message
    _, code, message = error_of(eks.create_addon, clusterName=name, addonName="coredns", resolveConflicts="SOMETIMES")
    assert code == "InvalidParameterException" and "OVERWRITE, NONE, PRESERVE" in message
    _, code, message = error_of(eks.associate_access_policy, clusterName=name, principalArn=ROLE, policyArn=VIEW_POLICY,
                                accessScope={"type": "everything"})
    assert code == "InvalidParameterException" and "accessScope.type" in message
    _, code, _ = error_of(eks.list_addons, clusterName=name, maxResults=500)
    assert code == "InvalidParameterException"
    _, code, message = error_of(eks.create_cluster, name="bad", roleArn=ROLE, resourcesVpcConfig={},
                                accessConfig={"authenticationMode": "OPEN"})
    assert code == "InvalidParameterException" and "accessConfig.authenticationMode" in message
    _, code, _ = error_of(eks.create_cluster, name="-bad-name", roleArn=ROLE, resourcesVpcConfig={})
    assert code == "InvalidParameterException"


def test_calls_outside_the_extension_still_fail(eks, new_cluster):
    name = new_cluster()
    status, _, _ = error_of(eks.list_insights, clusterName=name)
    assert status == 404


# ---------------------------------------------------------------- moto's own calls through the launcher


def test_moto_eks_and_ec2_still_work(eks, ec2, new_cluster):
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
    assert ec2.describe_vpcs(VpcIds=[vpc])["Vpcs"][0]["CidrBlock"] == "10.0.0.0/16"

    name = new_cluster(tags={"env": "test"})
    assert name in eks.list_clusters()["clusters"]
    cluster = eks.describe_cluster(name=name)["cluster"]
    assert (cluster["status"], cluster["version"], cluster["tags"]) == ("ACTIVE", "1.30", {"env": "test"})
    eks.tag_resource(resourceArn=cluster["arn"], tags={"owner": "me"})
    assert eks.list_tags_for_resource(resourceArn=cluster["arn"])["tags"] == {"env": "test", "owner": "me"}

    nodegroup = eks.create_nodegroup(clusterName=name, nodegroupName="workers", nodeRole=ROLE, subnets=[subnet],
                                     scalingConfig={"minSize": 1, "maxSize": 2, "desiredSize": 1})["nodegroup"]
    assert nodegroup["status"] == "ACTIVE"
    assert eks.list_nodegroups(clusterName=name)["nodegroups"] == ["workers"]
    assert eks.describe_nodegroup(clusterName=name, nodegroupName="workers")["nodegroup"]["subnets"] == [subnet]
    assert error_of(eks.delete_cluster, name=name)[:2] == (409, "ResourceInUseException")
    eks.delete_nodegroup(clusterName=name, nodegroupName="workers")
    eks.delete_cluster(name=name)
    assert name not in eks.list_clusters()["clusters"]


def test_accounts_are_isolated(endpoint):
    first = make_client(endpoint, "eks", account="111111111111")
    second = make_client(endpoint, "eks", account="222222222222")
    first.create_cluster(name="shared-name", roleArn=ROLE, resourcesVpcConfig={"subnetIds": ["subnet-1"]})
    first.create_addon(clusterName="shared-name", addonName="coredns")
    second.create_cluster(name="shared-name", roleArn=ROLE, resourcesVpcConfig={"subnetIds": ["subnet-1"]})
    assert second.list_addons(clusterName="shared-name")["addons"] == []
    addon = first.describe_addon(clusterName="shared-name", addonName="coredns")["addon"]
    assert ":111111111111:addon/shared-name/coredns/" in addon["addonArn"]


def test_cluster_ca_is_a_base64_pem_certificate(eks, new_cluster):
    import base64

    from cryptography import x509

    name = new_cluster()
    data = eks.describe_cluster(name=name)["cluster"]["certificateAuthority"]["data"]
    pem = base64.b64decode(data)
    assert pem.startswith(b"-----BEGIN CERTIFICATE-----")
    cert = x509.load_pem_x509_certificate(pem)
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_update_nodegroup_version_follows_the_control_plane(eks, new_cluster):
    name = new_cluster(version="1.30")
    eks.create_nodegroup(
        clusterName=name, nodegroupName="ng", version="1.30",
        nodeRole="arn:aws:iam::123456789012:role/node", subnets=["subnet-1"],
    )
    with pytest.raises(eks.exceptions.InvalidParameterException):
        eks.update_nodegroup_version(clusterName=name, nodegroupName="ng", version="1.31")
    eks.update_cluster_version(name=name, version="1.31")
    update = eks.update_nodegroup_version(clusterName=name, nodegroupName="ng")["update"]
    assert update["type"] == "VersionUpdate"
    assert {"type": "Version", "value": "1.31"} in update["params"]
    assert eks.describe_nodegroup(clusterName=name, nodegroupName="ng")["nodegroup"]["version"] == "1.31"
    described = eks.describe_update(name=name, nodegroupName="ng", updateId=update["id"])["update"]
    assert described["status"] == "Successful"
    with pytest.raises(eks.exceptions.ResourceNotFoundException):
        eks.update_nodegroup_version(clusterName=name, nodegroupName="missing")


def test_update_nodegroup_version_moves_to_another_launch_template_version(eks, ec2, new_cluster):
    name = new_cluster(version="1.30")
    template = ec2.create_launch_template(
        LaunchTemplateName=f"{name}-lt", LaunchTemplateData={"UserData": "W3NldHRpbmdzXQ=="}
    )["LaunchTemplate"]
    eks.create_nodegroup(
        clusterName=name, nodegroupName="ng", version="1.30", subnets=["subnet-1"],
        nodeRole="arn:aws:iam::123456789012:role/node",
        launchTemplate={"id": template["LaunchTemplateId"], "version": "1"},
    )
    described = eks.describe_nodegroup(clusterName=name, nodegroupName="ng")["nodegroup"]["launchTemplate"]
    assert (described["id"], described["name"], described["version"]) == (
        template["LaunchTemplateId"], f"{name}-lt", "1"
    )
    update = eks.update_nodegroup_version(
        clusterName=name, nodegroupName="ng", version="1.30",
        launchTemplate={"id": template["LaunchTemplateId"], "version": "2"},
    )["update"]
    assert {"type": "LaunchTemplateVersion", "value": "2"} in update["params"]
    assert {"type": "LaunchTemplateName", "value": f"{name}-lt"} in update["params"]
    described = eks.describe_nodegroup(clusterName=name, nodegroupName="ng")["nodegroup"]
    assert (described["launchTemplate"]["version"], described["version"]) == ("2", "1.30")
    # Another template, or a template for a node group made without one, is refused.
    with pytest.raises(eks.exceptions.InvalidParameterException):
        eks.update_nodegroup_version(clusterName=name, nodegroupName="ng", launchTemplate={"id": "lt-other"})
    eks.create_nodegroup(
        clusterName=name, nodegroupName="plain", version="1.30", subnets=["subnet-1"],
        nodeRole="arn:aws:iam::123456789012:role/node",
    )
    with pytest.raises(eks.exceptions.InvalidParameterException):
        eks.update_nodegroup_version(
            clusterName=name, nodegroupName="plain", launchTemplate={"id": template["LaunchTemplateId"]}
        )
