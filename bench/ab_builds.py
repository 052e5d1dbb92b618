#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A/B two daxguard builds with fio, interleaved, on the same machine.

For a change to the engine (a format change, a new write path) the
question is "did it get slower", and the only honest answer on a noisy
machine is the ratio of the two builds measured in the same run, round
after round, in alternating order. Each round formats a fresh volume
with each build (images on /dev/shm), mounts it, runs the fio jobs and
fsck -n on the filled volume, and tears it down.

  bench/ab_builds.py --a /path/to/old/build --b build --rounds 3
  bench/ab_builds.py --a old/build --b build --parity 2 --jobs seqwrite,randread

Prints a table: per job, the median MiB/s (seconds for fsck) of A and of
B and the median of the per-round ratios B/A (above 1: B is faster).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

JOBS = {
    # name: fio arguments (psync, one job, as in bench/run.py's fio group)
    "seqwrite": ["--rw=write", "--bs=1M", "--size=256M", "--time_based",
                 "--runtime={t}"],
    # Four writers, a file each (issue 20: writers must scale).
    "seqwrite-4j": ["--rw=write", "--bs=1M", "--size=64M", "--numjobs=4",
                    "--time_based", "--runtime={t}"],
    "randwrite": ["--rw=randwrite", "--bs=4k", "--size=256M",
                  "--time_based", "--runtime={t}"],
    "randwrite-4j": ["--rw=randwrite", "--bs=4k", "--size=64M",
                     "--numjobs=4", "--time_based", "--runtime={t}"],
    # As bench/run.py runs them (--fallocate=none): fio only truncates
    # the files, so the first seconds are writes into holes, each of
    # which allocates (bitmap, extent and inode pages too); the jobs
    # above lay their files out with fallocate and overwrite.
    "randwrite-sparse": ["--rw=randwrite", "--bs=4k", "--size=256M",
                         "--fallocate=none", "--time_based",
                         "--runtime={t}"],
    "randwrite-sparse-4j": ["--rw=randwrite", "--bs=4k", "--size=64M",
                            "--numjobs=4", "--fallocate=none",
                            "--time_based", "--runtime={t}"],
    "seqread": ["--rw=read", "--bs=1M", "--size=256M", "--time_based",
                "--runtime={t}"],
    "randread": ["--rw=randread", "--bs=4k", "--size=256M",
                 "--time_based", "--runtime={t}"],
    # Asynchronous O_DIRECT at queue depth 16 (the engine given last
    # wins over psync): what FUSE async direct I/O was for.
    "dio-randwrite-qd16": ["--ioengine=libaio", "--direct=1",
                           "--iodepth=16", "--rw=randwrite", "--bs=4k",
                           "--size=256M", "--time_based",
                           "--runtime={t}"],
    "dio-randread-qd16": ["--ioengine=libaio", "--direct=1",
                          "--iodepth=16", "--rw=randread", "--bs=4k",
                          "--size=256M", "--time_based", "--runtime={t}"],
}


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, **kw)


class Vol:
    def __init__(self, build, parity, ndev, size):
        tag = uuid.uuid4().hex[:8]
        self.build = Path(build).resolve()
        self.devs = [f"/dev/shm/dg-ab-{tag}-{i}.img" for i in range(ndev)]
        self.tmp = Path(tempfile.mkdtemp(prefix="dg-ab-"))
        self.mnt = self.tmp / "mnt"
        self.mnt.mkdir()
        self.parity, self.size = parity, size
        self.daemon = None

    def up(self):
        p = run([self.build / "mkfs/mkfs.daxguard", "-q", "--force",
                 "--size", self.size, "--parity", self.parity] + self.devs)
        if p.returncode:
            raise RuntimeError(f"mkfs: {p.stderr}")
        self.daemon = subprocess.Popen(
            [self.build / "fs/daemon/daxguard", ",".join(self.devs),
             self.mnt, "-f"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.ismount(self.mnt):
                return
            time.sleep(0.02)
        raise RuntimeError("mount did not come up")

    def down(self):
        if self.daemon:
            run(["fusermount3", "-u", self.mnt])
            try:
                self.daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
            self.daemon = None

    def cleanup(self):
        self.down()
        for d in self.devs:
            try:
                os.unlink(d)
            except FileNotFoundError:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)


def fio(mnt, name, runtime):
    args = [a.format(t=runtime) for a in JOBS[name]]
    # One job: one file, kept across jobs; more: a file each. A sparse
    # job's files are its own, new, so that its writes meet holes.
    one = not any(a.startswith("--numjobs") for a in args)
    stem = name if "--fallocate=none" in args else "ab"
    p = run(["fio", f"--name={stem}", f"--directory={mnt}",
             "--ioengine=psync", "--numjobs=1", "--group_reporting",
             "--output-format=json"] +
            ([f"--filename={stem}.dat"] if one else []) + args)
    if p.returncode:
        raise RuntimeError(f"fio {name}: {p.stderr}")
    j = json.loads(p.stdout)["jobs"][0]
    side = j["write"] if "write" in name else j["read"]
    return side["bw_bytes"] / 2**20


def one_round(build, a):
    v = Vol(build, a.parity, a.ndev, a.size)
    out = {}
    try:
        v.up()
        for name in a.jobs:
            out[name] = fio(v.mnt, name, a.runtime)
        v.down()
        t0 = time.monotonic()
        p = run([Path(build) / "fsck/fsck.daxguard", "-n"] + v.devs)
        out["fsck-n (s)"] = time.monotonic() - t0
        if p.returncode:
            raise RuntimeError(f"fsck -n exit {p.returncode}: {p.stdout}")
    finally:
        v.cleanup()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--a", required=True, help="build directory A (base)")
    ap.add_argument("--b", required=True, help="build directory B (new)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=6, help="seconds a job")
    ap.add_argument("--parity", type=int, default=1)
    ap.add_argument("--ndev", type=int, default=4)
    ap.add_argument("--size", default="1G")
    ap.add_argument("--jobs", default=",".join(JOBS))
    a = ap.parse_args()
    a.jobs = a.jobs.split(",")
    res = {"A": [], "B": []}
    for r in range(a.rounds):
        order = ["A", "B"] if r % 2 == 0 else ["B", "A"]
        for side in order:
            res[side].append(one_round(a.a if side == "A" else a.b, a))
            print(f"round {r + 1} {side}: " + ", ".join(
                f"{k} {v:.2f}" for k, v in res[side][-1].items()),
                file=sys.stderr)
    keys = list(res["A"][0])
    print(f"| job | A median | B median | B/A (median of rounds) |")
    print("|---|---|---|---|")
    for k in keys:
        ra = [x[k] for x in res["A"]]
        rb = [x[k] for x in res["B"]]
        ratios = [y / x for x, y in zip(ra, rb)]
        print(f"| {k} | {statistics.median(ra):.1f} | "
              f"{statistics.median(rb):.1f} | "
              f"{statistics.median(ratios):.2f} "
              f"[{min(ratios):.2f}-{max(ratios):.2f}] |")


if __name__ == "__main__":
    main()
