# SPDX-License-Identifier: MIT
"""Devices that lie about who they are (issue 29, items 3 and 4).

A misdirected superblock write: device 3's superblock lands on device
1's primary superblock, so two devices claim to be device 3. Device 1's
backup superblock and its checksum pages still say device 1: the mount
takes it as device 1, fsck -n reports the primary (exit 4), fsck -y
rewrites it (exit 1), then fsck -n is clean and every file is intact.

A cloning mistake: device 1's image is replaced by a byte copy of device
3. The copy is recognised as a copy, named, and device 1 is missing:
the mount refuses, naming the copy and what to do; fsck -n reports it
(exit 4); fsck -y rebuilds device 1 onto the copy's path (exit 1),
naming which path was a copy; then fsck -n is clean and every file is
intact.
"""
import os
import subprocess

import pytest

from dgfault import copy_of, fsck, make_tree, manifest

PAGE = 4096


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """One populated 4-device parity-1 volume, copied by each test."""
    from conftest import Volume
    v = Volume(tmp_path_factory.mktemp("identity"), ndev=4, size="32M",
               parity=1, tag=f"identity-{os.getpid()}")
    v.mkfs()
    v.mount()
    try:
        make_tree(v.mnt, seed=29, small=30, large=1, frag=False)
        want = manifest(v.mnt)
    finally:
        v.umount()
    yield v, want
    v.cleanup()


@pytest.fixture
def vol(base, volume_factory):
    g, want = base
    v = copy_of(g, volume_factory)
    for d in v.devs:
        d.chmod(0o600)
    return v, want


def findings(p):
    """The finding lines of fsck's text report."""
    return [line for line in p.stdout.splitlines() if line.startswith("PR_")]


def test_misdirected_superblock_is_repaired(vol):
    v, want = vol
    with open(v.devs[3], "rb") as f:
        other = f.read(PAGE)
    with open(v.devs[1], "r+b") as f:
        f.write(other)

    rc, _, p = fsck(v.devs, "-n")
    assert rc == 4, p.stdout + p.stderr
    assert findings(p) == [
        "PR_0_SUPER_DIFFERS: device 1 page 0 (superblock): primary "
        "superblock copy is device 3's, not this device's (a misdirected "
        "write): not repaired (-n)"], p.stdout

    rc, _, p = fsck(v.devs, "-y")
    assert rc == 1, p.stdout + p.stderr
    assert findings(p) == [
        "PR_0_SUPER_DIFFERS: device 1 page 0 (superblock): primary "
        "superblock copy is device 3's, not this device's (a misdirected "
        "write): rewrite from the good copies"], p.stdout

    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    v.mount()
    assert manifest(v.mnt) == want


def test_misdirected_superblock_mount_repairs_it(vol):
    v, want = vol
    with open(v.devs[3], "rb") as f:
        other = f.read(PAGE)
    with open(v.devs[1], "r+b") as f:
        f.write(other)
    v.expect_log(r"its primary superblock names device 3, its backup "
                 r"device 1 .*: taken as device 1")
    v.mount()
    assert manifest(v.mnt) == want
    v.umount()
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr


def test_duplicated_device_is_named_and_rebuilt(vol):
    v, want = vol
    subprocess.run(["cp", "--sparse=always", str(v.devs[3]), str(v.devs[1])],
                   check=True)
    copy = f"'{v.devs[1]}' is a copy of device 3 ('{v.devs[3]}'), not device 1"

    # The mount refuses, naming the copy and what to do. (Should it
    # mount, the fixture unmounts it.)
    with pytest.raises(AssertionError, match="daemon exited"):
        v.mount()
    log = v.read_log()
    assert copy in log, log
    assert "cannot mount volume" in log, log
    assert "fsck.daxguard -y to rebuild it" in log, log
    assert "-o degraded" in log, log

    rc, _, p = fsck(v.devs, "-n")
    assert rc == 4, p.stdout + p.stderr
    assert findings(p) == [
        f"PR_0_DEV_MISSING: device 1 (device): device 1 of 4: {copy}: "
        f"not repaired (-n)"], p.stdout

    rc, rep, p = fsck(v.devs, "-y", json_out=True)
    assert rc == 1, p.stdout + p.stderr
    got = [(f["code"], f["device"], f["fixed"]) for f in rep["findings"]]
    assert got == [("PR_0_DEV_MISSING", 1, True),
                   ("PR_0_DEV_REBUILT", 1, True)], rep
    assert rep["findings"][0]["detail"] == f"device 1 of 4: {copy}"[:159]
    assert f"device 1 rebuilt on '{v.devs[1]}'" in \
        rep["findings"][1]["detail"], rep

    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    v.mount()
    assert manifest(v.mnt) == want


def test_misdirected_superblock_with_its_owner_missing(vol):
    """Device 3 is missing too: no peer holds slot 1 or 3, so device 1's
    own checksum pages (sealed as device 1's) say which it is. fsck -y
    rebuilds device 3 and rewrites device 1's primary."""
    v, want = vol
    with open(v.devs[3], "rb") as f:
        other = f.read(PAGE)
    with open(v.devs[1], "r+b") as f:
        f.write(other)
    v.devs[3].unlink()

    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 4, p.stdout + p.stderr
    got = sorted((f["code"], f["device"]) for f in rep["findings"])
    assert got == [("PR_0_DEV_MISSING", 3), ("PR_0_SUPER_DIFFERS", 1)], rep
    # The rebuild writes every device's superblocks, device 1's primary
    # among them.
    rc, rep, p = fsck(v.devs, "-y", json_out=True)
    assert rc == 1, p.stdout + p.stderr
    got = sorted((f["code"], f["device"]) for f in rep["findings"])
    assert got == [("PR_0_DEV_MISSING", 3), ("PR_0_DEV_REBUILT", 3)], rep
    assert all(f["fixed"] for f in rep["findings"]), rep
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    v.mount()
    assert manifest(v.mnt) == want
