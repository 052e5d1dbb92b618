# SPDX-License-Identifier: MIT
"""daxguard-ctl scrub start --threads N (issue 34): the daemon's scrub
verifies rows ahead with N threads, and what it reports -- its counts,
the fault events in their order, the exit status -- is the same
whatever N. The edges of the threads' batches are the unit test's
(tests/unit/test_scrub_par.c); here the tool end to end, over a filled
volume with faults in data and parity (one row beyond parity 1), and a
writer busy beside a threaded scrub of a healthy volume."""
import hashlib
import json
import os
import threading
import time

import pytest

from conftest import CTL, run
from dgfault import copy_of, inject, make_tree, replace_status

# What the status tells that does not depend on the threads: all but
# times, rates and the threads themselves.
VARYING = {"started", "ended", "run_ms", "rate_bytes_per_s", "eta_s",
           "threads"}


def ctl(v, *args):
    return run([CTL, v.mnt] + list(args), check=False)


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    """A filled 4-device parity-1 volume (several blocks of rows),
    unmounted."""
    from conftest import Volume
    tmp = tmp_path_factory.mktemp("golden-scrub-threads")
    v = Volume(tmp, ndev=4, size="64M", parity=1,
               tag=f"scrub-threads-{os.getpid()}")
    v.mkfs()
    v.mount()
    try:
        make_tree(v.mnt, seed=13, small=40, large=12, frag=False)
    finally:
        v.umount()
    yield v
    v.cleanup()


def damage(v):
    """Faults in file data and parity, bitflips and whole pages, one
    row beyond parity 1."""
    for kind, target, seed, extra in (
            ("bitflip", "data", 3, ["--count", "4"]),
            ("scribble", "data", 5, ["--count", "3"]),
            ("zero", "parity", 7, ["--count", "2"]),
            ("bitflip", "data", 9, ["--count", "2", "--same-row"])):
        inject(v.devs, kind, target, seed=seed, extra=extra)


def scrub_with(golden, volume_factory, threads):
    """A damaged copy of golden scrubbed with threads threads, waited
    for: its exit status, its status without what varies, and the
    events the scrub posted (their type and text, in order)."""
    v = copy_of(golden, volume_factory)
    damage(v)
    v.expect_log(r"fault|unrecoverable|read error|EIO|lost|parity mismatch")
    v.mount()
    try:
        p = ctl(v, "scrub", "start", "-w", "--json", "--threads",
                str(threads))
        st = json.loads(p.stdout)
        assert st["state"] == "finished", st
        assert st["threads"] == threads, st
        events = [json.loads(x) for x in
                  ctl(v, "events", "--json").stdout.splitlines()]
    finally:
        v.umount()
    kept = {k: x for k, x in st.items() if k not in VARYING}
    # Each event whole but its number and time; the scrub-started one
    # says how many threads were asked for.
    evs = [{k: x for k, x in e.items() if k not in ("seq", "time")}
           for e in events if e["type"] != "scrub-started"]
    return p.returncode, kept, evs


def test_same_report_with_any_threads(golden, volume_factory):
    rc1, st1, ev1 = scrub_with(golden, volume_factory, 1)
    # The damage was seen, one row of it beyond repair.
    assert rc1 == 3, (rc1, st1)
    assert st1["detected"] > 4 and st1["repaired"] > 0, st1
    assert st1["unrecoverable"] > 0, st1
    assert len(ev1) > 4, ev1
    assert any("path" in e for e in ev1), ev1     # files named
    for t in (2, 4):
        rc, st, ev = scrub_with(golden, volume_factory, t)
        assert rc == rc1, (t, rc, rc1)
        assert st == st1, (t, st, st1)
        assert ev == ev1, (t, ev, ev1)


