# SPDX-License-Identifier: MIT
"""What a write costs the media (docs/design.md, "What a write costs the
media"): status --json's exact counts of bytes stored, cache lines
flushed and fences, taken around writes on a quiet mount. Counts, not
times, so the bounds hold on any machine; they sit at today's values
with a little slack, a guard that catches a regression (a doubling),
not a target. The numbers are printed (pytest -s) for the table in the
design document."""
import os
import random
import threading

import pytest

KIB = 1 << 10
MIB = 1 << 20

# parity -> upper bounds, today's value in the comment (4 devices)
# Checksum copies are persisted by the line (csum.c store_copy()); by the
# page, a 4 KiB overwrite flushed 707 lines under parity 1, 1220 under 2.
# Fences are rounds (media.h): three an update (journal entry; pages in
# place and first checksum copies; other copies). Before rounds, a 4 KiB
# overwrite made 11 (parity 1) and 19 (parity 2) persists, 1 MiB 53.6
# and 318-321 a MiB. JOURNAL_V2 keeps an entry's bytes on parity + 1
# journal copies and its metadata alone on the last: a 4 KiB overwrite
# stored 5.08x (335 lines) under parity 1 and 7.13x (476) under 2 with
# the page on every copy; the bounds below fail that.
# Parity 1 volumes write every checksum copy in the round of the pages
# in place (docs/design.md, "Copies together"): 2 fences a write, 4
# before; the bound fails that. Parity 1 writes a data row's parity a
# round before its page (docs/design.md, "Parity before the page"): 3
# fences, the bound of 4 with room for a round more.
RANDOM_4K = {  # stored/written, fences a write, lines a write
    1: (4.4, 3.5, 300),     # 4.08x-4.09x, 3-3.03, 271-273
    2: (6.5, 5.5, 450),     # 6.13x-6.14x, 5-5.08, 412-416
}
# A volume made --remap sends a whole-page overwrite to a blank page with
# a remap record (docs/design.md, "Overwrites redirected"): the page and
# its parity, no journal copy, and a 16-byte record. A page into a row
# with nothing else in it takes 4 fences, one filling a row beside pages
# in use 5 (its parity a round after it): 4.0 on the space after the
# file, 4.67 in the long run (a row's first page alone, the other two
# beside it). The in-place bounds above fail the bytes.
RANDOM_4K_REMAP = (2.5, 4.8, 460)   # 2.37x, 4.0, 432
# On a volume made with --lean-journal a whole page's bytes are on parity
# journal copies (docs/design.md, "Lean entries"): the bounds fail the
# counts above. Parity 1's are issue #31's target, met exactly: 12,624
# bytes and 3 fences a write (4 before copies together), nothing else
# in the window.
RANDOM_4K_LEAN = {  # stored/written, fences a write, lines a write
    1: (3.1, 3.0, 230),     # 3.082x, 3, 207
    2: (5.3, 5.1, 380),     # 5.133x, 5, 348
}
# 1 MiB fences: 9.25 and 12.25 a MiB before a new checksum index was
# written in one round, 4.75 and 10.75-11.12 while it took three rounds
# of its own (its pages, then the init map's two slots); now its pages
# ride the round of the rows that need them and its map bit is written
# when the journal's tail next moves (docs/design.md, "A new index in the
# update's rounds"), which these 8 MiB do not reach. Parity 1's bound is
# issue #31's target, met exactly: 4 fences a MiB, nothing else in the
# window.
# Parity 1 stored 1.46x-1.47x (24.5k lines) while a band of 256 pages
# was 86 + 86 + 84 (alloc.c): two partial rows a MiB, four pages
# journaled on two copies and two parity pages patched, and 1.434x
# while ditto copies were written whole (parity 2: 2.14x-2.15x). It
# stored 1.424x-1.425x (2.11x-2.13x under parity 2) while the entry that
# reserves the new rows named them a page a range and a new index's
# checksum pages were written whole again by the write that began it;
# the bounds below fail that. One more new index in the 8 MiB stores
# about 0.006x more (its pages), which they leave room for; its map page
# (32 KiB on four devices) is written with the journal's tail, for every
# index set up since (1.396x-1.398x while each index wrote it at once).
# Parity 1: 8.75 fences a MiB before its copies went together.
SEQ_1M = {     # stored/written, fences a MiB, lines a MiB
    1: (1.40, 4.0, 25000),   # 1.387x-1.388x, 4.00, 23.1k
    2: (2.09, 10.0, 37000),  # 2.067x-2.072x, 10.00, 34.4k-34.5k
}


