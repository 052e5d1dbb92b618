# SPDX-License-Identifier: MIT
"""Times of overwritten files: kept in core until fsync or close (like
lazytime), then durable; data is durable at every write either way."""
import os


def overwrite(path, data):
    fd = os.open(path, os.O_WRONLY)
    os.pwrite(fd, data, 0)
    return fd


def test_mtime_durable_after_fsync(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount()
    f = v.mnt / "f"
    f.write_bytes(b"a" * 8192)
    os.utime(f, ns=(1_000_000_000, 1_000_000_000))
    fd = overwrite(f, b"b" * 4096)
    os.fsync(fd)
    want = os.fstat(fd).st_mtime_ns
    assert want > 1_000_000_000
    v.kill9()                  # the file is still open: no release
    v.mount()
    assert f.stat().st_mtime_ns == want
    assert f.read_bytes() == b"b" * 4096 + b"a" * 4096


def test_mtime_durable_after_close(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount()
    f = v.mnt / "f"
    f.write_bytes(b"a" * 8192)
    os.utime(f, ns=(1_000_000_000, 1_000_000_000))
    os.close(overwrite(f, b"c" * 100))
    want = f.stat().st_mtime_ns
    v.kill9()
    v.mount()
    assert f.stat().st_mtime_ns == want


def test_data_durable_without_fsync(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount()
    f = v.mnt / "f"
    f.write_bytes(b"a" * 8192)
    fd = overwrite(f, b"d" * 4096)   # no fsync, no close
    v.kill9()
    try:
        os.close(fd)            # the connection is gone
    except OSError:
        pass
    v.mount()
    assert f.read_bytes() == b"d" * 4096 + b"a" * 4096
