# SPDX-License-Identifier: MIT
"""fsck.daxguard end to end: every fault kind into every structure of an
unmounted volume -> fsck -n exits 4 and reports it -> fsck -y exits 1 ->
fsck -n exits 0 -> every file's sha256 is intact (STYLE §8, e2fsprogs
f_* tests built from mkfs + inject --seed)."""
import errno
import hashlib
import os
import re
import subprocess

import pytest

from conftest import BUILD, FSCK, run
from dgfault import KINDS, TARGETS, copy_of, diff_manifest, fsck, inject, \
    make_tree, manifest, manifest_tolerant


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    """One populated volume, copied for each test (fast)."""
    from conftest import Volume
    tmp = tmp_path_factory.mktemp("golden")
    v = Volume(tmp, ndev=4, size="32M", tag=f"fsck-golden-{os.getpid()}")
    v.mkfs()
    v.mount()
    try:
        make_tree(v.mnt, seed=7)
        want = manifest(v.mnt)
    finally:
        v.umount()
    yield v, want
    v.cleanup()


@pytest.fixture(scope="module")
def golden_nozone(tmp_path_factory):
    """The same without a metadata zone (mkfs --meta-size none): metadata
    pages have no ditto copies, so two faults in a row lose them, as they
    still can where a full zone put metadata among the data rows. The
    tests of what fsck does with lost metadata use it; on a volume with a
    zone the same faults lose nothing (test_meta_zone.py)."""
    from conftest import Volume
    tmp = tmp_path_factory.mktemp("golden-nozone")
    v = Volume(tmp, ndev=4, size="32M",
               tag=f"fsck-golden-nozone-{os.getpid()}")
    v.mkfs("--meta-size", "none")
    v.mount()
    try:
        make_tree(v.mnt, seed=7)
        want = manifest(v.mnt)
    finally:
        v.umount()
    yield v, want
    v.cleanup()



def assert_writable(mnt, name):
    """The volume still takes a new file and reads it back."""
    (mnt / name).write_bytes(b"still writable")
    assert (mnt / name).read_bytes() == b"still writable"


@pytest.fixture
def vol(golden, volume_factory):
    g, want = golden
    return copy_of(g, volume_factory), want


def check_cycle(v, want, rep_inj):
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 4, p.stdout + p.stderr
    assert rep["findings"], rep
    # Every device that was changed is named by a finding.
    changed = {c["device"] for c in rep_inj["changes"]}
    found = {f["device"] for f in rep["findings"]}
    assert changed & found or any(f["code"].startswith("PR_0_DEV")
                                  for f in rep["findings"]), (rep_inj, rep)
    rc, rep, p = fsck(v.devs, "-y", json_out=True)
    assert rc == 1, p.stdout + p.stderr
    assert all(f["fixed"] for f in rep["findings"]), rep
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0, p.stdout + p.stderr
    v.mount()
    assert diff_manifest(want, manifest(v.mnt)) == []
    v.umount()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("target", TARGETS)
def test_fault_matrix(vol, kind, target):
    v, want = vol
    rep, _ = inject(v.devs, kind, target, seed=11)
    assert len(rep["changes"]) >= 1
    check_cycle(v, want, rep)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_any_target_count(vol, seed):
    """Several faults on different rows at once."""
    v, want = vol
    rep, _ = inject(v.devs, "bitflip", "data", seed=seed,
                    extra=["--count", "4", "--bits", "3"])
    assert len(rep["changes"]) == 12
    check_cycle(v, want, rep)


def test_clean_volume_exits_0(vol):
    v, _ = vol
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0 and rep["findings"] == []
    assert rep["pages_checked"] > 0
    p = run([FSCK, "-n"] + v.devs)
    assert "clean" in p.stdout


def test_json_lists_file_of_data_fault(vol):
    v, _ = vol
    rep, _ = inject(v.devs, "zero", "data", seed=5)
    ch = rep["changes"][0]
    rc, out, _ = fsck(v.devs, "-n", json_out=True)
    assert rc == 4
    f = out["findings"][0]
    assert f["code"] == "PR_2_PAGE_BAD"
    assert (f["device"], f["page"]) == (ch["device"], ch["page"])
    assert f["file"] == ch["file"] and f["file"].startswith("/")
    assert f["structure"] == "data"


