# SPDX-License-Identifier: MIT
"""Remap pages (DG_FEAT_INCOMPAT_REMAP, format.h "Remap page"): on a
parity-1 volume of 4 devices made --remap a whole-page overwrite of a written page
goes to a blank page and a record in the file's remap page says so; the
records are folded into the extents when the page is full (255), and
truncate, punch and unlink drop the ones in their range.

Every test keeps a byte-exact shadow of the file in Python and reads the
whole file back (page cache dropped, so the reads reach the daemon's
dg_ext_lookup()) after the writes, after a remount, and ends with
fsck -n on the unmounted volume, which must find it clean. st_blocks is
the daemon's dinode.blocks + records + 1 while records exist (dg_attr),
which is how the tests see records come and go, besides status --json's
pages_remapped and remap_records_folded. A redirect goes only to a blank
page near the allocator's blank cursor (alloc.c dg_alloc_blank_hint()):
after frees of pages that held bytes, a few overwrites may go in place,
so the tests count redirects by pages_remapped rather than assume every
whole-page overwrite is one."""
import ctypes
import os
import random

from conftest import run, FSCK

PAGE = 4096
NPAGES = 2048                 # 8 MiB
PER_REMAP = 255               # DG_REMAP_PER_PAGE

FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_PUNCH_HOLE = 2
_libc = ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                            ctypes.c_int64]


def punch(fd, off, length):
    if _libc.fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                       off, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def rbytes(rnd, n):
    return rnd.randbytes(n)


def pwrite_all(fd, data, off):
    while data:
        n = os.pwrite(fd, data, off)
        data, off = data[n:], off + n


def pwrite_shadow(fd, shadow, data, off):
    pwrite_all(fd, data, off)
    end = off + len(data)
    if end > len(shadow):
        shadow.extend(bytes(end - len(shadow)))
    shadow[off:end] = data


def first_diff(got, want):
    for i in range(0, max(len(got), len(want)), PAGE):
        if got[i:i + PAGE] != want[i:i + PAGE]:
            a, b = got[i:i + PAGE], want[i:i + PAGE]
            j = next((k for k in range(min(len(a), len(b)))
                      if a[k] != b[k]), min(len(a), len(b)))
            return (f"first difference in file page {i // PAGE} at byte "
                    f"{i + j} (len got {len(got)}, want {len(want)})")
    return "no difference"


def verify(v, path, shadow, what=""):
    """The whole file read back equals the shadow, page cache dropped."""
    v.drop_caches()
    with open(path, "rb") as f:
        got = f.read()
    assert len(got) == len(shadow), f"{what}: size {len(got)} != " \
        f"{len(shadow)}"
    assert got == bytes(shadow), f"{what}: {first_diff(got, shadow)}"


_base = {}


def blocks(path):
    return os.stat(path).st_blocks // (PAGE // 512)


def extra_pages(path):
    """st_blocks in pages beyond what the file had when new_file() wrote
    it (its data and extent pages): the remap page and its records'
    pages, as long as the size and extents stay as they were."""
    return blocks(path) - _base[str(path)]


def remapped(v):
    """status --json: (whole-page overwrites sent to a blank page,
    records folded into the extents) since the mount."""
    st = v.status()
    return st["pages_remapped"], st["remap_records_folded"]


def bfree(v):
    return os.statvfs(v.mnt).f_bfree


def warm_up(v):
    """A file written and unlinked before a count of free pages is taken,
    so what the first file of a volume allocates for good (its directory
    entry's page, the inode table) is not taken for a leak."""
    path = v.mnt / "warm-up"
    with open(path, "wb") as f:
        f.write(os.urandom(64 * PAGE))
        f.flush()
        os.fsync(f.fileno())
    os.unlink(path)
    return bfree(v)


def fsck_clean(v, what):
    """Unmount and fsck -n: a clean volume is exit 0."""
    v.umount()
    assert_fsck(fsck_n(v, what))


