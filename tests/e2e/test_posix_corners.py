# SPDX-License-Identifier: MIT
"""POSIX corners from issue 32 item 13 and SEEK_DATA/SEEK_HOLE (item 11):
holes found by lseek, set-ID bits dropped by an unprivileged O_DIRECT
write, -o dev,suid (and allow_dev,allow_suid through mount.fuse3) honoured
for root, and a second mount of a volume
refused with the bind mount named as the answer."""
import errno
import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import DAEMON, FSCK, is_mounted
from dgfault import system_user

PAGE = 4096


@pytest.fixture
def vol(volume_factory):
    v = volume_factory()
    v.mkfs()
    return v


def test_seek_hole_and_data(vol):
    """A sparse file's hole is found by SEEK_HOLE and skipped by
    SEEK_DATA (before: the whole file was data); ENXIO at or past EOF."""
    vol.mount()
    p = vol.mnt / "sparse"
    fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.pwrite(fd, b"a" * PAGE, 0)              # data [0, 4 KiB)
        os.pwrite(fd, b"b" * PAGE, 1 << 20)        # data [1 MiB, +4 KiB)
        os.ftruncate(fd, 3 << 20)                  # a hole up to EOF
        assert os.lseek(fd, 0, os.SEEK_DATA) == 0
        assert os.lseek(fd, 100, os.SEEK_DATA) == 100
        assert os.lseek(fd, 0, os.SEEK_HOLE) == PAGE
        assert os.lseek(fd, PAGE, os.SEEK_HOLE) == PAGE
        assert os.lseek(fd, PAGE, os.SEEK_DATA) == 1 << 20
        assert os.lseek(fd, (1 << 20) + 10, os.SEEK_DATA) == (1 << 20) + 10
        assert os.lseek(fd, 1 << 20, os.SEEK_HOLE) == (1 << 20) + PAGE
        # Only a hole from here to EOF: no data, and the hole is here.
        with pytest.raises(OSError) as e:
            os.lseek(fd, (1 << 20) + PAGE, os.SEEK_DATA)
        assert e.value.errno == errno.ENXIO
        assert os.lseek(fd, 2 << 20, os.SEEK_HOLE) == 2 << 20
        for whence in (os.SEEK_DATA, os.SEEK_HOLE):
            for off in (3 << 20, 4 << 20):
                with pytest.raises(OSError) as e:
                    os.lseek(fd, off, whence)
                assert e.value.errno == errno.ENXIO
        # A file without holes: its only hole is the implicit one at EOF.
        os.ftruncate(fd, PAGE + 10)
        os.pwrite(fd, b"c" * 10, PAGE)
        assert os.lseek(fd, 0, os.SEEK_HOLE) == PAGE + 10
    finally:
        os.close(fd)
    # The map is the media's: the same after a remount.
    vol.remount()
    fd = os.open(p, os.O_RDONLY)
    try:
        assert os.lseek(fd, 0, os.SEEK_HOLE) == PAGE + 10
    finally:
        os.close(fd)


@pytest.fixture
def public_vol(vol):
    """vol, to be mounted on a directory of its own that any user may
    search. Not pytest's tmp_path: its /tmp/pytest-of-root is 0700, and
    a pytest session starting meanwhile (another test file run in
    parallel) sets it back to 0700 if a test opens it up."""
    vol.mnt = Path(tempfile.mkdtemp(prefix="dg-posix-"))
    os.chmod(vol.mnt, 0o755)
    try:
        yield vol
    finally:
        vol.umount()
        os.rmdir(vol.mnt)


ODIRECT_WRITE = """
import mmap, os, sys
buf = mmap.mmap(-1, 4096)            # page aligned, as O_DIRECT wants
buf.write(b"x" * 4096)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_DIRECT)
assert os.pwrite(fd, buf, 0) == 4096
os.close(fd)
"""


def test_unprivileged_odirect_write_drops_setid(public_vol):
    """An O_DIRECT write by the owner (no CAP_FSETID) drops S_ISUID, and
    keeps S_ISGID on a file the group may not execute (a locking mark),
    as a buffered write does."""
    vol = public_vol
    vol.mount("allow_other")
    with system_user("dg-posix") as pw:
        f = vol.mnt / "prog"
        f.write_bytes(b"#" * PAGE)
        os.chown(f, pw.pw_uid, pw.pw_gid)
        os.chmod(f, 0o6744)
        subprocess.run(["setpriv", f"--reuid={pw.pw_uid}",
                        f"--regid={pw.pw_gid}", "--clear-groups",
                        "/usr/bin/python3", "-c", ODIRECT_WRITE, str(f)],
                       check=True, timeout=60)
        assert stat.filemode(os.stat(f).st_mode) == "-rwxr-Sr--"
        assert f.read_bytes() == b"x" * PAGE