def test_preen_repairs_pages(vol):
    v, want = vol
    inject(v.devs, "bitflip", "parity", seed=3)
    rc, _, p = fsck(v.devs, "-p")
    assert rc == 1, p.stdout
    assert fsck(v.devs, "-n")[0] == 0


def test_no_progress_bar_when_not_a_tty(vol):
    v, _ = vol
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0 and "\r" not in p.stderr and "%" not in p.stderr


def test_refuses_mounted_volume(vol):
    v, _ = vol
    v.mount()
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 8
    assert p.stderr.startswith("fsck.daxguard: cannot check:")
    assert "in use" in p.stderr
    v.umount()


def test_usage_errors(vol):
    v, _ = vol
    assert fsck([], "-n")[0] == 16
    assert fsck(v.devs, "-n", "-y")[0] == 16
    assert fsck(v.devs, "--bogus")[0] == 16


def test_missing_path_is_operational_error(tmp_path):
    rc, _, p = fsck([tmp_path / "nope"], "-n")
    assert rc == 8
    assert p.stderr.strip() == (f"fsck.daxguard: cannot check: cannot open "
                                f"'{tmp_path / 'nope'}': No such file or "
                                f"directory")


def test_journal_replay_after_crash(volume_factory):
    v = volume_factory(ndev=4, size="32M")
    v.mkfs()
    v.mount()
    make_tree(v.mnt, seed=3, small=20, large=1, frag=False)
    want = manifest(v.mnt)
    v.kill9()
    rc, _, p = fsck(v.devs, "-y")
    # The last updates are still in the journal (no sync since): the
    # replay is the repair, exit 1.
    assert rc == 1, p.stdout + p.stderr
    assert fsck(v.devs, "-n")[0] == 0
    v.mount()
    assert diff_manifest(want, manifest(v.mnt)) == []


def test_lost_inode_page_costs_only_its_files(volume_factory):
    """More faults in an inode table page's row than parity covers: the
    page's inodes are lost. fsck -y names the files that went with them,
    exits 4, and leaves a volume that mounts with every other file
    intact (before, the whole volume stopped mounting). The page holding
    the root is not given up. Without a metadata zone: with one, the
    page's ditto copy brings it back (test_meta_zone.py)."""
    g = volume_factory(ndev=4, size="32M")
    g.mkfs("--meta-size", "none")
    g.mount()
    try:
        make_tree(g.mnt, seed=7)
        (g.mnt / "many").mkdir()
        for i in range(120):         # inodes on several table pages
            (g.mnt / "many" / f"f{i}").write_bytes(b"%d" % i)
        want = manifest(g.mnt)
    finally:
        g.umount()
    for seed in range(1, 40):
        v = copy_of(g, volume_factory)
        inject(v.devs, "bitflip", "inode", seed=seed,
               extra=["--count", "2", "--same-row", "--bits", "4"])
        rc, rep, p = fsck(v.devs, "-n", json_out=True)
        codes = {f["code"] for f in rep["findings"]}
        if "PR_3_FILE_LOST" in codes:
            break
        v.cleanup()
    else:
        pytest.fail("no seed put two faults into a row of a used inode page")
    assert rc == 4 and "PR_3_INODES_LOST" in codes, p.stdout
    rc, rep, p = fsck(v.devs, "-y", json_out=True)
    # Data lost: 4, never 5 (as e2fsck, 4 replaces 1: README).
    assert rc == 4, p.stdout + p.stderr
    lost = {f["file"] for f in rep["findings"]
            if f["code"] == "PR_3_FILE_LOST" and f["fixed"]}
    assert lost and all(n.startswith("/") for n in lost), rep
    assert any(f["code"] == "PR_3_INODES_LOST" and f["fixed"]
               for f in rep["findings"]), rep
    named = {f["file"] for f in rep["findings"] if f.get("file")}
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert not {f["code"] for f in rep["findings"]} & {
        "PR_3_INODES_LOST", "PR_3_FILE_LOST", "PR_3_UNREADABLE"}, p.stdout
    v.expect_log(r"fault|read error")   # the row's other page stays bad
    v.mount()
    try:
        got = manifest_tolerant(v.mnt)
    finally:
        v.umount()
    for name in diff_manifest(want, got):       # EIO or gone: named
        # A lost directory's entries went to /lost+found, each named
        # there; the directory is named as lost.
        parts = name.rstrip("/").split("/")
        assert any("/" + "/".join(parts[:i]) in named
                   for i in range(1, len(parts) + 1)), (name, named)
    for name in lost:
        assert name.lstrip("/") not in got


