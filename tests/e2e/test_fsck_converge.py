# SPDX-License-Identifier: MIT
"""fsck beyond parity (issue 15): one fsck -y gives up what is lost,
names it, exits 4, and leaves nothing for the next run; devices whose
superblocks lost their writes are used page by page where that is
safe, refused (nothing written) where it is not; --json says why a run
stopped."""
import hashlib
import os
import re

import pytest

from dgfault import copy_of, diff_manifest, fsck, inject, make_tree, \
    manifest, manifest_tolerant

PAGE = 4096


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    """A populated volume with extended attributes, copied per test.
    Without a metadata zone (mkfs --meta-size none): with one, a double
    fault in the row of an extent or xattr page is repaired from the
    page's ditto copy (test_meta_zone.py), and nothing is lost to give
    up."""
    from conftest import Volume
    tmp = tmp_path_factory.mktemp("golden")
    v = Volume(tmp, ndev=4, size="32M", tag=f"conv-golden-{os.getpid()}")
    v.mkfs("--meta-size", "none")
    v.mount()
    try:
        make_tree(v.mnt, seed=11)
        for i, f in enumerate(sorted(p for p in v.mnt.rglob("s*.txt"))):
            os.setxattr(f, "user.note", b"x%d" % i * 300)
        want = manifest(v.mnt)
    finally:
        v.umount()
    yield v, want
    v.cleanup()



def keys(rep, fixed=None):
    return {(f["code"], f["device"], f["page"]) for f in rep["findings"]
            if fixed is None or f["fixed"] == fixed}


def double_fault(golden, volume_factory, target, code):
    """Two zeroed pages in one row, the first in a page of target, such
    that fsck -n reports code."""
    g, _ = golden
    for seed in range(1, 60):
        v = copy_of(g, volume_factory)
        inject(v.devs, "zero", target, seed=seed,
               extra=["--count", "2", "--same-row"])
        rc, chk, p = fsck(v.devs, "-n", json_out=True)
        if code in {f["code"] for f in chk["findings"]}:
            assert rc == 4, p.stdout
            return v, chk
        v.cleanup()
    pytest.fail(f"no seed made fsck report {code}")


def converges(v):
    """fsck -y exits 4 (data given up, nothing else: not 5); a second
    fsck -y repairs nothing, finds nothing new and exits 0: what the
    first gave up is at most a warning now (a page given up, issue 29);
    fsck -n finds the same. Returns the first report."""
    rc, rep, p = fsck(v.devs, "-y", json_out=True)
    assert rc == 4, p.stdout + p.stderr
    assert rep["converged"] and 1 <= rep["passes"] <= 4, rep
    given_up = {("PR_2_PAGE_GIVEN_UP", f["device"], f["page"])
                for f in rep["findings"]
                if f["code"] == "PR_2_PAGE_GIVEN_UP" and f["fixed"]}
    rc2, rep2, p2 = fsck(v.devs, "-y", json_out=True)
    assert rc2 == 0, p2.stdout
    assert not keys(rep2, fixed=True), p2.stdout
    assert all(f["warning"] for f in rep2["findings"]), p2.stdout
    assert keys(rep2) <= given_up, p2.stdout
    rc3, rep3, p3 = fsck(v.devs, "-n", json_out=True)
    assert rc3 == 0 and keys(rep3) == keys(rep2), p3.stdout
    return rep


def test_lost_extent_page_converges_in_one_run(golden, volume_factory):
    """The file cut at a lost extent page frees that page: the same run
    resets it and re-protects its row (it used to take a second run)."""
    v, _ = double_fault(golden, volume_factory, "extent",
                        "PR_3_EXTENTS_LOST")
    rep = converges(v)
    assert rep["passes"] >= 2, rep          # restarted after the cut
    assert any(f["code"] == "PR_3_EXTENTS_LOST" and f["fixed"] and
               f["file"] for f in rep["findings"]), rep
    v.expect_log(r"fault|read error")
    v.mount()
    manifest_tolerant(v.mnt)
    v.umount()


def test_restart_is_said_on_stdout(golden, volume_factory):
    v, _ = double_fault(golden, volume_factory, "extent",
                        "PR_3_EXTENTS_LOST")
    rc, _, p = fsck(v.devs, "-y")
    assert rc == 4, p.stdout + p.stderr
    assert "restarting the checks (pass 2 of at most 4)" in p.stdout


def test_lost_xattr_page_is_given_up(golden, volume_factory):
    """An xattr page beyond parity: fsck -y drops the attributes (the
    file's data stays), names the file, exits 4, and the next fsck -n
    no longer reports the page (it used to for ever)."""
    v, chk = double_fault(golden, volume_factory, "xattr",
                          "PR_3_XATTRS_LOST")
    lost = {f["file"] for f in chk["findings"]
            if f["code"] == "PR_3_XATTRS_LOST"}
    assert lost and all(n.startswith("/") for n in lost), chk
    rep = converges(v)
    assert {f["file"] for f in rep["findings"]
            if f["code"] == "PR_3_XATTRS_LOST" and f["fixed"]} == lost
    v.expect_log(r"fault|read error")
    v.mount()
    try:
        for n in lost:
            # the golden gave every s*.txt an attribute: now it has none
            assert re.match(r"s\d+\.txt$", os.path.basename(n)), n
            assert os.listxattr(v.mnt / n.lstrip("/")) == []
    finally:
        v.umount()


