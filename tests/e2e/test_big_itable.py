# SPDX-License-Identifier: MIT
"""More files than the inode table's root record can list (470 chunks of
1,024 inodes: 481,279 files besides the root), created through a real
mount: the table's chunk map (DG_FEAT_INCOMPAT_BIG_ITABLE, format.h) is
made at the first create that needs it, not before; the files survive a
remount; statfs counts them; fsck -n finds the volume clean.

Slow (482,000 creates through FUSE, several minutes on 2 loaded cores):
it runs only with DG_BIG_ITABLE_E2E=1. The same crossing is checked on
every run by tests/unit/test_itable.c (itable-full: through the engine,
and with the map started early) and tests/crash/test_crash_itable.c."""
import json
import os

import pytest

from conftest import BUILD, run
from dgfault import fsck

DUMPFS = BUILD / "dump" / "dumpfs.daxguard"
ROOT_FILES = 470 * 1024 - 2      # ino 0 and the root take two slots
EXTRA = 1500                     # into the second mapped chunk

pytestmark = pytest.mark.skipif(os.environ.get("DG_BIG_ITABLE_E2E") != "1",
                                reason="slow: set DG_BIG_ITABLE_E2E=1")


def incompat(v):
    d = json.loads(run([DUMPFS, "--json", v.devlist]).stdout)
    return d["features"]["incompat"]


def create(d, lo, hi):
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(lo, hi):
            os.close(os.open(f"f{i:07d}", flags, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def test_past_root_chunks_remount_fsck(volume_factory):
    v = volume_factory(ndev=4, size="512M", parity=1)
    v.mkfs()
    mnt = v.mount()
    d = mnt / "big"
    d.mkdir()
    n = ROOT_FILES - 1           # the directory takes one inode
    create(d, 0, n)
    assert "big_itable" not in incompat(v)
    create(d, n, n + EXTRA)
    assert "big_itable" in incompat(v)
    st = os.statvfs(mnt)
    assert st.f_files - st.f_ffree == n + EXTRA + 2
    assert st.f_files > ROOT_FILES + 1
    last = os.stat(d / f"f{n + EXTRA - 1:07d}").st_ino
    assert last >= 470 * 1024

    v.remount()
    d = v.mnt / "big"
    assert os.stat(d / f"f{n + EXTRA - 1:07d}").st_ino == last
    assert sum(1 for _ in os.scandir(d)) == n + EXTRA
    v.umount()
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    assert "big_itable" in incompat(v)
    it = json.loads(run([DUMPFS, "--json", v.devlist]).stdout)["inode_table"]
    assert it == {"chunks": 472, "in_root": 470, "map_pages": 2}