def inode_numbers(v):
    """{path: inode number} of every file on the (unmounted) volume."""
    v.mount()
    try:
        return {str(p.relative_to(v.mnt)): p.lstat().st_ino
                for p in v.mnt.rglob("*")}
    finally:
        v.umount()


def double_fault(golden, volume_factory, target, code, inos=None, avoid=()):
    """A copy of the golden volume with two faults in one row, the first
    in a page of `target`, such that fsck -n reports `code` and none of
    `avoid`: (volume, inject report, fsck -n report). inos, when given,
    is filled with the copy's inode numbers before the damage."""
    g, _ = golden
    for seed in range(1, 40):
        v = copy_of(g, volume_factory)
        if inos is not None and not inos:
            inos.update(inode_numbers(v))
        rep, _ = inject(v.devs, "zero", target, seed=seed,
                        extra=["--count", "2", "--same-row"])
        rc, chk, p = fsck(v.devs, "-n", json_out=True)
        codes = {f["code"] for f in chk["findings"]}
        if code in codes and not codes & set(avoid):
            assert rc == 4, p.stdout
            return v, rep, chk
        v.cleanup()
    pytest.fail(f"no seed made fsck report {code}")


def only_file(chk, code):
    """The one file a fsck report names under code."""
    files = {f["file"] for f in chk["findings"] if f["code"] == code}
    assert len(files) == 1, chk
    return files.pop()


def repair_losing(v, code):
    """fsck -y gives the unreadable page up (exit 4: data lost), fsck -n
    then no longer finds it, and the volume mounts again."""
    rc, rep, p = fsck(v.devs, "-y", json_out=True)
    assert rc == 4, p.stdout + p.stderr
    assert any(f["code"] == code and f["fixed"] for f in rep["findings"]), rep
    rc, rep2, p = fsck(v.devs, "-n", json_out=True)
    assert not {f["code"] for f in rep2["findings"]} & {
        code, "PR_3_UNREACHABLE", "PR_3_UNREADABLE", "PR_3_NLINK",
        "PR_3_BITMAP_LEAK"}, p.stdout
    v.expect_log(r"fault|read error")   # the row's other page stays bad
    return rep


def damaged_files(rep_inj):
    return {c["file"].lstrip("/") for c in rep_inj["changes"]
            if c.get("file") and c["structure"] == "data"}


def test_lost_directory_page_moves_its_files_to_lost_found(golden_nozone,
                                                            volume_factory):
    """More faults in a directory page's row than parity covers: the
    names on that page are lost, not the files. fsck -y writes an empty
    page in its place and reconnects the files to /lost+found with their
    contents; everything else keeps its name (before, the volume did not
    mount at all)."""
    _, want = golden_nozone
    v, rep_inj, chk = double_fault(golden_nozone, volume_factory, "directory",
                              "PR_3_DIR_LOST")
    repair_losing(v, "PR_3_DIR_LOST")
    v.mount()
    try:
        got = manifest_tolerant(v.mnt)
    finally:
        v.umount()
    hurt = damaged_files(rep_inj)
    found = {h for n, h in got.items() if n.startswith("lost+found/")}
    moved = [n for n in diff_manifest(want, got)
             if n in want and not n.startswith("lost+found")]
    assert moved, "no name was lost"
    for n in moved:
        if want[n] == "dir" or n in hurt:
            continue                       # a directory's hash; bad data
        assert want[n] in found, (n, sorted(found))


