# SPDX-License-Identifier: MIT
"""Syncs larger than one update are atomic (issue #19): a sync is staged,
published in one transaction and applied in chunks (fs/fsys/stage.c).
The program and, separately, the daemon are killed with SIGKILL at known
points of large syncs (test knobs: LIBCOMMIT_TEST_KILL_AFTER_STAGE in the
program, DG_TEST_STAGE_KILL in the daemon) and at random instants; after
remount the file holds wholly the old or wholly the new generation,
bit-exact, and fsck.daxguard -n finds nothing wrong."""
import array
import errno
import os
import random
import re
import signal
import socket
import struct
import subprocess
import time

import pytest

from conftest import FSCK, run
from test_libcommit import CHILD, PAGE, commit_socket, hdr

SEED = int(os.environ.get("DG_SEED", "19"))
ROUNDS = int(os.environ.get("DG_STAGED_ROUNDS", "10"))
NPAGES = 6000            # 23.4 MiB: several updates on 64 MiB devices
PIECE = 1024             # pages per STAGE message (test knob)


def gen_of(path, npages):
    """The generation the file's first npages hold; fails on any mix."""
    a = array.array("Q")
    with open(path, "rb") as f:
        a.frombytes(f.read(npages * PAGE))
    assert len(a) == npages * PAGE // 8
    g = a[0] >> 32
    want = array.array("Q", ((g << 32) | i for i in range(len(a))))
    if g == 0:
        want = array.array("Q", bytes(len(a) * 8))
    if a != want:
        bad = next(i for i in range(len(a)) if a[i] != want[i])
        pytest.fail(f"mixed state: word {bad} is {a[bad]:#x}, "
                    f"word 0 says generation {g}")
    return g


def sync_gen(path, npages, g, env=None, check=True):
    """One program: map, write generation g over npages, one sync."""
    p = subprocess.run([str(CHILD), str(path), "map rw 0 0",
                        f"gen {npages} {g}", "unmap"],
                       stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=600,
                       env=dict(os.environ, LIBCOMMIT_TEST_PIECE_PAGES=str(PIECE),
                                **(env or {})))
    if check:
        assert p.returncode == 0 and "err" not in p.stdout, (p.stdout,
                                                             p.stderr)
    return p


def wait_released(path):
    """The daemon releases a dead program's map after what it sent."""
    for _ in range(2000):
        r = subprocess.run([str(CHILD), str(path), "map rw 0 0", "unmap"],
                           stdin=subprocess.DEVNULL, capture_output=True,
                           text=True)
        if "err 16" not in r.stdout:
            return
        time.sleep(0.01)
    pytest.fail(f"{path}: the killed program's map was never released")


def fsck_clean(v):
    p = run([FSCK, "-n"] + v.devs, check=False)
    assert p.returncode == 0, p.stdout + p.stderr


def staged_volume(volume_factory, size="64M", *opts):
    v = volume_factory(size=size)
    v.mkfs()
    if "debug" in opts:
        v.expect_log(r"^\s+unique: \d+, error: ")   # libfuse's trace
    v.mount(*opts)
    return v


def test_large_sync_is_staged_and_exact(volume_factory):
    """A sync several updates large is one staged sync; readers see it
    whole afterwards; the stage's pages are freed again."""
    v = staged_volume(volume_factory, "64M", "debug")
    f = v.mnt / "big"
    f.write_bytes(bytes(NPAGES * PAGE))
    free0 = os.statvfs(v.mnt).f_bfree
    sync_gen(f, NPAGES, 5)
    assert gen_of(f, NPAGES) == 5
    log = v.read_log()
    assert re.search(r"libcommit commit ino=\d+ runs=\d+ bytes=\d+ "
                     r"\(staged\): 0", log), log[-2000:]
    assert len(re.findall(r"libcommit stage ino=", log)) == NPAGES // PIECE
    assert os.statvfs(v.mnt).f_bfree == free0   # the stage is gone
    v.remount("debug")
    assert gen_of(f, NPAGES) == 5
    v.umount()
    fsck_clean(v)


