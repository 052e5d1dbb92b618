# SPDX-License-Identifier: MIT
"""Issue 32, item 11: fstrim (FITRIM) gives the space of deleted files
back to sparse device images, as ext4 and XFS give it back to a thin
device: du of the images drops, every file still reads exactly, and
the volume is clean for fsck afterwards, also when the daemon is killed
in the middle of a trim."""
import hashlib
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from dgfault import fsck

MIB = 1 << 20


def need_fstrim():
    if os.geteuid() != 0:
        pytest.skip("FITRIM needs root")
    if not shutil.which("fstrim"):
        pytest.skip("fstrim (util-linux) is not installed")


def du(devs):
    """Bytes the images hold (st_blocks), all together."""
    return sum(os.stat(d).st_blocks * 512 for d in devs)


def fstrim(mnt, *opts):
    p = subprocess.run(["fstrim", "-v", *opts, str(mnt)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    m = re.search(r"\((\d+) bytes\) trimmed", p.stdout)
    assert m, p.stdout
    return int(m.group(1))


def write_random(path, size, seed):
    """A file of size pseudo-random bytes (incompressible, distinct per
    seed): its sha256."""
    h = hashlib.sha256()
    with open(path, "wb") as f:
        for i in range(size // MIB):
            block = hashlib.sha256(f"{seed}:{i}".encode()).digest() * \
                (MIB // 32)
            f.write(block)
            h.update(block)
    return h.hexdigest()


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_fstrim_gives_freed_space_back(volume_factory):
    need_fstrim()
    v = volume_factory(ndev=4, size="64M", parity=1)
    v.mkfs()
    v.mount()
    keep = write_random(v.mnt / "keep", 4 * MIB, "keep")
    (v.mnt / "dir").mkdir()
    (v.mnt / "dir" / "small").write_bytes(b"small\n")
    write_random(v.mnt / "big", 64 * MIB, "big")
    os.sync()
    full = du(v.devs)
    os.unlink(v.mnt / "big")
    os.sync()
    trimmed = fstrim(v.mnt)
    assert trimmed >= 60 * MIB, trimmed
    after = du(v.devs)
    # 64 MiB of data is more than 80 MiB of pages with parity.
    assert full - after >= 56 * MIB, (full, after)
    # Nothing is left to give back; a minimum above the volume's size
    # skips every run.
    assert fstrim(v.mnt) == 0
    write_random(v.mnt / "big2", 8 * MIB, "big2")
    os.unlink(v.mnt / "big2")
    assert fstrim(v.mnt, "--minimum", "1G") == 0
    v.drop_caches()
    assert sha(v.mnt / "keep") == keep
    assert (v.mnt / "dir" / "small").read_bytes() == b"small\n"
    # Trimmed rows are written again as any free row.
    again = write_random(v.mnt / "again", 32 * MIB, "again")
    v.drop_caches()
    assert sha(v.mnt / "again") == again
    v.umount()
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0 and rep["findings"] == [], p.stdout + p.stderr
    v.mount()
    assert sha(v.mnt / "keep") == keep and sha(v.mnt / "again") == again
    assert "trim: " in v.read_log()


def test_discard_gives_freed_space_back_at_once(volume_factory):
    """-o discard: a deleted file's rows are given back as the delete
    becomes durable (fs/volume/blank.c), without fstrim -- du of the
    images drops, what is kept reads exactly, fstrim finds nothing left,
    rows given back are written again, and fsck finds nothing."""
    v = volume_factory(ndev=4, size="64M", parity=1)
    v.mkfs()
    v.mount("discard")
    keep = write_random(v.mnt / "keep", 4 * MIB, "keep")
    write_random(v.mnt / "big", 32 * MIB, "big")
    os.sync()
    full = du(v.devs)
    os.unlink(v.mnt / "big")
    v.wait_blanked()
    # 32 MiB of data is more than 40 MiB of pages with parity.
    assert full - du(v.devs) >= 28 * MIB, (full, du(v.devs))
    assert v.status()["freed_rows_blanked"] >= 32 * MIB // (3 * 4096)
    assert v.status()["freed_runs_not_blanked"] == 0
    if os.geteuid() == 0 and shutil.which("fstrim"):
        assert fstrim(v.mnt) == 0
    again = write_random(v.mnt / "again", 16 * MIB, "again")
    v.drop_caches()
    assert sha(v.mnt / "keep") == keep and sha(v.mnt / "again") == again
    v.umount()
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0 and rep["findings"] == [], p.stdout + p.stderr
    # Without the option nothing is given back until fstrim asks.
    v.mount()
    os.unlink(v.mnt / "again")
    os.sync()
    time.sleep(0.2)
    assert v.status()["freed_rows_blanked"] == 0


def test_discard_without_redundancy_is_reported(volume_factory):
    """-o discard on a volume with no checksum to say a row was given
    back (--redundancy none): the daemon says why in its log, mounts,
    and gives nothing back."""
    v = volume_factory(ndev=4, size="64M", redundancy="none")
    v.mkfs()
    v.expect_log(r"discard: freed rows are not given back on this volume")
    v.mount("discard")
    write_random(v.mnt / "big", 8 * MIB, "big")
    os.unlink(v.mnt / "big")
    os.sync()
    st = v.status()
    assert st["freed_rows_blanked"] == 0 and \
        st["freed_pages_to_blank"] == 0, st
    assert "discard: freed rows are not given back on this volume" in \
        v.read_log()


def test_fitrim_other_ioctls_are_not_supported(mounted):
    """An ioctl other than FITRIM is ENOTTY (what an application probing
    for features expects), not a hang or EIO."""
    import fcntl
    import errno
    fd = os.open(mounted.mnt, os.O_RDONLY)
    try:
        with pytest.raises(OSError) as e:
            fcntl.ioctl(fd, 0x80086601, b"\0" * 8)   # FS_IOC_GETFLAGS
        assert e.value.errno in (errno.ENOTTY, errno.EINVAL,
                                 errno.ENOSYS), e.value
    finally:
        os.close(fd)


def test_kill_during_fstrim_leaves_a_clean_volume(volume_factory):
    """The daemon killed at some point of a trim: whatever rows it had
    done, half done or not begun, the volume is consistent (trim.c's
    three steps), and a new mount trims the rest."""
    need_fstrim()
    v = volume_factory(ndev=4, size="64M", parity=1)
    v.mkfs()
    v.mount()
    keep = write_random(v.mnt / "keep", 4 * MIB, "keep")
    write_random(v.mnt / "big", 96 * MIB, "big")
    os.unlink(v.mnt / "big")
    os.sync()
    t = subprocess.Popen(["fstrim", str(v.mnt)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    # Wait until the trim has begun (some image shrank), then kill.
    before = du(v.devs)
    deadline = time.time() + 30
    while du(v.devs) >= before and t.poll() is None and \
            time.time() < deadline:
        time.sleep(0.005)
    v.kill9()
    t.wait(timeout=60)
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    # A crash leaves committed updates for the next mount to replay:
    # that is all fsck may find, with no other finding.
    codes = {f["code"] for f in rep["findings"]}
    assert codes <= {"PR_1_JOURNAL_PENDING"}, p.stdout + p.stderr
    v.mount()
    assert sha(v.mnt / "keep") == keep
    fstrim(v.mnt)
    v.umount()
    assert du(v.devs) < before - 64 * MIB
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0 and rep["findings"] == [], p.stdout + p.stderr
