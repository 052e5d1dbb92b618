# SPDX-License-Identifier: MIT
"""fsck.daxguard on hostile images (G5): a clear message, the right exit
code, never a crash, never a write in -n mode."""
import hashlib
import os
import random
import subprocess

import pytest

from conftest import BUILD
from dgfault import fsck, make_tree, manifest


def digest(devs):
    return [hashlib.sha256(d.read_bytes()).hexdigest() if d.exists()
            else None for d in devs]


def no_crash(p):
    assert p.returncode >= 0, f"killed by signal {-p.returncode}"
    assert "Sanitizer" not in p.stderr


@pytest.fixture
def vol(volume_factory):
    v = volume_factory(ndev=4, size="32M")
    v.mkfs()
    v.mount()
    make_tree(v.mnt, seed=1, small=20, large=1, frag=False)
    v.umount()
    return v


@pytest.mark.parametrize("seed", range(4))
def test_random_bytes(volume_factory, seed):
    v = volume_factory(ndev=3, size="32M")
    rng = random.Random(seed)
    for d in v.devs:
        d.write_bytes(rng.randbytes(1 << 20))
    before = digest(v.devs)
    for mode in ("-n", "-y"):
        rc, _, p = fsck(v.devs, mode)
        no_crash(p)
        assert rc == 8, p.stderr
        assert p.stderr.startswith("fsck.daxguard: cannot check:")
        assert "superblock" in p.stderr
        assert not p.stderr.rstrip().endswith(".")
    assert digest(v.devs) == before


def test_all_truncated(vol):
    for d in vol.devs:
        os.truncate(d, 8192)
    before = digest(vol.devs)
    rc, _, p = fsck(vol.devs, "-n")
    no_crash(p)
    assert rc == 8 and p.stderr.startswith("fsck.daxguard: cannot check:")
    assert digest(vol.devs) == before


def test_empty_and_directory_paths(vol, tmp_path):
    e = tmp_path / "empty.img"
    e.write_bytes(b"")
    for bad in (e, tmp_path):
        rc, _, p = fsck([bad], "-n")
        no_crash(p)
        assert rc == 8 and p.stderr.startswith("fsck.daxguard: cannot")


def test_paths_in_any_order(vol):
    rc, _, p = fsck(list(reversed(vol.devs)), "-n")
    assert rc == 0, p.stdout + p.stderr


def test_superblocks_swapped_between_devices(vol):
    a, b = vol.devs[0], vol.devs[1]
    with open(a, "r+b") as fa, open(b, "r+b") as fb:
        pa, pb = fa.read(4096), fb.read(4096)
        fa.seek(0)
        fa.write(pb)
        fb.seek(0)
        fb.write(pa)
    before = digest(vol.devs)
    rc, _, p = fsck(vol.devs, "-n")
    no_crash(p)
    # Each copy is told for what it is: another device's (misdirected).
    assert rc == 4, p.stdout + p.stderr
    assert p.stdout.count("PR_0_SUPER_DIFFERS") == 2, p.stdout
    assert digest(vol.devs) == before


def test_device_from_another_volume(vol, volume_factory):
    w = volume_factory(ndev=4, size="32M")
    w.mkfs()
    devs = vol.devs[:3] + [w.devs[3]]
    before = digest(devs)
    for mode in ("-n", "-y"):
        rc, _, p = fsck(devs, mode)
        no_crash(p)
        assert rc == 8, p.stdout + p.stderr
        assert "belongs to volume" in p.stderr
    assert digest(devs) == before


def test_too_many_devices_given(vol, volume_factory):
    w = volume_factory(ndev=1, size="32M")
    w.mkfs("--parity", "0")
    rc, _, p = fsck(vol.devs + w.devs, "-n")
    no_crash(p)
    assert rc == 8


# seed: (fsck -n, fsck -y) exit codes. The garbage lands on one device:
# a single fault, which -y repairs (G3), or on pages never written,
# which no check reads.
GARBAGE_EXITS = {0: (0, 0), 1: (0, 0), 2: (0, 0), 3: (0, 0), 4: (0, 0),
                 5: (4, 1)}


@pytest.mark.parametrize("seed", sorted(GARBAGE_EXITS))
def test_garbage_in_metadata_regions(vol, seed):
    """Random garbage over whole metadata regions of one device: -n
    reports without writing, -y repairs, never crashes."""
    want_n, want_y = GARBAGE_EXITS[seed]
    rng = random.Random(seed)
    d = vol.devs[rng.randrange(4)]
    with open(d, "r+b") as f:
        for _ in range(8):
            f.seek(rng.randrange(1, 2000) * 4096)
            f.write(rng.randbytes(4096 * rng.randint(1, 4)))
    before = digest(vol.devs)
    rc, _, p = fsck(vol.devs, "-n")
    no_crash(p)
    assert rc == want_n, p.stdout + p.stderr
    assert digest(vol.devs) == before
    rc, _, p = fsck(vol.devs, "-y")
    no_crash(p)
    assert rc == want_y, p.stdout + p.stderr
    rc, _, p = fsck(vol.devs, "-n")
    no_crash(p)
    assert rc == 0, p.stdout


def test_fuzz_harness_runs():
    exe = BUILD / "tests" / "fuzz" / "fuzz_super"
    p = subprocess.run([str(exe), "5000"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "no crash" in p.stdout
