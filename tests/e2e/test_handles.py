# SPDX-License-Identifier: MIT
"""File handles: name_to_handle_at() and open_by_handle_at() work on
linked files and directories even after the kernel forgot their inodes
(FUSE export support: a handle is the node id, which is the inode
number, and the slot's generation; the daemon answers lookups of "."
and ".." by node id). A handle of a removed file, or of a slot reused
since, is stale."""
import ctypes
import errno
import os

import pytest

libc = ctypes.CDLL(None, use_errno=True)
MAX_HANDLE_SZ = 128
AT_FDCWD = -100


class FileHandle(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint),
                ("handle_type", ctypes.c_int),
                ("f_handle", ctypes.c_ubyte * MAX_HANDLE_SZ)]


def name_to_handle(path):
    fh = FileHandle(handle_bytes=MAX_HANDLE_SZ)
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(AT_FDCWD, os.fsencode(path), ctypes.byref(fh),
                              ctypes.byref(mount_id), 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), str(path))
    return fh


def open_by_handle(mount_fd, fh, flags=os.O_RDONLY):
    fd = libc.open_by_handle_at(mount_fd, ctypes.byref(fh), flags)
    if fd < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return fd


def forget_inodes(vol):
    """Make the kernel drop its dentries and inodes (and so send FORGET):
    the handle must then be resolved by the daemon."""
    vol.drop_caches()


@pytest.fixture
def vol(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount()
    return v


def test_handle_of_file_and_directory(vol):
    mnt = vol.mnt
    (mnt / "d").mkdir()
    f = mnt / "d" / "f"
    f.write_bytes(b"through a handle")
    fh = name_to_handle(f)
    dh = name_to_handle(mnt / "d")
    mfd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for forget in (False, True):
            if forget:
                forget_inodes(vol)
            fd = open_by_handle(mfd, fh)
            try:
                assert os.read(fd, 100) == b"through a handle"
                assert os.fstat(fd).st_ino == os.stat(f).st_ino
            finally:
                os.close(fd)
            # A directory handle reconnects to its path through "..".
            fd = open_by_handle(mfd, dh, os.O_RDONLY | os.O_DIRECTORY)
            try:
                assert sorted(os.listdir(fd)) == ["f"]
                assert os.readlink(f"/proc/self/fd/{fd}") == str(mnt / "d")
            finally:
                os.close(fd)
        # Writes through a handle reach the file.
        fd = open_by_handle(mfd, fh, os.O_WRONLY)
        try:
            os.pwrite(fd, b"THROUGH", 0)
        finally:
            os.close(fd)
        assert f.read_bytes() == b"THROUGH a handle"
    finally:
        os.close(mfd)


def test_handle_of_removed_or_reused_file_is_stale(vol):
    mnt = vol.mnt
    f = mnt / "f"
    f.write_bytes(b"old")
    ino = os.stat(f).st_ino
    fh = name_to_handle(f)
    f.unlink()
    forget_inodes(vol)
    mfd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError) as ei:
            open_by_handle(mfd, fh)
        assert ei.value.errno == errno.ESTALE
        # The slot is reused by a new file: another generation.
        g = mnt / "g"
        g.write_bytes(b"new")
        assert os.stat(g).st_ino == ino
        forget_inodes(vol)
        with pytest.raises(OSError) as ei:
            open_by_handle(mfd, fh)
        assert ei.value.errno == errno.ESTALE
        fd = open_by_handle(mfd, name_to_handle(g))
        try:
            assert os.read(fd, 10) == b"new"
        finally:
            os.close(fd)
    finally:
        os.close(mfd)


def test_handles_survive_remount(vol):
    """Node ids and generations are on the media: a handle taken before
    a remount opens the same file after it (what an NFS server needs)."""
    f = vol.mnt / "f"
    f.write_bytes(b"kept")
    fh = name_to_handle(f)
    vol.remount()
    mfd = os.open(vol.mnt, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = open_by_handle(mfd, fh)
        try:
            assert os.read(fd, 10) == b"kept"
        finally:
            os.close(fd)
    finally:
        os.close(mfd)
