# SPDX-License-Identifier: MIT
"""Issue 32, item 3: a lost page is one fault however often it is met.
Two pages of a file lost beyond parity (the same row on two devices),
read again and again (the kernel retries, applications retry) and then
scrubbed: the fault counters, the device table, the scrub's summary,
status -v and the event log all say 2, and each fault is one event."""
import errno
import json
import os
import re

import pytest

from conftest import CTL, run
from dgfault import inject

SIZE = 3 << 20


def lose_two_pages(v):
    """Two data pages of /big in one row, beyond parity 1: the inject
    report's two changes."""
    for seed in range(1, 40):
        v.mkfs()
        v.mount()
        (v.mnt / "big").write_bytes(os.urandom(SIZE))
        v.umount()
        rep, _ = inject(v.devs, "zero", "data", seed=seed,
                        extra=["--file", "/big", "--count", "2",
                               "--same-row"])
        ch = rep["changes"]
        if len(ch) == 2 and all(c.get("file") == "/big" and
                                c["structure"] == "data" for c in ch):
            return ch
    pytest.fail("no seed put both faults in the file's data pages")


def read_every_page(path):
    """pread each page of the file: the offsets that fail with EIO."""
    bad = []
    with open(path, "rb", buffering=0) as f:
        for off in range(0, SIZE, 4096):
            try:
                os.pread(f.fileno(), 4096, off)
            except OSError as e:
                assert e.errno == errno.EIO, e
                bad.append(off)
    return bad


def fault_events(v):
    p = run([CTL, v.mnt, "events", "--json"])
    ev = [json.loads(x) for x in p.stdout.splitlines()]
    return [e for e in ev if e["type"].startswith("fault-")]


def assert_counts_two(v, lost):
    st = v.status()
    assert st["faults"]["detected"] == 2, st["faults"]
    assert st["faults"]["unrecoverable"] == 2, st["faults"]
    per_dev = {d["index"]: d for d in st["device_table"]}
    for c in lost:
        d = per_dev[c["device"]]
        assert d["unrecoverable"] == 1 and d["checksum_errors"] == 1, st
    [f] = st["damaged_files"]
    assert f["path"] == "/big" and f["lost_pages"] == 2, st
    text = run([CTL, v.mnt, "status"]).stdout
    assert "\nfaults detected 2, repaired 0, unrecoverable 2\n" in text, text
    verbose = run([CTL, v.mnt, "status", "-v"]).stdout
    assert re.search(r"\n  /big: 2 pages lost, the first at offset \d+\n",
                     verbose), verbose
    ev = fault_events(v)
    for kind in ("fault-detected", "fault-unrecoverable"):
        got = sorted((e["device"], e["page"]) for e in ev
                     if e["type"] == kind)
        want = sorted((c["device"], c["page"]) for c in lost)
        assert got == want, (kind, ev)


def test_two_lost_pages_count_two_everywhere(volume_factory):
    v = volume_factory(ndev=4, size="32M", parity=1)
    lost = lose_two_pages(v)
    v.expect_log(r"fault|unrecoverable|read error|EIO|Input/output")
    v.mount()
    # Met three times each by readers (what a cp, its retry and a
    # backup tool do), before any scrub.
    for _ in range(3):
        v.drop_caches()
        assert len(read_every_page(v.mnt / "big")) == 2
    assert_counts_two(v, lost)

    p = run([CTL, v.mnt, "scrub"], check=False)
    assert p.returncode == 3, p.stdout + p.stderr
    assert "detected 2, repaired 0, unrecoverable 2," in p.stdout, p.stdout
    assert "data lost: 2 pages in use cannot be read" in p.stdout, p.stdout
    r = json.loads(run([CTL, v.mnt, "scrub", "--json"],
                       check=False).stdout)
    assert r["unrecoverable"] == 2 and r["unrecoverable_in_use"] == 2, r
    # The scrubs met the same two pages: nothing new.
    assert_counts_two(v, lost)

    # The daemon's log: one line a fault, as the event log.
    log = v.read_log()
    assert len(re.findall(r"fault unrecoverable dev=", log)) == 2, log
    assert len(re.findall(r'"type":"fault-unrecoverable"', log)) == 2, log


def test_clear_forgets_and_the_next_scrub_finds_them_again(volume_factory):
    v = volume_factory(ndev=4, size="32M", parity=1)
    lost = lose_two_pages(v)
    v.expect_log(r"fault|unrecoverable|read error|EIO|Input/output")
    v.mount()
    assert len(read_every_page(v.mnt / "big")) == 2
    assert run([CTL, v.mnt, "clear"]).stdout == "cleared\n"
    assert v.status()["faults"]["unrecoverable"] == 0
    p = run([CTL, v.mnt, "scrub"], check=False)
    assert p.returncode == 3
    assert "data lost: 2 pages in use cannot be read" in p.stdout, p.stdout
    st = v.status()
    assert st["faults"]["unrecoverable"] == 2, st["faults"]
    assert st["damaged_files"][0]["lost_pages"] == 2, st
    assert len(lost) == 2
