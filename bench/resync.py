#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Resync of a device that comes back against a full rebuild (issue 32,
item 7): a device away for a few writes should cost what changed, not
the device.

Run from the source tree, after building (root, for FUSE):

    /usr/bin/python3 bench/resync.py [--size 2G] [--fill 3G] [--away 10M]
        [--runs 3] [--out DIR] [--build build]

Per run: 4 device images of --size on /dev/shm, mkfs --parity 1, --fill
of files (64 MiB each) written through a mount; device 2 is taken away,
a -o degraded mount writes --away (1 MiB files) and unmounts; device 2
is put back and `fsck.daxguard -y --json` resyncs it: its
rebuild_seconds is the resync. Then device 2 is made blank (truncated to
0 and back) and `fsck -y` rebuilds it whole: the full rebuild, of the
same volume. `fsck -n` must be clean after each. The resync's "N of M
blocks changed" is taken from its finding. The check: resync < 5% of
the full rebuild.

Writes DIR/results.json (every figure, the machine) and DIR/results.md.
Exit status: 0 the check holds, 1 it does not or a step failed, 2 bad
usage.
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AWAY = 2
RESYNC_RE = re.compile(r"(\d+) pages from parity \(resync: (\d+) of (\d+) "
                       r"blocks changed\)")
FULL_RE = re.compile(r"(\d+) pages from parity")


