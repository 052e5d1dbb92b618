#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Randomized fault campaigns against fsck.daxguard (issue #4), plus fsck
speed and device-rebuild time.

Per trial: a fresh volume (a copy of one of a few populated golden
volumes: many small files, a few large ones, deep directories, files
that need extent pages), one fault of a random kind and target from
daxguard-inject, then fsck -n, fsck -y, fsck -n, mount, and the sha256 of
every file against the original. Double-fault trials put two faults in
one row (parity 1) or three (parity 2): fsck must exit 4 naming the
affected files, and every other file must be intact.

  bench/campaign.py campaign --trials 2000 --seed 1
  bench/campaign.py speed --used 2G
  bench/campaign.py rebuild --size 1G
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from conftest import Volume, run  # noqa: E402
from dgfault import KINDS, TARGETS, diff_manifest, fsck, inject, \
    make_tree, manifest, manifest_tolerant  # noqa: E402

DEV_KINDS = ["device-loss", "stale-device"]


class Golden:
    """A few populated volumes that trials copy."""

    def __init__(self, work, count=3, ndev=4, size="32M", parity=1):
        self.vols = []
        for i in range(count):
            d = work / f"golden{i}"
            d.mkdir(parents=True, exist_ok=True)
            v = Volume(d, ndev=ndev, size=size, parity=parity,
                       tag=f"camp-g{os.getpid()}-p{parity}-{i}")
            v.mkfs()
            v.mount()
            try:
                make_tree(v.mnt, seed=100 + i)
                want = manifest(v.mnt)
            finally:
                v.umount()
            self.vols.append((v, want))

    def trial_volume(self, work, rng, tag):
        g, want = rng.choice(self.vols)
        d = work / "trial"
        d.mkdir(exist_ok=True)
        v = Volume(d, ndev=len(g.devs), size=g.size, parity=g.parity,
                   tag=tag)
        for s, t in zip(g.devs, v.devs):
            subprocess.run(["cp", "--sparse=always", str(s), str(t)],
                           check=True)
        return v, want

    def cleanup(self):
        for v, _ in self.vols:
            v.cleanup()


def read_all(v, want):
    """Mount, compare every file; returns (bad names, read errors)."""
    v.mount()
    try:
        got = manifest_tolerant(v.mnt)
    finally:
        v.umount()
    return diff_manifest(want, got)



def single_trial(v, want, kind, target, seed):
    """One fault; returns a dict of outcome flags."""
    r = {"kind": kind, "target": target, "detected": False,
         "repaired": False, "lost": False, "silent": False, "skipped": False}
    rep, p = inject(v.devs, kind, target, seed=seed, check=False)
    if rep is None:
        r["skipped"] = True   # e.g. no extent page on this volume
        r["why"] = p.stderr.strip()
        return r
    rc1, _, _ = fsck(v.devs, "-n")
    rc2, rep2, _ = fsck(v.devs, "-y", json_out=True)
    rc3, _, _ = fsck(v.devs, "-n")
    r["detected"] = rc1 == 4
    bad = read_all(v, want)
    r["repaired"] = rc2 == 1 and rc3 == 0 and not bad
    if bad:
        named = {f.get("file") for f in (rep2 or {}).get("findings", [])}
        named_ok = all(any(n and ("/" + b.rstrip("/")).startswith(n)
                           for n in named) for b in bad)
        r["lost"] = True
        r["silent"] = not named_ok or rc1 == 0
        r["bad"] = bad
    elif rc1 == 0:
        r["silent"] = False  # no effect at all: counted as undetected
    r["codes"] = (rc1, rc2, rc3)
    return r