def fsck_n(v, what):
    """fsck -n of the unmounted volume: (what, the process)."""
    return what, run([FSCK, "-n"] + v.devs, check=False)


def assert_fsck(*results):
    """Each fsck -n of results exited 0 (asserted last in a test, so an
    fsck problem does not hide what the rest of the test checks)."""
    bad = [(what, p) for what, p in results if p.returncode]
    if not bad:
        return
    what, p = bad[0]
    lines = p.stdout.splitlines()
    if len(lines) > 12:      # a leak is reported page by page
        lines = lines[:8] + [f"... {len(lines) - 10} lines ..."] + lines[-2:]
    out = "\n".join(lines)
    assert p.returncode == 0, (
        f"fsck -n after {what}: exit {p.returncode} (and after "
        f"{len(bad) - 1} other steps)\n"
        f"stdout: {out}\nstderr: {p.stderr}")


def new_file(v, name, rnd, npages=NPAGES):
    shadow = bytearray(rbytes(rnd, npages * PAGE))
    path = v.mnt / name
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    pwrite_all(fd, bytes(shadow), 0)
    os.fsync(fd)
    _base[str(path)] = blocks(path)
    return path, fd, shadow


def remap_volume(volume_factory, remap=True, parity=None):
    """A volume made --remap (parity 1, 4 devices), or without it."""
    v = volume_factory(parity=parity)
    v.mkfs(*(["--remap"] if remap else []))
    v.mount()
    return v


def random_overwrites(fd, shadow, rnd, n, path=None, trace=None,
                      npages=NPAGES):
    """n whole-page overwrites at random pages; with trace, st_blocks'
    extra pages after each."""
    for _ in range(n):
        p = rnd.randrange(npages)
        pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), p * PAGE)
        if trace is not None:
            trace.append(extra_pages(path))


def folds(trace):
    """How many times the records went from (nearly) full to few."""
    return sum(1 for a, b in zip(trace, trace[1:])
               if a >= PER_REMAP - 5 and b < a - 5)


def test_random_overwrites_fill_and_fold(volume_factory):
    """1,500 random whole-page overwrites over 2,048 pages fill the remap
    page and fold it several times; one page overwritten again and again
    between them; every byte right after, after a remount, and fsck
    clean."""
    v = remap_volume(volume_factory)
    rnd = random.Random(1)
    path, fd, shadow = new_file(v, "f", rnd)
    assert extra_pages(path) == 0
    trace = []
    try:
        for i in range(6):
            random_overwrites(fd, shadow, rnd, 250, path, trace)
            # the same page again and again: one record, its page moved
            for _ in range(20):
                pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), 77 * PAGE)
                trace.append(extra_pages(path))
            verify(v, path, shadow, f"round {i}")
    finally:
        os.close(fd)
    moved, folded = remapped(v)
    print(f"\nextra pages: max {max(trace)}, folds {folds(trace)}, "
          f"end {trace[-1]}; {moved} remapped, {folded} folded")
    assert folded >= 3 * PER_REMAP, f"{folded} records folded"
    # a fold splits extents: the map's leaves grow a little as well
    assert PER_REMAP + 1 <= max(trace) <= PER_REMAP + 1 + 24, \
        "the remap page never filled, or more records than it holds"
    assert folds(trace) >= 3, f"folded {folds(trace)} times"
    held = trace[-1]
    v.remount()
    assert extra_pages(path) == held, "records not the same after remount"
    verify(v, path, shadow, "after remount")
    fsck_clean(v, "random overwrites")


