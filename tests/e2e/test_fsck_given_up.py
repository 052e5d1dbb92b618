# SPDX-License-Identifier: MIT
"""fsck beyond parity reaches clean (issue 29, item 6): what fsck -y
gives up is marked so on the media, the next fsck -n reports it as a
warning and exits 0, the file is named; the files under a directory
moved to /lost+found are each named; -y never says "-n". Outputs are
compared line for line (the volume's uuid as UUID, without the
statistics lines, whose timings vary)."""
import errno
import hashlib
import os

import pytest

from conftest import CTL, run
from dgfault import (copy_of, fsck, fsck_lines, inject, make_tree,
                     manifest, wait_replace)

PAGE = 4096


def sha(paths):
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


@pytest.fixture(scope="module")
def one_file(tmp_path_factory):
    """A volume holding one one-page file /f (no metadata zone), copied
    per try."""
    from conftest import Volume
    tmp = tmp_path_factory.mktemp("given-up")
    v = Volume(tmp, ndev=4, size="32M", tag=f"given-up-{os.getpid()}")
    v.mkfs("--meta-size", "none")
    v.mount()
    try:
        (v.mnt / "f").write_bytes(os.urandom(PAGE))
        other = os.urandom(3 * PAGE)
        (v.mnt / "other").write_bytes(other)
    finally:
        v.umount()
    v.other_sha = hashlib.sha256(other).hexdigest()
    yield v
    v.cleanup()


def lose_f(one_file, volume_factory):
    """A copy where /f's page and its row's parity are zeroed: beyond
    parity. Returns (volume, the data change, the parity change)."""
    for seed in range(1, 60):
        v = copy_of(one_file, volume_factory)
        rep, _ = inject(v.devs, "zero", "data", seed=seed,
                        extra=["--file", "/f", "--count", "2",
                               "--same-row"])
        by = {c["structure"]: c for c in rep["changes"]}
        if set(by) == {"data", "parity"}:
            return v, by["data"], by["parity"]
        v.cleanup()
    pytest.fail("no seed zeroed /f's page and its parity")


def test_given_up_page_is_a_warning_next_time(one_file, volume_factory):
    """fsck -y gives the page up (exit 4, data lost, the file named, the
    parity recomputed); the next fsck -n reports it as a warning and
    exits 0, writing nothing; fsck -y again changes nothing; the file
    still reads EIO, never other bytes. Before: every later fsck exited
    4 with the page 'left as is'."""
    v, d, par = lose_f(one_file, volume_factory)
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 4, p.stdout
    uuid = rep["volume"]
    rc, _, p = fsck(v.devs, "-y")
    assert rc == 4, p.stdout + p.stderr
    assert fsck_lines(p, uuid) == [
        f"PR_2_PAGE_GIVEN_UP: device {d['device']} page {d['page']} vpn "
        f"{d['vpn']} (data of '/f'): data page fails verification "
        f"(checksum mismatch): given up: marked lost (reads give EIO), "
        f"its row re-protected",
        f"PR_2_PAGE_BAD: device {par['device']} page {par['page']} "
        f"(parity): parity page fails verification (checksum mismatch): "
        f"parity recomputed",
        "UUID: 2 problems, 2 corrected, 0 left uncorrected",
    ], p.stdout
    warning = [
        f"PR_2_PAGE_GIVEN_UP: device {d['device']} page {d['page']} vpn "
        f"{d['vpn']} (data of '/f'): data page given up by an earlier "
        f"repair: its bytes are lost: none: reads of it give EIO",
        "UUID: clean, 1 warning: what an earlier repair gave up",
    ]
    before = sha(v.devs)
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    assert fsck_lines(p, uuid) == warning, p.stdout
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0 and rep["warnings"] == 1 and rep["uncorrected"] == 0
    assert [(f["code"], f["file"], f["warning"], f["fixed"])
            for f in rep["findings"]] == [
        ("PR_2_PAGE_GIVEN_UP", "/f", True, False)], p.stdout
    assert sha(v.devs) == before            # -n wrote nothing
    rc, _, p = fsck(v.devs, "-y")
    assert rc == 0, p.stdout + p.stderr
    assert fsck_lines(p, uuid) == warning, p.stdout
    # The row is covered again: its parity, lost once more, is rebuilt
    # from the data, the given-up page's pinned bytes included.
    with open(v.devs[par["device"]], "r+b") as fh:
        fh.seek(par["page"] * PAGE)
        fh.write(b"\xff" * PAGE)          # (zeros: what it holds now)
    rc, _, p = fsck(v.devs, "-y")
    assert rc == 1, p.stdout + p.stderr
    assert fsck_lines(p, uuid) == [
        warning[0],
        f"PR_2_PAGE_BAD: device {par['device']} page {par['page']} "
        f"(parity): parity page fails verification (checksum mismatch): "
        f"rebuilt from parity",
        "UUID: 1 problems, 1 corrected, 0 left uncorrected, 1 warning",
    ], p.stdout
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0 and fsck_lines(p, uuid) == warning, p.stdout
    v.expect_log(r"fault|read error|EIO")
    v.mount()
    try:
        with pytest.raises(OSError) as e:
            (v.mnt / "f").read_bytes()
        assert e.value.errno == errno.EIO
        assert len((v.mnt / "other").read_bytes()) == 3 * PAGE
        (v.mnt / "new").write_bytes(b"still writable")
    finally:
        v.umount()


