# SPDX-License-Identifier: MIT
"""A write to the media that cannot be made durable (msync fails, as
write-back to a failing disk does) latches the volume read-only: the
write that met it gets EIO, later changes EROFS, fsync EIO, and
`daxguard-ctl status` says FAILED with the reason (health "failed" and
"failed" in --json). After a remount the journal redoes what was not in
place: every file holds its old or its new bytes, never a mix."""
import errno
import os

import pytest

from conftest import BUILD, FSCK, run

FAIL_SYSCALLS = BUILD / "tests" / "e2e" / "fail_syscalls.so"


@pytest.fixture
def failing_disk(tmp_path, monkeypatch):
    """The daemon persists with msync (not the tmpfs fence), and msync
    fails while the returned flag file exists."""
    if not FAIL_SYSCALLS.exists():
        pytest.skip("fail_syscalls.so not built")
    flag = tmp_path / "msync-fails"
    monkeypatch.setenv("LD_PRELOAD", str(FAIL_SYSCALLS))
    monkeypatch.setenv("DG_FAIL_NOT_TMPFS", "1")
    monkeypatch.setenv("DG_FAIL_MSYNC_FLAG", str(flag))
    return flag


def test_failed_persist_latches_read_only(volume_factory, failing_disk,
                                          monkeypatch):
    v = volume_factory()
    v.mkfs()
    v.mount()
    old = os.urandom(3 * 4096)
    (v.mnt / "f").write_bytes(old)
    st = v.status()
    assert st["health"] == "ok" and st["failed"] is None, st

    failing_disk.touch()
    new = os.urandom(3 * 4096)
    fd = os.open(v.mnt / "f", os.O_WRONLY)
    try:
        with pytest.raises(OSError) as e:
            os.pwrite(fd, new, 0)
        assert e.value.errno == errno.EIO, e.value
        with pytest.raises(OSError) as e:
            os.fsync(fd)
        assert e.value.errno == errno.EIO, e.value
    finally:
        os.close(fd)
    failing_disk.unlink()       # the disk is back: the latch stays
    with pytest.raises(OSError) as e:
        (v.mnt / "g").write_bytes(b"x")
    assert e.value.errno == errno.EROFS, e.value
    assert (v.mnt / "f").read_bytes() in (old, new)   # reads go on

    st = v.status()
    assert st["health"] == "failed" and st["read_only"], st
    assert "persist of" in st["failed"] and "Input/output error" in \
        st["failed"], st
    text = v.ctl("status").stdout
    assert "health FAILED (persist of" in text and "read-only" in text, text
    v.expect_log(r"volume read-only until remount|filesystem update "
                 r"failed|refusing further changes")

    v.umount()
    monkeypatch.delenv("LD_PRELOAD")
    v.mount()
    try:
        got = (v.mnt / "f").read_bytes()
        assert got in (old, new)
        assert not (v.mnt / "g").exists()
        st = v.status()
        assert st["health"] == "ok" and st["failed"] is None, st
        (v.mnt / "g").write_bytes(b"writable again")
    finally:
        v.umount()
    p = run([FSCK, "-n", v.devlist], check=False)
    assert p.returncode == 0, p.stdout + p.stderr
