# SPDX-License-Identifier: MIT
"""A value of the kernel's largest xattr size (XATTR_SIZE_MAX, 65,536
bytes) is stored on a mount, read back exact, survives a remount, and
fsck -n finds the volume clean. The volume takes the xattr_64k feature
(DG_FEAT_INCOMPAT_XATTR_64K, format.h) at that first store, not before:
a volume that never holds such a value stays readable by older code."""
import errno
import json
import os

import pytest

from conftest import BUILD, run
from dgfault import fsck

DUMPFS = BUILD / "dump" / "dumpfs.daxguard"
XATTR_SIZE_MAX = 65536


def incompat(v):
    d = json.loads(run([DUMPFS, "--json", v.devlist]).stdout)
    return d["features"]["incompat"]


def value(n):
    return bytes((i * 7 + i // 251) & 0xFF for i in range(n))


def test_64k_value_stored_read_back_remount_fsck(volume_factory):
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    assert "xattr_64k" not in incompat(v)
    mnt = v.mount()
    f = mnt / "f"
    f.write_bytes(b"data")
    # Small values leave the volume as today's code reads it.
    os.setxattr(f, "user.small", b"s")
    v.remount()
    assert "xattr_64k" not in incompat(v)

    big = value(XATTR_SIZE_MAX)
    os.setxattr(f, "user.big", big)
    assert os.getxattr(f, "user.big") == big
    assert "xattr_64k" in incompat(v)
    assert sorted(os.listxattr(f)) == ["user.big", "user.small"]
    # The kernel refuses more before it reaches the filesystem.
    with pytest.raises(OSError) as e:
        os.setxattr(f, "user.bigger", value(XATTR_SIZE_MAX + 1))
    assert e.value.errno == errno.E2BIG

    v.remount()
    assert os.getxattr(f, "user.big") == big
    assert os.getxattr(f, "user.small") == b"s"
    assert f.read_bytes() == b"data"
    v.umount()
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    assert "xattr_64k" in incompat(v)

    v.mount()
    os.removexattr(f, "user.big")
    assert os.listxattr(f) == ["user.small"]
    v.umount()
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