# ---- a device replaced after a page was given up ------------------------


def given_up_warning(d):
    return [
        f"PR_2_PAGE_GIVEN_UP: device {d['device']} page {d['page']} vpn "
        f"{d['vpn']} (data of '/f'): data page given up by an earlier "
        f"repair: its bytes are lost: none: reads of it give EIO",
        "UUID: clean, 1 warning: what an earlier repair gave up",
    ]


def ctl(v, *args):
    return run([CTL, v.mnt] + [str(a) for a in args], check=False)


@pytest.mark.parametrize("how,which", [
    ("rebuild", "given-up"), ("rebuild", "parity"),
    ("replace-missing", "given-up"), ("replace-present", "given-up")])
def test_given_up_page_survives_a_device_replaced(one_file, volume_factory,
                                                  how, which):
    """After fsck -y gave /f's page up, a device of its row is rebuilt
    (fsck -y of a missing device) or replaced online (daxguard-ctl
    replace, the old device missing or present): the given-up page goes
    to the new device as its row's parity pins it (read or rebuilt raw),
    the parity's rebuild counts those bytes, nothing is lost; the next
    fsck -n exits 0 with only the given-up warning, and the row's other
    files read back intact. Before: the page counted as lost and was
    never written, so the new device differed from what parity holds
    and the next fsck found an unmarked bad page (exit 4)."""
    v, d, par = lose_f(one_file, volume_factory)
    new = None
    rc, _, p = fsck(v.devs, "-y")
    assert rc == 4, p.stdout + p.stderr
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0, p.stdout
    uuid = rep["volume"]
    dev = d["device"] if which == "given-up" else par["device"]
    if how == "rebuild":
        v.devs[dev].unlink()
        rc, rep, p = fsck(v.devs, "-y", json_out=True)
        assert [f["device"] for f in rep["findings"]
                if f["code"] == "PR_0_DEV_REBUILT"] == [dev], p.stdout
        # The device rebuilt (exit 1); the page given up earlier is a
        # warning, which adds nothing to the exit code.
        assert rep["uncorrected"] == 0 and rc == 1, p.stdout
    else:
        if how == "replace-missing":
            v.devs[dev].unlink()
            v.mount("degraded")
        else:
            v.mount()
        new = v.devs[dev].with_name(v.devs[dev].stem + "-new.img")
        try:
            p = ctl(v, "replace", dev, new)
            assert p.returncode == 0, p.stdout + p.stderr
            st = wait_replace(v)
            assert st["state"] == "finished" and \
                st["pages_lost"] == 0, st
        finally:
            v.umount()
        if v.devs[dev].exists():
            v.devs[dev].unlink()    # behind the volume now
        v.devs[dev] = new
    try:
        rc, _, p = fsck(v.devs, "-n")
        assert rc == 0, p.stdout + p.stderr
        assert fsck_lines(p, uuid) == given_up_warning(d), p.stdout
        v.expect_log(r"fault|read error|EIO|lost")
        v.mount()
        try:
            with pytest.raises(OSError) as e:
                (v.mnt / "f").read_bytes()
            assert e.value.errno == errno.EIO
            assert hashlib.sha256((v.mnt / "other").read_bytes()) \
                .hexdigest() == one_file.other_sha
        finally:
            v.umount()
    finally:
        if new is not None:
            new.unlink(missing_ok=True)


