#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""CPU per operation, whole machine and the daemon's, of fio jobs on
daxguard and on passthrough_ll, interleaved.

On this two-core machine the four-writer jobs keep both cores busy
(92-97% in every run), so a system's throughput is the machine's CPU
divided by what one operation costs: fio's side, the kernel's FUSE round
trip and the daemon's work. Throughput alone moves by 20% from run to
run here; the CPU an operation costs, and how it splits between the
daemon and the rest, says where a gap between two systems is (docs/
design.md, "What is left of the throughput targets").

  bench/cpu_per_op.py --build build --systems none,p1,passthrough --jobs rand-4j,seq-4j --reps 5

Each repetition formats fresh images on /dev/shm (4 x 1 GiB), mounts,
runs the job for --runtime seconds, and reads /proc/stat and the
daemon's /proc/PID/stat around it. Prints, per job and system, the
medians of ops/s (MiB/s for sequential jobs), busy %, CPU microseconds
per operation and the daemon's share of them.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dgbench.systems import build_passthrough  # noqa: E402

PT_SRC = "/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c"
MKFS = {"none": ["--redundancy", "none"], "p1": ["--parity", "1"],
        "p2": ["--parity", "2"],
        "lean": ["--parity", "1", "--lean-journal"],
        "remap": ["--parity", "1", "--remap"]}
# name: (fio arguments, lay the files out first with 1 MiB writes)
JOBS = {
    # As bench/run.py runs it: fresh files, so the first pass fills holes.
    "rand-4j": (["--rw=randwrite", "--bs=4k", "--numjobs=4",
                 "--fallocate=none"], False),
    # The same over files laid out: overwrites only.
    "rand-4j-laid": (["--rw=randwrite", "--bs=4k", "--numjobs=4",
                      "--fallocate=none"], True),
    "seq-4j": (["--rw=write", "--bs=1M", "--numjobs=4",
                "--fallocate=none", "--end_fsync=1"], False),
}


def cpu_ticks():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(f), f[3] + f[4]        # total, idle + iowait


def proc_ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])    # utime + stime


def run_one(a, system, job, work):
    imgs = [work / f"d{i}.img" for i in range(4)]
    mnt = work / "mnt"
    mnt.mkdir()
    if system == "passthrough":
        src = work / "src"
        src.mkdir()
        cmd = [build_passthrough(str(work.parent), PT_SRC), "-f", "-o",
               f"source={src}", str(mnt)]
    else:
        for p in imgs:
            with open(p, "wb") as f:
                f.truncate(1 << 30)
        subprocess.run([a.build / "mkfs/mkfs.daxguard", "-q", "--force",
                        *MKFS[system], *imgs], check=True)
        cmd = [a.build / "fs/daemon/daxguard", ",".join(map(str, imgs)),
               mnt, "-f"]
    d = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not os.path.ismount(mnt):
            if time.monotonic() > deadline or d.poll() is not None:
                raise RuntimeError(f"{system}: mount did not come up")
            time.sleep(0.05)
        fio = ["fio", "--name=j", f"--directory={mnt}", "--size=64M",
               "--ioengine=psync", "--group_reporting",
               "--output-format=json"]
        args, laid = JOBS[job]
        if laid:
            subprocess.run(fio[:-1] + ["--rw=write", "--bs=1M",
                                       "--numjobs=4"],
                           check=True, stdout=subprocess.DEVNULL)
        t0, i0 = cpu_ticks()
        d0 = proc_ticks(d.pid)
        out = subprocess.run(fio + args + [f"--runtime={a.runtime}",
                                           "--time_based"],
                             check=True, capture_output=True, text=True)
        t1, i1 = cpu_ticks()
        d1 = proc_ticks(d.pid)
    finally:
        subprocess.run(["fusermount3", "-u", mnt], check=False)
        try:
            d.wait(timeout=60)
        except subprocess.TimeoutExpired:
            d.kill()
            d.wait()
    js = out.stdout[out.stdout.find("{"):]
    w = json.loads(js)["jobs"][0]["write"]
    ops = w["total_ios"]
    hz = os.sysconf("SC_CLK_TCK")
    busy = (t1 - t0) - (i1 - i0)
    return {"rate": (w["bw_bytes"] / (1 << 20)) if "seq" in job
            else w["iops"],
            "busy": 100.0 * busy / (t1 - t0),
            "us_op": busy / hz * 1e6 / ops,
            "daemon_us_op": (d1 - d0) / hz * 1e6 / ops}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", type=Path)
    ap.add_argument("--systems", default="none,p1,passthrough")
    ap.add_argument("--jobs", default="rand-4j,rand-4j-laid,seq-4j")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=8)
    a = ap.parse_args()
    a.build = a.build.resolve()
    systems, jobs = a.systems.split(","), a.jobs.split(",")
    for s in systems:
        if s != "passthrough" and s not in MKFS:
            ap.error(f"unknown system {s}")
    for j in jobs:
        if j not in JOBS:
            ap.error(f"unknown job {j}")
    res = {(j, s): [] for j in jobs for s in systems}
    top = Path(tempfile.mkdtemp(prefix="dg-cpuop-", dir="/dev/shm"))
    try:
        for rep in range(a.reps):
            for j in jobs:
                # Rotated each repetition, as bench/run.py does.
                k = rep % len(systems)
                for s in systems[k:] + systems[:k]:
                    work = top / f"{j}-{s}-{rep}"
                    work.mkdir()
                    r = run_one(a, s, j, work)
                    shutil.rmtree(work, ignore_errors=True)
                    res[(j, s)].append(r)
                    print(f"rep {rep + 1} {j} {s}: {r['rate']:,.0f} "
                          f"{r['busy']:.0f}% busy, {r['us_op']:.2f} us "
                          f"an op ({r['daemon_us_op']:.2f} daemon)",
                          flush=True)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print("\n| job | system | rate (median) | busy | CPU us an op | "
          "daemon us an op | rest us an op |")
    print("|---|---|---|---|---|---|---|")
    for j in jobs:
        for s in systems:
            m = {k: statistics.median(r[k] for r in res[(j, s)])
                 for k in res[(j, s)][0]}
            unit = "MiB/s" if "seq" in j else "ops/s"
            print(f"| {j} | {s} | {m['rate']:,.0f} {unit} | "
                  f"{m['busy']:.0f}% | {m['us_op']:.2f} | "
                  f"{m['daemon_us_op']:.2f} | "
                  f"{m['us_op'] - m['daemon_us_op']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
