# SPDX-License-Identifier: MIT
"""Events and the device table, as zpool events and zpool status show
them: a fault injected into a device image while the volume is mounted
is an event naming the device, the page and the file; the device's
counters say so until `clear`; devices left out at mount are named in
the table with their state; and the events reach a log file when there
is no syslog."""
import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import CTL, run
from dgfault import inject


def ctl(v, *args):
    return run([CTL, v.mnt] + list(args), check=False)


def events(v):
    p = ctl(v, "events", "--json")
    assert p.returncode == 0, p
    return [json.loads(x) for x in p.stdout.splitlines()]


def table(v):
    return v.status()["device_table"]


@pytest.fixture
def vol(volume_factory, tmp_path):
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    v.log_file = tmp_path / "events.log"
    v.mount(f"log={v.log_file}")
    (v.mnt / "f").write_bytes(os.urandom(1 << 20))
    return v


def inject_into_f(v):
    """Zero one data page of /f in its device image, the volume mounted."""
    rep, _ = inject(v.devs, "zero", "data", seed=3,
                    extra=["--file", "/f", "--count", "1"])
    assert rep["mounted"] is True, rep
    [c] = rep["changes"]
    assert c["structure"] == "data" and c["file"] == "/f", c
    return c


def test_events_name_a_fault_injected_while_mounted(vol):
    v = vol
    c = inject_into_f(v)
    p = ctl(v, "scrub")
    assert p.returncode == 0, p       # repaired from parity
    ev = events(v)
    det = [e for e in ev if e["type"] == "fault-detected"]
    rep = [e for e in ev if e["type"] == "fault-repaired"]
    assert len(det) == 1 and len(rep) == 1, ev
    for e in det + rep:
        assert e["device"] == c["device"] and e["page"] == c["page"], (e, c)
        assert e["what"] == "data" and e["vpn"] == c["vpn"], (e, c)
        assert e["path"] == "/f" and e["offset"] % 4096 == 0, e
    assert det[0]["detail"] == "checksum mismatch", det
    assert rep[0]["detail"] == "rebuilt from parity", rep
    assert det[0]["seq"] < rep[0]["seq"]
    types = [e["type"] for e in ev]
    assert types.index("scrub-started") < types.index("fault-detected") < \
        types.index("scrub-finished"), types
    # The text form says the same, one line an event.
    p = ctl(v, "events")
    line = [x for x in p.stdout.splitlines() if " fault-detected " in x][0]
    assert (f" fault-detected device {c['device']} page {c['page']} (data) "
            f"/f offset {det[0]['offset']}: checksum mismatch") in line, line
    # And the log file, there being no syslog to lose them to.
    # Each as "event " and the record --json gives, on one line.
    recs = [json.loads(ln[ln.index("event {") + 6:])
            for ln in v.log_file.read_text().splitlines() if "event {" in ln]
    rec = [r for r in recs if r["seq"] == det[0]["seq"]][0]
    assert rec == {k: det[0][k] for k in rec}, (rec, det[0])
    assert (rec["type"], rec["device"], rec["page"], rec["what"],
            rec["vpn"], rec["offset"], rec["path"], rec["detail"]) == \
        ("fault-detected", c["device"], c["page"], "data", c["vpn"],
         det[0]["offset"], "/f", "checksum mismatch"), rec
    assert "scrub-finished" in [r["type"] for r in recs]


def test_device_counters_and_clear(vol):
    v = vol
    c = inject_into_f(v)
    assert ctl(v, "scrub").returncode == 0
    t = table(v)
    assert [d["index"] for d in t] == [0, 1, 2, 3], t
    for d in t:
        assert d["state"] == "online" and d["path"] == str(v.devs[d["index"]])
        want = 1 if d["index"] == c["device"] else 0
        assert (d["checksum_errors"], d["repaired"], d["unrecoverable"],
                d["read_errors"]) == (want, want, 0, 0), t
    p = ctl(v, "status")
    head = "INDEX  STATE         READ    CKSUM REPAIRED  UNRECOV  PATH"
    assert head in p.stdout, p.stdout
    row = [x for x in p.stdout.splitlines()
           if x.startswith(f"{c['device']:5d}  online")][0]
    assert row.split()[2:6] == ["0", "1", "1", "0"], row
    assert ctl(v, "clear").stdout == "cleared\n"
    assert all(d["checksum_errors"] == d["repaired"] == 0 for d in table(v))
    assert events(v)[-1]["type"] == "counters-cleared"


def test_follow_prints_new_events(vol):
    v = vol
    f = subprocess.Popen([str(CTL), str(v.mnt), "events", "--follow",
                          "--json"], stdout=subprocess.PIPE, text=True)
    try:
        inject_into_f(v)
        assert ctl(v, "scrub").returncode == 0
        seen = []
        while "scrub-finished" not in seen:
            seen.append(json.loads(f.stdout.readline())["type"])
        assert "fault-detected" in seen and "fault-repaired" in seen, seen
    finally:
        f.terminate()
        assert f.wait(timeout=10) == 0


def test_table_names_missing_and_stale_devices(volume_factory, tmp_path):
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    old = tmp_path / "old1.img"
    shutil.copyfile(v.devs[1], old)
    v.mount()
    # 4 MiB: data goes a chunk (1 MiB) per device, so this reaches every
    # device whatever the metadata zone in front of it holds.
    (v.mnt / "f").write_bytes(os.urandom(4 << 20))
    v.umount()
    shutil.copyfile(old, v.devs[1])
    v.expect_log(r"stale|degraded|missing")
    v.mount("degraded")
    t = table(v)
    assert t[1]["state"] == "stale" and t[1]["path"] == str(v.devs[1]), t
    assert [d["state"] for d in t] == ["online", "stale", "online", "online"]
    ev = events(v)
    assert ev[0]["type"] == "device-stale" and ev[0]["device"] == 1, ev
    assert ev[0]["path"] == str(v.devs[1]), ev
    v.drop_caches()
    (v.mnt / "f").read_bytes()      # device 1's pages come from parity
    # Absence is not a read error (issue 32, item 7).
    assert table(v)[1]["read_errors"] == 0, table(v)
    v.umount()
    aside = tmp_path / "aside.img"
    shutil.move(v.devs[1], aside)
    v.mount("degraded")
    t = table(v)
    # Missing, by the path it was last given as.
    assert t[1]["state"] == "missing" and \
        t[1]["path"] == str(v.devs[1]), t
    ev = events(v)
    assert ev[0]["type"] == "device-missing" and ev[0]["device"] == 1, ev
    v.drop_caches()
    (v.mnt / "f").read_bytes()      # from parity: no read errors either
    assert table(v)[1]["read_errors"] == 0, table(v)
    p = ctl(v, "status")
    assert "    1  missing          0" in p.stdout, p.stdout
    assert str(v.devs[1]) in p.stdout, p.stdout


def test_log_option_is_checked_before_mounting(volume_factory, tmp_path):
    v = volume_factory(ndev=3, size="16M", parity=1)
    v.mkfs()
    with pytest.raises(AssertionError) as e:
        v.mount(f"log={tmp_path}/no/such/dir/x.log")
    assert (f"cannot open log file '{tmp_path}/no/such/dir/x.log': No such "
            f"file or directory") in str(e.value)
