# SPDX-License-Identifier: MIT
"""-o writeback: the daemon holds the pages the kernel writes back and
commits them in batches (fs/daemon/wb_hold.c). Reads see what is held,
fsync and the requests that must see the media drain it, the hold stays
within -o wb_max, the commit interval commits without fsync, and a crash
leaves a consistent volume with every file old or new. Counts from
status --json "writeback", never times."""
import ctypes
import mmap
import os
import time

import pytest

from conftest import run, DAEMON
from dgfault import fsck

libc = ctypes.CDLL(None, use_errno=True)
LONG = "commit=3600"        # nothing committed by the interval in a test
HOLD = "wb_max=64M"         # the hold is off unless asked for


def syncfs(path):
    """Make the kernel write back the mount's dirty pages: they reach the
    daemon as written-back pages (no fsync: FUSE sends no SYNCFS)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        assert libc.syncfs(fd) == 0, ctypes.get_errno()
    finally:
        os.close(fd)


def wb(v):
    return v.status()["writeback"]


def held_after_syncfs(v):
    syncfs(v.mnt)
    s = wb(v)
    assert s["held_bytes"] > 0, s
    return s


def write_file(path, data, flags=0):
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | flags, 0o644)
    try:
        assert os.write(fd, data) == len(data)
    finally:
        os.close(fd)


def read_direct(path, size):
    """Read through the daemon, not the kernel's cache (O_DIRECT)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, max(size, 4096))
    try:
        n = os.readv(fd, [buf])
        return bytes(buf[:n])
    finally:
        buf.close()
        os.close(fd)


@pytest.fixture
def vol(volume_factory):
    v = volume_factory()
    v.mkfs()
    return v


