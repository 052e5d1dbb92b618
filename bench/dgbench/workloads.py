"""Workloads run on a mounted system.  Each returns a list of records:

    {"metric": str, "value": float|None, "unit": str, "better": "higher"|"lower",
     "durable": bool, "error": str|None}

Every run happens in a fresh directory inside the mount that is removed
afterwards, so workloads and systems do not see each other's files.
"""

import json
import os
import re
import shutil
import time

from . import fio, parsers
from .util import Skip, run, which

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_DIR = os.path.dirname(HERE)

SCALES = {
    "full":  {"fio_size": 256 << 20, "fio_runtime": 10, "verify_size": 64 << 20,
              "meta_files": 100_000, "dbench_secs": 20, "dbench_clients": 4,
              "pm_files": 10_000, "pm_tx": 40_000, "fb_secs": 30, "reps": 3,
              "image_size": 1 << 30, "repair_file": 16 << 20},
    "quick": {"fio_size": 32 << 20, "fio_runtime": 2, "verify_size": 8 << 20,
              "meta_files": 5_000, "dbench_secs": 3, "dbench_clients": 2,
              "pm_files": 1_000, "pm_tx": 5_000, "fb_secs": 5, "reps": 2,
              "image_size": 512 << 20, "repair_file": 8 << 20},
}


class Context:
    def __init__(self, scale, logs_dir, bin_dir):
        self.scale = scale
        self.logs_dir = logs_dir
        self.bin_dir = bin_dir


class Workload:
    name = "?"
    group = "?"
    kind = "perf"         # "perf" figures get ratios; "correctness" get pass/fail
    durable = True
    title = ""

    def check(self, ctx):
        pass

    def run(self, system, ctx, rep):
        wdir = os.path.join(system.mnt, f"dgb-{self.name}-{rep}")
        os.makedirs(wdir, exist_ok=True)
        try:
            before = _media(system)
            recs = self._run(wdir, system, ctx, rep)
            return recs + media_records(before, _media(system), self.durable)
        finally:
            shutil.rmtree(wdir, ignore_errors=True)
            os.sync()

    def _log(self, ctx, system, rep, text, ext="txt"):
        path = os.path.join(ctx.logs_dir, f"{system.name}.{self.name}.{rep}.{ext}")
        with open(path, "w") as f:
            f.write(text)
        return path


def _media(system):
    media = getattr(system, "media", None)
    return media() if media else None


def media_records(before, after, durable=True):
    """What the job cost the media (daxguard's status --json "media" counts
    around it; docs/design.md, "What a write costs the media"): bytes stored
    per byte written and fences per write request. Exact counts, not times,
    so one repetition says it; they include whatever the job wrote, fio's
    laying out of its files too. None on systems without the counts, or a
    job that wrote nothing."""
    if not before or not after:
        return []
    written = after["bytes_written"] - before["bytes_written"]
    writes = after["writes"] - before["writes"]
    if written <= 0 or writes <= 0:
        return []
    stored = after["bytes_stored"] - before["bytes_stored"]
    fences = after["fences"] - before["fences"]
    return [_rec("stored/written", stored / written, "x", better="lower", durable=durable),
            _rec("fences/write", fences / writes, "fences", better="lower", durable=durable)]


def _rec(metric, value, unit, better="higher", durable=True, error=None):
    return {"metric": metric, "value": value, "unit": unit, "better": better,
            "durable": durable, "error": error}


class FioWorkload(Workload):
    group = "fio"

    def __init__(self, name):
        self.name = name
        self.opts, self.metric, self.durable = fio.JOBS[name]
        self.title = " ".join(f"{k}={v}" for k, v in self.opts.items())
        if not self.durable:
            self.title += " (PMEM_IS_PMEM_FORCE=1: NOT durable)"

    def check(self, ctx):
        if not which("fio"):
            raise Skip("fio not installed")
        if self.opts["ioengine"] == "libpmem" and "libpmem" not in _fio_engines():
            raise Skip("this fio has no libpmem engine")

    def _run(self, wdir, system, ctx, rep):
        sc = ctx.scale
        args = fio.job_args(self.name, self.opts, wdir, fio.job_size(self.opts, sc["fio_size"]),
                            sc["fio_runtime"])
        env = fio.PMEM_ENV if self.opts["ioengine"] == "libpmem" else None
        cp = run(args, check=False, env=env, cwd=ctx.logs_dir,
                 timeout=sc["fio_runtime"] * 10 + 300)
        self._log(ctx, system, rep, cp.stdout + "\n--- stderr ---\n" + cp.stderr, "json")
        try:
            r = fio.parse(cp.stdout)
        except ValueError as e:
            return [_rec(self.metric, None, "", error=f"{e}; {cp.stderr.strip()[-200:]}")]
        err = None if (cp.returncode == 0 and not r["error"]) else \
            f"fio exit {cp.returncode}, error {r['error']}: {cp.stderr.strip()[-200:]}"
        if self.metric == "bw":
            recs = [_rec("MiB/s", r["bw_mib"] if not err else None, "MiB/s",
                         durable=self.durable, error=err)]
        else:
            recs = [_rec("IOPS", r["iops"] if not err else None, "IOPS",
                         durable=self.durable, error=err)]
        if r["p99_clat_us"] is not None and not err:
            recs.append(_rec("p99 latency", r["p99_clat_us"], "us", better="lower",
                             durable=self.durable))
        return recs


