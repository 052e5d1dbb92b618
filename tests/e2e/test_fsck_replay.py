# SPDX-License-Identifier: MIT
"""fsck -n on a volume whose journal needs recovery (issue 29, item 7):
it replays the journal into copy-on-write views of the devices, checks
the result, says so, writes nothing, and exits 4 as e2fsck -n does on a
journal that needs recovery. Outputs are compared line for line (the
volume's uuid as UUID, without the statistics lines)."""
import hashlib
import os

import pytest

from dgfault import fsck, fsck_lines, inject

PAGE = 4096


def sha(paths):
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


def crashed(volume_factory):
    """A volume killed after overwriting /f's one page (no fsync: the
    update stays in the journal, which only a sync or the unmount
    retires), then that page and its row's parity torn (zeroed), as a
    crash in the middle of their in-place writes leaves them: beyond
    parity as the volume lies, whole once the journal is replayed."""
    for seed in range(1, 40):
        v = volume_factory(ndev=4, size="32M")
        v.mkfs("--meta-size", "none")
        v.mount()
        (v.mnt / "f").write_bytes(os.urandom(PAGE))
        v.umount()
        v.mount()
        with open(v.mnt / "f", "r+b") as fh:
            fh.write(b"Y" * PAGE)
        v.kill9()
        rep, _ = inject(v.devs, "zero", "data", seed=seed,
                        extra=["--file", "/f", "--count", "2",
                               "--same-row"])
        if {c["structure"] for c in rep["changes"]} == {"data", "parity"}:
            return v
        v.cleanup()
    pytest.fail("no seed zeroed /f's page and its parity")


def test_n_replays_in_memory_and_writes_nothing(volume_factory):
    """Before: fsck -n saw the torn pages as data lost (and, on other
    crashes, ten problems from 'root record invalid'), although the
    mount replays them whole."""
    v = crashed(volume_factory)
    before = sha(v.devs)
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 4, p.stdout + p.stderr
    uuid = rep["volume"]
    assert rep["replayed_in_memory"] is True
    assert [f["code"] for f in rep["findings"]] == ["PR_1_JOURNAL_PENDING"]
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 4, p.stdout + p.stderr
    assert fsck_lines(p, uuid) == [
        "UUID: journal needs recovery: replayed in memory, nothing "
        "written; checking the volume as the replay leaves it",
        "PR_1_JOURNAL_PENDING: (journal): journal holds N committed "
        "updates not yet replayed: not repaired (-n)",
        "UUID: the journal was replayed in memory only: the devices "
        "still need it (the mount or fsck.daxguard -y replays it); after "
        "the replay the volume is consistent",
        "UUID: 1 problems, 0 corrected, 1 left uncorrected",
    ], p.stdout
    assert sha(v.devs) == before            # nothing written
    # What -n said holds: the replay (here by -y) leaves it consistent.
    rc, _, p = fsck(v.devs, "-y")
    assert rc == 1, p.stdout + p.stderr
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0 and rep["findings"] == [], p.stdout
    assert rep["replayed_in_memory"] is False
    v.mount()
    try:
        assert (v.mnt / "f").read_bytes() == b"Y" * PAGE
    finally:
        v.umount()


def test_n_on_a_clean_journal_replays_nothing(volume_factory):
    """A volume unmounted cleanly is checked as it lies: no replay."""
    v = volume_factory(ndev=4, size="32M")
    v.mkfs()
    v.mount()
    (v.mnt / "f").write_bytes(b"x" * 10000)
    v.umount()
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0 and rep["replayed_in_memory"] is False, p.stdout
    rc, _, p = fsck(v.devs, "-n")
    assert "replayed in memory" not in p.stdout, p.stdout
