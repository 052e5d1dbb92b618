# SPDX-License-Identifier: MIT
"""libcommit failure paths (issue #19): the media view that cannot be
mapped, the commit server that cannot start after the control server
did, and the commit server out of memory."""
import os
import resource
import socket
import struct
import subprocess

import pytest

from conftest import DAEMON, is_mounted
from test_libcommit import PAGE, child, commit_socket, hdr
from test_libcommit_robust import FAIL_SYSCALLS

ENOMEM = 12
ENOTCONN = 107


def test_media_view_cannot_be_mapped(mounted):
    """A read-write map whose shared view of the media cannot be mapped
    fails with the error, releases what it held (the daemon's map too:
    the next read-write map is not EBUSY) and changes nothing."""
    f = mounted.mnt / "view"
    f.write_bytes(b"\0" * (8 * PAGE))
    env = dict(os.environ, LD_PRELOAD=str(FAIL_SYSCALLS))
    out = child(f, "failmmapshared 1", "map rw 0 0", "map rw 0 0",
                "store 0 41", "sync", "unmap", check=False, env=env)
    assert out[1].split()[:2] == ["err", str(ENOMEM)], out
    assert "cannot map" in out[1], out
    assert out[2:] == [f"ok {8 * PAGE}", "ok", "ok", "ok"], out
    assert f.read_bytes()[:2] == b"A\0"


def test_commit_server_fails_after_control_server(volume_factory):
    """When the libcommit socket cannot be made after the control socket
    was, the daemon says so, removes the control socket, unmounts and
    exits non-zero."""
    v = volume_factory()
    v.mkfs()
    v.mount()
    (v.mnt / "f").write_bytes(b"x")
    # <dir>/<uuid>-<pid>.commit: the daemon's pid is the shell's that
    # execs it, so a directory can take the name first.
    first = commit_socket(v.mnt / "f")
    stem = first[:first.rindex("-")]
    v.umount()
    script = f'mkdir "{stem}-$$.commit" && exec "$@"'
    p = subprocess.Popen(["sh", "-c", script, "sh", str(DAEMON), v.devlist,
                          str(v.mnt), "-f"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    commit_path = f"{stem}-{p.pid}.commit"
    try:
        out, _ = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        subprocess.run(["fusermount3", "-u", "-z", str(v.mnt)],
                       capture_output=True)
        out, _ = p.communicate()
        pytest.fail("daemon served without its libcommit socket:\n" + out)
    finally:
        os.rmdir(commit_path)
    assert p.returncode != 0, out
    assert f"libcommit socket '{commit_path}'" in out, out
    assert not is_mounted(v.mnt)
    assert not os.path.exists(f"{stem}-{p.pid}.sock"), out
    # Nothing was harmed: the next mount serves libcommit.
    v.mount()
    child(v.mnt / "f", "map rw 0 0", "store 0 79", "sync", "unmap")
    assert (v.mnt / "f").read_bytes() == b"y"


def test_commit_server_out_of_memory(mounted):
    """A message whose buffer the daemon cannot allocate gets -ENOMEM
    and ends that connection only; the daemon serves on. (A body is
    read only on a map large enough to need it: without one the header
    alone gets -ENOTCONN, and nothing is allocated.)"""
    f = mounted.mnt / "oom"
    f.write_bytes(b"\0" * PAGE)
    big = mounted.mnt / "oom-big"
    with open(big, "wb") as fh:
        fh.truncate(128 << 20)
    pid = mounted.daemon.pid

    def status_of(s):
        rep = b""
        while len(rep) < 32:
            b = s.recv(32 - len(rep))
            assert b, rep
            rep += b
        return struct.unpack("<H", rep[6:8])[0], \
            struct.unpack("<i", rep[16:20])[0]

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(commit_socket(f))
    s.sendall(hdr(3, 150 << 20))
    assert status_of(s) == (6, -ENOTCONN)
    s.close()
    # A read-write map of 128 MiB allows a 150 MiB COMMIT body.
    fd = os.open(big, os.O_RDWR)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(commit_socket(big))
    body = struct.pack("<QQII", 0, 0, 1, 0)
    socket.send_fds(s, [hdr(1, len(body)) + body], [fd])
    os.close(fd)
    h = s.recv(16, socket.MSG_WAITALL)
    assert struct.unpack("<H", h[6:8])[0] == 2, h          # MAP_REP
    n = struct.unpack("<I", h[8:12])[0]
    assert len(s.recv(n, socket.MSG_WAITALL)) == n
    with open(f"/proc/{pid}/status") as st:
        vm = next(int(l.split()[1]) for l in st if l.startswith("VmSize:"))
    old = resource.prlimit(pid, resource.RLIMIT_AS)
    # Room for what the daemon does now, not for a 150 MiB buffer.
    resource.prlimit(pid, resource.RLIMIT_AS,
                     ((vm << 10) + (96 << 20), old[1]))
    try:
        s.sendall(hdr(3, 150 << 20))
        assert status_of(s) == (6, -ENOMEM)
        s.close()
        # Serving on, within the same limit.
        child(f, "map rw 0 0", "store 0 41", "sync", "unmap")
    finally:
        resource.prlimit(pid, resource.RLIMIT_AS, old)
    assert f.read_bytes()[:1] == b"A"