def test_same_page_over_and_over(volume_factory):
    """One page overwritten 300 times (more than a remap page holds):
    one record, its page replaced each time, nothing leaked."""
    v = remap_volume(volume_factory)
    rnd = random.Random(2)
    free0 = warm_up(v)
    path, fd, shadow = new_file(v, "f", rnd, 16)
    base = free0 - bfree(v)
    moved0 = remapped(v)[0]
    try:
        for _ in range(300):
            pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), 5 * PAGE)
            assert extra_pages(path) in (0, 2)  # the remap page + 1
        moved = remapped(v)[0] - moved0
        assert moved >= 290, f"{moved} of 300 overwrites redirected"
        assert extra_pages(path) == 2
        assert free0 - bfree(v) == base + 2
        verify(v, path, shadow, "same page")
    finally:
        os.close(fd)
    v.remount()
    verify(v, path, shadow, "same page, remounted")
    os.unlink(path)
    assert bfree(v) == free0, "pages leaked by the unlink"
    fsck_clean(v, "one page overwritten 300 times")


def test_partial_and_whole_page_writes_mixed(volume_factory):
    """Whole-page, partial, unaligned multi-page writes on the same pages:
    a partial write after a redirect lands in the redirected page; reads
    at unaligned offsets across a redirected page and its neighbours."""
    v = remap_volume(volume_factory)
    rnd = random.Random(3)
    npages = 64
    path, fd, shadow = new_file(v, "f", rnd, npages)
    try:
        # pages 10..20 redirected, then partial writes into them
        for p in range(10, 21):
            pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), p * PAGE)
        assert extra_pages(path) == 12
        pwrite_shadow(fd, shadow, rbytes(rnd, 50), 10 * PAGE + 100)
        pwrite_shadow(fd, shadow, rbytes(rnd, 30), 11 * PAGE - 10)
        pwrite_shadow(fd, shadow, rbytes(rnd, 1), 20 * PAGE + PAGE - 1)
        pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), 14 * PAGE + 1)
        # partial writes go in place: no new record
        assert extra_pages(path) == 12
        verify(v, path, shadow, "partial after redirect")
        # then redirected again, then partial again
        pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), 10 * PAGE)
        pwrite_shadow(fd, shadow, rbytes(rnd, 7), 10 * PAGE + 4000)
        verify(v, path, shadow, "redirect, partial, redirect, partial")
        for i in range(600):
            k = rnd.randrange(4)
            if k == 0:      # whole page
                off, n = rnd.randrange(npages) * PAGE, PAGE
            elif k == 1:    # inside one page
                off = rnd.randrange(npages * PAGE - 1)
                n = rnd.randrange(1, PAGE - off % PAGE + 1)
            elif k == 2:    # unaligned, whole pages in its middle
                n = rnd.randrange(PAGE, 4 * PAGE)
                off = rnd.randrange(npages * PAGE - n)
            else:           # aligned run of whole pages
                n = rnd.randrange(1, 5) * PAGE
                off = rnd.randrange(npages - n // PAGE) * PAGE
            pwrite_shadow(fd, shadow, rbytes(rnd, n), off)
            if i % 50 == 49:
                v.drop_caches()
                for _ in range(40):
                    roff = rnd.randrange(npages * PAGE - 1)
                    rn = rnd.randrange(1, min(3 * PAGE,
                                              npages * PAGE - roff) + 1)
                    got = os.pread(fd, rn, roff)
                    assert got == bytes(shadow[roff:roff + rn]), (
                        f"pread({rn}, {roff}) after {i + 1} writes: "
                        f"{first_diff(got, shadow[roff:roff + rn])}")
        assert extra_pages(path) > 1
        # reads across page 15 (redirected) and its neighbours
        pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), 15 * PAGE)
        v.drop_caches()
        for roff, rn in ((15 * PAGE - 1, 2), (15 * PAGE - 100, PAGE + 200),
                         (14 * PAGE + 7, 3 * PAGE - 9),
                         (16 * PAGE - 1, 1), (15 * PAGE + 4095, 2)):
            assert os.pread(fd, rn, roff) == bytes(shadow[roff:roff + rn]), \
                f"pread({rn}, {roff})"
        verify(v, path, shadow, "mixed")
    finally:
        os.close(fd)
    v.remount()
    verify(v, path, shadow, "mixed, remounted")
    fsck_clean(v, "mixed partial and whole-page writes")