# ---- a lost directory's files -------------------------------------------


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """Directories five deep, files in each, large and fragmented
    files (rows with several pages written), no metadata zone."""
    from conftest import Volume
    tmp = tmp_path_factory.mktemp("lost-dir")
    v = Volume(tmp, ndev=4, size="32M", tag=f"lost-dir-{os.getpid()}")
    v.mkfs("--meta-size", "none")
    v.mount()
    try:
        make_tree(v.mnt, seed=7)
        want = manifest(v.mnt)
    finally:
        v.umount()
    yield v, want
    v.cleanup()


def moved_line(f, fixed):
    kind = "directory" if f["detail"].startswith("directory") else "file"
    name = f["file"].rsplit("/", 1)[1]
    top = f["file"].split("/")[2][1:]          # /lost+found/#TOP/...
    return (f"PR_3_MOVED_WITH_DIR: device {f['device']} page {f['page']} "
            f"vpn {f['vpn']} (inode of '{f['file']}'): {kind} '{name}' "
            f"(inode {f['ino']}) is under directory {top}, not reachable "
            f"from the root: " + (f"moved with it to /lost+found/#{top}"
                                  if fixed else "not repaired (-n)"))


def test_files_under_a_lost_directory_are_named(tree, volume_factory):
    """An inode table page lost beyond parity takes a directory with it;
    the directory under it goes to /lost+found/#INO, and every file and
    directory under that is named, by -n and by -y, with the path it has
    there and the contents it had. Before: only #INO was named."""
    g, want = tree
    for seed in range(1, 40):
        v = copy_of(g, volume_factory)
        inject(v.devs, "zero", "inode", seed=seed,
               extra=["--count", "2", "--same-row"])
        rc, chk, p = fsck(v.devs, "-n", json_out=True)
        tops = [f for f in chk["findings"]
                if f["code"] == "PR_3_UNREACHABLE" and
                "(directory," in f["detail"]]
        if tops:
            break
        v.cleanup()
    else:
        pytest.fail("no seed lost a directory holding a directory")
    moved = [f for f in chk["findings"] if f["code"] == "PR_3_MOVED_WITH_DIR"]
    assert moved and all(f["file"].startswith("/lost+found/#")
                         for f in moved), p.stdout
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 4
    got = [ln for ln in p.stdout.splitlines()
           if ln.startswith("PR_3_MOVED_WITH_DIR")]
    assert got == [moved_line(f, False) for f in moved]
    same = copy_of(v, volume_factory)      # the same run, in --json
    rc, _, p = fsck(v.devs, "-y")
    assert rc == 4, p.stdout + p.stderr
    got = [ln for ln in p.stdout.splitlines()
           if ln.startswith("PR_3_MOVED_WITH_DIR")]
    rc, rep, _ = fsck(same.devs, "-y", json_out=True)
    assert rc == 4
    fixed = [f for f in rep["findings"] if f["code"] == "PR_3_MOVED_WITH_DIR"]
    assert got == [moved_line(f, True) for f in fixed], p.stdout
    assert all(f["fixed"] for f in fixed) and \
        {f["file"] for f in fixed} == {f["file"] for f in moved}, p.stdout
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout
    v.expect_log(r"fault|read error")
    v.mount()
    try:
        named = {}
        for f in fixed:
            path = v.mnt / f["file"].lstrip("/")
            st = path.lstat()
            assert st.st_ino == f["ino"], f
            named[f["file"]] = "dir" if path.is_dir() else \
                hashlib.sha256(path.read_bytes()).hexdigest()
        # everything under the moved directories is named, and each
        # file holds what some file of the volume held
        for top in tops:
            root = v.mnt / top["file"].lstrip("/")
            for q in root.rglob("*"):
                assert "/" + str(q.relative_to(v.mnt)) in named, q
        for n, h in named.items():
            assert h in set(want.values()), n
    finally:
        v.umount()


