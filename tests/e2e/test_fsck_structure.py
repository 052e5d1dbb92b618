# SPDX-License-Identifier: MIT
"""fsck.daxguard repairs of the filesystem structures, end to end.

daxguard-inject --fault logical writes LOGICAL corruption through the
engine (every checksum stays valid, as a bug in daxguard itself would
leave it): wrong link counts, orphans, dangling entries, wrong entry
types and directory parents, an inode without a file type, a second
name of a directory, bitmap leaks and missing bits, pages used twice,
an extent past the end of the volume, wrong block counts, and a row's
parity wrong under a checksum that matches it. For each: fsck -n exits
4 and names the code (PR_3_*, and the file; PR_2_PARITY_STALE for the
parity), fsck -y exits 1, fsck -n exits 0, and the mounted volume shows
the expected outcome with every other file intact by sha256 and a clean
scrub."""
import hashlib
import json
import os
import subprocess

import pytest

from conftest import INJECT, Volume
from dgfault import copy_of, diff_manifest, fsck, inject, make_tree, manifest

LONG = "a-rather-long-file-name-that-leaves-a-big-deleted-record"


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    """A small tree, its manifest, file bytes, stats and free space."""
    tmp = tmp_path_factory.mktemp("golden")
    v = Volume(tmp, ndev=4, size="32M", tag=f"fsck-structure-golden-{os.getpid()}")
    v.mkfs()
    v.mount()
    try:
        make_tree(v.mnt, seed=5, small=14, large=1, depth=2, frag=False)
        # /r: a deleted record longer than a new name needs, then a live
        # entry after it (a new name reuses the deleted record).
        (v.mnt / "r").mkdir()
        (v.mnt / "r" / LONG).write_bytes(b"x" * 100)
        (v.mnt / "r" / "next").write_bytes(os.urandom(5000))
        os.unlink(v.mnt / "r" / LONG)
        want = manifest(v.mnt)
        data, st = {}, {}
        for rel, h in want.items():
            p = v.mnt / rel
            if h not in ("dir",) and not h.startswith("->"):
                data[rel] = p.read_bytes()
            st[rel.rstrip("/")] = os.lstat(p)
        free = os.statvfs(v.mnt).f_bfree
    finally:
        v.umount()
    yield v, want, data, st, free
    v.cleanup()


@pytest.fixture
def vol(golden, volume_factory):
    g, want, data, st, free = golden
    return copy_of(g, volume_factory), want, data, st, free


def rel(path):
    return path.lstrip("/")


def sha(b):
    return hashlib.sha256(b).hexdigest()


def logical(v, target, seed, extra=()):
    rep, _ = inject(v.devs, "logical", target, seed=seed, extra=extra)
    assert rep["fault"] == "logical" and rep["target"] == target, rep
    assert rep["changes"], rep
    return rep


def repair_cycle(v, code, file=None, ino=None, vpn=None, loss=False):
    """fsck -n finds code (only filesystem findings: every checksum
    passes), -y fixes everything (exit 1, or 4 -- never 5 -- when the
    repair gives data up), -n is clean; returns the -n report."""
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 4, p.stdout + p.stderr
    assert all(f["code"].startswith("PR_3_") for f in rep["findings"]), rep
    hits = [f for f in rep["findings"] if f["code"] == code]
    assert hits, rep
    if file is not None:
        assert any(f["file"] == file for f in hits), (file, hits)
    if ino is not None:
        assert any(f["ino"] == ino for f in hits), (ino, hits)
    if vpn is not None:
        assert any(f["vpn"] == vpn for f in hits), (vpn, hits)
    rc, rep_y, p = fsck(v.devs, "-y", json_out=True)
    assert rc == (4 if loss else 1), p.stdout + p.stderr
    assert rep_y["findings"] and all(f["fixed"] for f in rep_y["findings"])
    rc, rep2, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0 and rep2["findings"] == [], p.stdout + p.stderr
    return rep, rep_y


