"""bench/online/rebuild_bench.py's table from fake records (no mounts)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench", "online"))

import rebuild_bench  # noqa: E402
from scrub_bench import data_files  # noqa: E402


def test_table_medians_ratios_and_skips(tmp_path, capsys):
    secs = {"daxguard-p1 online": [1.0, 3.0, 2.0],
            "daxguard-p1 offline": [4.0, 4.0, 4.0],
            "btrfs-raid5": [2.0, 2.0, 9.0]}
    rec = {"data_mib": 1000, "image_mib": 800, "reps": 3, "nproc": 2,
           "setup": {"btrfs_metadata": "raid5"},
           "skipped": {"zfs-raidz1": "zfs-fuse daemon did not start"},
           "check": {"daxguard-p1": "ok", "btrfs-raid5": "f1 differs"},
           "rebuild": [{"system": s, "what": "x", "rep": r, "secs": t}
                       for s, ts in secs.items() for r, t in enumerate(ts)]}
    rebuild_bench.report(rec, tmp_path)
    md = (tmp_path / "results.md").read_text()
    assert md == capsys.readouterr().out
    rows = {line.split(" | ")[0][2:]: line for line in md.splitlines()
            if line.startswith("| ")}
    # 1000 MiB in the median 2 s: 0.52 GB/s; speed ratio btrfs s / s
    assert "| 2.00 | 1.00, 3.00, 2.00 | 0.52 | 1.00x | ok |" in \
        rows["daxguard-p1 online"]
    assert "| 4.00 | 4.00, 4.00, 4.00 | 0.26 | 0.50x | ok |" in \
        rows["daxguard-p1 offline"]
    assert rows["btrfs-raid5"].endswith("| 1.00x | f1 differs |")
    assert "skipped: zfs-fuse daemon did not start" in rows["zfs-raidz1"]
    assert "btrfs metadata profile: raid5." in md


def test_data_files_are_the_same_bytes_each_time():
    def sizes_and_bytes():
        return [(n, b"".join(c)) for n, c in data_files(130, 1)]
    a = sizes_and_bytes()
    assert [(n, len(b) >> 20) for n, b in a] == [("f0", 64), ("f1", 64),
                                                 ("f2", 2)]
    assert a == sizes_and_bytes()
