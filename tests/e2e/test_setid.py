# SPDX-License-Identifier: MIT
"""Set-user-ID and set-group-ID bits follow the kernel's rules exactly
(fs/fsys/setid.c): inode_init_owner() for new inodes in set-group-ID
directories, setattr_should_drop_suidgid() for writes and truncates,
chown_common() for changes of owner, setattr_prepare() for chmod. The
callers are unprivileged (nobody, with or without a supplementary
group, through setpriv) on a mount with allow_other and the
default_permissions the daemon always asks for."""
import os
import stat
import subprocess

import pytest

NOBODY = 65534
GROUP = 4242            # a group nobody is not in, unless given it


def as_user(cmd, groups=(), umask=None):
    """Run a shell command as nobody (primary group nobody's), with the
    supplementary groups given."""
    pre = f"umask {umask:03o}; " if umask is not None else ""
    sup = ",".join(str(g) for g in groups) if groups else ""
    subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                    "--groups=" + sup if sup else "--clear-groups",
                    "sh", "-c", pre + cmd], check=True)


@pytest.fixture
def mnt(volume_factory):
    v = volume_factory()
    v.mkfs()
    # Another user reaches the mount only through directories it may
    # search (pytest's are 0700).
    for d in v.mnt.parents:
        if str(d).startswith("/tmp/pytest-of-"):
            os.chmod(d, 0o755)
    v.mount("allow_other")
    os.chmod(v.mnt, 0o1777)
    return v.mnt


def mode_of(p):
    return stat.filemode(os.lstat(p).st_mode)


def owned(p, mode, gid=NOBODY, uid=NOBODY):
    os.chown(p, uid, gid)
    os.chmod(p, mode)


@pytest.mark.parametrize("how", ["write", "truncate", "otrunc"])
def test_unprivileged_write_drops_setid(mnt, how):
    cmd = {"write": "printf x >> '{}'",
           "truncate": "truncate -s 1 '{}'",
           "otrunc": "printf y > '{}'"}[how]
    # Not group-executable: S_ISGID is a locking mark, kept for a member.
    a = mnt / "a"
    a.write_bytes(b"#")
    owned(a, 0o6644)
    assert mode_of(a) == "-rwSr-Sr--"
    as_user(cmd.format(a))
    assert mode_of(a) == "-rw-r-Sr--"
    # Group-executable: both go.
    b = mnt / "b"
    b.write_bytes(b"#")
    owned(b, 0o6754)
    assert mode_of(b) == "-rwsr-sr--"
    as_user(cmd.format(b))
    assert mode_of(b) == "-rwxr-xr--"
    # A writer outside the file's group loses S_ISGID even without
    # group execute (setattr_should_drop_sgid()).
    c = mnt / "c"
    c.write_bytes(b"#")
    owned(c, 0o2666, gid=GROUP)
    as_user(cmd.format(c))
    assert mode_of(c) == "-rw-rw-rw-"
    # ... and keeps it through a supplementary group.
    d = mnt / "d"
    d.write_bytes(b"#")
    owned(d, 0o2666, gid=GROUP)
    as_user(cmd.format(d), groups=[GROUP])
    assert mode_of(d) == "-rw-rwSrw-"


def test_root_write_keeps_setid(mnt):
    a = mnt / "a"
    a.write_bytes(b"#")
    owned(a, 0o6754)
    with open(a, "ab") as f:
        f.write(b"x")
    os.truncate(a, 1)
    assert mode_of(a) == "-rwsr-sr--"


