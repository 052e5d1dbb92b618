# SPDX-License-Identifier: MIT
"""Issue 32, item 6: after 'daxguard-ctl MNT replace DEV NEW' the mount's
source (findmnt, /proc/self/mountinfo) still names the old device, as
the fsname of a live FUSE mount cannot change, and an fstab line naming
the old list would find the old device stale at the next boot. So the
daemon says what the administrator must change: status shows the
device list as it is now beside the one mounted with, replace status
and the daemon's log give the new list ready to paste into fstab, and
that list mounts the volume."""
import os
import re
import uuid

from conftest import CTL, run
from dgfault import fsck, wait_replace


def mount_source(mnt):
    """The mount's source as /proc/self/mountinfo has it."""
    mnt = os.path.realpath(mnt)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ")
            if left.split()[4] == mnt:
                return right.split()[1]
    raise AssertionError(f"{mnt} is not mounted")


def test_replace_says_what_fstab_needs(volume_factory):
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    v.mount()
    old_list = v.devlist.replace(",", ":")
    (v.mnt / "f").write_bytes(os.urandom(1 << 20))
    st = v.status()
    assert st["device_list"] == old_list == st["mount_source"], st
    text = run([CTL, v.mnt, "status"]).stdout
    assert f"\ndevices {old_list}\n" in text and "mounted as" not in text

    new = f"/dev/shm/dg-e2e-{uuid.uuid4().hex[:8]}-new.img"
    try:
        p = run([CTL, v.mnt, "replace", "2", new])
        assert wait_replace(v)["state"] == "finished"
        old2 = str(v.devs[2])
        new_list = old_list.replace(old2, new)
        assert new_list != old_list

        # The kernel keeps the source the mount was made with.
        assert mount_source(v.mnt) == old_list

        st = v.status()
        assert st["device_list"] == new_list, st
        assert st["mount_source"] == old_list, st
        text = run([CTL, v.mnt, "status"]).stdout
        assert f"\ndevices {new_list}\n" in text, text
        assert (f"\nmounted as {old_list} (the mount's source, as findmnt "
                "shows it, until the next mount; fstab needs the devices "
                "line)\n") in text, text

        rs = run([CTL, v.mnt, "replace", "status"]).stdout
        assert (f"fstab: the device list is now {new_list} (the mount's "
                f"source, as findmnt shows it, stays {old_list} until the "
                "next mount): an fstab line that names the old list must "
                "name the new one\n") in rs, rs
        rj = run([CTL, v.mnt, "replace", "status", "--json"]).stdout
        assert f'"device_list":"{new_list}"' in rj, rj

        log = v.read_log()
        assert re.search(
            rf"fstab: the device list is now {re.escape(new_list)}; the "
            rf"mount's source \(findmnt\) stays {re.escape(old_list)} "
            rf"until the next mount: an fstab line that names "
            rf"{re.escape(old_list)} must name {re.escape(new_list)}",
            log), log

        # The list given is what mounts the volume now.
        v.umount()
        rc, _, p = fsck(new_list.split(":"), "-n")
        assert rc == 0, p.stdout + p.stderr
        v.devs[2], gone = type(v.devs[2])(new), v.devs[2]
        gone.unlink()
        v.mount(devlist=new_list)
        assert mount_source(v.mnt) == new_list
        st = v.status()
        assert st["health"] == "ok" and st["device_list"] == new_list, st
        assert "mounted as" not in run([CTL, v.mnt, "status"]).stdout
    finally:
        v.umount()
        if os.path.exists(new) and str(v.devs[2]) != new:
            os.unlink(new)
