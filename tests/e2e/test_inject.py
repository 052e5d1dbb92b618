# SPDX-License-Identifier: MIT
"""daxguard-inject: exact, deterministic reports; faults on a mounted
volume are detected and repaired by the daemon on access."""
import json
import subprocess

import pytest

from conftest import INJECT, run
from dgfault import fsck, inject, make_tree, manifest


@pytest.fixture
def populated(volume_factory):
    v = volume_factory(ndev=4, size="32M")
    v.mkfs()
    v.mount()
    make_tree(v.mnt, seed=5, small=30, large=1, frag=False)
    want = manifest(v.mnt)
    v.umount()
    return v, want


def snapshot(devs):
    return [d.read_bytes() for d in devs]


def test_json_reports_exactly_what_changed(populated):
    v, _ = populated
    before = snapshot(v.devs)
    rep, _ = inject(v.devs, "scribble", "data", seed=4,
                    extra=["--len", "100", "--count", "3"])
    after = snapshot(v.devs)
    reported = set()
    for c in rep["changes"]:
        for off in range(c["offset"], c["offset"] + c["len"]):
            reported.add((c["device"], off))
    changed = set()
    for i, (a, b) in enumerate(zip(before, after)):
        for off in range(len(a)):
            if a[off] != b[off]:
                changed.add((i, off))
    assert changed <= reported and changed
    # fsck finds exactly the pages the report names.
    rc, out, _ = fsck(v.devs, "-n", json_out=True)
    assert rc == 4
    pages = {(c["device"], c["offset"] // 4096) for c in rep["changes"]}
    found = {(f["device"], f["page"]) for f in out["findings"]}
    assert pages == found


def test_deterministic_with_seed(populated, volume_factory):
    v, _ = populated
    w = volume_factory(ndev=4, size="32M")
    for s, d in zip(v.devs, w.devs):
        subprocess.run(["cp", str(s), str(d)], check=True)
    a, _ = inject(v.devs, "bitflip", "any", seed=99, extra=["--count", "3"])
    b, _ = inject(w.devs, "bitflip", "any", seed=99, extra=["--count", "3"])
    strip = lambda r: [(c["device"], c["offset"], c["len"], c["structure"])
                       for c in r["changes"]]
    assert strip(a) == strip(b)


def test_file_target_names_the_file(populated):
    v, _ = populated
    name = next_big(v)
    rep, _ = inject(v.devs, "zero", "data", seed=1, extra=["--file", name])
    assert all(c["file"] == rep["changes"][0]["file"] for c in rep["changes"])
    assert rep["changes"][0]["file"] == name


def next_big(v):
    v.mount()
    try:
        big = sorted(p for p in v.mnt.rglob("big*.bin"))[0]
        return "/" + str(big.relative_to(v.mnt))
    finally:
        v.umount()


def test_usage_errors(populated):
    v, _ = populated
    p = run([INJECT] + v.devs + ["--fault", "nope"], check=False)
    assert p.returncode == 2 and "unknown fault kind 'nope'" in p.stderr
    p = run([INJECT] + v.devs + ["--fault", "zero", "--target", "x"],
            check=False)
    assert p.returncode == 2 and "unknown target 'x'" in p.stderr
    p = run([INJECT, "--fault", "zero"], check=False)
    assert p.returncode == 2 and "no devices given" in p.stderr
    p = run([INJECT] + v.devs + ["--fault", "zero", "--bogus"], check=False)
    assert p.returncode == 2
    assert p.stderr.startswith("daxguard-inject: bad option '--bogus'")
    # --json: the error as a JSON object on stdout too.
    p = run([INJECT] + v.devs + ["--fault", "nope", "--json"], check=False)
    assert p.returncode == 2
    assert json.loads(p.stdout) == {
        "error": "unknown fault kind 'nope'", "exit": 2}


@pytest.mark.parametrize("kind", ["bitflip", "scribble", "zero", "misdirect"])
def test_online_repair(populated, kind):
    """Inject while mounted; a read returns the right bytes and the daemon
    counts a repair."""
    v, want = populated
    v.mount()
    v.expect_log(r"fault")
    v.expect_log(r"csum|checksum|parity")
    big = sorted(v.mnt.rglob("big*.bin"))[0]
    rel = "/" + str(big.relative_to(v.mnt))
    rep, _ = inject(v.devs, kind, "data", seed=3, extra=["--file", rel])
    assert rep["mounted"] is True
    v.drop_caches()
    import hashlib
    assert hashlib.sha256(big.read_bytes()).hexdigest() == \
        want[str(big.relative_to(v.mnt))]
    st = v.status()
    assert st["faults"]["repaired"] >= 1, st
    v.umount()
    assert fsck(v.devs, "-n")[0] == 0


def test_zero_run_with_len_is_repaired(populated):
    """--fault zero --len: a zeroed run of many pages (a poisoned range)
    of one file, all of it repaired from parity."""
    v, want = populated
    rep, _ = inject(v.devs, "zero", "data", seed=7, extra=["--len", "65536"])
    assert rep["changes"][0]["len"] == 65536
    rc, _, _ = fsck(v.devs, "-n")
    assert rc == 4
    rc, _, _ = fsck(v.devs, "-y")
    assert rc == 1
    rc, _, _ = fsck(v.devs, "-n")
    assert rc == 0
    v.mount()
    assert manifest(v.mnt) == want
