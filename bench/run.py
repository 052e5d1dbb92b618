#!/usr/bin/python3
"""The one benchmark command; see bench/README.md.  Needs root for tmpfs,
btrfs and zfs-fuse; Debian's /usr/bin/python3 (it has matplotlib)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dgbench.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
