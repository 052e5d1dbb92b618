"""bench/scale.py without mounting anything: its usage errors exit 2, and
the targets, the table and the plots come from the raw records."""

import os
import subprocess
import sys

import scale

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GIB = 1 << 30


def test_usage_errors_exit_2(tmp_path):
    for args in (["--sizes", "lots"], ["--sizes", "512M"], ["--wide", "17x64G"],
                 ["--wide", "1x64G"], ["--data-gib", "0"], ["--anchors", "zfs"], ["--step-timeout", "0"],
                 ["--sizes", "1G", "--data-gib", "4"], ["--no-such-option"]):
        cp = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "scale.py"),
                             "--dir", str(tmp_path / "img"), "--out", str(tmp_path / "out")] + args,
                            capture_output=True, text=True, timeout=60)
        assert cp.returncode == 2, (args, cp.stderr)
        assert not (tmp_path / "img").exists(), args


def layout(dev_gib, **figs):
    return dict({"devices": 4, "device_bytes": dev_gib * GIB}, **figs)


SMALL = dict(mkfs_s=0.2, mount_s=0.05, fsck_empty_s=0.1, fsck_data_gbps=3.0,
             scrub_gbps=2.5, rss_mib=8.0, scrub_s=3.0, replace_s=4.0)


def by_target(rows):
    return {r["target"]: r for r in rows}


def test_targets_pass_and_miss():
    big = dict(SMALL, mkfs_s=0.45, mount_s=0.3, fsck_empty_s=0.25, fsck_data_gbps=1.0,
               scrub_gbps=2.1, rss_mib=40.0)
    rows = by_target(scale.targets({"daxguard-4x64G": layout(64, **SMALL),
                                    "daxguard-4x1T": layout(1024, **big),
                                    "daxguard-16x64G": dict(layout(64, **big), devices=16)}))
    assert rows["mount at 4x1T"]["verdict"] == "MISS"          # 0.3 > 0.2
    assert rows["mount 4x1T vs 4x64G"]["value"] == 6.0
    assert rows["mount 4x1T vs 4x64G"]["verdict"] == "MISS"
    assert rows["mkfs at 4x1T"]["verdict"] == "PASS"           # 0.45 <= 0.5
    assert rows["mkfs 4x1T vs 4x64G"]["verdict"] == "MISS"     # 2.25x
    assert rows["fsck -n empty at 4x1T"]["verdict"] == "PASS"
    assert rows["fsck -n of used data at 4x1T"]["verdict"] == "MISS"
    assert rows["fsck -n of used data 4x1T vs 4x64G"]["value"] == 3.0
    assert rows["fsck -n of used data 4x1T vs 4x64G"]["verdict"] == "MISS"
    assert rows["scrub of used data at 4x1T"]["verdict"] == "PASS"
    assert rows["scrub of used data 4x1T vs 4x64G"]["verdict"] == "PASS"
    assert rows["daemon RSS after mount at 4x1T"]["verdict"] == "MISS"
    assert rows["daemon RSS after mount 4x1T vs 4x64G"]["verdict"] == "MISS"
    assert len(rows) == 16          # the 16-device layout is not judged
    # warm and cold: the warm pass against 2 GB/s, the cold one as a share
    # of the disk's read rate of the same run (not judged: the disk's)
    assert rows["fsck -n of used data, warm (CPU only), at 4x1T"]["verdict"] == "n/a"
    cold = [r for t, r in rows.items() if t.startswith("scrub of used data, cold")]
    assert len(cold) == 1 and cold[0]["value"] is None and cold[0]["verdict"] == "-"


def test_targets_warm_and_share_of_the_disk():
    big = dict(SMALL, fsck_data_gbps=0.6, fsck_data_warm_gbps=3.5, scrub_gbps=0.5,
               scrub_warm_gbps=1.9, ceiling_gbps=0.75)
    rows = by_target(scale.targets({"daxguard-4x64G": layout(64, **SMALL),
                                    "daxguard-4x1T": layout(1024, **big)}))
    assert rows["fsck -n of used data, warm (CPU only), at 4x1T"]["verdict"] == "PASS"
    assert rows["scrub of used data, warm (CPU only), at 4x1T"]["verdict"] == "MISS"
    share = "fsck -n of used data, cold, share of the disk's read rate (0.75 GB/s of data, " \
            "same run) at 4x1T"
    assert rows[share]["value"] == 0.8


