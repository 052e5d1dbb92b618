# SPDX-License-Identifier: MIT
"""Issue 34: faults in the allocation state and in rows it calls empty.

The open reads only the bitmap pages of init map indexes that are set,
and the passes skip rows of clear indexes (docs/design.md, "What the
passes visit"). daxguard-inject's targets bitmap (allocation bitmap
pages), cmap (a copy of an init map page) and free (a never-written
page nothing uses, or the never-written parity of its row) put faults
there; each is repaired (bitmap, cmap) or harmless and never visible
(free), and the files stay exact. docs/integrity.md, "Faults in the
allocation state"."""
import os
import random
import subprocess

import pytest

from dgfault import copy_of, fsck, inject, make_tree, manifest, \
    manifest_tolerant

# (kind, target, fsck -n exit before the repair): 4 found, 0 nothing to
# find (garbage in a never-written page is no fault: nothing reads it).
# (The campaigns run every kind on them: bench/campaign.py.)
CASES = [
    ("zero", "bitmap", 4), ("misdirect", "bitmap", 4),
    ("lost-write", "bitmap", 4),
    ("scribble", "cmap", 4), ("lost-write", "cmap", 4),
    ("misdirect", "free", 0), ("lost-write", "free", 4),
]


@pytest.fixture
def golden(volume_factory):
    v = volume_factory(ndev=4, size="32M")
    v.mkfs()
    v.mount()
    make_tree(v.mnt, seed=34, small=20, large=1)
    want = manifest(v.mnt)
    v.umount()
    return v, want


def test_alloc_state_faults_repaired(golden, volume_factory):
    """Every kind on each new target, one at a time: the page named,
    fsck -y repairs it, a second fsck finds nothing, files exact."""
    g, want = golden
    for kind, target, rc_n in CASES:
        v = copy_of(g, volume_factory)
        rep, _ = inject(v.devs, kind, target, seed=11)
        structs = {c["structure"] for c in rep["changes"]}
        assert structs <= {target, "free-parity"}, (kind, target, rep)
        if target == "cmap" and kind == "lost-write":
            # both slots of one device miss the map's next update
            assert len(rep["changes"]) == 2
            assert len({c["device"] for c in rep["changes"]}) == 1
        rc1, r1, _ = fsck(v.devs, "-n", json_out=True)
        assert rc1 == rc_n, (kind, target, r1["findings"])
        if rc_n:
            # (a map finding names the device and its map page in slot
            # 0, whichever slot failed)
            at = (lambda d, p: d) if target == "cmap" else \
                (lambda d, p: (d, p))
            pages = {at(c["device"], c["page"]) for c in rep["changes"]}
            found = {at(f["device"], f["page"]) for f in r1["findings"]}
            assert pages & found, (kind, target, r1["findings"])
            if target == "cmap":
                # -n uses the union of the copies that verify: the copy
                # is known and -y rewrites it, not "cannot be rebuilt"
                assert all(f["action"] == "none (not repaired in this mode)"
                           for f in r1["findings"]), r1["findings"]
        rc2, _, p2 = fsck(v.devs, "-y")
        assert rc2 == (1 if rc_n else 0), (kind, target, p2.stdout)
        rc3, _, p3 = fsck(v.devs, "-n")
        assert rc3 == 0, (kind, target, p3.stdout)
        v.mount()
        try:
            assert manifest_tolerant(v.mnt) == want, (kind, target)
        finally:
            v.umount()


def test_zero_of_never_written_page_refused(golden):
    """A never-written page is zeros already: nothing to zero."""
    g, _ = golden
    rep, p = inject(g.devs, "zero", "free", seed=1, check=False)
    assert rep is None and p.returncode == 1
    assert "no free page" in p.stderr


def test_garbage_in_empty_rows_never_visible(golden, volume_factory):
    """Garbage in many never-written data and parity pages, then files
    written into them with holes and partial pages: every byte exact,
    fsck clean, and a device rebuilt from parity (which the garbage in a
    never-written parity page must not have spoilt) exact too."""
    g, want = golden
    v = copy_of(g, volume_factory)
    structs = set()
    rep, _ = inject(v.devs, "scribble", "free", seed=1,
                    extra=["--count", "250", "--len", "4096"])
    structs |= {c["structure"] for c in rep["changes"]}
    assert structs == {"free", "free-parity"}
    assert fsck(v.devs, "-n")[0] == 0
    rng = random.Random(34)
    data = {}
    v.mount()
    try:
        for i in range(80):
            buf = bytearray()
            with open(v.mnt / f"n{i}", "wb") as f:
                for _ in range(rng.randint(1, 4)):
                    off = rng.randint(0, 50000)
                    b = rng.randbytes(rng.randint(1, 3000))
                    f.seek(off)
                    f.write(b)
                    buf.extend(bytes(max(0, off + len(b) - len(buf))))
                    buf[off:off + len(b)] = b
            data[f"n{i}"] = bytes(buf)
    finally:
        v.umount()

    def check(vol):
        vol.mount()
        try:
            for name, b in data.items():
                assert (vol.mnt / name).read_bytes() == b, name
            got = manifest_tolerant(vol.mnt)
            assert {k: got[k] for k in want} == want
        finally:
            vol.umount()

    check(v)
    rc, r, _ = fsck(v.devs, "-n", json_out=True)
    assert rc == 0, r["findings"]
    # Device 1 lost: rebuilt from the others, parity included.
    w = copy_of(v, volume_factory)
    size = w.devs[1].stat().st_size
    os.unlink(w.devs[1])
    with open(w.devs[1], "wb") as f:
        f.truncate(size)
    rc, _, p = fsck(w.devs, "-y")
    assert rc == 1, p.stdout
    assert fsck(w.devs, "-n")[0] == 0
    check(w)
