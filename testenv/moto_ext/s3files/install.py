"""Registers S3 Files with moto's server: its module, its URL pattern."""

import re
import sys

from moto import backend_index


def install() -> None:
    from .. import s3files

    sys.modules["moto.s3files"] = s3files
    pattern = ("s3files", re.compile(r"https?://s3files\.(.+)\.amazonaws\.com"))
    # First: S3's own pattern (`s3` followed by anything) would take these hosts.
    if pattern[0] not in [name for name, _ in backend_index.backend_url_patterns]:
        backend_index.backend_url_patterns.insert(0, pattern)
