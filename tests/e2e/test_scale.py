# SPDX-License-Identifier: MIT
"""Terabyte volumes cost what they hold, not their size (issue #34).

Counts work instead of timing it: the pages of the image files that mkfs
and a mount + unmount bring into the page cache (each image's cache is
emptied first: fsync, then POSIX_FADV_DONTNEED; counted with the
cachestat(2) system call), and the daemon's resident memory, for an
empty volume of 4 x 64 GiB and of 4 x 1 TiB sparse images. Before the
allocation bitmap was kept by page (fs/volume/bmap.c) the open loaded
all of it: 88 MiB more memory at 1 TiB (and seconds of counting bits).

The images are sparse files on a disk-backed /var/tmp (a tmpfs would
hold every page the test counts in memory anyway, and cannot drop them).
"""
import ctypes
import os
import shutil
import struct
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from conftest import DAEMON, MKFS, is_mounted, run

BASE = Path("/var/tmp")
SIZES = ("64G", "1T")
TMPFS_MAGIC = 0x01021994
SYS_CACHESTAT = 451  # x86_64, aarch64 (the generic table) alike

# What may grow between 64 GiB and 1 TiB devices. The checksum-page init
# map has one page per 64 GiB of device, two slots on every device, and
# the open reads it whole (2 x 15 more pages per device at 1 TiB); mkfs
# writes it. Most of what is counted is readahead around the few pages
# touched (read_ahead_kb can be 8 MiB: 2,048 pages a fault), and where
# the regions lie differs with the size: a few windows of slack. Pages
# of the volume never written are never read at all (they read as
# zeros, format.h), so neither is the empty bitmap; what this guards
# is work over the whole device creeping back in (a pass over every
# row's checksums, the bitmap's 25,000 pages, ...).
PAGES_SLACK = 4 * 2048
# The daemon's memory: the bitmap's page table (16 bytes per 128 MiB of
# volume) and the init map in core are the only parts that grow; the old
# in-core bitmap was 88 MiB more at 1 TiB.
RSS_SLACK_KIB = 8 * 1024


def fs_type(path):
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(128)  # struct statfs, f_type first
    if libc.statfs(str(path).encode(), buf) != 0:
        return None
    return struct.unpack_from("l", buf.raw)[0]


def cachestat(fd):
    """Pages of the file fd in the page cache (cachestat(2))."""
    libc = ctypes.CDLL(None, use_errno=True)
    rng = (ctypes.c_uint64 * 2)(0, 0)   # off 0, len 0: the whole file
    out = (ctypes.c_uint64 * 5)()        # nr_cache first
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(ctypes.c_long(SYS_CACHESTAT), ctypes.c_int(fd), rng,
                    out, ctypes.c_uint(0)) != 0:
        raise OSError(ctypes.get_errno(), "cachestat")
    return out[0]


def resident(imgs):
    total = 0
    for p in imgs:
        fd = os.open(p, os.O_RDONLY)
        try:
            total += cachestat(fd)
        finally:
            os.close(fd)
    return total


def evict(imgs):
    for p in imgs:
        fd = os.open(p, os.O_RDWR)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


@pytest.fixture
def workdir():
    if fs_type(BASE) in (None, TMPFS_MAGIC):
        pytest.skip(f"{BASE} is a tmpfs (or unknown): its pages cannot be "
                    "evicted and counted")
    if shutil.disk_usage(BASE).free < 5 << 30:
        pytest.skip(f"less than 5 GB free on {BASE}")
    probe = os.open(BASE, os.O_RDONLY)
    try:
        cachestat(probe)
    except OSError:
        pytest.skip("no cachestat(2) (Linux >= 6.5) to count cached pages")
    finally:
        os.close(probe)
    d = BASE / f"dg-e2e-scale-{uuid.uuid4().hex[:8]}"
    d.mkdir(mode=0o700)
    try:
        yield d
    finally:
        mnt = d / "mnt"
        if mnt.exists() and is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)],
                           capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


def vm_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def measure(d, size):
    """mkfs and mount + unmount an empty 4-device parity-1 volume of
    size: pages touched by each, the daemon's RSS, statfs free blocks."""
    imgs = [d / f"{size}-{i}.img" for i in range(4)]
    run([MKFS, "-q", "--parity", "1", "--size", size] + imgs)
    mkfs_pages = resident(imgs)
    evict(imgs)
    mnt = d / "mnt"
    mnt.mkdir(exist_ok=True)
    log = open(d / f"{size}.log", "w")
    daemon = subprocess.Popen([str(DAEMON), ",".join(map(str, imgs)),
                               str(mnt), "-f", "-o",
                               f"log={d / (size + '.daemon.log')}"],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 30
        while not is_mounted(mnt):
            assert daemon.poll() is None, "daemon exited"
            assert time.time() < deadline, "mount timed out"
            time.sleep(0.02)
        # After a round trip through the daemon, so that both sizes are
        # sampled once it serves; the largest of a few samples.
        st = os.statvfs(mnt)
        rss = 0
        for _ in range(5):
            rss = max(rss, vm_rss_kib(daemon.pid))
            time.sleep(0.05)
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)],
                       capture_output=True)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()
    assert daemon.returncode == 0
    mount_pages = resident(imgs)
    for p in imgs:
        p.unlink()
    return mkfs_pages, mount_pages, rss, st


def test_work_does_not_grow_with_device_size(workdir):
    got = {s: measure(workdir, s) for s in SIZES}
    (mk0, mt0, rss0, st0), (mk1, mt1, rss1, st1) = got["64G"], got["1T"]
    print(f"pages touched: mkfs {mk0} -> {mk1}, mount+umount {mt0} -> {mt1}; "
          f"daemon RSS {rss0} -> {rss1} KiB")
    assert mk1 <= mk0 + PAGES_SLACK, (mk0, mk1)
    assert mt1 <= mt0 + PAGES_SLACK, (mt0, mt1)
    assert rss1 <= rss0 + RSS_SLACK_KIB, (rss0, rss1)
    # An empty volume is empty at any size: the free count, without
    # having read the bitmap, is every page but the same metadata.
    assert st1.f_blocks - st1.f_bfree == st0.f_blocks - st0.f_bfree + (
        # the root and the bitmap: one page per 128 MiB of volume more
        (st1.f_blocks + 32767) // 32768 - (st0.f_blocks + 32767) // 32768)
