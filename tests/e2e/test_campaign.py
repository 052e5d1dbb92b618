# SPDX-License-Identifier: MIT
"""A short randomized fault campaign (fixed seeds): every single fault is
detected and repaired with no data loss and no silent corruption; double
faults in one row end in exit 4 naming the files, everything else intact,
no wrong bytes from any read. The long run is bench/campaign.py."""
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import campaign  # noqa: E402


def test_campaign_200(tmp_path):
    stats, failures, secs = campaign.campaign(200, seed=4, work=tmp_path,
                                              doubles=20)
    tot = campaign.print_table(stats)
    single = {k: s for k, s in stats.items() if not k[0].startswith("double")}
    n = sum(s["trials"] for s in single.values())
    assert n + sum(s["skipped"] for s in single.values()) == 200
    assert n >= 180
    assert sum(s["silent"] for s in single.values()) == 0
    assert sum(s["lost"] for s in single.values()) == 0
    assert sum(s["detected"] for s in single.values()) == n
    assert sum(s["repaired"] for s in single.values()) == n
    assert tot["silent"] == 0
    assert not failures, failures[:5]
