# SPDX-License-Identifier: MIT
"""mkfs.daxguard end to end: device counts, parity levels, refusals."""
import os
import subprocess

import pytest

from conftest import MKFS, run


@pytest.mark.parametrize("ndev,parity", [
    (1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2), (4, 0), (4, 1), (4, 2),
    (8, 0), (8, 1), (8, 2)])
def test_mkfs_device_counts(volume_factory, ndev, parity):
    v = volume_factory(ndev=ndev, size="32M", parity=parity)
    out = v.mkfs().stdout
    assert out == ""   # -q
    p = run([MKFS, "--force", "--size", "32M", "--parity", str(parity)]
            + v.devs)
    assert f"devices {ndev}, parity {parity}" in p.stdout
    assert "usable" in p.stdout and "overhead" in p.stdout
    for d in v.devs:
        assert d.stat().st_size == 32 << 20
    # The new volume mounts and holds data.
    v.mount()
    (v.mnt / "f").write_bytes(b"x" * 10000)
    v.remount()
    assert (v.mnt / "f").read_bytes() == b"x" * 10000


def test_default_parity_is_one_with_two_or_more(volume_factory):
    v = volume_factory(ndev=3, size="32M")
    p = run([MKFS, "--force", "--size", "32M"] + v.devs)
    assert "parity 1" in p.stdout
    v1 = volume_factory(ndev=1, size="32M")
    assert "parity 0" in run([MKFS, "--force", "--size", "32M"]
                             + v1.devs).stdout


def test_redundancy_none(volume_factory):
    v = volume_factory(ndev=4, size="32M", redundancy="none")
    p = run([MKFS, "--force", "--size", "32M", "--redundancy", "none"]
            + v.devs)
    assert "redundancy none" in p.stdout
    assert "no checksums, no parity" in p.stdout


def test_refuses_existing_volume_without_force(volume_factory):
    v = volume_factory(ndev=2, size="32M")
    v.mkfs()
    p = run([MKFS, "--size", "32M"] + v.devs, check=False)
    assert p.returncode == 1
    assert "already holds a daxguard volume" in p.stderr
    assert "--force" in p.stderr


def test_refuses_too_small(volume_factory):
    v = volume_factory(ndev=2, size="4M")
    p = run([MKFS, "--force", "--size", "4M"] + v.devs, check=False)
    assert p.returncode == 1
    assert "too small" in p.stderr


def test_refuses_mismatched_sizes(volume_factory, tmp_path):
    v = volume_factory(ndev=2, size="32M")
    with open(v.devs[0], "wb") as f:
        f.truncate(32 << 20)
    with open(v.devs[1], "wb") as f:
        f.truncate(48 << 20)
    p = run([MKFS, "--force"] + v.devs, check=False)
    assert p.returncode == 1
    assert "sizes differ" in p.stderr


def test_refuses_same_device_twice(volume_factory):
    v = volume_factory(ndev=1, size="32M")
    p = run([MKFS, "--force", "--size", "32M", v.devs[0], v.devs[0]],
            check=False)
    assert p.returncode == 1
    assert "given twice" in p.stderr


@pytest.mark.parametrize("args,msg", [
    ([], "no devices given"),
    (["--parity", "3", "x"], "--parity takes 0, 1 or 2"),
    (["--parity", "2", "--size", "32M", "a", "b"],
     "mkfs.daxguard: parity 2 needs at least 3 devices (2 given)"),
    (["--parity", "1", "x"],
     "mkfs.daxguard: parity 1 needs at least 2 devices (1 given)"),
    (["--size", "12Q", "x"], "bad size"),
    (["--chunk", "1000", "x"], "bad chunk size"),
    (["--redundancy", "some", "x"], "--redundancy takes full or none"),
    (["--redundancy", "none", "--parity", "1", "x"], "excludes"),
    (["--lean-journal", "--size", "32M", "x"],
     "mkfs.daxguard: --lean-journal needs parity"),
    (["--lean-journal", "--parity", "0", "--size", "32M", "a", "b"],
     "--lean-journal needs parity"),
    (["--lean-journal", "--size", "32M", "a", "b"],
     "--lean-journal needs parity + 2 devices (3 with parity 1; 2 given)"),
    (["--bogus", "x"], "mkfs.daxguard: bad option '--bogus'"),
    (["--size"], "mkfs.daxguard: bad option '--size'"),
])
def test_argument_errors(args, msg, tmp_path):
    cmd = [str(MKFS)] + [str(tmp_path / a) if a in ("x", "a", "b") else a
                         for a in args]
    p = subprocess.run(cmd, capture_output=True, text=True)
    # Bad usage exits 2 in every tool but fsck (issue 32, item 8).
    assert p.returncode == 2, p
    assert p.stderr.startswith("mkfs.daxguard: "), p.stderr
    assert msg in p.stderr
    assert "usage:" in p.stderr
    # Nothing was created for a usage error.
    assert not any(tmp_path.iterdir())


def test_unwritable_device(tmp_path):
    p = subprocess.run([str(MKFS), "--size", "32M", "/proc/nonexistent/x"],
                       capture_output=True, text=True)
    assert p.returncode == 1
    assert "cannot" in p.stderr


def test_mkfs_is_fast_and_sparse(volume_factory):
    # Proportional to metadata: a 16 GiB device costs almost nothing.
    v = volume_factory(ndev=4, size="16G")
    v.mkfs()
    used = sum(os.stat(d).st_blocks * 512 for d in v.devs)
    assert used < 64 << 20, used
