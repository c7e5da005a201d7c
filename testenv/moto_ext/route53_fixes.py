"""Correction of moto 5.2.5's Route53 where it differs from the service.

CreateHostedZone: Route53 makes a zone private when the request names a VPC; the
`HostedZoneConfig.PrivateZone` element is ignored (the API reference says so). moto makes the
zone private only when that element says true, so a zone created as Terraform's AWS provider
creates it (a VPC, no PrivateZone element) is public in moto, without its VPC.
"""

from moto.route53.responses import Route53


def install():
    """Patches moto's Route53 response class (once)."""
    original = Route53.create_hosted_zone
    if getattr(original, "_engine_fixed", False):
        return

    def create_hosted_zone(self):
        if self._get_param("VPC.VPCId"):
            read_bool = self._get_bool_param

            def private_when_a_vpc_is_named(name, if_none=None):
                if name == "HostedZoneConfig.PrivateZone":
                    return True
                return read_bool(name, if_none)

            self._get_bool_param = private_when_a_vpc_is_named
        return original(self)

    create_hosted_zone._engine_fixed = True
    Route53.create_hosted_zone = create_hosted_zone
