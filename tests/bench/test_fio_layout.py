"""Files of small-block fio jobs are laid out by the harness, not by fio."""
import os

from dgbench import fio


def test_only_sub_page_single_jobs_are_laid_out():
    assert fio.layout_is_slow({"bs": "64", "ioengine": "libpmem"})
    assert not fio.layout_is_slow({"bs": "4k", "ioengine": "libpmem"})
    assert not fio.layout_is_slow({"bs": "1M"})
    assert not fio.layout_is_slow({"bs": "64", "numjobs": "4"})


def test_lay_out_writes_the_file_fio_expects(tmp_path):
    size = (3 << 20) + 123
    path = fio.lay_out(str(tmp_path), "fio-pmem-64b", size)
    assert path == str(tmp_path / "fio-pmem-64b.0.0")
    assert os.path.getsize(path) == size
    with open(path, "rb") as f:
        assert f.read() == b"\0" * size
