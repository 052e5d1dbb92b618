#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Issue 6 "Measure": the PMO kernels on libcommit vs mmap+msync, the
64-byte random-store workload with and without redundancy, and a kvstore
check. Sets up every volume itself (images on /dev/shm), interleaves the
configurations within each repetition, reports ratios measured in the same
repetition (median and min-max), and always tears everything down.

usage: run_kernels.py --out DIR [--reps 3] [--quick] [--skip-kernels]
                      [--skip-random] [--skip-kv]
Needs root (losetup, mount), fuse3 and btrfs-progs. See README.md.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("DG_BUILD_DIR", ROOT / "build")).resolve()
MKFS = BUILD / "mkfs" / "mkfs.daxguard"
DAEMON = BUILD / "fs" / "daemon" / "daxguard"
KERN = BUILD / "bench" / "libcommit" / "pmo_kernels"
RSTORE = BUILD / "bench" / "libcommit" / "random_store"
KV = BUILD / "bench" / "libcommit" / "kvstore"

# n and passes per kernel: about 2 s per run on tmpfs (a 2-core VM).
KERNELS = {"lu": (1024, 8), "conv": (1024, 5), "mm": (1024, 4)}
RATES = [1, 4, 10]
THREADS = [1, 2]
MODES = ["lib", "tmpfs", "fuse", "btrfs"]
# Kernel volume devices: 4 GiB each (sparse on /dev/shm) so the journal is
# 64 MiB and one sync carries ~32 MiB: the whole 24 MiB map at n = 1024
# fits in one atomic commit_sync(), which pmo_kernels requires.
DG_SIZE = "4G"
BTRFS_SIZE = 1 << 30


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def run(cmd, timeout=300, check=True):
    p = subprocess.run([str(c) for c in cmd], capture_output=True,
                       text=True, timeout=timeout)
    if check and p.returncode:
        raise RuntimeError(f"failed ({p.returncode}): {' '.join(map(str, cmd))}"
                           f"\n{p.stdout}{p.stderr}")
    return p


def mounted(mnt):
    mnt = os.path.realpath(mnt)
    with open("/proc/mounts") as f:
        return any(line.split()[1] == mnt for line in f)


def kv_parse(line):
    return dict(w.split("=", 1) for w in line.split() if "=" in w)


class DgVol:
    def __init__(self, work, tag, name, redundancy=None, logdir=None):
        self.devs = [Path(f"/dev/shm/dglcbench-{tag}-{name}{i}.img")
                     for i in range(4)]
        self.mnt = work / name
        self.logf = (logdir or work) / f"daemon-{name}.log"
        self.redundancy = redundancy
        self.proc = None

    def mkfs(self):
        cmd = [MKFS, "-q", "--force", "--size", DG_SIZE]
        if self.redundancy:
            cmd += ["--redundancy", self.redundancy]
        run(cmd + self.devs)

    def mount(self, daemon=None):
        self.mnt.mkdir(parents=True, exist_ok=True)
        lf = open(self.logf, "a")
        self.proc = subprocess.Popen(
            [str(daemon or DAEMON), ",".join(map(str, self.devs)),
             str(self.mnt), "-f"],
            stdout=lf, stderr=subprocess.STDOUT)
        lf.close()
        end = time.time() + 15
        while not mounted(self.mnt):
            if self.proc.poll() is not None or time.time() > end:
                raise RuntimeError(f"mount of {self.mnt} failed, see {self.logf}")
            time.sleep(0.05)

    def umount(self):
        if self.proc is None:
            return
        subprocess.run(["fusermount3", "-u", "-z", str(self.mnt)],
                       capture_output=True)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def cleanup(self):
        self.umount()
        for d in self.devs:
            d.unlink(missing_ok=True)


