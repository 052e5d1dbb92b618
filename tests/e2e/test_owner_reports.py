# SPDX-License-Identifier: MIT
"""A fault report names the file that holds the page now (issue 34,
review of lazy inodes). A fault batch recalls which file a page of a
file not in core belonged to (fs/daemon/owner_memo.c) rather than
stream the inode table again; the page may since have been freed (its
file deleted) and taken by another file not in core. Here /a's page is
faulted and reported as /a's, /a deleted, /b written until it holds
that very page and let go from core, and the page faulted again: the
report names /b at its offset, never /a."""
import json
import os
import struct
import time

import pytest

from conftest import CTL, run
from dgfault import inject

PG = 4096
# Held open while /b is let go: more than 7/8 of -o inode_cache=64, so
# an inode the kernel forgets leaves the cache at once (icache_sweep.c).
NFILL = 70


def page_of(tag, p):
    """Page p of a file whose pages say whose and which they are."""
    return (tag + struct.pack("<Q", p)) * (PG // 16)


def raw_page(dev, off):
    with open(dev, "rb") as f:
        f.seek(off)
        return f.read(PG)


def fault_events(v, vpn, after):
    p = run([CTL, v.mnt, "events", "--json"])
    ev = [json.loads(x) for x in p.stdout.splitlines()]
    return [e for e in ev if e["type"].startswith("fault-") and
            e.get("vpn") == vpn and e["seq"] > after]


def scrub_events(v, vpn, after):
    p = run([CTL, v.mnt, "scrub"], check=False)
    assert p.returncode == 0, p.stdout + p.stderr   # repaired from parity
    ev = fault_events(v, vpn, after)
    assert ev, "the scrub reported no fault of vpn %d" % vpn
    return ev


def write_until_held(path, dev, off):
    """Append pages to path until the device page at off is one of them
    (its old file's page freed, taken again): that page's number."""
    with open(path, "ab") as f:
        for first in range(0, 48 << 20 >> 12, 16):
            f.write(b"".join(page_of(b"fix34-B\0", p)
                             for p in range(first, first + 16)))
            f.flush()
            os.fsync(f.fileno())
            got = raw_page(dev, off)
            if got[:8] == b"fix34-B\0":
                p = struct.unpack("<Q", got[8:16])[0]
                assert got == page_of(b"fix34-B\0", p)
                return p
    pytest.fail("the freed page was never taken again")


def settle(v, secs=10):
    """The kernel's forgets handled: inodes_cached steady for a second."""
    v.drop_caches()
    deadline = time.time() + secs
    last, steady = None, 0
    while time.time() < deadline and steady < 5:
        n = v.status()["inodes_cached"]
        steady = steady + 1 if n == last else 0
        last = n
        time.sleep(0.2)


def test_report_names_the_file_holding_the_page_now(volume_factory):
    v = volume_factory(ndev=4, size="16M", parity=1)
    v.mkfs()
    v.mount()
    fill = v.mnt / "fill"
    fill.mkdir()
    for i in range(NFILL):
        (fill / f"f{i:03d}").write_bytes(b"x")
    (v.mnt / "b").write_bytes(b"")  # first: /a's inode number is not its
    (v.mnt / "a").write_bytes(page_of(b"fix34-A\0", 0))
    v.umount()
    rep, _ = inject(v.devs, "zero", "data", seed=1,
                    extra=["--file", "/a", "--count", "1"])
    [c] = rep["changes"]
    assert c["structure"] == "data" and c["file"] == "/a", c
    dev, off, vpn = v.devs[c["device"]], c["page"] * PG, c["vpn"]

    # Mounted anew, /a is not in core: its name comes off the media, and
    # the daemon recalls it for that page.
    v.mount("inode_cache=64")
    ev = scrub_events(v, vpn, 0)
    assert all(e["path"] == "/a" and e["offset"] == 0 for e in ev), ev
    assert raw_page(dev, off) == page_of(b"fix34-A\0", 0)
    seq = max(e["seq"] for e in ev)

    held = [os.open(fill / f"f{i:03d}", os.O_RDONLY) for i in range(NFILL)]
    try:
        os.unlink(v.mnt / "a")
        fpage = write_until_held(v.mnt / "b", dev, off)
        # /b let go from core (the kernel forgets it), then its page
        # faulted. A round where /b was still in core names it from
        # core and proves nothing: a naming off the media loads it
        # (inode_loads), so retry until one does.
        for _ in range(5):
            settle(v)
            loads = v.status()["inode_loads"]
            with open(dev, "r+b") as f:
                f.seek(off)
                f.write(bytes(PG))
            ev = scrub_events(v, vpn, seq)
            seq = max(e["seq"] for e in ev)
            for e in ev:
                assert (e.get("path"), e.get("offset")) == \
                    ("/b", fpage * PG), (e, "/b holds that page now")
            if v.status()["inode_loads"] > loads:
                return
        pytest.fail("/b stayed in core: nothing named it off the media")
    finally:
        for fd in held:
            os.close(fd)