def test_lost_extent_page_shortens_only_its_file(golden_nozone, volume_factory):
    """More faults in an extent page's row than parity covers: the file
    ends where its readable extents end, its size with them (a short
    file, not zeros), fsck exits 4 naming it, and the volume mounts with
    every other file intact."""
    _, want = golden_nozone
    v, rep_inj, chk = double_fault(golden_nozone, volume_factory, "extent",
                              "PR_3_EXTENTS_LOST")
    rep = repair_losing(v, "PR_3_EXTENTS_LOST")
    lost = [f for f in rep["findings"] if f["code"] == "PR_3_EXTENTS_LOST"]
    names = {f["file"].lstrip("/") for f in lost}
    assert names <= {"frag1", "frag2"}, lost
    v.mount()
    try:
        got = manifest_tolerant(v.mnt)
        for n in names:
            size = (v.mnt / n).stat().st_size
            assert 0 < size < 200 * 4096, (n, size)
            head = (v.mnt / n).read_bytes()
            assert len(head) == size
    finally:
        v.umount()
    hurt = damaged_files(rep_inj) | names
    assert set(diff_manifest(want, got)) <= hurt, diff_manifest(want, got)


def test_lost_root_inode_page_gets_a_new_root(golden_nozone, volume_factory):
    """The inode table page holding the root is given up too: fsck -y
    clears it and makes an empty root; every file whose inode was not on
    that page reappears in /lost+found with its contents (before, the
    volume never mounted again)."""
    _, want = golden_nozone
    inos = {}
    v, rep_inj, chk = double_fault(golden_nozone, volume_factory, "inode",
                              "PR_3_FS_ROOT", inos)
    rep = repair_losing(v, "PR_3_INODES_LOST")
    lost_page = [f for f in rep["findings"]
                 if f["code"] == "PR_3_INODES_LOST" and f["fixed"]]
    assert any("the root with them" in f["detail"] for f in lost_page), rep
    first, last = map(int, re.search(r"inodes (\d+)-(\d+)",
                                     lost_page[0]["detail"]).groups())
    v.mount()
    try:
        got = manifest_tolerant(v.mnt)
        assert (v.mnt / "lost+found").is_dir()
    finally:
        v.umount()
    found = {h for n, h in got.items() if n.startswith("lost+found/")}
    kept = [n for n, h in want.items()
            if h != "dir" and not first <= inos[n] <= last
            and n not in damaged_files(rep_inj)]
    assert kept and len(kept) < len(want), (first, last)
    assert all(want[n] in found for n in kept), \
        sorted(n for n in kept if want[n] not in found)


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def expect_eio(fn, *args):
    with pytest.raises(OSError) as e:
        fn(*args)
    assert e.value.errno == errno.EIO, e.value


def test_lost_extent_page_mounts_with_eio_for_its_file(golden_nozone,
                                                       volume_factory):
    """Before fsck: the volume mounts; the file whose extent page is lost
    gives EIO for its data, truncation, mapping and removal (its lost
    pages cannot be freed), keeps its attributes, and every other file
    reads back intact. Inodes are read at their first use, not at mount
    (design.md "Which inodes are in core"): status counts the file
    damaged once a use has read it."""
    _, want = golden_nozone
    v, rep_inj, chk = double_fault(golden_nozone, volume_factory, "extent",
                              "PR_3_EXTENTS_LOST")
    name = only_file(chk, "PR_3_EXTENTS_LOST").lstrip("/")
    v.expect_log(r"fault|extent page is unreadable")
    v.mount()
    try:
        f = v.mnt / name
        assert f.stat().st_size == 200 * 4096
        st = v.status()
        assert st["needs_fsck"] and st["damaged_inodes"] == 1, st
        expect_eio(f.read_bytes)
        expect_eio(f.write_bytes, b"x")          # opens with O_TRUNC
        expect_eio(os.truncate, f, 1)
        expect_eio(os.unlink, f)
        with open(f, "r+b") as fh:
            expect_eio(os.pwrite, fh.fileno(), b"x", 0)
        child = BUILD / "tests" / "e2e" / "commit_child"
        if child.exists():                      # libcommit maps it: EIO
            for how in ("ro", "rw"):
                out = subprocess.run([str(child), str(f), f"map {how} 0 0"],
                                     stdin=subprocess.DEVNULL, text=True,
                                     capture_output=True, timeout=60).stdout
                assert out.split()[:2] == ["err", str(errno.EIO)], out
        got = manifest_tolerant(v.mnt)
        assert got[name].startswith("error:")
        hurt = damaged_files(rep_inj) | {name}
        assert set(diff_manifest(want, got)) <= hurt
        assert_writable(v.mnt, "new")
    finally:
        v.umount()


