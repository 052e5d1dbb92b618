# SPDX-License-Identifier: MIT
"""Files the tools create, links they follow, what a reader may change
(issue 30, items 1, 6, 7, 9).

Whoever may read a device image reads every file of the volume, so every
image or log a daxguard tool or the daemon creates is 0600 whatever the
umask; an existing image is made 0600 by mkfs, and fsck and mount warn
about one that is not. Root's tools follow a symlink in a sticky,
world-writable directory only when root or the directory's owner owns it
(the kernel's protected_symlinks rule, applied by the tools even with
fs.protected_symlinks=0). A read-only libcommit map allocates nothing,
and system.* names other than the POSIX ACLs get EOPNOTSUPP, as on
ext4."""
import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import MKFS, run
from dgfault import fsck, system_user, wait_replace

USER = "dg-modes"
CHILD = Path(MKFS).parents[1] / "tests" / "e2e" / "commit_child"
PAGE = 4096


def mode(p):
    return os.lstat(p).st_mode & 0o7777


def snapshot(p):
    """What a file is: its bytes, mode, owner and size (a victim must
    come out of a refusal exactly as it went in)."""
    st = os.lstat(p)
    return (Path(p).read_bytes(), st.st_mode, st.st_uid, st.st_size)


@pytest.fixture(scope="module")
def user():
    """A real unprivileged account, removed at the end."""
    with system_user(USER) as pw:
        yield pw.pw_uid, pw.pw_gid


def as_user(user, cmd, cwd):
    """Run cmd as the user, no supplementary groups, from cwd (a relative
    path then needs search permission on the mount only)."""
    uid, gid = user
    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}",
                           "--clear-groups", "--", *map(str, cmd)],
                          cwd=cwd, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(params=[0o022, 0o000], ids=["umask022", "umask000"])
def umask(request):
    """The umask the tools (and a daemon started now) run with."""
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


@pytest.fixture
def no_protected_symlinks():
    """fs.protected_symlinks=0, as some systems have it: whatever refuses
    a planted link is then the tool, not the kernel."""
    knob = Path("/proc/sys/fs/protected_symlinks")
    old = knob.read_text()
    knob.write_text("0\n")
    try:
        yield
    finally:
        knob.write_text(old)


@pytest.fixture
def sticky():
    """A directory like /tmp: root's, mode 1777."""
    d = Path(tempfile.mkdtemp(prefix="dg-e2e-modes-", dir="/dev/shm"))
    os.chmod(d, 0o1777)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def private(tmp_path):
    """A directory only root writes to, for victims and targets."""
    d = tmp_path / "root-only"
    d.mkdir(mode=0o755)
    return d


def plant(link, target, user):
    """A symlink the user made (lchown: as if they had)."""
    os.symlink(target, link)
    os.lchown(link, *user)
    return link


# ---- created files are 0600, whatever the umask --------------------------

def test_mkfs_images_are_private(volume_factory, private, umask):
    v = volume_factory(ndev=2, size="32M")
    p = run([MKFS, "--size", "32M"] + v.devs)
    assert [mode(d) for d in v.devs] == [0o600, 0o600], p.stderr
    # An existing image readable by others is made private, and said so.
    old = private / "old.img"
    with open(old, "wb") as f:
        f.truncate(32 << 20)
    os.chmod(old, 0o644)
    new = private / "new.img"
    p = run([MKFS, "--size", "32M", old, new])
    assert mode(old) == 0o600 and mode(new) == 0o600
    assert f"'{old}' was readable by others" in p.stderr, p.stderr
    assert "now 0600" in p.stderr


def test_mkfs_refuses_a_file_of_data_without_force(private):
    text = private / "notes.txt"
    text.write_text("root's notes\n" * 100)
    before = snapshot(text)
    p = run([MKFS, "--size", "32M", text], check=False)
    assert p.returncode == 1
    assert p.stderr == (f"mkfs.daxguard: '{text}' holds data but no daxguard "
                        f"superblock; use --force to overwrite it\n")
    assert snapshot(text) == before
    # A sparse (all-zero) file is an image to be, as before.
    sparse = private / "sparse.img"
    with open(sparse, "wb") as f:
        f.truncate(32 << 20)
    run([MKFS, "-q", sparse])


