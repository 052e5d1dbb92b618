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
  bench/campaign.py lostwrite --trials 10000 --seed 1 --out DIR
  bench/campaign.py speed --used 2G
  bench/campaign.py rebuild --size 1G
  bench/campaign.py compound --states 50000 --out DIR

lostwrite (issue 15): firmware-style lost, stale, zeroed and misdirected
writes put into the images from the outside, not with daxguard-inject
(tests/e2e/firmware.py); the table counts kind x target x outcome per
parity. --trials is the total, spread evenly over the (parity, kind)
pairs. A failing trial prints the command that reproduces it
(--repro TRIAL_SEED, with --keep DIR for the faulted images). The kinds
alloc-lost, alloc-zero, alloc-misdirect and garbage (issue 34) hit the
allocation bitmap, the init map (both slots) and all-zero pages (rows
never written): docs/integrity.md, "Faults in the allocation state".

compound (issue 29): a crash plus one fault within parity. Runs the
crash recorder's compound campaign (tests/crash/test_crash.c,
compound_p1 and compound_p2; the test suite runs a few thousand states
of it) denser: every crash point (--stride), --faults states per crash
point and policy, one workload per seed, seeds 1, 2, ... until --states
states were checked. The table counts fault kind x target x outcome per
parity: exact (every page right), eio (the faulted page given up, the
rest right) and failed (a refused open, wrong or old bytes, EIO on
another page). The targets bitmap, cmap and free (issue 34) put one
state in eight on the allocation bitmap, the init map or never-written
pages; every open must then load the bitmap as recorded, and the map
must cover every page in use. The target journal (issue 31) puts one
state in eight on a page of a journal copy the run wrote (headers or
log, any copy): the replay must then find every entry it needs on the
other copies, every page exact. The target csum puts one state in eight
on a copy of a checksum page that covers the region (a handful of pages,
which the draw by page almost never met). A failure prints the
environment that reproduces it.
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from conftest import BUILD, Volume, run  # noqa: E402
from dgfault import KINDS, TARGETS, diff_manifest, fsck, inject, \
    make_tree, manifest, manifest_tolerant  # noqa: E402
import firmware  # noqa: E402

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
    # page) is named by the repair that removed it; a file whose page
    # fsck -y gave up (marked lost, its row re-protected) by that repair.
    named = {f["file"] for f in rep2["findings"] if f.get("file") and
             (not f["fixed"] or f["code"] in ("PR_3_FILE_LOST",
                                              "PR_2_PAGE_GIVEN_UP"))}
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


# lostwrite: the kinds per parity that the test suite runs too
# (tests/e2e/test_lost_writes.py); zero2 under parity 1 is beyond parity.
# The allocation-state kinds (issue 34) run under both.
LW_KINDS = {1: ["lost", "older", "stale", "window", "zero", "misdirect",
                "misdirect-old", "lost2", "zero2"] + list(firmware.ALLOC_KINDS),
            2: ["lost", "older", "stale", "window", "zero", "zero2",
                "misdirect", "misdirect-old", "lost2", "lost3"]
            + list(firmware.ALLOC_KINDS)}


def lostwrite_table(results, out=sys.stdout):
    """Markdown: parity x kind x target rows, outcome columns."""
    cols = firmware.OUTCOMES[::-1]
    t = firmware.tally(results)
    print("| parity | kind | target | within parity | trials | "
          + " | ".join(cols) + " |", file=out)
    print("|---" * (5 + len(cols)) + "|", file=out)
    tot = dict.fromkeys(cols, 0)
    for key in sorted(t, key=lambda k: (k[0], list(firmware.KINDS).index(
            k[1]), k[2])):
        row = t[key]
        print(f"| {key[0]} | {key[1]} | {key[2]} | "
              f"{'yes' if key[3] else 'no'} | {sum(row.values())} | "
              + " | ".join(str(row[c]) for c in cols) + " |", file=out)
        for c in cols:
            tot[c] += row[c]
    print(f"| all | | | | {sum(tot.values())} | "
          + " | ".join(str(tot[c]) for c in cols) + " |", file=out)
    return t


