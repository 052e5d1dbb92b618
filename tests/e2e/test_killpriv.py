# SPDX-License-Identifier: MIT
"""A write by an unprivileged user clears setuid/setgid (the daemon does
what the kernel's file_remove_privs() would: FUSE_CAP_HANDLE_KILLPRIV)."""
import os
import stat
import subprocess


def write_as(uid, path):
    def drop():
        os.setgid(uid)
        os.setuid(uid)
    subprocess.run(["sh", "-c", f"printf x >> '{path}'"], check=True,
                   preexec_fn=drop)


def test_unprivileged_write_clears_suid_sgid(mounted):
    f = mounted.mnt / "prog"
    f.write_bytes(b"#!/bin/sh\n")
    os.chown(mounted.mnt, 0, 0)
    os.chmod(mounted.mnt, 0o777)
    os.chown(f, 65534, 65534)
    os.chmod(f, 0o6775)
    write_as(65534, f)
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
