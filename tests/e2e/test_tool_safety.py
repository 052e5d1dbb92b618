# SPDX-License-Identifier: MIT
"""Tools that write whole devices (mkfs, fsck -y's rebuild) never write
over what is not theirs: every target is probed (libblkid) first, and a
foreign signature, another volume or unclaimed data is refused, named,
and left byte for byte as it was."""
import hashlib
import os
import random
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from conftest import MKFS, run
from dgfault import fsck, make_tree, manifest


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@pytest.fixture
def scratch():
    """Paths on /dev/shm for foreign images, removed at teardown."""
    made = []

    def make(name):
        p = Path(f"/dev/shm/dg-e2e-safety-{uuid.uuid4().hex[:8]}-{name}")
        made.append(p)
        return p

    yield make
    for p in made:
        try:
            p.unlink()
        except FileNotFoundError:
            pass


def ext4_image(path, label, size=32 << 20):
    with open(path, "wb") as f:
        f.truncate(size)
    run(["mkfs.ext4", "-q", "-F", "-L", label, path])
    return path


def random_image(path, size, seed=1):
    rng = random.Random(seed)
    with open(path, "wb") as f:
        for _ in range(size >> 20):
            f.write(rng.randbytes(1 << 20))
    return path


def mkfs_raw(*args):
    return run([MKFS] + list(args), check=False)


# ---- mkfs ----------------------------------------------------------------

def test_mkfs_refuses_ext4_images(volume_factory, scratch):
    a = ext4_image(scratch("a.img"), "data")
    b = ext4_image(scratch("b.img"), "backup")
    new = scratch("new.img")
    before = [sha(a), sha(b)]
    p = mkfs_raw("--size", "32M", a, b, new)
    assert p.returncode == 1, p.stdout
    assert p.stderr == (
        f"mkfs.daxguard: '{a}' contains an ext4 file system labelled "
        f"'data'; use --force to overwrite it\n"
        f"mkfs.daxguard: '{b}' contains an ext4 file system labelled "
        f"'backup'; use --force to overwrite it\n")
    assert [sha(a), sha(b)] == before
    assert not new.exists(), "nothing is created when mkfs refuses"
    # --force is the one way over a foreign signature.
    p = mkfs_raw("-q", "--force", "--size", "32M", a, b, new)
    assert p.returncode == 0, p.stderr
    rc, _, p = fsck([a, b, new], "-n")
    assert rc == 0, p.stdout + p.stderr


@pytest.mark.skipif(not shutil.which("mkswap"), reason="no mkswap")
def test_mkfs_refuses_swap_and_partition_table(scratch):
    s = scratch("swap.img")
    with open(s, "wb") as f:
        f.truncate(32 << 20)
    run(["mkswap", "-L", "sw", s])
    t = scratch("pt.img")
    with open(t, "wb") as f:
        f.truncate(32 << 20)
    # A DOS partition table: one Linux partition from sector 2048.
    mbr = bytearray(512)
    mbr[446:462] = bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + \
        (2048).to_bytes(4, "little") + (4096).to_bytes(4, "little")
    mbr[510:512] = b"\x55\xaa"
    with open(t, "r+b") as f:
        f.write(mbr)
    before = [sha(s), sha(t)]
    p = mkfs_raw(s, t)
    assert p.returncode == 1
    assert p.stderr == (
        f"mkfs.daxguard: '{s}' contains swap space labelled 'sw'; use "
        f"--force to overwrite it\n"
        f"mkfs.daxguard: '{t}' contains a dos partition table; use "
        f"--force to overwrite it\n")
    assert [sha(s), sha(t)] == before


def test_mkfs_refuses_existing_volume_naming_it(volume_factory):
    v = volume_factory(ndev=2, size="32M")
    v.mkfs()
    rc, rep, _ = fsck(v.devs, "-n", json_out=True)
    before = [sha(d) for d in v.devs]
    p = mkfs_raw("--size", "32M", *v.devs)
    assert p.returncode == 1
    assert p.stderr == "".join(
        f"mkfs.daxguard: '{d}' already holds a daxguard volume (it is "
        f"device {i} of daxguard volume {rep['volume']}); use --force to "
        f"overwrite it\n" for i, d in enumerate(v.devs))
    assert [sha(d) for d in v.devs] == before


