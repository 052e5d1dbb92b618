# SPDX-License-Identifier: MIT
"""The per-job media cost records (status --json "media" counts around a
job; docs/design.md, "What a write costs the media")."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))

from dgbench.workloads import media_records  # noqa: E402


def counts(stored, fences, writes, written):
    return {"bytes_stored": stored, "fences": fences, "writes": writes,
            "bytes_written": written, "lines_flushed": 0, "streamed_bytes": 0}


def test_ratios_of_the_differences():
    recs = media_records(counts(1000, 5, 1, 100),
                         counts(1000 + 4 * 8192, 5 + 22, 3, 100 + 8192))
    got = {r["metric"]: r for r in recs}
    assert got["stored/written"]["value"] == 4.0
    assert got["fences/write"]["value"] == 11.0
    assert all(r["better"] == "lower" for r in recs)


def test_nothing_without_counts_or_writes():
    assert media_records(None, None) == []
    assert media_records(counts(0, 0, 0, 0), None) == []
    assert media_records(counts(5, 1, 2, 9), counts(50, 3, 2, 9)) == []
