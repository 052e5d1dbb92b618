# SPDX-License-Identifier: MIT
"""fsck visits what the volume holds, not the size of its devices
(docs/design.md, "What the passes visit").

Work is counted, not timed: the pages of the device images that
`fsck.daxguard -n` brings into the page cache (each image's cache is
emptied first; cachestat(2) counts what is resident). The images are
sparse files on a disk (/var/tmp): on tmpfs a page cannot be evicted,
so there the test is skipped."""
import ctypes
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from conftest import BUILD, FSCK, MKFS, Volume, run
from dgfault import fsck

DUMPFS = BUILD / "dump" / "dumpfs.daxguard"

DISK_DIR = Path("/var/tmp")
NR_CACHESTAT = 451          # x86_64 and the generic table alike
PAGE = 4096
# Pages an empty volume's fsck may touch beyond the 64 GiB figure at
# 1 TiB: the init map and the allocation bitmap grow with the device
# (about 1 page of map and 8 of bitmap per 128 GiB of a device, all
# pages never written save the first), nothing else may.
GROWTH_BOUND = 256


class CacheStat(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in
                ("nr_cache", "nr_dirty", "nr_writeback", "nr_evicted",
                 "nr_recently_evicted")]


class Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)


def resident_pages(path):
    """Pages of path in the page cache (cachestat(2), Linux 6.5)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        cs, rng = CacheStat(), Range(0, 0)      # len 0: to the end
        if _libc.syscall(NR_CACHESTAT, fd, ctypes.byref(rng),
                         ctypes.byref(cs), 0) != 0:
            raise OSError(ctypes.get_errno(), "cachestat")
        return cs.nr_cache
    finally:
        os.close(fd)


def evict(path):
    fd = os.open(path, os.O_RDWR)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def fsck_pages(devs):
    """fsck -n of devs (clean expected); the pages it brought in."""
    for d in devs:
        evict(d)
    before = sum(resident_pages(d) for d in devs)
    p = run([FSCK, "-n"] + devs, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    return sum(resident_pages(d) for d in devs) - before


def disk_backed():
    try:
        out = subprocess.run(["stat", "-f", "-c", "%T", str(DISK_DIR)],
                             capture_output=True, text=True).stdout
    except OSError:
        return False
    return DISK_DIR.is_dir() and out.strip() not in ("tmpfs", "ramfs", "")


@pytest.fixture
def disk_dir():
    if not disk_backed():
        pytest.skip(f"{DISK_DIR} is not on a disk (tmpfs cannot evict "
                    "the images' pages, so touched pages cannot be "
                    "counted)")
    d = DISK_DIR / f"dg-e2e-scale-{uuid.uuid4().hex[:8]}"
    d.mkdir(mode=0o700)
    try:
        probe = d / "probe"
        probe.write_bytes(b"x" * PAGE)
        try:
            resident_pages(probe)
        except OSError as e:
            pytest.skip(f"cachestat(2) unavailable: {e}")
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def make(disk_dir, name, size):
    devs = [disk_dir / f"{name}{i}.img" for i in range(4)]
    run([MKFS, "-q", "--force", "--parity", "1", "--size", size] + devs)
    return devs


def test_empty_fsck_pages_do_not_grow_with_device_size(disk_dir):
    small = make(disk_dir, "s", "64G")
    touched_small = fsck_pages(small)
    for d in small:
        d.unlink()
    big = make(disk_dir, "b", "1T")
    touched_big = fsck_pages(big)
    print(f"pages touched by fsck -n of an empty volume: 4 x 64 GiB "
          f"{touched_small}, 4 x 1 TiB {touched_big}")
    assert touched_small > 0
    assert touched_big <= touched_small + GROWTH_BOUND


def test_fsck_pages_grow_with_data(disk_dir, tmp_path):
    devs = make(disk_dir, "d", "64G")
    empty = fsck_pages(devs)
    v = Volume(tmp_path, tag="scale")
    v.devs = devs
    mib = 32
    try:
        mnt = v.mount()
        block = os.urandom(1 << 20)
        with open(mnt / "data", "wb") as f:
            for _ in range(mib):
                f.write(block)
            f.flush()
            os.fsync(f.fileno())
        v.umount()
    finally:
        v.umount()
    loaded = fsck_pages(devs)
    print(f"pages touched by fsck -n: empty {empty}, with {mib} MiB "
          f"{loaded}")
    # every data page and its row's parity, read to be verified
    assert loaded - empty >= mib * (1 << 20) // PAGE


def geometry(devs):
    import json
    p = run([DUMPFS, "--json"] + devs)
    f = json.loads(p.stdout)["devices"][0]["superblocks"][0]["fields"]
    rows = json.loads(p.stdout)["geometry"]["rows"]
    return {k: int(f[k]) for k in ("cmap_start", "data_start")} | {
        "rows": int(rows)}


def test_faults_where_the_map_says_empty_do_not_matter(volume_factory):
    """A row the init map calls never written is skipped by fsck: a
    fault there, on every device (beyond parity), changes nothing read;
    a damaged copy of the map itself is found and rewritten."""
    v = volume_factory()
    v.mkfs()
    mnt = v.mount()
    data = os.urandom(3 << 20)
    (mnt / "f").write_bytes(data)
    v.umount()
    devs = [str(d) for d in v.devs]
    g = geometry(devs)
    with open(devs[0], "rb") as f:
        f.seek(g["cmap_start"] * PAGE)
        bits = f.read(PAGE - 16)
    per = 510                                   # DG_CSUMS_PER_PAGE
    clear = [i for i in range(g["rows"] // per)
             if not bits[i // 8] & (1 << (i % 8))]
    assert clear, "the volume should have blocks never written"
    row = clear[-1] * per + 7
    junk = os.urandom(PAGE)
    for d in devs:                              # every device
        with open(d, "r+b") as f:
            f.seek((g["data_start"] + row) * PAGE)
            f.write(junk)
    with open(devs[1], "r+b") as f:             # one copy of the map
        f.seek(g["cmap_start"] * PAGE)
        f.write(os.urandom(PAGE))
    rc, rep, p = fsck(devs, "-n", json_out=True)
    assert rc == 4, p.stdout + p.stderr
    # the map's copy and nothing else: the junk lies where nothing is
    where = {(f["device"], f["page"]) for f in rep["findings"]}
    assert where == {(1, g["cmap_start"])}, p.stdout
    rc, rep, p = fsck(devs, "-y", json_out=True)
    assert rc == 1, p.stdout + p.stderr
    where = {(f["device"], f["page"], f["fixed"]) for f in rep["findings"]}
    assert where == {(1, g["cmap_start"], True)}, p.stdout
    rc, rep, p = fsck(devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    mnt = v.mount()
    assert (mnt / "f").read_bytes() == data
    v.umount()
