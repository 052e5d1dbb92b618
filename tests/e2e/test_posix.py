# SPDX-License-Identifier: MIT
"""POSIX semantics of a mounted volume: every FUSE operation daxguard
implements, with its success and error cases, checked through the
kernel with Python's os functions (errno by errno).

The volume is mounted with -o timeout=0 so that stat() always reaches
the daemon: what is checked is what daxguard stores, not what the
kernel's attribute cache remembers."""
import ctypes
import errno
import os
import stat
import subprocess
import threading
import time

import pytest

PAGE = 4096
AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
FALLOC_FL_ZERO_RANGE = 0x10

libc = ctypes.CDLL(None, use_errno=True)
libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                           ctypes.c_char_p, ctypes.c_uint]
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                           ctypes.c_int64]


def renameat2(old, new, flags):
    if libc.renameat2(AT_FDCWD, os.fsencode(old), AT_FDCWD,
                      os.fsencode(new), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), str(old))


def fallocate(fd, mode, off, length):
    if libc.fallocate(fd, mode, off, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def err(eno, fn, *args, **kw):
    """Call fn and assert it fails with errno eno."""
    with pytest.raises(OSError) as ei:
        fn(*args, **kw)
    assert ei.value.errno == eno, (
        f"{fn.__name__}{args}: expected {errno.errorcode[eno]}, got "
        f"{errno.errorcode.get(ei.value.errno, ei.value.errno)}")


def pread_all(path, off=0, n=None):
    with open(path, "rb") as f:
        f.seek(off)
        return f.read() if n is None else f.read(n)


def wait_for(cond, timeout=5.0):
    """Poll cond() until true (the kernel sends RELEASE/FORGET late)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


@pytest.fixture
def vol(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount("timeout=0")
    return v


@pytest.fixture
def mnt(vol):
    return vol.mnt


# ---- lookup / getattr ------------------------------------------------------

def test_lookup_and_stat(mnt):
    st = os.stat(mnt)
    assert stat.S_ISDIR(st.st_mode) and st.st_nlink == 2
    assert st.st_ino == 1
    (mnt / "f").write_bytes(b"hello")
    st = os.stat(mnt / "f")
    assert stat.S_ISREG(st.st_mode)
    assert st.st_size == 5 and st.st_nlink == 1
    assert st.st_uid == os.getuid() and st.st_gid == os.getgid()
    assert st.st_blksize == PAGE and st.st_blocks == PAGE // 512
    assert st.st_ino not in (0, 1)
    err(errno.ENOENT, os.stat, mnt / "missing")
    err(errno.ENOENT, os.stat, mnt / "missing" / "x")
    err(errno.ENOTDIR, os.stat, mnt / "f" / "x")
    err(errno.ENOTDIR, os.listdir, mnt / "f")
    # Inode numbers are stable and distinct.
    (mnt / "g").write_bytes(b"")
    assert os.stat(mnt / "g").st_ino != os.stat(mnt / "f").st_ino
    assert os.stat(mnt / "f").st_ino == os.stat(mnt / "f").st_ino


# ---- setattr ---------------------------------------------------------------

def test_chmod(mnt):
    p = mnt / "f"
    p.write_bytes(b"x")
    ct0 = os.stat(p).st_ctime_ns
    time.sleep(0.01)
    for mode in (0o600, 0o640, 0o000, 0o4755, 0o2711, 0o1777, 0o777):
        os.chmod(p, mode)
        st = os.stat(p)
        assert stat.S_IMODE(st.st_mode) == mode
        assert stat.S_ISREG(st.st_mode)
    assert os.stat(p).st_ctime_ns > ct0
    os.mkdir(mnt / "d")
    os.chmod(mnt / "d", 0o700)
    st = os.stat(mnt / "d")
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
    err(errno.ENOENT, os.chmod, mnt / "missing", 0o644)


def test_chown(mnt):
    p = mnt / "f"
    p.write_bytes(b"x")
    os.chmod(p, 0o755)
    os.chown(p, 1234, 5678)
    st = os.stat(p)
    assert (st.st_uid, st.st_gid) == (1234, 5678)
    os.chown(p, -1, 42)
    st = os.stat(p)
    assert (st.st_uid, st.st_gid) == (1234, 42)
    os.chown(p, 7, -1)
    st = os.stat(p)
    assert (st.st_uid, st.st_gid) == (7, 42)
    # The type bits survive a chown.
    assert stat.S_ISREG(st.st_mode)
    os.symlink("f", mnt / "l")
    os.lchown(mnt / "l", 99, 98)
    lst = os.lstat(mnt / "l")
    assert (lst.st_uid, lst.st_gid) == (99, 98)
    assert (os.stat(p).st_uid, os.stat(p).st_gid) == (7, 42)
    err(errno.ENOENT, os.chown, mnt / "missing", 1, 1)


def test_utime_ns_precision(mnt):
    p = mnt / "f"
    p.write_bytes(b"x")
    a = 1_000_000_000 * 1_234_567_890 + 123_456_789
    m = 1_000_000_000 * 1_700_000_000 + 987_654_321
    os.utime(p, ns=(a, m))
    st = os.stat(p)
    assert st.st_atime_ns == a and st.st_mtime_ns == m
    # Only mtime (atime UTIME_OMIT) through os.utime with follow_symlinks.
    libc.utimensat.argtypes = [ctypes.c_int, ctypes.c_char_p,
                               ctypes.c_void_p, ctypes.c_int]

    class Timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]
    UTIME_OMIT = (1 << 30) - 2
    ts = (Timespec * 2)(Timespec(0, UTIME_OMIT), Timespec(5, 6))
    assert libc.utimensat(AT_FDCWD, os.fsencode(p), ts, 0) == 0
    st = os.stat(p)
    assert st.st_atime_ns == a and st.st_mtime_ns == 5_000_000_006
    # utime(None): now, for both.
    before = time.time_ns()
    os.utime(p)
    st = os.stat(p)
    assert before - 10**9 <= st.st_mtime_ns <= time.time_ns() + 10**9
    assert before - 10**9 <= st.st_atime_ns <= time.time_ns() + 10**9
    # Times on a directory and on a symlink itself.
    os.mkdir(mnt / "d")
    os.utime(mnt / "d", ns=(1, 2))
    st = os.stat(mnt / "d")
    assert (st.st_atime_ns, st.st_mtime_ns) == (1, 2)
    os.symlink("f", mnt / "l")
    os.utime(mnt / "l", ns=(3, 4), follow_symlinks=False)
    lst = os.lstat(mnt / "l")
    assert (lst.st_atime_ns, lst.st_mtime_ns) == (3, 4)
    err(errno.ENOENT, os.utime, mnt / "missing", ns=(1, 1))


def test_utime_before_1970(mnt):
    """Timestamps before the epoch keep a nanosecond part in [0, 1e9)."""
    p = mnt / "f"
    p.write_bytes(b"x")
    a = -1_500_000_000        # 1969-12-31 23:59:58.5
    m = -86_400 * 10**9 * 365 + 7
    os.utime(p, ns=(a, m))
    st = os.stat(p)
    assert st.st_atime_ns == a and st.st_mtime_ns == m


def test_mtime_ctime_follow_changes(mnt):
    p = mnt / "f"
    p.write_bytes(b"x")
    os.utime(p, ns=(10**9, 10**9))
    ct = os.stat(p).st_ctime_ns
    time.sleep(0.01)
    with open(p, "r+b") as f:
        f.write(b"y")
    st = os.stat(p)
    assert st.st_mtime_ns > 10**9 and st.st_ctime_ns > ct
    d0 = os.stat(mnt).st_mtime_ns
    time.sleep(0.01)
    (mnt / "g").write_bytes(b"")
    assert os.stat(mnt).st_mtime_ns > d0


# ---- truncate --------------------------------------------------------------

def test_truncate_down_and_up(mnt):
    p = mnt / "f"
    data = os.urandom(3 * PAGE + 123)
    p.write_bytes(data)
    os.truncate(p, 5000)
    assert os.stat(p).st_size == 5000
    assert p.read_bytes() == data[:5000]
    os.truncate(p, 20000)
    assert os.stat(p).st_size == 20000
    assert p.read_bytes() == data[:5000] + bytes(15000)
    # Shrink into the middle of a page, then grow: the gap reads zeros
    # (the tail of the kept page must have been zeroed).
    os.truncate(p, 3)
    os.truncate(p, 2 * PAGE)
    assert p.read_bytes() == data[:3] + bytes(2 * PAGE - 3)
    # Grow by writing past the end.
    with open(p, "r+b") as f:
        f.seek(4 * PAGE)
        f.write(b"end")
    assert p.read_bytes() == data[:3] + bytes(4 * PAGE - 3) + b"end"
    # ftruncate through an open descriptor.
    fd = os.open(p, os.O_RDWR)
    try:
        os.ftruncate(fd, 1)
        assert os.fstat(fd).st_size == 1
        assert os.pread(fd, 100, 0) == data[:1]
        os.ftruncate(fd, 0)
        assert os.pread(fd, 100, 0) == b""
    finally:
        os.close(fd)
    assert os.stat(p).st_size == 0 and os.stat(p).st_blocks == 0
    os.mkdir(mnt / "d")
    err(errno.EISDIR, os.truncate, mnt / "d", 0)
    err(errno.EINVAL, os.truncate, p, -1)
    err(errno.ENOENT, os.truncate, mnt / "missing", 0)


def test_truncate_frees_space(mnt):
    p = mnt / "f"
    p.write_bytes(b"z" * (1 << 20))
    assert os.stat(p).st_blocks >= (1 << 20) // 512
    os.truncate(p, PAGE)
    assert os.stat(p).st_blocks == PAGE // 512
    assert p.read_bytes() == b"z" * PAGE


def test_offsets_beyond_4GiB(mnt):
    p = mnt / "big"
    off = 5 << 30
    payload = os.urandom(3 * PAGE + 17)
    with open(p, "wb") as f:
        f.write(b"head")
        f.seek(off)
        f.write(payload)
    st = os.stat(p)
    assert st.st_size == off + len(payload)
    # Sparse: only the pages written are allocated.
    assert st.st_blocks <= 6 * PAGE // 512
    with open(p, "rb") as f:
        assert f.read(4) == b"head"
        f.seek(off)
        assert f.read() == payload
        f.seek((4 << 30) + 12345)
        assert f.read(PAGE) == bytes(PAGE)
        f.seek(off - 10)
        assert f.read(10 + len(payload)) == bytes(10) + payload
    os.truncate(p, (4 << 30) + 1)
    assert os.stat(p).st_size == (4 << 30) + 1
    assert os.stat(p).st_blocks == PAGE // 512
    os.truncate(p, 6 << 30)
    assert pread_all(p, off, PAGE) == bytes(PAGE)


# ---- create / open ---------------------------------------------------------

def test_create_and_open_flags(mnt):
    p = mnt / "f"
    fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640)
    os.write(fd, b"abc")
    os.close(fd)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640
    err(errno.EEXIST, os.open, p, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o600)   # exists: just open
    os.close(fd)
    assert p.read_bytes() == b"abc"
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640
    fd = os.open(p, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"def")
    os.close(fd)
    assert p.read_bytes() == b"abcdef"
    fd = os.open(p, os.O_WRONLY | os.O_TRUNC)
    assert os.fstat(fd).st_size == 0
    os.close(fd)
    assert p.read_bytes() == b""
    err(errno.ENOENT, os.open, mnt / "missing", os.O_RDONLY)
    err(errno.ENOENT, os.open, mnt / "nodir" / "f", os.O_CREAT | os.O_WRONLY)
    os.mkdir(mnt / "d")
    err(errno.EISDIR, os.open, mnt / "d", os.O_WRONLY)
    err(errno.EEXIST, os.open, mnt / "d", os.O_CREAT | os.O_EXCL)
    err(errno.ENOTDIR, os.open, p, os.O_RDONLY | os.O_DIRECTORY)
    err(errno.ENOTDIR, os.open, mnt / "f" / "x", os.O_CREAT | os.O_WRONLY)


def test_umask_and_create_mode(mnt):
    old = os.umask(0o027)
    try:
        fd = os.open(mnt / "f", os.O_CREAT | os.O_WRONLY, 0o777)
        os.close(fd)
        os.mkdir(mnt / "d", 0o777)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(mnt / "f").st_mode) == 0o750
    assert stat.S_IMODE(os.stat(mnt / "d").st_mode) == 0o750


# ---- read / write ----------------------------------------------------------

def test_read_write_sparse(mnt):
    p = mnt / "sparse"
    a, b = os.urandom(5000), os.urandom(PAGE)
    fd = os.open(p, os.O_CREAT | os.O_RDWR)
    try:
        assert os.pwrite(fd, a, (1 << 20) + 100) == len(a)
        assert os.pwrite(fd, b, 3 << 20) == len(b)
        size = (3 << 20) + PAGE
        assert os.fstat(fd).st_size == size
        data = os.pread(fd, size + 100, 0)
        assert len(data) == size
        assert data[:(1 << 20) + 100] == bytes((1 << 20) + 100)
        assert data[(1 << 20) + 100:(1 << 20) + 100 + 5000] == a
        assert data[(1 << 20) + 5100:3 << 20] == bytes((2 << 20) - 5100)
        assert data[3 << 20:] == b
        assert os.fstat(fd).st_blocks <= 4 * PAGE // 512
        assert os.pread(fd, 10, size) == b""          # at EOF
        assert os.pread(fd, 10, size + 10**6) == b""  # past EOF
        # Overwrite inside a hole-adjacent page: the rest of the page
        # keeps what it held.
        os.pwrite(fd, b"XY", (1 << 20) + 98)
        assert os.pread(fd, 8, (1 << 20) + 96) == b"\0\0XY" + a[:4]
    finally:
        os.close(fd)


def test_write_sizes_and_alignment(mnt):
    """Writes of odd sizes at odd offsets, larger than one request."""
    p = mnt / "f"
    model = bytearray()
    fd = os.open(p, os.O_CREAT | os.O_RDWR)
    try:
        for off, n in [(0, 1), (1, 4095), (4095, 2), (10000, 3 << 20),
                       (7, 1 << 20), ((5 << 20) - 1, 1), (300, 70000)]:
            buf = os.urandom(n)
            assert os.pwrite(fd, buf, off) == n
            if len(model) < off + n:
                model.extend(bytes(off + n - len(model)))
            model[off:off + n] = buf
        assert os.fstat(fd).st_size == len(model)
    finally:
        os.close(fd)
    assert p.read_bytes() == bytes(model)


def test_write_to_directory_and_readonly_fd(mnt):
    os.mkdir(mnt / "d")
    (mnt / "f").write_bytes(b"x")
    fd = os.open(mnt / "f", os.O_RDONLY)
    try:
        err(errno.EBADF, os.write, fd, b"y")
    finally:
        os.close(fd)
    fd = os.open(mnt / "d", os.O_RDONLY)
    try:
        err(errno.EISDIR, os.read, fd, 10)
    finally:
        os.close(fd)


# ---- fallocate -------------------------------------------------------------

def test_fallocate_default_mode(mnt):
    p = mnt / "f"
    fd = os.open(p, os.O_CREAT | os.O_RDWR)
    try:
        os.posix_fallocate(fd, 0, 1 << 20)
        st = os.fstat(fd)
        assert st.st_size == 1 << 20
        assert st.st_blocks >= (1 << 20) // 512
        assert os.pread(fd, 1 << 20, 0) == bytes(1 << 20)
        # Inside existing data: nothing changes.
        os.pwrite(fd, b"data", 5000)
        os.posix_fallocate(fd, 0, 8192)
        assert os.pread(fd, 4, 5000) == b"data"
        assert os.fstat(fd).st_size == 1 << 20
        # Past EOF at an unaligned end: size is off + len exactly.
        os.posix_fallocate(fd, (2 << 20) + 1, 10)
        assert os.fstat(fd).st_size == (2 << 20) + 11
        assert os.pread(fd, 1 << 20, 1 << 20) == bytes(1 << 20)
        # KEEP_SIZE allocates without growing the file.
        blocks = os.fstat(fd).st_blocks
        fallocate(fd, FALLOC_FL_KEEP_SIZE, 4 << 20, 1 << 20)
        st = os.fstat(fd)
        assert st.st_size == (2 << 20) + 11
        assert st.st_blocks >= blocks + (1 << 20) // 512
        assert os.pread(fd, 100, (2 << 20)) == bytes(11)
    finally:
        os.close(fd)


def test_fallocate_errors(mnt):
    p = mnt / "f"
    p.write_bytes(b"abc")
    fd = os.open(p, os.O_RDWR)
    try:
        # posix_fallocate reports errors as return values (EINVAL for len 0)
        with pytest.raises(OSError) as ei:
            os.posix_fallocate(fd, 0, 0)
        assert ei.value.errno == errno.EINVAL
        # PUNCH_HOLE needs KEEP_SIZE (as on every Linux filesystem), and
        # excludes ZERO_RANGE.
        err(errno.EOPNOTSUPP, fallocate, fd, FALLOC_FL_PUNCH_HOLE, 0, PAGE)
        err(errno.EOPNOTSUPP, fallocate, fd, FALLOC_FL_PUNCH_HOLE |
            FALLOC_FL_KEEP_SIZE | FALLOC_FL_ZERO_RANGE, 0, PAGE)
        assert os.pread(fd, 10, 0) == b"abc"
    finally:
        os.close(fd)
    fd = os.open(p, os.O_RDONLY)
    try:
        err(errno.EBADF, fallocate, fd, 0, 0, PAGE)
    finally:
        os.close(fd)


def test_punch_hole(mnt):
    p = mnt / "f"
    size = 64 * PAGE
    data = os.urandom(size)
    p.write_bytes(data)
    blocks0 = os.stat(p).st_blocks
    assert blocks0 >= size // 512
    off, ln = 3 * PAGE + 100, 10 * PAGE
    subprocess.run(["fallocate", "-p", "-o", str(off), "-l", str(ln),
                    str(p)], check=True)
    st = os.stat(p)
    assert st.st_size == size
    # Whole pages 4..12 are freed; the partial edges are zeroed.
    assert st.st_blocks <= blocks0 - 9 * PAGE // 512
    model = data[:off] + bytes(ln) + data[off + ln:]
    assert p.read_bytes() == model
    # A hole inside a single page: only those bytes zero.
    fd = os.open(p, os.O_RDWR)
    try:
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  40 * PAGE + 10, 20)
        model = model[:40 * PAGE + 10] + bytes(20) + model[40 * PAGE + 30:]
        # An aligned hole at the end and one past EOF.
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  60 * PAGE, 4 * PAGE)
        model = model[:60 * PAGE] + bytes(4 * PAGE)
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  100 * PAGE, 4 * PAGE)
        assert os.fstat(fd).st_size == size
    finally:
        os.close(fd)
    assert p.read_bytes() == model
    # Writing into the hole maps it again.
    with open(p, "r+b") as f:
        f.seek(5 * PAGE)
        f.write(b"Q" * PAGE)
    model = model[:5 * PAGE] + b"Q" * PAGE + model[6 * PAGE:]
    assert p.read_bytes() == model


def fsck_clean(vol):
    from conftest import FSCK
    vol.umount()
    r = subprocess.run([str(FSCK), "-n", "-f", *map(str, vol.devs)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    vol.mount("timeout=0")


def test_punch_hole_keeps_redundancy(vol, mnt):
    """Freed pages leave their rows' parity and checksums right: fsck
    finds nothing, and the bytes around the holes read back."""
    p = mnt / "f"
    data = os.urandom(300 * PAGE)
    p.write_bytes(data)
    model = bytearray(data)
    fd = os.open(p, os.O_RDWR)
    try:
        for off, ln in ((PAGE, 7 * PAGE), (20 * PAGE + 5, 50 * PAGE),
                        (299 * PAGE + 100, 5000)):
            fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      off, ln)
            end = min(off + ln, len(model))
            model[off:end] = bytes(end - off)
    finally:
        os.close(fd)
    fsck_clean(vol)
    assert p.read_bytes() == bytes(model)
    # The freed pages are reused by another file, fsck stays clean.
    q = mnt / "g"
    q.write_bytes(os.urandom(100 * PAGE))
    fsck_clean(vol)
    assert p.read_bytes() == bytes(model)


def test_zero_range(vol, mnt):
    p = mnt / "f"
    size = 64 * PAGE
    data = os.urandom(size)
    p.write_bytes(data)
    blocks0 = os.stat(p).st_blocks
    model = bytearray(data)
    fd = os.open(p, os.O_RDWR)
    try:
        # Unaligned edges inside data: those bytes zero, space kept.
        off, ln = 3 * PAGE + 100, 10 * PAGE
        fallocate(fd, FALLOC_FL_ZERO_RANGE, off, ln)
        model[off:off + ln] = bytes(ln)
        st = os.fstat(fd)
        assert st.st_size == size and st.st_blocks == blocks0
        # Inside one page.
        fallocate(fd, FALLOC_FL_ZERO_RANGE, 40 * PAGE + 10, 20)
        model[40 * PAGE + 10:40 * PAGE + 30] = bytes(20)
        # Over a hole: allocated, reads zeros.
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  50 * PAGE, 4 * PAGE)
        model[50 * PAGE:54 * PAGE] = bytes(4 * PAGE)
        assert os.fstat(fd).st_blocks == blocks0 - 4 * PAGE // 512
        fallocate(fd, FALLOC_FL_ZERO_RANGE, 49 * PAGE, 6 * PAGE)
        model[49 * PAGE:55 * PAGE] = bytes(6 * PAGE)
        assert os.fstat(fd).st_blocks == blocks0
        # Past EOF: the size grows to the end of the range...
        fallocate(fd, FALLOC_FL_ZERO_RANGE, size + 10, PAGE)
        model += bytes(PAGE + 10)
        assert os.fstat(fd).st_size == size + 10 + PAGE
        # ... unless KEEP_SIZE, which still allocates.
        blocks = os.fstat(fd).st_blocks
        fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
                  100 * PAGE, 2 * PAGE)
        st = os.fstat(fd)
        assert st.st_size == len(model)
        assert st.st_blocks == blocks + 2 * PAGE // 512
        assert os.pread(fd, len(model) + PAGE, 0) == bytes(model)
    finally:
        os.close(fd)
    fsck_clean(vol)
    assert p.read_bytes() == bytes(model)
    # Writing into a zeroed range works as anywhere else.
    with open(p, "r+b") as f:
        f.seek(5 * PAGE)
        f.write(b"Q" * PAGE)
    model[5 * PAGE:6 * PAGE] = b"Q" * PAGE
    assert p.read_bytes() == bytes(model)


# ---- flush / fsync / fsyncdir ----------------------------------------------

def test_flush_fsync_fsyncdir(mnt):
    fd = os.open(mnt / "f", os.O_CREAT | os.O_RDWR)
    os.write(fd, b"x" * 10000)
    os.fsync(fd)
    os.fdatasync(fd)
    fd2 = os.dup(fd)
    os.close(fd2)                 # flush without release
    os.write(fd, b"y")
    os.close(fd)                  # flush + release
    assert (mnt / "f").read_bytes() == b"x" * 10000 + b"y"
    os.mkdir(mnt / "d")
    dfd = os.open(mnt / "d", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    dfd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    os.sync()


# ---- mkdir / rmdir ---------------------------------------------------------

def test_mkdir_rmdir(mnt):
    os.mkdir(mnt / "d")
    assert os.stat(mnt).st_nlink == 3
    assert os.stat(mnt / "d").st_nlink == 2
    os.mkdir(mnt / "d" / "e")
    os.mkdir(mnt / "d" / "f")
    assert os.stat(mnt / "d").st_nlink == 4
    err(errno.EEXIST, os.mkdir, mnt / "d")
    (mnt / "file").write_bytes(b"")
    err(errno.EEXIST, os.mkdir, mnt / "file")
    err(errno.ENOENT, os.mkdir, mnt / "nope" / "x")
    err(errno.ENOTDIR, os.mkdir, mnt / "file" / "x")
    err(errno.ENOTEMPTY, os.rmdir, mnt / "d")
    err(errno.ENOENT, os.rmdir, mnt / "missing")
    err(errno.ENOTDIR, os.rmdir, mnt / "file")
    err(errno.EINVAL, os.rmdir, os.path.join(mnt, "d", "."))
    (mnt / "d" / "e" / "x").write_bytes(b"")
    err(errno.ENOTEMPTY, os.rmdir, mnt / "d" / "e")
    os.unlink(mnt / "d" / "e" / "x")
    os.rmdir(mnt / "d" / "e")
    os.rmdir(mnt / "d" / "f")
    assert os.stat(mnt / "d").st_nlink == 2
    os.rmdir(mnt / "d")
    assert os.stat(mnt).st_nlink == 2
    err(errno.ENOENT, os.stat, mnt / "d")
    # The name is free again.
    os.mkdir(mnt / "d")
    assert os.listdir(mnt / "d") == []


def test_deep_tree(mnt):
    d = mnt
    for i in range(40):
        d = d / f"level{i}"
        os.mkdir(d)
    (d / "leaf").write_bytes(b"deep")
    assert (d / "leaf").read_bytes() == b"deep"
    (d / "leaf").unlink()
    for i in range(40):
        os.rmdir(d)
        d = d.parent
    assert os.listdir(mnt) == []


# ---- readdir ---------------------------------------------------------------

class Dirent(ctypes.Structure):
    _fields_ = [("d_ino", ctypes.c_uint64), ("d_off", ctypes.c_int64),
                ("d_reclen", ctypes.c_ushort), ("d_type", ctypes.c_ubyte),
                ("d_name", ctypes.c_char * 256)]


libc.opendir.restype = ctypes.c_void_p
libc.opendir.argtypes = [ctypes.c_char_p]
libc.readdir.restype = ctypes.POINTER(Dirent)
libc.readdir.argtypes = [ctypes.c_void_p]
libc.closedir.argtypes = [ctypes.c_void_p]


def ls_a(path):
    """(name, d_ino) of every entry as readdir(3) returns it, '.' and
    '..' included, in directory order."""
    d = libc.opendir(os.fsencode(path))
    assert d, os.strerror(ctypes.get_errno())
    res = []
    try:
        while True:
            ent = libc.readdir(d)
            if not ent:
                break
            res.append((os.fsdecode(ent.contents.d_name),
                        ent.contents.d_ino))
    finally:
        libc.closedir(d)
    return res


def test_readdir(mnt):
    os.mkdir(mnt / "d")
    d = mnt / "d"
    names = set()
    for i in range(400):           # several dirent pages
        n = f"entry-{i:04d}-" + "n" * (i % 60)
        names.add(n)
        if i % 3 == 0:
            os.mkdir(d / n)
        elif i % 3 == 1:
            (d / n).write_bytes(b"")
        else:
            os.symlink("target", d / n)
    assert set(os.listdir(d)) == names
    assert len(os.listdir(d)) == len(names)
    for e in os.scandir(d):
        i = int(e.name.split("-")[1])
        kind = (e.is_dir(follow_symlinks=False),
                e.is_file(follow_symlinks=False),
                e.is_symlink())
        assert kind == [(True, False, False), (False, True, False),
                        (False, False, True)][i % 3], e.name
        assert e.inode() == os.lstat(e.path).st_ino
    entries = ls_a(d)
    assert sorted(n for n, _ in entries) == sorted(names | {".", ".."})
    inos = dict(entries)
    assert inos["."] == os.stat(d).st_ino
    assert inos[".."] == os.stat(mnt).st_ino
    root = dict(ls_a(mnt))
    assert root["."] == root[".."] == 1
    # Deleted entries disappear, new ones appear, nothing repeats.
    gone = sorted(names)[::2]
    for n in gone:
        if os.path.isdir(d / n) and not os.path.islink(d / n):
            os.rmdir(d / n)
        else:
            os.unlink(d / n)
    for i in range(50):
        (d / f"new{i}").write_bytes(b"")
    expect = (names - set(gone)) | {f"new{i}" for i in range(50)}
    listing = os.listdir(d)
    assert len(listing) == len(set(listing)) == len(expect)
    assert set(listing) == expect


def test_readdir_while_unlinking(mnt):
    """Deleting every entry while iterating visits each name once."""
    for i in range(300):
        (mnt / f"f{i}").write_bytes(b"")
    seen = []
    with os.scandir(mnt) as it:
        for e in it:
            seen.append(e.name)
            os.unlink(e.path)
    assert sorted(seen) == sorted(f"f{i}" for i in range(300))
    assert os.listdir(mnt) == []


def test_directory_does_not_grow_under_churn(mnt):
    """Deleted records are reused: churn must not grow a directory."""
    d = mnt / "spool"
    os.mkdir(d)
    for i in range(5000):
        os.close(os.open(d / "msg", os.O_CREAT | os.O_WRONLY))
        os.rename(d / "msg", d / "msg.done")
        os.unlink(d / "msg.done")
    assert os.listdir(d) == []
    assert os.stat(d).st_size <= 4 * PAGE, os.stat(d).st_size


# ---- unlink ----------------------------------------------------------------

def test_unlink(mnt):
    (mnt / "f").write_bytes(b"x")
    os.unlink(mnt / "f")
    err(errno.ENOENT, os.stat, mnt / "f")
    err(errno.ENOENT, os.unlink, mnt / "f")
    err(errno.ENOENT, os.unlink, mnt / "nodir" / "f")
    os.mkdir(mnt / "d")
    err(errno.EISDIR, os.unlink, mnt / "d")
    assert os.path.isdir(mnt / "d")
    os.symlink("d", mnt / "l")
    os.unlink(mnt / "l")                  # the link, not its target
    assert os.path.isdir(mnt / "d")
    os.mkfifo(mnt / "p")
    os.unlink(mnt / "p")
    assert os.listdir(mnt) == ["d"]


def test_unlink_open_file_keeps_data_until_close(vol, mnt):
    p = mnt / "f"
    data = os.urandom(8 << 20)
    p.write_bytes(data)
    free_with = os.statvfs(mnt).f_bfree
    fd = os.open(p, os.O_RDWR)
    try:
        os.unlink(p)
        assert not p.exists()
        assert "f" not in os.listdir(mnt)
        assert os.fstat(fd).st_nlink == 0
        assert os.pread(fd, len(data), 0) == data
        # Still writable, and the space is still held.
        assert os.pwrite(fd, b"more", len(data)) == 4
        assert os.pread(fd, 4, len(data)) == b"more"
        time.sleep(0.3)
        assert os.statvfs(mnt).f_bfree <= free_with
        # The name can be reused for a new file meanwhile.
        p.write_bytes(b"new")
        assert os.pread(fd, 16, 0) == data[:16]
    finally:
        os.close(fd)
    pages = len(data) // PAGE
    assert wait_for(lambda: os.statvfs(mnt).f_bfree >= free_with + pages - 4), \
        (os.statvfs(mnt).f_bfree, free_with)
    assert p.read_bytes() == b"new"


# ---- rename ----------------------------------------------------------------

def test_rename_file(mnt):
    (mnt / "a").write_bytes(b"A")
    os.rename(mnt / "a", mnt / "b")
    assert not (mnt / "a").exists() and (mnt / "b").read_bytes() == b"A"
    # Over an existing file: the target is replaced.
    (mnt / "c").write_bytes(b"C")
    ino_b = os.stat(mnt / "b").st_ino
    os.rename(mnt / "b", mnt / "c")
    assert (mnt / "c").read_bytes() == b"A"
    assert os.stat(mnt / "c").st_ino == ino_b
    assert os.listdir(mnt) == ["c"]
    # Across directories.
    os.mkdir(mnt / "d")
    os.rename(mnt / "c", mnt / "d" / "c2")
    assert (mnt / "d" / "c2").read_bytes() == b"A"
    assert os.listdir(mnt) == ["d"]
    # Onto itself: nothing happens.
    os.rename(mnt / "d" / "c2", mnt / "d" / "c2")
    assert (mnt / "d" / "c2").read_bytes() == b"A"
    # Two hard links of one file: POSIX says nothing happens.
    os.link(mnt / "d" / "c2", mnt / "d" / "c3")
    os.rename(mnt / "d" / "c2", mnt / "d" / "c3")
    assert sorted(os.listdir(mnt / "d")) == ["c2", "c3"]
    assert os.stat(mnt / "d" / "c3").st_nlink == 2
    err(errno.ENOENT, os.rename, mnt / "missing", mnt / "x")
    err(errno.ENOENT, os.rename, mnt / "d" / "c2", mnt / "nodir" / "x")
    err(errno.ENOTDIR, os.rename, mnt / "d" / "c2", mnt / "d" / "c3" / "x")


def test_rename_dirs(mnt):
    os.makedirs(mnt / "a" / "sub")
    (mnt / "a" / "sub" / "f").write_bytes(b"F")
    os.mkdir(mnt / "empty")
    os.mkdir(mnt / "full")
    (mnt / "full" / "x").write_bytes(b"")
    (mnt / "file").write_bytes(b"file")
    # Over an empty directory.
    os.rename(mnt / "a", mnt / "empty")
    assert (mnt / "empty" / "sub" / "f").read_bytes() == b"F"
    assert not (mnt / "a").exists()
    assert os.stat(mnt).st_nlink == 2 + 2       # empty, full
    # Onto a non-empty directory.
    err(errno.ENOTEMPTY, os.rename, mnt / "empty", mnt / "full")
    # Into its own subdirectory.
    err(errno.EINVAL, os.rename, mnt / "empty", mnt / "empty" / "sub" / "x")
    err(errno.EINVAL, os.rename, mnt / "empty", mnt / "empty" / "y")
    # File over directory, directory over file.
    err(errno.EISDIR, os.rename, mnt / "file", mnt / "full")
    err(errno.ENOTDIR, os.rename, mnt / "full", mnt / "file")
    assert (mnt / "file").read_bytes() == b"file"
    assert os.listdir(mnt / "full") == ["x"]
    # Moving a directory elsewhere updates '..' and link counts.
    os.rename(mnt / "empty" / "sub", mnt / "full" / "moved")
    assert os.stat(mnt / "empty").st_nlink == 2
    assert os.stat(mnt / "full").st_nlink == 3
    assert dict(ls_a(mnt / "full" / "moved"))[".."] == \
        os.stat(mnt / "full").st_ino
    assert os.path.samefile(mnt / "full" / "moved" / "..", mnt / "full")
    assert (mnt / "full" / "moved" / "f").read_bytes() == b"F"
    # A directory with contents moved up still works after a rename back.
    os.rename(mnt / "full" / "moved", mnt / "moved")
    assert os.stat(mnt / "full").st_nlink == 2
    assert os.stat(mnt).st_nlink == 2 + 3


def test_rename_over_open_file(vol, mnt):
    """The replaced file lives on while open, and is freed after."""
    old = os.urandom(4 << 20)
    (mnt / "victim").write_bytes(old)
    (mnt / "new").write_bytes(b"replacement")
    fd = os.open(mnt / "victim", os.O_RDONLY)
    try:
        os.rename(mnt / "new", mnt / "victim")
        assert (mnt / "victim").read_bytes() == b"replacement"
        assert os.fstat(fd).st_nlink == 0
        assert os.pread(fd, len(old), 0) == old
        held = os.statvfs(mnt).f_bfree
    finally:
        os.close(fd)
    assert wait_for(lambda: os.statvfs(mnt).f_bfree >= held + 1000)
    assert os.listdir(mnt) == ["victim"]


def test_rename_noreplace(mnt):
    (mnt / "a").write_bytes(b"A")
    (mnt / "b").write_bytes(b"B")
    err(errno.EEXIST, renameat2, mnt / "a", mnt / "b", RENAME_NOREPLACE)
    assert (mnt / "a").read_bytes() == b"A"
    assert (mnt / "b").read_bytes() == b"B"
    renameat2(mnt / "a", mnt / "c", RENAME_NOREPLACE)
    assert sorted(os.listdir(mnt)) == ["b", "c"]
    err(errno.EINVAL, renameat2, mnt / "b", mnt / "c",
        RENAME_NOREPLACE | RENAME_EXCHANGE)


def test_rename_exchange(mnt):
    os.mkdir(mnt / "p")
    os.mkdir(mnt / "q")
    (mnt / "p" / "file").write_bytes(b"content")
    os.mkdir(mnt / "q" / "dir")
    (mnt / "q" / "dir" / "inner").write_bytes(b"inner")
    fino = os.stat(mnt / "p" / "file").st_ino
    dino = os.stat(mnt / "q" / "dir").st_ino
    assert os.stat(mnt / "p").st_nlink == 2
    assert os.stat(mnt / "q").st_nlink == 3
    # Swap a file and a directory in different parents.
    renameat2(mnt / "p" / "file", mnt / "q" / "dir", RENAME_EXCHANGE)
    assert os.stat(mnt / "p" / "file").st_ino == dino
    assert os.path.isdir(mnt / "p" / "file")
    assert (mnt / "p" / "file" / "inner").read_bytes() == b"inner"
    assert os.stat(mnt / "q" / "dir").st_ino == fino
    assert (mnt / "q" / "dir").read_bytes() == b"content"
    assert os.stat(mnt / "p").st_nlink == 3
    assert os.stat(mnt / "q").st_nlink == 2
    assert dict(ls_a(mnt / "p" / "file"))[".."] == os.stat(mnt / "p").st_ino
    # Types in readdir follow the swap.
    types = {e.name: e.is_dir() for e in os.scandir(mnt / "p")}
    assert types == {"file": True}
    types = {e.name: e.is_dir() for e in os.scandir(mnt / "q")}
    assert types == {"dir": False}
    # Swap two files in one directory.
    (mnt / "x").write_bytes(b"X")
    (mnt / "y").write_bytes(b"Y")
    renameat2(mnt / "x", mnt / "y", RENAME_EXCHANGE)
    assert (mnt / "x").read_bytes() == b"Y"
    assert (mnt / "y").read_bytes() == b"X"
    err(errno.ENOENT, renameat2, mnt / "x", mnt / "nothere",
        RENAME_EXCHANGE)
    # A directory exchanged with its own descendant is refused.
    os.makedirs(mnt / "top" / "child")
    err(errno.EINVAL, renameat2, mnt / "top", mnt / "top" / "child",
        RENAME_EXCHANGE)
    err(errno.EINVAL, renameat2, mnt / "top" / "child", mnt / "top",
        RENAME_EXCHANGE)


# ---- link ------------------------------------------------------------------

def test_link(mnt):
    p = mnt / "f"
    p.write_bytes(b"shared")
    os.link(p, mnt / "g")
    os.mkdir(mnt / "d")
    os.link(p, mnt / "d" / "h")
    for n in (p, mnt / "g", mnt / "d" / "h"):
        assert os.stat(n).st_nlink == 3
        assert os.stat(n).st_ino == os.stat(p).st_ino
    with open(mnt / "g", "ab") as f:
        f.write(b"+")
    assert (mnt / "d" / "h").read_bytes() == b"shared+"
    err(errno.EEXIST, os.link, p, mnt / "g")
    err(errno.EEXIST, os.link, p, mnt / "d")
    err(errno.EPERM, os.link, mnt / "d", mnt / "dlink")
    err(errno.ENOENT, os.link, mnt / "missing", mnt / "x")
    err(errno.ENOENT, os.link, p, mnt / "nodir" / "x")
    os.unlink(p)
    assert os.stat(mnt / "g").st_nlink == 2
    os.unlink(mnt / "g")
    assert os.stat(mnt / "d" / "h").st_nlink == 1
    assert (mnt / "d" / "h").read_bytes() == b"shared+"
    # A link to a symlink links the symlink itself.
    os.symlink("d/h", mnt / "sl")
    os.link(mnt / "sl", mnt / "sl2", follow_symlinks=False)
    assert os.lstat(mnt / "sl2").st_nlink == 2
    assert os.readlink(mnt / "sl2") == "d/h"


# ---- symlink / readlink ----------------------------------------------------

def test_symlink_readlink(mnt):
    (mnt / "target").write_bytes(b"T")
    os.symlink("target", mnt / "l")
    st = os.lstat(mnt / "l")
    assert stat.S_ISLNK(st.st_mode) and st.st_size == len("target")
    assert os.readlink(mnt / "l") == "target"
    assert (mnt / "l").read_bytes() == b"T"
    assert os.stat(mnt / "l").st_ino == os.stat(mnt / "target").st_ino
    for n in (1, 100, 4000, 4095):
        t = ("x/" * n)[:n - 1] + "y"
        os.symlink(t, mnt / f"long{n}")
        assert os.readlink(mnt / f"long{n}") == t
        assert os.lstat(mnt / f"long{n}").st_size == n
    err(errno.ENAMETOOLONG, os.symlink, "z" * 4096, mnt / "toolong")
    err(errno.EEXIST, os.symlink, "x", mnt / "l")
    err(errno.EEXIST, os.symlink, "x", mnt / "target")
    err(errno.EINVAL, os.readlink, mnt / "target")
    err(errno.ENOENT, os.readlink, mnt / "missing")
    os.symlink("/nonexistent/dangling", mnt / "dangling")
    err(errno.ENOENT, os.stat, mnt / "dangling")
    assert os.readlink(mnt / "dangling") == "/nonexistent/dangling"
    # Absolute and relative targets resolve through the mount.
    os.mkdir(mnt / "d")
    os.symlink(str(mnt / "target"), mnt / "d" / "abs")
    os.symlink("../target", mnt / "d" / "rel")
    assert (mnt / "d" / "abs").read_bytes() == b"T"
    assert (mnt / "d" / "rel").read_bytes() == b"T"
    os.symlink("d", mnt / "dl")
    assert sorted(os.listdir(mnt / "dl")) == ["abs", "rel"]
    # Loops are the kernel's business but must not hang the daemon.
    os.symlink("loop2", mnt / "loop1")
    os.symlink("loop1", mnt / "loop2")
    err(errno.ELOOP, os.stat, mnt / "loop1")


# ---- mknod -----------------------------------------------------------------

def test_fifo(mnt):
    p = mnt / "fifo"
    os.mkfifo(p, 0o640)
    st = os.stat(p)
    assert stat.S_ISFIFO(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o640
    assert st.st_size == 0
    err(errno.EEXIST, os.mkfifo, p)
    got = []

    def reader():
        with open(p, "rb") as f:
            got.append(f.read())
    t = threading.Thread(target=reader)
    t.start()
    with open(p, "wb") as f:
        for i in range(100):
            f.write(b"message %d\n" % i)
    t.join(10)
    assert not t.is_alive()
    assert got == [b"".join(b"message %d\n" % i for i in range(100))]
    assert os.stat(p).st_size == 0


def test_mknod_other_types(mnt):
    os.mknod(mnt / "reg", stat.S_IFREG | 0o600)
    assert stat.S_ISREG(os.stat(mnt / "reg").st_mode)
    os.mknod(mnt / "chr", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    st = os.stat(mnt / "chr")
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    os.mknod(mnt / "blk", stat.S_IFBLK | 0o600, os.makedev(7, 42))
    st = os.stat(mnt / "blk")
    assert stat.S_ISBLK(st.st_mode) and st.st_rdev == os.makedev(7, 42)
    os.mknod(mnt / "sock", stat.S_IFSOCK | 0o600)
    assert stat.S_ISSOCK(os.stat(mnt / "sock").st_mode)
    err(errno.EEXIST, os.mknod, mnt / "sock", stat.S_IFSOCK | 0o600)
    kinds = {e.name: stat.S_IFMT(e.stat(follow_symlinks=False).st_mode)
             for e in os.scandir(mnt)}
    assert kinds == {"reg": stat.S_IFREG, "chr": stat.S_IFCHR,
                     "blk": stat.S_IFBLK, "sock": stat.S_IFSOCK}


def test_unix_socket_bound_on_mount(mnt):
    import socket
    path = str(mnt / "s.sock")
    srv = socket.socket(socket.AF_UNIX)
    try:
        srv.bind(path)
        srv.listen(1)
        assert stat.S_ISSOCK(os.stat(path).st_mode)
        cli = socket.socket(socket.AF_UNIX)
        cli.connect(path)
        conn, _ = srv.accept()
        cli.sendall(b"ping")
        assert conn.recv(4) == b"ping"
        conn.close()
        cli.close()
    finally:
        srv.close()


# ---- statfs ----------------------------------------------------------------

def test_statfs(mnt):
    s0 = os.statvfs(mnt)
    assert s0.f_bsize == PAGE and s0.f_frsize == PAGE
    assert 0 < s0.f_bfree <= s0.f_blocks
    assert s0.f_bavail == s0.f_bfree
    assert s0.f_namemax == 255
    assert s0.f_files > 0 and 0 < s0.f_ffree < s0.f_files
    pages = (10 << 20) // PAGE
    with open(mnt / "f", "wb") as f:
        f.write(os.urandom(10 << 20))
        f.flush()
        os.fsync(f.fileno())
    s1 = os.statvfs(mnt)
    assert s0.f_bfree - s1.f_bfree >= pages
    assert s0.f_bfree - s1.f_bfree <= pages + 64   # metadata is small
    assert s1.f_ffree == s0.f_ffree - 1
    os.unlink(mnt / "f")
    assert wait_for(lambda: os.statvfs(mnt).f_bfree >= s0.f_bfree - 2), \
        (os.statvfs(mnt).f_bfree, s0.f_bfree)
    assert wait_for(lambda: os.statvfs(mnt).f_ffree == s0.f_ffree)


# ---- xattrs ----------------------------------------------------------------

def test_xattr_basic(mnt):
    p = mnt / "f"
    p.write_bytes(b"")
    assert os.listxattr(p) == []
    err(errno.ENODATA, os.getxattr, p, "user.none")
    os.setxattr(p, "user.a", b"1")
    os.setxattr(p, "user.b", b"\x00binary\xff")
    os.setxattr(p, "user.empty", b"")
    assert os.getxattr(p, "user.a") == b"1"
    assert os.getxattr(p, "user.b") == b"\x00binary\xff"
    assert os.getxattr(p, "user.empty") == b""
    assert sorted(os.listxattr(p)) == ["user.a", "user.b", "user.empty"]
    # Flags.
    err(errno.EEXIST, os.setxattr, p, "user.a", b"2", os.XATTR_CREATE)
    err(errno.ENODATA, os.setxattr, p, "user.zz", b"2", os.XATTR_REPLACE)
    os.setxattr(p, "user.a", b"22", os.XATTR_REPLACE)
    assert os.getxattr(p, "user.a") == b"22"
    os.setxattr(p, "user.c", b"3", os.XATTR_CREATE)
    assert os.getxattr(p, "user.c") == b"3"
    # Replace with a longer and a shorter value.
    os.setxattr(p, "user.b", b"L" * 1000)
    assert os.getxattr(p, "user.b") == b"L" * 1000
    os.setxattr(p, "user.b", b"s")
    assert os.getxattr(p, "user.b") == b"s"
    assert os.getxattr(p, "user.a") == b"22"
    # Remove.
    os.removexattr(p, "user.a")
    err(errno.ENODATA, os.getxattr, p, "user.a")
    err(errno.ENODATA, os.removexattr, p, "user.a")
    assert sorted(os.listxattr(p)) == ["user.b", "user.c", "user.empty"]
    for n in ("user.b", "user.c", "user.empty"):
        os.removexattr(p, n)
    assert os.listxattr(p) == []
    err(errno.ENOENT, os.getxattr, mnt / "missing", "user.a")
    err(errno.ENOENT, os.setxattr, mnt / "missing", "user.a", b"")
    # On directories too, and trusted.* for root.
    os.mkdir(mnt / "d")
    os.setxattr(mnt / "d", "user.dir", b"yes")
    os.setxattr(mnt / "d", "trusted.t", b"root only")
    assert os.getxattr(mnt / "d", "user.dir") == b"yes"
    assert os.getxattr(mnt / "d", "trusted.t") == b"root only"
    assert sorted(os.listxattr(mnt / "d")) == ["trusted.t", "user.dir"]


def test_xattr_sizes(mnt):
    """The limit is in bytes, as ext4's: a run of up to 16 pages (64 KiB)
    per inode, each attribute's record taking 4 bytes, its name and its
    value, padded to 4."""
    p = mnt / "f"
    p.write_bytes(b"")
    blocks = os.stat(p).st_blocks
    v = os.urandom(4000)
    os.setxattr(p, "user.big", v)
    assert os.getxattr(p, "user.big") == v
    assert os.stat(p).st_blocks == blocks + PAGE // 512
    # Past one page the run grows (and moves) to the pages it needs.
    v = os.urandom(5000)
    os.setxattr(p, "user.big", v)
    assert os.getxattr(p, "user.big") == v
    assert os.stat(p).st_blocks == blocks + 2 * PAGE // 512
    # The largest value that fits 16 pages fills them exactly: 64 KiB
    # less the 8-byte header, the 4-byte record header and the name.
    vmax = 16 * PAGE - 8 - 4 - len("user.big")
    big = os.urandom(vmax)
    os.setxattr(p, "user.big", big)
    assert os.getxattr(p, "user.big") == big
    assert os.stat(p).st_blocks == blocks + 16 * PAGE // 512
    # A value of 15 pages or more may take a 17th page, up to the
    # kernel's largest (XATTR_SIZE_MAX; format.h, XATTR_64K).
    big = os.urandom(65536)
    os.setxattr(p, "user.big", big)
    assert os.getxattr(p, "user.big") == big
    assert os.stat(p).st_blocks == blocks + 17 * PAGE // 512
    # 17 pages and no more: 69632 - 8 - (4 + 8 + 65536) leaves 4076
    # bytes, a record of 4 + 6 + 4066 at most.
    err(errno.ENOSPC, os.setxattr, p, "user.x", os.urandom(4067))
    assert os.getxattr(p, "user.big") == big
    os.setxattr(p, "user.big", b"small")
    assert os.stat(p).st_blocks == blocks + PAGE // 512
    os.setxattr(p, "user.x", b"1")
    # Many attributes until the run is full, then ENOSPC, nothing lost:
    # (65536 - 8 - 20 - 16) // (4 + 13 + 90 + 1 padding) = 606.
    vals = {}
    with pytest.raises(OSError) as ei:
        for i in range(1000):
            n = f"user.attr{i:04d}"
            val = os.urandom(90)
            os.setxattr(p, n, val)
            vals[n] = val
    assert ei.value.errno == errno.ENOSPC
    assert len(vals) == 606
    for n, val in vals.items():
        assert os.getxattr(p, n) == val
    assert sorted(os.listxattr(p)) == sorted(list(vals) + ["user.big",
                                                           "user.x"])
    # Removing all attributes gives the pages back.
    for n in os.listxattr(p):
        os.removexattr(p, n)
    assert os.stat(p).st_blocks == blocks
    # Over XATTR_SIZE_MAX the kernel refuses by itself.
    err(errno.E2BIG, os.setxattr, p, "user.huge", bytes(70000))
    # Reading with a too small buffer: ERANGE (through libc).
    os.setxattr(p, "user.r", b"0123456789")
    libc.getxattr.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                              ctypes.c_void_p, ctypes.c_size_t]
    buf = ctypes.create_string_buffer(4)
    assert libc.getxattr(os.fsencode(p), b"user.r", buf, 4) == -1
    assert ctypes.get_errno() == errno.ERANGE
    assert libc.getxattr(os.fsencode(p), b"user.r", None, 0) == 10
    libc.listxattr.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                               ctypes.c_size_t]
    assert libc.listxattr(os.fsencode(p), buf, 4) == -1
    assert ctypes.get_errno() == errno.ERANGE
    assert libc.listxattr(os.fsencode(p), None, 0) == len("user.r") + 1


def test_xattr_reserved_name(vol, mnt):
    """user.daxguard.socket is how daxguard-ctl finds the daemon; it
    cannot be set, and it answers with the socket path."""
    (mnt / "f").write_bytes(b"")
    err(errno.EPERM, os.setxattr, mnt, "user.daxguard.socket", b"x")
    sock = os.getxattr(mnt, "user.daxguard.socket").decode()
    assert sock.endswith(".sock") and os.path.exists(sock)
    assert vol.status()["mountpoint"] == str(mnt)


# ---- names -----------------------------------------------------------------

def test_name_length_limits(mnt):
    ok = "n" * 255
    (mnt / ok).write_bytes(b"ok")
    assert (mnt / ok).read_bytes() == b"ok"
    assert os.listdir(mnt) == [ok]
    os.mkdir(mnt / ("d" * 255))
    long = "n" * 256
    err(errno.ENAMETOOLONG, os.open, mnt / long, os.O_CREAT | os.O_WRONLY)
    err(errno.ENAMETOOLONG, os.stat, mnt / long)
    err(errno.ENAMETOOLONG, os.mkdir, mnt / long)
    err(errno.ENAMETOOLONG, os.mkfifo, mnt / long)
    err(errno.ENAMETOOLONG, os.symlink, "x", mnt / long)
    err(errno.ENAMETOOLONG, os.link, mnt / ok, mnt / long)
    err(errno.ENAMETOOLONG, os.rename, mnt / ok, mnt / long)
    err(errno.ENAMETOOLONG, os.unlink, mnt / long)
    err(errno.ENAMETOOLONG, os.rmdir, mnt / long)
    assert sorted(os.listdir(mnt)) == sorted([ok, "d" * 255])


def test_unusual_names(mnt):
    names = ["with space", "tab\there", "newline\nname", "ünïcödé-名前",
             "-dash", "...", ".hidden", "a" * 200 + "é" * 27,
             "\x01\x7f", "*?[]"]
    for n in names:
        (mnt / n).write_bytes(n.encode())
    assert sorted(os.listdir(mnt)) == sorted(names)
    for n in names:
        assert (mnt / n).read_bytes() == n.encode()
    # Case matters.
    (mnt / "Case").write_bytes(b"1")
    (mnt / "case").write_bytes(b"2")
    assert (mnt / "Case").read_bytes() == b"1"


def test_thousands_of_small_xattrs(vol, mnt):
    """Programs expect at least 1,000 small attributes per file; they
    survive a remount and leave fsck nothing to do."""
    from conftest import FSCK
    p = mnt / "f"
    p.write_bytes(b"data")
    d = mnt / "d"
    d.mkdir()
    want = {f"user.k{i:05d}": f"v{i}".encode() for i in range(2000)}
    for n, val in want.items():
        os.setxattr(p, n, val)
    os.setxattr(d, "user.one", b"1")
    # Some go again, changed, from the middle of the run.
    for i in range(500, 1500, 7):
        n = f"user.k{i:05d}"
        os.removexattr(p, n)
        del want[n]
    for i in range(0, 2000, 13):
        n = f"user.k{i:05d}"
        if n in want:
            want[n] = b"changed" * 3
            os.setxattr(p, n, want[n], os.XATTR_REPLACE)
    assert sorted(os.listxattr(p)) == sorted(want)
    vol.umount()
    r = subprocess.run([str(FSCK), "-n", *map(str, vol.devs)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    vol.mount("timeout=0")
    assert sorted(os.listxattr(p)) == sorted(want)
    for n, val in want.items():
        assert os.getxattr(p, n) == val
    assert os.getxattr(d, "user.one") == b"1"
    assert p.read_bytes() == b"data"
