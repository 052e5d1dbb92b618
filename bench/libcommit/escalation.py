#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Issue 19: what escalating dirty tracking to userfaultfd +
PAGEMAP_SCAN buys a sync of many scattered pages, and what a 1-page
sync in a large map costs with it on.

Per repetition, in alternating order: `sync_latency` on a 1 GiB
libcommit map with 4,096 random dirty pages per round, once as shipped
(page-by-page tracking hands over to the kernel at 128 dirty pages) and
once with LIBCOMMIT_NO_UFFD=1 (page by page throughout: a signal, an
mprotect and a remap per dirty page); then 1 dirty page per round.
Reports each repetition's ratio off / on of the median round (the stores,
whose first touch of a page is the tracking, plus the sync) and of the
median sync alone, and the 1-page sync's median. Sets up a parity-1
volume of 4 x 4 GiB sparse images on /dev/shm and always tears it down.

With --base-daemon PATH (a daxguard binary of another build, e.g. the
commit before a change to the daemon's commit path), every repetition
also remounts the same volume under that daemon and measures the same
4,096-page rounds on and off, and the daemon's CPU per 4,096-page
commit of each build (its CPU over 42 rounds less over 2, / 40), and
reports base / this build: a change to the daemon measured in one run.

usage: escalation.py [--reps 3] [--rounds 15] [--base-daemon PATH]
                     [--out FILE.json]
"""
import argparse
import json
import os
import statistics
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_kernels import BUILD, DgVol, kv_parse, log, run  # noqa: E402

LAT = BUILD / "bench" / "libcommit" / "sync_latency"
MAP_MIB = 1024
NDIRTY = 4096


def sync_latency(path, rounds, ndirty, env=None):
    """The dirty= line of one sync_latency run, as a dict."""
    old = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env or old)
        p = run([LAT, path, MAP_MIB, rounds, ndirty], timeout=600)
    finally:
        os.environ.clear()
        os.environ.update(old)
    line = [l for l in p.stdout.splitlines() if l.startswith("dirty=")][0]
    return {k: float(v) for k, v in kv_parse(line).items()}


def daemon_cpu_ms(vol, path, daemon):
    """CPU (user + system) the daemon spends per 4,096-page commit:
    its CPU over 42 rounds less over 2 (the map, which reads the whole
    1 GiB, cancels out), / 40. Mounts `daemon` (None: this build's)."""
    tck = os.sysconf("SC_CLK_TCK")

    def cpu():
        f = open(f"/proc/{vol.proc.pid}/stat").read().rsplit(")", 1)[1]
        f = f.split()
        return (int(f[11]) + int(f[12])) / tck

    vol.umount()
    vol.mount(daemon)
    used = {}
    for n in (2, 42):
        c0 = cpu()
        sync_latency(path, n, NDIRTY)
        used[n] = cpu() - c0
    vol.umount()
    vol.mount()
    return (used[42] - used[2]) / 40 * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--base-daemon")
    ap.add_argument("--out")
    args = ap.parse_args()
    work = Path(f"/dev/shm/dglcesc-{uuid.uuid4().hex[:8]}")
    work.mkdir()
    vol = DgVol(work, work.name[-8:], "v")
    reps = []
    try:
        vol.mkfs()
        vol.mount()
        f = vol.mnt / "big"
        f.write_bytes(b"")
        off_env = dict(os.environ, LIBCOMMIT_NO_UFFD="1")
        for r in range(args.reps):
            order = [("on", None), ("off", off_env)]
            if r % 2:
                order.reverse()
            got = {name: sync_latency(f, args.rounds, NDIRTY, env)
                   for name, env in order}
            one = sync_latency(f, args.rounds * 4, 1)
            base = {}
            if args.base_daemon:
                vol.umount()
                vol.mount(args.base_daemon)
                base = {name: sync_latency(f, args.rounds, NDIRTY, env)
                        for name, env in reversed(order)}
                vol.umount()
                vol.mount()
            rep = {
                "on": got["on"], "off": got["off"], "one_page": one,
                "round_off_over_on": got["off"]["round_median_us"] /
                got["on"]["round_median_us"],
                "sync_off_over_on": got["off"]["median_us"] /
                got["on"]["median_us"],
            }
            if base:
                rep["base"] = base
                for k in ("on", "off"):
                    rep[f"sync_{k}_base_over_new"] = \
                        base[k]["median_us"] / got[k]["median_us"]
                    rep[f"round_{k}_base_over_new"] = \
                        base[k]["round_median_us"] / got[k]["round_median_us"]
                rep["base_round_off_over_on"] = \
                    base["off"]["round_median_us"] / \
                    base["on"]["round_median_us"]
                cpu = {}
                for name in (("base", "new") if r % 2 else ("new", "base")):
                    cpu[name] = daemon_cpu_ms(
                        vol, f, args.base_daemon if name == "base" else None)
                rep["daemon_cpu_ms_base"] = cpu["base"]
                rep["daemon_cpu_ms_new"] = cpu["new"]
                log(f"rep {r}: daemon CPU per commit: base "
                    f"{cpu['base']:.1f} ms, new {cpu['new']:.1f} ms")
                log(f"rep {r}: base daemon: round on "
                    f"{base['on']['round_median_us']:.0f} us (sync "
                    f"{base['on']['median_us']:.0f}), off "
                    f"{base['off']['round_median_us']:.0f} us; base/new "
                    f"sync on {rep['sync_on_base_over_new']:.2f}, off "
                    f"{rep['sync_off_base_over_new']:.2f}")
            on, off = got["on"], got["off"]
            log(f"rep {r}: 4096 pages: round on {on['round_median_us']:.0f} us"
                f" (sync {on['median_us']:.0f}), off "
                f"{off['round_median_us']:.0f} us (sync {off['median_us']:.0f})"
                f"; off/on round {rep['round_off_over_on']:.2f}, sync "
                f"{rep['sync_off_over_on']:.2f}; 1 page in 1 GiB: sync "
                f"{one['median_us']:.0f} us (p90 {one['p90_us']:.0f})")
            reps.append(rep)
    finally:
        vol.cleanup()
        for p in sorted(work.rglob("*"), reverse=True):
            p.rmdir() if p.is_dir() else p.unlink()
        work.rmdir()
    keys = ["round_off_over_on", "sync_off_over_on"]
    if args.base_daemon:
        keys += ["base_round_off_over_on", "sync_on_base_over_new",
                 "sync_off_base_over_new", "round_on_base_over_new",
                 "round_off_base_over_new", "daemon_cpu_ms_base",
                 "daemon_cpu_ms_new"]
    summ = {k: statistics.median(x[k] for x in reps) for k in keys}
    summ["one_page_sync_median_us"] = statistics.median(
        x["one_page"]["median_us"] for x in reps)
    print(json.dumps(summ, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps({"reps": reps, "summary": summ},
                                             indent=1))


if __name__ == "__main__":
    main()