def write_lostwrite(out, results, conf):
    """summary.md, summary.json and failures.txt in out."""
    out.mkdir(parents=True, exist_ok=True)
    t = firmware.tally(results)
    bad = [r for r in results if firmware.failed(r)]
    bad.sort(key=lambda r: firmware.OUTCOMES.index(r["outcome"]))
    with open(out / "summary.md", "w") as f:
        print(f"# lostwrite campaign: {len(results)} trials"
              + (" (partial: still running)" if conf.get("partial") else "")
              + "\n", file=f)
        print("```\n" + json.dumps(conf) + "\n```\n", file=f)
        print("Outcomes, gravest first: " + ", ".join(firmware.OUTCOMES)
              + ". Within parity only OK passes; beyond parity OK "
              "and EIO (data given up and named by fsck).\n", file=f)
        lostwrite_table(results, out=f)
        wrong = [r for r in results if r["outcome"] == "WRONG_BYTES"]
        if wrong:
            print("\nReproducers of WRONG_BYTES (first of each kind "
                  "and target):\n", file=f)
            seen = set()
            for r in wrong:
                k = (r["parity"], r["kind"], r["target"])
                if k not in seen:
                    seen.add(k)
                    print(f"- p{r['parity']} {r['kind']} {r['target']}: "
                          f"`{firmware.repro_cmd(r)}`", file=f)
    rows = [{"parity": k[0], "kind": k[1], "target": k[2],
             "within": k[3], "trials": sum(v.values()), **v}
            for k, v in sorted(t.items(), key=str)]
    with open(out / "summary.json", "w") as f:
        json.dump({"config": conf, "table": rows}, f, indent=1)
    with open(out / "failures.txt", "w") as f:
        for r in bad:
            print(firmware.report(r, width=2000), file=f)
    return bad


