# SPDX-License-Identifier: MIT
"""Crashes: kill -9 the daemon in the middle of a write-heavy workload,
mount again, and check that every file whose fsync returned holds what
was written, that every file is readable, and that a scrub finds the
checksums and parity consistent. Also: the daemon unmounts cleanly on
SIGTERM, SIGINT and SIGHUP."""
import hashlib
import json
import os
import random
import signal
import stat
import subprocess
import sys
import time

import pytest

from conftest import is_mounted

# A writer process: creates files (directly or via tmp + rename), fsyncs
# them, and only then records "path sha256" in the record file. It also
# deletes some of its recorded files ("U path" before the unlink, "D
# path" after the fsync of the directory) and leaves unsynced noise
# around. It stops at the first error (the daemon is gone).
WRITER = r"""
import hashlib, os, random, sys
mnt, rec, wid, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rng = random.Random(seed)
d = os.path.join(mnt, "w%s" % wid)
os.makedirs(d, exist_ok=True)
log = open(rec, "a", buffering=1)
live = []
sizes = [0, 1, 100, 4096, 4097, 20000, 65536, 200000, 700000, 1 << 20]
def write_file(p, data, chunk):
    fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    for off in range(0, len(data), chunk):
        os.write(fd, data[off:off + chunk])
    os.fsync(fd)
    os.close(fd)
def fsync_dir(p):
    fd = os.open(p, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(fd)
    os.close(fd)
i = 0
while True:
    i += 1
    name = "s%d-%d" % (seed, i)
    p = os.path.join(d, name)
    data = rng.randbytes(rng.choice(sizes))
    chunk = rng.choice([512, 4096, 65536, 1 << 20])
    if rng.random() < 0.5:
        write_file(p, data, chunk)
    else:
        write_file(p + ".tmp", data, chunk)
        os.rename(p + ".tmp", p)
        fsync_dir(d)
    log.write("%s %s\n" % (p, hashlib.sha256(data).hexdigest()))
    live.append(p)
    if i % 3 == 0:      # unsynced noise, never checked
        with open(os.path.join(d, "noise%d" % (i % 7)), "ab") as f:
            f.write(rng.randbytes(rng.randrange(1, 50000)))
    if len(live) > 30 or (i % 5 == 0 and live):
        victim = live.pop(rng.randrange(len(live)))
        log.write("U %s\n" % victim)   # may be gone or intact
        os.unlink(victim)
        fsync_dir(d)
        log.write("D %s\n" % victim)
    if i % 7 == 0:      # metadata churn in the same directory
        os.setxattr(d, "user.i", str(i).encode())
"""


def read_records(path):
    """path -> sha256 of files whose fsync completed; deleted paths map
    to None, paths being deleted at the crash to ("maybe", sha256).
    Later records win."""
    want = {}
    if not os.path.exists(path):
        return want
    with open(path) as f:
        for line in f:
            if not line.endswith("\n"):
                break                 # the writer died mid-line
            a, b = line.split()
            if a == "D":
                want[b] = None
            elif a == "U":
                want[b] = ("maybe", want[b])
            else:
                want[a] = b
    return want


def verify(v, want):
    """Every fsync'd file is intact, deleted ones are gone, every other
    file is readable; the scrub finds nothing wrong."""
    bad = []
    for p, sha in want.items():
        if sha is None:
            if os.path.exists(p):
                bad.append(f"{p}: deleted but present")
            continue
        if isinstance(sha, tuple):      # unlink under way at the crash
            if not os.path.exists(p):
                continue
            sha = sha[1]
        try:
            with open(p, "rb") as f:
                got = hashlib.sha256(f.read()).hexdigest()
        except OSError as e:
            bad.append(f"{p}: {e}")
            continue
        if got != sha:
            bad.append(f"{p}: content differs")
    assert not bad, "\n".join(bad[:20])
    nfiles = 0
    for d, _, files in os.walk(v.mnt):
        for f in files:
            p = os.path.join(d, f)
            if not stat.S_ISREG(os.lstat(p).st_mode):
                continue
            with open(p, "rb") as fh:   # no EIO anywhere
                fh.read()
            nfiles += 1
    r = json.loads(v.ctl("scrub", "--json").stdout)
    assert r["unrecoverable"] == 0 and r["parity_mismatch"] == 0, r
    st = v.status()
    assert st["faults"]["unrecoverable"] == 0, st
    return nfiles


def test_kill9_during_writes(volume_factory, tmp_path):
    v = volume_factory()
    v.mkfs()
    rec = tmp_path / "records.txt"
    rng = random.Random(20240607)
    modes = [(), ("writeback",), (), ("writeback",), ()]
    checked = 0
    for rnd, opts in enumerate(modes):
        v.mount(*opts)
        writers = [subprocess.Popen(
            [sys.executable, "-c", WRITER, str(v.mnt), str(rec), str(w),
             str(rnd * 10 + w)], stderr=subprocess.DEVNULL)
            for w in range(2)]
        # Let the writers get going, then pull the plug at a random point.
        deadline = time.time() + 10
        while len(read_records(rec)) < checked + 4 and time.time() < deadline:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.05, 1.5))
        v.kill9()
        for w in writers:
            try:
                w.wait(timeout=10)
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
        assert not is_mounted(v.mnt)
        want = read_records(rec)
        assert len(want) > checked, "the writers made no progress"
        checked = len(want)
        v.mount()
        verify(v, want)
        v.umount()
    # The log shows a journal replay after the crashes.
    assert "journal replay" in v.read_log()


