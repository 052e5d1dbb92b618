#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Scrub throughput next to btrfs scrub on the same data, and what a
running scrub costs a foreground fio job, limited and not (issue 17).

Run as root from the source tree, after building:

    /usr/bin/python3 bench/online/scrub_bench.py [--data-mib 1024]
        [--fio-secs 10] [--rate 100] [--reps 3] [--out DIR]

Every figure is measured in this run: daxguard's and btrfs's scrubs of
the same files (same sizes, same random bytes) on 4 images in /dev/shm
each, and the fio job alone, beside an unlimited scrub and beside a
scrub held to --rate MB/s, interleaved over --reps repetitions. Ratios
are to the baseline of the same run. Writes results.json (raw records)
and prints a Markdown table. btrfs is skipped, with the reason, when
mkfs.btrfs or loop devices are missing.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def sh(cmd, check=True, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       **kw)
    if check and p.returncode:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {p.returncode}"
                           f"\n{p.stdout}\n{p.stderr}")
    return p


def data_files(mib, seed):
    """(name, generator of 1 MiB chunks) of mib MiB in 64 MiB files: the
    same bytes for every system, and again for a read-back check."""
    import random
    rng = random.Random(seed)
    for i in range((mib + 63) // 64):
        n = min(64, mib - 64 * i)
        yield f"f{i}", (rng.randbytes(1 << 20) for _ in range(n))


def write_data(mnt, mib, seed):
    """mib MiB of random bytes (data_files()). Synced."""
    for name, chunks in data_files(mib, seed):
        with open(Path(mnt) / name, "wb") as f:
            for c in chunks:
                f.write(c)
    os.sync()


class Daxguard:
    name = "daxguard-p1"

    def __init__(self, build, size_mib, tmp):
        self.build = Path(build)
        tag = uuid.uuid4().hex[:8]
        self.devs = [Path(f"/dev/shm/dg-bench-online-{tag}-{i}.img")
                     for i in range(4)]
        self.size = size_mib
        self.mnt = Path(tmp) / "dg"
        self.mnt.mkdir(parents=True, exist_ok=True)
        self.daemon = None
        self.log = Path(tmp) / "dg.log"

    def ctl(self, *args, check=True):
        return sh([self.build / "fs/ctl/daxguard-ctl", self.mnt] + list(args),
                  check=check)

    def setup(self):
        sh([self.build / "mkfs/mkfs.daxguard", "-q", "--force", "--size",
            f"{self.size}M", "--parity", "1"] + self.devs)
        self.mount()

    def mount(self):
        self.daemon = subprocess.Popen(
            [str(self.build / "fs/daemon/daxguard"),
             ",".join(map(str, self.devs)), str(self.mnt), "-f",
             "-o", f"log={self.log}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while not os.path.ismount(self.mnt):
            if time.time() > deadline or self.daemon.poll() is not None:
                raise RuntimeError("daxguard did not mount")
            time.sleep(0.05)

    def scrub(self):
        """Seconds of one whole scrub, as the client waits for it."""
        t0 = time.monotonic()
        p = self.ctl("scrub", "start", "-w", "--json")
        took = time.monotonic() - t0
        st = json.loads(p.stdout)
        assert st["state"] == "finished" and st["unrecoverable"] == 0, st
        return took, st

    def umount(self):
        """Unmount and wait for the daemon: it writes its state at exit."""
        if self.daemon:
            sh(["fusermount3", "-u", "-z", self.mnt], check=False)
            try:
                self.daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
            self.daemon = None

    def teardown(self):
        self.umount()
        for d in self.devs:
            d.unlink(missing_ok=True)


class Btrfs:
    name = "btrfs-raid5"

    def __init__(self, size_mib, tmp, meta="raid1"):
        tag = uuid.uuid4().hex[:8]
        self.imgs = [Path(f"/dev/shm/btrfs-bench-online-{tag}-{i}.img")
                     for i in range(4)]
        self.meta = meta
        self.size = size_mib
        self.mnt = Path(tmp) / "btrfs"
        self.mnt.mkdir(parents=True, exist_ok=True)
        self.loops = []
        self.mounted = False

    @staticmethod
    def missing():
        for t in ("mkfs.btrfs", "btrfs", "losetup"):
            if not shutil.which(t):
                return f"{t} not installed (apt-get install btrfs-progs)"
        if not os.path.exists("/dev/loop-control"):
            return "no loop devices"
        return None

    def setup(self):
        for img in self.imgs:
            with open(img, "wb") as f:
                f.truncate(self.size << 20)
            self.loops.append(sh(["losetup", "-f", "--show", img])
                              .stdout.strip())
        sh(["mkfs.btrfs", "-q", "-f", "-d", "raid5", "-m", self.meta,
            "--csum", "xxhash"] + self.loops)
        sh(["mount", self.loops[0], self.mnt])
        self.mounted = True

    def scrub(self):
        t0 = time.monotonic()
        p = sh(["btrfs", "scrub", "start", "-B", "-R", self.mnt])
        took = time.monotonic() - t0
        return took, p.stdout

    def teardown(self):
        if self.mounted:
            sh(["umount", "-l", self.mnt], check=False)
        for lo in self.loops:
            sh(["losetup", "-d", lo], check=False)
        for img in self.imgs:
            img.unlink(missing_ok=True)


def fio_job(mnt, secs, log):
    """4 KiB random reads and writes (70/30), psync, one job, on a 256 MiB
    file: IOPS."""
    p = sh(["fio", "--name=fg", f"--directory={mnt}", "--size=256M",
            "--rw=randrw", "--rwmixread=70", "--bs=4k", "--ioengine=psync",
            "--time_based", f"--runtime={secs}", "--output-format=json",
            "--group_reporting"])
    log.write(p.stdout)
    j = json.loads(p.stdout)["jobs"][0]
    return j["read"]["iops"] + j["write"]["iops"]


def scrub_beside(dg, secs, rate, fn):
    """Run fn() while scrubs (rate MB/s, 0: unlimited) run back to back;
    returns fn()'s result and the scrubs' verified bytes per second."""
    import threading
    stop = threading.Event()
    verified = []

    def loop():
        while not stop.is_set():
            args = ["scrub", "start"] + (["--rate", str(rate)] if rate else [])
            dg.ctl(*args)
            while not stop.is_set():
                st = json.loads(dg.ctl("scrub", "status", "--json").stdout)
                if st["state"] != "running":
                    break
                time.sleep(0.5)
            st = json.loads(dg.ctl("scrub", "status", "--json").stdout)
            if st["state"] == "running":
                dg.ctl("scrub", "cancel", check=False)
                st = json.loads(dg.ctl("scrub", "status", "--json").stdout)
            verified.append(st["rate_bytes_per_s"])

    th = threading.Thread(target=loop)
    th.start()
    try:
        res = fn()
    finally:
        stop.set()
        th.join()
    return res, statistics.mean(verified) if verified else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=str(ROOT / "build"))
    ap.add_argument("--data-mib", type=int, default=1024)
    ap.add_argument("--fio-secs", type=int, default=10)
    ap.add_argument("--rate", type=float, default=100,
                    help="MB/s of the rate-limited scrub")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = Path(a.out or ROOT / "bench/results" /
               time.strftime("online-%Y%m%d-%H%M%S"))
    out.mkdir(parents=True, exist_ok=True)
    # Room for the data on 3 data devices, plus slack for metadata.
    size = max(256, (a.data_mib * 2) // 3 + 128)
    rec = {"data_mib": a.data_mib, "image_mib": size, "reps": a.reps,
           "rate_mb": a.rate, "fio_secs": a.fio_secs, "nproc": os.cpu_count(),
           "scrub": [], "fio": [], "skipped": {}}
    log = open(out / "fio.log", "w")
    dg = Daxguard(a.build_dir, size, out)
    why = Btrfs.missing()
    bt = None if why else Btrfs(size, out)
    if why:
        rec["skipped"]["btrfs-raid5"] = why
    try:
        dg.setup()
        write_data(dg.mnt, a.data_mib, 1)
        if bt:
            bt.setup()
            write_data(bt.mnt, a.data_mib, 1)
        for r in range(a.reps):
            took, st = dg.scrub()
            rec["scrub"].append({"system": dg.name, "rep": r, "secs": took,
                                 "verified_bytes": st["bytes_verified"],
                                 "run_ms": st["run_ms"]})
            if bt:
                took, raw = bt.scrub()
                rec["scrub"].append({"system": bt.name, "rep": r,
                                     "secs": took, "raw": raw})
        for r in range(a.reps):
            for mode in ("alone", "scrub", "scrub-rate"):
                if mode == "alone":
                    iops, srate = fio_job(dg.mnt, a.fio_secs, log), 0
                else:
                    iops, srate = scrub_beside(
                        dg, a.fio_secs, a.rate if mode == "scrub-rate" else 0,
                        lambda: fio_job(dg.mnt, a.fio_secs, log))
                rec["fio"].append({"mode": mode, "rep": r, "iops": iops,
                                   "scrub_bytes_per_s": srate})
    finally:
        dg.teardown()
        if bt:
            bt.teardown()
        (out / "results.json").write_text(json.dumps(rec, indent=1))
    report(rec, out)


def report(rec, out):
    lines = [f"# Scrub ({rec['data_mib']} MiB of file data, 4 images of "
             f"{rec['image_mib']} MiB, {rec['reps']} reps, "
             f"{rec['nproc']} CPUs)", "",
             "| system | scrub s (median) | data GB/s | vs btrfs |",
             "|---|---|---|---|"]
    med = {}
    for s in sorted({x["system"] for x in rec["scrub"]}):
        med[s] = statistics.median(x["secs"] for x in rec["scrub"]
                                   if x["system"] == s)
    data = rec["data_mib"] * (1 << 20)
    for s, t in med.items():
        vs = (f"{med['btrfs-raid5'] / t:.2f}x" if "btrfs-raid5" in med
              else "-")
        lines.append(f"| {s} | {t:.2f} | {data / t / 1e9:.2f} | {vs} |")
    for s, why in rec["skipped"].items():
        lines.append(f"| {s} | skipped: {why} | | |")
    lines += ["", f"# A 4 KiB randrw fio job ({rec['fio_secs']} s) beside a "
              "scrub", "", "| mode | IOPS (median) | vs alone | scrub MB/s |",
              "|---|---|---|---|"]
    base = statistics.median(x["iops"] for x in rec["fio"]
                             if x["mode"] == "alone")
    for m in ("alone", "scrub", "scrub-rate"):
        xs = [x for x in rec["fio"] if x["mode"] == m]
        iops = statistics.median(x["iops"] for x in xs)
        sr = statistics.median(x["scrub_bytes_per_s"] for x in xs) / 1e6
        name = (f"scrub at --rate {rec['rate_mb']:g}" if m == "scrub-rate"
                else m)
        lines.append(f"| {name} | {iops:.0f} | {iops / base:.3f} | "
                     f"{sr:.0f} |")
    text = "\n".join(lines) + "\n"
    (out / "results.md").write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
