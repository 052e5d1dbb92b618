# SPDX-License-Identifier: MIT
"""A device's mapping that the kernel can no longer back -- an image
file cut short under the daemon (likewise a sparse image whose file
system is full, or poisoned pmem) -- raises SIGBUS on the next load or
store there. The daemon lives on: the volume latches read-only with the
device and offset as the reason, reads come back from parity (or say
EIO, never wrong bytes), writes fail, and it unmounts cleanly. With the
image's size back, fsck rebuilds the lost pages from parity. The same
for sparse images on a file system that fills up (a tmpfs of 8 MiB).

fsck on an image cut short while unmounted: the open finds it shorter
than its superblock says and says so; fsck ends with a status, not a
signal."""
import errno
import json
import os
import subprocess

import pytest

from conftest import BUILD, FSCK, run

DUMPFS = BUILD / "dump" / "dumpfs.daxguard"
PAGE = 4096
SIZE = 64 << 20


def rows_past_zone(v):
    """The device byte where the rows past the metadata zone begin: file
    data lies there, metadata before it."""
    d = json.loads(run([DUMPFS, "--json"] + v.devs).stdout)
    sb = d["devices"][0]["superblocks"][0]["fields"]
    return (sb["data_start"] + d["geometry"]["zone_rows"]) * PAGE


def write_synced(path, data):
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def unmount_alive(v):
    """Unmount a daemon that must have lived through the fault: it ends
    with a status, not a signal."""
    daemon = v.daemon
    v.umount()
    assert daemon.returncode is not None and daemon.returncode >= 0, \
        v.read_log()


