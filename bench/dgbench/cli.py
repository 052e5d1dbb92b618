"""bench/run.py: set up every selected system, run the workloads interleaved,
tear everything down (also on errors and signals), write JSON, Markdown, PNG."""

import argparse
import contextlib
import os
import shutil
import signal
import sys
import time

from . import machine, plots, repair, report, stats
from .systems import SYSTEM_NAMES, Config, all_systems, mounted
from .util import Skip, is_mounted, log
from .workloads import SCALES, Context, all_workloads, select

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_ROOT = os.path.dirname(BENCH_DIR)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/run.py", description=__doc__)
    p.add_argument("--quick", action="store_true",
                   help="small sizes, short runtimes, 2 repetitions (about 10 minutes)")
    p.add_argument("--systems", default="all",
                   help=f"comma-separated, default all: {','.join(SYSTEM_NAMES)}")
    p.add_argument("--workloads", default="all",
                   help="comma-separated workload names or groups: fio, fio-quick, verify, "
                        "filebench, dbench, postmark, metadata, repair, all")
    p.add_argument("--reps", type=int, help="repetitions (default 3, quick 2)")
    p.add_argument("--out", help="output directory (default bench/results/<timestamp>)")
    p.add_argument("--build-dir", default="build", help="meson build dir with daxguard binaries")
    p.add_argument("--image-size", help="size of each device image, e.g. 1G (default 1G, quick 512M)")
    p.add_argument("--meta-files", type=int,
                   help="files of the metadata workloads (default 100000, quick 5000)")
    p.add_argument("--seed", type=int, default=1, help="seed for the repair workload's faults")
    p.add_argument("--list", action="store_true", help="list systems and workloads and exit")
    return p.parse_args(argv)