def cmd_lostwrite(a):
    parities = [int(p) for p in a.parity.split(",")]
    kinds = {p: a.kinds.split(",") if a.kinds else LW_KINDS[p]
             for p in parities}
    pairs = sum(len(k) for k in kinds.values())
    per = a.trials if a.repro is not None else max(1, a.trials // pairs)
    work = Path(tempfile.mkdtemp(prefix="dg-lostwrite-"))
    bases, finished = [], []
    t0 = time.time()
    lock = threading.Lock()
    rev = subprocess.run(["git", "-C", str(ROOT), "describe", "--always",
                          "--dirty"], capture_output=True, text=True)
    conf = {"trials": 0, "seed": a.seed, "bases": a.bases,
            "parity": parities, "kinds": kinds, "size": a.size,
            "chunk": a.chunk, "remap": a.remap, "jobs": a.jobs,
            "seconds": 0,
            "build": str(firmware.BUILD), "label": a.label,
            "harness": rev.stdout.strip(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}

    def progress(r):
        with lock:
            finished.append(r)
            n = len(finished)
            if firmware.failed(r) and a.verbose:
                print(firmware.report(r), file=sys.stderr)
            if n % 200 == 0:
                print(f"  {n}/{per * pairs} trials, "
                      f"{time.time() - t0:.0f} s", file=sys.stderr)
            if a.out and n % 500 == 0:
                write_lostwrite(Path(a.out), finished, dict(
                    conf, trials=n, seconds=round(time.time() - t0),
                    partial=True))

    try:
        for p in parities:
            for j in range(a.bases):
                b = firmware.Base(work, parity=p, seed=a.seed + j,
                                  size=a.size, chunk=a.chunk,
                                  remap=a.remap and p == 1)
                bases.append(b)
                b.build()
                print(f"base p{p} seed {b.seed}: {b.summary()}",
                      file=sys.stderr)
        if a.repro is not None:
            for b in bases:
                for k in kinds[b.parity]:
                    r = firmware.run_trial(b, k, a.repro, work, keep=a.keep)
                    print(firmware.report(r, width=100000))
                    print("\n".join(r["problems"][24:]))
            if a.keep:
                print(f"faulted images (before any check) in {a.keep}")
            return 0
        results = []
        for p in parities:
            results += firmware.campaign(
                [b for b in bases if b.parity == p], kinds[p], per, a.seed,
                work, jobs=a.jobs, progress=progress)
    finally:
        for b in bases:
            b.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    secs = time.time() - t0
    lostwrite_table(results)
    bad = [r for r in results if firmware.failed(r)]
    bad.sort(key=lambda r: firmware.OUTCOMES.index(r["outcome"]))
    print(f"\n{len(results)} trials in {secs:.0f} s, {a.jobs} at a time; "
          f"{len(bad)} against the rules, "
          f"{sum(r['outcome'] == 'WRONG_BYTES' for r in results)} "
          "WRONG_BYTES")
    for r in bad[:a.show]:
        print(firmware.report(r))
    if a.out:
        write_lostwrite(Path(a.out), results,
                        dict(conf, trials=len(results), seconds=round(secs)))
        print(f"wrote {a.out}/summary.md, summary.json, failures.txt")
    return 0 if not bad else 1


# compound: the test binary's summary lines (test_crash.c, compound_run())
COMPOUND_LINE = re.compile(
    r"^# compound (?P<tag>\S+) seed=(?P<seed>\d+) kind=(?P<kind>\S+) "
    r"target=(?P<target>\S+) states=(?P<states>\d+) exact=(?P<exact>\d+) "
    r"eio=(?P<eio>\d+) failed=(?P<failed>\d+)$")
COMPOUND_COLS = ["states", "exact", "eio", "failed"]


def compound_one(parity, seed, a):
    """One workload: (rows of counts, failure lines, seconds)."""
    env = dict(os.environ, COMPOUND_SEED=str(seed),
               COMPOUND_FAULTS=str(a.faults), COMPOUND_STRIDE=str(a.stride),
               COMPOUND_LEAN=str(int(a.lean)),
               COMPOUND_FRESH=str(int(a.fresh)), CRASH_JOBS=str(a.jobs))
    cmd = ["nice", str(BUILD / "tests" / "crash" / "test_crash"),
           f"compound_p{parity}"]
    t0 = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    rows = []
    for line in p.stdout.splitlines():
        m = COMPOUND_LINE.match(line)
        if m:
            rows.append({"parity": parity, "seed": seed,
                         "kind": m["kind"], "target": m["target"],
                         **{c: int(m[c]) for c in COMPOUND_COLS}})
    fails = [ln for ln in p.stderr.splitlines()
             if "reproduce:" in ln or "died" in ln or "exited badly" in ln]
    if p.returncode and not fails:
        fails = [f"p{parity} seed {seed}: exit {p.returncode}: "
                 + (p.stderr.strip().splitlines() or ["?"])[-1]]
    if not rows:
        fails.append(f"p{parity} seed {seed}: no summary lines "
                     f"(exit {p.returncode})")
    env_s = (f"COMPOUND_SEED={seed} COMPOUND_FAULTS={a.faults} "
             f"COMPOUND_STRIDE={a.stride} COMPOUND_LEAN={int(a.lean)} "
             f"COMPOUND_FRESH={int(a.fresh)}")
    fails = [f"{f} [{env_s} {' '.join(cmd[1:])}]" for f in fails]
    return rows, fails, time.time() - t0


def compound_table(rows, out=sys.stdout):
    """Markdown: parity x kind x target, outcome columns."""
    t = defaultdict(lambda: dict.fromkeys(COMPOUND_COLS, 0))
    for r in rows:
        for c in COMPOUND_COLS:
            t[(r["parity"], r["kind"], r["target"])][c] += r[c]
    print("| parity | fault | target | states | exact | eio (faulted "
          "page given up) | failed |", file=out)
    print("|---" * 7 + "|", file=out)
    tot = dict.fromkeys(COMPOUND_COLS, 0)
    for key in sorted(t):
        v = t[key]
        if not v["states"]:
            continue
        print(f"| {key[0]} | {key[1]} | {key[2]} | "
              + " | ".join(str(v[c]) for c in COMPOUND_COLS) + " |",
              file=out)
        for c in COMPOUND_COLS:
            tot[c] += v[c]
    print("| all | | | " + " | ".join(str(tot[c]) for c in COMPOUND_COLS)
          + " |", file=out)
    return tot


def write_compound(out, rows, fails, conf):
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "summary.md", "w") as f:
        print(f"# compound campaign: {sum(r['states'] for r in rows)} "
              "crash states, each with one fault within parity\n", file=f)
        print("```\n" + json.dumps(conf) + "\n```\n", file=f)
        print("A crash at a persist point of a recorded run (every policy "
              "for the writes not yet durable), plus one fault on one page "
              "of one device: a flipped byte, a zeroed page, a lost write "
              "(the page as the recording began) or a misdirected write "
              "(another page of the device over it), on a data page of the "
              "updated region, the parity of its rows or the checksum page "
              "copies that cover them, or (one state in eight) on a page "
              "of the allocation bitmap, a copy of the init map or a "
              "never-written page (bitmap, cmap, free: the bitmap must "
              "load as recorded, the map cover every page in use, a "
              "never-written page read zeros), or (one state in eight) on a "
              "page of a journal copy the run wrote (journal: every page "
              "must come back exact), or (one state in eight) on a copy of "
              "a checksum page that covers the region (csum); then the open (which replays the "
              "journal) and every page read back, twice. exact: every page "
              "right; eio: the faulted page given up (docs/integrity.md, "
              "\"Replay under faults\"), every other page right; failed: a "
              "refused open, old or wrong bytes, or EIO anywhere else.\n",
              file=f)
        compound_table(rows, out=f)
        if fails:
            print("\nFailures (first 50):\n", file=f)
            for x in fails[:50]:
                print(f"- `{x}`", file=f)
    with open(out / "summary.json", "w") as f:
        json.dump({"config": conf, "rows": rows, "failures": fails}, f,
                  indent=1)


def cmd_compound(a):
    parities = [int(p) for p in a.parity.split(",")]
    rev = subprocess.run(["git", "-C", str(ROOT), "describe", "--always",
                          "--dirty"], capture_output=True, text=True)
    conf = {"states_wanted": a.states, "faults": a.faults,
            "stride": a.stride, "jobs": a.jobs, "parity": parities,
            "build": str(BUILD), "label": a.label,
            "harness": rev.stdout.strip(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    rows, fails, seeds = [], [], []
    t0 = time.time()
    seed = a.seed
    while sum(r["states"] for r in rows) < a.states:
        for parity in parities:
            r, f, secs = compound_one(parity, seed, a)
            rows += r
            fails += f
            print(f"  p{parity} seed {seed}: "
                  f"{sum(x['states'] for x in r)} states, "
                  f"{sum(x['failed'] for x in r)} failed, {secs:.0f} s; "
                  f"{sum(x['states'] for x in rows)} in all",
                  file=sys.stderr)
        seeds.append(seed)
        seed += 1
        if a.out:
            write_compound(Path(a.out), rows, fails, dict(
                conf, seeds=seeds, seconds=round(time.time() - t0),
                partial=True))
    conf.update(seeds=seeds, seconds=round(time.time() - t0))
    tot = compound_table(rows)
    print(f"\n{tot['states']} states in {conf['seconds']} s: "
          f"{tot['exact']} exact, {tot['eio']} faulted page given up, "
          f"{tot['failed']} failed")
    for x in fails[:a.show]:
        print("FAIL", x)
    if a.out:
        write_compound(Path(a.out), rows, fails, conf)
        print(f"wrote {a.out}/summary.md, summary.json")
    return 0 if not fails and not tot["failed"] else 1


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
    lw = sub.add_parser("lostwrite")
    lw.add_argument("--trials", type=int, default=10000,
                    help="in all, spread over the (parity, kind) pairs")
    lw.add_argument("--seed", type=int, default=1,
                    help="base volumes get seed, seed+1, ...; trial i of "
                    "each kind the trial seed seed*1000000+i")
    lw.add_argument("--bases", type=int, default=3,
                    help="populated base volumes per parity")
    lw.add_argument("--parity", default="1,2")
    lw.add_argument("--kinds", help="comma-separated; default per parity: "
                    + "; ".join(f"p{p}: {','.join(k)}"
                                for p, k in LW_KINDS.items()))
    lw.add_argument("--size", default="16M")
    lw.add_argument("--chunk")
    lw.add_argument("--remap", action="store_true",
                    help="parity-1 bases made --remap: whole-page "
                    "overwrites redirected (docs/design.md)")
    lw.add_argument("--jobs", type=int, default=3)
    lw.add_argument("--out", help="directory for summary.md, summary.json "
                    "and failures.txt")
    lw.add_argument("--show", type=int, default=10,
                    help="failing trials to print")
    lw.add_argument("--repro", type=int, metavar="TRIAL_SEED",
                    help="run only this trial (of every kind given)")
    lw.add_argument("--keep", help="with --repro: copy the faulted images "
                    "here")
    lw.add_argument("--label", help="what was measured (recorded in the "
                    "summary), e.g. the build's commit")
    lw.add_argument("-v", "--verbose", action="store_true",
                    help="print every failing trial as it ends")
    cp = sub.add_parser("compound")
    cp.add_argument("--states", type=int, default=50000,
                    help="run workloads (seeds) until this many states")
    cp.add_argument("--faults", type=int, default=4,
                    help="states (each another fault) per crash point and "
                    "policy (COMPOUND_FAULTS)")
    cp.add_argument("--stride", type=int, default=1,
                    help="every n-th crash point (COMPOUND_STRIDE)")
    cp.add_argument("--seed", type=int, default=1,
                    help="first workload seed (COMPOUND_SEED)")
    cp.add_argument("--parity", default="1,2")
    cp.add_argument("--jobs", type=int, default=1,
                    help="worker processes per run (CRASH_JOBS)")
    cp.add_argument("--lean", action="store_true",
                    help="volumes made with --lean-journal (COMPOUND_LEAN)")
    cp.add_argument("--fresh", action="store_true",
                    help="the updated region in a checksum index no one "
                         "has written, so the first update sets it up "
                         "(COMPOUND_FRESH)")
    cp.add_argument("--out", help="directory for summary.md, summary.json")
    cp.add_argument("--label", help="what was measured, e.g. the commit")
    cp.add_argument("--show", type=int, default=10)
    a = ap.parse_args()
    return {"campaign": cmd_campaign, "lostwrite": cmd_lostwrite,
            "speed": cmd_speed, "rebuild": cmd_rebuild,
            "compound": cmd_compound}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main() or 0)
