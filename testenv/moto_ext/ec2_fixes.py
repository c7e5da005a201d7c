"""Corrections of moto 5.2.5's EC2 behaviour where it differs from EC2's.

DescribeSecurityGroupRules: a rule that references a security group keeps the description given
with its group pair (`UserIdGroupPairs[].Description`); moto stores it but reports only the
description of CIDR ranges, so such rules come back without one.
"""

from moto.ec2.models.security_groups import SecurityGroupRule


def _description(rule):
    ranges = rule.ip_range.get("Description")
    if ranges is not None:
        return ranges
    return (rule.source_group or {}).get("Description")


def install():
    """Patches moto's security group rule model (once)."""
    if getattr(SecurityGroupRule.description, "fget", None) is _description:
        return
    SecurityGroupRule.description = property(_description)
