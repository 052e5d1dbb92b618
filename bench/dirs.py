#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""One big directory (issue 34): N creates, N stats, one listing and N
unlinks in a single directory, on daxguard and on passthrough_ll over a
tmpfs directory, in the same run.

Run as root from the source tree, after building:

    /usr/bin/python3 bench/dirs.py [--entries 1000000] [--out DIR]
        [--image-size 2G] [--systems daxguard-p1,passthrough]

daxguard: 4 device images on /dev/shm, mkfs --parity 1 (sizes below).
passthrough: libfuse's passthrough_ll example (compiled by the harness,
bench/dgbench/systems.py) over a directory on /dev/shm, the FUSE
ceiling. Both run the same Python loop: create is open(O_CREAT|O_EXCL)
+ close, stat is stat(), the listing is one os.scandir() of the whole
directory, unlink is unlink(); names f0000000.. in creation order.
Every --batch operations, and before each phase, the kernel's dentry
and inode caches are dropped outside the timed loops (drop_dentries()),
the same for both systems: so each stat and unlink looks its name up
in the daemon, as in a directory too big for the kernel's caches.

Prints per phase: seconds, operations per second, the daemon's CPU
seconds (utime + stime from /proc), and the ratios daxguard/passthrough
per phase and unlink/create per system (the issue's check: unlink within
1.5x of create). Writes DIR/results.json (every raw figure, machine
facts) and DIR/results.md.

