# SPDX-License-Identifier: MIT
"""Read-write degraded mounts (issue 17): with devices missing that parity
covers, `-o degraded` mounts read-write; overwrites, appends, new files
and deletions land (the missing devices' pages as parity), status says
degraded and writable and names the missing device; fsck -y then rebuilds
the devices onto blank files and every file is bit-exact, fsck -n clean."""
import hashlib
import os
import shutil

import pytest

from conftest import CTL, run
from dgfault import fsck


def sha(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


def pwrite(path, off, data):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, off)
        os.fsync(fd)
    finally:
        os.close(fd)


def check_files(v, want):
    v.drop_caches()
    got = {n: sha(v.mnt / n) for n in sorted(os.listdir(v.mnt))
           if (v.mnt / n).is_file()}
    assert got == want


def degraded_changes(v, files):
    """Every kind of change while degraded; files: name -> bytes, updated.
    Files of a few MiB cover every device (data goes a chunk per device),
    so pages of the missing ones are written as parity alone."""
    for i in range(0, 12, 3):                   # overwrite whole
        files[f"f{i}"] = os.urandom(len(files[f"f{i}"]) or 1000)
        (v.mnt / f"f{i}").write_bytes(files[f"f{i}"])
    for i in range(1, 12, 3):                   # in place, scattered
        b = bytearray(files[f"f{i}"])
        for off in range(100, len(b), 70001):
            patch = os.urandom(333)
            pwrite(v.mnt / f"f{i}", off, patch)
            b[off:off + 333] = patch
        files[f"f{i}"] = bytes(b[:len(files[f"f{i}"])])
    for i in range(2, 12, 3):                   # append
        extra = os.urandom(50000 + 4096 * i)
        with open(v.mnt / f"f{i}", "ab") as f:
            f.write(extra)
        files[f"f{i}"] += extra
    for i in range(4):                          # new files
        files[f"new{i}"] = os.urandom((1 << 20) * (i + 1) + 123)
        (v.mnt / f"new{i}").write_bytes(files[f"new{i}"])
    os.unlink(v.mnt / "f10")
    del files["f10"]
    os.rename(v.mnt / "f11", v.mnt / "g11")
    files["g11"] = files.pop("f11")
    os.sync()


@pytest.mark.parametrize("parity,lost", [(1, [2]), (1, [0]), (2, [0, 3])])
def test_degraded_rw_then_rebuild(volume_factory, parity, lost):
    v = volume_factory(ndev=4, size="32M", parity=parity)
    v.mkfs()
    v.mount()
    files = {}
    for i in range(12):
        files[f"f{i}"] = os.urandom(90000 * (i + 1))
        (v.mnt / f"f{i}").write_bytes(files[f"f{i}"])
    v.umount()
    for d in lost:
        os.unlink(v.devs[d])
    mask = sum(1 << d for d in lost)

    v.mount("degraded")
    assert "read-write" in v.read_log()
    st = v.status()
    assert st["degraded"] is True and st["read_only"] is False, st
    assert st["writable"] is True and st["missing_mask"] == mask, st
    assert [d["state"] for d in st["device_table"]] == \
        ["missing" if i in lost else "online" for i in range(4)], st
    p = run([CTL, v.mnt, "status"], check=False)
    assert "DEGRADED" in p.stdout and "read-write" in p.stdout, p.stdout
    with open("/proc/mounts") as f:
        opts = [ln.split()[3] for ln in f if ln.split()[1] == str(v.mnt)]
    assert opts and "rw" in opts[0].split(","), opts
    degraded_changes(v, files)
    want = {n: hashlib.sha256(b).hexdigest() for n, b in files.items()}
    check_files(v, want)
    v.umount()

    # Degraded again: what was written is there, and more lands.
    v.mount("degraded")
    check_files(v, want)
    files["late"] = os.urandom(3 << 20)
    (v.mnt / "late").write_bytes(files["late"])
    want["late"] = hashlib.sha256(files["late"]).hexdigest()
    v.umount()

    # The missing devices are behind now: refused without -o degraded.
    with pytest.raises(AssertionError):
        v.mount()

    rc, rep, p = fsck(v.devs, "-y", json_out=True)
    assert rc == 1, p.stdout + p.stderr
    rebuilt = sorted(f["device"] for f in rep["findings"]
                     if f["code"] == "PR_0_DEV_REBUILT")
    assert rebuilt == lost, p.stdout
    assert all(f["fixed"] for f in rep["findings"]), p.stdout
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    v.mount()
    st = v.status()
    assert st["degraded"] is False and st["health"] == "ok", st
    check_files(v, want)
    r = v.ctl("scrub", "--json")
    assert '"detected":0' in r.stdout and '"parity_mismatch":0' in \
        r.stdout, r.stdout
    v.umount()


def test_degraded_ro_writes_nothing(volume_factory, tmp_path):
    """-o degraded,ro: the old read-only degraded mount; the device put
    back afterwards is current, so the plain mount works again."""
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    v.mount()
    (v.mnt / "f").write_bytes(b"x" * 100000)
    v.umount()
    aside = tmp_path / "aside.img"
    shutil.move(v.devs[1], aside)
    before = [sha(d) for i, d in enumerate(v.devs) if i != 1]
    v.mount("degraded", "ro")
    st = v.status()
    assert st["degraded"] is True and st["read_only"] is True, st
    with pytest.raises(OSError):
        (v.mnt / "g").write_bytes(b"y")
    v.umount()
    assert [sha(d) for i, d in enumerate(v.devs) if i != 1] == before
    shutil.move(aside, v.devs[1])
    v.mount()
    assert (v.mnt / "f").read_bytes() == b"x" * 100000
    v.umount()
