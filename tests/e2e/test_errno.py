# SPDX-License-Identifier: MIT
"""What applications see when a page cannot be read: EIO, never EUCLEAN
("Structure needs cleaning"), from every operation that reaches it, since
every FUSE reply goes through one error translator (fs/daemon/ops.c);
operations that do not need the page still work. And a write by another
user that must drop setuid does it in the write's own transaction: when
the write fails, the file keeps its mode."""
import ctypes
import errno
import os
import stat
import subprocess

import pytest

from dgfault import inject

NOBODY = 65534
LIBC = ctypes.CDLL(None, use_errno=True)


def expect_errno(fn, *args, code=errno.EIO):
    with pytest.raises(OSError) as e:
        fn(*args)
    assert e.value.errno == code, e.value


def two_faults(v, target, path=None):
    """Zero two pages of one parity row, the first one of target (of
    path's file): more than parity 1 covers, so that page is lost."""
    extra = ["--count", "2", "--same-row"]
    if path:
        extra += ["--file", path]
    rep, _ = inject(v.devs, "zero", target, seed=7, extra=extra)
    assert rep["changes"][0]["structure"] == target, rep
    return rep


def test_unreadable_xattr_page_gives_eio(volume_factory):
    v = volume_factory()
    # No metadata zone: in one, the xattr page's ditto copy would save it.
    v.mkfs("--meta-size", "none")
    v.mount()
    f = v.mnt / "f"
    f.write_bytes(b"data")
    os.setxattr(f, "user.a", b"1")
    v.umount()
    two_faults(v, "xattr")
    v.expect_log(r"fault|read error")
    v.mount()
    expect_errno(os.getxattr, f, "user.a")
    expect_errno(os.listxattr, f)
    expect_errno(os.setxattr, f, "user.b", b"2")
    expect_errno(os.removexattr, f, "user.a")
    # What does not read the page works: the data, the name, the inode
    # (its xattr page is freed without being read).
    assert f.read_bytes() == b"data"
    os.rename(f, v.mnt / "g")
    fd = os.open(v.mnt / "g", os.O_RDWR)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.unlink(v.mnt / "g")
    assert not (v.mnt / "g").exists()


def test_unparsable_xattr_page_gives_eio_not_euclean(volume_factory):
    """A page that verifies but whose records make no sense (a logical
    fault: daxguard-inject writes it through the engine) is EUCLEAN
    inside the engine; applications see EIO, from every xattr call, and
    from a write by another user, which must read the page to drop the
    file's capabilities."""
    v = volume_factory()
    v.mkfs()
    v.mount("allow_other")
    for d in v.mnt.parents:            # another user reaches the mount
        if str(d).startswith("/tmp/pytest-of-"):
            os.chmod(d, 0o755)
    f = v.mnt / "f"
    f.write_bytes(b"data")
    os.setxattr(f, "user.a", b"1")
    os.chmod(f, 0o666)
    v.umount()
    rep, _ = inject(v.devs, "logical", "xattr", extra=["--file", "/f"])
    assert rep["kind"] == "xattr-garbage", rep
    v.expect_log(r"corrupt .*xattr page|filesystem update failed|"
                 r"refusing further changes")
    v.mount("allow_other")
    expect_errno(os.getxattr, f, "user.a")
    expect_errno(os.listxattr, f)
    expect_errno(os.setxattr, f, "user.b", b"2")
    expect_errno(os.removexattr, f, "user.a")
    p = run_as(NOBODY, ["dd", "if=/dev/zero", f"of={f}", "bs=1", "count=1",
                        "conv=notrunc", "status=none"])
    assert p.returncode != 0 and "Input/output error" in p.stderr, p
    assert f.read_bytes() == b"data"


def test_unreadable_data_page_gives_eio(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount()
    f = v.mnt / "f"
    f.write_bytes(os.urandom(4 * 4096))
    v.umount()
    rep = two_faults(v, "data", "/f")
    v.expect_log(r"fault|read error|refusing further changes")
    v.mount()
    expect_errno(f.read_bytes)
    # A byte written into a page needs the old page: the lost one gives
    # EIO, the pages before it take the byte.
    lost = None
    with open(f, "r+b", buffering=0) as fh:
        for p in range(4):
            try:
                os.pwrite(fh.fileno(), b"x", p * 4096 + 100)
            except OSError as e:
                assert e.errno == errno.EIO, e
                lost = p
                break
    assert lost is not None, rep
    # Punching part of it out and cutting the file inside it need it too.
    # (A failed update stops all changes until remount: fs.h.)
    for op in (lambda fd: fallocate_punch(fd, lost * 4096 + 200, 100),
               lambda fd: os.ftruncate(fd, lost * 4096 + 300)):
        v.remount()
        fd = os.open(f, os.O_RDWR)
        try:
            expect_errno(op, fd)
        finally:
            os.close(fd)
    # What does not read the page works.
    v.remount()
    fd = os.open(f, os.O_RDWR)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(f, v.mnt / "g")
    os.unlink(v.mnt / "g")
    assert os.listdir(v.mnt) == []


def fallocate_punch(fd, off, length):
    """FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE (the os module has
    posix_fallocate only)."""
    if LIBC.fallocate(fd, 0x02 | 0x01, ctypes.c_long(off),
                      ctypes.c_long(length)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def run_as(uid, cmd):
    def drop():
        os.setgid(uid)
        os.setuid(uid)
    return subprocess.run(cmd, preexec_fn=drop, capture_output=True,
                          text=True)


def test_failed_unprivileged_write_keeps_setuid(volume_factory):
    """The write cannot read the page it changes (EIO): setuid stays,
    since it is dropped only with the bytes written (one transaction)."""
    v = volume_factory()
    v.mkfs()
    v.mount("allow_other")
    for d in v.mnt.parents:            # another user reaches the mount
        if str(d).startswith("/tmp/pytest-of-"):
            os.chmod(d, 0o755)
    f = v.mnt / "prog"
    f.write_bytes(os.urandom(4096))
    os.chmod(v.mnt, 0o777)
    os.chown(f, NOBODY, NOBODY)
    os.chmod(f, 0o4755)
    v.umount()
    two_faults(v, "data", "/prog")
    v.expect_log(r"fault|read error|refusing further changes")
    v.mount("allow_other")
    p = run_as(NOBODY, ["dd", "if=/dev/zero", f"of={f}", "bs=1", "count=1",
                        "seek=10", "conv=notrunc", "status=none"])
    assert p.returncode != 0 and "Input/output error" in p.stderr, p
    # On the media, where a crash or remount finds it (in core, a failed
    # update leaves the filesystem refusing changes until remount).
    v.remount("allow_other")
    assert stat.S_IMODE(f.stat().st_mode) == 0o4755