def repair_and_mount(v):
    """With the room back: fsck -y repairs, fsck -n then finds nothing,
    and the volume mounts."""
    p = run([FSCK, "-y", v.devlist], check=False)
    assert p.returncode in (0, 1), p.stdout + p.stderr
    p = run([FSCK, "-n", v.devlist], check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    v.mount()


def test_image_cut_under_the_daemon(volume_factory):
    v = volume_factory()
    v.mkfs()
    cut = rows_past_zone(v)
    v.mount()
    # 8 MiB: rows of two chunks and more, so every device holds some of
    # the file's data (parity rotates a chunk at a time).
    data = os.urandom(8 << 20)
    write_synced(v.mnt / "f", data)
    victim = v.devs[1]
    os.truncate(victim, cut)
    v.drop_caches()             # the reads reach the daemon
    v.expect_log(r"SIGBUS at byte \d+ \(image truncated, file system full, "
                 r"or media poisoned\): volume read-only until remount")

    try:
        got = (v.mnt / "f").read_bytes()
    except OSError as e:
        assert e.errno == errno.EIO, e
        got = None
    assert v.daemon.poll() is None, v.read_log()
    assert got is None or got == data
    st = v.status()
    assert st["health"] == "failed" and st["read_only"], st
    assert "SIGBUS at byte" in st["failed"], st
    assert str(victim) in st["failed"], st
    text = v.ctl("status").stdout
    assert "health FAILED (device " in text, text
    with pytest.raises(OSError) as e:
        (v.mnt / "g").write_bytes(b"new")
    assert e.value.errno in (errno.EIO, errno.EROFS), e.value
    assert v.daemon.poll() is None, v.read_log()

    unmount_alive(v)

    # The size back: the cut pages read zeros, which fail their
    # checksums; parity on the other devices has them.
    os.truncate(victim, SIZE)
    repair_and_mount(v)
    assert (v.mnt / "f").read_bytes() == data
    assert v.status()["health"] == "ok"


def pages_old_or_new(got, old, new):
    """Each 4 KiB page of got is old's or new's: an update is whole or
    not there, and a page is never zeros nor a mix."""
    assert len(got) == len(old)
    bad = [i for i in range(0, len(old), PAGE)
           if got[i:i + PAGE] not in (old[i:i + PAGE], new[i:i + PAGE])]
    assert not bad, f"{len(bad)} pages neither old nor new, first at {bad[0]}"


def test_write_into_a_cut_image(volume_factory):
    """The store that faults is a write's own: the write fails, the pages
    read back old or new, and after a remount with the size back the
    journal and fsck make the volume whole."""
    v = volume_factory()
    v.mkfs()
    cut = rows_past_zone(v)
    v.mount()
    old = os.urandom(8 << 20)
    new = os.urandom(8 << 20)
    write_synced(v.mnt / "f", old)
    victim = v.devs[2]
    os.truncate(victim, cut)
    v.expect_log(r"SIGBUS at byte \d+ \(image truncated, file system full, "
                 r"or media poisoned\): volume read-only until remount|"
                 r"filesystem update failed|refusing further changes")

    fd = os.open(v.mnt / "f", os.O_WRONLY)
    try:
        with pytest.raises(OSError) as e:
            os.pwrite(fd, new, 0)
            os.fsync(fd)
        assert e.value.errno in (errno.EIO, errno.EROFS), e.value
    finally:
        os.close(fd)
    assert v.daemon.poll() is None, v.read_log()
    st = v.status()
    assert st["health"] == "failed" and "SIGBUS at byte" in st["failed"], st
    v.drop_caches()
    pages_old_or_new((v.mnt / "f").read_bytes(), old, new)
    unmount_alive(v)

    os.truncate(victim, SIZE)
    repair_and_mount(v)
    pages_old_or_new((v.mnt / "f").read_bytes(), old, new)
    assert v.status()["health"] == "ok"


@pytest.fixture
def small_fs(tmp_path):
    """A tmpfs of 8 MiB of its own (root), unmounted at the end: sparse
    images on it fill it up long before their size."""
    d = tmp_path / "small"
    d.mkdir()
    # huge=never: a tmpfs mounted (or defaulted) with huge pages would
    # take room 2 MiB at a time and fill up at another point.
    p = subprocess.run(["mount", "-t", "tmpfs", "-o",
                        "size=8m,mode=0700,huge=never", "tmpfs", str(d)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


def test_sparse_images_on_a_full_file_system(small_fs, volume_factory):
    """A store into a hole of a sparse image whose file system is full
    faults as a cut image does: the write fails, what was committed
    stays, and with room again fsck finishes the journal."""
    v = volume_factory()
    v.devs = [small_fs / f"d{i}.img" for i in range(4)]
    try:
        v.mkfs()
    except AssertionError as e:
        # mkfs's own writes (headers, zeroed tables) did not fit: this
        # machine's tmpfs takes more room than the test expects.
        if "No space left" in str(e) or "ENOSPC" in str(e):
            pytest.skip(f"mkfs does not fit on the 8 MiB tmpfs: {e}")
        raise
    v.mount()
    small = os.urandom(1 << 20)
    write_synced(v.mnt / "small", small)
    v.expect_log(r"SIGBUS at byte \d+ \(image truncated, file system full, "
                 r"or media poisoned\): volume read-only until remount|"
                 r"filesystem update failed|refusing further changes")
    big = os.urandom(16 << 20)      # twice the room left
    with pytest.raises(OSError) as e:
        with open(v.mnt / "big", "wb") as f:
            f.write(big)
            f.flush()
            os.fsync(f.fileno())
    assert e.value.errno in (errno.EIO, errno.EROFS), e.value
    assert v.daemon.poll() is None, v.read_log()
    st = v.status()
    assert st["health"] == "failed" and "SIGBUS at byte" in st["failed"], st
    v.drop_caches()
    assert (v.mnt / "small").read_bytes() == small
    unmount_alive(v)

    subprocess.run(["mount", "-o", "remount,size=512m", str(small_fs)],
                   check=True)
    repair_and_mount(v)
    assert (v.mnt / "small").read_bytes() == small
    got = (v.mnt / "big").read_bytes()  # the pieces committed, whole
    assert got == big[:len(got)]
    v.umount()


def test_fsck_on_an_image_cut_short(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount()
    (v.mnt / "f").write_bytes(os.urandom(1 << 20))
    v.umount()
    os.truncate(v.devs[2], rows_past_zone(v))
    p = run([FSCK, "-n", v.devlist], check=False)
    out = p.stdout + p.stderr
    assert p.returncode == 4, out       # errors left: a status, no signal
    assert "truncated" in out, out
