"""Live progress (issue 32, item 5): 'scrub -w' on a terminal shows a
progress line with rate and ETA before its report; 'replace status'
gives done/total, rate and ETA, as zpool status's scan line does."""
import os
import pty
import select
import subprocess
import time
import uuid
from pathlib import Path

from conftest import CTL, run
from dgfault import replace_status, wait_replace


def run_on_pty(cmd, timeout=120):
    """cmd with stdout and stderr on a pseudo-terminal: (rc, output)."""
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen([str(c) for c in cmd], stdin=subprocess.DEVNULL,
                             stdout=slave, stderr=slave)
    finally:
        os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 1)
            if not r:
                if p.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:         # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        else:
            p.kill()
            raise AssertionError(f"{cmd} still running: {out!r}")
        return p.wait(timeout=30), out.decode(errors="replace")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)


def test_scrub_wait_shows_progress_on_a_terminal(volume_factory):
    v = volume_factory(ndev=4, size="32M")
    v.mkfs()
    v.mount()
    (v.mnt / "f").write_bytes(os.urandom(4 << 20))
    # 128 MiB at 40 MB/s: about 3 s, many polls of 0.2 s.
    rc, out = run_on_pty([CTL, v.mnt, "scrub", "start", "-w", "--rate",
                          "40"])
    assert rc == 0, out
    report = out.index("rows checked")
    lines = out[:report].split("\r")
    prog = [x for x in lines if x.startswith("scrub: ") and "% done" in x]
    assert prog, out
    assert any("/s, ETA " in x for x in prog), out


def test_replace_status_has_rate_and_eta(volume_factory):
    v = volume_factory(ndev=4, size="32M")
    v.mkfs()
    v.mount()
    new = Path(f"/dev/shm/dg-e2e-{uuid.uuid4().hex[:8]}-new.img")
    try:
        # One page a row onto the new device: 32 MiB at 8 MB/s, ~4 s.
        p = run([CTL, v.mnt, "replace", "1", new, "--rate", "8"],
                check=False)
        assert p.returncode == 0, p
        seen = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            st = replace_status(v)
            assert "rate_bytes_per_s" in st and "eta_s" in st, st
            if st["state"] != "running":
                break
            if st["rate_bytes_per_s"] > 0 and st["eta_s"] >= 0:
                seen = st
                text = run([CTL, v.mnt, "replace", "status"]).stdout
                break
            time.sleep(0.2)
        assert seen, st
        assert 0 < seen["next_row"] <= seen["rows"], seen
        # percent and the ETA count the rows of written blocks (blank
        # rows cost nothing): a 32 MiB volume of little data has fewer.
        assert 0 < seen["used_rows"] < seen["rows"], seen
        assert seen["used_rows_done"] <= seen["used_rows"], seen
        assert abs(seen["percent"] - 100 * seen["used_rows_done"] /
                   seen["used_rows"]) < 0.01, seen
        assert seen["rate_bytes_per_s"] <= 8 * 10**6, seen
        assert seen["eta_s"] < 600, seen
        if "running" in text:       # it may have ended in between
            assert "/s, ETA " in text and "% (row " in text, text
            assert " used rows)" in text, text
        st = wait_replace(v)
        assert st["state"] == "finished", st
        assert st["eta_s"] == 0, st
        assert st["percent"] == 100 and st["used_rows_done"] == st["used_rows"], st
    finally:
        v.umount()
        new.unlink(missing_ok=True)
