# SPDX-License-Identifier: MIT
"""libcommit's trust boundary (issue #19): a map gives no user more than
the filesystem's permissions give. The daemon passes no descriptors; a
client that cannot open the devices itself maps the file through the
mount; permission decisions are the kernel's, at open."""
import json
import os
import socket
import struct
import subprocess
import sys

import pytest

from conftest import BUILD
from test_libcommit import CHILD, PAGE, SHIM, commit_socket, hdr

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     "commit_probe.py")
LIB = BUILD / "libcommit" / "libcommit.so"
NOBODY = 65534
EACCES, EBADF = 13, 9


def as_nobody(cmd):
    """Run cmd as nobody:nogroup with no supplementary groups, from cwd
    (the mount: the test's temporary directory is root's alone, and a
    relative path needs search permission on the mount only)."""
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
            "--clear-groups", "--", *cmd]


def run_nobody(cmd, cwd, env=None, check=True):
    p = subprocess.run(as_nobody(cmd), cwd=cwd, env=env,
                       stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=300)
    if check:
        assert p.returncode == 0, (cmd, p.stdout, p.stderr)
    return p


@pytest.fixture
def shared(volume_factory):
    """A volume others can reach (allow_other) whose images only root
    may read, with a file anyone may read and a secret only root may."""
    v = volume_factory()
    v.mkfs()
    for d in v.devs:
        os.chmod(d, 0o600)
    v.mount("allow_other")
    os.chmod(v.mnt, 0o755)
    own, secret = os.urandom(16), os.urandom(16)
    pub = v.mnt / "public"
    pub.write_bytes((own * (PAGE // 16)) * 8)
    os.chmod(pub, 0o644)
    sec = v.mnt / "secret"
    sec.write_bytes((secret * (PAGE // 16)) * 64)
    os.chmod(sec, 0o600)
    v.own, v.secret = own, secret
    # The secret is on the media, and root's probe can see it there.
    os.sync()
    assert any(secret in d.read_bytes() for d in v.devs)
    return v


def dev_ids(v):
    return {(os.stat(d).st_dev, os.stat(d).st_ino) for d in v.devs}


def probe(v, mode):
    env = dict(os.environ)
    if mode == "shim":
        env["LD_PRELOAD"] = str(SHIM)
    p = run_nobody([sys.executable, PROBE, mode, str(LIB), "public",
                    v.own.hex(), v.secret.hex()], cwd=v.mnt, env=env)
    return json.loads(p.stdout.splitlines()[-1])


@pytest.mark.parametrize("mode", ["lib", "shim"])
def test_reads_nothing_outside_its_file(shared, mode):
    """nobody may read 'public' only. It maps it (libcommit, or the shim)
    and then reads every byte of every descriptor it holds with pread and
    mmap: its own file's bytes are there, the secret's never, and none
    of its descriptors is a device."""
    r = probe(shared, mode)
    assert r["euid"] == NOBODY
    assert r["map"] == 0 and r["content_own"] and not r["content_secret"], r
    assert r["map_rdwr"] == -EACCES, r          # no write permission
    assert r["sockets"] >= 1, r                 # libcommit, not the kernel
    if mode == "lib":
        assert r["direct"] == 0, r
        assert r["map_direct"] == -EACCES, r
        assert "cannot open device '/dev/shm/" in r["map_direct_msg"], r
    devs = dev_ids(shared)
    for f in r["fds"]:
        assert not f["found_secret"], f
        assert tuple(f.get("dev_ino", ())) not in devs, f
    # The probe works: it did find its own file through a descriptor.
    assert any(f["found_own"] for f in r["fds"]), r["fds"]


def test_devices_readable_means_direct(shared):
    """A user who may read the devices anyway gets a direct map (loads
    from the media); one who may not gets a map through the mount."""
    r = probe(shared, "lib")
    assert r["direct"] == 0
    for d in shared.devs:
        os.chmod(d, 0o644)
    r = probe(shared, "lib")
    assert r["map_direct"] == 0 and r["direct"] == 1, r


def test_map_through_mount_round_trip(shared):
    """A map through the mount works like a direct one: stores, sync,
    growth past the end, the bytes on the media and through read()."""
    f = shared.mnt / "nb"
    f.write_bytes(b"\0" * (4 * PAGE))
    os.chown(f, NOBODY, NOBODY)
    data = os.urandom(PAGE + 100)
    p = run_nobody([str(CHILD), "nb", "map rw 0 0", "direct",
                    f"store 100 {data.hex()}", "sync", "read 100 8",
                    f"unmap", f"map rw 0 {512 * PAGE}", "direct",
                    f"store {7 * PAGE} 4142", "sync",
                    # 200 scattered pages (past the list, were escalation
                    # on: dirty.c ESCALATE_ON)
                    "stride 200 2 5", "sync", "overflows", "unmap"],
                   cwd=shared.mnt)
    lines = p.stdout.splitlines()
    assert lines[1] == "ok 0", lines                # not direct
    assert lines[4] == "ok " + data[:8].hex()
    assert lines[12].split()[0] == "ok", lines
    got = f.read_bytes()
    assert got[100:100 + len(data)] == data
    assert len(got) == 512 * PAGE and got[7 * PAGE:7 * PAGE + 2] == b"AB"
    for i in range(200):
        assert got[2 * i * PAGE + (i % 64) * 64] == 5, i


def test_readonly_descriptor_cannot_commit(shared):
    """At the protocol level: a read-only descriptor gets no read-write
    map and a read-only map takes no commit; an O_PATH descriptor (which
    needs no permission at all) gets no map."""
    f = shared.mnt / "public"
    before = f.read_bytes()

    def map_req(fd, flags):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(commit_socket(f))
        body = struct.pack("<QQII", 0, 0, flags, 0)
        socket.send_fds(s, [hdr(1, len(body)) + body], [fd])
        h = s.recv(16)
        typ, n = struct.unpack("<HI", h[6:12])
        rep = b""
        while len(rep) < n:
            rep += s.recv(n - len(rep))
        return s, typ, rep

    ro = os.open(f, os.O_RDONLY)
    opath = os.open(shared.mnt / "secret", os.O_PATH)
    try:
        for fd, flags in ((ro, 1), (opath, 0), (opath, 1)):
            s, typ, rep = map_req(fd, flags)
            s.close()
            assert typ == 6 and struct.unpack("<i", rep[:4])[0] == -EBADF
        s, typ, rep = map_req(ro, 0)
        assert typ == 2, rep                           # MAP_REP
        body = struct.pack("<II", 1, 0) + struct.pack("<QII", 0, 64, 0)
        s.sendall(hdr(3, len(body) + 64, seq=2) + body + b"\xee" * 64)
        h = s.recv(16)
        st = s.recv(16)
        s.close()
        assert struct.unpack("<i", st[:4])[0] == -EBADF
    finally:
        os.close(ro)
        os.close(opath)
    assert f.read_bytes() == before


def test_revoked_after_map(shared):
    """Permission is checked when the file is opened, as for read(),
    write() and kernel mmap: a map made while the user had write access
    keeps syncing after chmod/chown; a new map is refused."""
    f = shared.mnt / "rev"
    f.write_bytes(b"\0" * (2 * PAGE))
    os.chmod(f, 0o666)
    h = subprocess.Popen(as_nobody([str(CHILD), "rev"]),
                         cwd=shared.mnt, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, bufsize=1)

    def do(cmd):
        h.stdin.write(cmd + "\n")
        h.stdin.flush()
        return h.stdout.readline().strip()

    try:
        assert do("map rw 0 0").startswith("ok")
        assert do("store 0 41") == "ok" and do("sync") == "ok"
        os.chmod(f, 0o600)
        assert do("store 1 42") == "ok" and do("sync") == "ok"
        assert f.read_bytes()[:2] == b"AB"
        p = run_nobody([str(CHILD), "rev", "map ro 0 0"], cwd=shared.mnt,
                       check=False)
        assert p.stdout.split()[:2] == ["err", str(EACCES)], p.stdout
    finally:
        h.stdin.close()
        h.wait(timeout=20)


def test_mkfs_creates_private_images(volume_factory):
    """An image anyone may read would open every file of the volume to
    them (and make every libcommit map direct): mkfs creates 0600."""
    v = volume_factory()
    v.mkfs()
    for d in v.devs:
        assert os.stat(d).st_mode & 0o777 == 0o600, d


SHIM_WRITER = r'''
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
mm = mmap.mmap(fd, 64 * 4096, flags=mmap.MAP_SHARED,
               prot=mmap.PROT_READ | mmap.PROT_WRITE)
for i in range(0, 64, 3):
    mm[i * 4096 + 7] = 0x5a
mm.flush()
mm.close()
'''


def test_shim_writer_through_mount(shared):
    """An unprivileged writer through the shim (a map through the mount,
    the images being root's): msync commits every store."""
    f = shared.mnt / "shimw"
    f.write_bytes(b"\0" * (64 * PAGE))
    os.chmod(f, 0o666)
    env = dict(os.environ, LD_PRELOAD=str(SHIM))
    run_nobody([sys.executable, "-c", SHIM_WRITER, "shimw"], cwd=shared.mnt,
               env=env)
    got = f.read_bytes()
    for i in range(64):
        assert got[i * PAGE + 7] == (0x5a if i % 3 == 0 else 0), i
    assert got.count(0) == len(got) - 22
