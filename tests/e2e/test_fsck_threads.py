# SPDX-License-Identifier: MIT
"""fsck.daxguard --threads N (issue 34): the page pass verifies rows
with N threads, and what fsck reports, in what order, with what exit
status, and what -y repairs, is the same whatever N (verify_par.c). The
edges of the ranges the threads share out are the unit test's
(test_check_par.c); here the tool end to end, faults of several kinds in
data and parity over a filled volume: 4 devices with parity 1, 6 with
parity 2, and 4 with parity 1 one of which is gone (degraded)."""
import os

import pytest

from conftest import FSCK, run
from dgfault import copy_of, fsck, fsck_lines, inject, make_tree


# (devices, parity, the device removed after the damage or None)
SHAPES = [(4, 1, None), (6, 2, None), (4, 1, 1)]


@pytest.fixture(scope="module", params=SHAPES,
                ids=["4dev-p1", "6dev-p2", "4dev-p1-degraded"])
def shape(request):
    return request.param


@pytest.fixture(scope="module")
def golden(tmp_path_factory, shape):
    """A filled volume of shape (several blocks of rows), unmounted."""
    from conftest import Volume
    ndev, parity, _ = shape
    tmp = tmp_path_factory.mktemp("golden-threads")
    v = Volume(tmp, ndev=ndev, size="64M", parity=parity,
               tag=f"fsck-threads-{os.getpid()}-{ndev}-{parity}")
    v.mkfs()
    v.mount()
    try:
        make_tree(v.mnt, seed=11, small=40, large=12, frag=False)
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


def damaged_copy(golden, shape, volume_factory):
    """A copy of golden, damaged, and the device of shape removed: the
    devices to give fsck (a removed one's path left out)."""
    v = copy_of(golden, volume_factory)
    damage(v)
    lost = shape[2]
    if lost is None:
        return v, v.devs
    v.devs[lost].unlink()
    return v, [d for i, d in enumerate(v.devs) if i != lost]


def uuid_of(p):
    """The volume's uuid: what fsck's summary, its last line, starts
    with."""
    return p.stdout.strip().splitlines()[-1].split(":", 1)[0]


def outputs(devs, *opts):
    """fsck's exit status, its report (statistics lines left out) and
    its --json findings, with each of 1, 2 and 4 threads."""
    got = {}
    for t in (1, 2, 4):
        rc, _, p = fsck(devs, *opts, "--threads", str(t))
        rcj, rep, _ = fsck(devs, *opts, "--threads", str(t),
                           json_out=True)
        assert rc == rcj, p.stderr
        # The fast paths taken: verdicts of the workers with threads,
        # rows verified in place with one.
        if t >= 2:
            assert rep["rows_ahead"] > 0, rep
        else:
            assert rep["rows_ahead"] == 0 and rep["rows_in_place"] > 0, rep
        got[t] = (rc, fsck_lines(p, uuid_of(p)), rep["findings"])
    return got


def test_same_report_any_threads(golden, shape, volume_factory):
    _, devs = damaged_copy(golden, shape, volume_factory)
    got = outputs(devs, "-n")
    rc, lines, findings = got[1]
    # Beyond parity 1 (one row has two pages bad, a device is gone).
    assert rc == 4 or shape[1] == 2, lines
    assert len(findings) >= 8
    for t in (2, 4):
        assert got[t] == got[1], f"threads {t} differ from 1"


def lines_of(p, devs):
    """fsck_lines(), the device paths (the copies' own) as DEV<i>."""
    out = fsck_lines(p, uuid_of(p))
    for i, d in enumerate(devs):
        out = [line.replace(str(d), f"DEV{i}") for line in out]
    return out


def test_same_repairs_any_threads(golden, shape, volume_factory):
    # Every path given: -y rebuilds a removed device there from parity
    # first (the rows with two pages bad then are beyond it).
    a = damaged_copy(golden, shape, volume_factory)[0].devs
    b = damaged_copy(golden, shape, volume_factory)[0].devs
    rca, _, pa = fsck(a, "-y", "--threads", "1")
    rcb, _, pb = fsck(b, "-y", "--threads", "4")
    assert rca == rcb and rca in (1, 4), pa.stdout + pa.stderr
    assert lines_of(pa, a) == lines_of(pb, b)
    # What is left after the repairs, the same again.
    for t in (1, 4):
        ra, _, qa = fsck(a, "-n", "--threads", str(t))
        rb, _, qb = fsck(b, "-n", "--threads", str(5 - t))
        assert ra == rb, qa.stdout + qb.stdout
        assert lines_of(qa, a) == lines_of(qb, b)


@pytest.mark.parametrize("bad", ["0", "17", "-1", "two", "2x", "", " 4",
                                 "+4", "4 ", "99999999999999999999"])
def test_threads_usage(tmp_path, bad):
    # (refused before any device is looked at)
    devs = [str(tmp_path / f"d{i}.img") for i in range(4)]
    p = run([FSCK, "-n", "--threads", bad] + devs, check=False)
    assert p.returncode == 16, p.stderr
    assert "--threads" in p.stderr
