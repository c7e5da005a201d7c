"""moto_server with the EKS extension loaded; takes moto_server's arguments (-H HOST -p PORT ...)."""

import os
import sys

# Import the extension as the package `moto_ext` from testenv/, whatever the working directory.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from moto.server import main  # noqa: E402

from moto_ext import eks_routes  # noqa: E402

if __name__ == "__main__":
    eks_routes.install()
    sys.exit(main(sys.argv[1:]))