@pytest.mark.parametrize("kind", ["fifo", "socket", "chr", "reg"])
def test_owner_chown_of_any_nondirectory_drops_setid(mnt, kind):
    p = mnt / kind
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "socket":
        os.mknod(p, stat.S_IFSOCK | 0o644)
    elif kind == "chr":
        os.mknod(p, stat.S_IFCHR | 0o644, os.makedev(1, 3))
    else:
        p.write_bytes(b"")
    owned(p, 0o6754)
    as_user(f"chown {NOBODY}:{NOBODY} '{p}'")
    assert mode_of(p)[1:] == "rwxr-xr--"
    # Without group execute S_ISGID stays for a member of the group...
    owned(p, 0o6744)
    as_user(f"chown {NOBODY}:{NOBODY} '{p}'")
    assert mode_of(p)[1:] == "rwxr-Sr--"
    # ... and goes for a caller outside it (chgrp to a group it is in).
    owned(p, 0o6744, gid=GROUP)
    as_user(f"chgrp {NOBODY} '{p}'")
    assert mode_of(p)[1:] == "rwxr--r--"
    assert os.stat(p, follow_symlinks=False).st_gid == NOBODY


def test_chmod_by_nonmember_drops_sgid(mnt):
    a = mnt / "a"
    a.write_bytes(b"")
    owned(a, 0o644, gid=GROUP)
    as_user(f"chmod 2775 '{a}'")
    assert mode_of(a) == "-rwxrwxr-x"
    as_user(f"chmod 2775 '{a}'", groups=[GROUP])
    assert mode_of(a) == "-rwxrwsr-x"


@pytest.mark.parametrize("umask", [0, 0o022])
def test_create_in_setgid_directory(mnt, umask):
    d = mnt / "sg"
    d.mkdir()
    owned(d, 0o2777, gid=GROUP, uid=0)
    create = ("import os, sys; d = sys.argv[1]; "
              "os.close(os.open(d + '/f', os.O_CREAT | os.O_WRONLY, 0o2777)); "
              "os.mkdir(d + '/sub', 0o2777); "
              "os.mknod(d + '/p', 0o012777); "
              "os.symlink('f', d + '/l')")
    # Outside the directory's group: the group is inherited, S_ISGID is
    # stripped from the group-executable non-directories, a directory
    # keeps it.
    as_user(f"python3 -c \"{create}\" '{d}'", umask=umask)
    m = 0o777 & ~umask
    for name in ("f", "p", "sub", "l"):
        assert os.lstat(d / name).st_gid == GROUP, name
    assert stat.S_IMODE(os.lstat(d / "f").st_mode) == m
    assert stat.S_IMODE(os.lstat(d / "p").st_mode) == m
    assert stat.S_IMODE(os.lstat(d / "sub").st_mode) == 0o2000 | m
    assert os.lstat(d / "sub" / ".").st_mode & stat.S_ISGID
    # A member keeps what it asked for.
    for name in ("f", "p", "sub", "l"):
        p = d / name
        os.rmdir(p) if name == "sub" else os.unlink(p)
    as_user(f"python3 -c \"{create}\" '{d}'", groups=[GROUP], umask=umask)
    assert stat.S_IMODE(os.lstat(d / "f").st_mode) == 0o2000 | m
    # Outside a set-group-ID directory nothing is inherited.
    as_user(f"touch '{mnt}/plain'")
    assert os.stat(mnt / "plain").st_gid == NOBODY


def test_write_drops_file_capabilities_whoever_writes(mnt):
    """cap_inode_need_killpriv() does not ask who writes: root's writes
    drop security.capability too. The daemon remembers that a file has
    none, and forgets it when the file's xattrs change."""
    cap = bytes.fromhex("0100000201000000000000000000000000000000")
    f = mnt / "prog"
    f.write_bytes(b"#")
    os.setxattr(f, "user.other", b"1")
    for _ in range(2):
        with open(f, "ab") as fh:
            fh.write(b"x")            # learns: no capability
        os.setxattr(f, "security.capability", cap)
        assert "security.capability" in os.listxattr(f)
        with open(f, "ab") as fh:
            fh.write(b"y")
        assert "security.capability" not in os.listxattr(f)
        assert os.getxattr(f, "user.other") == b"1"