def test_reads_see_held_data_and_fsync_commits(vol):
    v = vol
    v.mount("writeback", HOLD, LONG)
    a = v.mnt / "a"
    data = os.urandom(3 << 20) + b"tail"
    write_file(a, data)
    s0 = held_after_syncfs(v)
    assert s0["batches_committed"] == 0, s0
    assert s0["held_bytes"] <= s0["held_max_bytes"]
    assert os.stat(a).st_size == len(data)
    # A read through the daemon sees the held bytes (it commits them).
    assert read_direct(a, len(data)) == data
    s1 = wb(v)
    assert s1["held_bytes"] == 0 and s1["batches_committed"] >= 1, s1
    # Many small writes of one file: one batch at fsync.
    b = v.mnt / "b"
    fd = os.open(b, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        for i in range(256):
            os.pwrite(fd, bytes([i]) * 4096, ((i * 97) % 256) * 4096)
        before = wb(v)["batches_committed"]
        os.fsync(fd)
        s2 = wb(v)
    finally:
        os.close(fd)
    assert s2["held_bytes"] == 0, s2
    assert s2["batches_committed"] - before <= 2, s2
    assert s2["writes_held"] > s2["batches_committed"], s2


def test_fsync_durable_and_kill9_consistent(vol):
    v = vol
    v.mount()
    old = os.urandom(1 << 20)
    write_file(v.mnt / "c", old)       # default mode: durable now
    v.umount()
    v.mount("writeback", HOLD, LONG)
    synced = os.urandom(2 << 20)
    fd = os.open(v.mnt / "s", os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, synced)
    os.fsync(fd)
    os.close(fd)
    new = os.urandom(1 << 20)
    write_file(v.mnt / "c", new)       # overwrite, held only
    write_file(v.mnt / "u", os.urandom(1 << 20))
    held_after_syncfs(v)
    v.kill9()
    v.mount()                          # replays the journal
    assert (v.mnt / "s").read_bytes() == synced
    # Held and lost at the crash: the old bytes, never a mix.
    assert (v.mnt / "c").read_bytes() in (old, new)
    assert (v.mnt / "u").stat().st_size in (0, 1 << 20)
    v.umount()
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr


def test_without_wb_max_sync_is_durable(vol):
    """-o writeback alone holds nothing: what the kernel writes back (here
    at syncfs, which the daemon never hears of) is on the media when the
    write-back returns, so sync(2) stays a durability point."""
    v = vol
    v.mount("writeback")
    assert wb(v)["enabled"] is False
    data = os.urandom(2 << 20)
    write_file(v.mnt / "f", data)
    syncfs(v.mnt)
    assert wb(v)["held_bytes"] == 0
    v.kill9()
    v.mount()
    assert (v.mnt / "f").read_bytes() == data


def test_ctl_sync_commits_the_hold(vol):
    """With the hold, `daxguard-ctl MNT sync` is what sync(1) cannot be:
    everything held is on the media when it returns."""
    v = vol
    v.mount("writeback", HOLD, LONG)
    data = os.urandom(2 << 20)
    write_file(v.mnt / "f", data)
    held_after_syncfs(v)
    assert v.ctl("sync").stdout == "synced\n"
    assert wb(v)["held_bytes"] == 0
    v.kill9()
    v.mount()
    assert (v.mnt / "f").read_bytes() == data


def test_commit_interval_commits_without_fsync(vol):
    v = vol
    v.mount("writeback", HOLD, "commit=1")
    data = os.urandom(1 << 20)
    write_file(v.mnt / "f", data)
    syncfs(v.mnt)
    deadline = time.time() + 30
    while True:
        s = wb(v)
        if s["held_bytes"] == 0 and s["batches_committed"] >= 1:
            break
        assert time.time() < deadline, s
        time.sleep(0.1)
    v.kill9()
    v.mount()
    assert (v.mnt / "f").read_bytes() == data


def drained(v, before):
    s = wb(v)
    assert s["held_bytes"] == 0, s
    assert s["batches_committed"] > before["batches_committed"], s
    return s


def test_direct_sync_truncate_fallocate_drain(vol):
    v = vol
    v.mount("writeback", HOLD, LONG)
    f = v.mnt / "f"
    data = os.urandom(1 << 20)
    write_file(f, data)
    s = held_after_syncfs(v)
    # An O_DIRECT write lands after what was held, and commits it.
    fd = os.open(f, os.O_WRONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 4096)
    buf.write(b"D" * 4096)
    try:
        assert os.pwritev(fd, [buf], 8192) == 4096
    finally:
        os.close(fd)
        buf.close()
    s = drained(v, s)
    want = data[:8192] + b"D" * 4096 + data[12288:]
    # An O_SYNC write: the kernel's fsync drains it.
    write_file(f, b"S" * 4096, os.O_SYNC)
    s = drained(v, s)
    want = b"S" * 4096 + want[4096:]
    # truncate after held writes: they land first, then the size.
    fd = os.open(f, os.O_WRONLY)
    os.pwrite(fd, b"T" * 4096, 65536)
    os.close(fd)
    s = held_after_syncfs(v)
    os.truncate(f, 65536 + 100)
    s = drained(v, s)
    want = want[:65536] + b"T" * 100
    # fallocate punch after held writes.
    fd = os.open(f, os.O_WRONLY)
    os.pwrite(fd, b"P" * 8192, 16384)
    os.close(fd)
    s = held_after_syncfs(v)
    fd = os.open(f, os.O_WRONLY)
    try:
        os.posix_fallocate(fd, 0, 65536 + 100)
    finally:
        os.close(fd)
    s = drained(v, s)
    want = want[:16384] + b"P" * 8192 + want[24576:]
    v.kill9()
    v.mount()
    assert (v.mnt / "f").read_bytes() == want
    v.umount()
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr


def test_hold_stays_within_wb_max(vol):
    v = vol
    v.mount("writeback", LONG, "wb_max=1M")
    files = {}
    for i in range(6):
        files[i] = os.urandom((1 << 20) + 4096 * i)
        write_file(v.mnt / f"m{i}", files[i])
    syncfs(v.mnt)
    s = wb(v)
    assert s["held_max_bytes"] == 1 << 20, s
    assert s["held_peak_bytes"] <= s["held_max_bytes"], s
    # The buffers too, not only the bytes in them (runs grow by doubling).
    assert s["held_peak_bytes"] <= s["buffer_peak_bytes"], s
    assert s["buffer_peak_bytes"] <= s["held_max_bytes"], s
    assert s["batches_committed"] >= 5, s   # made room as it went
    assert s["batches_failed"] == 0, s
    v.umount()                              # commits the rest
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    v.mount()
    for i, d in files.items():
        assert (v.mnt / f"m{i}").read_bytes() == d


def test_unlinked_file_held_data_does_not_reach_a_new_file(vol):
    """An unlinked file's held bytes are committed before its inode is
    freed, so a new file that reuses the number gets none of them."""
    v = vol
    v.mount("writeback", HOLD, LONG)
    for round_ in range(3):
        g = v.mnt / f"g{round_}"
        write_file(g, b"G" * 65536)
        syncfs(v.mnt)
        os.unlink(g)
        h = v.mnt / f"h{round_}"
        write_file(h, b"")
        assert read_direct(h, 65536) == b""
    s = wb(v)
    assert s["batches_failed"] == 0, s


def test_default_mode_holds_nothing(vol):
    v = vol
    v.mount()
    write_file(v.mnt / "f", os.urandom(1 << 20))
    s = wb(v)
    assert s == dict(s, enabled=False, held_bytes=0, batches_committed=0,
                     writes_held=0), s


@pytest.mark.parametrize("opt", ["wb_max=12", "wb_max=1Q", "commit=0",
                                 "commit=-1", "bdi_ratio=101"])
def test_bad_options_are_usage_errors(vol, opt):
    p = run([DAEMON, vol.devlist, vol.mnt, "-f", "-o", "writeback," + opt],
            check=False, timeout=30)
    assert p.returncode == 2, p.stderr


@pytest.mark.parametrize("opts,msg", [
    ("wb_max=64M", "wb_max needs -o writeback"),
    ("writeback,wb_max=99999999999999G", "wb_max: a size from 1M"),
    ("writeback,wb_max=512K", "wb_max: a size from 1M"),
])
def test_hold_options_refused(vol, opts, msg):
    """Bad hold options: a message and exit 2 before anything is
    opened (a size that would wrap when scaled is refused, not taken)."""
    p = run([DAEMON, "-o", opts, vol.devlist, str(vol.mnt), "-f"],
            check=False)
    assert p.returncode == 2, p.stderr
    assert msg in p.stderr