def test_truncate_punch_unlink_give_pages_back(volume_factory):
    """Truncate down through redirected pages, up again (zeros), punch
    holes over redirected pages (zeros), unlink: the records go with
    their pages, free space comes back whole, fsck is clean after each."""
    v = remap_volume(volume_factory)
    rnd = random.Random(4)
    free0 = warm_up(v)
    path, fd, shadow = new_file(v, "f", rnd)
    os.close(fd)
    overhead = free0 - bfree(v) - NPAGES    # inode's extent pages etc.

    def used_beyond_blocks(what):
        """Pages in use beyond what st_blocks counts: the extent map's,
        the same as before the step (nothing leaked)."""
        st = os.stat(path)
        got = free0 - bfree(v) - st.st_blocks // (PAGE // 512)
        assert got <= overhead + 1, f"{what}: {got} pages beyond " \
            f"st_blocks, {overhead} after the first write"

    fscks = []

    def step(what):
        verify(v, path, shadow, what)
        used_beyond_blocks(what)
        v.umount()
        fscks.append(fsck_n(v, what))
        v.mount()
        verify(v, path, shadow, what + ", remounted")
        used_beyond_blocks(what + ", remounted")

    fd = os.open(path, os.O_RDWR)
    pages = rnd.sample(range(NPAGES), 200)
    for p in pages:
        pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), p * PAGE)
    assert extra_pages(path) == 201
    # down through the redirected pages: those past the end are dropped
    os.ftruncate(fd, 1000 * PAGE + 123)
    del shadow[1000 * PAGE + 123:]
    kept = sum(1 for p in pages if p <= 1000)
    ext = _base[str(path)] - NPAGES             # extent map pages
    got = blocks(path) - 1001 - (kept + 1)
    assert 0 <= got <= ext, f"records past the end kept: {got} pages " \
        f"beyond 1001 data pages, {kept} records and their page"
    os.close(fd)
    step("truncate down")

    # up again: zeros past the old end
    fd = os.open(path, os.O_RDWR)
    os.ftruncate(fd, NPAGES * PAGE)
    shadow.extend(bytes(NPAGES * PAGE - len(shadow)))
    os.close(fd)
    step("truncate up")

    # redirect pages in the range to punch and around it, then punch
    fd = os.open(path, os.O_RDWR)
    for p in list(range(295, 310)) + list(range(500, 520)):
        pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), p * PAGE)
    before = blocks(path)
    punch(fd, 300 * PAGE, 10 * PAGE)          # 300..309 redirected
    shadow[300 * PAGE:310 * PAGE] = bytes(10 * PAGE)
    punch(fd, 505 * PAGE + 17, 10 * PAGE)     # unaligned ends
    shadow[505 * PAGE + 17:515 * PAGE + 17] = bytes(10 * PAGE)
    os.close(fd)
    st = os.stat(path)
    print(f"\npunch: st_blocks {st.st_blocks // 8} pages, "
          f"{before} before")
    step("punch")

    # unlink with records: everything comes back
    fd = os.open(path, os.O_RDWR)
    held = blocks(path)
    for p in rnd.sample(range(NPAGES), 100):
        pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), p * PAGE)
    os.close(fd)
    assert blocks(path) > held, "no records before the unlink"
    os.unlink(path)
    assert bfree(v) == free0, f"{free0 - bfree(v)} pages leaked by unlink"
    v.remount()
    assert bfree(v) == free0, "pages leaked by unlink (remounted)"
    v.umount()
    assert_fsck(*fscks, fsck_n(v, "unlink of a file with records"))


