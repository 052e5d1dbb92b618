#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Issue 19: a sync of 4,096 scattered dirty pages, whole stack against
whole stack. Each build formats its own volume (its mkfs, so two
builds of different on-media formats compare), mounts it with its own
daemon, and runs its own `sync_latency` (linked to its own libcommit)
on a 1 GiB map: what a program gets from one build against another,
client library and daemon together, where escalation.py compares the
two tracking modes of one build and `--base-daemon` daemons of one
format.

Per repetition the builds run in turn on fresh 4 x 4 GiB sparse images
on /dev/shm (parity 1); the report is each repetition's ratio A / B of
the median round (the stores, which pay for write tracking, plus the
sync) and of the median sync alone (> 1: B is faster). The base build's
`sync_latency` must print `round_median_us` (bench/libcommit/
sync_latency.c of this tree builds in an older checkout). Always
unmounts and deletes its images.

usage: stack_ab.py --a BUILD --b BUILD [--reps 5] [--rounds 15]
                   [--out FILE.json]
"""
import argparse
import json
import statistics
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_kernels import DG_SIZE, DgVol, kv_parse, log, run  # noqa: E402

MAP_MIB = 1024
NDIRTY = 4096


def one_run(build, work, tag, rounds):
    """sync_latency's result line of one build on a volume of its own."""
    vol = DgVol(work, tag, "v")
    try:
        run([build / "mkfs" / "mkfs.daxguard", "-q", "--force", "--size",
             DG_SIZE] + vol.devs)
        vol.mount(build / "fs" / "daemon" / "daxguard")
        f = vol.mnt / "big"
        f.touch()
        p = run([build / "bench" / "libcommit" / "sync_latency", f, MAP_MIB,
                 rounds, NDIRTY], timeout=600)
        line = [l for l in p.stdout.splitlines() if l.startswith("dirty=")]
        res = {k: float(v) for k, v in kv_parse(line[0]).items()}
        if "round_median_us" not in res:
            raise RuntimeError(f"{build}: sync_latency has no round_median_us")
        return res
    finally:
        vol.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, type=Path, help="base build dir")
    ap.add_argument("--b", required=True, type=Path, help="new build dir")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out")
    args = ap.parse_args()
    work = Path("/dev/shm") / f"dglcstack-{uuid.uuid4().hex[:8]}"
    work.mkdir()
    reps = []
    try:
        for rep in range(args.reps):
            got = {}
            for name in ("a", "b"):
                got[name] = one_run(getattr(args, name).resolve(), work,
                                    f"{work.name}-{name}", args.rounds)
            r = {
                "a": got["a"], "b": got["b"],
                "round_a_over_b": got["a"]["round_median_us"]
                / got["b"]["round_median_us"],
                "sync_a_over_b": got["a"]["median_us"]
                / got["b"]["median_us"],
            }
            reps.append(r)
            log(f"rep {rep}: round A {got['a']['round_median_us']:.0f} us, "
                f"B {got['b']['round_median_us']:.0f} us "
                f"(A/B {r['round_a_over_b']:.2f}); sync A "
                f"{got['a']['median_us']:.0f} us, B "
                f"{got['b']['median_us']:.0f} us "
                f"(A/B {r['sync_a_over_b']:.2f})")
    finally:
        run(["rm", "-rf", work], check=False)
    summ = {}
    for k in ("round_a_over_b", "sync_a_over_b"):
        v = [r[k] for r in reps]
        summ[k] = {"median": statistics.median(v), "min": min(v),
                   "max": max(v)}
    print(json.dumps(summ, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(
            {"a": str(args.a), "b": str(args.b), "reps": reps,
             "summary": summ}, indent=1) + "\n")


if __name__ == "__main__":
    main()
