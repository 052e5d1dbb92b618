"""Facts about the machine and tool versions, recorded with every result."""

import os
import platform
import re
import subprocess
import time


def _cmd(args):
    try:
        cp = subprocess.run(args, capture_output=True, text=True, timeout=20)
        return (cp.stdout or cp.stderr).strip().splitlines()[0] if (cp.stdout or cp.stderr) else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _dpkg(pkg):
    return _cmd(["dpkg-query", "-W", "-f=${Version}", pkg])


def facts(repo_root=None):
    cpu = re.search(r"^model name\s*:\s*(.*)$", _read("/proc/cpuinfo"), re.M)
    mem = re.search(r"^MemTotal:\s*(\d+) kB", _read("/proc/meminfo"), re.M)
    shm = os.statvfs("/dev/shm") if os.path.exists("/dev/shm") else None
    d = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "hostname": platform.node(),
        "cores": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "cpu_model": cpu.group(1) if cpu else None,
        "mem_gib": round(int(mem.group(1)) / (1 << 20), 1) if mem else None,
        "dev_shm_gib": round(shm.f_blocks * shm.f_frsize / (1 << 30), 1) if shm else None,
        "kernel": platform.release(),
        "os": (re.search(r'^PRETTY_NAME="?([^"\n]*)', _read("/etc/os-release"), re.M) or [None, None])[1],
        "loadavg_start": _read("/proc/loadavg").split()[:3],
        "python": platform.python_version(),
        "cpufreq_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").strip() or None,
        "versions": {
            "fio": _cmd(["fio", "--version"]),
            "dbench": _dpkg("dbench"),
            "postmark": _dpkg("postmark"),
            "filebench": _cmd(["filebench", "-h"]),
            "fuse3": _dpkg("fuse3"),
            "libfuse3-dev": _dpkg("libfuse3-dev"),
            "btrfs-progs": _cmd(["btrfs", "--version"]),
            "zfs-fuse": _dpkg("zfs-fuse"),
            "cc": _cmd(["cc", "--version"]),
        },
    }
    try:
        import matplotlib
        d["versions"]["matplotlib"] = matplotlib.__version__
    except ImportError:
        d["versions"]["matplotlib"] = None
    if repo_root:
        d["git_commit"] = _cmd(["git", "-C", repo_root, "rev-parse", "HEAD"])
        st = subprocess.run(["git", "-C", repo_root, "status", "--porcelain"],
                            capture_output=True, text=True).stdout if os.path.isdir(repo_root) else ""
        d["git_dirty"] = bool(st.strip())
    return d
