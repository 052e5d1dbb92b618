# SPDX-License-Identifier: MIT
"""Nothing may read data older than a completed write: asynchronous
O_DIRECT writes (io_submit) of a file mixed with buffered reads of it
(dio_stale.c). Before the daemon invalidated the cached pages of each
direct write's range before answering it (fs/daemon/dio_inval.c), about
one read in a thousand returned the bytes from before a completed
write."""
import subprocess

from conftest import BUILD

DIO_STALE = BUILD / "tests" / "e2e" / "dio_stale"


def test_async_direct_writes_and_buffered_reads(mounted):
    for i in range(2):
        r = subprocess.run([str(DIO_STALE), str(mounted.mnt / f"f{i}"),
                            "20000"], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.strip() == "stale 0 of 20000"


def test_reads_that_begin_after_direct_writes_alone(mounted):
    """The daemon stops invalidating a file nobody reads through the
    cache; the first buffered read must start it again."""
    r = subprocess.run([str(DIO_STALE), str(mounted.mnt / "late"), "20000",
                        "late"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "stale 0 of 10000"


def test_async_direct_writes_with_writeback_cache(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount("writeback")
    r = subprocess.run([str(DIO_STALE), str(v.mnt / "f"), "20000"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
