# SPDX-License-Identifier: MIT
"""Lost, stale, zeroed and misdirected writes as a device's firmware
would make them (issue 15), written into the images from the outside
and checked by what a user sees (tests/e2e/firmware.py has the model).

Within parity every trial must end OK: every file gives exactly its
current bytes, size, name and xattrs at the first mount and after
fsck -y (exit 0 or 1) and fsck -n (exit 0). Beyond parity a file may
give EIO and fsck -y may give data up (exit 4, damaged files named,
a second fsck -y finds nothing), but nothing may ever read back wrong.

Three populated base volumes per parity (4 devices with parity 1, 5
with parity 2), built once; every trial copies the images of one of
them. DG_LOSTWRITE_TRIALS (default 16) trials per kind and parity;
DG_LOSTWRITE_SEED picks the bases and the trial seeds;
DG_LOSTWRITE_JOBS trials run at a time (at most one per base: copies of
a base share its volume UUID). Each failure prints the command that
reproduces it. The long run is `bench/campaign.py lostwrite`."""
import os
from collections import Counter

import pytest

import firmware as fw

TRIALS = int(os.environ.get("DG_LOSTWRITE_TRIALS", "16"))
SEED = int(os.environ.get("DG_LOSTWRITE_SEED", "1"))
JOBS = int(os.environ.get("DG_LOSTWRITE_JOBS", "3"))

# lost2 under parity 1 and lost3 under parity 2 are beyond parity. The
# allocation-state kinds (issue 34) split between the parities here;
# bench/campaign.py lostwrite runs each under both.
KINDS = {1: ["lost", "older", "stale", "window", "zero", "misdirect",
             "misdirect-old", "lost2", "alloc-lost", "garbage"],
         2: ["lost", "older", "stale", "window", "zero", "zero2",
             "misdirect", "misdirect-old", "lost2", "lost3", "alloc-zero",
             "alloc-misdirect"]}


BASES = 3


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """bases(parity): the populated volumes for that parity, built once;
    their images are removed at the end of the module."""
    made = {}

    def get(parity):
        if parity not in made:
            made[parity] = []
            for i in range(BASES):
                b = fw.Base(tmp_path_factory.mktemp(f"lw-p{parity}"),
                            parity=parity, seed=SEED + i)
                made[parity].append(b)
                b.build()
        if any(b.want is None for b in made[parity]):
            pytest.fail(f"a parity {parity} base volume failed to build")
        return made[parity]

    yield get
    for bs in made.values():
        for b in bs:
            b.cleanup()


@pytest.mark.parametrize("parity,kind", [(p, k) for p in KINDS
                                         for k in KINDS[p]])
def test_lost_writes(bases, tmp_path, parity, kind):
    bs = bases(parity)
    res = fw.campaign(bs, [kind], TRIALS, SEED, tmp_path, jobs=JOBS)
    counts = Counter(r["outcome"] for r in res)
    bad = [r for r in res if fw.failed(r)]
    bad.sort(key=lambda r: fw.OUTCOMES.index(r["outcome"]))
    within = fw.within_parity(kind, parity)
    msg = (f"{kind} under parity {parity} "
           f"({'within' if within else 'beyond'} parity): {len(res)} trials,"
           f" {dict(counts)}; {len(bad)} against the rules\n"
           + "".join(f"base {b.seed}: {b.summary()}\n" for b in bs) + "\n"
           + "\n".join(fw.report(r) for r in bad[:8])
           + (f"\n... and {len(bad) - 8} more" if len(bad) > 8 else ""))
    print(msg)
    assert len(res) == TRIALS
    assert counts["WRONG_BYTES"] == 0, msg
    assert counts["CRASH"] == 0, msg
    if within:
        assert not bad, msg
        return
    # Beyond parity: never a wrong byte and never a crash (above), and
    # one fsck -y gives up and names what is lost, exits 4 and leaves
    # nothing new for the next (no FSCK_EXIT, no NOT_CONVERGED). A
    # volume may still be refused (MOUNT_REFUSED) where more devices
    # lost writes than the checksum copies can arbitrate, or where its
    # root is beyond parity (docs/integrity.md, "Limits"): those trials
    # show as an expected failure with their counts; with none, it
    # passes.
    assert all(r["outcome"] == "MOUNT_REFUSED" for r in bad), msg
    if bad:
        pytest.xfail("beyond parity, refused: "
                     + ", ".join(f"{k} {v}" for k, v in counts.items()))
