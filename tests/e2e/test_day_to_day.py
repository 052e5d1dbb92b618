# SPDX-License-Identifier: MIT
"""Day-to-day operation without surprises (issue 32, items 1, 2 and 4):
a replace onto a file of the volume's own mount is refused with a clear
message instead of hanging the daemon; a damaged file deleted just
before an unmount leaves a volume fsck -n finds clean; a failed
fallocate gives back all the space it took."""
import errno
import os
import subprocess

import pytest

from conftest import CTL
from dgfault import fsck, inject, replace_status

PAGE = 4096


def abort_connection(mnt_dev):
    """Abort the FUSE connection of st_dev mnt_dev (a hung daemon, whose
    stuck thread keeps /dev/fuse open: no kill ends it). fusectl is
    mounted in a mount namespace of its own when it is not mounted."""
    path = f"/sys/fs/fuse/connections/{os.minor(mnt_dev)}/abort"
    try:
        with open(path, "w") as f:
            f.write("1\n")
        return
    except OSError:
        pass
    subprocess.run(["unshare", "-m", "sh", "-c",
                    "mount -t fusectl none /sys/fs/fuse/connections && "
                    f"echo 1 > {path}"], capture_output=True, timeout=30)


def ctl_bounded(v, *args, timeout=30):
    """daxguard-ctl with a deadline: a daemon that hangs (the old
    behaviour) fails the test instead of blocking the suite, and its
    connection is aborted so the teardown can unmount."""
    dev = os.stat(v.mnt).st_dev
    try:
        return subprocess.run([str(CTL), str(v.mnt)] + [str(a) for a in args],
                              capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        abort_connection(dev)
        pytest.fail(f"daxguard-ctl {' '.join(map(str, args))}: no answer "
                    f"in {timeout} s (the daemon hangs)")


def test_replace_onto_its_own_mount_is_refused(volume_factory, tmp_path):
    """Item 1: the target inside the mount, directly or through a link
    outside it, is refused before anything is created; the daemon goes
    on answering and the volume is as it was."""
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    v.mount()
    (v.mnt / "f").write_bytes(b"y" * 50000)
    (v.mnt / "sub").mkdir()
    link = tmp_path / "into-mount"
    link.symlink_to(v.mnt / "sub")
    for target in (v.mnt / "new.img", link / "new.img"):
        p = ctl_bounded(v, "replace", 2, target)
        assert p.returncode == 1, (target, p)
        assert p.stdout.startswith(f"error: '{target}' is on this volume's "
                                   f"own mount ({v.mnt})"), p.stdout
        assert "give a path on another file system" in p.stdout, p.stdout
        assert not os.path.lexists(target), target
    assert replace_status(v)["state"] == "none"
    st = v.status()
    assert [d["state"] for d in st["device_table"]] == ["online"] * 4, st
    assert (v.mnt / "f").read_bytes() == b"y" * 50000
    assert sorted(os.listdir(v.mnt)) == ["f", "lost+found", "sub"] or \
        sorted(os.listdir(v.mnt)) == ["f", "sub"]


def test_rm_of_a_damaged_file_then_umount_is_clean(volume_factory):
    """Item 2: a file whose page is lost beyond parity is read (EIO, the
    daemon learns of the loss), deleted, and the volume unmounted at
    once: the unmount resets the freed lost page, so fsck -n exits 0.
    Before, the reset was left to a background sweep the unmount cut
    short, and fsck found the free page bad (exit 4)."""
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs("--meta-size", "none")
    v.mount()
    (v.mnt / "victim").write_bytes(os.urandom(PAGE))
    (v.mnt / "keep").write_bytes(b"k" * 3 * PAGE)
    v.umount()
    rep, _ = inject(v.devs, "zero", "data", seed=1,
                    extra=["--file", "/victim", "--count", "2",
                           "--same-row"])
    assert {c["structure"] for c in rep["changes"]} >= {"data"}, rep
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 4, p.stdout + p.stderr          # the loss is there
    v.expect_log(r"fault|unrecoverable|read error|EIO|Input/output|lost")
    v.mount()
    with pytest.raises(OSError) as e:
        (v.mnt / "victim").read_bytes()
    assert e.value.errno == errno.EIO
    os.unlink(v.mnt / "victim")
    v.umount()
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    v.mount()
    assert (v.mnt / "keep").read_bytes() == b"k" * 3 * PAGE


def free_bytes(mnt):
    s = os.statvfs(mnt)
    return s.f_bfree * s.f_frsize, s.f_bavail * s.f_frsize


def fallocate(path, length, keep_size=False):
    cmd = ["fallocate", "-l", str(length)] + (["-n"] if keep_size else []) \
        + [str(path)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_failed_fallocate_gives_the_space_back(volume_factory):
    """Item 4: fallocate far beyond the free space fails ENOSPC and
    leaves df as it was, the file as it was; one just beyond it, which
    may fail only on the way, too. Before, the file kept every page
    allocated until the failure (df at 100 %)."""
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    v.mount()
    f = v.mnt / "f"
    f.write_bytes(b"d" * 5 * PAGE)
    os.sync()
    before = free_bytes(v.mnt)
    for length in (10 << 30, before[1] + 5 * PAGE + PAGE):
        for keep in (False, True):
            p = fallocate(f, length, keep_size=keep)
            assert p.returncode != 0, (length, keep, p)
            assert "No space left on device" in p.stderr, p.stderr
            assert free_bytes(v.mnt) == before, (length, keep)
            assert f.stat().st_size == 5 * PAGE
            assert f.stat().st_blocks * 512 <= 5 * PAGE + 4 * PAGE, \
                f.stat()
            assert f.read_bytes() == b"d" * 5 * PAGE
    # The space is there to use: a fallocate that fits works.
    p = fallocate(v.mnt / "g", 1 << 20)
    assert p.returncode == 0, p
    assert (v.mnt / "g").stat().st_size == 1 << 20
    # What was given back is accounted on the media too (block counts,
    # allocation bitmap).
    v.umount()
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
