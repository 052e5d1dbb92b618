# SPDX-License-Identifier: MIT
"""daxguard as the brick filesystem of a GlusterFS dispersed volume
(issue 33): three daxguard volumes, one brick each, of a `disperse 3
redundancy 1` volume on loopback, read and written through the
GlusterFS FUSE client.

(a) Faults inside one brick's devices that daxguard's parity covers
(flips, zeroed runs while mounted; lost writes while that node is
down) are repaired by daxguard on that node: every byte read through
GlusterFS is exact and GlusterFS has nothing to heal. (b) A whole
brick lost (its process killed, its daxguard volume unmounted: a node
gone) is GlusterFS's to cover: it serves every file from the other
two, and heals the brick once it is back. (c) Every brick's fsck is
clean at the end.

Opt-in: skipped, saying why, without root or GlusterFS
(`glusterfs-server`, `glusterfs-client`; scripts/install-deps.sh
installs them)."""
import hashlib
import os
import random
import sys
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[0] / "e2e"))
sys.path.insert(0, str(HERE))

from conftest import CTL, DAEMON, FSCK, MKFS, Volume  # noqa: E402
from dgfault import fsck, inject, manifest  # noqa: E402
import gluster  # noqa: E402


def skip_reason():
    if os.geteuid() != 0:
        return "needs root (glusterd, bricks, mount -t glusterfs)"
    missing = gluster.missing_tools()
    if missing:
        return ("GlusterFS is not installed (missing " + ", ".join(missing)
                + "): apt-get install glusterfs-server glusterfs-client")
    for b in (MKFS, DAEMON, CTL, FSCK):
        if not b.exists():
            return f"{b} is not built"
    return None


pytestmark = pytest.mark.skipif(skip_reason() is not None,
                                reason=skip_reason() or "")


def write_tree(root, seed=33):
    """A few MiB in several files and directories, through GlusterFS."""
    rng = random.Random(seed)
    root = Path(root)
    (root / "a" / "b").mkdir(parents=True)
    (root / "c").mkdir()
    dirs = [root, root / "a", root / "a" / "b", root / "c"]
    for i in range(14):
        size = rng.choice([700, 5000, 70_000, 300_000, 1_100_000])
        (rng.choice(dirs) / f"f{i}.bin").write_bytes(rng.randbytes(size))
    os.symlink("a/b", root / "link")


def brick_files(vol):
    """sha256 of every data file of a brick, read straight from its
    daxguard mount (GlusterFS's own .glusterfs index left out)."""
    root = vol.mnt / "brick"
    out = {}
    for dp, dn, fn in os.walk(root):
        dn[:] = [d for d in dn if d != ".glusterfs"]
        for f in fn:
            p = Path(dp) / f
            if not p.is_symlink():
                out[str(p.relative_to(root))] = hashlib.sha256(
                    p.read_bytes()).hexdigest()
    return out


def damage_one_device(vol, files, kinds, seed, count=2):
    """Inject each kind into one of files (--count pages), all on the
    device the first one landed on; the changes made. A file with no
    page on that device is passed over."""
    changes, dev = [], None
    todo = list(files)
    for i, kind in enumerate(kinds):
        while todo:
            f = todo.pop(0)
            extra = ["--file", f"/brick/{f}", "--count", str(count)]
            if dev is not None:
                extra += ["--device", str(dev)]
            rep, p = inject(vol.devs, kind, "data", seed=seed + i,
                            extra=extra, check=False)
            if rep is None and "no data page" in p.stderr:
                continue
            assert rep is not None, p.stderr
            assert rep["mounted"] is (vol.daemon is not None), rep
            dev = rep["changes"][0]["device"]
            assert {c["device"] for c in rep["changes"]} == {dev}, rep
            changes += rep["changes"]
            break
        else:
            raise AssertionError(f"no file left to take a {kind}")
    return changes


def faults(vol):
    return vol.status()["faults"]


@pytest.fixture
def cluster(tmp_path):
    """Three mounted daxguard volumes (4 x 48 MiB, parity 1) as the
    bricks of a started disperse 3 redundancy 1 GlusterFS volume,
    mounted. Torn down whatever happens."""
    vols = []
    gd = gluster.Glusterd()
    gv = None
    try:
        for i in range(3):
            sub = tmp_path / f"node{i}"
            sub.mkdir()
            v = Volume(sub, ndev=4, size="48M", parity=1)
            vols.append(v)
            v.mkfs()
            v.mount()
            (v.mnt / "brick").mkdir()
        gd.start()
        gv = gluster.GlusterVolume(
            "dgc" + uuid.uuid4().hex[:8],
            [v.mnt / "brick" for v in vols], tmp_path / "gmnt",
            tmp_path / "client.log")
        # round-robin: reads rotate over the bricks, so the damaged one
        # is read too (the default, gfid-hash, may leave a file's reads
        # to the other two).
        gv.create(("disperse.read-policy", "round-robin"))
        gv.mount()
        yield gv, vols
    finally:
        if gv is not None:
            gv.destroy()
        gd.stop()
        for v in vols:
            v.cleanup()


