"""Smoke run of the real command: --quick, passthrough (a real FUSE mount)
and daxguard-p1 (skipped with a reason while its binaries are not built,
measured once they are).  About 30 s, so it always runs where FUSE works."""

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.mark.skipif(not os.path.exists("/dev/fuse") or not shutil.which("fusermount3")
                    or not shutil.which("fio") or not shutil.which("cc"),
                    reason="needs /dev/fuse, fusermount3, fio and cc")
def test_quick_smoke(tmp_path):
    out = tmp_path / "res"
    build = os.environ.get("DG_BUILD_DIR", os.path.join(ROOT, "build"))
    cp = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "run.py"), "--quick",
                         "--systems", "passthrough,daxguard-p1",
                         "--workloads", "fio-seq-write,fio-rand-write-1j,meta-flat",
                         "--build-dir", build, "--out", str(out)],
                        capture_output=True, text=True, timeout=300)
    assert cp.returncode == 0, cp.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    assert res["meta"]["complete"]
    assert res["systems"]["passthrough"]["status"] == "ok", res["systems"]
    dg = res["systems"]["daxguard-p1"]
    built = all(os.access(os.path.join(build, p), os.X_OK)
                for p in ("mkfs/mkfs.daxguard", "fs/daemon/daxguard"))
    if built:
        assert dg["status"] == "ok", dg
    else:
        assert dg["status"] == "skipped" and "missing" in dg["reason"]
    for sysname in [s for s, v in res["systems"].items() if v["status"] == "ok"]:
        for w in ("fio-seq-write", "fio-rand-write-1j", "meta-flat"):
            vals = [r["value"] for r in res["raw"] if r["system"] == sysname
                    and r["workload"] == w and r["unit"] != "us"]
            assert vals and all(v and v > 0 for v in vals), (sysname, w, vals)
    if built:
        # What each job cost the media, from status --json (media_records).
        amp = [r["value"] for r in res["raw"] if r["system"] == "daxguard-p1"
               and r["workload"] == "fio-rand-write-1j" and r["metric"] == "stored/written"]
        assert amp and all(v >= 2 for v in amp), amp
    md = (out / "results.md").read_text()
    assert "| passthrough | ok |" in md
    assert (out / "plots" / "fio.png").read_bytes()[:4] == b"\x89PNG"
    with open("/proc/mounts") as f:
        # Only this run's mounts: another harness may be running on the machine.
        assert res["meta"]["work_root"] + "/" not in f.read()