def scrub_clean(v):
    r = json.loads(v.ctl("scrub", "--json").stdout)
    assert r["detected"] == 0 and r["unrecoverable"] == 0, r
    assert r["parity_mismatch"] == 0 and r["rows_checked"] > 0, r


@pytest.mark.parametrize("seed,kind,delta", [(0, "nlink+1", 1),
                                              (1, "nlink-1", -1)])
def test_nlink(vol, seed, kind, delta):
    v, want, _, st, _ = vol
    rep = logical(v, "inode", seed)
    assert rep["kind"] == kind and rep["after"] == rep["before"] + delta
    repair_cycle(v, "PR_3_NLINK", file=rep["file"])
    v.mount()
    assert os.stat(v.mnt / rel(rep["file"])).st_nlink == \
        st[rel(rep["file"])].st_nlink == rep["before"]
    assert diff_manifest(want, manifest(v.mnt)) == []
    scrub_clean(v)


def test_entry_type_fixed(vol):
    """A file's entry says it is a symlink: fsck sets the type from the
    inode, and the mounted directory lists a regular file again."""
    v, want, _, _, _ = vol
    rep = logical(v, "directory", 2)
    assert rep["kind"] == "type" and rep["before"] != rep["after"], rep
    repair_cycle(v, "PR_3_DIRENT_TYPE", file=rep["dir_path"])
    v.mount()
    name = rep["entry"].rsplit("/", 1)[1]
    with os.scandir(v.mnt / rel(rep["dir_path"])) as it:
        ent = next(e for e in it if e.name == name)
        assert ent.is_file(follow_symlinks=False)
    assert diff_manifest(want, manifest(v.mnt)) == []
    scrub_clean(v)


def test_directory_parent_fixed(vol):
    """A nested directory names the root as its parent: fsck sets it
    back to the directory whose entry names it."""
    v, want, _, _, _ = vol
    rep = logical(v, "inode", 2)
    assert rep["kind"] == "parent" and rep["after"] == 1, rep
    assert rep["before"] != 1, rep
    repair_cycle(v, "PR_3_DIR_PARENT", file=rep["file"])
    v.mount()
    assert diff_manifest(want, manifest(v.mnt)) == []
    scrub_clean(v)


def test_typeless_inode_keeps_its_data(vol):
    """A file's inode has no file type (every S_IFMT bit set): its entry
    still says it is a regular file, so fsck sets that type again
    (exit 1: nothing given up, named by its path) and the file reads
    back whole, with its mode, in its place. fsck -n names it by its
    path too, though the filesystem cannot be opened with an inode
    that has no type (its walk names it: check_names.c)."""
    v, want, data, st, _ = vol
    rep = logical(v, "inode", 3)
    assert rep["kind"] == "mode" and rep["after"] & 0o170000 == 0o170000
    _, rep_y = repair_cycle(v, "PR_3_INODE_BAD", ino=rep["ino"],
                            file=rep["file"])
    assert [(f["code"], f["file"]) for f in rep_y["findings"]] == \
        [("PR_3_INODE_BAD", rep["file"])], rep_y
    v.mount()
    f = rel(rep["file"])
    assert (v.mnt / f).read_bytes() == data[f]
    assert os.lstat(v.mnt / f).st_mode == st[f].st_mode == rep["before"]
    assert diff_manifest(want, manifest(v.mnt)) == []
    scrub_clean(v)


def test_orphan_to_lost_found(vol):
    v, want, data, _, _ = vol
    rep = logical(v, "directory", 0)
    assert rep["kind"] == "orphan" and rep["entry"] == rep["file"]
    _, rep_y = repair_cycle(v, "PR_3_UNREACHABLE", ino=rep["ino"])
    lf = f"/lost+found/#{rep['ino']}"
    assert any(f["file"] == lf for f in rep_y["findings"]), rep_y
    v.mount()
    got = manifest(v.mnt)
    assert got[rel(lf)] == sha(data[rel(rep["file"])])
    assert not (v.mnt / rel(rep["file"])).exists()
    assert os.stat(v.mnt / rel(lf)).st_nlink == 1
    want = dict(want)
    del want[rel(rep["file"])]
    assert diff_manifest(want, got) == []
    scrub_clean(v)