def test_mkfs_device_given_twice_creates_nothing(scratch):
    a, b = scratch("a.img"), scratch("b.img")
    p = mkfs_raw("--size", "32M", a, b, a)
    assert p.returncode == 1
    assert p.stderr == f"mkfs.daxguard: '{a}' is given twice\n"
    assert not a.exists() and not b.exists()


def test_mkfs_same_file_under_two_names(scratch):
    a = scratch("a.img")
    with open(a, "wb") as f:
        f.truncate(32 << 20)
    link = scratch("link.img")
    link.symlink_to(a)
    before = sha(a)
    p = mkfs_raw(a, link)
    assert p.returncode == 1
    assert p.stderr == (f"mkfs.daxguard: '{a}' and '{link}' are the same "
                        f"device, given twice\n")
    assert sha(a) == before


def test_mkfs_failure_removes_only_what_it_created(scratch):
    old = scratch("old.img")
    old.write_bytes(b"\0" * 4096)
    new1, new2 = scratch("n1.img"), scratch("n2.img")
    p = mkfs_raw("--size", "4M", new1, new2)
    assert p.returncode == 1 and "too small" in p.stderr
    assert not new1.exists() and not new2.exists()
    # A file that was there before stays (mkfs extended it, as asked).
    p = mkfs_raw("--size", "4M", old, new1)
    assert p.returncode == 1 and "too small" in p.stderr
    assert old.exists() and not new1.exists()


# ---- fsck -y's rebuild -----------------------------------------------------

@pytest.fixture
def lost3(volume_factory):
    """A 4-device parity-1 volume with files; device 3's image gone."""
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    v.mount()
    make_tree(v.mnt, seed=3, small=20, large=1, frag=False)
    v.want = manifest(v.mnt)
    v.umount()
    rc, rep, _ = fsck(v.devs, "-n", json_out=True)
    assert rc == 0
    v.uuid = rep["volume"]
    v.devs[3].unlink()
    return v


def other_volume_damaged(path, volume_factory):
    w = volume_factory(ndev=2, size="32M")
    w.mkfs()
    shutil.copyfile(w.devs[1], path)
    os.chmod(path, 0o600)           # a copy of volume data stays private
    with open(path, "r+b") as f:       # both superblock copies fail
        f.seek(100)
        f.write(b"\xff" * 8)
        f.seek((32 << 20) - 4096 + 100)
        f.write(b"\xff" * 8)
    return path


TARGETS = {
    "ext4": lambda p, vf: ext4_image(p, "data"),
    "random": lambda p, vf: random_image(p, 32 << 20),
    "random-other-size": lambda p, vf: random_image(p, 8 << 20, seed=2),
    "other-volume": other_volume_damaged,
}


def what_is(kind, path, vol_uuid_other=None):
    return {
        "ext4": "contains an ext4 file system labelled 'data'",
        "random": "holds data but no daxguard superblock",
        "random-other-size": "holds data but no daxguard superblock",
    }.get(kind)


