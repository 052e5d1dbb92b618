import json

from dgbench import report


def _row(md, *cells):
    for line in md.splitlines():
        if all(f"| {c} |" in line or f"| {c}" in line for c in cells):
            return line
    raise AssertionError(f"no table row with {cells}:\n{md}")


def test_markdown_medians_spreads_and_ratios(results):
    md = report.markdown(results)
    # per-workload table: median, min-max, n, ratio to the same-run baseline
    row = _row(md, "daxguard-p1", "41.0", "40.0–42.0")
    assert "0.41× [0.39–0.42] vs passthrough" in row
    assert "0.51× [0.49–0.53] vs daxguard-none" in row
    # summary table has the key ratio columns that have data
    assert "| daxguard-p1 / passthrough | daxguard-p1 / daxguard-none |" in md
    assert "btrfs-raid5 / btrfs-single" not in md      # nothing measured: column dropped
    summ = _row(md, "fio-rand-write-1j", "IOPS")
    assert "0.41× [0.39–0.42]" in summ and "0.51× [0.49–0.53]" in summ


def test_markdown_noise_marker():
    from dgbench.report import fmt_ratio
    assert fmt_ratio({"ratio": 1.01, "lo": 0.9, "hi": 1.1, "significant": False}).endswith("≈")
    assert not fmt_ratio({"ratio": 0.5, "lo": 0.4, "hi": 0.6, "significant": True}).endswith("≈")


def test_markdown_skips_errors_and_durability(results):
    md = report.markdown(results)
    assert "| zfs-raidz1 | skipped: zfs-fuse not installed |" in md
    assert "filebench-varmail: skipped: filebench not on PATH" in md
    assert "tmpfs / fio-rand-write-1j rep 3: fio exit 1: boom" in md
    assert "fio-pmem-64b (not durable)" in md
    assert "**Not durable:**" in md
    assert "3/3 passed" not in md and "1/1 passed" in md       # correctness table
    assert _row(md, "passthrough", "bitflip", "bit 3 flipped", "**no**")
    assert "skipped: fsck missing" in md


def test_json_roundtrip(results, tmp_path):
    p = tmp_path / "r.json"
    report.write_json(results, p)
    back = json.loads(p.read_text())
    assert back["systems"]["zfs-raidz1"]["reason"] == "zfs-fuse not installed"
    assert back["ratios"]["fio-rand-write-1j"]["IOPS"]["daxguard-p1"]["passthrough"]["ratio"] < 1