class Btrfs:
    def __init__(self, work, tag):
        self.imgs = [Path(f"/dev/shm/dglcbench-{tag}-btrfs{i}.img")
                     for i in range(4)]
        self.loops = []
        self.mnt = work / "btrfs"
        self.is_mounted = False

    def setup(self):
        for img in self.imgs:
            with open(img, "wb") as f:
                f.truncate(BTRFS_SIZE)
            self.loops.append(run(["losetup", "-f", "--show", img])
                              .stdout.strip())
        run(["mkfs.btrfs", "-q", "-f", "-d", "raid5", "-m", "raid1",
             "--csum", "xxhash"] + self.loops)
        self.mnt.mkdir(parents=True, exist_ok=True)
        run(["mount", "-t", "btrfs", self.loops[0], self.mnt])
        self.is_mounted = True

    def cleanup(self):
        if self.is_mounted:
            r = run(["umount", self.mnt], check=False)
            if r.returncode:
                run(["umount", "-l", self.mnt], check=False)
            self.is_mounted = False
        for lo in self.loops:
            run(["losetup", "-d", lo], check=False)
        self.loops = []
        for img in self.imgs:
            img.unlink(missing_ok=True)


def summary(vals):
    return {"median": statistics.median(vals), "min": min(vals),
            "max": max(vals), "n": len(vals)}


def fmt(s, prec=2):
    return f"{s['median']:.{prec}f} ({s['min']:.{prec}f}-{s['max']:.{prec}f})"


def run_kernels(args, paths, out):
    raw = []
    combos = [(k, r, t) for k in args.kernels for r in args.rates
              for t in args.threads]
    for rep in range(args.reps):
        for ci, (k, rate, thr) in enumerate(combos):
            n, passes = KERNELS[k]
            # Rotate the order of the modes from combo to combo and rep to
            # rep so that no mode always runs first or last.
            sh = (ci + rep) % len(args.modes)
            order = args.modes[sh:] + args.modes[:sh]
            for mode in order:
                f = paths[mode]
                if os.path.exists(f):
                    os.unlink(f)
                if mode == "lib":
                    open(f, "w").close()
                cmd = [KERN, "lib" if mode == "lib" else "mmap", k, n, rate,
                       thr, f, passes]
                p = run(cmd, timeout=600)
                r = kv_parse(p.stdout)
                rec = {"rep": rep, "kernel": k, "rate": rate, "threads": thr,
                       "mode": mode, "n": n, "passes": passes,
                       "seconds": float(r["seconds"]),
                       "syncs": int(r["syncs"]), "checksum": r["checksum"]}
                raw.append(rec)
                log(f"rep {rep} {k} {rate}/s {thr}t {mode:6s} "
                    f"{rec['seconds']:.3f}s syncs={rec['syncs']}")
                os.unlink(f)
            (out / "kernels.json").write_text(json.dumps(raw, indent=1))
    # Same-repetition ratios.
    idx = {(r["rep"], r["kernel"], r["rate"], r["threads"], r["mode"]): r
           for r in raw}
    others = [m for m in ("tmpfs", "fuse", "btrfs") if m in args.modes]
    lines = ["| kernel | syncs/s | threads | lib s (median) | syncs | "
             + " | ".join(f"lib / {m}-mmap" for m in others) + " |",
             "|---|---|---|---|---|" + "---|" * len(others)]
    table = []
    bad_sums = []
    for k, rate, thr in combos:
        sums = {idx[(rep, k, rate, thr, m)]["checksum"]
                for rep in range(args.reps) for m in args.modes}
        if len(sums) != 1:
            bad_sums.append((k, rate, thr, sorted(sums)))
        lib = [idx[(rep, k, rate, thr, "lib")]["seconds"]
               for rep in range(args.reps)]
        syncs = [idx[(rep, k, rate, thr, "lib")]["syncs"]
                 for rep in range(args.reps)]
        row = {"kernel": k, "rate": rate, "threads": thr,
               "lib_seconds": summary(lib), "lib_syncs": summary(syncs)}
        cells = []
        for m in others:
            ratio = [idx[(rep, k, rate, thr, "lib")]["seconds"] /
                     idx[(rep, k, rate, thr, m)]["seconds"]
                     for rep in range(args.reps)]
            row[f"lib/{m}"] = summary(ratio)
            row[f"{m}_seconds"] = summary(
                [idx[(rep, k, rate, thr, m)]["seconds"]
                 for rep in range(args.reps)])
            cells.append(fmt(row[f"lib/{m}"]))
        table.append(row)
        lines.append(f"| {k} | {rate} | {thr} | {row['lib_seconds']['median']:.2f} "
                     f"| {statistics.median(syncs):.0f} | " + " | ".join(cells) + " |")
    return lines, table, bad_sums