# ---- -y never says "-n" -----------------------------------------------


def page_of(path, page):
    with open(path, "rb") as f:
        f.seek(page * PAGE)
        return f.read(PAGE)


def put_page(path, page, data):
    with open(path, "r+b") as f:
        f.seek(page * PAGE)
        f.write(data)


def test_y_never_says_dash_n(tree, volume_factory):
    """A dangling entry in a directory whose row lost two other pages
    (beyond parity): the entry's removal writes that row. -y used to
    fail it and print 'not repaired (-n)'; now the lost file page is
    given up first, the row re-protected, the entry removed, and -y
    says nothing of -n (a repair that fails would say 'could not be
    repaired'). Rows line up on every device (format.h): the row's
    other pages are the same page number on the other devices."""
    g, _ = tree
    a = copy_of(g, volume_factory)         # where the page lies
    for seed in range(1, 200):
        rep, _ = inject(a.devs, "zero", "directory", seed=seed)
        c = rep["changes"][0]
        put_page(a.devs[c["device"]], c["page"],
                 page_of(g.devs[c["device"]], c["page"]))
        others = [d for d in range(len(a.devs)) if d != c["device"] and
                  page_of(g.devs[d], c["page"]) != bytes(PAGE)]
        if len(others) >= 2 and c.get("file"):
            break
    else:
        pytest.fail("no directory page shares its row with two written "
                    "pages")
    a.cleanup()
    for seed in range(1, 30):
        v = copy_of(g, volume_factory)
        lrep, _ = inject(v.devs, "logical", "directory", seed=seed,
                         extra=["--file", c["file"]])
        if lrep["kind"] == "dangling" and \
                lrep["changes"][0]["vpn"] == c["vpn"]:
            break
        v.cleanup()
    else:
        pytest.fail("no dangling entry in that directory page")
    for d in others[:2]:
        put_page(v.devs[d], c["page"], bytes(PAGE))
    rc, chk, p = fsck(v.devs, "-n", json_out=True)
    dang = [f for f in chk["findings"]
            if f["code"] == "PR_3_DIRENT_DANGLING"]
    assert rc == 4 and len(dang) == 1, p.stdout
    f = dang[0]
    rc, _, p = fsck(v.devs, "-y")
    assert rc == 4, p.stdout + p.stderr     # data given up
    assert "(-n)" not in p.stdout, p.stdout
    assert [ln for ln in p.stdout.splitlines()
            if ln.startswith("PR_3_DIRENT_DANGLING")] == [
        f"PR_3_DIRENT_DANGLING: device {f['device']} page {f['page']} vpn "
        f"{f['vpn']} (directory of '{c['file']}'): {f['detail']}: remove "
        f"the entry"], p.stdout
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0 and rep["uncorrected"] == 0, p.stdout
    assert {f["code"] for f in rep["findings"]} <= {"PR_2_PAGE_GIVEN_UP"}