def test_dev_suid_for_root(vol):
    """Root's -o dev,suid reaches the kernel: device nodes open and
    set-ID bits count; without them, FUSE's nodev,nosuid."""
    vol.mount("dev,suid")
    st = os.statvfs(vol.mnt)
    assert not st.f_flag & (os.ST_NODEV | os.ST_NOSUID)
    os.mknod(vol.mnt / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    with open(vol.mnt / "null", "wb") as f:
        f.write(b"to /dev/null")
    vol.umount()
    vol.mount()
    st = os.statvfs(vol.mnt)
    assert st.f_flag & os.ST_NODEV and st.f_flag & os.ST_NOSUID
    with pytest.raises(PermissionError):
        open(vol.mnt / "null", "wb")


def test_allow_dev_suid_through_the_mount_helper(vol):
    """mount(8) keeps dev and suid for itself and hands mount.fuse3
    neither (util-linux 2.38), so an fstab line or `mount -t
    fuse.daxguard -o dev,suid` cannot give them. allow_dev and
    allow_suid are daxguard's names, which mount(8) passes on: run
    through mount.fuse3 as mount(8) runs it, they take effect. (mount(8)
    gives helpers a fixed PATH, so the helper is called directly with
    the build directory on the PATH, as in test_toolbox.)"""
    helper = shutil.which("mount.fuse3") or "/sbin/mount.fuse3"
    if not os.path.exists(helper):
        pytest.skip("mount.fuse3 missing")
    env = dict(os.environ, PATH=f"{DAEMON.parent}:{os.environ['PATH']}")
    src = ":".join(map(str, vol.devs))
    try:
        subprocess.run([helper, src, str(vol.mnt), "-t", "fuse.daxguard",
                        "-o", "rw,allow_dev,allow_suid"], env=env,
                       check=True, timeout=60)
        st = os.statvfs(vol.mnt)
        assert not st.f_flag & (os.ST_NODEV | os.ST_NOSUID)
        os.mknod(vol.mnt / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        with open(vol.mnt / "null", "wb") as f:
            f.write(b"to /dev/null")
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(vol.mnt)],
                       capture_output=True)
        # The daemon ran in the background: wait until it let go of the
        # images before the next mount or the cleanup.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            p = subprocess.run([str(FSCK), "-n", src], capture_output=True,
                               text=True)
            if "in use" not in p.stderr and "mounted" not in p.stderr:
                break
            time.sleep(0.1)


def test_allow_suid_refused_without_root(vol):
    """An unprivileged mount is nodev,nosuid whatever it asks
    (fusermount3 adds both): asking is refused with a message, exit 2,
    before any device is opened."""
    with system_user("dg-nosuid") as pw:
        p = subprocess.run(["setpriv", f"--reuid={pw.pw_uid}",
                            f"--regid={pw.pw_gid}", "--clear-groups",
                            str(DAEMON), "-o", "allow_suid", vol.devlist,
                            str(vol.mnt), "-f"],
                           capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert "allow_suid needs root" in p.stderr
    assert not is_mounted(vol.mnt)


def test_second_mount_names_bind_mount(vol, tmp_path):
    """One volume, one daemon: a second mount is refused, and the
    message says a bind mount is how to see it at a second place."""
    vol.mount()
    other = tmp_path / "other"
    other.mkdir()
    try:
        p = subprocess.run([str(DAEMON), vol.devlist, str(other), "-f"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode != 0
        assert f"its volume is mounted on '{vol.mnt}'" in p.stderr, p.stderr
        assert f"mount --bind '{vol.mnt}' DIR" in p.stderr, p.stderr
        assert not is_mounted(other)
    finally:
        deadline = time.monotonic() + 20
        while is_mounted(other) and time.monotonic() < deadline:
            subprocess.run(["fusermount3", "-u", "-z", str(other)],
                           capture_output=True)
            time.sleep(0.1)
    # The answer works: the bind mount shows the same files.
    (vol.mnt / "f").write_bytes(b"seen twice")
    subprocess.run(["mount", "--bind", str(vol.mnt), str(other)],
                   check=True, timeout=30)
    try:
        assert (other / "f").read_bytes() == b"seen twice"
    finally:
        subprocess.run(["umount", str(other)], check=True, timeout=30)
