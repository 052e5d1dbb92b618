"""fio jobs used by the harness, and parsing of `fio --output-format=json`."""

import json

# name -> (job options, metric, durable)
# Sizes and runtimes are filled in by job_args() from the run's scale.
JOBS = {
    "fio-seq-read":       ({"rw": "read", "bs": "1M", "ioengine": "psync"}, "bw", True),
    "fio-seq-write":      ({"rw": "write", "bs": "1M", "ioengine": "psync", "end_fsync": "1"}, "bw", True),
    "fio-seq-write-4j":   ({"rw": "write", "bs": "1M", "ioengine": "psync", "numjobs": "4",
                            "end_fsync": "1"}, "bw", True),
    "fio-rand-read-1j":   ({"rw": "randread", "bs": "4k", "ioengine": "psync"}, "iops", True),
    "fio-rand-read-4j":   ({"rw": "randread", "bs": "4k", "ioengine": "psync", "numjobs": "4"}, "iops", True),
    "fio-rand-write-1j":  ({"rw": "randwrite", "bs": "4k", "ioengine": "psync", "end_fsync": "1"}, "iops", True),
    "fio-rand-write-4j":  ({"rw": "randwrite", "bs": "4k", "ioengine": "psync", "numjobs": "4",
                            "end_fsync": "1"}, "iops", True),
    "fio-mmap-rand-write": ({"rw": "randwrite", "bs": "4k", "ioengine": "mmap", "end_fsync": "1"}, "iops", True),
    # libpmem engine: with PMEM_IS_PMEM_FORCE=1 its "sync" is a drain only:
    # nothing reaches the filesystem's msync path, so these are NOT durable.
    "fio-pmem-64b":       ({"rw": "randwrite", "bs": "64", "ioengine": "libpmem"}, "iops", False),
    "fio-pmem-4k":        ({"rw": "randwrite", "bs": "4k", "ioengine": "libpmem"}, "iops", False),
}

# Correctness, not speed: write with checksums, read back and verify.
VERIFY_JOBS = {
    "fio-verify-rand-write": {"rw": "randwrite", "bs": "4k", "ioengine": "psync",
                              "verify": "crc32c", "do_verify": "1", "verify_fatal": "1",
                              "verify_state_save": "0"},
    "fio-verify-mmap":       {"rw": "randwrite", "bs": "4k", "ioengine": "mmap",
                              "verify": "crc32c", "do_verify": "1", "verify_fatal": "1",
                              "verify_state_save": "0"},
}

PMEM_ENV = {"PMEM_IS_PMEM_FORCE": "1"}


# fio lays a file out in writes of the job's block size before a write job,
# even when the file already exists at full size: for the 64-byte job that
# is millions of FUSE round trips (minutes at 256 MiB) before measuring.
SMALL_BS_SIZE_CAP = 32 << 20


def job_size(opts, size):
    """The file size for a job: `size`, capped for sub-page block sizes."""
    bs = opts.get("bs", "4k")
    if bs.isdigit() and int(bs) < 4096:
        return min(size, SMALL_BS_SIZE_CAP)
    return size


def job_args(name, opts, directory, size, runtime, time_based=True):
    """Command line for one fio run; `size` is the total across jobs."""
    numjobs = int(opts.get("numjobs", 1))
    args = ["fio", f"--name={name}", f"--directory={directory}",
            f"--size={max(size // numjobs, 1 << 20)}", "--group_reporting=1",
            "--output-format=json", "--randrepeat=1", "--fallocate=none"]
    if time_based:
        args += [f"--runtime={runtime}", "--time_based=1"]
    for k, v in opts.items():
        args.append(f"--{k}={v}")
    return args


def parse(text):
    """Parse fio JSON output into a flat dict of summary figures.

    fio may print warnings before the JSON object; they are skipped.  With
    group_reporting the single job entry is the aggregate of all jobs.
    """
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in fio output")
    data = json.loads(text[start:])
    jobs = data.get("jobs") or []
    if not jobs:
        raise ValueError("fio output has no jobs")
    out = {"read_iops": 0.0, "write_iops": 0.0, "read_bw_mib": 0.0, "write_bw_mib": 0.0,
           "error": 0, "fio_version": data.get("fio version")}
    lat = []
    for job in jobs:
        out["error"] = out["error"] or int(job.get("error", 0))
        for d in ("read", "write"):
            s = job.get(d) or {}
            out[f"{d}_iops"] += float(s.get("iops", 0.0))
            out[f"{d}_bw_mib"] += float(s.get("bw_bytes", s.get("bw", 0) * 1024)) / (1 << 20)
            pct = ((s.get("clat_ns") or {}).get("percentile") or {})
            p99 = pct.get("99.000000")
            if p99 and s.get("io_bytes"):
                lat.append(p99 / 1000.0)
    out["iops"] = out["read_iops"] + out["write_iops"]
    out["bw_mib"] = out["read_bw_mib"] + out["write_bw_mib"]
    out["p99_clat_us"] = max(lat) if lat else None
    return out