def run_random(args, vols, out):
    raw = []
    for rep in range(args.reps):
        for ni, n in enumerate([1, 16, 256]):
            names = ["parity1", "none"]
            if (rep + ni) % 2:
                names.reverse()
            for name in names:
                f = vols[name].mnt / "rs"
                if f.exists():
                    f.unlink()
                f.touch()
                p = run([RSTORE, f, 64, n, args.rs_seconds], timeout=300)
                r = kv_parse(p.stdout)
                raw.append({"rep": rep, "n": n, "volume": name,
                            **{k: float(v) for k, v in r.items()}})
                log(f"rep {rep} random_store N={n} {name}: {p.stdout.strip()}")
                f.unlink()
    (out / "random_store.json").write_text(json.dumps(raw, indent=1))
    idx = {(r["rep"], r["n"], r["volume"]): r for r in raw}
    lines = ["| stores/sync | commits/s parity 1 | commits/s none | "
             "parity 1 / none |", "|---|---|---|---|"]
    table = []
    for n in [1, 16, 256]:
        red = [idx[(rep, n, "parity1")]["commits_per_s"] for rep in range(args.reps)]
        non = [idx[(rep, n, "none")]["commits_per_s"] for rep in range(args.reps)]
        ratio = [a / b for a, b in zip(red, non)]
        row = {"n": n, "parity1": summary(red), "none": summary(non),
               "ratio": summary(ratio)}
        table.append(row)
        lines.append(f"| {n} | {fmt(row['parity1'], 0)} | {fmt(row['none'], 0)} "
                     f"| {fmt(row['ratio'])} |")
    return lines, table