def test_unattached_files_named_in_lost_found(golden, volume_factory):
    """Inodes whose names were on a lost directory page are named where
    fsck -y puts them, /lost+found/#INO, by -n too; never '?inoN'."""
    v, chk = double_fault(golden, volume_factory, "directory",
                          "PR_3_UNREACHABLE")
    names = [f["file"] for f in chk["findings"]
             if f["code"] == "PR_3_UNREACHABLE"]
    assert names and all(n.startswith("/lost+found/#") for n in names), chk
    assert not any("?ino" in (f["file"] or "") for f in chk["findings"])
    rc, rep, p = fsck(v.devs, "-y", json_out=True)
    assert rc == 4, p.stdout
    v.expect_log(r"fault|read error")
    v.mount()
    try:
        for n in names:
            assert (v.mnt / n.lstrip("/")).exists(), n
    finally:
        v.umount()


def test_json_says_why_a_run_stopped(tmp_path):
    rc, rep, p = fsck([tmp_path / "nope"], "-n", json_out=True)
    assert rc == 8
    assert "No such file or directory" in rep["error"], p.stdout
    assert rep["findings"] == []
    img = tmp_path / "blank.img"
    img.write_bytes(b"\0" * (1 << 20))
    rc, rep, p = fsck([img], "-y", json_out=True)
    assert rc == 8 and "no daxguard superblock" in rep["error"], p.stdout


# ---- devices whose superblock writes were lost ------------------------


def supers_of(path):
    """The superblock pages (first and last) of an image."""
    data = path.read_bytes()
    return data[:PAGE], data[-PAGE:]


def put_supers(path, pages):
    with open(path, "r+b") as f:
        f.write(pages[0])
        f.seek(-PAGE, os.SEEK_END)
        f.write(pages[1])


def sha(paths):
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


def stale_supers(volume_factory, ndev_stale):
    """A 4-device parity-1 volume where devices 1.. lost every
    superblock write since the first mount (their data is current)."""
    v = volume_factory(ndev=4, size="32M")
    v.mkfs()
    v.mount()
    make_tree(v.mnt, seed=5, small=20, large=1)
    v.umount()
    old = [supers_of(v.devs[d]) for d in range(1, 1 + ndev_stale)]
    v.mount()
    (v.mnt / "later").write_bytes(os.urandom(50000))
    want = manifest(v.mnt)
    v.umount()
    for d, pages in enumerate(old, start=1):
        put_supers(v.devs[d], pages)
    return v, want


def test_stale_superblocks_beyond_parity_used_page_by_page(volume_factory):
    """Two devices of a parity-1 volume lost their superblock writes but
    nothing else: the mount names them and says what to do; -o degraded
    reads every file (read-only); fsck -n exits 4 naming them; fsck -y
    checks every page of theirs, takes them back (exit 1) and the next
    fsck -n is clean. Before, mount and fsck refused (exit 8)."""
    v, want = stale_supers(volume_factory, 2)
    with pytest.raises(AssertionError) as e:
        v.mount()
    assert "-o degraded" in str(e.value) and "nothing was written" in \
        str(e.value), str(e.value)
    v.mount("degraded")
    try:
        assert diff_manifest(want, manifest(v.mnt)) == []
        with pytest.raises(OSError):
            (v.mnt / "new").write_bytes(b"x")
    finally:
        v.umount()
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 4, p.stdout + p.stderr
    assert {f["device"] for f in rep["findings"]
            if f["code"] == "PR_0_DEV_STALE"} == {1, 2}, p.stdout
    rc, rep, p = fsck(v.devs, "-y", json_out=True)
    assert rc == 1, p.stdout + p.stderr
    assert all(f["fixed"] for f in rep["findings"]), p.stdout
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0, p.stdout
    v.mount()
    try:
        assert diff_manifest(want, manifest(v.mnt)) == []
        (v.mnt / "new").write_bytes(b"still writable")
    finally:
        v.umount()


def test_too_many_stale_devices_refused_untouched(volume_factory):
    """Three of four devices behind under parity 1: more than the
    checksum copies can arbitrate. fsck refuses (8), says why, what to
    do and that nothing was written, in --json too; the images are
    unchanged."""
    v, _ = stale_supers(volume_factory, 3)
    before = sha(v.devs)
    for mode in ("-n", "-y"):
        rc, rep, p = fsck(v.devs, mode, json_out=True)
        assert rc == 8, p.stdout + p.stderr
        assert "nothing was written" in p.stderr, p.stderr
        assert "nothing was written" in rep["error"], p.stdout
    assert sha(v.devs) == before
    with pytest.raises(AssertionError):
        v.mount("degraded")
    assert sha(v.devs) == before