@pytest.mark.parametrize("kind", sorted(TARGETS))
def test_fsck_refuses_to_rebuild_onto_foreign(lost3, volume_factory, scratch,
                                              kind):
    v = lost3
    x = TARGETS[kind](scratch(kind + ".img"), volume_factory)
    devs = v.devs[:3] + [x]
    before = [sha(d) for d in devs]
    rc, _, p = fsck(devs, "-y")
    assert rc == 8, p.stdout + p.stderr
    what = what_is(kind, x)
    if what is None:    # another volume's device: its UUID is named
        assert p.stderr.startswith(
            f"fsck.daxguard: '{x}' has a damaged superblock of device 1 "
            f"of daxguard volume ")
        what = p.stderr.split(f"'{x}' ", 1)[1].split(", not a device")[0]
    assert p.stderr == (
        f"fsck.daxguard: '{x}' {what}, not a device of volume {v.uuid}; "
        f"refusing to rebuild device 3 onto it; use --replace 3={x} to "
        f"overwrite it\n")
    assert [sha(d) for d in devs] == before
    # -n names the missing device, and what is in its place, and writes
    # nothing either.
    rc, rep, p = fsck(devs, "-n", json_out=True)
    assert rc == 4, p.stdout + p.stderr
    [f] = [f for f in rep["findings"] if f["code"] == "PR_0_DEV_MISSING"]
    if kind == "other-volume":
        assert f["detail"].startswith(
            f"device 3 of 4: '{x}' is device 1 of another daxguard volume")
    else:
        assert f["detail"] == f"device 3 of 4: '{x}' {what}"[:159], f
    assert [sha(d) for d in devs] == before
    # Named explicitly for its slot, it is overwritten.
    rc, rep, p = fsck(v.devs[:3], "-y", "--replace", f"3={x}",
                      json_out=True)
    assert rc == 1, p.stdout + p.stderr
    assert [f["code"] for f in rep["findings"]] == [
        "PR_0_DEV_MISSING", "PR_0_DEV_REBUILT"]
    rc, _, p = fsck(devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    v.devs[3] = x
    v.mount()
    assert manifest(v.mnt) == v.want
    v.umount()


@pytest.mark.parametrize("how", ["blank", "empty", "absent"])
def test_fsck_rebuilds_onto_blank_empty_or_absent(lost3, how):
    v = lost3
    if how == "blank":
        with open(v.devs[3], "wb") as f:
            f.truncate(32 << 20)
    elif how == "empty":
        v.devs[3].write_bytes(b"")
    rc, rep, p = fsck(v.devs, "-y", json_out=True)
    assert rc == 1, p.stdout + p.stderr
    assert "PR_0_DEV_REBUILT" in [f["code"] for f in rep["findings"]]
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr


def test_fsck_replace_onto_new_path(lost3, scratch):
    v = lost3
    new = scratch("new.img")
    rc, _, p = fsck(v.devs[:3], "-y", "--replace", f"3={new}")
    assert rc == 1, p.stdout + p.stderr
    rc, _, p = fsck(v.devs[:3] + [new], "-n")
    assert rc == 0, p.stdout + p.stderr


def test_fsck_replace_errors(lost3, scratch):
    v = lost3
    x = ext4_image(scratch("x.img"), "data")
    before = sha(x)
    rc, _, p = fsck(v.devs[:3], "-n", "--replace", f"3={x}")
    assert rc == 16
    assert p.stderr.startswith(
        "fsck.daxguard: --replace rebuilds a device: it needs -y\n")
    for bad in ("x=/a", "3", "3=", "16=/a"):
        rc, _, p = fsck(v.devs[:3], "-y", "--replace", bad)
        assert rc == 16, bad
        assert p.stderr.startswith(
            f"fsck.daxguard: --replace takes N=PATH with N a device number "
            f"from 0 to 15, not '{bad}'\n")
    rc, _, p = fsck(v.devs[:3], "-y", "--replace", f"1={x}")
    assert rc == 8
    assert p.stderr == (
        f"fsck.daxguard: --replace 1='{x}': device 1 of volume {v.uuid} is "
        f"present and current; --replace only names where a missing device "
        f"is rebuilt\n")
    assert sha(x) == before


def test_fsck_replace_and_a_stale_copy_of_the_same_device(volume_factory,
                                                         scratch):
    v = volume_factory(ndev=4, size="32M", parity=2)
    v.mkfs()
    stale = scratch("stale.img")
    shutil.copyfile(v.devs[0], stale)
    v.mount()
    (v.mnt / "more").write_bytes(b"x" * 5000)
    v.umount()
    x = ext4_image(scratch("x.img"), "data")
    devs = [stale] + v.devs[1:3]        # 0 stale, 3 left out
    before = [sha(stale), sha(x)]
    rc, _, p = fsck(devs, "-y", "--replace", f"0={x}")
    assert rc == 8, p.stdout + p.stderr
    assert p.stderr.endswith(
        f"fsck.daxguard: '{stale}' (a copy of device 0) and --replace "
        f"0='{x}' name the same device; give only one of them\n")
    assert [sha(stale), sha(x)] == before
