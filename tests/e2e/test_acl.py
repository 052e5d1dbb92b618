# SPDX-License-Identifier: MIT
"""POSIX ACLs (fs/fsys/acl.c): the kernel enforces them
(FUSE_CAP_POSIX_ACL), the daemon keeps mode and access ACL one truth
both ways, inherits default ACLs, and applies the umask only where no
default ACL does (FUSE_CAP_DONT_MASK). Checked with setfacl/getfacl, as
an administrator would, and as nobody through setpriv."""
import os
import shutil
import stat
import subprocess

import pytest

from conftest import FSCK

NOBODY = 65534
GROUP = 4242

pytestmark = pytest.mark.skipif(shutil.which("setfacl") is None,
                                reason="needs setfacl/getfacl (acl)")


def sh(cmd, user=False, umask=None, groups=()):
    pre = f"umask {umask:03o}; " if umask is not None else ""
    argv = ["sh", "-c", pre + cmd]
    if user:
        sup = ",".join(map(str, groups))
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                f"--groups={sup}" if sup else "--clear-groups"] + argv
    return subprocess.run(argv, capture_output=True, text=True)


def getfacl(p):
    r = subprocess.run(["getfacl", "-cpE", str(p)], capture_output=True,
                       text=True, check=True)
    return [ln for ln in r.stdout.splitlines() if ln]


def mode_of(p):
    """As ls -l shows it, "+" for an ACL included."""
    r = subprocess.run(["ls", "-ld", str(p)], capture_output=True,
                       text=True, check=True)
    return r.stdout.split()[0]


@pytest.fixture
def vol(volume_factory):
    v = volume_factory()
    v.mkfs()
    for d in v.mnt.parents:
        if str(d).startswith("/tmp/pytest-of-"):
            os.chmod(d, 0o755)
    v.mount("allow_other")
    os.chmod(v.mnt, 0o1777)
    return v


def test_chmod_rewrites_the_mask_and_setfacl_the_mode(vol):
    f = vol.mnt / "f"
    f.write_bytes(b"x")
    os.chmod(f, 0o744)
    subprocess.run(["setfacl", "-m", "u:nobody:rw", str(f)], check=True)
    # The mask became the group bits of the mode.
    assert mode_of(f) == "-rwxrw-r--+"
    os.chmod(f, 0o676)
    assert mode_of(f) == "-rw-rwxrw-+"
    assert getfacl(f) == ["user::rw-", "user:nobody:rw-", "group::r--",
                          "mask::rwx", "other::rw-"]
    # A mask set through setfacl is the group bits of the mode.
    subprocess.run(["setfacl", "-m", "m::r", str(f)], check=True)
    assert mode_of(f) == "-rw-r--rw-+"
    # Removing the ACL keeps the mode as it was.
    subprocess.run(["setfacl", "-b", str(f)], check=True)
    assert mode_of(f) == "-rw-r--rw-"
    assert getfacl(f) == ["user::rw-", "group::r--", "other::rw-"]
    assert "system.posix_acl_access" not in os.listxattr(f)
    # An ACL of base entries only is the mode: no ACL is stored.
    subprocess.run(["setfacl", "-m", "u::r,g::rw,o::-", str(f)], check=True)
    assert mode_of(f) == "-r--rw----"
    assert "system.posix_acl_access" not in os.listxattr(f)


