# SPDX-License-Identifier: MIT
"""Mounting and unmounting as scripts and administrators rely on: a
device missing or foreign refuses the mount unless -o degraded, naming
the file; options are checked before any device is opened; umount MNT
&& fsck works; relative device paths work for libcommit; /proc/mounts
shows the devices; two copies of one volume do not share a socket."""
import hashlib
import json
import os
import random
import shutil
import subprocess
import time

import pytest

from conftest import BUILD, CTL, DAEMON, FSCK, is_mounted, run

CHILD = BUILD / "tests" / "e2e" / "commit_child"


def sha(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest()


def try_mount(devlist, mnt, *opts, cwd=None):
    """The daemon in the foreground where it must refuse: (rc, output)."""
    cmd = [str(DAEMON), devlist, str(mnt), "-f"]
    for o in opts:
        cmd += ["-o", o]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, cwd=cwd)
    try:
        out, _ = p.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)],
                       capture_output=True)
        out, _ = p.communicate()
        pytest.fail(f"daemon mounted when it should refuse: {cmd}\n{out}")
    assert not is_mounted(mnt)
    return p.returncode, out


def uuid_of(devs):
    p = run([FSCK, "-n", "--json"] + list(devs), check=False)
    return json.loads(p.stdout)["volume"]


@pytest.fixture
def vol(volume_factory):
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    v.mount()
    (v.mnt / "f").write_bytes(b"some data\n" * 1000)
    v.umount()
    return v


def refusal(v, slot, what):
    return (f"daxguard: '{v.devs[slot]}' {what}\n"
            f"daxguard: cannot mount volume {uuid_of(v.devs)}: device {slot} "
            f"of 4 missing or unusable; mount with -o degraded to mount it "
            f"read-only without it, or run fsck.daxguard -y to rebuild it\n")


@pytest.mark.parametrize("kind", ["ext4", "garbage", "blank"])
def test_foreign_file_in_a_slot_refuses_the_mount(vol, kind):
    d = vol.devs[1]
    u = uuid_of(vol.devs)
    if kind == "ext4":
        d.unlink()
        with open(d, "wb") as f:
            f.truncate(32 << 20)
        run(["mkfs.ext4", "-q", "-F", "-L", "data", d])
        what = "contains an ext4 file system labelled 'data'"
    elif kind == "garbage":
        d.write_bytes(random.Random(1).randbytes(32 << 20))
        what = "holds data but no daxguard superblock"
    else:
        d.unlink()
        with open(d, "wb") as f:
            f.truncate(32 << 20)
        what = "is blank (all zeros)"
    before = [sha(x) for x in vol.devs]
    rc, out = try_mount(vol.devlist, vol.mnt)
    assert rc == 1
    assert out == (
        f"daxguard: '{d}' {what}\n"
        f"daxguard: cannot mount volume {u}: device 1 of 4 missing or "
        f"unusable; mount with -o degraded to mount it without it "
        f"(-o degraded,ro: read-only), or run fsck.daxguard -y to rebuild "
        f"it\n"), out
    assert [sha(x) for x in vol.devs] == before
    # -o degraded,ro mounts read-only, says what was left out, writes
    # nothing.
    vol.expect_log(r"degraded")
    vol.mount("degraded", "ro")
    assert f"daxguard: left out: '{d}' {what}\n" in vol.read_log()
    assert (vol.mnt / "f").read_bytes() == b"some data\n" * 1000
    assert vol.status()["read_only"] is True
    vol.umount()
    assert [sha(x) for x in vol.devs] == before


def test_degraded_option_on_a_whole_volume_mounts_it_writable(vol):
    vol.mount("degraded")
    st = vol.status()
    assert st["degraded"] is False and st["read_only"] is False
    (vol.mnt / "g").write_bytes(b"x")


def test_device_given_twice(vol):
    devlist = ",".join(str(d) for d in [vol.devs[0], vol.devs[1],
                                         vol.devs[1], vol.devs[3]])
    rc, out = try_mount(devlist, vol.mnt)
    assert rc == 1
    assert out == (f"daxguard: cannot open volume "
                   f"'{devlist.replace(',', ':')}': "
                   f"'{vol.devs[1]}' is given twice\n"), out
    p = run([FSCK, "-n", vol.devs[0], vol.devs[0]], check=False)
    assert p.returncode == 8
    assert p.stderr == (f"fsck.daxguard: cannot check: '{vol.devs[0]}' is "
                        f"given twice\n")


def test_options_are_checked_before_devices_are_opened(vol):
    before = [sha(x) for x in vol.devs]
    rc, out = try_mount(vol.devlist, vol.mnt, "bogus")
    assert rc == 2      # bad usage (issue 32, item 8)
    assert out == "fuse: unknown option(s): `-o bogus'\n", out
    assert [sha(x) for x in vol.devs] == before
    # Even with the volume in use elsewhere, the option is what is wrong.
    vol.mount()
    other = vol.mnt.parent / "other"
    other.mkdir()
    rc, out = try_mount(vol.devlist, other, "bogus")
    assert rc == 2 and out == "fuse: unknown option(s): `-o bogus'\n", out
    assert (vol.mnt / "f").read_bytes() == b"some data\n" * 1000


def test_umount_then_fsck_and_remount_at_once(vol):
    """umount returns before the daemon lets go of the devices: fsck and
    a new mount wait for it (bounded) instead of failing 'in use'."""
    for i in range(5):
        vol.mount()
        (vol.mnt / f"f{i}").write_bytes(os.urandom(1 << 20))
        daemon = vol.daemon
        p = subprocess.run(["umount", str(vol.mnt)], capture_output=True,
                           text=True)
        assert p.returncode == 0, p.stderr
        p = run([FSCK, "-n"] + vol.devs, check=False)
        assert p.returncode == 0, p.stdout + p.stderr
        daemon.wait(timeout=20)
        vol.daemon = None
        vol.log.close()
    vol.mount()
    subprocess.run(["umount", str(vol.mnt)], check=True)
    old = vol.daemon
    vol.daemon = None
    vol.log.close()
    vol.mount()                      # at once: waits for the old daemon
    old.wait(timeout=20)
    assert (vol.mnt / "f4").stat().st_size == 1 << 20