def parse_size(s):
    m = re.fullmatch(r"(\d+)([KMG]?)", s.strip().upper())
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {s!r}")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class Vol:
    def __init__(self, build, root, size):
        self.build = build
        self.root = root
        self.devs = [os.path.join(root, f"d{i}.img") for i in range(4)]
        self.mnt = os.path.join(root, "mnt")
        self.size = size
        self.daemon = None
        os.makedirs(self.mnt)

    def tool(self, *rel):
        return os.path.join(self.build, *rel)

    def mkfs(self):
        subprocess.run([self.tool("mkfs", "mkfs.daxguard"), "-q", "--force",
                        "--size", str(self.size), "--parity", "1"]
                       + self.devs, check=True)
        for d in self.devs:
            os.chmod(d, 0o600)

    def mount(self, *opts):
        cmd = [self.tool("fs", "daemon", "daxguard"), ",".join(self.devs),
               self.mnt, "-f"]
        for o in opts:
            cmd += ["-o", o]
        self.log = open(os.path.join(self.root, "daemon.log"), "a")
        self.daemon = subprocess.Popen(cmd, stdout=self.log,
                                       stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while not os.path.ismount(self.mnt):
            if self.daemon.poll() is not None or time.time() > deadline:
                self.umount()
                raise RuntimeError("mount failed: see "
                                   + os.path.join(self.root, "daemon.log"))
            time.sleep(0.05)

    def umount(self):
        if self.daemon is None:
            return
        subprocess.run(["fusermount3", "-u", "-z", self.mnt],
                       capture_output=True)
        try:
            self.daemon.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.daemon.kill()
            self.daemon.wait()
        self.daemon = None
        self.log.close()

    def fsck(self, *opts):
        p = subprocess.run([self.tool("fsck", "fsck.daxguard")] + list(opts)
                           + self.devs, capture_output=True, text=True,
                           timeout=3600)
        rep = json.loads(p.stdout) if "--json" in opts and p.stdout else None
        return p.returncode, rep, p


def write_files(mnt, prefix, total, each):
    n = 0
    while total > 0:
        size = min(each, total)
        with open(os.path.join(mnt, f"{prefix}{n}"), "wb") as f:
            f.write(os.urandom(size))
        total -= size
        n += 1
    os.sync()


def rebuilt(rep):
    found = [f for f in rep["findings"] if f["code"] == "PR_0_DEV_REBUILT"]
    if [f["device"] for f in found] != [AWAY]:
        raise RuntimeError(f"expected device {AWAY} rebuilt: {rep}")
    return found[0]["detail"]


def one_run(args, n):
    root = os.path.join("/dev/shm", f"dg-bench-resync-{os.getpid()}-{n}")
    v = Vol(args.build, root, args.size)
    try:
        v.mkfs()
        v.mount()
        log(f"run {n}: filling {args.fill >> 20} MiB")
        write_files(v.mnt, "fill", args.fill, 64 << 20)
        v.umount()
        aside = v.devs[AWAY] + ".away"
        os.rename(v.devs[AWAY], aside)
        v.mount("degraded")
        log(f"run {n}: {args.away >> 20} MiB written with device {AWAY} away")
        write_files(v.mnt, "away", args.away, 1 << 20)
        v.umount()
        os.rename(aside, v.devs[AWAY])

        rc, rep, p = v.fsck("-y", "--json")
        if rc not in (0, 1):
            raise RuntimeError(f"fsck -y (resync) exit {rc}: {p.stderr}")
        m = RESYNC_RE.search(rebuilt(rep))
        if not m:
            raise RuntimeError(f"no resync: {rebuilt(rep)}")
        res = {"resync_seconds": rep["rebuild_seconds"],
               "resync_pages": int(m.group(1)),
               "blocks_changed": int(m.group(2)),
               "blocks_written": int(m.group(3))}
        rc, _, p = v.fsck("-n")
        if rc != 0:
            raise RuntimeError(f"fsck -n after the resync: {p.stdout}")

        # The same volume, device 2 blank: rebuilt whole.
        os.truncate(v.devs[AWAY], 0)
        os.truncate(v.devs[AWAY], args.size)
        rc, rep, p = v.fsck("-y", "--json")
        if rc not in (0, 1):
            raise RuntimeError(f"fsck -y (full) exit {rc}: {p.stderr}")
        m = FULL_RE.search(rebuilt(rep))
        res["full_seconds"] = rep["rebuild_seconds"]
        res["full_pages"] = int(m.group(1)) if m else None
        rc, _, p = v.fsck("-n")
        if rc != 0:
            raise RuntimeError(f"fsck -n after the full rebuild: {p.stdout}")
        res["ratio"] = res["resync_seconds"] / res["full_seconds"]
        log(f"run {n}: {res}")
        return res
    finally:
        v.umount()
        shutil.rmtree(root, ignore_errors=True)


def commit_id():
    p = subprocess.run(["git", "-C", REPO_ROOT, "rev-parse", "--short",
                        "HEAD"], capture_output=True, text=True)
    return p.stdout.strip() or None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=parse_size, default=parse_size("2G"))
    ap.add_argument("--fill", type=parse_size, default=parse_size("3G"))
    ap.add_argument("--away", type=parse_size, default=parse_size("10M"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(REPO_ROOT, "build"))
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.runs < 1 or args.fill + args.away > 2 * args.size:
        ap.error("--runs at least 1; --fill + --away must fit the volume")
    runs = [one_run(args, n) for n in range(args.runs)]
    summary = {k: statistics.median(r[k] for r in runs)
               for k in ("resync_seconds", "full_seconds", "ratio")}
    ok = summary["ratio"] < 0.05
    out = {"params": {"size": args.size, "fill": args.fill,
                      "away": args.away, "runs": args.runs,
                      "devices": 4, "parity": 1, "away_device": AWAY},
           "runs": runs, "median": summary, "check_ratio_below": 0.05,
           "check": ok,
           "machine": {"nproc": os.cpu_count(), "kernel": platform.release(),
                       "loadavg": os.getloadavg(), "commit": commit_id()}}
    text = [f"# Resync vs full rebuild ({args.size >> 20} MiB devices, "
            f"{args.fill >> 20} MiB filled, {args.away >> 20} MiB written "
            f"while device {AWAY} was away)", "",
            "| run | blocks changed | resync pages | resync s | full pages "
            "| full s | ratio |", "|---|---|---|---|---|---|---|"]
    for i, r in enumerate(runs):
        text.append(f"| {i} | {r['blocks_changed']} of "
                    f"{r['blocks_written']} | {r['resync_pages']} | "
                    f"{r['resync_seconds']:.3f} | {r['full_pages']} | "
                    f"{r['full_seconds']:.3f} | {r['ratio']:.4f} |")
    text += ["", f"Median ratio {summary['ratio']:.4f} (check: < 0.05: "
             f"{'holds' if ok else 'FAILS'}). Machine: "
             f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
             f"commit {commit_id()}.", ""]
    print("\n".join(text))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
        with open(os.path.join(args.out, "results.md"), "w") as f:
            f.write("\n".join(text))
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as e:
        log(f"resync.py: {e}")
        sys.exit(1)