def test_acl_is_enforced(vol):
    f = vol.mnt / "f"
    f.write_bytes(b"secret")
    os.chmod(f, 0o600)
    assert sh(f"cat '{f}'", user=True).returncode != 0
    subprocess.run(["setfacl", "-m", "u:nobody:r", str(f)], check=True)
    r = sh(f"cat '{f}'", user=True)
    assert r.returncode == 0 and r.stdout == "secret"
    assert sh(f"printf y >> '{f}'", user=True).returncode != 0
    # chmod narrows the mask, and with it what the named entry gives.
    os.chmod(f, 0o600)
    assert sh(f"cat '{f}'", user=True).returncode != 0


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_default_acl_is_inherited_and_umask_ignored(vol, umask):
    d = vol.mnt / "d"
    d.mkdir()
    subprocess.run(["setfacl", "-d", "-m", "u:nobody:rwx,g::r-x,o::-",
                    str(d)], check=True)
    r = sh(f"touch '{d}/f'; mkdir '{d}/sub'; mkfifo '{d}/p'", umask=umask)
    assert r.returncode == 0, r.stderr
    # touch asks for 0666: the default ACL, not the umask, limits it.
    assert mode_of(d / "f") == "-rw-rw----+"
    assert getfacl(d / "f") == ["user::rw-", "user:nobody:rwx",
                                "group::r-x", "mask::rw-", "other::---"]
    assert mode_of(d / "p") == "prw-rw----+"
    assert mode_of(d / "sub") == "drwxrwx---+"
    assert "default:user:nobody:rwx" in getfacl(d / "sub")
    # Outside it, the umask applies as always.
    r = sh(f"touch '{vol.mnt}/plain'; mkdir '{vol.mnt}/pd'", umask=umask)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(vol.mnt / "plain").st_mode) == 0o666 & ~umask
    assert stat.S_IMODE(os.stat(vol.mnt / "pd").st_mode) == 0o777 & ~umask
    assert "system.posix_acl_access" not in os.listxattr(vol.mnt / "plain")


def test_setgid_directory_with_default_acl(vol):
    d = vol.mnt / "sg"
    d.mkdir()
    os.chown(d, 0, GROUP)
    os.chmod(d, 0o2777)
    subprocess.run(["setfacl", "-d", "-m", "u::rwx,g::rwx,o::rwx", str(d)],
                   check=True)
    r = sh(f"python3 -c \"import os; os.close(os.open('{d}/f', "
           f"os.O_CREAT, 0o2775)); os.mkdir('{d}/sub', 0o2775)\"",
           user=True, umask=0o022)
    assert r.returncode == 0, r.stderr
    f = os.stat(d / "f")
    assert f.st_gid == GROUP
    assert stat.S_IMODE(f.st_mode) == 0o775    # S_ISGID stripped, no umask
    sub = os.stat(d / "sub")
    assert sub.st_gid == GROUP and stat.S_IMODE(sub.st_mode) == 0o2775


def test_setgid_dropped_by_nonmember_with_acl(vol):
    f = vol.mnt / "f"
    f.write_bytes(b"")
    os.chown(f, NOBODY, GROUP)
    subprocess.run(["setfacl", "-m", "u:root:rwx", str(f)], check=True)
    os.chmod(f, 0o2664)
    assert mode_of(f) == "-rw-rwSr--+"
    # chmod by the owner outside the group: S_ISGID goes, the mask follows.
    assert sh(f"chmod 2664 '{f}'", user=True).returncode == 0
    assert mode_of(f) == "-rw-rw-r--+"
    assert "mask::rw-" in getfacl(f)
    # setfacl by the owner outside the group: the same (setfacl
    # recomputes the mask from u:root and group::, both r now).
    os.chmod(f, 0o2664)
    assert sh(f"setfacl -m u:root:r '{f}'", user=True).returncode == 0
    assert mode_of(f) == "-rw-r--r--+"
    os.chmod(f, 0o2664)
    assert sh(f"setfacl -m u:root:r '{f}'", user=True,
              groups=[GROUP]).returncode == 0
    assert mode_of(f) == "-rw-r-Sr--+"


def test_acls_survive_remount_and_fsck(vol):
    d = vol.mnt / "d"
    d.mkdir()
    subprocess.run(["setfacl", "-d", "-m", "u:nobody:rx", str(d)],
                   check=True)
    (d / "f").write_bytes(b"x")
    subprocess.run(["setfacl", "-m", "u:nobody:rw", str(d / "f")],
                   check=True)
    before = getfacl(d / "f"), getfacl(d)
    vol.umount()
    r = subprocess.run([str(FSCK), "-n", *map(str, vol.devs)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    vol.mount("allow_other")
    assert (getfacl(d / "f"), getfacl(d)) == before
