# SPDX-License-Identifier: MIT
"""The metadata zone (issue 15), through real mounts: faults beyond
parity in the row of an inode table, directory or extent page lose
nothing, because every metadata page has ditto copies on other devices
(format.h, docs/integrity.md); mkfs --meta-size sizes the zone, dumpfs
and status show it, and a full zone puts metadata among the data rows
(counted, reported) instead of failing."""
import json
import os
import subprocess

import pytest

from conftest import BUILD, run
from dgfault import copy_of, diff_manifest, fsck, inject, make_tree, manifest

DUMPFS = BUILD / "dump" / "dumpfs.daxguard"


def dumpfs(v):
    return json.loads(run([DUMPFS, "--json", v.devlist]).stdout)


@pytest.fixture(scope="module", params=[1, 2], ids=["p1", "p2"])
def golden(request, tmp_path_factory):
    """A populated volume with a zone (the default), for each parity."""
    from conftest import Volume
    p = request.param
    tmp = tmp_path_factory.mktemp(f"zone-golden-p{p}")
    v = Volume(tmp, ndev=3 + p, size="32M", parity=p,
               tag=f"zone-golden-p{p}-{os.getpid()}")
    v.mkfs()
    v.mount()
    try:
        make_tree(v.mnt, seed=11)
        (v.mnt / "many").mkdir()
        for i in range(150):            # several inode table pages
            (v.mnt / "many" / f"f{i}").write_bytes(b"%d" % i)
        os.setxattr(v.mnt / "many" / "f3", "user.k", b"v" * 900)
        want = manifest(v.mnt)
    finally:
        v.umount()
    yield v, want
    v.cleanup()



@pytest.mark.parametrize("target", ["inode", "directory", "extent"])
def test_faults_beyond_parity_in_a_metadata_row_lose_nothing(
        golden, volume_factory, target):
    """parity + 1 zeroed pages in the row of a metadata page: the files
    read back bit-exact through the mount, fsck -y exits 0 or 1 and
    fsck -n is clean after it, and nothing is reported lost."""
    g, want = golden
    tried = 0
    for seed in range(1, 30):
        v = copy_of(g, volume_factory)
        rep, _ = inject(v.devs, "zero", target, seed=seed,
                        extra=["--count", str(g.parity + 1), "--same-row"])
        ch = rep["changes"]
        # each fault on a page that holds something: the target's own
        # page, other metadata or parity (a never-written page's media
        # is ignored, so zeros there would be no fault)
        if len({c["device"] for c in ch}) != g.parity + 1 or \
                ch[0]["structure"] != target or \
                any(c["structure"] in ("free", "unused") for c in ch):
            v.cleanup()
            continue
        tried += 1
        rc, chk, p = fsck(v.devs, "-n", json_out=True)
        assert rc == 4, p.stdout             # found, not yet repaired
        codes = {f["code"] for f in chk["findings"]}
        assert not codes & {"PR_3_INODES_LOST", "PR_3_FILE_LOST",
                            "PR_3_DIR_LOST", "PR_3_EXTENTS_LOST",
                            "PR_3_UNREADABLE"}, p.stdout
        v.mount()
        try:
            assert diff_manifest(want, manifest(v.mnt)) == []
        finally:
            v.umount()
        rc, _, p = fsck(v.devs, "-y", json_out=True)
        assert rc in (0, 1), p.stdout + p.stderr
        rc, _, p = fsck(v.devs, "-n")
        assert rc == 0, p.stdout
        v.mount()
        try:
            assert diff_manifest(want, manifest(v.mnt)) == []
        finally:
            v.umount()
        v.cleanup()
        if tried == 2:
            return
    pytest.fail(f"no seed put {g.parity + 1} faults into a row of "
                f"a {target} page")


def test_mkfs_meta_size_dumpfs_and_status(volume_factory):
    """--meta-size is rounded up to whole chunks of rows; dumpfs shows
    the zone and the feature; status shows the zone; bad sizes are
    refused with a message."""
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs("--chunk", "64K", "--meta-size", "1M")
    d = dumpfs(v)
    geo = d["geometry"]
    # 1M is below the 2M floor: 512 pages, up to whole chunks of rows
    # of K = 3 data pages x 16 pages
    assert geo["zone_vpns"] == 11 * 3 * 16
    assert geo["zone_rows"] == geo["zone_vpns"] // 3
    assert geo["ditto_copies"] == 1
    assert "meta_zone" in json.dumps(d)
    assert d["meta_outside_zone"] == 0
    v.mkfs("--meta-size", "6M")
    assert dumpfs(v)["geometry"]["zone_vpns"] == 6 * 256  # 2 x 1M chunks
    v.mount()
    st = v.status()
    assert st["meta_zone_bytes"] == 6 << 20, st
    assert 0 < st["meta_zone_free_bytes"] < st["meta_zone_bytes"], st
    assert st["meta_outside_zone_pages"] == 0, st
    v.umount()
    # A size that does not parse is a usage error (2); one that does not
    # fit these devices, a failure to format (1).
    for bad, code in (("x", 2), ("0", 2), ("1T", 1)):
        p = subprocess.run([str(BUILD / "mkfs" / "mkfs.daxguard"), "-q",
                            "--force", "--meta-size", bad] +
                           [str(x) for x in v.devs],
                           capture_output=True, text=True)
        assert p.returncode == code, (bad, p.stderr)
        assert "metadata zone" in p.stderr, p.stderr


def test_full_zone_puts_metadata_outside_and_says_so(volume_factory):
    """More directories than the zone has pages: every mkdir succeeds,
    status, dumpfs and fsck count the metadata pages outside the zone,
    fsck -n is clean and every directory is there after a remount."""
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs("--chunk", "64K", "--meta-size", "2M")
    zone = dumpfs(v)["geometry"]["zone_vpns"]
    v.mount()
    n = zone + 100
    for i in range(n):
        d = v.mnt / f"d{i:05d}"
        d.mkdir()
        (d / "f").write_bytes(b"%d" % i)
    st = v.status()
    assert st["meta_zone_free_bytes"] == 0, st
    assert st["meta_outside_zone_pages"] >= 100, st
    v.umount()
    outside = dumpfs(v)["meta_outside_zone"]
    assert outside >= 100
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0, p.stdout
    assert rep["meta_outside_zone"] == outside, rep
    p = run([str(BUILD / "fsck" / "fsck.daxguard"), "-n"] +
            [str(x) for x in v.devs])
    assert f"{outside} metadata pages lie outside the metadata zone" \
        in p.stdout, p.stdout
    v.mount()
    try:
        for i in range(n):
            assert (v.mnt / f"d{i:05d}" / "f").read_bytes() == b"%d" % i
    finally:
        v.umount()
