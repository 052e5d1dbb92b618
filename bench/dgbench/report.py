"""results.json and results.md: every number here comes from the raw records."""

import json

from .stats import BASELINES, KEY_RATIOS


def fmt(v):
    if v is None:
        return "–"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def fmt_ratio(r):
    if not r:
        return "–"
    s = f"{r['ratio']:.2f}× [{r['lo']:.2f}–{r['hi']:.2f}]" if r["lo"] is not None else \
        f"{r['ratio']:.2f}×"
    return s if r["significant"] else s + " ≈"


def write_json(results, path):
    with open(path, "w") as f:
        json.dump(results, f, indent=1, sort_keys=False, default=str)


def _table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
    return out


def _yn(v):
    return {True: "yes", False: "**no**", None: "–"}.get(v, str(v))


def markdown(results):
    m = results["machine"]
    meta = results["meta"]
    L = [f"# daxguard benchmark, {meta.get('started', '?')}", ""]
    L.append(f"Machine: {m.get('cores')} cores ({m.get('cpu_model')}), {m.get('mem_gib')} GiB RAM, "
             f"kernel {m.get('kernel')}, {m.get('os')}. fio {m['versions'].get('fio')}. "
             f"Mode: {meta.get('mode')}, {meta.get('reps')} repetitions, systems interleaved "
             f"(order rotated each repetition). Run took {fmt(meta.get('duration_s'))} s.")
    L += ["", "How to read: each cell is the median over the repetitions; the spread is min–max. "
          "A ratio is median(system) / median(baseline) from this same run, with its worst-case "
          "range over the repetitions in brackets; **≈ marks a ratio whose range contains 1.0**, "
          "i.e. a difference not larger than the noise. For IOPS, MiB/s and ops/s higher is "
          "better, so a ratio below 1 is a cost; for latency lower is better.", ""]

    L += ["## Systems", ""]
    rows = []
    for name, s in results["systems"].items():
        info = s.get("info") or {}
        rows.append([name, s["status"] + (f": {s['reason']}" if s.get("reason") else ""),
                     info.get("redundancy", ""), info.get("description", "")])
    L += _table(["system", "status", "redundancy", "setup"], rows) + [""]
    L += ["Baselines (from `dgbench/stats.py` BASELINES): " + "; ".join(
        f"{s} vs {', '.join(b for b, _ in bl)}" for s, bl in BASELINES.items()) + ".", ""]

    summary, ratios = results.get("summary", {}), results.get("ratios", {})
    wl = results["workloads"]
    perf = [w for w in summary if wl.get(w, {}).get("kind", "perf") == "perf"]
    if perf:
        L += ["## Summary: ratios to the same-run baseline", ""]
        pairs = [(s, b) for s, b in KEY_RATIOS
                 if any(ratios.get(w, {}).get(m, {}).get(s, {}).get(b)
                        for w in perf for m in summary[w])]
        if not pairs:
            L += ["No system was measured together with its baseline in this run.", ""]
        rows = []
        for w in perf:
            for metric in summary[w]:
                if summary[w][metric] and _better(results, w, metric) != "higher":
                    continue
                row = [w + ("" if wl.get(w, {}).get("durable", True) else " (not durable)"), metric]
                for s, b in pairs:
                    row.append(fmt_ratio(ratios.get(w, {}).get(metric, {}).get(s, {}).get(b)))
                rows.append(row)
        if pairs:
            L += _table(["workload", "metric"] + [f"{s} / {b}" for s, b in pairs], rows) + [""]

        L += ["## Per workload", ""]
        for w in perf:
            info = wl.get(w, {})
            L += [f"### {w}", "", info.get("title", "")]
            if not info.get("durable", True):
                L += ["", "**Not durable:** fio's libpmem engine runs with PMEM_IS_PMEM_FORCE=1 "
                      "on these non-DAX files; its final sync is only a drain, so nothing is "
                      "guaranteed to be on the devices when it reports."]
            L.append("")
            for metric, by_sys in summary[w].items():
                rows = []
                for s, sm in _ordered(by_sys):
                    if not sm:
                        continue
                    rs = ratios.get(w, {}).get(metric, {}).get(s, {})
                    rows.append([s, fmt(sm["median"]), f"{fmt(sm['min'])}–{fmt(sm['max'])}",
                                 sm["n"], "; ".join(f"{fmt_ratio(r)} vs {b}" for b, r in rs.items())])
                unit = _unit(results, w, metric)
                L += _table(["system", f"{metric} median ({unit})", "min–max", "n", "ratio"], rows)
                L.append("")

    corr = [w for w in summary if wl.get(w, {}).get("kind") == "correctness"]
    if corr:
        L += ["## Correctness (fio --verify; pass/fail, not speed)", ""]
        systems = sorted({s for w in corr for m in summary[w].values() for s in m})
        rows = []
        for w in corr:
            for metric, by_sys in summary[w].items():
                rows.append([w] + [
                    (f"{sum(by_sys[s]['values']):.0f}/{by_sys[s]['n']} passed" if s in by_sys else "–")
                    for s in systems])
        L += _table(["workload"] + systems, rows) + [""]

    if results.get("repair"):
        L += ["## Repair: injected faults", "",
              "Same fault, same seed, written into each system's backing images while unmounted. "
              "read while damaged: the file read back correct before any repair; detected: the "
              "system reported the fault (read error, status, scrub or fsck); repaired: after "
              "scrub/fsck a second check is clean and the file is intact after a remount.", ""]
        rows = []
        for r in results["repair"]:
            if r.get("skipped") or (r.get("error") and "detected" not in r):
                rows.append([r["system"], r["fault"], "skipped: " + (r.get("skipped") or r.get("error")),
                             "", "", "", "", ""])
                continue
            rows.append([r["system"], r["fault"], r.get("injected", ""), _yn(r.get("detected")),
                         _yn(r.get("read_ok")), _yn(r.get("repaired")), _yn(r.get("intact")),
                         fmt(r.get("repair_seconds"))])
        L += _table(["system", "fault", "injected", "detected", "read ok while damaged",
                     "repaired", "data intact", "scrub/fsck s"], rows) + [""]

    skipped = [(w, i["reason"]) for w, i in wl.items() if i.get("status") == "skipped"]
    errors = [r for r in results.get("raw", []) if r.get("error")]
    if skipped or errors:
        L += ["## Skipped workloads and errors", ""]
        L += [f"- {w}: skipped: {why}" for w, why in skipped]
        seen = set()
        for r in errors:
            key = (r["system"], r["workload"], r["error"][:80])
            if key not in seen:
                seen.add(key)
                L.append(f"- {r['system']} / {r['workload']} rep {r.get('rep')}: {r['error']}")
        L.append("")
    if results.get("plots"):
        L += ["## Plots", ""] + [f"![{p}](plots/{p})" for p in results["plots"]] + [""]
    return "\n".join(L)


def _ordered(by_sys):
    from .systems import SYSTEM_NAMES
    rank = {n: i for i, n in enumerate(SYSTEM_NAMES)}
    return sorted(by_sys.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0]))


def _first(results, w, metric):
    for r in results.get("raw", []):
        if r["workload"] == w and r["metric"] == metric:
            return r
    return {}


def _unit(results, w, metric):
    return _first(results, w, metric).get("unit", "")


def _better(results, w, metric):
    return _first(results, w, metric).get("better", "higher")


def write_markdown(results, path):
    with open(path, "w") as f:
        f.write(markdown(results))