def remount_and_read(gv, vols):
    """Every file through a fresh client (no cache of GlusterFS's or
    the kernel's, above or below the bricks), twice."""
    gv.umount()
    for v in vols:
        if v.daemon is not None:
            v.drop_caches()
            break
    gv.mount()
    first = manifest(gv.mnt)
    return first, manifest(gv.mnt)


def test_daxguard_bricks_under_glusterfs(cluster):
    gv, vols = cluster
    write_tree(gv.mnt)
    want = manifest(gv.mnt)
    gv.wait_healed(timeout=60)          # the writes' dirty marks settled
    # From here until (b), nothing heals: what would need it stays.
    gv.heals(False)
    node = vols[0]
    node_files = brick_files(node)
    assert node_files, "brick 0 holds no files"
    big = [k for k in node_files if (node.mnt / "brick" / k).stat().st_size
           > 100_000]
    assert len(big) >= 3, node_files

    # (a) live: flips, a zeroed and a scribbled page in node 0's
    # devices while everything runs, all on one device: within parity 1
    # whatever rows they hit.
    node.expect_log(r"fault|checksum|parity|csum")
    since = gv.log_size()
    changes = damage_one_device(node, big, ["bitflip", "zero", "scribble"],
                                seed=10)
    assert len(changes) >= 3, changes
    injected = len(changes)
    first, second = remount_and_read(gv, vols)
    assert first == want and second == want
    assert brick_files(node) == node_files      # the brick itself exact
    assert node.ctl("scrub").returncode == 0
    f = faults(node)
    assert f["repaired"] >= injected and f["unrecoverable"] == 0, f
    assert f["detected"] == f["repaired"], f
    gv.wait_healed(timeout=60)
    assert gv.client_log_problems(since) == []

    # (a) lost writes: node 0 down cleanly (volume stopped), writes of
    # one device lost behind daxguard's back, node back up.
    gv.umount()
    gluster.cli("volume", "stop", gv.name)
    node.umount()
    lost = len(damage_one_device(node, big, ["lost-write", "lost-write"],
                                 seed=30, count=1))
    node.mount()
    before = faults(node)
    gluster.cli("volume", "start", gv.name)
    gv.wait_online()
    since = gv.log_size()
    first, second = remount_and_read(gv, vols)
    assert first == want and second == want
    assert brick_files(node) == node_files
    assert node.ctl("scrub").returncode == 0
    f = faults(node)
    assert f["repaired"] - before["repaired"] >= lost, (before, f)
    assert f["unrecoverable"] == 0, f
    gv.wait_healed(timeout=60)
    assert gv.client_log_problems(since) == []

    # (b) node 1 lost: its brick process killed, its daxguard volume
    # unmounted. GlusterFS serves and takes writes from the other two.
    gv.heals(True)
    gv.kill_brick(1)
    vols[1].umount()
    (gv.mnt / "c" / "after-loss.bin").write_bytes(os.urandom(400_000))
    files = sorted(k for k in want if k.endswith(".bin"))
    with open(gv.mnt / files[0], "ab") as fh:
        fh.write(os.urandom(123_456))
    victim = files[1]
    os.unlink(gv.mnt / victim)
    want = manifest(gv.mnt)
    first, second = remount_and_read(gv, vols)
    assert first == want and second == want
    assert gv.heal_info()[str(gv.bricks[1])] is None    # it is away
    # Node 1 back: GlusterFS heals what it missed.
    vols[1].mount()
    gv.start_force()
    gluster.cli("volume", "heal", gv.name)
    gv.wait_healed(timeout=180)
    # Healed for real: with node 2 lost now, 0 and 1 serve it all.
    gv.kill_brick(2)
    first, second = remount_and_read(gv, vols)
    assert first == want and second == want
    gv.start_force()
    gv.wait_healed(timeout=180)

    # (c) everything down; every brick's daxguard volume checks clean.
    gv.umount()
    gluster.cli("volume", "stop", gv.name)
    for i, v in enumerate(vols):
        v.umount()
        rc, _, p = fsck(v.devs, "-n")
        assert rc == 0, f"brick {i}: fsck -n exit {rc}\n{p.stdout}{p.stderr}"
    for i, v in enumerate(vols):
        assert v.unexpected_log_lines() == [], (i, v.unexpected_log_lines())