def _raise_interrupt(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None, system_factory=None):
    args = parse_args(argv)
    workload_objs = {w.name: w for w in all_workloads()}
    wl_names = list(workload_objs) + ["repair"]
    if args.list:
        print("systems:  ", " ".join(SYSTEM_NAMES))
        print("workloads:", " ".join(wl_names))
        return 0
    mode = "quick" if args.quick else "full"
    scale = dict(SCALES[mode])
    if args.reps:
        scale["reps"] = args.reps
    if args.meta_files:
        scale["meta_files"] = args.meta_files
    if args.image_size:
        from .util import parse_size
        scale["image_size"] = parse_size(args.image_size)
    try:
        sys_names = SYSTEM_NAMES if args.systems == "all" else \
            [s.strip() for s in args.systems.split(",") if s.strip()]
        bad = [s for s in sys_names if s not in SYSTEM_NAMES]
        if bad:
            raise ValueError(f"unknown system(s) {', '.join(bad)}; known: {', '.join(SYSTEM_NAMES)}")
        selected = select(args.workloads, wl_names)
    except ValueError as e:
        print(f"bench/run.py: {e}", file=sys.stderr)
        return 2

    out = os.path.abspath(args.out or os.path.join(BENCH_DIR, "results",
                                                   time.strftime("%Y%m%d-%H%M%S")))
    logs, plot_dir, bin_dir = (os.path.join(out, d) for d in ("logs", "plots", "bin"))
    for d in (logs, plot_dir, bin_dir):
        os.makedirs(d, exist_ok=True)
    work_root = f"/dev/shm/dgbench-{os.getpid()}"
    os.makedirs(work_root, exist_ok=True)
    build_dir = os.path.abspath(args.build_dir if os.path.isabs(args.build_dir) or
                                os.path.isdir(args.build_dir) else
                                os.path.join(REPO_ROOT, args.build_dir))
    cfg = Config(work_root, build_dir, scale["image_size"], bin_dir, REPO_ROOT)

    def make_system(name):
        if system_factory:
            return system_factory(name, cfg)
        return {s.name: s for s in all_systems(cfg)}[name]

    old = {s: signal.signal(s, _raise_interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    t_start = time.time()
    results = {
        "meta": {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "mode": mode,
                 "reps": scale["reps"], "scale": scale, "argv": sys.argv[1:] if argv is None else argv,
                 "build_dir": build_dir, "out": out, "work_root": work_root,
                 "complete": False},
        "machine": machine.facts(REPO_ROOT),
        "systems": {}, "workloads": {}, "baselines": stats.BASELINES,
        "raw": [], "repair": [],
    }
    ctx = Context(scale, logs, bin_dir)
    rc = 0
    try:
        perf = [n for n in selected if n != "repair"]
        for n in perf:
            w = workload_objs[n]
            try:
                w.check(ctx)
                results["workloads"][n] = {"status": "ok"}
            except Skip as e:
                results["workloads"][n] = {"status": "skipped", "reason": str(e)}
            results["workloads"][n].update(title=w.title, group=w.group, kind=w.kind,
                                           durable=w.durable)
        runnable = [workload_objs[n] for n in perf if results["workloads"][n]["status"] == "ok"]
        live = []
        with contextlib.ExitStack() as stack:
            for name in sys_names:
                system = make_system(name)
                log(f"setting up {name}")
                try:
                    stack.enter_context(mounted(system))
                    results["systems"][name] = {"status": "ok", "info": system.info()}
                    live.append(system)
                except Skip as e:
                    log(f"{name}: skipped: {e}")
                    results["systems"][name] = {"status": "skipped", "reason": str(e),
                                                "info": system.info()}
            if runnable and live:
                _run_interleaved(live, runnable, ctx, scale["reps"], results,
                                 checkpoint=lambda: report.write_json(
                                     results, os.path.join(out, "results.json")))
        if "repair" in selected:
            results["workloads"]["repair"] = {"status": "ok", "group": "repair",
                                              "kind": "correctness", "title": "injected faults"}
            ok = [s for s in sys_names if results["systems"][s]["status"] == "ok"]
            for s in sys_names:
                if s not in ok:
                    results["repair"] += [{"system": s, "fault": f, "skipped":
                                           "system skipped: " + results["systems"][s]["reason"]}
                                          for f in repair.FAULTS]
            results["repair"] += repair.run_repair(make_system, ok, scale, args.seed,
                                                   os.path.join(logs, "repair.jsonl"))
        results["meta"]["complete"] = True
    except LowMemory as e:
        log(f"stopped: {e}; everything set up has been torn down")
        results["meta"]["interrupted"] = str(e)
        rc = 3
    except KeyboardInterrupt as e:
        log(f"interrupted ({e}); everything set up has been torn down")
        results["meta"]["interrupted"] = str(e) or "SIGINT"
        rc = 130
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        results["meta"]["duration_s"] = time.time() - t_start
        results["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
        finish(results, out)
        if not any(is_mounted(os.path.join(work_root, d, "mnt"))
                   for d in os.listdir(work_root)):
            shutil.rmtree(work_root, ignore_errors=True)
        else:
            log(f"WARNING: something is still mounted under {work_root}")
    return rc


class LowMemory(Exception):
    """Memory ran low: device images on /dev/shm live in RAM, and running on
    would end in the OOM killer taking the harness and every daemon with it."""


# Stop before a workload when less than this is available (MemAvailable).
MIN_AVAILABLE = 2 << 30


def mem_available(meminfo="/proc/meminfo"):
    """Bytes the kernel says can be allocated without swapping."""
    with open(meminfo) as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def _run_interleaved(live, workloads, ctx, reps, results, checkpoint=None,
                     available=None):
    """rep -> workload -> system, system order rotated each repetition, so slow
    drift of the machine (thermal, page cache, background load) hits all alike.
    After each workload the raw results so far go to disk (checkpoint), so even
    a SIGKILL leaves them; before each, low memory stops the run cleanly."""
    available = available or mem_available
    for rep in range(reps):
        for wi, w in enumerate(workloads):
            k = (rep + wi) % len(live)
            order = live[k:] + live[:k]
            avail = available()
            if avail is not None and avail < MIN_AVAILABLE:
                raise LowMemory(f"only {avail >> 20} MiB of memory available before "
                                f"{w.name} (rep {rep + 1}); use a smaller --image-size")
            for pos, system in enumerate(order):
                log(f"rep {rep + 1}/{reps} {w.name} on {system.name}")
                t0 = time.time()
                try:
                    recs = w.run(system, ctx, rep)
                except Exception as e:  # noqa: BLE001 - record it, keep going
                    recs = [{"metric": "error", "value": None, "unit": "", "better": "higher",
                             "durable": w.durable, "error": f"{type(e).__name__}: {e}"}]
                for r in recs:
                    r.update(system=system.name, workload=w.name, rep=rep, order=pos,
                             t_start=t0, seconds=time.time() - t0)
                    results["raw"].append(r)
            if checkpoint:
                checkpoint()


def finish(results, out):
    """Compute summaries and ratios from raw records; write JSON, plots, Markdown."""
    results["summary"] = stats.aggregate(results["raw"])
    results["ratios"] = stats.ratios(results["summary"])
    try:
        results["plots"] = plots.make_all(results, os.path.join(out, "plots"))
    except Exception as e:  # noqa: BLE001 - a plot bug must not lose the numbers
        results["plots"] = []
        results["meta"]["plot_error"] = f"{type(e).__name__}: {e}"
    report.write_json(results, os.path.join(out, "results.json"))
    report.write_markdown(results, os.path.join(out, "results.md"))
    log(f"results in {out}/results.md")
