"""pytest setup for the benchmark harness's own tests (no root mounts needed,
except test_smoke_quick.py which mounts libfuse's passthrough example)."""

import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")
sys.path.insert(0, os.path.abspath(BENCH))

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


@pytest.fixture
def data():
    def read(name):
        with open(os.path.join(DATA, name)) as f:
            return f.read()
    return read


@pytest.fixture
def results():
    """A results dict as cli.finish() receives it, built from fake raw records."""
    from dgbench import stats
    raw = []
    vals = {"daxguard-p1": [40, 42, 41], "daxguard-none": [80, 82, 81],
            "passthrough": [100, 103, 101], "tmpfs": [1000, 990, 1010]}
    for w, metric, unit, durable in [("fio-rand-write-1j", "IOPS", "IOPS", True),
                                     ("fio-pmem-64b", "IOPS", "IOPS", False),
                                     ("meta-flat", "create ops/s", "ops/s", True)]:
        for s, vs in vals.items():
            for rep, v in enumerate(vs):
                raw.append({"system": s, "workload": w, "metric": metric, "value": float(v),
                            "unit": unit, "better": "higher", "durable": durable,
                            "error": None, "rep": rep})
    raw.append({"system": "passthrough", "workload": "fio-verify-rand-write", "metric": "verified",
                "value": 1.0, "unit": "pass", "better": "higher", "durable": True,
                "error": None, "rep": 0})
    raw.append({"system": "tmpfs", "workload": "fio-rand-write-1j", "metric": "IOPS",
                "value": None, "unit": "IOPS", "better": "higher", "durable": True,
                "error": "fio exit 1: boom", "rep": 3})
    summary = stats.aggregate(raw)
    return {
        "meta": {"started": "2026-01-01 00:00:00", "mode": "quick", "reps": 3,
                 "duration_s": 12.5},
        "machine": {"cores": 2, "cpu_model": "test cpu", "mem_gib": 24, "kernel": "6.1",
                    "os": "Debian", "versions": {"fio": "fio-3.33"}},
        "systems": {
            "daxguard-p1": {"status": "ok", "info": {"family": "daxguard", "redundancy": "parity 1"}},
            "daxguard-none": {"status": "ok", "info": {"family": "daxguard", "redundancy": "none"}},
            "passthrough": {"status": "ok", "info": {"family": "fuse", "redundancy": "none"}},
            "tmpfs": {"status": "ok", "info": {"family": "tmpfs", "redundancy": "none"}},
            "zfs-raidz1": {"status": "skipped", "reason": "zfs-fuse not installed", "info": {}},
        },
        "workloads": {
            "fio-rand-write-1j": {"status": "ok", "group": "fio", "kind": "perf", "durable": True,
                                  "title": "rw=randwrite"},
            "fio-pmem-64b": {"status": "ok", "group": "fio", "kind": "perf", "durable": False,
                             "title": "libpmem"},
            "meta-flat": {"status": "ok", "group": "metadata", "kind": "perf", "durable": True,
                          "title": "meta"},
            "fio-verify-rand-write": {"status": "ok", "group": "verify", "kind": "correctness",
                                      "durable": True, "title": "verify"},
            "filebench-varmail": {"status": "skipped", "reason": "filebench not on PATH",
                                  "group": "filebench", "kind": "perf", "durable": True},
        },
        "raw": raw, "summary": summary, "ratios": stats.ratios(summary),
        "repair": [
            {"system": "passthrough", "fault": "bitflip", "injected": "bit 3 flipped",
             "detected": False, "read_ok": False, "repaired": False, "intact": False,
             "repair_seconds": None},
            {"system": "daxguard-p1", "fault": "device-loss", "skipped": "fsck missing"},
        ],
    }