@pytest.mark.parametrize("where", [None, "/r"])
def test_dangling_entry_removed(vol, where):
    """At the tail of a directory page, and in a reused deleted record
    longer than the name (its removal must keep the record length, or
    the entries after it are lost)."""
    v, want, _, _, _ = vol
    extra = ["--file", where] if where else []
    rep = logical(v, "directory", 1, extra=extra)
    assert rep["kind"] == "dangling" and rep["other"] > 0
    if where:
        assert rep["dir_path"] == where and "reused" in rep["detail"]
    repair_cycle(v, "PR_3_DIRENT_DANGLING", file=rep["dir_path"])
    v.mount()
    name = rep["entry"].rsplit("/", 1)[1]
    assert name not in os.listdir(v.mnt / rel(rep["dir_path"]))
    assert diff_manifest(want, manifest(v.mnt)) == []
    scrub_clean(v)


def test_directory_second_name_removed(vol):
    """A directory gets a second name beside its first (sub-kind
    "multi", by name only): fsck removes the second and the tree is as
    it was."""
    v, want, _, _, _ = vol
    rep = logical(v, "directory", 1, extra=["--sub-kind", "multi"])
    assert rep["kind"] == "multi" and rep["file"] != rep["entry"], rep
    repair_cycle(v, "PR_3_DIR_MULTI", file=rep["dir_path"])
    v.mount()
    name = rep["entry"].rsplit("/", 1)[1]
    assert name not in os.listdir(v.mnt / rel(rep["dir_path"]))
    assert diff_manifest(want, manifest(v.mnt)) == []
    scrub_clean(v)


def test_bitmap_missing_bit(vol):
    v, want, _, _, free = vol
    rep = logical(v, "allocation", 0)
    assert rep["kind"] == "bitmap-missing" and rep["vpn"] > 0
    repair_cycle(v, "PR_3_BITMAP_MISSING", file=rep["file"], vpn=rep["vpn"])
    v.mount()
    assert os.statvfs(v.mnt).f_bfree == free
    assert diff_manifest(want, manifest(v.mnt)) == []
    scrub_clean(v)


def test_bitmap_leak_freed(vol):
    v, want, _, _, free = vol
    rep = logical(v, "allocation", 1)
    assert rep["kind"] == "bitmap-leak" and rep["file"] is None
    repair_cycle(v, "PR_3_BITMAP_LEAK", vpn=rep["vpn"])
    v.mount()
    assert os.statvfs(v.mnt).f_bfree == free
    assert diff_manifest(want, manifest(v.mnt)) == []
    scrub_clean(v)


def test_block_count(vol):
    v, want, _, st, _ = vol
    rep = logical(v, "extent", 1)
    assert rep["kind"] == "blocks" and rep["after"] == rep["before"] + 1
    repair_cycle(v, "PR_3_BLOCKS", file=rep["file"])
    v.mount()
    assert os.stat(v.mnt / rel(rep["file"])).st_blocks == \
        st[rel(rep["file"])].st_blocks
    assert diff_manifest(want, manifest(v.mnt)) == []
    scrub_clean(v)


def test_parity_wrong_under_its_checksum(vol):
    """A row's parity wrong under a checksum that matches it (a bug
    computing parity): every page verifies, so only adding the row up
    finds it. fsck -n names it (PR_2_PARITY_STALE, exit 4); the mounted
    volume's scrub counts it and recomputes it from the verified data;
    then fsck and a second scrub are clean and every file is intact."""
    v, want, _, _, _ = vol
    rep = logical(v, "parity", 7)
    assert rep["kind"] == "parity-stale", rep
    ch = rep["changes"][0]
    rc, found, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 4, p.stdout + p.stderr
    assert [(f["code"], f["device"], f["page"]) for f in found["findings"]] \
        == [("PR_2_PARITY_STALE", ch["device"], ch["page"])], found
    v.mount()
    r = json.loads(v.ctl("scrub", "--json").stdout)
    assert r["parity_mismatch"] == 1 and r["parity_fixed"] == 1, r
    assert r["detected"] == 0 and r["unrecoverable"] == 0, r
    scrub_clean(v)
    assert diff_manifest(want, manifest(v.mnt)) == []
    v.umount()
    rc, found, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0 and found["findings"] == [], p.stdout + p.stderr