def test_fsck_rebuild_is_private(volume_factory, umask):
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    v.devs[3].unlink()
    rc, _, p = fsck(v.devs, "-y")
    assert rc == 1, p.stdout + p.stderr
    assert mode(v.devs[3]) == 0o600
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    # An empty file readable by others that a device is rebuilt onto
    # becomes private before the device is written there.
    os.truncate(v.devs[2], 0)
    os.chmod(v.devs[2], 0o644)
    rc, _, p = fsck(v.devs, "-y")
    assert rc == 1, p.stdout + p.stderr
    assert mode(v.devs[2]) == 0o600


def test_fsck_and_mount_warn_about_a_wide_image(volume_factory):
    v = volume_factory(ndev=2, size="32M")
    v.mkfs()
    os.chmod(v.devs[1], 0o640)
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0
    assert (f"fsck.daxguard: warning: '{v.devs[1]}' is readable by others "
            f"(group/other bits 040)") in p.stderr, p.stderr
    assert mode(v.devs[1]) == 0o640         # fsck says so, changes nothing
    v.expect_log(r"is readable by others")
    v.mount()
    v.umount()
    assert f"warning: '{v.devs[1]}' is readable by others" in v.read_log()


def test_replace_target_and_log_are_private(volume_factory, private, umask):
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    log = private / "daxguard.log"
    v.mount(f"log={log}")
    assert log.exists() and mode(log) == 0o600
    new = private / "new1.img"
    p = v.ctl("replace", 1, new, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    old = v.devs[1]
    v.devs[1] = new                 # the volume's device 1 from now on
    old.unlink()                    # cleanup() removes v.devs
    assert mode(new) == 0o600
    assert wait_replace(v)["state"] == "finished"
    v.umount()
    # The log was written to, and stayed private.
    assert log.stat().st_size > 0 and mode(log) == 0o600
    # An existing log is appended to, never through a link.
    size = log.stat().st_size
    v.mount(f"log={log}")
    v.umount()
    assert log.stat().st_size > size and mode(log) == 0o600
    link = private / "link.log"
    link.symlink_to(log)
    with pytest.raises(AssertionError, match="cannot open log file"):
        v.mount(f"log={link}")
    assert log.stat().st_size > size and mode(log) == 0o600


# ---- planted symlinks -----------------------------------------------------

def test_mkfs_refuses_a_planted_link(user, sticky, private,
                                     no_protected_symlinks):
    victim = private / "passwd-like"
    victim.write_text("root:x:0:0::/root:/bin/sh\n")
    before = snapshot(victim)
    link = plant(sticky / "img", victim, user)
    p = run([MKFS, "--force", "--size", "64M", link], check=False)
    assert p.returncode == 1, p.stdout
    assert "protected_symlinks" in p.stderr and str(link) in p.stderr
    assert snapshot(victim) == before
    # A link to nothing: nothing is created where it points.
    absent = private / "absent.img"
    link2 = plant(sticky / "img2", absent, user)
    p = run([MKFS, "--size", "32M", link2], check=False)
    assert p.returncode == 1 and "protected_symlinks" in p.stderr
    assert not absent.exists()
    # Root's own link in the same directory is followed.
    mine = sticky / "mine"
    mine.symlink_to(private / "mine.img")
    run([MKFS, "-q", "--size", "32M", mine])
    assert mode(private / "mine.img") == 0o600


def test_fsck_refuses_a_planted_link(volume_factory, user, private,
                                     no_protected_symlinks):
    """Device 3 is gone; a user plants a link where it was (/dev/shm is
    sticky and world-writable) to an empty root-owned file, which a
    rebuild would otherwise fill."""
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    v.devs[3].unlink()
    victim = private / "empty-root-file"
    victim.write_bytes(b"")
    before = snapshot(victim)
    plant(v.devs[3], victim, user)
    rc, _, p = fsck(v.devs, "-y")
    assert rc == 8, p.stdout + p.stderr
    assert "protected_symlinks" in p.stderr, p.stderr
    assert snapshot(victim) == before


def test_replace_refuses_a_planted_link(volume_factory, user, sticky,
                                        private, no_protected_symlinks):
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    v.mount()
    absent = private / "made-by-root.img"
    empty = private / "empty"
    empty.write_bytes(b"")
    before = snapshot(empty)
    for target in (absent, empty):
        link = plant(sticky / f"to-{target.name}", target, user)
        p = v.ctl("replace", 1, link, check=False)
        assert p.returncode == 1, p.stdout
        assert "protected_symlinks" in p.stdout, p.stdout
    assert not absent.exists()
    assert snapshot(empty) == before
    assert json.loads(v.ctl("replace", "status", "--json").stdout)[
        "state"] in ("none", "idle"), "nothing started"


# ---- what a reader may change ----------------------------------------------

@pytest.fixture
def shared(volume_factory, user):
    """A volume mounted with allow_other, its mount point reachable."""
    v = volume_factory(ndev=4, size="512M", parity=1)
    v.mkfs()
    v.mount("allow_other")
    os.chmod(v.mnt, 0o755)
    return v


def test_read_only_map_allocates_nothing(shared, user):
    if not CHILD.exists():
        pytest.skip("commit_child not built")
    f = shared.mnt / "sparse"
    with open(f, "wb") as fh:
        fh.truncate(1 << 30)
        fh.seek(512 << 20)
        fh.write(b"middle")
    os.chmod(f, 0o644)
    blocks = os.stat(f).st_blocks
    # The user may only read it: a map through the mount.
    p = as_user(user, [CHILD, "sparse", "map ro 0 0", "direct",
                       f"read {512 << 20} 6", "read 4096 8", "unmap"],
                cwd=shared.mnt)
    assert p.returncode == 0 and "err" not in p.stdout, p.stdout + p.stderr
    out = p.stdout.splitlines()
    assert out[0] == f"ok {1 << 30}" and out[1] == "ok 0", out
    assert out[2] == "ok " + b"middle".hex() and out[3] == "ok " + "00" * 8
    assert os.stat(f).st_blocks == blocks
    # Root's map is direct: the holes come from no device, as zeros.
    p = subprocess.run([str(CHILD), str(f), "map ro 0 0", "direct",
                        f"read {512 << 20} 6", f"read {(1 << 30) - 8} 8",
                        "unmap"], capture_output=True, text=True, timeout=120)
    out = p.stdout.splitlines()
    assert p.returncode == 0 and out[1] == "ok 1", p.stdout + p.stderr
    assert out[2] == "ok " + b"middle".hex() and out[3] == "ok " + "00" * 8
    assert os.stat(f).st_blocks == blocks
    assert f.read_bytes()[512 << 20:(512 << 20) + 6] == b"middle"


SETX = ("import os, sys\n"
        "try:\n"
        "    os.setxattr(sys.argv[1], sys.argv[2], b'1')\n"
        "    print('ok')\n"
        "except OSError as e:\n"
        "    print(e.errno)\n")


def test_system_names_are_not_stored(shared, user):
    root_file = shared.mnt / "root-only"
    root_file.write_bytes(b"x")
    os.chmod(root_file, 0o600)
    mine = shared.mnt / "users"
    mine.write_bytes(b"y")
    os.chown(mine, *user)
    for name in ("root-only", "users", "."):
        p = as_user(user, [sys.executable, "-c", SETX, name, "system.x"],
                    cwd=shared.mnt)
        assert p.stdout.strip() == str(errno.EOPNOTSUPP), (name, p.stdout,
                                                           p.stderr)
    # Root gets no further: the name is not one this filesystem keeps.
    with pytest.raises(OSError) as e:
        os.setxattr(root_file, "system.x", b"1")
    assert e.value.errno == errno.EOPNOTSUPP
    with pytest.raises(OSError) as e:
        os.getxattr(root_file, "system.x")
    assert e.value.errno == errno.EOPNOTSUPP
    assert not [n for n in os.listxattr(root_file) if n.startswith("system.")]
    # The owner's ACL is stored as ever.
    if shutil.which("setfacl"):
        p = as_user(user, ["setfacl", "-m", "u:root:r", "users"],
                    cwd=shared.mnt)
        assert p.returncode == 0, p.stderr
        assert "system.posix_acl_access" in os.listxattr(mine)
