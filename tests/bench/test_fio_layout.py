"""Sub-page fio jobs get a smaller file: fio lays it out in their block size."""
from dgbench import fio


def test_sub_page_jobs_are_capped():
    assert fio.job_size({"bs": "64", "ioengine": "libpmem"}, 256 << 20) == 32 << 20
    assert fio.job_size({"bs": "64"}, 8 << 20) == 8 << 20
    assert fio.job_size({"bs": "4k"}, 256 << 20) == 256 << 20
    assert fio.job_size({"bs": "1M"}, 256 << 20) == 256 << 20
