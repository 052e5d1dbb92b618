#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Rebuilding one device of four: daxguard next to btrfs and zfs (issue 17).

daxguard's online replace and offline fsck rebuild, next to btrfs
replace and a zpool replace resilver, on the same data.

Run as root from the source tree, after building:

    /usr/bin/python3 bench/online/rebuild_bench.py [--data-mib 1024]
        [--reps 3] [--out DIR]

Each system holds the same files (scrub_bench.write_data(): same sizes,
same random bytes) on 4 images in /dev/shm, one parity's worth of
redundancy, and device 2 (btrfs devid 3, the third vdev) is rebuilt
onto a fresh image once per repetition, the systems interleaved:

  daxguard online   daxguard-ctl MNT replace 2 NEW, polled until finished
  daxguard offline  unmount, delete device 2's image, fsck.daxguard -y
                    rebuilds it (then mounted again for the next rep)
  btrfs             raid5 data (raid5 metadata, raid1 if refused) on 4
                    loop devices: btrfs replace start -B 3 /dev/loopN MNT
  zfs               zfs-fuse raidz1 of 4 file vdevs: zpool replace POOL
                    OLD NEW, zpool status polled until the resilver ends

Throughput is GB/s of used data (the bytes of the files), so the
systems compare whatever each one copies per device; ratios are to
btrfs's replace of the same run. At the end every system's files are
read back and checked. Writes results.json (raw records), results.md,
and prints the Markdown table. A system that cannot be set up (tool
missing, zfs-fuse daemon not starting) is skipped with the reason.
"""
import argparse
import hashlib
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scrub_bench import ROOT, Btrfs, Daxguard, data_files, sh, write_data  # noqa: E402
from dgbench.systems import ZfsDaemon  # noqa: E402
from dgbench.util import Skip, which  # noqa: E402

DEV = 2             # the slot rebuilt: a data/parity device like any other
POLL = 0.05         # s between daxguard-ctl polls: the timing error
ZPOLL = 0.1         # zpool status goes through zfs-fuse: poll less often
SETTLE = 10         # s after the fills before the first timing


def spare(path, r):
    """The image that replaces `path` in repetition r."""
    return path.with_name(path.name.rsplit("-", 1)[0] + f"-new{r}.img")


def blank(path, mib):
    with open(path, "wb") as f:
        f.truncate(mib << 20)


class DgRebuild(Daxguard):
    name = "daxguard-p1"
    spares = ()

    def online(self, r):
        new = spare(self.devs[DEV], r)
        self.spares = [*self.spares, new]   # teardown deletes it
        t0 = time.monotonic()
        self.ctl("replace", DEV, new)
        while True:
            st = json.loads(self.ctl("replace", "status", "--json").stdout)
            if st["state"] != "running":
                break
            time.sleep(POLL)
        took = time.monotonic() - t0
        if st["state"] != "finished" or st["pages_lost"]:
            raise RuntimeError(f"daxguard replace: {st}")
        # The old image is stale now: free its memory.
        self.devs[DEV].unlink()
        self.devs[DEV] = new
        return took, st

    def offline(self):
        self.umount()
        self.devs[DEV].unlink()
        t0 = time.monotonic()
        p = sh([self.build / "fsck/fsck.daxguard", "-y", "--json"]
               + self.devs, check=False)
        took = time.monotonic() - t0
        rep = json.loads(p.stdout)
        if p.returncode != 1 or not any(
                f["code"] == "PR_0_DEV_REBUILT" and f["device"] == DEV
                for f in rep["findings"]):
            raise RuntimeError(f"fsck rebuild: exit {p.returncode}\n"
                               f"{p.stdout}\n{p.stderr}")
        self.mount()
        return took, {k: rep.get(k) for k in ("seconds", "bytes_checked",
                                              "pages_checked", "corrected")}

    def teardown(self):
        super().teardown()
        for p in self.spares:   # a replace cut short leaves its target
            p.unlink(missing_ok=True)


class BtrfsRebuild(Btrfs):
    name = "btrfs-raid5"

    def replace(self, r):
        img = spare(self.imgs[DEV], r)
        self.imgs.append(img)   # teardown deletes it whatever happens
        blank(img, self.size)
        lo = sh(["losetup", "-f", "--show", img]).stdout.strip()
        self.loops.append(lo)
        t0 = time.monotonic()
        # mkfs numbers the devices 1..4 in the order given; replace keeps
        # the devid, so every repetition replaces devid DEV + 1.
        sh(["btrfs", "replace", "start", "-B", str(DEV + 1), lo, self.mnt])
        took = time.monotonic() - t0
        st = sh(["btrfs", "replace", "status", "-1", self.mnt]).stdout
        old = self.loops.pop(DEV)
        # Detached here and not by teardown: its number may be reused.
        sh(["losetup", "-d", old], check=False)
        self.imgs.pop(DEV).unlink()
        self.loops.insert(DEV, self.loops.pop())
        self.imgs.insert(DEV, self.imgs.pop())
        return took, st.strip()


class Zfs:
    name = "zfs-raidz1"

    def __init__(self, size_mib, tmp):
        self.pool = f"rbench{os.getpid()}"
        self.imgs = [Path(f"/dev/shm/zfs-bench-rebuild-{self.pool}-{i}.img")
                     for i in range(4)]
        self.size = size_mib
        self.tmp = Path(tmp)
        self.mnt = self.tmp / "zfs"
        self.mnt.mkdir(parents=True, exist_ok=True)
        self.daemon = self.created = False

    @staticmethod
    def missing():
        for t in ("zfs-fuse", "zpool", "zfs"):
            if not which(t):
                return f"{t} not installed (apt-get install zfs-fuse)"
        if not os.path.exists("/dev/fuse"):
            return "/dev/fuse missing"
        return None

    def status(self):
        return sh(["zpool", "status", self.pool]).stdout

    def setup(self):
        ZfsDaemon.acquire(str(self.tmp))  # raises Skip with the reason
        self.daemon = True
        for img in self.imgs:
            blank(img, self.size)
        sh(["zpool", "create", "-f", "-m", self.mnt, self.pool, "raidz1"]
           + self.imgs)
        self.created = True
        deadline = time.time() + 20
        while not os.path.ismount(self.mnt):
            if time.time() > deadline:
                raise RuntimeError(f"zfs: {self.pool} not mounted")
            time.sleep(0.1)

    def replace(self, r):
        img = spare(self.imgs[DEV], r)
        self.imgs.append(img)
        blank(img, self.size)
        t0 = time.monotonic()
        sh(["zpool", "replace", self.pool, self.imgs[DEV], img])
        # zfs-fuse says "resilver in progress", newer zfs "resilvering";
        # the "replacing" vdev is there until the old device detaches.
        deadline = t0 + 3600
        while re.search(r"in progress|resilvering|replacing",
                        out := self.status()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"zfs resilver did not end:\n{out}")
            time.sleep(ZPOLL)
        took = time.monotonic() - t0
        if "errors: No known data errors" not in out:
            raise RuntimeError(f"zfs resilver:\n{out}")
        self.imgs.pop(DEV).unlink()
        self.imgs.insert(DEV, self.imgs.pop())
        line = [x.strip() for x in out.splitlines() if "resilver" in x]
        return took, line[0] if line else out

    def teardown(self):
        if self.created:
            sh(["zpool", "destroy", "-f", self.pool], check=False)
        if os.path.ismount(self.mnt):
            sh(["umount", "-l", self.mnt], check=False)
        if self.daemon:
            ZfsDaemon.release()
        for img in self.imgs:
            img.unlink(missing_ok=True)


def check_files(mnt, mib, seed):
    """Every file reads back as written (page cache dropped first, so
    the reads reach the rebuilt devices)."""
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        pass
    for name, chunks in data_files(mib, seed):
        want, got = hashlib.sha256(), hashlib.sha256()
        for c in chunks:
            want.update(c)
        with open(Path(mnt) / name, "rb") as f:
            while b := f.read(1 << 20):
                got.update(b)
        if want.digest() != got.digest():
            return f"{name} differs"
    return "ok"


def versions():
    def first(cmd):
        try:
            return sh(cmd, check=False).stdout.strip().splitlines()[0]
        except (OSError, IndexError):
            return None
    return {"daxguard": first(["git", "-C", ROOT, "rev-parse", "HEAD"]),
            "kernel": os.uname().release,
            "btrfs": first(["btrfs", "--version"]),
            "zfs-fuse": first(["dpkg-query", "-W", "-f", "${Version}",
                               "zfs-fuse"])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=str(ROOT / "build"))
    ap.add_argument("--data-mib", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = Path(a.out or ROOT / "bench/results" /
               time.strftime("rebuild-%Y%m%d-%H%M%S")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    # As scrub_bench: the data on 3 data devices, plus slack for metadata.
    size = max(256, (a.data_mib * 2) // 3 + 128)
    rec = {"data_mib": a.data_mib, "image_mib": size, "reps": a.reps,
           "device": DEV, "nproc": os.cpu_count(), "rebuild": [],
           "skipped": {}, "setup": {"versions": versions()}, "check": {}}
    systems = []

    def up(name, make):
        """make() set up and filled, or None with the reason recorded."""
        s = make()
        systems.append(s)   # torn down in finally, even half set up
        try:
            s.setup()
            write_data(s.mnt, a.data_mib, 1)
            return s
        except (Skip, RuntimeError) as e:
            systems.remove(s)
            s.teardown()
            rec["skipped"][name] = " | ".join(
                x for x in str(e).splitlines() if x.strip())[:400]
            return None

    try:
        dg = up("daxguard-p1", lambda: DgRebuild(a.build_dir, size, out))
        if not dg:
            raise RuntimeError(rec["skipped"]["daxguard-p1"])
        bt = zf = None
        if why := Btrfs.missing():
            rec["skipped"]["btrfs-raid5"] = why
        else:
            for meta in ("raid5", "raid1"):
                bt = up("btrfs-raid5",
                        lambda: BtrfsRebuild(size, out, meta=meta))
                if bt:
                    rec["setup"]["btrfs_metadata"] = meta
                    break
                if meta == "raid5":     # refused: raid1, as scrub_bench
                    rec["setup"]["btrfs_raid5_metadata_refused"] = \
                        rec["skipped"].pop("btrfs-raid5")
        if why := Zfs.missing():
            rec["skipped"]["zfs-raidz1"] = why
        else:
            zf = up("zfs-raidz1", lambda: Zfs(size, out))
        print(f"set up: {[s.name for s in systems]}, skipped: "
              f"{rec['skipped']}", file=sys.stderr, flush=True)
        # Let the fills' background writeback (zfs-fuse's txgs, btrfs's
        # commits) end before the first timing. (It does not explain
        # daxguard's slow first replace: see the committed README.)
        os.sync()
        time.sleep(SETTLE)

        # (record name, what, function) in a fixed order per repetition
        runs = [("daxguard-p1 online", "daxguard-ctl replace",
                 dg.online),
                ("daxguard-p1 offline", "fsck.daxguard -y",
                 lambda r: dg.offline())]
        if bt:
            runs.append(("btrfs-raid5", "btrfs replace start -B",
                         bt.replace))
        if zf:
            runs.append(("zfs-raidz1", "zpool replace (resilver)",
                         zf.replace))
        order = 0
        for r in range(a.reps):
            for name, what, fn in runs:
                took, detail = fn(r)
                rec["rebuild"].append({"system": name, "what": what,
                                       "rep": r, "order": order,
                                       "secs": took, "detail": detail})
                print(f"rep {r} {name}: {took:.2f} s", file=sys.stderr,
                      flush=True)
                order += 1
        for s in systems:
            rec["check"][s.name] = check_files(s.mnt, a.data_mib, 1)
    finally:
        for s in systems:
            s.teardown()
        (out / "results.json").write_text(json.dumps(rec, indent=1))
    report(rec, out)
    return 0 if all(v == "ok" for v in rec["check"].values()) else 1


def report(rec, out):
    data = rec["data_mib"] * (1 << 20)
    lines = [f"# Rebuild of one device of 4 ({rec['data_mib']} MiB of file "
             f"data, images of {rec['image_mib']} MiB, {rec['reps']} reps, "
             f"{rec['nproc']} CPUs)", "",
             "| system | how | s (median) | s (each rep) | data GB/s | "
             "speed vs btrfs replace | files after |",
             "|---|---|---|---|---|---|---|"]
    names = list(dict.fromkeys(x["system"] for x in rec["rebuild"]))
    med = {n: statistics.median(x["secs"] for x in rec["rebuild"]
                                if x["system"] == n) for n in names}
    base = med.get("btrfs-raid5")
    for n in names:
        xs = [x for x in rec["rebuild"] if x["system"] == n]
        vs = f"{base / med[n]:.2f}x" if base else "-"
        ok = rec["check"].get(n.split()[0], "-")
        lines.append(f"| {n} | `{xs[0]['what']}` | {med[n]:.2f} | "
                     + ", ".join(f"{x['secs']:.2f}" for x in xs)
                     + f" | {data / med[n] / 1e9:.2f} | {vs} | {ok} |")
    for n, why in rec["skipped"].items():
        lines.append(f"| {n} | skipped: {why} | | | | | |")
    if "btrfs_metadata" in rec["setup"]:
        lines += ["", f"btrfs metadata profile: "
                  f"{rec['setup']['btrfs_metadata']}."]
    text = "\n".join(lines) + "\n"
    (out / "results.md").write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    sys.exit(main())
