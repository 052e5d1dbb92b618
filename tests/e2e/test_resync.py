# SPDX-License-Identifier: MIT
"""A device that comes back after a degraded mount is resynced (issue 32,
item 7): fsck -y rebuilds only the blocks of rows whose checksum pages
changed while it was away (the copy on the device is behind the copies
left: docs/integrity.md, "A device that comes back"), not the whole
device; every file is exact and fsck -n clean afterwards. A fault on the
returning device in a block the resync keeps is still found and repaired
by the checks that follow, never read wrong."""
import hashlib
import os
import re
import shutil

from dgfault import fsck, inject

AWAY = 2                # the device left out of the degraded mount
RESYNC_RE = re.compile(r"(\d+) pages from parity \(resync: (\d+) of (\d+) "
                       r"blocks changed\)")


def sha(b):
    return hashlib.sha256(b).hexdigest()


def check_files(v, want):
    v.drop_caches()
    got = {n: sha((v.mnt / n).read_bytes()) for n in sorted(os.listdir(v.mnt))
           if (v.mnt / n).is_file()}
    assert got == want


def away_and_back(v, want, before=None):
    """Leave device AWAY out, write ~10 MiB degraded, put it back."""
    aside = v.devs[AWAY].with_suffix(".away")
    os.rename(v.devs[AWAY], aside)
    try:
        v.mount("degraded")
        for i in range(10):
            data = os.urandom((1 << 20) + 17 * i)
            (v.mnt / f"away{i}").write_bytes(data)
            want[f"away{i}"] = sha(data)
        b = bytearray((v.mnt / "old0").read_bytes())
        b[5000:5100] = os.urandom(100)
        (v.mnt / "old0").write_bytes(b)
        want["old0"] = sha(bytes(b))
        os.sync()
        v.umount()
    finally:
        v.umount()
        os.rename(aside, v.devs[AWAY])


def resync(v):
    """fsck -y: the returning device resynced; (pages, changed, blocks)."""
    rc, rep, p = fsck(v.devs, "-y", json_out=True)
    assert rc in (0, 1), p.stdout + p.stderr
    found = [f for f in rep["findings"] if f["code"] == "PR_0_DEV_REBUILT"]
    assert [f["device"] for f in found] == [AWAY], p.stdout
    m = RESYNC_RE.search(found[0]["detail"])
    assert m, found[0]
    assert all(f["fixed"] for f in rep["findings"]), p.stdout
    return rep, tuple(int(x) for x in m.groups())


def make_volume(volume_factory):
    v = volume_factory(ndev=4, size="256M", parity=1)
    v.mkfs()
    v.mount()
    want = {}
    for i in range(12):
        data = os.urandom(8 << 20)
        (v.mnt / f"old{i}").write_bytes(data)
        want[f"old{i}"] = sha(data)
    v.umount()
    return v, want


def test_resync_only_what_changed(volume_factory):
    v, want = make_volume(volume_factory)
    away_and_back(v, want)
    rep, (pages, changed, blocks) = resync(v)
    # Nothing left behind for the checks after the resync to repair.
    assert {f["code"] for f in rep["findings"]} == \
        {"PR_0_DEV_MISSING", "PR_0_DEV_REBUILT"}, rep["findings"]
    # ~32 MiB of old data on the device (12 blocks of 510 rows at
    # least), ~3.5 MiB of it changed: a few blocks, not all of them.
    assert 1 <= changed and blocks >= 12, (pages, changed, blocks)
    assert changed * 2 < blocks, (pages, changed, blocks)
    assert pages <= changed * 510, (pages, changed, blocks)
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    v.mount()
    check_files(v, want)
    st = v.status()
    assert st["degraded"] is False and st["health"] == "ok", st
    v.umount()


def test_resync_fault_in_kept_block(volume_factory):
    """A page of an old file on the device that goes away is damaged
    first: the resync keeps its block, the page pass after it finds the
    fault and repairs it from parity; the file reads exact."""
    v, want = make_volume(volume_factory)
    rep, _ = inject(v.devs, "bitflip", target="data", seed=7,
                    extra=["--file", "/old7", "--device", str(AWAY)])
    assert rep["changes"] and all(c["device"] == AWAY
                                  for c in rep["changes"]), rep
    away_and_back(v, want)
    frep, (pages, changed, blocks) = resync(v)
    assert changed * 2 < blocks, (pages, changed, blocks)
    pages = {c["page"] for c in rep["changes"]}
    hit = [f for f in frep["findings"]
           if f["code"] not in ("PR_0_DEV_MISSING", "PR_0_DEV_REBUILT")
           and f.get("device") == AWAY and f.get("page") in pages]
    assert hit and all(f["fixed"] for f in hit), (rep, frep)
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    v.mount()
    check_files(v, want)
    v.umount()


def test_device_written_elsewhere_is_not_mixed_in(volume_factory):
    """Split brain: a copy of the whole volume was mounted without
    device 0 and written, so its device AWAY holds a history of its own
    (newer checksum copies than the volume's for what it wrote); the
    volume itself went on twice without AWAY. When that device comes
    back, nothing of the other history is kept: every file is the
    volume's, and fsck -n is clean."""
    v, want = make_volume(volume_factory)
    main = [p.with_suffix(".main") for p in v.devs]
    other = v.devs[AWAY].with_suffix(".other")
    for p, m in zip(v.devs, main):
        shutil.copyfile(p, m)
        os.chmod(m, 0o600)
    # The other history: these images, without device 0.
    gone = v.devs[0].with_suffix(".gone")
    os.rename(v.devs[0], gone)
    try:
        v.mount("degraded")
        for i in range(4):
            (v.mnt / f"elsewhere{i}").write_bytes(os.urandom(3 << 20))
        b = bytearray((v.mnt / "old3").read_bytes())
        b[0:1 << 20] = os.urandom(1 << 20)
        (v.mnt / "old3").write_bytes(b)
        os.sync()
        v.umount()
    finally:
        v.umount()
        os.unlink(gone)
    os.rename(v.devs[AWAY], other)
    for p, m in zip(v.devs, main):
        if p.exists():
            os.unlink(p)
        os.rename(m, p)
    # The volume's history: twice without AWAY, then AWAY from the
    # other history comes back.
    away_and_back(v, want)
    os.rename(v.devs[AWAY], v.devs[AWAY].with_suffix(".away"))
    try:
        v.mount("degraded")
        (v.mnt / "late").write_bytes(b"late")
        want["late"] = sha(b"late")
        v.umount()
    finally:
        v.umount()
    os.unlink(v.devs[AWAY].with_suffix(".away"))
    os.rename(other, v.devs[AWAY])
    rc, rep, p = fsck(v.devs, "-y", json_out=True)
    assert rc in (0, 1), p.stdout + p.stderr
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    v.mount()
    check_files(v, want)
    v.umount()
