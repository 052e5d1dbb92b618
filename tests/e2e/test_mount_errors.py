# SPDX-License-Identifier: MIT
"""Mounting: refusals with a clear message and a non-zero exit, degraded
mounts, mounting through mount(8)/mount.fuse3, and daxguard-ctl errors."""
import errno
import hashlib
import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import CTL, DAEMON, FSCK, is_mounted, run


def try_mount(devlist, mnt, *opts, timeout=15):
    """Run the daemon in the foreground where it must refuse to mount.
    Returns (exit code, output). If it mounts after all, unmount and
    fail."""
    cmd = [str(DAEMON), devlist, str(mnt), "-f"]
    for o in opts:
        cmd += ["-o", o]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)],
                       capture_output=True)
        out, _ = p.communicate()
        pytest.fail(f"daemon mounted when it should refuse: {cmd}\n{out}")
    if os.path.isdir(mnt):
        assert not is_mounted(mnt)
    return p.returncode, out


def uuid_of(v):
    """The volume's UUID, from fsck (read-only, works degraded)."""
    p = run([FSCK, "-n", "--json"] + v.devs, check=False)
    return json.loads(p.stdout)["volume"]


def sha(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest()


def write_in_place(p, data):
    fd = os.open(p, os.O_WRONLY)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def make_images(v, fill):
    """Device images of the volume's size, filled by fill(f, size)."""
    size = 64 << 20
    for d in v.devs:
        with open(d, "wb") as f:
            fill(f, size)


def test_refuses_discard_and_nodiscard(volume_factory):
    v = volume_factory()
    v.mkfs()
    rc, out = try_mount(v.devlist, v.mnt, "discard,nodiscard")
    assert rc == 2, out
    assert "discard and nodiscard contradict each other" in out, out


# ---- not a volume ---------------------------------------------------------

def test_refuses_zero_filled_images(volume_factory):
    v = volume_factory()
    make_images(v, lambda f, size: f.truncate(size))
    rc, out = try_mount(v.devlist, v.mnt)
    assert rc != 0
    assert "cannot open volume" in out
    assert "no daxguard superblock on any of the 4 devices" in out
    assert os.listdir(v.mnt) == []


def test_refuses_foreign_images(volume_factory):
    v = volume_factory()
    block = os.urandom(1 << 20)

    def fill(f, size):
        for _ in range(size // len(block)):
            f.write(block)
    make_images(v, fill)
    rc, out = try_mount(v.devlist, v.mnt)
    assert rc != 0
    assert "no daxguard superblock" in out
    # A single foreign image is refused just the same.
    rc, out = try_mount(str(v.devs[0]), v.mnt)
    assert rc != 0 and "no daxguard superblock" in out


def test_refuses_empty_and_odd_device_paths(volume_factory, tmp_path):
    v = volume_factory()
    empty = tmp_path / "empty.img"
    empty.write_bytes(b"")
    rc, out = try_mount(str(empty), v.mnt)
    assert rc != 0 and "is empty" in out
    rc, out = try_mount(str(tmp_path), v.mnt)          # a directory
    assert rc != 0 and "cannot open volume" in out
    rc, out = try_mount(str(tmp_path / "nothing.img"), v.mnt)
    assert rc != 0 and "No such file or directory" in out


def test_refuses_devices_of_two_volumes(volume_factory):
    a = volume_factory(ndev=2, size="32M")
    b = volume_factory(ndev=2, size="32M")
    a.mkfs()
    b.mkfs()
    rc, out = try_mount(f"{a.devs[0]},{b.devs[1]}", a.mnt)
    assert rc != 0 and "belongs to volume" in out


def test_refuses_more_devices_than_the_volume_has(volume_factory):
    a = volume_factory(ndev=2, size="32M")
    b = volume_factory(ndev=1, size="32M")
    a.mkfs()
    make_images(b, lambda f, size: f.truncate(32 << 20))
    rc, out = try_mount(f"{a.devlist},{b.devs[0]}", a.mnt)
    assert rc != 0
    assert "3 devices given but the volume has 2" in out


def test_refuses_too_many_missing_devices(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.devs[1].unlink()
    v.devs[3].unlink()
    rc, out = try_mount(v.devlist, v.mnt)
    assert rc != 0
    assert "2 of 4 devices missing or unusable; parity covers 1" in out


# ---- busy volume, bad mountpoints, bad options ----------------------------

def test_refuses_volume_already_mounted(volume_factory, tmp_path):
    v = volume_factory()
    v.mkfs()
    v.mount()
    (v.mnt / "f").write_bytes(b"first mount")
    other = tmp_path / "other"
    other.mkdir()
    rc, out = try_mount(v.devlist, other)
    assert rc != 0
    assert "in use" in out, out
    assert os.listdir(other) == []
    # The first mount is unharmed.
    assert (v.mnt / "f").read_bytes() == b"first mount"
    assert v.daemon.poll() is None
    v.remount()
    assert (v.mnt / "f").read_bytes() == b"first mount"


def test_refuses_nonempty_mountpoint(volume_factory):
    v = volume_factory()
    v.mkfs()
    (v.mnt / "precious").write_bytes(b"keep me")
    rc, out = try_mount(v.devlist, v.mnt)
    assert rc != 0
    assert "is not empty" in out
    assert (v.mnt / "precious").read_bytes() == b"keep me"
    # A hidden file counts as well.
    (v.mnt / "precious").unlink()
    (v.mnt / ".hidden").write_bytes(b"")
    rc, out = try_mount(v.devlist, v.mnt)
    assert rc != 0 and "is not empty" in out


def test_refuses_file_as_mountpoint(volume_factory, tmp_path):
    v = volume_factory()
    v.mkfs()
    f = tmp_path / "afile"
    f.write_bytes(b"x")
    rc, out = try_mount(v.devlist, f)
    assert rc != 0
    assert "is not a directory" in out
    assert f.read_bytes() == b"x"


def test_refuses_missing_mountpoint(volume_factory, tmp_path):
    v = volume_factory()
    v.mkfs()
    rc, out = try_mount(v.devlist, tmp_path / "does" / "not" / "exist")
    assert rc != 0
    # libfuse checks it first: "fuse: bad mount point `...': ..."
    assert "bad mount point" in out or "cannot use mountpoint" in out, out
    assert "No such file or directory" in out


def test_usage_and_option_errors(volume_factory):
    v = volume_factory()
    v.mkfs()
    p = subprocess.run([str(DAEMON)], capture_output=True, text=True,
                       timeout=10)
    assert p.returncode == 2 and "usage:" in p.stderr
    assert p.stderr.startswith("daxguard: "), p.stderr
    p = subprocess.run([str(DAEMON), v.devlist], capture_output=True,
                       text=True, timeout=10)
    assert p.returncode == 2 and "usage:" in p.stderr
    assert p.stderr.startswith("daxguard: no mountpoint given"), p.stderr
    rc, out = try_mount(v.devlist, v.mnt, "timeout=-1")
    assert rc != 0 and "timeout must not be negative" in out
    p = subprocess.run([str(DAEMON), "--help"], capture_output=True,
                       text=True, timeout=10)
    assert p.returncode == 0 and "writeback" in p.stdout


# ---- degraded --------------------------------------------------------------

def test_degraded_ro_mount_is_readonly_and_readable(volume_factory, tmp_path):
    v = volume_factory()           # 4 devices, parity 1
    v.mkfs()
    v.mount()
    files = {}
    for i in range(12):            # spread over every device
        data = os.urandom(37000 * (i + 1))
        (v.mnt / f"f{i}").write_bytes(data)
        files[f"f{i}"] = hashlib.sha256(data).hexdigest()
    os.mkdir(v.mnt / "d")
    os.symlink("f1", v.mnt / "d" / "link")
    os.setxattr(v.mnt / "f2", "user.x", b"attr")
    v.umount()
    # Delete one image (kept aside to put back at the end).
    aside = tmp_path / "aside.img"
    shutil.move(v.devs[2], aside)
    # Without -o degraded the mount is refused, naming the file.
    rc, out = try_mount(v.devlist, v.mnt)
    assert rc == 1
    assert out.endswith(
        f"daxguard: '{v.devs[2]}' does not exist\n"
        f"daxguard: cannot mount volume {uuid_of(v)}: device 2 of 4 "
        f"missing or unusable; mount with -o degraded to mount it without "
        f"it (-o degraded,ro: read-only), or run fsck.daxguard -y to "
        f"rebuild it\n"), out
    v.expect_log(r"degraded")
    v.expect_log(r"cannot open .*No such file or directory")
    v.mount("degraded", "ro")
    log = v.read_log()
    assert f"daxguard: left out: '{v.devs[2]}' does not exist\n" in log
    assert "volume degraded: 1 of 4 devices missing (mask 0x4), read-only" \
        in log, log
    st = v.status()
    assert st["degraded"] is True and st["read_only"] is True
    assert st["present"] == 3 and st["missing_mask"] == 4
    # A missing device loses no metadata: nothing for fsck to give up.
    assert st["needs_fsck"] is False and st["damaged_inodes"] == 0
    # Everything reads back (the missing device's pages from parity).
    v.drop_caches()
    for n, h in files.items():
        assert sha(v.mnt / n) == h, n
    assert os.readlink(v.mnt / "d" / "link") == "f1"
    assert os.getxattr(v.mnt / "f2", "user.x") == b"attr"
    # Every change fails with EROFS, and leaves the files as they were.
    # (An O_TRUNC open first: before the read-only mount, it emptied
    # the file in the daemon's memory though the change never reached
    # the media.)
    attempts = [
        lambda: os.open(v.mnt / "f0", os.O_WRONLY | os.O_TRUNC),
        lambda: write_in_place(v.mnt / "f0", b"x"),
        lambda: (v.mnt / "new").write_bytes(b"x"),
        lambda: os.mkdir(v.mnt / "newdir"),
        lambda: os.unlink(v.mnt / "f1"),
        lambda: os.rmdir(v.mnt / "d"),
        lambda: os.rename(v.mnt / "f3", v.mnt / "f3b"),
        lambda: os.truncate(v.mnt / "f4", 0),
        lambda: os.chmod(v.mnt / "f5", 0o600),
        lambda: os.utime(v.mnt / "f5", ns=(1, 1)),
        lambda: os.link(v.mnt / "f6", v.mnt / "f6b"),
        lambda: os.symlink("x", v.mnt / "sl"),
        lambda: os.setxattr(v.mnt / "f2", "user.y", b"1"),
        lambda: os.removexattr(v.mnt / "f2", "user.x"),
    ]
    for i, fn in enumerate(attempts):
        with pytest.raises(OSError) as ei:
            fn()
        assert ei.value.errno == errno.EROFS, (i, ei.value)
    v.drop_caches()
    for n, h in files.items():
        assert sha(v.mnt / n) == h, n
    assert sorted(os.listdir(v.mnt)) == sorted(list(files) + ["d"])
    assert os.getxattr(v.mnt / "f2", "user.x") == b"attr"
    # The kernel knows: the mount itself is read-only.
    with open("/proc/mounts") as f:
        opts = [ln.split()[3] for ln in f if ln.split()[1] == str(v.mnt)]
    assert opts and "ro" in opts[0].split(","), opts
    r = v.ctl("scrub", "--json")
    assert '"unrecoverable":0' in r.stdout, r.stdout
    v.umount()
    # Put the device back: healthy and writable again, nothing lost.
    shutil.move(aside, v.devs[2])
    v.mount()
    st = v.status()
    assert st["degraded"] is False and st["read_only"] is False
    for n, h in files.items():
        assert sha(v.mnt / n) == h, n
    (v.mnt / "new").write_bytes(b"writable again")
    v.remount()
    assert (v.mnt / "new").read_bytes() == b"writable again"


def test_stale_device_is_left_out(volume_factory, tmp_path):
    """A device image from an older generation is not trusted: the
    volume mounts degraded and reads the data through parity."""
    v = volume_factory()
    v.mkfs()
    old = tmp_path / "old0.img"
    shutil.copyfile(v.devs[0], old)
    v.mount()
    data = os.urandom(3 << 20)
    (v.mnt / "f").write_bytes(data)
    v.umount()
    shutil.copyfile(old, v.devs[0])
    u = uuid_of(v)
    rc, out = try_mount(v.devlist, v.mnt)
    assert rc == 1
    assert out == (
        f"daxguard: '{v.devs[0]}' is stale: device 0 at generation 2, the "
        f"volume is at 3\n"
        f"daxguard: cannot mount volume {u}: device 0 of 4 missing or "
        f"unusable; mount with -o degraded to mount it without it "
        f"(-o degraded,ro: read-only), or run fsck.daxguard -y to rebuild "
        f"it\n"), out
    v.expect_log(r"stale")
    v.expect_log(r"degraded")
    v.mount("degraded")
    assert "is stale" in v.read_log()
    st = v.status()
    assert st["degraded"] is True and st["missing_mask"] == 1
    v.drop_caches()
    assert (v.mnt / "f").read_bytes() == data


# ---- mount(8) and mount.fuse3 ----------------------------------------------

def _daemon_pids(mnt):
    """Pids of daxguard daemons serving mnt (started by this test)."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if args and os.path.basename(args[0]) == b"daxguard" and \
                os.fsencode(str(mnt)) in args:
            pids.append(int(pid))
    return pids


def _helper_mount(v, cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=30)
    try:
        assert p.returncode == 0, p.stdout + p.stderr
        assert is_mounted(v.mnt)
        pids = _daemon_pids(v.mnt)
        assert len(pids) == 1, pids
        (v.mnt / "f").write_bytes(b"via mount")
        assert (v.mnt / "f").read_bytes() == b"via mount"
        st = v.status()
        assert st["mountpoint"] == str(v.mnt)
        with open("/proc/mounts") as f:
            types = [ln.split()[2] for ln in f if ln.split()[1] == str(v.mnt)]
        assert types == ["fuse.daxguard"]
    finally:
        pids = _daemon_pids(v.mnt)
        subprocess.run(["umount", str(v.mnt)], capture_output=True)
        deadline = time.time() + 20
        while pids and time.time() < deadline:
            pids = [pid for pid in pids if os.path.exists(f"/proc/{pid}")]
            time.sleep(0.05)
        for pid in pids:           # only the daemon this test started
            os.kill(pid, 9)
        if is_mounted(v.mnt):
            subprocess.run(["umount", "-l", str(v.mnt)], capture_output=True)
    assert not pids, "daemon did not exit after umount"
    # The daemon (in the background, logging to syslog) closed the
    # volume cleanly: a foreground mount finds the file and no journal
    # to replay.
    v.mount()
    assert (v.mnt / "f").read_bytes() == b"via mount"
    assert "journal replay" not in v.read_log()


def test_mount_fuse3_helper(volume_factory):
    """mount.fuse3 runs 'daxguard DEVS MNT -o opts' through the shell,
    found on PATH: exactly what 'mount -t fuse.daxguard' invokes."""
    helper = shutil.which("mount.fuse3") or shutil.which("mount.fuse3",
                                                         path="/sbin")
    if not helper:
        pytest.skip("mount.fuse3 is not installed")
    v = volume_factory()
    v.mkfs()
    env = dict(os.environ, PATH=f"{DAEMON.parent}:{os.environ['PATH']}")
    _helper_mount(v, [helper, v.devlist, str(v.mnt), "-t", "fuse.daxguard",
                      "-o", "rw"], env)


def test_mount_t_fuse_daxguard(volume_factory):
    """mount(8) drops PATH from the helper's environment, so mount.fuse3
    finds 'daxguard' only when it is installed in the shell's default
    PATH (e.g. /usr/sbin after 'meson install')."""
    default_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:" \
                   "/sbin:/bin"
    if not shutil.which("daxguard", path=default_path):
        pytest.skip("daxguard is not installed in the default PATH; "
                    "mount(8) does not pass PATH to mount.fuse3, so a "
                    "build tree on PATH cannot be used "
                    "(test_mount_fuse3_helper covers the helper)")
    v = volume_factory()
    v.mkfs()
    _helper_mount(v, ["mount", "-t", "fuse.daxguard", v.devlist,
                      str(v.mnt)], dict(os.environ))


# ---- daxguard-ctl -------------------------------------------------------------

def test_ctl_errors(mounted, tmp_path):
    p = run([CTL, tmp_path, "status"], check=False)
    assert p.returncode == 1
    assert "is not a daxguard mount" in p.stderr
    p = run([CTL, tmp_path / "missing", "status"], check=False)
    assert p.returncode == 1
    assert "is not a daxguard mount" in p.stderr
    assert "No such file or directory" in p.stderr
    p = run([CTL, mounted.mnt, "frobnicate"], check=False)
    assert p.returncode == 2 and "unknown command 'frobnicate'" in p.stderr
    assert "usage:" in p.stderr
    p = run([CTL, mounted.mnt, "status", "--xml"], check=False)
    assert p.returncode == 2 and "unknown option '--xml'" in p.stderr
    p = run([CTL], check=False)
    assert p.returncode == 2 and "usage:" in p.stderr
    p = run([CTL, mounted.mnt, "status", "--json", "extra"], check=False)
    assert p.returncode == 2 and "usage:" in p.stderr
    # And the good commands work on the mount, from a subdirectory too.
    os.mkdir(mounted.mnt / "sub")
    assert run([CTL, mounted.mnt, "status"]).stdout.startswith("volume ")
    p = run([CTL, mounted.mnt / "sub", "status", "--json"], check=False)
    assert p.returncode == 0 and '"degraded":false' in p.stdout
    p = run([CTL, mounted.mnt, "scrub"])
    assert "unrecoverable 0" in p.stdout
