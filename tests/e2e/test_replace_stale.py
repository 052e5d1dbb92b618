# SPDX-License-Identifier: MIT
"""Online replace of a device that lost writes (issue 29, item 5).

The device to replace went back in time on every page it wrote since a
snapshot except its superblocks (firmware.py's "older" fault): its data
pages, its checksum-page copies, its init map and the ditto copies of the
metadata zone it keeps for its neighbours are all old, and agree with
each other. The replace must not carry any of that to the new device:
every copy it puts there is checked against the newest verified copy
first, the stale ones are rebuilt and counted (pages_stale), and fsck -n
of the volume with the new device is clean at once, every file intact.
"""
import os

from conftest import CTL, run
from dgfault import fsck, make_tree, manifest, wait_replace
import firmware as fw

DEV = 1


def metadata_churn(root):
    """Changes of the metadata zone (inodes, directories, extents): the
    pages whose ditto copies the device keeps for its neighbours."""
    for i in range(6):
        d = root / f"new{i}"
        d.mkdir()
        for j in range(25):
            (d / f"n{j}").write_bytes(os.urandom(100 + 37 * j))
    for i in range(0, 30, 3):
        p = root / f"s{i}.txt"
        if p.exists():
            p.rename(root / f"renamed{i}.txt")
    os.sync()


def test_replace_of_a_device_that_lost_writes(volume_factory):
    v = volume_factory(ndev=4, size="64M", parity=1)
    # Reads of the old pages find and repair them (within parity).
    v.expect_log(r"checksum|stale|lost|repair|rebuil|copy|differs")
    v.mkfs()
    v.mount()
    make_tree(v.mnt, seed=29, small=40, large=1, frag=False)
    v.umount()
    snap = fw.read_image(v.devs[DEV])
    v.mount()
    metadata_churn(v.mnt)
    want = manifest(v.mnt)
    v.umount()

    final = fw.read_image(v.devs[DEV])
    keep = fw.superblock_pages(len(final) // fw.PAGE)
    old = [n for n in fw.changed_pages(snap, final) if n not in keep]
    assert old, "the churn changed nothing on the device"
    fw.write_pages(v.devs[DEV], [(n, fw.page(snap, n)) for n in old])

    v.mount()
    new = v.devs[DEV].with_name(v.devs[DEV].stem + "-new.img")
    try:
        p = run([CTL, v.mnt, "replace", DEV, new], check=False)
        assert p.returncode == 0, p.stdout + p.stderr
        st = wait_replace(v)
        assert st["state"] == "finished", st
        assert st["pages_lost"] == 0, st
        # The old device's stale checksum and ditto copies were seen
        # and rebuilt, not copied.
        assert st["pages_stale"] > 0, st
        text = run([CTL, v.mnt, "status"]).stdout
        assert f"{st['pages_stale']} stale copies rebuilt" in text, text
        v.umount()
        os.chmod(new, 0o600)
        old_path = v.devs[DEV]
        v.devs[DEV] = new
        old_path.unlink()
        rc, _, p = fsck(v.devs, "-n")
        assert rc == 0, p.stdout + p.stderr
        v.mount()
        assert manifest(v.mnt) == want
    finally:
        v.umount()
        if new.exists() and new not in v.devs:
            new.unlink()
