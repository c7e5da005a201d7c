"""S3 Files (the extension's `s3files`) driven by boto3's own S3 Files client: file systems on
a bucket, mount targets, access points, the file-system policy, tags, and the errors S3 Files
answers."""

import json

import pytest
from botocore.exceptions import ClientError

from conftest import make_client


@pytest.fixture
def s3files(endpoint):
    return make_client(endpoint, "s3files")


@pytest.fixture
def world(endpoint):
    """A bucket, a role, a VPC with two subnets in two zones, and a security group."""
    s3, iam, ec2 = (make_client(endpoint, s) for s in ("s3", "iam", "ec2"))
    name = f"models-{id(s3)}"
    s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": "eu-west-3"})
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "elasticfilesystem.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
    role = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.42.{i}.0/24", AvailabilityZone=f"eu-west-3{z}")["Subnet"]["SubnetId"]
        for i, z in enumerate("ab")
    ]
    group = ec2.create_security_group(GroupName=name, Description="nfs", VpcId=vpc)["GroupId"]
    return {"bucket": f"arn:aws:s3:::{name}", "role": role, "subnets": subnets, "group": group, "vpc": vpc}


def error_code(e):
    return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"]


def test_file_system_mount_targets_access_point_and_policy(s3files, world):
    fs = s3files.create_file_system(
        bucket=world["bucket"], roleArn=world["role"], acceptBucketWarning=True,
        tags=[{"key": "Name", "value": "llm-models-fs"}], clientToken="one",
    )
    fs_id = fs["fileSystemId"]
    assert fs["status"] == "available" and fs["name"] == "llm-models-fs"
    assert fs["fileSystemArn"].endswith(f":file-system/{fs_id}")
    assert s3files.create_file_system(bucket=world["bucket"], roleArn=world["role"], clientToken="one")["fileSystemId"] == fs_id
    got = s3files.get_file_system(fileSystemId=fs_id)
    assert got["bucket"] == world["bucket"] and got["roleArn"] == world["role"]
    assert fs_id in [f["fileSystemId"] for f in s3files.list_file_systems(bucket=world["bucket"])["fileSystems"]]

    targets = [
        s3files.create_mount_target(fileSystemId=fs_id, subnetId=s, securityGroups=[world["group"]])
        for s in world["subnets"]
    ]
    assert all(t["vpcId"] == world["vpc"] and t["status"] == "available" for t in targets)
    with pytest.raises(ClientError) as e:
        s3files.create_mount_target(fileSystemId=fs_id, subnetId=world["subnets"][0])
    assert error_code(e) == ("ConflictException", 409)
    listed = s3files.list_mount_targets(fileSystemId=fs_id)["mountTargets"]
    assert sorted(t["mountTargetId"] for t in listed) == sorted(t["mountTargetId"] for t in targets)
    updated = s3files.update_mount_target(mountTargetId=targets[0]["mountTargetId"], securityGroups=[])
    assert updated["securityGroups"] == []
    shown = s3files.get_mount_target(mountTargetId=targets[0]["mountTargetId"])
    assert shown["subnetId"] == world["subnets"][0] and shown["securityGroups"] == []

    ap = s3files.create_access_point(
        fileSystemId=fs_id, posixUser={"uid": 1001, "gid": 1001},
        rootDirectory={"path": "/models", "creationPermissions": {"ownerUid": 1001, "ownerGid": 1001, "permissions": "0775"}},
        tags=[{"key": "Name", "value": "shared"}],
    )
    got = s3files.get_access_point(accessPointId=ap["accessPointId"])
    assert got["posixUser"]["uid"] == 1001 and got["rootDirectory"]["path"] == "/models" and got["name"] == "shared"
    points = s3files.list_access_points(fileSystemId=fs_id)["accessPoints"]
    assert [p["accessPointId"] for p in points] == [ap["accessPointId"]]

    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": world["role"]}, "Action": ["elasticfilesystem:ClientMount"], "Resource": fs["fileSystemArn"]}]}
    s3files.put_file_system_policy(fileSystemId=fs_id, policy=json.dumps(policy))
    assert json.loads(s3files.get_file_system_policy(fileSystemId=fs_id)["policy"]) == policy

    s3files.tag_resource(resourceId=fs_id, tags=[{"key": "team", "value": "ml"}])
    s3files.untag_resource(resourceId=fs_id, tagKeys=["Name"])
    assert s3files.list_tags_for_resource(resourceId=fs_id)["tags"] == [{"key": "team", "value": "ml"}]

    # What uses a file system keeps it.
    with pytest.raises(ClientError) as e:
        s3files.delete_file_system(fileSystemId=fs_id)
    assert error_code(e) == ("ConflictException", 409)
    s3files.delete_access_point(accessPointId=ap["accessPointId"])
    for t in targets:
        s3files.delete_mount_target(mountTargetId=t["mountTargetId"])
    s3files.delete_file_system_policy(fileSystemId=fs_id)
    s3files.delete_file_system(fileSystemId=fs_id)
    with pytest.raises(ClientError) as e:
        s3files.get_file_system(fileSystemId=fs_id)
    assert error_code(e) == ("ResourceNotFoundException", 404)


def test_what_s3_files_refuses(endpoint, s3files, world):
    for bucket, role in [("models", world["role"]), ("arn:aws:s3:::no-such-bucket-here", world["role"]), (world["bucket"], "arn:aws:iam::123456789012:role/missing")]:
        with pytest.raises(ClientError) as e:
            s3files.create_file_system(bucket=bucket, roleArn=role)
        assert error_code(e) == ("ValidationException", 400)
    unchecked = make_client(endpoint, "s3files", validate=False)
    with pytest.raises(ClientError) as e:
        unchecked.create_file_system(bucket=world["bucket"])
    assert error_code(e) == ("ValidationException", 400)
    fs_id = s3files.create_file_system(bucket=world["bucket"], roleArn=world["role"])["fileSystemId"]
    with pytest.raises(ClientError) as e:
        s3files.create_mount_target(fileSystemId=fs_id, subnetId="subnet-0000000000000000")
    assert error_code(e) == ("ValidationException", 400)
    with pytest.raises(ClientError) as e:
        s3files.put_file_system_policy(fileSystemId=fs_id, policy="{not json")
    assert error_code(e) == ("ValidationException", 400)
    with pytest.raises(ClientError) as e:
        s3files.get_file_system_policy(fileSystemId=fs_id)
    assert error_code(e) == ("ResourceNotFoundException", 404)
    s3files.delete_file_system(fileSystemId=fs_id)