def test_truncate_to_zero_and_regrow(volume_factory):
    """Records on pages a truncate to 0 drops; the file grown again by
    whole-page writes (fresh pages, no records); nothing leaked."""
    v = remap_volume(volume_factory)
    rnd = random.Random(5)
    free0 = warm_up(v)
    path, fd, shadow = new_file(v, "f", rnd, 256)
    try:
        for p in rnd.sample(range(256), 100):
            pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), p * PAGE)
        assert extra_pages(path) == 101
        os.ftruncate(fd, 0)
        del shadow[:]
        assert blocks(path) == 0, "pages kept by a truncate to 0"
        for p in range(256):
            pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), p * PAGE)
        assert extra_pages(path) == 0, "fresh pages went to records"
        moved0 = remapped(v)[0]
        for p in range(0, 256, 3):
            pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), p * PAGE)
        moved = remapped(v)[0] - moved0
        # the pages the truncate freed held bytes: a few in place
        assert moved >= len(range(0, 256, 3)) - 16, f"{moved} redirected"
        assert extra_pages(path) == moved + 1
        verify(v, path, shadow, "regrown")
    finally:
        os.close(fd)
    v.remount()
    verify(v, path, shadow, "regrown, remounted")
    os.unlink(path)
    assert bfree(v) == free0, f"{free0 - bfree(v)} pages leaked"
    fsck_clean(v, "truncate to zero and regrow")


def test_no_remap_unasked_or_parity_2(volume_factory):
    """A volume made without --remap, and parity 2: no whole-page
    overwrite is redirected, so st_blocks stays the file's size in
    pages; on a --remap volume it counts the records and the remap
    page."""
    rnd = random.Random(6)
    for parity, what in ((None, "without --remap"), (2, "parity 2")):
        v = remap_volume(volume_factory, remap=False, parity=parity)
        path, fd, shadow = new_file(v, "f", rnd, 512)
        try:
            for _ in range(300):
                p = rnd.randrange(512)
                pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), p * PAGE)
                assert extra_pages(path) == 0, f"{what}: a remap page"
            assert remapped(v) == (0, 0), what
            verify(v, path, shadow, what)
        finally:
            os.close(fd)
        v.remount()
        assert extra_pages(path) == 0
        verify(v, path, shadow, what + ", remounted")
        fsck_clean(v, what)
    v = remap_volume(volume_factory)
    path, fd, shadow = new_file(v, "f", rnd, 512)
    try:
        for n, p in enumerate((3, 9, 100, 511), 1):
            pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), p * PAGE)
            assert extra_pages(path) == n + 1
        pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), 9 * PAGE)
        assert extra_pages(path) == 5
    finally:
        os.close(fd)
    v.remount()
    assert extra_pages(path) == 5
    verify(v, path, shadow, "remap, remounted")
    fsck_clean(v, "a few records")


def test_writeback_overwrites(volume_factory):
    """-o writeback: the same random overwrites, held and committed in
    batches, fsync; remounted (without writeback) every byte is there,
    fsck clean."""
    v = volume_factory()
    v.mkfs("--remap")
    # the hold is on with wb_max; commit=3600: each fsync commits a batch
    v.mount("writeback", "wb_max=64M", "commit=3600")
    rnd = random.Random(7)
    path, fd, shadow = new_file(v, "f", rnd)
    try:
        for i in range(3):
            random_overwrites(fd, shadow, rnd, 500)
            for _ in range(10):
                pwrite_shadow(fd, shadow, rbytes(rnd, PAGE), 33 * PAGE)
            pwrite_shadow(fd, shadow, rbytes(rnd, 999), 33 * PAGE + 5)
            os.fsync(fd)
            verify(v, path, shadow, f"writeback round {i}")
    finally:
        os.close(fd)
    wb = v.status()["writeback"]
    assert wb["enabled"] and wb["batches_committed"] >= 3, wb
    v.remount()
    # st_blocks as the daemon has it (under writeback the kernel's):
    # records held beside the data and extent pages
    print(f"\nwriteback: {wb['batches_committed']} batches, "
          f"st_blocks {blocks(path)} pages")
    assert blocks(path) > NPAGES + 2, "no whole-page overwrite redirected"
    verify(v, path, shadow, "writeback, remounted")
    v.remount("writeback", "wb_max=64M")
    verify(v, path, shadow, "writeback, remounted with writeback")
    fsck_clean(v, "writeback overwrites")