def run_kv(vol, out):
    f = vol.mnt / "kv"
    f.touch()
    nput = 2000
    bench = run([KV, f, "bench", nput]).stdout.strip()
    run([KV, f, "put", "extra", "hello"])
    run([KV, f, "put", "key5", "changed"])
    run([KV, f, "del", "key7"])
    vol.umount()
    vol.mount()
    checks = {}
    for k, want in [("key0", "value-0"), (f"key{nput - 1}", f"value-{(nput - 1) * 7}"),
                    ("key1000", "value-7000"), ("extra", "hello"),
                    ("key5", "changed")]:
        p = run([KV, f, "get", k], check=False)
        checks[k] = p.returncode == 0 and p.stdout.strip() == want
    p = run([KV, f, "get", "key7"], check=False)
    checks["key7 deleted"] = p.returncode == 1
    res = {"bench": kv_parse(bench), "after_remount": checks,
           "ok": all(checks.values())}
    (out / "kvstore.json").write_text(json.dumps(res, indent=1))
    log(f"kvstore: {bench}; after remount: {checks}")
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true",
                    help="1 kernel, 1 rate, 1 thread, 1 rep (a smoke test)")
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--rates", default=",".join(map(str, RATES)))
    ap.add_argument("--threads", default=",".join(map(str, THREADS)))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--rs-seconds", type=float, default=3.0)
    ap.add_argument("--skip-kernels", action="store_true")
    ap.add_argument("--skip-random", action="store_true")
    ap.add_argument("--skip-kv", action="store_true")
    args = ap.parse_args()
    args.kernels = args.kernels.split(",")
    args.rates = [int(x) for x in args.rates.split(",")]
    args.threads = [int(x) for x in args.threads.split(",")]
    args.modes = args.modes.split(",")
    if "lib" not in args.modes:
        ap.error("--modes must include lib (ratios are relative to it)")
    if args.quick:
        args.kernels, args.rates, args.threads, args.reps = ["mm"], [10], [1], 1
        args.rs_seconds = 1.0
    for b in (MKFS, DAEMON, KERN, RSTORE, KV):
        if not b.exists():
            sys.exit(f"{b} is not built: ninja -C {BUILD}")
    args.out.mkdir(parents=True, exist_ok=True)
    tag = str(os.getpid())
    work = Path(f"/tmp/dglcbench-{tag}")
    work.mkdir()
    vols = {"parity1": DgVol(work, tag, "parity1", logdir=args.out),
            "none": DgVol(work, tag, "none", redundancy="none",
                          logdir=args.out)}
    btrfs = Btrfs(work, tag)
    tmpfs_file = Path(f"/dev/shm/dglcbench-{tag}-kernel")
    signal.signal(signal.SIGTERM, lambda *a: sys.exit("terminated"))
    signal.signal(signal.SIGHUP, lambda *a: sys.exit("hangup"))
    report = ["# libcommit measurements", "",
              f"{time.strftime('%Y-%m-%d %H:%M:%S')}, {os.cpu_count()} CPUs, "
              f"load average {os.getloadavg()[0]:.2f} at start; "
              f"{args.reps} repetitions, configurations interleaved; "
              "cells are median (min-max) over repetitions of ratios "
              "measured in the same repetition.", ""]
    result = {"args": {k: (str(v) if isinstance(v, Path) else v)
                       for k, v in vars(args).items()}}
    t0 = time.time()
    try:
        vols["parity1"].mkfs()
        vols["parity1"].mount()
        if not args.skip_random:
            vols["none"].mkfs()
            vols["none"].mount()
        if not args.skip_kernels:
            if "btrfs" in args.modes:
                btrfs.setup()
            paths = {"lib": vols["parity1"].mnt / "kernel",
                     "fuse": vols["parity1"].mnt / "kernel-mmap",
                     "tmpfs": tmpfs_file, "btrfs": btrfs.mnt / "kernel"}
            lines, table, bad = run_kernels(args, paths, args.out)
            result["kernels"] = table
            result["checksum_mismatch"] = bad
            report += ["## PMO kernels: time of libcommit (daxguard, parity 1) "
                       "relative to mmap + msync(MS_SYNC)", "",
                       "n = 1024 (3 arrays of 8 MiB in one map); passes: "
                       + ", ".join(f"{k} {KERNELS[k][1]}" for k in args.kernels)
                       + ". `syncs` counts the timed syncs of the lib run "
                       "(including the final one). > 1 means libcommit is "
                       "slower.", ""] + lines + [""]
            report.append("Checksums equal across all modes: "
                          + ("yes" if not bad else f"NO: {bad}"))
            report.append("")
            btrfs.cleanup()
        if not args.skip_random:
            lines, table = run_random(args, vols, args.out)
            result["random_store"] = table
            report += ["## random_store: 64-byte random stores in a 64 MiB map, "
                       f"commit_sync() every N stores, {args.rs_seconds:g} s "
                       "per run", ""] + lines + [""]
        if not args.skip_kv:
            kv = run_kv(vols["parity1"], args.out)
            result["kvstore"] = kv
            report += ["## kvstore (parity 1)", "",
                       f"`kvstore bench 2000`: {kv['bench']}; after "
                       f"remount every check passed: {kv['ok']} "
                       f"({kv['after_remount']})", ""]
    finally:
        for v in vols.values():
            v.cleanup()
        btrfs.cleanup()
        tmpfs_file.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    report.append(f"Total time {time.time() - t0:.0f} s.")
    (args.out / "results.md").write_text("\n".join(report) + "\n")
    (args.out / "results.json").write_text(json.dumps(result, indent=1))
    print("\n".join(report))
    if result.get("checksum_mismatch") or \
            (result.get("kvstore") and not result["kvstore"]["ok"]):
        sys.exit(1)


if __name__ == "__main__":
    main()
