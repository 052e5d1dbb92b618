# SPDX-License-Identifier: MIT
"""libcommit end to end (issue #6): round trip, discard vs shim writeback,
single writer, permissions, guard pages, corruption + verify, hostile
socket messages, fio through the preload shim."""
import os
import re
import shutil
import socket
import struct
import subprocess
import time

import pytest

from conftest import BUILD, FSCK, run

CHILD = BUILD / "tests" / "e2e" / "commit_child"
SHIM = BUILD / "libcommit" / "libcommit-preload.so"
PAGE = 4096


@pytest.fixture(autouse=True)
def need_child():
    if not CHILD.exists():
        pytest.skip("commit_child not built")


def child(path, *cmds, check=True, **kw):
    """Run commit_child with commands; return its output lines."""
    p = subprocess.run([str(CHILD), str(path), *cmds], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=60, **kw)
    lines = p.stdout.splitlines()
    if check:
        bad = [l for l in lines if l.startswith("err")]
        assert not bad and p.returncode == 0, (cmds, p.stdout, p.stderr)
    return lines


class Holder:
    """A commit_child kept alive, fed one command at a time."""

    def __init__(self, path, **kw):
        self.p = subprocess.Popen([str(CHILD), str(path)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, bufsize=1,
                                  **kw)

    def do(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def close(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.write("exit\n")
                self.p.stdin.close()
            except BrokenPipeError:
                pass
            self.p.wait(timeout=10)


def test_round_trip(mounted):
    f = mounted.mnt / "rt"
    f.write_bytes(b"\0" * (64 * PAGE))
    data = os.urandom(3 * PAGE + 100)
    out = child(f, "map rw 0 0", f"store 4000 {data.hex()}", "sync", "unmap")
    assert out[0] == f"ok {64 * PAGE}"
    got = f.read_bytes()
    assert got[4000:4000 + len(data)] == data
    assert got[:4000] == b"\0" * 4000 and len(got) == 64 * PAGE
    # A range map at an offset: map offsets are relative to the range.
    child(f, f"map rw {8 * PAGE} {2 * PAGE}", "store 10 6869", "sync", "unmap")
    assert f.read_bytes()[8 * PAGE + 10:8 * PAGE + 12] == b"hi"
    # Read-only map sees the file.
    out = child(f, f"map ro 0 0", "read 4000 16")
    assert out[1] == "ok " + data[:16].hex()


def test_sync_ships_only_changed_lines(volume_factory):
    """A sync sends the daemon the changed 64-byte lines, runs of
    neighbours joined; a page stored to but left unchanged sends
    nothing, and a sync with nothing changed sends no commit at all."""
    v = volume_factory()
    v.mkfs()
    v.expect_log(r"^\s+unique: \d+, error: ")   # libfuse's debug trace
    v.mount("debug")
    f = v.mnt / "lines"
    f.write_bytes(b"\0" * (4 * PAGE))
    child(f, "map rw 0 0",
          "store 0 01",                         # line 0 of page 0
          f"store {PAGE + 100} 0203",           # lines 1 and 2 of page 1:
          f"store {PAGE + 130} 04",             # one run
          f"store {2 * PAGE} 0000",             # unchanged
          "sync", "sync", "unmap")
    commits = re.findall(r"libcommit commit ino=\d+ runs=(\d+) bytes=(\d+): "
                         r"(-?\d+)", v.read_log())
    assert commits == [("2", "192", "0")]
    got = f.read_bytes()
    assert got[0] == 1 and got[PAGE + 100:PAGE + 102] == b"\2\3"
    assert got[PAGE + 130] == 4 and got.count(0) == len(got) - 4


def test_scattered_syncs_leave_no_debris(mounted):
    """Thirty syncs of 100 scattered pages each: the file holds every
    round's bytes, and the map is back to the areas it started with
    (a write-protect per dirty page splits the map; a sync must merge
    it again, or a long-running program runs out of map areas)."""
    npages, k, rounds = 1024, 100, 30
    f = mounted.mnt / "scatter"
    f.write_bytes(b"\0" * (npages * PAGE))
    out = child(f, "map rw 0 0", "vmas", f"scatter {npages} {k} {rounds}",
                "vmas", "unmap")
    before, after = int(out[1].split()[1]), int(out[3].split()[1])
    assert after == before, (before, after)
    want = bytearray(npages * PAGE)
    for rd in range(1, rounds + 1):
        for i in range(k):
            want[(rd * 7919 + i * 104729) % npages * PAGE + 64 * (i % 64)] = rd
    assert f.read_bytes() == want


def test_stores_racing_syncs_are_kept(mounted):
    """Two threads store to random words while a third syncs over and
    over: after a last sync the file holds each word's last store, so
    no store was lost to a sync that write-protected or dropped its
    page."""
    f = mounted.mnt / "race"
    f.write_bytes(b"\0" * (64 * PAGE))
    out = child(f, "map rw 0 0", "race 64 1500", "unmap")
    assert out[1] == "ok same"


def test_holes_and_growth(mounted):
    f = mounted.mnt / "sparse"
    with open(f, "wb") as fh:
        fh.truncate(10 * PAGE)          # all holes
    child(f, "map rw 0 0", f"store {5 * PAGE} 7a7a", "sync", "unmap")
    got = f.read_bytes()
    assert got[5 * PAGE:5 * PAGE + 2] == b"zz" and got.count(0) == len(got) - 2
    # A read-write map past the end extends the file.
    child(f, f"map rw 0 {16 * PAGE}", f"store {15 * PAGE} 41", "sync", "unmap")
    assert os.path.getsize(f) == 16 * PAGE
    assert f.read_bytes()[15 * PAGE] == 0x41


def test_unsynced_stores_discarded_by_unmap(mounted):
    f = mounted.mnt / "discard"
    f.write_bytes(b"\0" * (4 * PAGE))
    child(f, "map rw 0 0", "store 0 4142", "sync", "store 0 5858",
          f"store {PAGE} 5858", "unmap")
    got = f.read_bytes()
    assert got[:2] == b"AB" and got[PAGE:PAGE + 2] == b"\0\0"
    # ...and by a killed program.
    child(f, "map rw 0 0", "store 0 5959", "exit")
    assert f.read_bytes()[:2] == b"AB"


SHIM_PROG = r"""
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 8192, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m[0:5] = b"synced"[:5]
m.flush()                      # msync: the sync point
m[4096:4101] = b"unmap"        # never msync'd: munmap commits it
m.close()
"""


def test_shim_munmap_commits(mounted):
    f = mounted.mnt / "shim"
    f.write_bytes(b"\0" * (2 * PAGE))
    env = dict(os.environ, LD_PRELOAD=str(SHIM))
    subprocess.run(["python3", "-c", SHIM_PROG, str(f)], env=env, check=True,
                   timeout=60)
    got = f.read_bytes()
    assert got[:5] == b"synce" and got[PAGE:PAGE + 5] == b"unmap"


def test_shim_leaves_other_maps_alone(mounted, tmp_path):
    other = tmp_path / "plain"
    other.write_bytes(b"\0" * PAGE)
    prog = ("import mmap,os,sys; fd=os.open(sys.argv[1],os.O_RDWR); "
            "m=mmap.mmap(fd,4096); m[0:3]=b'abc'; m.close()")
    env = dict(os.environ, LD_PRELOAD=str(SHIM))
    subprocess.run(["python3", "-c", prog, str(other)], env=env, check=True)
    assert other.read_bytes()[:3] == b"abc"


def test_single_writer(mounted):
    f = mounted.mnt / "one"
    f.write_bytes(b"\0" * (8 * PAGE))
    h = Holder(f)
    try:
        assert h.do("map rw 0 0").startswith("ok")
        out = child(f, "map rw 0 0", check=False)
        assert out[0].split()[:2] == ["err", "16"]          # EBUSY
        assert child(f, "map ro 0 0", "read 0 4")[1] == "ok 00000000"
        with pytest.raises(OSError) as e:
            with open(f, "r+b") as fh:
                fh.write(b"x")
                fh.flush()
        assert e.value.errno == 26                          # ETXTBSY
        with pytest.raises(OSError) as e:
            os.truncate(f, PAGE)
        assert e.value.errno == 26
        assert f.read_bytes() == b"\0" * (8 * PAGE)         # reads allowed
        # unlink: the name goes, the space stays until unmap
        free0 = os.statvfs(mounted.mnt).f_bfree
        os.unlink(f)
        assert os.statvfs(mounted.mnt).f_bfree == free0
        assert h.do("store 0 41") == "ok" and h.do("sync") == "ok"
        assert h.do("unmap") == "ok"
        # The daemon frees the unlinked file when it drops the map,
        # which may come just after the reply: wait for it, bounded.
        for _ in range(100):
            if os.statvfs(mounted.mnt).f_bfree > free0:
                break
            time.sleep(0.05)
        assert os.statvfs(mounted.mnt).f_bfree > free0
    finally:
        h.close()
    g = mounted.mnt / "two"
    g.write_bytes(b"\0" * PAGE)
    child(g, "map rw 0 0", "store 0 41", "sync", "unmap")
    with open(g, "r+b") as fh:                              # writable again
        fh.write(b"B")
    assert g.read_bytes()[:1] == b"B"


def test_guard_pages_and_readonly(mounted):
    f = mounted.mnt / "guard"
    f.write_bytes(b"\0" * (2 * PAGE))
    out = child(f, "map rw 0 0", "segv -1", f"segv {2 * PAGE}", "segv 0")
    assert out[1:] == ["ok 11", "ok 11", "ok 0"]
    out = child(f, "map ro 0 0", "segv 0", "sync", check=False)
    assert out[1] == "ok 11"
    assert out[2].split()[:2] == ["err", "9"]               # EBADF


def test_permissions(volume_factory):
    """Permission is the kernel's, decided when the descriptor is opened:
    the daemon takes the descriptor's open mode (a descriptor is a
    capability, as for write()), not the credentials of whoever holds it
    (test_libcommit_boundary.py has the unprivileged user's view)."""
    v = volume_factory()
    v.mkfs()
    v.mount("allow_other")
    f = v.mnt / "perm"
    f.write_bytes(b"\0" * PAGE)
    os.chmod(f, 0o644)      # nobody may read it (and its socket xattr)
    nobody = 65534
    # Opened by root read-write, handed to nobody, who may not open it
    # read-write itself: the map is allowed.
    out = child(f, "open rw", f"setuid {nobody}", "mapfd rw 0 0",
                "store 0 41", "sync", "unmap")
    assert f.read_bytes()[:1] == b"A"
    # A read-only descriptor never gets a read-write map.
    out = child(f, "open ro", "mapfd rw 0 0", check=False)
    assert out[1].split()[:2] == ["err", "9"]


def test_not_daxguard(tmp_path):
    f = tmp_path / "x"
    f.write_bytes(b"\0" * PAGE)
    out = child(f, "map rw 0 0", check=False)
    assert out[0].split()[:2] == ["err", str(95)]           # ENOTSUP


def test_map_record_cleared_after_crash(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount()
    f = v.mnt / "crash"
    f.write_bytes(b"\0" * (4 * PAGE))
    h = Holder(f)
    try:
        assert h.do("map rw 0 0").startswith("ok")
        assert h.do("store 0 43") == "ok" and h.do("sync") == "ok"
        v.kill9()
    finally:
        h.close()
    v.mount()
    assert "was open at a crash" in v.read_log()
    assert f.read_bytes()[:1] == b"C"
    child(f, "map rw 0 0", "unmap")                         # not busy


def corrupt_dev(dev_path, devoff, n=16):
    with open(dev_path, "r+b") as fh:
        fh.seek(devoff)
        old = fh.read(n)
        fh.seek(devoff)
        fh.write(bytes(b ^ 0x5A for b in old))


def test_corruption_verify_and_repair(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount()
    v.expect_log(r'"fault":"(detected|repaired)"|line checksum')
    f = v.mnt / "bad"
    good = os.urandom(8 * PAGE)
    f.write_bytes(good)
    h = Holder(f)
    try:
        assert h.do("map rw 0 0").startswith("ok")
        assert h.do(f"verify 0 {8 * PAGE}") == "ok 0 0"
        _, dev, devoff, path = h.do(f"locate {3 * PAGE + 256}").split()
        corrupt_dev(path, int(devoff))
        out = h.do(f"verify 0 {8 * PAGE}").split()
        assert out[0] == "ok" and int(out[1]) >= 1
        assert int(out[2]) == 3 * PAGE + 256
        # The next sync repairs the page from parity before applying a
        # store to it; the corruption is not folded into parity.
        assert h.do(f"store {3 * PAGE} 4444") == "ok"
        assert h.do("sync") == "ok"
        assert h.do(f"verify 0 {8 * PAGE}") == "ok 0 0"
        assert h.do("unmap") == "ok"
    finally:
        h.close()
    want = bytearray(good)
    want[3 * PAGE:3 * PAGE + 2] = b"DD"
    assert f.read_bytes() == bytes(want)
    v.umount()
    if FSCK.exists():
        p = run([FSCK, "-n", "-f", *v.devs], check=False)
        assert p.returncode == 0, p.stdout + p.stderr


def test_verify_without_redundancy(volume_factory):
    v = volume_factory(redundancy="none")
    v.mkfs()
    v.mount()
    f = v.mnt / "nr"
    f.write_bytes(b"\0" * PAGE)
    out = child(f, "map rw 0 0", "store 0 41", "sync", "verify 0 4096",
                check=False)
    assert out[2] == "ok" and out[3].split()[:2] == ["err", "95"]
    assert f.read_bytes()[:1] == b"A"


def commit_socket(path):
    return os.getxattr(path, "user.daxguard.commit").decode()


def hdr(typ, length, seq=1, magic=0x4d434744, version=2):
    return struct.pack("<IHHII", magic, version, typ, length, seq)


def test_hostile_messages(mounted):
    f = mounted.mnt / "hostile"
    f.write_bytes(b"\0" * (4 * PAGE))
    sock = commit_socket(f)
    rnd = __import__("random").Random(6)
    cases = [b"", b"\0" * 7, b"garbage" * 10, hdr(1, 0), hdr(1, 24, magic=1),
             hdr(1, 24, version=9), hdr(99, 0), hdr(3, 0xffffffff),
             hdr(1, 24) + b"\xff" * 24,                     # map, no fd
             hdr(3, 8) + struct.pack("<II", 1, 0),          # commit, no map
             hdr(3, 24) + struct.pack("<IIQII", 1, 0, 0, 64, 0),
             hdr(4, 16) + struct.pack("<QQ", 2**63, 2**63),
             hdr(6, 16) + b"\0" * 16, hdr(2, 40) + b"\0" * 40,
             hdr(5, 3) + b"abc", hdr(3, 100)]                # truncated
    for _ in range(300):
        base = bytearray(rnd.choice(cases[3:]))
        for _ in range(rnd.randint(1, 6)):
            if base:
                base[rnd.randrange(len(base))] = rnd.randrange(256)
        cases.append(bytes(base[:rnd.randint(0, len(base))]))
    for c in cases:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(sock)
        try:
            s.sendall(c)
            s.shutdown(socket.SHUT_WR)
            while s.recv(4096):
                pass
        except OSError:
            pass
        s.close()
    # Still serving, and nothing was written.
    assert f.read_bytes() == b"\0" * (4 * PAGE)
    child(f, "map rw 0 0", "store 0 41", "sync", "unmap")
    assert f.read_bytes()[:1] == b"A"


FIO_JOB = ["--rw=randwrite", "--bs=4k", "--size=8M", "--verify=crc32c",
           "--output-format=terse", "--randseed=6"]


@pytest.mark.skipif(not shutil.which("fio"), reason="fio not installed")
@pytest.mark.parametrize("engine", ["mmap", "libpmem"])
def test_fio_through_shim(mounted, engine):
    f = mounted.mnt / f"fio-{engine}"
    env = dict(os.environ, LD_PRELOAD=str(SHIM), PMEM_IS_PMEM_FORCE="1")
    p = subprocess.run(["fio", "--name=j", f"--filename={f}",
                        f"--ioengine={engine}", "--do_verify=1", *FIO_JOB],
                       env=env, capture_output=True, text=True, timeout=300,
                       cwd=mounted.mnt.parent)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.split(";")[4] == "0", p.stdout      # fio error field
    # Verify again without the shim: the bytes are on the media.
    p = subprocess.run(["fio", "--name=j", f"--filename={f}",
                        "--ioengine=psync", "--verify_only", *FIO_JOB],
                       capture_output=True, text=True, timeout=300,
                       cwd=mounted.mnt.parent)
    assert p.returncode == 0 and p.stdout.split(";")[4] == "0", \
        p.stdout + p.stderr
