# SPDX-License-Identifier: MIT
"""The background scrub as btrfs and zpool users know it: `scrub start`
returns at once and the daemon goes on serving status, reads and writes;
`scrub status` tells how far it is; pause, resume and cancel; one scrub
at a time; the position survives an unmount and a crash; --rate holds
the rate; `scrub` (= start -w) waits and exits 0 or 3."""
import hashlib
import json
import os
import time

import pytest

from conftest import CTL, run

# Slow enough that a scrub is still running while a test looks at it:
# 40 MB of data is about 53 MB of rows (parity included) to verify.
RATE_MB = 4


def sha(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


def ctl(v, *args):
    return run([CTL, v.mnt] + list(args), check=False)


def sstat(v):
    p = ctl(v, "scrub", "status", "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture
def filled(volume_factory):
    v = volume_factory(ndev=4, size="64M", parity=1)
    v.mkfs()
    v.mount()
    (v.mnt / "big").write_bytes(os.urandom(40 << 20))
    (v.mnt / "small").write_bytes(b"small\n")
    return v


def start_slow(v):
    p = ctl(v, "scrub", "start", "--rate", str(RATE_MB))
    assert p.returncode == 0 and p.stdout == "scrub started\n", p
    return p


def wait_rows(v, rows):
    """Until the scrub has checked `rows` rows (it is running)."""
    while True:
        st = sstat(v)
        assert st["state"] == "running", st
        if st["next_row"] >= rows:
            return st
        time.sleep(0.05)


def test_start_returns_and_status_answers_while_running(filled):
    v = filled
    want = sha(v.mnt / "big")
    start_slow(v)
    # Status, a read and a write, each finished while the scrub is still
    # running: asked for after they returned, the scrub says so.
    st = v.status()
    assert st["health"] == "ok", st
    assert sha(v.mnt / "big") == want
    (v.mnt / "new").write_bytes(b"written during a scrub\n")
    os.sync()
    s = sstat(v)
    assert s["state"] == "running", s
    assert 0 < s["bytes_scanned"] < s["bytes_total"], s
    assert s["rate_limit_bytes_per_s"] == RATE_MB * 10**6, s
    assert s["eta_s"] > 0, s
    p = ctl(v, "scrub", "status")
    assert p.returncode == 0
    assert p.stdout.startswith("scrub running, "), p.stdout
    assert "ETA " in p.stdout and "(limit " in p.stdout, p.stdout
    assert ctl(v, "scrub", "cancel").returncode == 0
    assert (v.mnt / "new").read_bytes() == b"written during a scrub\n"


def test_two_scrubs_are_refused(filled):
    v = filled
    start_slow(v)
    p = ctl(v, "scrub", "start")
    assert p.returncode == 1, p
    assert p.stdout == ("error: a scrub is running: 'scrub status' shows "
                        "it, 'scrub cancel' stops it\n"), p.stdout
    p = ctl(v, "scrub")          # the synchronous form too
    assert p.returncode == 1 and "a scrub is running" in p.stdout, p
    p = ctl(v, "scrub", "start", "--json")
    assert p.returncode == 1 and json.loads(p.stdout)["error"], p
    assert ctl(v, "scrub", "pause").returncode == 0
    p = ctl(v, "scrub", "start")
    assert p.returncode == 1 and "a scrub is paused" in p.stdout, p


def test_cancel_stops_the_work(filled):
    v = filled
    start_slow(v)
    wait_rows(v, 1)
    p = ctl(v, "scrub", "cancel")
    assert p.returncode == 0 and p.stdout == "scrub cancelled\n", p
    a = sstat(v)
    assert a["state"] == "cancelled" and a["ended"] > 0, a
    assert a["next_row"] < a["rows"], a
    # The reply came once the thread had stopped: nothing moves after.
    time.sleep(0.5)
    b = sstat(v)
    assert (b["next_row"], b["rows_checked"]) == \
        (a["next_row"], a["rows_checked"]), (a, b)
    p = ctl(v, "scrub", "resume")
    assert p.returncode == 1 and "no scrub to resume" in p.stdout, p
    p = ctl(v, "scrub", "cancel")
    assert p.returncode == 1 and "no scrub is running" in p.stdout, p
    types = [json.loads(x)["type"] for x in
             ctl(v, "events", "--json").stdout.splitlines()]
    assert types[-2:] == ["scrub-started", "scrub-cancelled"], types


def test_pause_unmount_remount_resume(filled):
    v = filled
    full = json.loads(v.ctl("scrub", "--json").stdout)   # reference
    assert full["state"] == "finished" and full["rows_checked"] > 0, full
    start_slow(v)
    wait_rows(v, 16)
    assert ctl(v, "scrub", "pause").stdout == "scrub paused\n"
    paused = sstat(v)
    assert paused["state"] == "paused" and paused["position_saved"], paused
    v.remount()
    s = sstat(v)
    assert s["state"] == "paused", s
    assert s["next_row"] == paused["next_row"], (s, paused)
    assert s["rows_checked"] == paused["rows_checked"], (s, paused)
    # Resumed without a limit: -w waits for the end.
    p = ctl(v, "scrub", "resume", "-w", "--json")
    assert p.returncode == 0, p
    done = json.loads(p.stdout)
    assert done["state"] == "finished" and done["next_row"] == done["rows"]
    # Every row once: what was checked before the pause is not redone.
    assert done["rows_checked"] == full["rows_checked"], (done, full)
    assert done["unrecoverable"] == 0 and done["detected"] == 0, done
    types = [json.loads(x)["type"] for x in
             ctl(v, "events", "--json").stdout.splitlines()]
    assert types == ["scrub-resumed", "scrub-finished"], types


def test_crash_resumes_at_the_next_mount(filled):
    v = filled
    start_slow(v)
    wait_rows(v, 16)
    # Pause and resume save the position; then the daemon dies.
    ctl(v, "scrub", "pause")
    at = sstat(v)["next_row"]
    assert ctl(v, "scrub", "resume").returncode == 0
    v.kill9()
    v.mount()
    s = sstat(v)
    assert s["state"] in ("running", "finished"), s
    assert s["next_row"] >= at, (s, at)
    ev = [json.loads(x) for x in ctl(v, "events", "--json").stdout.splitlines()]
    assert ev[0]["type"] == "scrub-resumed", ev
    assert ev[0]["detail"].startswith("after remount, at row "), ev
    assert ctl(v, "scrub", "cancel").returncode in (0, 1)


def test_rate_is_held(filled):
    v = filled
    t0 = time.monotonic()
    p = ctl(v, "scrub", "start", "-w", "--rate", "20", "--json")
    took = time.monotonic() - t0
    assert p.returncode == 0, p
    s = json.loads(p.stdout)
    assert s["state"] == "finished", s
    limit = 20 * 10**6
    # The daemon's own account, and the wall clock (a lower bound only).
    assert s["rate_bytes_per_s"] <= limit * 1.05, s
    assert took >= s["bytes_verified"] / limit * 0.95, (took, s)


def test_synchronous_scrub_keeps_its_form(filled):
    v = filled
    p = ctl(v, "scrub")
    assert p.returncode == 0, p
    lines = p.stdout.splitlines()
    assert lines[0] == "scrub finished, 100.0% done " \
        f"(row {sstat(v)['rows']} of {sstat(v)['rows']})", lines
    assert any(x.startswith("rows checked ") and
               ", unrecoverable 0, parity mismatches 0 (fixed 0)" in x
               for x in lines), lines


def test_bad_scrub_usage(filled):
    v = filled
    for args, msg in [(["scrub", "frob"], "unknown scrub command 'frob'"),
                      (["scrub", "start", "--rate", "0"], "--rate takes"),
                      (["scrub", "start", "--rate", "x"], "(not 'x')"),
                      (["scrub", "start", "--rate"], "--rate takes"),
                      (["scrub", "status", "-w"], "unknown option '-w'"),
                      (["scrub", "pause", "--rate", "3"],
                       "unknown option '--rate'"),
                      (["events", "-v"], "unknown option '-v'")]:
        p = ctl(v, *args)
        assert p.returncode == 2 and msg in p.stderr, (args, p)
    p = ctl(v, "scrub", "status")
    assert p.returncode == 0
    assert p.stdout == "scrub none: no scrub has run on this volume\n"
    assert sstat(v)["state"] == "none"