def test_fsck_on_a_mounted_volume_names_the_mount(vol):
    vol.mount()
    p = run([FSCK, "-n"] + vol.devs, check=False)
    assert p.returncode == 8
    assert p.stderr == (f"fsck.daxguard: cannot check: '{vol.devs[0]}' is "
                        f"in use: its volume is mounted on '{vol.mnt}'; "
                        f"unmount it first\n"), p.stderr


def test_proc_mounts_shows_the_devices(vol):
    vol.mount()
    with open("/proc/mounts") as f:
        src = [ln.split()[0] for ln in f if ln.split()[1] == str(vol.mnt)]
    # The list in the form fsck.daxguard takes back, ':' separated.
    assert src == [":".join(map(str, vol.devs))]
    p = subprocess.run(["findmnt", "-n", "-o", "SOURCE", str(vol.mnt)],
                       capture_output=True, text=True)
    if p.returncode == 0:
        assert p.stdout.strip() == ":".join(map(str, vol.devs))


def _pids_of(mnt):
    pids = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    args = f.read().split(b"\0")
            except OSError:
                continue
            if args and os.path.basename(args[0]) == b"daxguard" and \
                    os.fsencode(str(mnt)) in args:
                pids.append(int(pid))
    return pids


def test_relative_device_paths_in_the_background(vol):
    """Mounted with relative paths, the daemon goes to the background
    (and to /): status, /proc/mounts and libcommit maps still find the
    devices by their absolute names."""
    rel = ",".join(d.name for d in vol.devs)
    p = subprocess.run([str(DAEMON), rel, str(vol.mnt)], cwd=vol.devs[0].parent,
                       capture_output=True, text=True, timeout=30)
    try:
        assert p.returncode == 0, p.stderr
        assert is_mounted(vol.mnt)
        st = json.loads(run([CTL, vol.mnt, "status", "--json"]).stdout)
        assert st["device_paths"] == ":".join(map(str, vol.devs))
        with open("/proc/mounts") as f:
            src = [ln.split()[0] for ln in f
                   if ln.split()[1] == str(vol.mnt)]
        assert src == [":".join(map(str, vol.devs))]
        if CHILD.exists():
            out = subprocess.run([str(CHILD), str(vol.mnt / "f"),
                                  "map ro 0 0", "read 0 9"],
                                 stdin=subprocess.DEVNULL, text=True,
                                 capture_output=True, timeout=60).stdout
            assert out.splitlines()[0].startswith("ok"), out
            assert "err" not in out, out
    finally:
        pids = _pids_of(vol.mnt)
        subprocess.run(["fusermount3", "-u", str(vol.mnt)],
                       capture_output=True)
        if is_mounted(vol.mnt):     # busy: detach it, never leave it
            subprocess.run(["fusermount3", "-u", "-z", str(vol.mnt)],
                           capture_output=True)
        deadline = time.time() + 20
        while pids and time.time() < deadline:
            pids = [x for x in pids if os.path.exists(f"/proc/{x}")]
            time.sleep(0.05)
        for x in pids:
            os.kill(x, 9)


def test_two_copies_of_one_volume_have_their_own_sockets(vol,
                                                         volume_factory):
    w = volume_factory(ndev=4, size="32M")
    for a, b in zip(vol.devs, w.devs):
        shutil.copyfile(a, b)
        os.chmod(b, 0o600)          # a copy of volume data stays private
    vol.mount()
    w.mount()
    sv, sw = vol.status(), w.status()
    assert sv["uuid"] == sw["uuid"]
    assert sv["mountpoint"] == str(vol.mnt) and sw["mountpoint"] == str(w.mnt)
    assert sv["device_paths"] == ":".join(map(str, vol.devs))
    assert sw["device_paths"] == ":".join(map(str, w.devs))
    (w.mnt / "only-in-w").write_bytes(b"w")
    w.umount()
    sv = vol.status()
    assert sv["mountpoint"] == str(vol.mnt)
    assert not (vol.mnt / "only-in-w").exists()
    assert run([CTL, vol.mnt, "scrub"]).returncode == 0


def test_mount_on_a_dead_mount_says_to_unmount_it(vol):
    vol.mount()
    vol.expect_log(r".")
    sock = os.getxattr(vol.mnt, "user.daxguard.socket").decode()
    assert sock.endswith(f"-{vol.daemon.pid}.sock"), sock
    vol.daemon.kill()
    vol.daemon.wait()
    vol.daemon = None
    vol.log.close()
    try:
        rc, out = try_mount_dead(vol)
        assert rc == 1
        assert out == (f"daxguard: cannot read mountpoint '{vol.mnt}': "
                       f"Transport endpoint is not connected: the daemon of "
                       f"the volume mounted there is gone; run 'fusermount3 "
                       f"-u {vol.mnt}' first\n"), out
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(vol.mnt)],
                       capture_output=True)
    # The next daemon removes the dead one's sockets. (Any daemon that
    # starts does, for every volume: with tests running side by side,
    # another test's may have done it already.)
    vol.mount()
    assert not os.path.exists(sock)
    assert not os.path.exists(sock[:-len(".sock")] + ".commit")


def try_mount_dead(vol):
    p = subprocess.run([str(DAEMON), vol.devlist, str(vol.mnt), "-f"],
                       capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout + p.stderr