def test_extent_double_use(vol):
    """File A's last extent remapped onto B's pages: fsck keeps B, drops
    A's bad extent and frees A's old pages. A's data there is lost: A
    ends where its kept extents end (a short file, not zeros), and fsck
    says so (exit 4)."""
    v, want, data, _, free = vol
    want = dict(want)
    rep = logical(v, "extent", 0)
    assert rep["kind"] == "extent-dup" and rep["ino"] > rep["other"]
    a, b = rel(rep["file"]), rel(rep["other_file"])
    rep_n, _ = repair_cycle(v, "PR_3_EXTENT_DUP", file=rep["file"],
                            loss=True)
    assert {"PR_3_BLOCKS", "PR_3_BITMAP_LEAK"} <= \
        {f["code"] for f in rep_n["findings"]}
    v.mount()
    got = manifest(v.mnt)
    assert got[b] == want[b]
    orig = data[a]
    cut = rep["fpage"] * 4096
    assert len(orig) > cut and (v.mnt / a).read_bytes() == orig[:cut]
    assert os.statvfs(v.mnt).f_bfree == free + rep["pages"]
    del want[a], got[a]
    assert diff_manifest(want, got) == []
    scrub_clean(v)


def test_extent_past_the_end_cut(vol):
    """A file's last extent starts past the end of the volume (sub-kind
    "extent-bad", by name only): fsck drops it (the file ends where its
    kept extents end: data lost, exit 4), sets the block count and
    frees the pages the extent mapped before."""
    v, want, data, _, free = vol
    want = dict(want)
    rep = logical(v, "extent", 1, extra=["--sub-kind", "extent-bad"])
    assert rep["kind"] == "extent-bad" and rep["after"] > rep["before"]
    a = rel(rep["file"])
    rep_n, _ = repair_cycle(v, "PR_3_EXTENT_BAD", file=rep["file"],
                            loss=True)
    assert {"PR_3_BLOCKS", "PR_3_BITMAP_LEAK"} <= \
        {f["code"] for f in rep_n["findings"]}
    v.mount()
    got = manifest(v.mnt)
    cut = rep["fpage"] * 4096
    assert len(data[a]) > cut and (v.mnt / a).read_bytes() == data[a][:cut]
    assert os.statvfs(v.mnt).f_bfree == free + rep["pages"]
    del want[a], got[a]
    assert diff_manifest(want, got) == []
    scrub_clean(v)


def test_file_option_picks_the_file(vol):
    v, _, _, st, _ = vol
    target = "/" + sorted(k for k in st if k.endswith(".txt"))[-1]
    rep = logical(v, "inode", 0, extra=["--file", target])
    assert rep["file"] == target
    repair_cycle(v, "PR_3_NLINK", file=target)


def test_refuses_mounted_volume(vol):
    v, _, _, _, _ = vol
    v.mount()
    rep, p = inject(v.devs, "logical", "inode", check=False)
    assert rep is None and p.returncode == 1, p.stderr   # failed
    assert "mounted" in p.stderr, p.stderr
    v.umount()
    assert fsck(v.devs, "-n")[0] == 0


def test_logical_needs_a_structure_target(vol):
    v, _, _, _, _ = vol
    p = subprocess.run([str(INJECT)] + [str(d) for d in v.devs] +
                       ["--fault", "logical", "--target", "data"],
                       capture_output=True, text=True)
    assert p.returncode == 2, p.stderr                  # bad usage
    assert "--target inode" in p.stderr
    assert fsck(v.devs, "-n")[0] == 0