def double_trial(v, want, parity, seed):
    """parity + 1 faults in one row: exit 4, files named, others intact,
    and no wrong bytes from any read."""
    r = {"kind": "double", "target": "data", "detected": False,
         "repaired": False, "lost": False, "silent": False,
         "skipped": False}
    rep, p = inject(v.devs, "bitflip", "data", seed=seed, check=False,
                    extra=["--count", str(parity + 1), "--same-row",
                           "--bits", "4"])
    if rep is None or len(rep["changes"]) < 4 * (parity + 1):
        r["skipped"] = True
        return r
    rc1, _, _ = fsck(v.devs, "-n")
    rc2, rep2, _ = fsck(v.devs, "-y", json_out=True)
    r["detected"] = rc1 == 4
    # A file fsck gave up (its inode went with an unreadable inode table
    # page) is named by the repair that removed it.
    named = {f["file"] for f in rep2["findings"] if f.get("file") and
             (not f["fixed"] or f["code"] == "PR_3_FILE_LOST")}
    hit = {c["file"] for c in rep["changes"] if c["file"]}
    bad = read_all(v, want)
    # Files that differ must be unreadable (EIO), never wrong bytes, and
    # named by fsck; every other file must be intact.
    got_wrong = []
    v.mount()
    try:
        g = manifest_tolerant(v.mnt)
    finally:
        v.umount()
    for b in bad:
        if not g.get(b, "").startswith("error:") and b in g:
            got_wrong.append(b)
    r["ok"] = (rc2 in (4, 5) and hit <= named and not got_wrong
               and all(("/" + b) in named for b in bad))
    r["lost"] = bool(bad)
    r["silent"] = bool(got_wrong)
    r["codes"] = (rc1, rc2)
    if not r["ok"]:
        r["findings"] = [(f["code"], f["fixed"], f["file"], f["detail"])
                         for f in rep2["findings"]]
        r["changes"] = [(c["device"], c["page"], c["structure"], c["file"])
                        for c in rep["changes"]]
    return r


def campaign(trials, seed, work, doubles=0, ndev=4, size="32M",
             progress=False):
    rng = random.Random(seed)
    stats = defaultdict(lambda: defaultdict(int))
    failures = []
    g1 = Golden(work / "p1", ndev=ndev, size=size, parity=1)
    g2 = Golden(work / "p2", count=1, ndev=ndev, size=size, parity=2) \
        if doubles else None
    t0 = time.time()
    try:
        for i in range(trials):
            kind = rng.choice(KINDS + DEV_KINDS)
            target = "device" if kind in DEV_KINDS else rng.choice(TARGETS)
            v, want = g1.trial_volume(work, rng, f"camp{os.getpid()}")
            try:
                r = single_trial(v, want, kind,
                                 "any" if target == "device" else target,
                                 rng.randrange(1 << 30))
            finally:
                v.cleanup()
            key = (kind, target)
            s = stats[key]
            if r["skipped"]:
                s["skipped"] += 1
                continue
            s["trials"] += 1
            s["detected"] += r["detected"]
            s["repaired"] += r["repaired"]
            s["lost"] += r["lost"]
            s["silent"] += r["silent"]
            if not r["repaired"] or not r["detected"]:
                failures.append(r)
            if progress and i % 50 == 0:
                print(f"  {i}/{trials} trials, {time.time() - t0:.0f} s",
                      file=sys.stderr)
        for i in range(doubles):
            parity = 1 + i % 2
            g = g1 if parity == 1 else g2
            v, want = g.trial_volume(work, rng, f"camp{os.getpid()}")
            try:
                r = double_trial(v, want, parity, rng.randrange(1 << 30))
            finally:
                v.cleanup()
            s = stats[(f"double-p{parity}", "data")]
            if r["skipped"]:
                s["skipped"] += 1
                continue
            s["trials"] += 1
            s["detected"] += r["detected"]
            s["repaired"] += r.get("ok", False)
            s["lost"] += r["lost"]
            s["silent"] += r["silent"]
            if not r.get("ok"):
                failures.append(r)
    finally:
        g1.cleanup()
        if g2:
            g2.cleanup()
    return stats, failures, time.time() - t0


