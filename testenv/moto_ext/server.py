"""moto_server with the EKS extension, S3 Files, and the EC2, S3 and Route53 fixes loaded; takes moto_server's arguments (-H HOST -p PORT ...)."""

import os
import sys

# Import the extension as the package `moto_ext` from testenv/, whatever the working directory.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from moto.server import main  # noqa: E402

from moto_ext import ec2_fixes, eks_routes, route53_fixes, s3_fixes  # noqa: E402
from moto_ext.s3files.install import install as install_s3files  # noqa: E402

if __name__ == "__main__":
    eks_routes.install()
    s3_fixes.install()
    route53_fixes.install()
    ec2_fixes.install()
    install_s3files()
    sys.exit(main(sys.argv[1:]))
