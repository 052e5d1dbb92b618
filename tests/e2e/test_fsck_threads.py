# SPDX-License-Identifier: MIT
"""fsck.daxguard --threads N (issue 34): the page pass verifies rows
with N threads, and what fsck reports, in what order, with what exit
status, and what -y repairs, is the same whatever N (verify_par.c). The
edges of the ranges the threads share out are the unit test's
(test_check_par.c); here the tool end to end, faults of several kinds in
data and parity over a filled volume."""
import os

import pytest

from conftest import FSCK, run
from dgfault import copy_of, fsck, fsck_lines, inject, make_tree


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    """A filled volume (several blocks of rows), unmounted."""
    from conftest import Volume
    tmp = tmp_path_factory.mktemp("golden-threads")
    v = Volume(tmp, ndev=4, size="64M", tag=f"fsck-threads-{os.getpid()}")
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


def test_same_report_any_threads(golden, volume_factory):
    v = copy_of(golden, volume_factory)
    damage(v)
    got = outputs(v.devs, "-n")
    rc, lines, findings = got[1]
    assert rc == 4, lines
    assert len(findings) >= 8
    for t in (2, 4):
        assert got[t] == got[1], f"threads {t} differ from 1"


def test_same_repairs_any_threads(golden, volume_factory):
    a = copy_of(golden, volume_factory)
    b = copy_of(golden, volume_factory)
    damage(a)
    damage(b)
    rca, _, pa = fsck(a.devs, "-y", "--threads", "1")
    rcb, _, pb = fsck(b.devs, "-y", "--threads", "4")
    assert rca == rcb and rca in (1, 4), pa.stdout + pa.stderr
    assert fsck_lines(pa, uuid_of(pa)) == fsck_lines(pb, uuid_of(pb))
    # What is left after the repairs, the same again.
    for t in (1, 4):
        ra, _, qa = fsck(a.devs, "-n", "--threads", str(t))
        rb, _, qb = fsck(b.devs, "-n", "--threads", str(5 - t))
        assert ra == rb, qa.stdout + qb.stdout
        assert fsck_lines(qa, uuid_of(qa)) == fsck_lines(qb, uuid_of(qb))


@pytest.mark.parametrize("bad", ["0", "17", "-1", "two", "2x", ""])
def test_threads_usage(golden, bad):
    p = run([FSCK, "-n", "--threads", bad] + golden.devs, check=False)
    assert p.returncode == 16, p.stderr
    assert "--threads" in p.stderr
