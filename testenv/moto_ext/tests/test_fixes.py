"""The EC2 and S3 wire-format fixes, checked on the raw responses of testenv/moto-server."""

import itertools
import urllib.request

from conftest import make_client

_names = itertools.count(1)


def test_bucket_versioning_has_the_s3_root_element(endpoint):
    s3 = make_client(endpoint, "s3")
    bucket = f"versioning-root-{next(_names)}"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-3"})
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    request = urllib.request.Request(
        f"{endpoint}/{bucket}?versioning",
        headers={"Authorization": "AWS4-HMAC-SHA256 Credential=test/20260101/eu-west-3/s3/aws4_request, "
                                  "SignedHeaders=host, Signature=0"},
    )
    body = urllib.request.urlopen(request).read().decode()
    assert "<VersioningConfiguration" in body and "<Status>Enabled</Status>" in body, body
    assert "GetBucketVersioningResponse" not in body, body
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"


def test_group_pair_rules_keep_their_description(endpoint):
    ec2 = make_client(endpoint, "ec2")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    group = ec2.create_security_group(GroupName=f"pairs-{next(_names)}", Description="d", VpcId=vpc)["GroupId"]
    ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=[{
        "IpProtocol": "tcp", "FromPort": 8201, "ToPort": 8201,
        "UserIdGroupPairs": [{"GroupId": group, "Description": "between nodes"}],
    }])
    rules = ec2.describe_security_group_rules(Filters=[{"Name": "group-id", "Values": [group]}])
    ingress = [r for r in rules["SecurityGroupRules"] if not r["IsEgress"]]
    assert [r.get("Description") for r in ingress] == ["between nodes"], ingress


def test_of_racing_conditional_creates_exactly_one_wins(endpoint):
    import threading

    import botocore.exceptions

    s3 = make_client(endpoint, "s3")
    bucket = f"conditional-{next(_names)}"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-3"})
    for round_ in range(30):
        key, won, start = f"lock-{round_}", [], threading.Barrier(8)

        def contend(n):
            client = make_client(endpoint, "s3")
            start.wait()
            try:
                client.put_object(Bucket=bucket, Key=key, Body=str(n).encode(), IfNoneMatch="*")
                won.append(n)
            except botocore.exceptions.ClientError as e:
                assert e.response["Error"]["Code"] == "PreconditionFailed", e.response

        threads = [threading.Thread(target=contend, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(won) == 1, (round_, won)
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == str(won[0]).encode()


def test_a_zone_created_with_a_vpc_is_private_without_the_private_zone_element(endpoint):
    ec2 = make_client(endpoint, "ec2")
    r53 = make_client(endpoint, "route53")
    vpc = ec2.create_vpc(CidrBlock="10.8.0.0/16")["Vpc"]["VpcId"]
    zone = r53.create_hosted_zone(
        Name=f"private-{next(_names)}.example.com", CallerReference=f"ref-{next(_names)}",
        VPC={"VPCRegion": "eu-west-3", "VPCId": vpc},
    )["HostedZone"]
    got = r53.get_hosted_zone(Id=zone["Id"])
    assert got["HostedZone"]["Config"]["PrivateZone"] is True, got
    assert [v["VPCId"] for v in got["VPCs"]] == [vpc], got
    public = r53.create_hosted_zone(Name=f"public-{next(_names)}.example.com", CallerReference=f"ref-{next(_names)}")
    assert r53.get_hosted_zone(Id=public["HostedZone"]["Id"])["HostedZone"]["Config"]["PrivateZone"] is False
