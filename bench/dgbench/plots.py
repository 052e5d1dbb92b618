"""PNG plots of the main comparisons (matplotlib, Agg backend: no display)."""

import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .stats import KEY_RATIOS  # noqa: E402

GROUP_METRIC = [("fio", None), ("metadata", None), ("dbench", "MB/s"),
                ("postmark", "transactions/s"), ("filebench", "ops/s")]


def _perf_items(results, group):
    wl = results["workloads"]
    items = []
    for w, ms in results.get("summary", {}).items():
        if wl.get(w, {}).get("group") != group or wl.get(w, {}).get("kind") == "correctness":
            continue
        for metric, by_sys in ms.items():
            if any(r["workload"] == w and r["metric"] == metric and r["better"] == "lower"
                   for r in results.get("raw", [])[:100000]):
                continue
            items.append((w, metric, by_sys))
    return items


def bar_group(results, group, path):
    """One panel per workload/metric: median with min-max error bars per system."""
    items = _perf_items(results, group)
    if not items:
        return False
    n = len(items)
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.4 * rows), squeeze=False)
    for ax, (w, metric, by_sys) in zip(axes.flat, items):
        names = [s for s in by_sys if by_sys[s]]
        med = [by_sys[s]["median"] for s in names]
        lo = [by_sys[s]["median"] - by_sys[s]["min"] for s in names]
        hi = [by_sys[s]["max"] - by_sys[s]["median"] for s in names]
        ax.bar(range(len(names)), med, yerr=[lo, hi], capsize=3,
               color=[_color(results, s) for s in names])
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
        durable = results["workloads"].get(w, {}).get("durable", True)
        ax.set_title(f"{w}{'' if durable else ' (NOT durable)'}", fontsize=9)
        ax.set_ylabel(metric, fontsize=8)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(f"{group}: median, bars = min–max over repetitions", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def ratio_plot(results, path):
    """Key ratios (system / same-run baseline) per workload, 1.0 = parity."""
    ratios = results.get("ratios", {})
    rows = []
    for w, ms in ratios.items():
        if results["workloads"].get(w, {}).get("kind") == "correctness":
            continue
        for metric, by_sys in ms.items():
            if metric in ("p99 latency",):
                continue
            rows.append((f"{w} {metric}", by_sys))
    pairs = [(s, b) for s, b in KEY_RATIOS
             if any(by.get(s, {}).get(b) for _, by in rows)]
    if not rows or not pairs:
        return False
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(rows) * max(1, len(pairs)) / 2 + 2))
    h = 0.8 / len(pairs)
    for j, (s, b) in enumerate(pairs):
        ys, vals, errs = [], [], [[], []]
        for i, (_, by) in enumerate(rows):
            r = by.get(s, {}).get(b)
            if not r:
                continue
            ys.append(i + j * h)
            vals.append(r["ratio"])
            errs[0].append(r["ratio"] - (r["lo"] or r["ratio"]))
            errs[1].append((r["hi"] or r["ratio"]) - r["ratio"])
        ax.barh(ys, vals, height=h, xerr=errs, capsize=2, label=f"{s} / {b}")
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks([i + 0.4 - h / 2 for i in range(len(rows))])
    ax.set_yticklabels([r[0] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ratio to same-run baseline (1.0 = equal; <1 = slower)")
    ax.legend(fontsize=7, loc="best")
    ax.set_title("How fast, at what cost: ratios with worst-case ranges", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


_FAMILY_COLORS = {"daxguard": "tab:blue", "fuse": "tab:orange", "btrfs": "tab:green",
                  "zfs": "tab:red", "tmpfs": "tab:gray"}


def _color(results, system):
    fam = (results["systems"].get(system, {}).get("info") or {}).get("family", "")
    return _FAMILY_COLORS.get(fam, "tab:purple")


def make_all(results, plot_dir):
    """Write every plot that has data; return the file names."""
    os.makedirs(plot_dir, exist_ok=True)
    made = []
    for group, _ in GROUP_METRIC:
        name = f"{group}.png"
        if bar_group(results, group, os.path.join(plot_dir, name)):
            made.append(name)
    if ratio_plot(results, os.path.join(plot_dir, "ratios.png")):
        made.append("ratios.png")
    return made
