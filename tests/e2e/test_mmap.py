# SPDX-License-Identifier: MIT
"""Shared memory mappings of files on a mounted volume: stores reach the
daemon through the kernel's writeback of mapped pages (msync), are seen
by read(), and survive a remount. Run in both cache modes."""
import hashlib
import mmap
import os
import random

import pytest

PAGE = mmap.PAGESIZE


@pytest.fixture(params=["default", "writeback"])
def vol(request, volume_factory):
    v = volume_factory()
    v.mkfs()
    if request.param == "writeback":
        v.mount("writeback")
    else:
        v.mount()
    v.opts = () if request.param == "default" else ("writeback",)
    return v


def remount(v):
    v.umount()
    v.drop_caches()
    v.mount(*v.opts)


def test_mmap_store_msync_roundtrip(vol):
    p = vol.mnt / "f"
    size = 64 * PAGE
    p.write_bytes(bytes(size))
    rng = random.Random(1)
    model = bytearray(size)
    with open(p, "r+b") as f:
        with mmap.mmap(f.fileno(), size, mmap.MAP_SHARED,
                       mmap.PROT_READ | mmap.PROT_WRITE) as mm:
            for _ in range(300):
                off = rng.randrange(size - 100)
                data = rng.randbytes(rng.randrange(1, 100))
                mm[off:off + len(data)] = data
                model[off:off + len(data)] = data
            mm.flush()                                  # msync(MS_SYNC)
            # Stores are visible to read() through the same file.
            assert os.pread(f.fileno(), size, 0) == bytes(model)
            # And a write() is visible in the mapping.
            os.pwrite(f.fileno(), b"via write", 5 * PAGE + 3)
            model[5 * PAGE + 3:5 * PAGE + 12] = b"via write"
            assert mm[5 * PAGE + 3:5 * PAGE + 12] == b"via write"
    assert p.read_bytes() == bytes(model)
    assert os.stat(p).st_size == size
    remount(vol)
    assert p.read_bytes() == bytes(model)


def test_mmap_large_file_many_pages(vol):
    """Stores across a mapping bigger than any one request."""
    p = vol.mnt / "big"
    size = 24 << 20
    with open(p, "wb") as f:
        f.truncate(size)
    rng = random.Random(2)
    model = bytearray(size)
    with open(p, "r+b") as f:
        with mmap.mmap(f.fileno(), size) as mm:
            # A long sequential run, then scattered pages.
            run = rng.randbytes(5 << 20)
            mm[(1 << 20) + 17:(1 << 20) + 17 + len(run)] = run
            model[(1 << 20) + 17:(1 << 20) + 17 + len(run)] = run
            for _ in range(500):
                pg = rng.randrange(size // PAGE)
                data = rng.randbytes(PAGE)
                mm[pg * PAGE:(pg + 1) * PAGE] = data
                model[pg * PAGE:(pg + 1) * PAGE] = data
            mm.flush()
    digest = hashlib.sha256(model).hexdigest()
    assert hashlib.sha256(p.read_bytes()).hexdigest() == digest
    remount(vol)
    assert hashlib.sha256(p.read_bytes()).hexdigest() == digest
    # Mapping it again after the remount reads the same bytes.
    with open(p, "rb") as f:
        with mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ) as mm:
            assert hashlib.sha256(mm[:]).hexdigest() == digest


def test_mmap_sparse_file(vol):
    p = vol.mnt / "sparse"
    size = 8 << 20
    with open(p, "wb") as f:
        f.truncate(size)
    assert os.stat(p).st_blocks == 0
    with open(p, "r+b") as f:
        with mmap.mmap(f.fileno(), size) as mm:
            # Holes read as zeros through the mapping.
            assert mm[:] == bytes(size)
            mm[3 * PAGE + 5:3 * PAGE + 10] = b"hello"
            mm[size - 4:size] = b"tail"
            mm.flush()
    st = os.stat(p)
    assert st.st_size == size
    # Only the touched pages got allocated (writeback may send whole
    # pages, but not the untouched holes).
    assert st.st_blocks <= 4 * PAGE // 512, st.st_blocks
    expect = bytearray(size)
    expect[3 * PAGE + 5:3 * PAGE + 10] = b"hello"
    expect[size - 4:] = b"tail"
    assert p.read_bytes() == bytes(expect)
    remount(vol)
    assert p.read_bytes() == bytes(expect)
    assert os.stat(p).st_blocks <= 4 * PAGE // 512


def test_mmap_partial_last_page(vol):
    """A file whose size is not page aligned: stores in the last page do
    not grow the file, and the bytes past EOF never appear."""
    p = vol.mnt / "odd"
    data = os.urandom(3 * PAGE + 100)
    p.write_bytes(data)
    with open(p, "r+b") as f:
        with mmap.mmap(f.fileno(), len(data)) as mm:
            mm[-10:] = b"0123456789"
            mm.flush()
    expect = data[:-10] + b"0123456789"
    assert os.stat(p).st_size == len(data)
    assert p.read_bytes() == expect
    # Growing the file later exposes zeros, not what the mapping's page
    # held beyond the old EOF.
    os.truncate(p, 4 * PAGE)
    assert p.read_bytes() == expect + bytes(PAGE - 100)
    remount(vol)
    assert p.read_bytes() == expect + bytes(PAGE - 100)


def test_mmap_private_does_not_write_back(vol):
    p = vol.mnt / "f"
    p.write_bytes(b"a" * (2 * PAGE))
    with open(p, "r+b") as f:
        with mmap.mmap(f.fileno(), 2 * PAGE, mmap.MAP_PRIVATE,
                       mmap.PROT_READ | mmap.PROT_WRITE) as mm:
            mm[0:5] = b"XXXXX"
            assert mm[0:6] == b"XXXXXa"
    assert p.read_bytes() == b"a" * (2 * PAGE)
    remount(vol)
    assert p.read_bytes() == b"a" * (2 * PAGE)


def test_mmap_two_files_and_munmap_without_msync(vol):
    """Unmapping without msync still writes back by close/unmount."""
    files = {}
    for i in range(3):
        p = vol.mnt / f"m{i}"
        data = bytearray(os.urandom(16 * PAGE))
        p.write_bytes(bytes(16 * PAGE))
        with open(p, "r+b") as f:
            with mmap.mmap(f.fileno(), len(data)) as mm:
                mm[:] = data
        files[p] = bytes(data)
    # fsync of the file flushes dirty mapped pages too.
    for p in files:
        with open(p, "rb") as f:
            os.fsync(f.fileno())
    for p, data in files.items():
        assert p.read_bytes() == data
    remount(vol)
    for p, data in files.items():
        assert p.read_bytes() == data
