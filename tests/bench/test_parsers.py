import json
import os

import pytest

from dgbench import fio, parsers, workloads


def test_fio_randwrite_two_jobs_grouped(data):
    r = fio.parse(data("fio_randwrite_4k_2jobs.json"))
    assert r["error"] == 0
    assert r["read_iops"] == 0
    assert r["write_iops"] > 1000
    assert r["iops"] == pytest.approx(r["write_iops"])
    assert r["p99_clat_us"] > 0
    assert r["fio_version"].startswith("fio-")


def test_fio_seqread_bandwidth_in_mib(data):
    raw = json.loads(data("fio_seqread_1m.json"))
    r = fio.parse(data("fio_seqread_1m.json"))
    assert r["bw_mib"] == pytest.approx(raw["jobs"][0]["read"]["bw_bytes"] / 2**20)
    assert r["write_bw_mib"] == 0


def test_fio_verify_passes(data):
    assert fio.parse(data("fio_verify.json"))["error"] == 0


def test_fio_error_and_leading_warning_text(data):
    text = data("fio_libpmem_refused.json")
    assert not text.startswith("{")          # fio printed an error line first
    assert fio.parse(text)["error"] == 95


def test_fio_garbage_raises():
    with pytest.raises(ValueError):
        fio.parse("fio: engine libpmem not loadable\n")
    with pytest.raises(ValueError):
        fio.parse('{"jobs": []}')


def test_fio_job_args_split_size_across_jobs():
    opts, _, _ = fio.JOBS["fio-rand-write-4j"]
    args = fio.job_args("x", opts, "/mnt/d", 256 << 20, 10)
    assert f"--size={64 << 20}" in args
    assert "--numjobs=4" in args and "--runtime=10" in args and "--time_based=1" in args
    assert "--output-format=json" in args


def test_libpmem_jobs_marked_not_durable():
    for name, (opts, _, durable) in fio.JOBS.items():
        assert durable == (opts["ioengine"] != "libpmem"), name
    assert "NOT durable" in workloads.FioWorkload("fio-pmem-64b").title


def test_dbench(data):
    r = parsers.parse_dbench(data("dbench_2clients.txt"))
    assert r["mb_s"] == pytest.approx(1681.91)
    assert r["clients"] == 2
    assert r["ops"]["NTCreateX"]["count"] > 0
    with pytest.raises(ValueError):
        parsers.parse_dbench("dbench version 4.00\n")


def test_postmark(data):
    r = parsers.parse_postmark(data("postmark.txt"))
    assert r["created"] >= 500
    assert r["deleted"] == r["created"]
    with pytest.raises(ValueError):
        parsers.parse_postmark("PostMark v1.51\n")


def test_filebench(data):
    r = parsers.parse_filebench(data("filebench_fileserver.txt"))
    assert r["ops"] == 273685
    assert r["ops_s"] == pytest.approx(9119.124)
    assert r["mb_s"] == pytest.approx(213.3)
    assert r["flows"]["fs_write"]["mb_s"] == pytest.approx(103.2)
    with pytest.raises(ValueError):
        parsers.parse_filebench("0.004: Running...\n")


def test_metabench_output_is_json(data):
    r = json.loads(data("metabench_tree.json"))
    assert r["files"] == 1000 and r["layout"] == "tree"
    assert all(r[f"{p}_s"] > 0 for p in ("create", "stat", "rename", "delete"))


@pytest.mark.parametrize("p", workloads.PERSONALITIES)
def test_personalities_render(p):
    src = os.path.join(workloads.BENCH_DIR, "filebench", f"{p}.f")
    with open(src) as f:
        text = workloads.render_personality(f.read(), "/mnt/x/dir", 7)
    assert "set $dir=/mnt/x/dir\n" in text
    assert "\nrun 7\n" in text
    assert "set $dir=/tmp" not in text


def test_render_personality_rejects_missing_dir():
    with pytest.raises(ValueError):
        workloads.render_personality("run 30\n", "/x", 5)


def test_workload_selection():
    names = [w.name for w in workloads.all_workloads()] + ["repair"]
    assert workloads.select("fio-quick", names) == ["fio-seq-write", "fio-rand-read-1j",
                                                    "fio-rand-write-1j"]
    sel = workloads.select("metadata,dbench,repair", names)
    assert sel == ["meta-flat", "meta-tree", "dbench", "repair"]
    assert set(workloads.select("all", names)) == set(names)
    with pytest.raises(ValueError):
        workloads.select("nosuch", names)