def test_lost_extent_page_of_a_file_mapped_at_a_crash(golden_nozone,
                                                     volume_factory):
    """A file whose libcommit map was open when the daemon died, and
    whose extent page is then lost: the next mount still clears the map
    record (the record lives in the inode, not in the lost page), serves
    the file as EIO and the rest intact, and fsck -y gives the page up."""
    _, want = golden_nozone
    child = BUILD / "tests" / "e2e" / "commit_child"
    if not child.exists():
        pytest.skip("commit_child not built")
    v0, rep0, chk = double_fault(golden_nozone, volume_factory, "extent",
                                 "PR_3_EXTENTS_LOST")
    name = only_file(chk, "PR_3_EXTENTS_LOST").lstrip("/")
    v0.cleanup()
    v = copy_of(golden_nozone[0], volume_factory)
    v.mount()
    holder = subprocess.Popen([str(child), str(v.mnt / name)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        for cmd in ("map rw 0 0", "store 0 43", "sync"):
            holder.stdin.write(cmd + "\n")
            holder.stdin.flush()
            assert holder.stdout.readline().startswith("ok"), cmd
        v.kill9()
    finally:
        holder.kill()
        holder.wait()
    # The same seed picks the same extent page: the map and its sync
    # changed the file's data and inode, not its extents.
    rep, _ = inject(v.devs, "zero", "extent", seed=rep0["seed"],
                    extra=["--count", "2", "--same-row"])
    def where(r):
        return [(c["device"], c["page"], c.get("file")) for c in r["changes"]]
    assert where(rep) == where(rep0), (rep, rep0)
    v.expect_log(r"fault|extent page is unreadable")
    v.mount()
    try:
        assert "was open at a crash" in v.read_log()
        expect_eio((v.mnt / name).read_bytes)
        got = manifest_tolerant(v.mnt)
        assert set(diff_manifest(want, got)) <= damaged_files(rep) | {name}
    finally:
        v.umount()
    repair_losing(v, "PR_3_EXTENTS_LOST")
    v.mount()
    out = subprocess.run([str(child), str(v.mnt / name), "map rw 0 0",
                          "unmap"], stdin=subprocess.DEVNULL, text=True,
                         capture_output=True, timeout=60).stdout
    assert out.split("\n")[0].startswith("ok"), out    # no stale map


def test_lost_directory_page_mounts_read_only_for_that_directory(
        golden_nozone, volume_factory):
    """Before fsck: the volume mounts; in the directory whose page is
    lost, a name it cannot find gives EIO instead of ENOENT, listing ends
    in EIO instead of looking complete, and creating or removing names
    gives EIO; the rest of the volume works. Directories are read at
    their first use, not at mount (design.md "Directories"): status
    counts the directory damaged once a use has read it."""
    _, want = golden_nozone
    v, rep_inj, chk = double_fault(golden_nozone, volume_factory, "directory",
                              "PR_3_DIR_LOST")
    d = only_file(chk, "PR_3_DIR_LOST")
    v.expect_log(r"fault|is unreadable")
    v.mount()
    try:
        dp = v.mnt / d.lstrip("/")
        expect_eio(os.listdir, dp)
        st = v.status()
        assert st["needs_fsck"] and st["damaged_inodes"] == 1, st
        expect_eio(os.stat, dp / "no-such-name")
        expect_eio((dp / "new").write_bytes, b"x")
        expect_eio(os.mkdir, dp / "newdir")
        outside = [n for n in want if "/" not in n.rstrip("/")
                   and n.rstrip("/") != d.strip("/")]
        if d != "/":
            assert outside
            for n in outside:
                assert (v.mnt / n.rstrip("/")).exists(), n
            assert_writable(v.mnt, "elsewhere")
    finally:
        v.umount()


def test_lost_inode_page_mounts_with_eio_for_its_files(golden_nozone,
                                                      volume_factory):
    """Before fsck: an inode table page no copy of which verifies (not
    the root's) no longer stops the mount. Names of its inodes give EIO,
    the directories holding them list to an EIO and take no changes, new
    files never reuse the lost slots, everything else reads intact."""
    _, want = golden_nozone
    inos = {}
    v, rep_inj, chk = double_fault(golden_nozone, volume_factory, "inode",
                              "PR_3_INODES_LOST", inos, avoid={"PR_3_FS_ROOT"})
    f = next(f for f in chk["findings"] if f["code"] == "PR_3_INODES_LOST")
    first, last = map(int, re.search(r"inodes (\d+)-(\d+)",
                                     f["detail"]).groups())
    gone = {n for n, i in inos.items() if first <= i <= last}
    assert gone, (first, last)
    v.expect_log(r"fault|is unreadable")
    v.mount()
    try:
        st = v.status()
        assert st["needs_fsck"] and st["lost_inode_pages"] == 1, st
        for n in gone:
            expect_eio(os.lstat, v.mnt / n)
            expect_eio(os.listdir, (v.mnt / n).parent)
        hurt = damaged_files(rep_inj)
        # Files whose own inode and whose directories survive are intact.
        safe = [n for n, h in want.items() if h != "dir" and n not in hurt
                and not any(n == g or n.startswith(g + "/") for g in gone)
                and not any(os.path.dirname(n) == os.path.dirname(g)
                            for g in gone)]
        assert safe
        for n in safe:
            assert sha256(v.mnt / n) == want[n], n
        # A directory naming none of them takes new files, and those
        # never land in the lost slots (the lowest free ones otherwise).
        parents = {os.path.dirname(g) for g in gone}
        fresh = next(v.mnt / n.rstrip("/") for n, h in want.items()
                     if h == "dir" and n.rstrip("/") not in parents | gone)
        news = []
        for i in range(2 * (last - first + 1)):
            p = fresh / f"new{i}"
            p.write_bytes(b"%d" % i)
            news.append(p.stat().st_ino)
        assert not any(first <= i <= last for i in news), news
        for g in parents:
            expect_eio((v.mnt / g / "new").write_bytes, b"x")
    finally:
        v.umount()


@pytest.mark.parametrize("overwrites", [40, 300])
def test_remapped_volume_checks_clean(volume_factory, overwrites):
    """Whole-page overwrites on parity 1 go to new pages that a remap page
    records (format.h "Remap page"); fsck -n on the unmounted volume
    finds those pages used by the file, not leaked, and nothing else
    wrong: exit 0. 300 distinct pages fill the remap page (255 records),
    so a fold has moved some into the extents meanwhile."""
    import random
    v = volume_factory(parity=1)
    v.mkfs("--remap")
    v.mount()
    r = random.Random(overwrites)
    data = bytearray(r.randbytes(2 << 20))
    f = v.mnt / "f"
    f.write_bytes(data)
    os.sync()
    fd = os.open(f, os.O_WRONLY)
    try:
        pages = r.sample(range(len(data) // 4096), overwrites)
        pages += pages[:5]              # again: the record's page replaced
        for p in pages:
            b = r.randbytes(4096)
            os.pwrite(fd, b, p * 4096)
            data[p * 4096:(p + 1) * 4096] = b
        os.fsync(fd)
    finally:
        os.close(fd)
    # st_blocks counts the remap page and its records' pages: some are
    # there to be checked.
    assert os.stat(f).st_blocks > len(data) // 512
    v.umount()
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0 and not rep["findings"], p.stdout + p.stderr
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0 and p.stdout.rstrip().endswith("clean"), p.stdout
    v.mount()
    assert hashlib.sha256(f.read_bytes()).digest() == \
        hashlib.sha256(data).digest()
