# SPDX-License-Identifier: MIT
"""Writes, truncates and chowns clear setuid/setgid and capabilities: the
daemon does what the kernel's file_remove_privs() would, since it asks
for FUSE_HANDLE_KILLPRIV_V2 (fs/daemon/killpriv_v2.c)."""
import os
import stat
import subprocess

NOBODY = 65534


def run_as(uid, cmd):
    def drop():
        os.setgid(uid)
        os.setuid(uid)
    subprocess.run(cmd, check=True, preexec_fn=drop)


def nobodys_program(volume_factory, mode):
    """A file of NOBODY's with mode, on a mount other users can reach."""
    mounted = volume_factory()
    mounted.mkfs()
    # Another user reaches the mount only with allow_other and through
    # directories it may search (pytest's are 0700).
    for d in mounted.mnt.parents:
        if str(d).startswith("/tmp/pytest-of-"):
            os.chmod(d, 0o755)
    mounted.mount("allow_other")
    f = mounted.mnt / "prog"
    f.write_bytes(b"#!/bin/sh\n")
    os.chmod(mounted.mnt, 0o777)
    os.chown(f, NOBODY, NOBODY)
    os.chmod(f, mode)
    return f


def test_unprivileged_write_clears_suid_sgid(volume_factory):
    f = nobodys_program(volume_factory, 0o6775)
    run_as(NOBODY, ["sh", "-c", f"printf x >> '{f}'"])
    mode = f.stat().st_mode
    assert not mode & stat.S_ISUID
    assert not mode & stat.S_ISGID          # group-executable: cleared too
    assert f.read_bytes() == b"#!/bin/sh\nx"


def test_root_write_keeps_suid(mounted):
    f = mounted.mnt / "prog"
    f.write_bytes(b"a")
    os.chmod(f, 0o4755)
    with open(f, "ab") as fh:
        fh.write(b"b")
    assert f.stat().st_mode & stat.S_ISUID


def test_unprivileged_truncate_clears_suid(volume_factory):
    f = nobodys_program(volume_factory, 0o4775)
    run_as(NOBODY, ["truncate", "-s", "1", str(f)])
    assert not f.stat().st_mode & stat.S_ISUID
    assert f.read_bytes() == b"#"


def test_chown_clears_suid_and_caps(mounted):
    f = mounted.mnt / "prog"
    f.write_bytes(b"a")
    os.chmod(f, 0o6755)
    os.setxattr(f, "security.capability",
                bytes.fromhex("0100000201000000000000000000000000000000"))
    os.chown(f, 1000, 1000)
    mode = f.stat().st_mode
    assert not mode & (stat.S_ISUID | stat.S_ISGID)
    assert "security.capability" not in os.listxattr(f)
    d = mounted.mnt / "dir"
    d.mkdir()
    os.chmod(d, 0o2775)
    os.chown(d, 1000, 1000)
    assert d.stat().st_mode & stat.S_ISGID    # directories keep setgid


def test_writes_do_not_ask_for_security_capability(volume_factory):
    """KILLPRIV_V2 lets the kernel stop asking before every write (a
    GETXATTR round trip each): the daemon sees a handful, not 200."""
    mounted = volume_factory()
    mounted.mkfs()
    mounted.expect_log(r"^\s+unique: \d+, error: ")   # libfuse's debug trace
    mounted.mount("debug")
    f = mounted.mnt / "data"
    with open(f, "wb") as fh:
        for _ in range(200):
            fh.write(b"x" * 4096)
            fh.flush()
    assert f.stat().st_size == 200 * 4096
    log = mounted.read_log()
    assert log.count("opcode: WRITE ") >= 200
    assert log.count("opcode: GETXATTR ") < 10
