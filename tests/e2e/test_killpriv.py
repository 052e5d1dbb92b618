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


def test_unprivileged_write_clears_suid_sgid(volume_factory):
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
