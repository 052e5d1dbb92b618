# SPDX-License-Identifier: MIT
"""-o writeback with a hold: a batch's scattered whole pages (random
overwrites, holes) move together to one band of new rows (fs/fsys/file.c,
scatter_move()), and the bytes are what a model of the file says -- through
the daemon, after an unmount with fsck clean, and after a new mount. On a
full volume there is no band: the batch goes in place, with the right
bytes."""
import errno
import os
import random

from dgfault import fsck
from test_writeback_hold import read_direct

KIB = 1 << 10
MIB = 1 << 20
PAGE = 4 * KIB
HOLD = ("writeback", "wb_max=64M", "commit=3600")


def new_rows(v):
    return v.status()["rows_written_before_journal"]


def scattered_writes(fd, model, rnd, n):
    """n random writes into the file and its model: 4 KiB pages, odd
    sizes at odd offsets, some next to the one before, some over a page
    written already in this round."""
    size = len(model)
    done = []
    for _ in range(n):
        kind = rnd.random()
        if kind < 0.5 or not done:
            off = rnd.randrange(size // PAGE) * PAGE
            data = rnd.randbytes(PAGE)
        elif kind < 0.7:
            off = done[-1][0] + done[-1][1]       # adjacent
            data = rnd.randbytes(rnd.randrange(1, 3 * PAGE))
        elif kind < 0.85:
            off = rnd.choice(done)[0]             # the same page again
            data = rnd.randbytes(PAGE)
        else:
            off = rnd.randrange(size - 2 * PAGE)
            data = rnd.randbytes(rnd.randrange(1, 2 * PAGE))
        data = data[:max(0, size - off)]
        if not data:
            continue
        assert os.pwrite(fd, data, off) == len(data)
        model[off:off + len(data)] = data
        done.append((off, len(data)))


def check_bytes(path, model):
    got = read_direct(path, len(model))
    assert len(got) == len(model)
    if got != bytes(model):
        bad = next(i for i in range(len(model)) if got[i] != model[i])
        raise AssertionError(f"{path}: first wrong byte at {bad} "
                             f"(page {bad // PAGE})")


def created_with(path, model):
    """An fd of a new file at path holding model, durable."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        assert os.write(fd, model) == len(model)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_after_remount(v, path, model):
    """Unmounted, fsck -n finds nothing; mounted again, the bytes."""
    v.umount()
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    v.mount(*HOLD)
    check_bytes(path, model)


def test_scattered_overwrites_and_holes(volume_factory):
    v = volume_factory(parity=1)
    v.mkfs()
    v.mount(*HOLD)
    path = v.mnt / "f"
    rnd = random.Random(3101)
    model = bytearray(rnd.randbytes(8 * MIB))
    fd = created_with(path, model)
    try:
        before = new_rows(v)
        for _ in range(3):
            scattered_writes(fd, model, rnd, 150)
            os.fsync(fd)
            check_bytes(path, model)
        # Pages past the end, with holes between them.
        for i in range(40):
            off = len(model) + 3 * PAGE + i * 3 * PAGE
            data = rnd.randbytes(PAGE)
            assert os.pwrite(fd, data, off) == PAGE
            model.extend(bytes(off - len(model)))
            model.extend(data)
        os.fsync(fd)
        check_bytes(path, model)
        # The scattered pages went to new rows (the old code patched
        # every one in place: none).
        assert new_rows(v) > before
    finally:
        os.close(fd)
    check_after_remount(v, path, model)


def fill(path):
    """Take every free page with a file of allocated pages."""
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    size, chunk = 0, 4 * MIB
    try:
        while chunk >= PAGE:
            try:
                os.posix_fallocate(fd, size, chunk)
                size += chunk
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
                chunk //= 2
    finally:
        os.close(fd)
    return size


def test_full_volume_goes_in_place(volume_factory):
    v = volume_factory(parity=1, size="16M")
    v.mkfs()
    v.mount(*HOLD)
    path = v.mnt / "f"
    rnd = random.Random(3102)
    model = bytearray(rnd.randbytes(2 * MIB))
    fd = created_with(path, model)
    try:
        assert fill(v.mnt / "filler") > 0
        assert v.status()["free_bytes"] < 64 * KIB
        before = new_rows(v)
        # Whole pages only: nothing to allocate in place.
        for _ in range(200):
            off = rnd.randrange(len(model) // PAGE) * PAGE
            data = rnd.randbytes(PAGE)
            assert os.pwrite(fd, data, off) == PAGE
            model[off:off + PAGE] = data
        os.fsync(fd)
        check_bytes(path, model)
        assert new_rows(v) == before
    finally:
        os.close(fd)
    check_after_remount(v, path, model)
