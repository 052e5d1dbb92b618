#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/wb_batch.py -- -o writeback with the daemon's write-back hold
(fs/daemon/wb_hold.c), against the same mode without the hold (an older
build, --old-build), without the raised bdi limit (bdi_ratio=0), and
libfuse's passthrough_ll with -o writeback over /dev/shm (the last two
also with the bdi limit raised as bdi_ratio=20 does, from sysfs): fio 4 KiB
random writes and 1 MiB sequential writes, 1 and 4 jobs, each with a
final fsync. Runs are interleaved (round after round over all systems),
so that a shared machine's drift falls on all of them alike. For
daxguard it also records what the media did per job (status --json
deltas): bytes stored per byte written, fences per write request, and
the hold's batches.

usage: sudo bench/wb_batch.py OUTDIR [--build build] [--old-build DIR]
        [--rounds 3] [--runtime 6] [--size 1G]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dgbench.systems import build_passthrough, Passthrough  # noqa: E402

JOBS = [
    ("randwrite-4k-1j", "randwrite", "4k", 1),
    ("randwrite-4k-4j", "randwrite", "4k", 4),
    ("seqwrite-1m-1j", "write", "1m", 1),
    ("seqwrite-1m-4j", "write", "1m", 4),
]


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, check=True, **kw)


def mounted(mnt):
    with open("/proc/mounts") as f:
        return any(line.split()[1] == mnt for line in f)


def wait_mount(mnt, proc):
    deadline = time.time() + 20
    while not mounted(mnt):
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"mount of {mnt} failed")
        time.sleep(0.05)


def umount(mnt, proc):
    subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def tune_bdi(mnt, ratio=20):
    """What -o bdi_ratio=20 does, for a system that cannot do it itself."""
    with open("/proc/self/mountinfo") as f:
        dev = [x.split()[2] for x in f if x.split()[4] == mnt][-1]
    with open(f"/sys/class/bdi/{dev}/max_ratio", "w") as f:
        f.write(str(ratio))
    with open(f"/sys/class/bdi/{dev}/strict_limit", "w") as f:
        f.write("0")


