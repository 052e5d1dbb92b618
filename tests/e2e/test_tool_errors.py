"""Errors the same way in every tool (issue 32, item 8): bad usage exits
2 (fsck.daxguard: fsck(8)'s 16), messages start with the tool's own
name, and --json on failure prints {"error": ..., "exit": N} on stdout;
fsck --replace with the old device still in the list."""
import json
import subprocess

from conftest import BUILD, CTL, DAEMON, FSCK, INJECT, MKFS, run
from dgfault import fsck

DUMPFS = BUILD / "dump" / "dumpfs.daxguard"


def call(cmd):
    return subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, timeout=60)


def test_usage_errors_exit_2_and_name_the_tool(tmp_path):
    x = tmp_path / "x.img"
    cases = [
        (MKFS, "mkfs.daxguard", [MKFS, "--bogus", x], 2),
        (MKFS, "mkfs.daxguard", [MKFS], 2),
        (INJECT, "daxguard-inject", [INJECT, x, "--fault", "zero",
                                     "--bogus"], 2),
        (INJECT, "daxguard-inject", [INJECT, "--fault", "zero"], 2),
        (DUMPFS, "dumpfs.daxguard", [DUMPFS, "--bogus", x], 2),
        (DUMPFS, "dumpfs.daxguard", [DUMPFS], 2),
        (CTL, "daxguard-ctl", [CTL, tmp_path, "status", "--bogus"], 2),
        (CTL, "daxguard-ctl", [CTL], 2),
        (DAEMON, "daxguard", [DAEMON], 2),
        (FSCK, "fsck.daxguard", [FSCK, "--bogus", x], 16),
        (FSCK, "fsck.daxguard", [FSCK, "-n", "-y", x], 16),
    ]
    for _, name, cmd, code in cases:
        p = call(cmd)
        assert p.returncode == code, (cmd, p)
        assert p.stderr.startswith(name + ": "), (cmd, p.stderr)
        assert "usage:" in p.stderr, (cmd, p.stderr)
    assert not x.exists()


def test_mkfs_parity_needs_devices(tmp_path):
    y0 = tmp_path / "y0.img"
    p = call([MKFS, "--parity", "1", y0])
    assert p.returncode == 2, p
    assert p.stderr.startswith(
        "mkfs.daxguard: parity 1 needs at least 2 devices (1 given)\n")
    assert not y0.exists()


def test_json_errors_on_stdout(tmp_path):
    missing = tmp_path / "missing.img"
    for cmd, code in [
        ([INJECT, missing, "--fault", "nope", "--json"], 2),
        ([DUMPFS, "--json", "--bogus", missing], 2),
        ([DUMPFS, "--json", missing], 1),
        ([CTL, tmp_path, "status", "--json"], 1),
        ([CTL, tmp_path, "status", "--json", "--xml"], 2),
        ([FSCK, "-n", "-y", "--json", missing], 16),
    ]:
        p = call(cmd)
        assert p.returncode == code, (cmd, p)
        rep = json.loads(p.stdout)
        assert rep["exit"] == code, (cmd, rep)
        assert rep["error"] and rep["error"] in p.stderr, (cmd, rep, p)


def test_fsck_replace_with_the_old_device_listed(volume_factory, tmp_path):
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    v.mount()
    (v.mnt / "f").write_bytes(b"data\n" * 10000)
    v.umount()
    new = tmp_path / "new.img"
    try:
        rc, _, p = fsck(v.devs, "-y", "--replace", f"2={new}")
        assert rc == 1, p.stdout + p.stderr
        assert "PR_0_DEV_REBUILT" in p.stdout
        devs = v.devs[:2] + [new] + v.devs[3:]
        rc, _, p = fsck(devs, "-n")
        assert rc == 0, p.stdout + p.stderr
        # A slot the volume does not have, said as such.
        rc, rep, p = fsck(devs, "-y", "--replace", f"9={tmp_path / 'x'}",
                          json_out=True)
        assert rc == 16, p.stdout + p.stderr
        msg = "device 9 is not a device of this volume (0-3)"
        assert p.stderr.startswith("fsck.daxguard: ") and msg in p.stderr
        assert msg in rep["error"] and rep["exit"] == 16
        v.devs[2], old = new, v.devs[2]
        old.unlink()
        v.mount()
        assert (v.mnt / "f").read_bytes() == b"data\n" * 10000
    finally:
        v.umount()
        new.unlink(missing_ok=True)