class FioVerify(Workload):
    group = "verify"
    kind = "correctness"

    def __init__(self, name):
        self.name = name
        self.opts = fio.VERIFY_JOBS[name]
        self.title = " ".join(f"{k}={v}" for k, v in self.opts.items())

    check = FioWorkload.check

    def _run(self, wdir, system, ctx, rep):
        args = fio.job_args(self.name, self.opts, wdir, ctx.scale["verify_size"], 0,
                            time_based=False)
        cp = run(args, check=False, timeout=600, cwd=ctx.logs_dir)
        self._log(ctx, system, rep, cp.stdout + "\n--- stderr ---\n" + cp.stderr, "json")
        try:
            ok = cp.returncode == 0 and fio.parse(cp.stdout)["error"] == 0
        except ValueError:
            ok = False
        return [_rec("verified", 1.0 if ok else 0.0, "pass",
                     error=None if ok else f"fio verify failed: {cp.stderr.strip()[-300:]}")]


_ENGINES = None


def _fio_engines():
    global _ENGINES
    if _ENGINES is None:
        _ENGINES = run(["fio", "--enghelp"], check=False).stdout
    return _ENGINES


class Metadata(Workload):
    group = "metadata"

    def __init__(self, layout):
        self.layout = layout
        self.name = f"meta-{layout}"
        self.title = f"create/stat/rename/delete N files, {layout}"

    def check(self, ctx):
        self.binary = build_tool(ctx.bin_dir, "metabench")

    def _run(self, wdir, system, ctx, rep):
        n = ctx.scale["meta_files"]
        limit = getattr(system, "max_files", lambda: None)()
        if limit is not None and n > limit:
            return [_rec("create ops/s", None, "ops/s",
                         error=f"{system.name} can hold about {limit} files open (RLIMIT_NOFILE "
                               f"hard limit), not {n}: raise the limit or use --meta-files")]
        cp = run([self.binary, wdir, str(n), self.layout], check=False, timeout=3600)
        self._log(ctx, system, rep, cp.stdout + cp.stderr)
        if cp.returncode != 0:
            return [_rec("create ops/s", None, "ops/s", error=cp.stderr.strip()[-300:])]
        r = json.loads(cp.stdout)
        return [_rec(f"{ph} ops/s", n / max(r[f"{ph}_s"], 1e-9), "ops/s")
                for ph in ("create", "stat", "rename", "delete")]


def build_tool(bin_dir, name):
    out = os.path.join(bin_dir, name)
    if os.path.exists(out):
        return out
    src = os.path.join(BENCH_DIR, "tools", f"{name}.c")
    cc = which("cc") or which("gcc")
    if not cc:
        raise Skip("no C compiler for bench/tools")
    os.makedirs(bin_dir, exist_ok=True)
    try:
        run([cc, "-O2", "-o", out, src, "-ljson-c"], timeout=120)
    except RuntimeError as e:
        raise Skip(f"cannot build {name}: {e}") from e
    return out


class Dbench(Workload):
    name = "dbench"
    group = "dbench"

    def check(self, ctx):
        if not which("dbench"):
            raise Skip("dbench not installed (apt-get install dbench)")
        self.title = f"{ctx.scale['dbench_clients']} clients, {ctx.scale['dbench_secs']} s, client.txt"

    def _run(self, wdir, system, ctx, rep):
        sc = ctx.scale
        cp = run(["dbench", "-t", str(sc["dbench_secs"]), "-D", wdir, str(sc["dbench_clients"])],
                 check=False, timeout=sc["dbench_secs"] * 20 + 300)
        self._log(ctx, system, rep, cp.stdout + cp.stderr)
        try:
            r = parsers.parse_dbench(cp.stdout)
        except ValueError as e:
            return [_rec("MB/s", None, "MB/s", error=f"{e}: {cp.stderr.strip()[-200:]}")]
        return [_rec("MB/s", r["mb_s"], "MB/s")]