def media(v):
    return v.status()["media"]


def costs(before, after, unit):
    """Per unit (a write, or a MiB) of what the counters moved by."""
    d = {k: after[k] - before[k]
         for k in ("bytes_stored", "streamed_bytes", "lines_flushed",
                   "fences", "writes", "bytes_written")}
    return d, (d["bytes_stored"] / d["bytes_written"],
               d["fences"] / unit(d), d["lines_flushed"] / unit(d))


def report(job, parity, d, ratios, per):
    print(f"\n{job}, parity {parity}: {d['writes']} writes of "
          f"{d['bytes_written']} bytes; stored {ratios[0]:.3f}x, "
          f"{ratios[1]:.2f} fences and {ratios[2]:.0f} lines a {per}, "
          f"{d['streamed_bytes']} bytes streamed")


def check(ratios, bounds):
    for got, bound, what in zip(ratios, bounds,
                                ("stored/written", "fences", "lines")):
        assert got <= bound, f"{what}: {got:.3f} > {bound}"


@pytest.fixture(params=[1, 2], ids=["p1", "p2"])
def vol(request, volume_factory):
    v = volume_factory(parity=request.param)
    v.mkfs()
    v.mount()
    return v


def random_4k_overwrite(v, n=64):
    """n random 4 KiB overwrites of an 8 MiB file: the counters'
    movement, and its ratios a write."""
    fd = os.open(v.mnt / "f", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        os.write(fd, os.urandom(8 * MIB))
        os.fsync(fd)          # the file's times too: nothing left over
        rnd = random.Random(31)
        before = media(v)
        for _ in range(n):
            os.pwrite(fd, os.urandom(4 * KIB),
                      rnd.randrange(8 * MIB // (4 * KIB)) * 4 * KIB)
        after = media(v)
    finally:
        os.close(fd)
    d, ratios = costs(before, after, lambda d: d["writes"])
    # Quiet: the counters moved for these writes and nothing else.
    assert (d["writes"], d["bytes_written"]) == (n, n * 4 * KIB), d
    # A page overwritten in place stores itself and its parity pages.
    assert ratios[0] >= 1 + v.parity
    return d, ratios


def test_random_4k_overwrite(vol):
    d, ratios = random_4k_overwrite(vol)
    report("4 KiB random overwrite", vol.parity, d, ratios, "write")
    check(ratios, RANDOM_4K[vol.parity])
    assert vol.status()["pages_remapped"] == 0


def test_random_4k_overwrite_remap(volume_factory):
    """A volume made --remap: every overwrite to a blank page."""
    v = volume_factory(parity=1)
    v.mkfs("--remap")
    v.mount()
    d, ratios = random_4k_overwrite(v)
    report("4 KiB random overwrite, --remap", 1, d, ratios, "write")
    check(ratios, RANDOM_4K_REMAP)
    assert v.status()["pages_remapped"] == 64


def test_random_4k_overwrite_folds(volume_factory):
    """1,530 overwrites of 2,048 pages: the remap page fills and is
    folded into the extents (each home page freed, the record's page
    mapped) a few times, and the blank pages come from past the homes
    the folds free. The folds' transactions are in the counts."""
    v = volume_factory(parity=1)
    v.mkfs("--remap")
    v.mount()
    fd = os.open(v.mnt / "f", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        os.write(fd, os.urandom(8 * MIB))
        os.fsync(fd)
        rnd = random.Random(32)
        before, s0 = media(v), v.status()
        for _ in range(1530):
            os.pwrite(fd, os.urandom(4 * KIB),
                      rnd.randrange(8 * MIB // (4 * KIB)) * 4 * KIB)
        after, s1 = media(v), v.status()
    finally:
        os.close(fd)
    d, ratios = costs(before, after, lambda d: d["writes"])
    report("4 KiB random overwrite, remap pages folded", 1, d, ratios,
           "write")
    folded = s1["remap_records_folded"] - s0["remap_records_folded"]
    assert folded >= 4 * 255, folded
    # A few go in place: the blank pages are looked for 16 free pages at
    # a time (alloc.c), and a run of freed homes can fill the look.
    assert s1["pages_remapped"] - s0["pages_remapped"] >= 1500
    check(ratios, (2.9, 4.8, 500))   # 2.65x, 4.67, 454


@pytest.mark.parametrize("parity", [1, 2], ids=["p1", "p2"])
def test_random_4k_overwrite_lean(volume_factory, parity):
    v = volume_factory(parity=parity)
    v.mkfs("--lean-journal")
    v.mount()
    d, ratios = random_4k_overwrite(v)
    report("4 KiB random overwrite, --lean-journal", parity, d, ratios,
           "write")
    check(ratios, RANDOM_4K_LEAN[parity])


def test_sequential_1m(vol):
    v, n = vol, 8
    fd = os.open(v.mnt / "g", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        for job in ("1 MiB sequential write", "1 MiB sequential overwrite"):
            before = media(v)
            for i in range(n):
                os.pwrite(fd, os.urandom(MIB), i * MIB)
            after = media(v)
            d, ratios = costs(before, after,
                              lambda d: d["bytes_written"] / MIB)
            assert d["bytes_written"] == n * MIB, d
            if d["writes"] != n:
                pytest.skip(f"the kernel split 1 MiB writes into "
                            f"{d['writes'] // n} requests")
            report(job, v.parity, d, ratios, "MiB")
            check(ratios, SEQ_1M[v.parity])
            # Whole rows: the data and its parity, little more.
            assert ratios[0] >= 4 / (4 - v.parity)
    finally:
        os.close(fd)


def test_sequential_overwrite_under_discard(volume_factory):
    """A 1 MiB overwrite moves its pages to new rows and frees the old
    ones (fs/fsys/file.c, relocate()); under -o discard those rows are
    not given back as zeros -- the next such write takes them whole --
    so the overwrite costs what it costs without the option. It stored
    2.75x and 10 fences a MiB with the blanker's zeros counted."""
    v, n = volume_factory(parity=1), 8
    v.mkfs()
    v.mount("discard")
    fd = os.open(v.mnt / "g", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        for i in range(n):
            os.pwrite(fd, os.urandom(MIB), i * MIB)
        os.fsync(fd)
        v.wait_blanked()
        blanked0 = v.status()["freed_rows_blanked"]
        before = media(v)
        for rnd in range(2):
            for i in range(n):
                os.pwrite(fd, os.urandom(MIB), i * MIB)
        v.wait_blanked()
        after = media(v)
    finally:
        os.close(fd)
    assert v.status()["freed_rows_blanked"] == blanked0
    d, ratios = costs(before, after, lambda d: d["bytes_written"] / MIB)
    assert d["bytes_written"] == 2 * n * MIB, d
    if d["writes"] != 2 * n:
        pytest.skip(f"the kernel split 1 MiB writes into "
                    f"{d['writes'] // (2 * n)} requests")
    report("1 MiB sequential overwrite -o discard", 1, d, ratios, "MiB")
    check(ratios, SEQ_1M[1])


# Writes that change metadata too: each stores the inode's size, times
# and extents, and a new file its directory record and inode besides.
# Only the bytes of a metadata page that change are journaled and
# written (docs/design.md, "Bytes that do not change"); storing every
# byte of the ranges the filesystem hands over, 4 KiB appends stored
# 4.52x (p1) and 6.84x (p2), new 4 KiB files 6.52x and 10.47x. New
# files stored 5.85x and 9.41x while the checksum copies were stored
# from an update's first slot in a page to its last. The bounds fail
# both.
# Under parity 1 each of these pages goes to a row that holds nothing
# else (docs/design.md, "Lone rows"): written with its parity before
# the entry, its bytes not journaled, two rounds more. Appends stored
# 4.36x at 2 fences and new files 4.77x at 4 while they were journaled;
# the bounds fail that.
METADATA = {  # job -> parity -> stored/written, fences a write
    "append": {1: (2.6, 4.5), 2: (6.7, 5.5)},        # 2.40x, 6.57x; 4, 5
    "new file": {1: (3.1, 6.5), 2: (7.7, 10.5)},     # 2.82x, 7.28x; 6, 10
}


def metadata_job(v, job, n=64):
    """n 4 KiB appends to one file, or n new 4 KiB files (created,
    written, closed): the counters' movement and its ratios a write."""
    fd = os.open(v.mnt / "log", os.O_CREAT | os.O_WRONLY, 0o600)
    os.write(fd, os.urandom(4 * KIB))
    os.fsync(fd)
    (v.mnt / "d").mkdir()
    before = media(v)
    try:
        for i in range(n):
            if job == "append":
                os.write(fd, os.urandom(4 * KIB))
                continue
            f = os.open(v.mnt / "d" / f"f{i}",
                        os.O_CREAT | os.O_WRONLY, 0o600)
            os.write(f, os.urandom(4 * KIB))
            os.close(f)
        after = media(v)
    finally:
        os.close(fd)
    d, ratios = costs(before, after, lambda d: d["writes"])
    assert (d["writes"], d["bytes_written"]) == (n, n * 4 * KIB), d
    return d, ratios


@pytest.mark.parametrize("job", list(METADATA))
def test_metadata_writes(vol, job):
    alone0 = vol.status()["rows_written_alone_before_journal"]
    d, ratios = metadata_job(vol, job)
    # Every page a row of its own under parity 1 (the pages of one
    # file follow each other on one device), the log's first page too
    # (written before the window); none under parity 2.
    alone = vol.status()["rows_written_alone_before_journal"] - alone0
    assert alone == (1 + 64 if vol.parity == 1 else 0), alone
    report(f"4 KiB {job}", vol.parity, d, ratios, "write")
    bound = METADATA[job][vol.parity]
    assert ratios[0] <= bound[0], f"stored/written: {ratios[0]:.3f}"
    assert ratios[1] <= bound[1], f"fences a write: {ratios[1]:.2f}"


# A file deleted before the appends: its rows are free but hold its
# bytes, and freed space is reused first (alloc.c), so every append goes
# the journaled way, 4.36x and 3 fences under parity 1 (its parity a
# round before its page: docs/design.md, "Parity before the page").
# With -o discard the blanker gives the rows back as zeros once the
# delete is durable
# (blank.c) and the appends go alone as on a new volume; parity 2, whose
# small writes journal anyway, gets the rows back and journals. The
# zeros are stored before the window (their own figure,
# freed_rows_blanked); the bounds fail the journaled figures.
AFTER_DELETE = {  # (parity, mount options) -> stored/written, fences
    (1, ("discard",)): (2.6, 4.5),    # 2.40x, 4
    (1, ()): (4.6, 3.5),              # 4.36x, 3
    (2, ("discard",)): (6.7, 5.5),    # 6.57x, 5
}


@pytest.mark.parametrize("parity,opts", list(AFTER_DELETE),
                         ids=["p1-discard", "p1", "p2-discard"])
def test_appends_after_delete(volume_factory, parity, opts):
    v = volume_factory(parity=parity)
    v.mkfs()
    v.mount(*opts)
    fd = os.open(v.mnt / "old", os.O_CREAT | os.O_WRONLY, 0o600)
    os.write(fd, os.urandom(8 * MIB))
    os.fsync(fd)
    os.close(fd)
    blanked0 = v.status()["freed_rows_blanked"]
    os.unlink(v.mnt / "old")
    v.wait_blanked()
    # 8 MiB on k data devices fill 8 MiB / k rows, every one given
    # back, and a few more where the file's first and last pages shared
    # a row with free pages (688 of 683 under parity 1 today).
    blanked = v.status()["freed_rows_blanked"] - blanked0
    rows = 8 * MIB // (4 * KIB) // (4 - parity)
    if opts:
        assert rows <= blanked <= rows + 16, blanked
    else:
        assert blanked == 0, blanked
    alone0 = v.status()["rows_written_alone_before_journal"]
    d, ratios = metadata_job(v, "append")
    alone = v.status()["rows_written_alone_before_journal"] - alone0
    assert alone == (1 + 64 if opts and parity == 1 else 0), alone
    report(f"4 KiB append after a delete{' -o ' + opts[0] if opts else ''}",
           parity, d, ratios, "write")
    bound = AFTER_DELETE[(parity, opts)]
    assert ratios[0] <= bound[0], f"stored/written: {ratios[0]:.3f}"
    assert ratios[1] <= bound[1], f"fences a write: {ratios[1]:.2f}"


# Random 4 KiB writes into the holes of a sparse file, as fio's random
# jobs make over files they do not lay out: each write maps a new page,
# and one that continues neither neighbour on the media inserts an
# extent into the middle of its leaf (fs/fsys/extent.c). The warm-up
# leaves some thousands of extents. They stored 6.93x (parity 1) and
# 11.08x (2) while the checksum copies were stored from an update's
# first slot in a page to its last (csum.c, store_copy()), and 6.05x
# and 9.32x while leaves filled to 170 extents before they split, so an
# insert moved some 60 (extent.c, LEAF_SOFT). The bounds fail both.
# Under parity 1 a write that is the first into its row goes to a lone
# row (docs/design.md, "Lone rows"): 5.15x at 2 fences before; and one
# into a blank hole of a row in use fills it, its parity patched from
# the old and stored a round after the page (docs/design.md, "Holes
# filled"): 4.26x at 3.16 fences while those were journaled. The bound
# fails both.
HOLES_4K = {  # stored/written, fences a write
    1: (3.5, 5.0),      # 3.245x, 4.42
    2: (8.3, 5.5),      # 7.86x, 5
}


def test_random_4k_into_holes(vol):
    v, n = vol, 64
    pages = 64 * MIB // (4 * KIB)
    rnd = random.Random(47)
    order = rnd.sample(range(pages), 4000 + n)
    fd = os.open(v.mnt / "sparse", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, 64 * MIB)
        for p in order[:4000]:
            os.pwrite(fd, os.urandom(4 * KIB), p * 4 * KIB)
        os.fsync(fd)          # the file's times too: nothing left over
        s0 = v.status()
        before = media(v)
        for p in order[4000:]:
            os.pwrite(fd, os.urandom(4 * KIB), p * 4 * KIB)
        after = media(v)
    finally:
        os.close(fd)
    d, ratios = costs(before, after, lambda d: d["writes"])
    assert (d["writes"], d["bytes_written"]) == (n, n * 4 * KIB), d
    # Under parity 1 every write fills a hole or is the first in its row
    # (27 and 37 today); under parity 2, whose small writes journal,
    # neither.
    s = v.status()
    filled, alone = (s[k] - s0[k] for k in ("holes_filled_before_journal",
                                            "rows_written_alone_"
                                            "before_journal"))
    assert (filled, alone) == ((filled, n - filled) if v.parity == 1
                               else (0, 0)), (filled, alone)
    assert filled > 0 or v.parity == 2
    report("4 KiB random write into holes", v.parity, d, ratios, "write")
    bound = HOLES_4K[v.parity]
    assert ratios[0] <= bound[0], f"stored/written: {ratios[0]:.3f}"
    assert ratios[1] <= bound[1], f"fences a write: {ratios[1]:.2f}"


def random_writes(path, n, seed, start):
    """n random 4 KiB overwrites of the 4 MiB file at path, once start
    is set."""
    fd = os.open(path, os.O_RDWR)
    try:
        rnd = random.Random(seed)
        start.wait(30)
        for _ in range(n):
            os.pwrite(fd, os.urandom(4 * KIB),
                      rnd.randrange(4 * MIB // (4 * KIB)) * 4 * KIB)
    finally:
        os.close(fd)


def writers_cost(v, paths, n):
    """Fences and ratios a write of len(paths) writers at once, n
    random 4 KiB overwrites each, one file each."""
    start = threading.Event()
    threads = [threading.Thread(target=random_writes,
                                args=(p, n, 31 + i, start))
               for i, p in enumerate(paths)]
    before, holes0 = media(v), v.status()["holes_filled_before_journal"]
    for t in threads:
        t.start()
    start.set()
    for t in threads:
        t.join(120)
        assert not t.is_alive(), "a writer did not finish in 120 s"
    after, holes1 = media(v), v.status()["holes_filled_before_journal"]
    d, ratios = costs(before, after, lambda d: d["writes"])
    assert (d["writes"], d["bytes_written"]) == \
        (n * len(paths), n * len(paths) * 4 * KIB), d
    d["holes"] = holes1 - holes0
    return d, ratios


def test_random_4k_four_writers(vol):
    """Group commit (docs/design.md, "Parallel commits"): four random
    writers share the journal's rounds, so a write costs them no more
    fences than it costs one writer alone."""
    v, n = vol, 64
    paths = [v.mnt / f"w{i}" for i in range(4)]
    for p in paths:
        with open(p, "wb") as f:
            f.write(os.urandom(4 * MIB))
            os.fsync(f.fileno())
    d1, one = writers_cost(v, paths[:1], n)
    report("4 KiB random overwrite, 1 writer", v.parity, d1, one, "write")
    d4, four = writers_cost(v, paths, n)
    report("4 KiB random overwrite, 4 writers", v.parity, d4, four,
           "write")
    check(one, RANDOM_4K[v.parity])
    check(four, RANDOM_4K[v.parity])
    # Equal when no entries happen to share a round (on tmpfs a round
    # is a fence, over before another writer's entry is stored), fewer
    # when some do. Now and then an update besides the writes (3
    # fences, about one in 64 writes of a file, not looked into) falls in one
    # job more than in the other, hence 0.1 of slack: far below what
    # one more round a write would cost (1). A redirected write (parity
    # 1) that fills a hole beside pages in use takes a round more than
    # one into a row of its own, and which it gets depends on where the
    # blank pages are, not on the writers: rounds net of those.
    one_net = one[1] - d1["holes"] / d1["writes"]
    four_net = four[1] - d4["holes"] / d4["writes"]
    assert four_net <= one_net + 0.1, \
        f"4 writers: {four_net:.2f} fences a write net of holes filled, " \
        f"1 writer: {one_net:.2f}"


# parity -> stored/written, fences a page for random 4 KiB overwrites under
# the hold. The scattered pages of a batch move to one band of new rows
# (file.c, scatter_move()): before, they were journaled and patched in
# place, 4.26x and 0.21 fences a page under parity 1, 6.47x and 0.25 under
# 2; with the extent map stored after each moved run rather than once,
# 2.18x and 3.15x. The bounds fail both.
HOLD_4K = {
    1: (1.7, 1.0),      # 1.461x, 0.11 (0.21 before copies together)
    2: (2.6, 1.0),      # 2.253x, 0.25 (155 lines a page)
}


@pytest.mark.parametrize("parity", [1, 2], ids=["p1", "p2"])
def test_random_4k_writeback_hold(volume_factory, parity):
    """-o writeback with a hold (wb_max): the pages the kernel writes
    back wait in the daemon and share an update (docs/design.md,
    "Durability: the default mode and -o writeback"), so 64 random
    4 KiB overwrites made durable by one fsync pay the rounds of a few
    updates, not four each, and, 8 rows' worth or more, move together
    to new rows: written whole before the journal entry, not copied
    into it, no old data or parity read."""
    v = volume_factory(parity=parity)
    v.mkfs()
    v.mount("writeback", "wb_max=64M", "commit=3600")
    n = 64
    fd = os.open(v.mnt / "f", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        os.write(fd, os.urandom(8 * MIB))
        os.fsync(fd)
        rnd = random.Random(31)
        before = media(v)
        for _ in range(n):
            os.pwrite(fd, os.urandom(4 * KIB),
                      rnd.randrange(8 * MIB // (4 * KIB)) * 4 * KIB)
        os.fsync(fd)
        after = media(v)
    finally:
        os.close(fd)
    # Per 4 KiB page: the kernel sends adjacent dirty pages as one
    # write, so count pages, not requests.
    d, ratios = costs(before, after,
                      lambda d: d["bytes_written"] / (4 * KIB))
    assert 0 < d["bytes_written"] <= n * 4 * KIB, d
    report("4 KiB random overwrite, -o writeback,wb_max", parity, d,
           ratios, "page")
    assert d["streamed_bytes"] > 0, d       # new rows were written
    bound = HOLD_4K[parity]
    assert ratios[1] <= bound[1], f"fences a page: {ratios[1]:.2f}"
    assert ratios[0] <= bound[0], f"stored/written: {ratios[0]:.3f}"