def test_kill_program_between_pieces(volume_factory):
    """A program killed after some STAGE messages published nothing: the
    file holds the old generation; killed at a random instant, it holds
    the old or (the COMMIT was sent) the new one."""
    rnd = random.Random(SEED)
    v = staged_volume(volume_factory)
    f = v.mnt / "prog"
    f.write_bytes(bytes(NPAGES * PAGE))
    state = 0
    for rd in range(ROUNDS):
        g = 100 + rd
        if rd % 2 == 0:
            k = rnd.randint(1, NPAGES // PIECE)
            p = sync_gen(f, NPAGES, g, check=False,
                         env={"LIBCOMMIT_TEST_KILL_AFTER_STAGE": str(k)})
            assert p.returncode == -signal.SIGKILL, (k, p.stdout)
            wait_released(f)
            assert gen_of(f, NPAGES) == state, (rd, k)
        else:
            p = subprocess.Popen([str(CHILD), str(f), "map rw 0 0",
                                  f"gen {NPAGES} {g}"],
                                 stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, text=True,
                                 env=dict(os.environ,
                                          LIBCOMMIT_TEST_PIECE_PAGES=str(PIECE)))
            time.sleep(rnd.random() * 0.4)
            p.send_signal(signal.SIGKILL)
            out, _ = p.communicate()
            wait_released(f)
            got = gen_of(f, NPAGES)
            assert got in {state, g}, (rd, got, state)
            if out.count("ok") >= 2:             # the sync returned
                assert got == g
            state = got
        if rd % 3 == 2:
            v.remount()
            assert gen_of(f, NPAGES) == state
    v.umount()
    fsck_clean(v)
    v.mount()
    assert gen_of(f, NPAGES) == state


def kill_daemon_round(v, f, npages, g, step, old):
    """Run one sync of generation g with the daemon set to kill itself
    after its step-th durable step; remount; check and return the
    generation, which the step's kind decides."""
    v.umount()
    os.environ["DG_TEST_STAGE_KILL"] = str(step)
    try:
        v.mount()
    finally:
        del os.environ["DG_TEST_STAGE_KILL"]
    log0 = len(v.read_log())
    p = sync_gen(f, npages, g, check=False)
    if p.returncode != 0 or "err" in p.stdout:
        v.daemon.wait(timeout=60)        # it killed itself mid-sync
    v.kill9()
    killed = re.findall(r"DG_TEST_STAGE_KILL: killed after step \d+ "
                        r"\((.*?)\)", v.read_log()[log0:])
    if not killed:
        # Fewer steps than that: the sync finished, the daemon lives on
        # until kill9 (which is then an ordinary crash after it).
        assert p.returncode == 0, p.stdout
    # Before the mount finishes it: a published stage is an orphan whose
    # pages fsck counts, and no fault (a crash leaves the journal to
    # replay, which fsck -n reports and nothing else).
    out = run([FSCK, "-n"] + v.devs, check=False).stdout
    probs = [l for l in out.splitlines() if l.startswith("PR_")]
    assert all(l.startswith("PR_1_JOURNAL_PENDING") for l in probs), out
    v.mount()
    got = gen_of(f, npages)
    if not killed or killed[0] != "staging batch":
        assert got == g, (step, killed, got)
    else:
        assert got == old, (step, killed, got)
    return got, killed[0] if killed else "none"


def test_kill_daemon_at_every_kind_of_step(volume_factory):
    """The daemon dies while staging (file old), right after the publish,
    between applied chunks and before the retire (file new once the
    mount finishes the stage): many rounds at different steps."""
    rnd = random.Random(SEED + 1)
    v = staged_volume(volume_factory)
    v.expect_log(r"DG_TEST_STAGE_KILL")
    f = v.mnt / "daemon"
    f.write_bytes(bytes(NPAGES * PAGE))
    # Steps of one sync: staging batches (256 pages, per piece), the
    # publish, the chunks, the retire: count them from a clean run.
    v.umount()
    os.environ["DG_TEST_STAGE_KILL"] = "1000000"
    try:
        v.mount()
    finally:
        del os.environ["DG_TEST_STAGE_KILL"]
    sync_gen(f, NPAGES, 1)
    state = 1
    batches = -(-PIECE // 256) * (NPAGES // PIECE) + \
        -(-(NPAGES % PIECE) // 256)
    steps = [1, batches, batches + 1, batches + 2, batches + 3]
    steps += rnd.sample(range(2, batches + 12), 5)
    seen = set()
    for rd, step in enumerate(steps[:max(ROUNDS, 5)]):
        state, kind = kill_daemon_round(v, f, NPAGES, 10 + rd, step, state)
        seen.add(kind)
        if "finishing the libcommit sync published" in v.read_log():
            seen.add("redo")
    assert {"staging batch", "published", "applied chunk"} <= seen, seen
    assert "redo" in seen
    v.umount()
    fsck_clean(v)
    v.mount()
    assert gen_of(f, NPAGES) == state


@pytest.mark.skipif(os.environ.get("DG_STAGED_GIB") != "1",
                    reason="1 GiB syncs: set DG_STAGED_GIB=1")
def test_one_gib_sync_killed_at_random_points(volume_factory):
    """The issue's case: a 1 GiB sync, daemon and program killed at
    random points."""
    rnd = random.Random(SEED + 2)
    npages = 1 << 18
    v = staged_volume(volume_factory, size="1200M")
    v.expect_log(r"DG_TEST_STAGE_KILL")
    f = v.mnt / "gib"
    with open(f, "wb") as fh:
        fh.truncate(npages * PAGE)
    state = 0
    for rd in range(int(os.environ.get("DG_STAGED_GIB_ROUNDS", "3"))):
        state, _ = kill_daemon_round(v, f, npages, 200 + rd,
                                     rnd.randint(1, 2 * npages // 256),
                                     state)
        g = 300 + rd
        p = sync_gen(f, npages, g, check=False, env={
            "LIBCOMMIT_TEST_KILL_AFTER_STAGE":
                str(rnd.randint(1, npages // PIECE - 1))})
        assert p.returncode == -signal.SIGKILL
        wait_released(f)
        assert gen_of(f, npages) == state
    v.umount()
    fsck_clean(v)


def _recv_msg(s):
    h = b""
    while len(h) < 16:
        b = s.recv(16 - len(h))
        if not b:
            return None, None
        h += b
    _, _, typ, n, _ = struct.unpack("<IHHII", h)
    body = b""
    while len(body) < n:
        b = s.recv(n - len(body))
        assert b
        body += b
    return typ, body


def _status(s):
    typ, body = _recv_msg(s)
    assert typ == 6, typ
    return struct.unpack("<iIQ", body)[0]


def _stage_msg(typ, pages, fill, seq):
    runs = b"".join(struct.pack("<QII", p * PAGE, PAGE, 0) for p in pages)
    payload = struct.pack("<II", len(pages), 0) + runs + fill * (PAGE *
                                                                 len(pages))
    return hdr(typ, len(payload), seq) + payload


def test_stage_dropped_with_the_connection_or_an_error(volume_factory):
    """STAGE messages never applied: the connection ends, an empty STAGE
    abandons them, a bad one fails them; the file is unchanged and the
    stages' pages are free again. STAGE without a map is refused."""
    v = staged_volume(volume_factory)
    f = v.mnt / "hostile"
    f.write_bytes(bytes(64 * PAGE))
    free0 = os.statvfs(v.mnt).f_bfree
    want = bytearray(64 * PAGE)
    path = commit_socket(f)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(path)
        s.sendall(_stage_msg(7, [0], b"x", 1))
        assert _status(s) == -errno.ENOTCONN
    for ending in ("close", "empty", "bad"):
        fd = os.open(f, os.O_RDWR)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(path)
            req = struct.pack("<QQII", 0, 64 * PAGE, 1, 0)
            socket.send_fds(s, [hdr(1, len(req), 1) + req], [fd])
            os.close(fd)
            typ, body = _recv_msg(s)
            assert typ == 2 and struct.unpack("<i", body[:4])[0] == 0
            s.sendall(_stage_msg(7, range(0, 40), b"s", 2))
            assert _status(s) == 0
            s.sendall(_stage_msg(7, range(40, 64), b"t", 3))
            assert _status(s) == 0
            if ending == "empty":
                s.sendall(_stage_msg(7, [], b"", 4))
                assert _status(s) == 0
                # The next COMMIT is a sync of its own.
                s.sendall(_stage_msg(3, [5], b"c", 5))
                assert _status(s) == 0
            elif ending == "bad":
                msg = bytearray(_stage_msg(7, [70], b"u", 4))  # off range
                s.sendall(bytes(msg))
                assert _status(s) == -errno.EINVAL
        got = f.read_bytes()
        if ending == "empty":
            want[5 * PAGE:6 * PAGE] = b"c" * PAGE
        assert got == bytes(want), ending
        wait_released(f)
        assert os.statvfs(v.mnt).f_bfree == free0, ending
    v.umount()
    fsck_clean(v)


def test_stage_without_room_fails_cleanly(volume_factory):
    """A sync whose stage does not fit the free space fails with ENOSPC:
    nothing applied, the stage's pages free again, the stores still
    pending (a smaller sync of them works)."""
    v = staged_volume(volume_factory, "32M")
    v.expect_log(r"No space left|ENOSPC|-28")
    st = os.statvfs(v.mnt)
    npages = st.f_bfree * st.f_frsize // PAGE * 2 // 3   # file + stage > free
    f = v.mnt / "full"
    with open(f, "wb") as fh:
        fh.truncate(npages * PAGE)
    p = subprocess.run([str(CHILD), str(f), "map rw 0 0",
                        f"gen {npages} 7", "read 0 8",
                        f"syncrange 0 {PIECE * PAGE}", "unmap"],
                       stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=600,
                       env=dict(os.environ,
                                LIBCOMMIT_TEST_PIECE_PAGES=str(PIECE)))
    lines = p.stdout.splitlines()
    assert lines[1].startswith(f"err {errno.ENOSPC}"), p.stdout
    assert lines[2] == "ok " + struct.pack("<Q", 7 << 32).hex()
    assert lines[3:] == ["ok", "ok"], p.stdout
    free_after = os.statvfs(v.mnt).f_bfree
    with open(f, "rb") as fh:
        head = array.array("Q", fh.read(PIECE * PAGE))
        rest = fh.read()
    assert head == array.array("Q", ((7 << 32) | i
                                     for i in range(PIECE * PAGE // 8)))
    assert rest == bytes(len(rest))
    v.umount()
    fsck_clean(v)
    v.mount()
    assert os.statvfs(v.mnt).f_bfree == free_after


def test_stage_page_in_several_pieces(volume_factory):
    """Runs of one page spread over pieces, and out of order within one,
    all land: a page staged twice builds on its first staged image."""
    v = staged_volume(volume_factory)
    f = v.mnt / "pieces"
    f.write_bytes(bytes(16 * PAGE))
    fd = os.open(f, os.O_RDWR)

    def msg(typ, runs, seq):
        body = b"".join(struct.pack("<QII", off, len(d), 0)
                        for off, d in runs)
        payload = struct.pack("<II", len(runs), 0) + body + \
            b"".join(d for _, d in runs)
        return hdr(typ, len(payload), seq) + payload

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(commit_socket(f))
        req = struct.pack("<QQII", 0, 16 * PAGE, 1, 0)
        socket.send_fds(s, [hdr(1, len(req), 1) + req], [fd])
        os.close(fd)
        typ, body = _recv_msg(s)
        assert typ == 2 and struct.unpack("<i", body[:4])[0] == 0
        a, b, c, d = (bytes([x]) * 64 for x in b"abcd")
        s.sendall(msg(7, [(3 * PAGE, a)], 2))
        assert _status(s) == 0
        s.sendall(msg(7, [(3 * PAGE + 64, b), (4 * PAGE, d),
                          (3 * PAGE + 128, c)], 3))
        assert _status(s) == 0
        s.sendall(msg(3, [(4 * PAGE + 64, a)], 4))
        assert _status(s) == 0
    got = f.read_bytes()
    want = bytearray(16 * PAGE)
    want[3 * PAGE:3 * PAGE + 192] = a + b + c
    want[4 * PAGE:4 * PAGE + 128] = d + a
    assert got == bytes(want)