def test_kill9_while_idle_after_unlink_of_open_file(volume_factory):
    """An unlinked file still open at the crash is freed on the next
    mount (orphan), and its space comes back."""
    v = volume_factory()
    v.mkfs()
    v.mount()
    free0 = os.statvfs(v.mnt).f_bfree
    (v.mnt / "keep").write_bytes(b"keep" * 1000)
    fd = os.open(v.mnt / "orphan", os.O_CREAT | os.O_RDWR)
    os.write(fd, os.urandom(4 << 20))
    os.fsync(fd)
    os.unlink(v.mnt / "orphan")
    v.kill9()
    try:
        os.close(fd)
    except OSError:
        pass
    v.mount()
    assert os.listdir(v.mnt) == ["keep"]
    assert (v.mnt / "keep").read_bytes() == b"keep" * 1000
    assert os.statvfs(v.mnt).f_bfree >= free0 - 8
    verify(v, {})


def test_unlink_frees_at_once_and_leaves_no_orphan(volume_factory):
    """Unlinking the last name of a file nobody has open frees it in the
    unlink's own transaction, even while the kernel still holds the
    inode (an O_PATH descriptor: no FUSE open). Its space is back at
    once, fstat shows nlink 0, and a crash before the kernel forgets it
    leaves no orphan for the next mount to free."""
    v = volume_factory()
    v.mkfs()
    v.mount()
    free0 = os.statvfs(v.mnt).f_bfree
    (v.mnt / "gone").write_bytes(os.urandom(4 << 20))
    assert os.statvfs(v.mnt).f_bfree < free0 - 1000
    fd = os.open(v.mnt / "gone", os.O_PATH)
    try:
        os.unlink(v.mnt / "gone")
        assert os.statvfs(v.mnt).f_bfree >= free0 - 8
        assert os.fstat(fd).st_nlink == 0
        v.kill9()
    finally:
        os.close(fd)
    v.mount()
    assert os.listdir(v.mnt) == []
    assert os.statvfs(v.mnt).f_bfree >= free0 - 8
    assert "orphan" not in v.read_log()
    verify(v, {})


def test_kill9_without_fsync_keeps_volume_consistent(volume_factory):
    """Default mode: a write() that returned is on the media even without
    fsync (fs.h: each operation is durable when it returns)."""
    v = volume_factory()
    v.mkfs()
    v.mount()
    data = {f"f{i}": os.urandom(1000 * i + 1) for i in range(20)}
    for n, d in data.items():
        with open(v.mnt / n, "wb") as f:
            f.write(d)
    os.mkdir(v.mnt / "dir")
    os.symlink("f1", v.mnt / "dir" / "link")
    os.rename(v.mnt / "f0", v.mnt / "dir" / "moved")
    v.kill9()
    v.mount()
    for n, d in data.items():
        p = v.mnt / ("dir/moved" if n == "f0" else n)
        assert p.read_bytes() == d, n
    assert os.readlink(v.mnt / "dir" / "link") == "f1"
    verify(v, {})


def thread_waits(pid):
    """Where each thread of pid sleeps, which signals it blocks, and
    which the process ignores."""
    out = [l.strip() for l in open(f"/proc/{pid}/status")
           if l.startswith("SigIgn")]
    for t in sorted(os.listdir(f"/proc/{pid}/task")):
        try:
            wchan = open(f"/proc/{pid}/task/{t}/wchan").read()
            blk = [l.split()[1] for l in open(f"/proc/{pid}/task/{t}/status")
                   if l.startswith("SigBlk")]
        except OSError:
            continue
        out.append(f"{t}:{wchan}(blocked {blk[0] if blk else '?'})")
    return " ".join(out)


def test_only_the_fuse_loop_takes_stop_signals(mounted):
    """libfuse's workers block SIGINT/SIGTERM/SIGHUP, so a stop signal
    must reach the loop's main thread: a helper thread of ours taking it
    would leave the daemon running until the next request."""
    stop = (1 << (signal.SIGINT - 1) | 1 << (signal.SIGTERM - 1) |
            1 << (signal.SIGHUP - 1))
    pid = mounted.daemon.pid
    tids = [t for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]
    assert len(tids) >= 3, tids     # a worker, the ctl and commit servers
    for t in tids:
        blk = next(int(l.split()[1], 16) for l in
                   open(f"/proc/{pid}/task/{t}/status")
                   if l.startswith("SigBlk"))
        assert blk & stop == stop, (t, hex(blk), thread_waits(pid))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT,
                                 signal.SIGHUP])
def test_signal_unmounts_cleanly(volume_factory, sig):
    if signal.getsignal(sig) == signal.SIG_IGN:
        # Under nohup the daemon inherits SIGHUP ignored and keeps
        # running, as a program started by nohup should.
        pytest.skip(f"{sig.name} is ignored by whoever started the tests")
    v = volume_factory()
    v.mkfs()
    v.mount()
    (v.mnt / "f").write_bytes(b"before the signal")
    v.daemon.send_signal(sig)
    try:
        rc = v.daemon.wait(timeout=20)
    except subprocess.TimeoutExpired:
        raise AssertionError("daemon still running after the signal; its "
                             "threads wait in: " + thread_waits(v.daemon.pid)
                             + "\n" + v.read_log())
    assert rc == 0, v.read_log()
    deadline = time.time() + 5
    while is_mounted(v.mnt) and time.time() < deadline:
        time.sleep(0.05)
    assert not is_mounted(v.mnt)
    v.umount()                        # collect the exited daemon
    assert "unmounted cleanly" in v.read_log()
    v.mount()
    assert (v.mnt / "f").read_bytes() == b"before the signal"
    # A clean unmount leaves nothing to replay.
    assert "journal replay" not in v.read_log()
    verify(v, {})
