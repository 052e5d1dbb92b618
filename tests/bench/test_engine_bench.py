"""engine_bench runs end to end on tiny settings: it once died on every
run ('region ... is not chunk aligned') after the allocator changed, and
nothing noticed. Measures nothing; checks that a table comes out."""

import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("DG_BUILD_DIR", os.path.join(ROOT, "build"))
BIN = os.path.join(BUILD, "bench", "engine", "engine_bench")


@pytest.mark.skipif(not os.access(BIN, os.X_OK), reason="engine_bench not built")
def test_engine_bench_runs(tmp_path):
    cp = subprocess.run([BIN, "--size", "16M", "--reps", "1", "--seconds", "0.05",
                         "--warmup", "0", "--tests", "4k,1m", "--configs", "none,p1",
                         "--dir", str(tmp_path)],
                        capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    rows = [l for l in cp.stdout.splitlines() if l.startswith("| ")
            and ("| none |" in l or "| p1 |" in l)]
    assert len(rows) == 4, cp.stdout
    assert not os.listdir(tmp_path)      # its images are removed