def test_render_again_from_the_json(tmp_path):
    results = {"machine": {"date": "d", "git_commit": "abc"}, "dir": "/var/tmp/x",
               "data_bytes": 8 * GIB, "sizes": [64 * GIB, 1024 * GIB],
               "layouts": {"daxguard-4x64G": layout(64, **SMALL),
                           "daxguard-4x1T": layout(1024, **dict(SMALL, scrub_warm_gbps=2.5))},
               "anchors": {}, "targets": []}
    (tmp_path / "results.json").write_text(__import__("json").dumps(results))
    cp = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "scale.py"),
                         "--render", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    md = (tmp_path / "results.md").read_text()
    assert "| scrub of used data, warm (CPU only), at 4x1T | 2.5 GB/s | >= 2 GB/s | PASS |" in md
    cp = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "scale.py"),
                         "--render", str(tmp_path / "none")], capture_output=True, text=True,
                        timeout=60)
    assert cp.returncode == 2 and "results.json" in cp.stderr


def test_targets_skip_failed_and_missing():
    rows = by_target(scale.targets({"daxguard-4x64G": layout(64, **SMALL),
                                    "daxguard-4x1T": layout(1024, error="mkfs exit 8"),
                                    "daxguard-4x256G": layout(256, **dict(SMALL, rss_mib=None))}))
    assert rows["daemon RSS after mount at 4x256G"]["verdict"] == "n/a"
    assert rows["daemon RSS after mount 4x256G vs 4x64G"]["verdict"] == "n/a"
    assert rows["mount at 4x256G"]["verdict"] == "PASS"
    assert scale.targets({}) == []


def test_table_csv_and_svg(tmp_path):
    results = {"machine": {"date": "d", "git_commit": "abc"}, "dir": "/var/tmp/x",
               "data_bytes": 8 * GIB, "sizes": [64 * GIB, 1024 * GIB],
               "layouts": {"daxguard-4x64G": layout(64, **SMALL),
                           "daxguard-4x1T": layout(1024, **SMALL),
                           "daxguard-16x64G": {"error": "boom"}},
               "anchors": {"ext4-4x64G": {"mkfs_s": 0.1, "mount_s": 0.02, "fsck_empty_s": 1.5},
                           "btrfs-raid5-4x64G": {"skipped": "no btrfs-progs"}}}
    results["targets"] = scale.targets(results["layouts"])
    md = scale.table(results)
    assert "| mount at 4x1T | 0.05 s | <= 0.2 s | PASS |" in md
    assert "| daxguard-16x64G | failed: boom |" in md
    assert "| btrfs-raid5-4x64G | skipped: no btrfs-progs |" in md
    assert "| ext4-4x64G | 0.1 | 0.02 | - | 1.5 |" in md
    ser = scale.series(results)
    assert ser[("daxguard", "mount_s")] == [(64, 0.05), (1024, 0.05)]
    assert ser[("ext4", "fsck_empty_s")] == [(64, 1.5)]
    scale.write_csv(results, tmp_path / "r.csv")
    assert "daxguard,daxguard-4x1T,mount_s,0.05" in (tmp_path / "r.csv").read_text()
    assert scale.plot_svg(ser, str(tmp_path / "s.svg")) == "s.svg"
    assert (tmp_path / "s.svg").read_text().count("<polyline") == len(ser)


def test_projected_from_progress():
    assert scale.projected(10, {"percent": 25.0}) == 40.0            # replace status
    assert scale.projected(10, {"next_row": 50, "rows": 200}) == 40.0  # scrub status
    assert scale.projected(10, {"state": "running"}) is None