def print_table(stats, out=sys.stdout):
    cols = ["trials", "detected", "repaired", "lost", "silent", "skipped"]
    print(f"{'kind':<14}{'target':<12}" + "".join(f"{c:>10}" for c in cols),
          file=out)
    tot = defaultdict(int)
    for (k, t) in sorted(stats):
        s = stats[(k, t)]
        print(f"{k:<14}{t:<12}" + "".join(f"{s[c]:>10}" for c in cols),
              file=out)
        for c in cols:
            tot[c] += s[c]
    print(f"{'total':<26}" + "".join(f"{tot[c]:>10}" for c in cols),
          file=out)
    print("(double-pN rows: 'repaired' counts trials that ended as required:"
          " exit 4, files named, others intact, no wrong bytes)", file=out)
    return tot


def cmd_campaign(a):
    work = Path(tempfile.mkdtemp(prefix="dg-campaign-"))
    try:
        stats, failures, secs = campaign(a.trials, a.seed, work,
                                         doubles=a.doubles, progress=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    tot = print_table(stats)
    print(f"{a.trials} single + {a.doubles} double-fault trials in "
          f"{secs:.0f} s")
    for f in failures[:20]:
        print("FAIL", json.dumps(f))
    return 0 if not failures else 1


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1].upper()] if s[-1].upper() in mult \
        else int(s)


def fill(mnt, used):
    """Write files until about used bytes are allocated."""
    chunk = os.urandom(1 << 20)
    n = 0
    i = 0
    while n < used:
        with open(mnt / f"f{i}", "wb") as f:
            for _ in range(64):
                if n >= used:
                    break
                f.write(chunk)
                n += len(chunk)
        i += 1
    return n


def cmd_speed(a):
    used = parse_size(a.used)
    size = a.size
    work = Path(tempfile.mkdtemp(prefix="dg-speed-"))
    v = Volume(work, ndev=4, size=size, tag=f"speed{os.getpid()}")
    try:
        v.mkfs()
        v.mount()
        fill(v.mnt, used)
        v.umount()
        t = time.time()
        rc, rep, _ = fsck(v.devs, "-n", json_out=True)
        wall = time.time() - t
        gb = rep["bytes_checked"] / 1e9
        print(f"fsck -n: exit {rc}, {rep['pages_checked']} pages "
              f"({gb:.2f} GB incl. parity) checked in {rep['seconds']:.2f} s"
              f" (page pass), {wall:.2f} s wall; "
              f"{gb / rep['seconds']:.2f} GB/s page pass, "
              f"{used / 1e9 / wall:.2f} GB/s of file data end to end")
    finally:
        v.cleanup()
        shutil.rmtree(work, ignore_errors=True)


def cmd_rebuild(a):
    work = Path(tempfile.mkdtemp(prefix="dg-rebuild-"))
    v = Volume(work, ndev=4, size=a.size, tag=f"rebuild{os.getpid()}")
    try:
        v.mkfs()
        v.mount()
        used = fill(v.mnt, parse_size(a.used))
        v.umount()
        size = v.devs[1].stat().st_size
        v.devs[1].unlink()
        with open(v.devs[1], "wb") as f:
            f.truncate(size)
        t = time.time()
        rc, rep, _ = fsck(v.devs, "-y", json_out=True)
        secs = time.time() - t
        rb = [f for f in rep["findings"] if f["code"] == "PR_0_DEV_REBUILT"]
        print(f"rebuild of device 1 of 4 x {a.size} ({used >> 20} MiB of "
              f"files): fsck -y exit {rc} in {secs:.2f} s (includes the "
              f"full check after it); {rb[0]['detail'] if rb else '?'}")
        rc2 = fsck(v.devs, "-n")[0]
        print(f"fsck -n afterwards: exit {rc2}")
    finally:
        v.cleanup()
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("campaign")
    c.add_argument("--trials", type=int, default=2000)
    c.add_argument("--doubles", type=int, default=100)
    c.add_argument("--seed", type=int, default=1)
    s = sub.add_parser("speed")
    s.add_argument("--used", default="2G")
    s.add_argument("--size", default="1G")
    r = sub.add_parser("rebuild")
    r.add_argument("--size", default="1G")
    r.add_argument("--used", default="1G")
    a = ap.parse_args()
    return {"campaign": cmd_campaign, "speed": cmd_speed,
            "rebuild": cmd_rebuild}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main() or 0)