Limit: daxguard's inode table grows past the root record's 470 chunks
through its chunk map (DG_FEAT_INCOMPAT_BIG_ITABLE, fs/volume/include/format.h),
so the number of files is bounded by space (and 268 M inodes); --entries
above what statfs reports free exits 2 with that figure. The daemon's
RSS (VmRSS, RssAnon) is recorded after each phase.
"""
import argparse
import json
import os
import sys
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
sys.path.insert(0, BENCH_DIR)

from dgbench import machine  # noqa: E402
from dgbench.systems import Config, Daxguard, Passthrough, mounted  # noqa: E402
from dgbench.util import Skip, log, parse_size  # noqa: E402

PHASES = ("create", "stat", "readdir", "unlink")


def proc_cpu(pid):
    """utime + stime of pid in seconds (None if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_mem_kib(pid):
    """VmRSS and RssAnon of pid in KiB: RssAnon is the daemon's own
    memory; VmRSS also counts the mapped image pages it touched."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "RssAnon", "RssShmem"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def drop_dentries():
    """Let the kernel forget the inodes it caches (echo 2 >
    /proc/sys/vm/drop_caches: dentries and inodes, not page cache), so
    it sends FUSE forgets. passthrough_ll holds an O_PATH descriptor per
    inode the kernel knows: without this it runs out of descriptors at
    the open-file limit (20,000 here, not raisable without
    CAP_SYS_RESOURCE). Done the same way for every system, outside the
    timed loops."""
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2\n")


def timed_batches(n, batch, fn):
    """fn(lo, hi) over [0, n) in batches, dropping cached dentries
    between them; returns the seconds spent in fn alone."""
    secs = 0.0
    for lo in range(0, n, batch):
        t0 = time.monotonic()
        fn(lo, min(n, lo + batch))
        secs += time.monotonic() - t0
        drop_dentries()
    return secs


def run_phases(mnt, n, pid, batch):
    """The four phases in a fresh directory under mnt; returns records."""
    d = os.path.join(mnt, "big")
    os.mkdir(d)
    recs = {}
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY

    def create(lo, hi):
        for i in range(lo, hi):
            os.close(os.open(f"f{i:07d}", flags, 0o644, dir_fd=fd))

    def stat(lo, hi):
        for i in range(lo, hi):
            os.stat(f"f{i:07d}", dir_fd=fd, follow_symlinks=False)

    def unlink(lo, hi):
        for i in range(lo, hi):
            os.unlink(f"f{i:07d}", dir_fd=fd)

    try:
        for phase in PHASES:
            drop_dentries()
            c0 = proc_cpu(pid)
            count = n
            if phase == "readdir":
                t0 = time.monotonic()
                with os.scandir(d) as it:
                    count = sum(1 for _ in it)
                secs = time.monotonic() - t0
                if count != n:
                    raise RuntimeError(f"listing of {d} has {count} names, not {n}")
            else:
                secs = timed_batches(n, batch, {"create": create, "stat": stat,
                                                "unlink": unlink}[phase])
            c1 = proc_cpu(pid)
            recs[phase] = {"ops": count, "seconds": round(secs, 3),
                           "ops_per_s": round(count / secs, 1) if secs > 0 else None,
                           "daemon_cpu_s": round(c1 - c0, 2) if c0 is not None and c1 is not None else None,
                           "daemon_mem_kib": proc_mem_kib(pid)}
            log(f"  {phase:8s} {count} in {secs:.2f} s ({count / secs:,.0f}/s)"
                f", daemon cpu {recs[phase]['daemon_cpu_s']} s")
    finally:
        os.close(fd)
    os.rmdir(d)
    return recs


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/dirs.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--entries", "--n", dest="n", type=int, default=1_000_000,
                   help="names in the directory (default 1,000,000; --n is the old spelling)")
    p.add_argument("--out", help="output directory (default bench/results/<timestamp>-dirs)")
    p.add_argument("--build-dir", default="build", help="meson build dir with daxguard binaries")
    p.add_argument("--image-size", help="size of each daxguard device image "
                   "(default: 1G per 100,000 names, at least 1G, at most 8G)")
    p.add_argument("--batch", type=int, default=5000,
                   help="operations between two drops of the kernel's dentry cache "
                        "(default 5000; passthrough_ll: at most half its open-file limit)")
    p.add_argument("--systems", default="daxguard-p1,passthrough",
                   help="comma-separated: daxguard-p1, passthrough (default both)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if args.n < 1 or args.batch < 1 or not systems or any(s not in ("daxguard-p1", "passthrough") for s in systems):
        print("bench/dirs.py: --entries and --batch must be positive; --systems from daxguard-p1,passthrough",
              file=sys.stderr)
        return 2
    try:
        image_size = (parse_size(args.image_size) if args.image_size else
                      min(8 << 30, max(1 << 30, (args.n + 99_999) // 100_000 << 30)))
    except ValueError:
        print(f"bench/dirs.py: bad --image-size {args.image_size}", file=sys.stderr)
        return 2
    out = os.path.abspath(args.out or os.path.join(
        BENCH_DIR, "results", time.strftime("%Y%m%d-%H%M%S") + "-dirs"))
    os.makedirs(out, exist_ok=True)
    work_root = f"/dev/shm/dgbench-dirs-{os.getpid()}"
    os.makedirs(work_root, exist_ok=True)
    build_dir = os.path.abspath(args.build_dir if os.path.isabs(args.build_dir)
                                else os.path.join(REPO_ROOT, args.build_dir))
    cfg = Config(work_root, build_dir, image_size, os.path.join(out, "bin"), REPO_ROOT)
    results = {"bench": "dirs", "n": args.n, "image_size": image_size,
               "machine": machine.facts(REPO_ROOT), "systems": {}, "skipped": {}}
    objs = {"daxguard-p1": lambda: Daxguard(cfg, "daxguard-p1", ["--parity", "1"],
                                            "parity 1 + checksums"),
            "passthrough": lambda: Passthrough(cfg)}
    status = 0
    try:
        for name in systems:
            system = objs[name]()
            log(f"{name}: {args.n} names in one directory")
            try:
                with mounted(system) as s:
                    st = os.statvfs(s.mnt)
                    if name == "daxguard-p1" and st.f_favail < args.n + 1:
                        print(f"bench/dirs.py: this volume has room for {st.f_favail:,} "
                              f"more inodes: --entries {args.n:,} does not fit (give a "
                              f"larger --image-size)", file=sys.stderr)
                        return 2
                    batch = min(args.batch, max(1000, s.max_files() // 2)) \
                        if name == "passthrough" else args.batch
                    recs = run_phases(s.mnt, args.n, s.proc.pid, batch)
                    results["systems"][name] = {"info": s.info(), "phases": recs,
                                                "statfs_files": st.f_files}
            except Skip as e:
                log(f"{name}: skipped: {e}")
                results["skipped"][name] = str(e)
                status = 1
    finally:
        if os.path.isdir(work_root) and not os.listdir(work_root):
            os.rmdir(work_root)
    results["ratios"] = ratios(results["systems"])
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    md = table(results)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(md)
    print(md)
    return status


def ratios(sysrecs):
    r = {}
    for name, s in sysrecs.items():
        p = s["phases"]
        r[f"{name} unlink/create (seconds)"] = round(p["unlink"]["seconds"] / p["create"]["seconds"], 2)
    if "daxguard-p1" in sysrecs and "passthrough" in sysrecs:
        dg, pt = sysrecs["daxguard-p1"]["phases"], sysrecs["passthrough"]["phases"]
        for ph in PHASES:
            if pt[ph]["seconds"] > 0:
                r[f"daxguard/passthrough {ph} (seconds)"] = round(dg[ph]["seconds"] / pt[ph]["seconds"], 2)
    return r


def table(results):
    lines = [f"# One directory, {results['n']:,} names "
             f"({results['machine'].get('date')}, commit {results['machine'].get('git_commit', '?')[:12]}"
             f"{', dirty' if results['machine'].get('git_dirty') else ''})", "",
             "| system | phase | seconds | ops/s | daemon CPU s | daemon RssAnon MiB |",
             "|---|---|---|---|---|---|"]
    for name, s in results["systems"].items():
        for ph in PHASES:
            rec = s["phases"][ph]
            anon = rec["daemon_mem_kib"].get("RssAnon")
            lines.append(f"| {name} | {ph} | {rec['seconds']:.2f} | {rec['ops_per_s']:,.0f} | "
                         f"{rec['daemon_cpu_s']} | {anon / 1024:.0f} |" if anon is not None else
                         f"| {name} | {ph} | {rec['seconds']:.2f} | {rec['ops_per_s']:,.0f} | "
                         f"{rec['daemon_cpu_s']} | ? |")
    lines += ["", "| ratio | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in results["ratios"].items()]
    for name, why in results["skipped"].items():
        lines.append(f"\n{name} skipped: {why}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
