import pytest

from dgbench import stats
from dgbench.systems import SYSTEM_NAMES


def test_summarize_median_and_spread():
    s = stats.summarize([3.0, 1.0, 2.0, None])
    assert s["n"] == 3 and s["median"] == 2.0
    assert (s["min"], s["max"]) == (1.0, 3.0)
    assert s["spread_pct"] == pytest.approx(100.0)
    assert stats.summarize([None]) is None


def test_summarize_iqr_with_many_values():
    s = stats.summarize([1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert s["median"] == 5 and s["q1"] == 3 and s["q3"] == 7


def test_ratio_significant_only_outside_noise():
    a = stats.summarize([50, 52, 51])
    b = stats.summarize([100, 101, 99])
    r = stats.ratio(a, b)
    assert r["ratio"] == pytest.approx(51 / 100)
    assert r["lo"] == pytest.approx(50 / 101) and r["hi"] == pytest.approx(52 / 99)
    assert r["significant"]
    noisy = stats.ratio(stats.summarize([90, 110]), stats.summarize([95, 105]))
    assert not noisy["significant"]
    assert stats.ratio(a, None) is None
    single = stats.ratio(stats.summarize([50]), stats.summarize([100]))
    assert single["ratio"] == 0.5 and not single["significant"]


def test_ratios_follow_baseline_table():
    raw = []
    for rep in range(3):
        for sysname, v in [("daxguard-p1", 40), ("daxguard-none", 80), ("passthrough", 100),
                           ("tmpfs", 1000), ("btrfs-raid5", 30)]:
            raw.append({"system": sysname, "workload": "w", "metric": "IOPS",
                        "value": v + rep, "rep": rep})
    summ = stats.aggregate(raw)
    assert summ["w"]["IOPS"]["passthrough"]["median"] == 101
    rat = stats.ratios(summ)["w"]["IOPS"]
    assert rat["daxguard-p1"]["passthrough"]["ratio"] == pytest.approx(41 / 101)
    assert rat["daxguard-p1"]["daxguard-none"]["ratio"] == pytest.approx(41 / 81)
    assert rat["passthrough"]["tmpfs"]["ratio"] == pytest.approx(101 / 1001)
    assert "btrfs-raid5" not in rat          # its baseline was not measured
    assert "tmpfs" not in rat                # tmpfs has no baseline


def test_baseline_table_names_known_systems():
    for s, bases in stats.BASELINES.items():
        assert s in SYSTEM_NAMES
        for b, why in bases:
            assert b in SYSTEM_NAMES and b != s and why
    for s, b in stats.KEY_RATIOS:
        assert b in [x for x, _ in stats.BASELINES[s]]
