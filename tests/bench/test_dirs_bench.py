"""bench/dirs.py without mounting anything: its usage errors exit 2, and
the ratios and the table come from the raw records."""

import os
import subprocess
import sys

import dirs

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_usage_errors_exit_2(tmp_path):
    for args in (["--n", "0"], ["--systems", "btrfs"], ["--batch", "0"],
                 ["--image-size", "lots"], ["--no-such-option"]):
        cp = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "dirs.py"),
                             "--out", str(tmp_path / "out")] + args,
                            capture_output=True, text=True, timeout=60)
        assert cp.returncode == 2, (args, cp.stderr)


def rec(seconds, ops=1000):
    return {"ops": ops, "seconds": seconds, "ops_per_s": ops / seconds,
            "daemon_cpu_s": 0.5, "daemon_mem_kib": {"RssAnon": 2048}}


def test_ratios_and_table():
    sysrecs = {"daxguard-p1": {"phases": {"create": rec(10), "stat": rec(2),
                                          "readdir": rec(0.5), "unlink": rec(12)}},
               "passthrough": {"phases": {"create": rec(5), "stat": rec(4),
                                          "readdir": rec(0.25), "unlink": rec(4)}}}
    r = dirs.ratios(sysrecs)
    assert r["daxguard-p1 unlink/create (seconds)"] == 1.2
    assert r["passthrough unlink/create (seconds)"] == 0.8
    assert r["daxguard/passthrough create (seconds)"] == 2.0
    assert r["daxguard/passthrough stat (seconds)"] == 0.5
    assert r["daxguard/passthrough unlink (seconds)"] == 3.0
    md = dirs.table({"n": 1000, "machine": {"date": "d", "git_commit": "abc"},
                     "systems": sysrecs, "ratios": r, "skipped": {"x": "why"}})
    assert "| daxguard-p1 | unlink | 12.00 | 83 | 0.5 | 2 |" in md
    assert "x skipped: why" in md