def test_writer_beside_a_threaded_scrub(volume_factory):
    v = volume_factory(ndev=4, size="64M", parity=1)
    v.mkfs()
    v.mount()
    (v.mnt / "big").write_bytes(os.urandom(24 << 20))
    want = {}
    stop = threading.Event()
    errors = []

    def writer():
        """Files written and rewritten, each synced, until told to
        stop (or 60 s at most)."""
        i = 0
        try:
            while not stop.is_set() and i < 20000:
                name = f"w{i % 64}"
                data = os.urandom(4096 * (1 + i % 16))
                with open(v.mnt / name, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                want[name] = hashlib.sha256(data).hexdigest()
                i += 1
                if stop.wait(0):
                    break
        except OSError as e:       # reported below, not lost in a thread
            errors.append(e)

    big = hashlib.sha256((v.mnt / "big").read_bytes()).hexdigest()
    t = threading.Thread(target=writer)
    t.start()
    try:
        # Scrubs until the writer has written a good many files beside
        # them (at least three scrubs; 30 s at most).
        results = []
        deadline = time.monotonic() + 30
        while len(results) < 3 or (len(want) < 64 and
                                   time.monotonic() < deadline):
            p = ctl(v, "scrub", "start", "-w", "--json", "--threads", "3")
            results.append((p.returncode, json.loads(p.stdout)))
    finally:
        stop.set()
        t.join(timeout=120)
    assert not t.is_alive()
    assert not errors, errors
    for rc, st in results:
        assert rc == 0, st
        assert st["state"] == "finished" and st["threads"] == 3, st
        assert st["rows_checked"] > 0, st
        for k in ("detected", "repaired", "unrecoverable",
                  "parity_mismatch"):
            assert st[k] == 0, (k, st)
    assert want, "the writer wrote nothing"
    for name, h in want.items():
        assert hashlib.sha256((v.mnt / name).read_bytes()).hexdigest() \
            == h, name
    assert hashlib.sha256((v.mnt / "big").read_bytes()).hexdigest() == big
    assert v.status()["health"] == "ok"


def test_bad_threads_usage(mounted):
    v = mounted
    for args, msg in [
            (["scrub", "start", "--threads", "0"], "--threads takes"),
            (["scrub", "start", "--threads", "17"], "(not '17')"),
            (["scrub", "start", "--threads", "x"], "(not 'x')"),
            (["scrub", "start", "--threads", "+4"], "(not '+4')"),
            (["scrub", "start", "--threads", " 4"], "--threads takes"),
            (["scrub", "start", "--threads", ""], "--threads takes"),
            (["scrub", "start", "--threads"], "--threads takes"),
            (["scrub", "status", "--threads", "2"],
             "unknown option '--threads'"),
            (["scrub", "resume", "--threads", "2"],
             "unknown option '--threads'")]:
        p = ctl(v, *args)
        assert p.returncode == 2 and msg in p.stderr, (args, p)
    # Nothing started by any of them.
    st = json.loads(ctl(v, "scrub", "status", "--json").stdout)
    assert st["state"] == "none", st
    # With a rate too; the bare "scrub" is "scrub start -w".
    p = ctl(v, "scrub", "--threads", "2", "--rate", "1000", "--json")
    assert p.returncode == 0, p
    st = json.loads(p.stdout)
    assert st["state"] == "finished" and st["threads"] == 2, st
    assert st["detected"] == 0 and st["rows_checked"] > 0, st


def test_resume_refused_during_a_replace(volume_factory):
    """A paused scrub resumed while a device is being replaced would run
    its threads over a device the replace closes: refused, as a start
    is, with the same exit status."""
    v = volume_factory(ndev=4, size="64M", parity=1)
    v.mkfs()
    v.mount()
    (v.mnt / "big").write_bytes(os.urandom(16 << 20))
    p = ctl(v, "scrub", "start", "--rate", "1", "--threads", "2")
    assert p.returncode == 0, p
    p = ctl(v, "scrub", "pause")
    assert p.returncode == 0 and "paused" in p.stdout, p
    new = v.devs[1].with_name(v.devs[1].stem + "-new.img")
    try:
        # 64 MiB at 1 MB/s: still running through the checks below.
        p = ctl(v, "replace", "1", str(new), "--rate", "1")
        assert p.returncode == 0, p.stdout + p.stderr
        assert replace_status(v)["state"] == "running"
        start = ctl(v, "scrub", "start", "--threads", "2")
        p = ctl(v, "scrub", "resume")
        assert p.returncode == start.returncode == 1, (p, start)
        assert "is being replaced" in p.stdout, p
        st = json.loads(ctl(v, "scrub", "status", "--json").stdout)
        assert st["state"] == "paused", st
        assert replace_status(v)["state"] == "running"
    finally:
        # The replace never ends here: its new device is no device of
        # the volume's, which the teardown removes.
        new.unlink(missing_ok=True)