class Dg:
    def __init__(self, name, build, opts, work, size, bdi=False):
        self.name, self.build, self.opts = name, build, opts
        self.bdi = bdi
        self.devs = [f"/dev/shm/wbb-{name}-{i}.img" for i in range(4)]
        self.mnt = os.path.join(work, name)
        self.size = size
        os.makedirs(self.mnt, exist_ok=True)

    def start(self):
        run([f"{self.build}/mkfs/mkfs.daxguard", "-q", "--force", "--size",
             self.size] + self.devs)
        self.proc = subprocess.Popen(
            [f"{self.build}/fs/daemon/daxguard", ",".join(self.devs),
             self.mnt, "-f", "-o", ",".join(self.opts)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_mount(self.mnt, self.proc)
        if self.bdi:
            tune_bdi(self.mnt)

    def status(self):
        p = run([f"{self.build}/fs/ctl/daxguard-ctl", self.mnt, "status",
                 "--json"])
        return json.loads(p.stdout)

    def stop(self):
        umount(self.mnt, self.proc)
        for d in self.devs:
            os.unlink(d)


class Pt:
    def __init__(self, name, binary, work, bdi=False):
        self.name, self.binary = name, binary
        self.bdi = bdi
        self.mnt = os.path.join(work, name)
        self.src = f"/dev/shm/wbb-{name}-src"
        os.makedirs(self.mnt, exist_ok=True)

    def start(self):
        os.makedirs(self.src, exist_ok=True)
        self.proc = subprocess.Popen(
            [self.binary, "-f", "-o", f"source={self.src},writeback",
             self.mnt], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_mount(self.mnt, self.proc)
        if self.bdi:
            tune_bdi(self.mnt)

    def status(self):
        return None

    def stop(self):
        umount(self.mnt, self.proc)
        shutil.rmtree(self.src, ignore_errors=True)


def bdi_of(mnt):
    with open("/proc/self/mountinfo") as f:
        for line in f:
            x = line.split()
            if x[4] == mnt:
                dev = x[2]
    out = {}
    for k in ("max_ratio", "strict_limit", "max_bytes"):
        try:
            with open(f"/sys/class/bdi/{dev}/{k}") as f:
                out[k] = f.read().strip()
        except OSError:
            pass
    return out


def fio(mnt, rw, bs, jobs, runtime, size):
    p = run(["fio", "--name=wb", f"--directory={mnt}", f"--rw={rw}",
             f"--bs={bs}", f"--numjobs={jobs}", f"--size={size}",
             "--ioengine=psync", "--end_fsync=1", "--time_based",
             f"--runtime={runtime}", "--group_reporting",
             "--output-format=json"], timeout=runtime * 10 + 120)
    j = json.loads(p.stdout)["jobs"][0]["write"]
    return {"bw_mib_s": j["bw_bytes"] / 2**20, "iops": j["iops"]}


def media_delta(a, b):
    if a is None:
        return None
    ma, mb = a["media"], b["media"]
    d = {k: mb[k] - ma[k] for k in ("bytes_stored", "fences", "writes",
                                     "bytes_written")}
    wa, wb = a.get("writeback", {}), b.get("writeback", {})
    for k in ("batches_committed", "writes_held", "bytes_committed"):
        if k in wb:
            d[k] = wb[k] - wa.get(k, 0)
    if "held_peak_bytes" in wb:
        d["held_peak_bytes"] = wb["held_peak_bytes"]
    if d["bytes_written"]:
        d["stored_per_written"] = d["bytes_stored"] / d["bytes_written"]
    if d["writes"]:
        d["fences_per_write"] = d["fences"] / d["writes"]
    for k in ("rows_written_whole", "rows_patched",
              "rows_written_before_journal"):
        if k in b:
            d[k] = b[k] - a[k]
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--build", default="build")
    ap.add_argument("--old-build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=6)
    ap.add_argument("--size", default="1G", help="per device image")
    ap.add_argument("--file-size", default="128M", help="fio per job")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    work = f"/tmp/wbb-{os.getpid()}"
    os.makedirs(work)
    build = os.path.abspath(a.build)
    systems = [Dg("dg-hold", build, ["writeback", "wb_max=64M"], work,
                  a.size),
               Dg("dg-hold-bdi0", build,
                  ["writeback", "wb_max=64M", "bdi_ratio=0"], work, a.size)]
    if a.old_build:
        old = os.path.abspath(a.old_build)
        systems.append(Dg("dg-nohold", old, ["writeback"], work, a.size))
        # The same limit as dg-hold's default, set from here: what the
        # hold itself changes.
        systems.append(Dg("dg-nohold-bdi20", old, ["writeback"], work,
                          a.size, bdi=True))
    pt = build_passthrough(os.path.join(work, "bin"), Passthrough.SRC)
    systems.append(Pt("passthrough-wb", pt, work))
    systems.append(Pt("passthrough-wb-bdi20", pt, work, bdi=True))
    res = []
    try:
        for rnd in range(a.rounds):
            for s in systems:
                s.start()
                bdi = bdi_of(s.mnt)
                for name, rw, bs, jobs in JOBS:
                    with open("/proc/loadavg") as f:
                        load = f.read().split()[0]
                    st0 = s.status()
                    r = fio(s.mnt, rw, bs, jobs, a.runtime, a.file_size)
                    st1 = s.status()
                    for fn in os.listdir(s.mnt):
                        os.unlink(os.path.join(s.mnt, fn))
                    rec = {"round": rnd, "system": s.name, "job": name,
                           "load1": float(load), "bdi": bdi, **r,
                           "media": media_delta(st0, st1)}
                    res.append(rec)
                    print(json.dumps(rec), flush=True)
                s.stop()
    finally:
        for s in systems:
            if getattr(s, "proc", None) and s.proc.poll() is None:
                s.stop()
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