class Postmark(Workload):
    name = "postmark"
    group = "postmark"

    def check(self, ctx):
        if not which("postmark"):
            raise Skip("postmark not installed (apt-get install postmark)")
        self.title = f"{ctx.scale['pm_files']} files, {ctx.scale['pm_tx']} transactions, 512 B-16 KiB"

    def _run(self, wdir, system, ctx, rep):
        sc = ctx.scale
        cfg = os.path.join(ctx.logs_dir, f"{system.name}.postmark.{rep}.cfg")
        with open(cfg, "w") as f:
            f.write(f"set location {wdir}\nset number {sc['pm_files']}\n"
                    f"set transactions {sc['pm_tx']}\nset size 512 16384\n"
                    "set seed 42\nrun\nquit\n")
        t0 = time.monotonic()
        cp = run(["postmark", cfg], check=False, timeout=3600)
        wall = time.monotonic() - t0
        self._log(ctx, system, rep, cp.stdout + cp.stderr)
        try:
            parsers.parse_postmark(cp.stdout)
        except ValueError as e:
            return [_rec("transactions/s", None, "tx/s", error=str(e))]
        return [_rec("transactions/s", sc["pm_tx"] / wall, "tx/s")]


class Filebench(Workload):
    group = "filebench"

    def __init__(self, personality):
        self.personality = personality
        self.name = f"filebench-{personality}"
        self.src = os.path.join(BENCH_DIR, "filebench", f"{personality}.f")
        self.title = f"bench/filebench/{personality}.f"

    def check(self, ctx):
        if not which("filebench"):
            raise Skip("filebench not on PATH (not packaged in Debian 12)")
        if not os.path.exists(self.src):
            raise Skip(f"{self.src} missing")

    def _run(self, wdir, system, ctx, rep):
        f = os.path.join(ctx.logs_dir, f"{system.name}.{self.name}.{rep}.f")
        with open(self.src) as s, open(f, "w") as d:
            d.write(render_personality(s.read(), wdir, ctx.scale["fb_secs"]))
        cp = run(["filebench", "-f", f], check=False, timeout=ctx.scale["fb_secs"] * 20 + 600)
        self._log(ctx, system, rep, cp.stdout + cp.stderr)
        try:
            r = parsers.parse_filebench(cp.stdout + cp.stderr)
        except ValueError as e:
            return [_rec("ops/s", None, "ops/s", error=str(e))]
        return [_rec("ops/s", r["ops_s"], "ops/s"), _rec("MB/s", r["mb_s"], "MB/s")]


def render_personality(text, directory, seconds):
    """Set $dir and the run time in a personality from bench/filebench/."""
    text, n = re.subn(r"^set \$dir=.*$", f"set $dir={directory}", text, flags=re.M)
    if n != 1:
        raise ValueError("personality must contain exactly one 'set $dir=' line")
    text, n = re.subn(r"^run \d+[ \t]*$", f"run {int(seconds)}", text, flags=re.M)
    if n != 1:
        raise ValueError("personality must end with one 'run N' line")
    return text


PERSONALITIES = ["fileserver", "varmail", "webserver", "webproxy"]


def all_workloads():
    w = [FioWorkload(n) for n in fio.JOBS]
    w += [FioVerify(n) for n in fio.VERIFY_JOBS]
    w += [Filebench(p) for p in PERSONALITIES]
    w += [Dbench(), Postmark(), Metadata("flat"), Metadata("tree")]
    return w


# Named selections for --workloads (besides single workload names).
GROUPS = {
    "fio-quick": ["fio-seq-write", "fio-rand-read-1j", "fio-rand-write-1j"],
    # issue 20's targets: the write jobs (1 and 4 writers), the mixes
    # that always run, and the reads that must not get slower
    "write-path": ["fio-seq-write", "fio-seq-write-4j", "fio-rand-write-1j",
                   "fio-rand-write-4j", "dbench", "postmark",
                   "filebench-fileserver", "filebench-varmail",
                   "fio-seq-read", "fio-rand-read-1j"],
    "all": None,   # everything, including repair
}


def select(spec, available_names):
    """Expand a --workloads spec ('fio,metadata,dbench,fio-seq-read') to names."""
    if not spec or spec == "all":
        return list(available_names)
    by_group = {}
    for w in all_workloads():
        by_group.setdefault(w.group, []).append(w.name)
    out = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        if item in GROUPS and GROUPS[item]:
            names = GROUPS[item]
        elif item in by_group:
            names = by_group[item]
        elif item in available_names:
            names = [item]
        else:
            raise ValueError(f"unknown workload or group {item!r}; known: "
                             f"{', '.join(sorted(set(by_group) | set(GROUPS) | set(available_names)))}")
        out += [n for n in names if n not in out]
    return out
