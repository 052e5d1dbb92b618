"""Medians, spreads and ratios to a baseline measured in the same run.

BASELINES is the one place that says which system each system is compared
with.  A ratio is median(system) / median(baseline) of the same metric in
the same run; for "higher is better" metrics a ratio below 1 is a cost.
The ratio's range (worst case over the repetitions) tells whether the
difference is bigger than the noise: if the range contains 1.0 it is not.
"""

import statistics

# system -> [(baseline, what the ratio answers)]
BASELINES = {
    "daxguard-p1":   [("passthrough", "vs FUSE ceiling"), ("daxguard-none", "cost of redundancy"),
                      ("btrfs-raid5", "vs btrfs RAID-5")],
    "daxguard-p1-64k": [("passthrough", "vs FUSE ceiling"), ("daxguard-none", "cost of redundancy")],
    "daxguard-p1-lean": [("daxguard-none", "cost of redundancy"), ("daxguard-p1", "gain of lean entries")],
    "daxguard-p2":   [("passthrough", "vs FUSE ceiling"), ("daxguard-none", "cost of redundancy")],
    "daxguard-none": [("passthrough", "vs FUSE ceiling")],
    "daxguard-p1-wb": [("passthrough-wb", "vs FUSE ceiling, both cached"),
                       ("daxguard-p1", "gain of the writeback cache")],
    "btrfs-raid5":   [("btrfs-single", "cost of redundancy")],
    "zfs-raidz1":    [("zfs-single", "cost of redundancy")],
    "passthrough":   [("tmpfs", "cost of FUSE")],
}

# The comparisons shown in the summary table and the cost plot, in order.
KEY_RATIOS = [
    ("daxguard-p1", "passthrough"),
    ("daxguard-p1", "daxguard-none"),
    ("daxguard-p1-64k", "daxguard-none"),
    ("daxguard-p1-lean", "daxguard-none"),
    ("daxguard-p2", "daxguard-none"),
    ("daxguard-p1-wb", "passthrough-wb"),
    ("btrfs-raid5", "btrfs-single"),
    ("zfs-raidz1", "zfs-single"),
    ("passthrough", "tmpfs"),
]


def summarize(values):
    """Median and spread of repeated measurements (None values are dropped)."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    med = statistics.median(vals)
    if len(vals) >= 4:
        q = statistics.quantiles(vals, n=4, method="inclusive")
        q1, q3 = q[0], q[2]
    else:
        q1, q3 = vals[0], vals[-1]
    return {"n": len(vals), "median": med, "min": vals[0], "max": vals[-1],
            "q1": q1, "q3": q3,
            "spread_pct": (100.0 * (vals[-1] - vals[0]) / med) if med else None,
            "values": vals}


def ratio(sys_summary, base_summary):
    """Ratio of medians plus its worst-case range over the repetitions."""
    if not sys_summary or not base_summary or not base_summary["median"]:
        return None
    r = sys_summary["median"] / base_summary["median"]
    lo = sys_summary["min"] / base_summary["max"] if base_summary["max"] else None
    hi = sys_summary["max"] / base_summary["min"] if base_summary["min"] else None
    # One repetition says nothing about noise: never call that significant.
    significant = (sys_summary["n"] > 1 and base_summary["n"] > 1 and lo is not None
                   and hi is not None and not (lo <= 1.0 <= hi))
    return {"ratio": r, "lo": lo, "hi": hi, "significant": significant}


def aggregate(raw):
    """raw: list of {"system", "workload", "metric", "value", ...} records.

    Returns {workload: {metric: {system: summary}}}.
    """
    groups = {}
    for rec in raw:
        if rec.get("value") is None:
            continue
        groups.setdefault(rec["workload"], {}).setdefault(rec["metric"], {}) \
              .setdefault(rec["system"], []).append(rec["value"])
    return {w: {m: {s: summarize(v) for s, v in by_sys.items()} for m, by_sys in ms.items()}
            for w, ms in groups.items()}


def ratios(summary):
    """{workload: {metric: {system: {baseline: ratio-dict}}}} per BASELINES."""
    out = {}
    for w, ms in summary.items():
        for m, by_sys in ms.items():
            for s, sm in by_sys.items():
                for base, _why in BASELINES.get(s, []):
                    r = ratio(sm, by_sys.get(base))
                    if r is not None:
                        out.setdefault(w, {}).setdefault(m, {}).setdefault(s, {})[base] = r
    return out
