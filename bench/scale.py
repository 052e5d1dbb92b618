#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Terabyte volumes (issue 34): whole-volume operations against device size.

Run as root from the source tree, after building:

    /usr/bin/python3 bench/scale.py [--sizes 64G,256G,1T] [--wide 16x64G]
        [--data-gib 8] [--dir /var/tmp/dgscale] [--out DIR] [--build-dir build]

For every layout (4 sparse images of each --sizes, parity 1; and the
--wide layout, parity 2) on a disk-backed --dir, daxguard is measured:
mkfs, mount (daemon start until the root can be listed), the daemon's
VmRSS after mount, one statfs, `fsck.daxguard -n` of the empty volume
(seconds, max RSS of the child), then with --data-gib GiB written
through the mount (fio, sequential 1 MiB, end_fsync): `fsck -n` again,
`daxguard-ctl MNT scrub start -w` and an online `daxguard-ctl MNT
replace 1 NEW` onto a new sparse image, polled until it ends. Used-data
rates are GB/s (10^9 bytes) of the bytes written. Before each of those
the page cache is written back and dropped (--warm: not), and the
disk's ceiling is measured the same way: every allocated extent of the
images read once, in parallel, cold (read used extents, GB/s of data).

Anchors at each 4-device size, in the same run: ext4 on one sparse file
of daxguard's usable size (mkfs.ext4 -F -q, mount -o loop, e2fsck -fn
empty and with the same data) and btrfs RAID-5 over 4 sparse loop
devices of the device size (mkfs.btrfs -d raid5 -m raid5, mount,
`btrfs check --readonly` unmounted, `btrfs scrub start -B`, empty and
with the data). btrfs-progs is installed with apt-get if missing, else
that anchor is skipped with the reason.

Writes DIR/results.json (machine facts, every number), DIR/results.csv,
DIR/results.md (the table with the issue's targets, PASS/MISS) and
DIR/scale.png (matplotlib; without it scale.svg drawn here). Every
mount, loop device and image is removed on any exit, also on Ctrl-C.
Exit 0, 1 when a measurement failed or an anchor was skipped, 2 on a
usage error.
"""
import argparse
import contextlib
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
sys.path.insert(0, BENCH_DIR)

from dgbench import machine  # noqa: E402
from dgbench.systems import Btrfs, Config, Daxguard, System  # noqa: E402
from dgbench.util import Skip, is_mounted, log, parse_size, run, which  # noqa: E402
from dirs import proc_mem_kib  # noqa: E402

GIB = 1 << 30
REPLACE_DEV = 1     # the device index replaced online
POLL = 0.005        # s between mount checks: mount targets are 0.2 s
REPLACE_POLL = 0.05
STEP_TIMEOUT = [900]  # s a fsck, scrub or replace may take (--step-timeout)

# (key, label, unit, limit, better) of the targets at 4 x 1 TiB;
# each also no more than 2x worse than at 4 x 64 GiB.
TARGETS = [
    ("mount_s", "mount", "s", 0.2, "lower"),
    ("mkfs_s", "mkfs", "s", 0.5, "lower"),
    ("fsck_empty_s", "fsck -n empty", "s", 1.0, "lower"),
    ("fsck_data_gbps", "fsck -n of used data", "GB/s", 2.0, "higher"),
    ("scrub_gbps", "scrub of used data", "GB/s", 2.0, "higher"),
    ("rss_mib", "daemon RSS after mount", "MiB", 32.0, "lower"),
]


# -- measuring ------------------------------------------------------------
def measured(cmd, log_path, timeout=3600):
    """Run cmd; return {rc, seconds, maxrss_kib} of that child alone
    (wait4's rusage), its output appended to log_path."""
    with open(log_path, "ab") as logf:
        logf.write(f"$ {' '.join(map(str, cmd))}\n".encode())
        logf.flush()
        t0 = time.monotonic()
        p = subprocess.Popen([str(c) for c in cmd], stdout=logf, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        deadline = t0 + timeout
        cut = False
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                cut = True
                break
            time.sleep(0.002)
        secs = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        logf.write(f"# exit {p.returncode}, {secs:.3f} s, maxrss {ru.ru_maxrss} KiB\n".encode())
    return {"rc": p.returncode, "seconds": round(secs, 4), "maxrss_kib": ru.ru_maxrss,
            "cut_at_timeout": cut}


def gbps(nbytes, secs):
    return round(nbytes / secs / 1e9, 3) if secs and secs > 0 else None


def write_data(mnt, nbytes, log_path):
    """nbytes into one file under mnt, sequential 1 MiB writes, synced
    at the end: fio (random, not compressible bytes), else dd."""
    path = os.path.join(mnt, "data")
    if which("fio"):
        cmd = ["fio", "--name=fill", f"--filename={path}", "--rw=write", "--bs=1M",
               f"--size={nbytes}", "--ioengine=psync", "--end_fsync=1", "--direct=0",
               # no laying out first: that wrote the whole file twice
               "--fallocate=none", "--create_on_open=1"]
    else:
        cmd = ["dd", "if=/dev/urandom", f"of={path}", "bs=1M",
               f"count={nbytes >> 20}", "conv=fsync"]
    r = measured(cmd, log_path)
    if r["rc"] != 0:
        raise RuntimeError(f"{cmd[0]} writing {path}: exit {r['rc']} (see {log_path})")
    return {"seconds": r["seconds"], "gbps": gbps(nbytes, r["seconds"]), "tool": cmd[0]}


EMPTY_REPS = [1]    # repetitions of the empty-volume figures (--empty-reps)
EMPTY_ONLY = [False]  # stop after them (--empty-only)
COLD = [True]       # drop the page cache before each used-data step (--warm: no)


def drop_caches(force=False):
    """Write back, then drop the clean page cache, so a used-data step
    reads the images from the disk as the issue's target assumes. Pages a
    live process has mapped stay: each step starts a fresh process (fsck)
    or a fresh mount, so the daemon has mapped only its metadata."""
    if not COLD[0] and not force:
        return
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def read_used(images, log_path):
    """The disk's own ceiling: every allocated extent of every image
    (SEEK_DATA/SEEK_HOLE) read once to nowhere, the images in parallel,
    1 MiB reads, from a cold cache. Returns {seconds, bytes}."""
    import threading
    drop_caches()
    total = [0] * len(images)

    def one(i, path):
        fd = os.open(path, os.O_RDONLY)
        try:
            end, off = os.fstat(fd).st_size, 0
            buf = bytearray(1 << 20)
            while off < end:
                try:
                    off = os.lseek(fd, off, os.SEEK_DATA)
                except OSError:
                    break
                hole = os.lseek(fd, off, os.SEEK_HOLE)
                while off < hole:
                    n = os.preadv(fd, [memoryview(buf)[:min(len(buf), hole - off)]], off)
                    if n <= 0:
                        break
                    off += n
                    total[i] += n
        finally:
            os.close(fd)
    t0 = time.monotonic()
    th = [threading.Thread(target=one, args=(i, p)) for i, p in enumerate(images)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    secs = time.monotonic() - t0
    with open(log_path, "a") as f:
        f.write(f"# read_used: {sum(total)} bytes of {len(images)} images in {secs:.3f} s\n")
    return {"seconds": round(secs, 4), "bytes": sum(total)}


def dd_ceiling(image, log_path, cap=GIB):
    """The disk's ceiling as dd sees it: the largest allocated extent of
    one image (at most cap bytes), 1 MiB reads, from a cold cache
    (dd's own figure, and ours). Returns {seconds, bytes, dd}."""
    fd = os.open(image, os.O_RDONLY)
    best, off = (0, 0), 0
    try:
        end = os.fstat(fd).st_size
        while off < end:
            try:
                off = os.lseek(fd, off, os.SEEK_DATA)
            except OSError:
                break
            hole = os.lseek(fd, off, os.SEEK_HOLE)
            if hole - off > best[1]:
                best = (off, hole - off)
            off = hole
    finally:
        os.close(fd)
    start = (best[0] + (1 << 20) - 1) >> 20
    count = min(best[1] - ((start << 20) - best[0]), cap) >> 20
    if count <= 0:
        return None
    drop_caches(force=True)
    cmd = ["dd", f"if={image}", "of=/dev/null", "bs=1M", f"skip={start}", f"count={count}"]
    t0 = time.monotonic()
    cp = subprocess.run(cmd, capture_output=True, text=True)
    secs = time.monotonic() - t0
    line = (cp.stderr.strip().splitlines() or [""])[-1]
    with open(log_path, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n{cp.stderr}# {secs:.3f} s\n")
    return {"seconds": round(secs, 4), "bytes": count << 20, "dd": line, "rc": cp.returncode}


def statfs(mnt):
    t0 = time.monotonic()
    st = os.statvfs(mnt)
    secs = time.monotonic() - t0
    return {"seconds": round(secs, 6), "size_bytes": st.f_blocks * st.f_frsize,
            "used_bytes": (st.f_blocks - st.f_bfree) * st.f_frsize}


# -- daxguard -------------------------------------------------------------
class DgLayout(Daxguard):
    """A daxguard volume of n sparse images of dev_size on disk."""

    def __init__(self, cfg, ndev, dev_size, parity):
        self.ndev, self.dev_size, self.parity = ndev, dev_size, parity
        self.label = f"{ndev}x{size_label(dev_size)}"
        super().__init__(cfg, f"daxguard-{self.label}", ["--parity", str(parity)],
                         f"parity {parity} + checksums")
        self.logf = os.path.join(self.dir, "..", f"{self.name}.log")

    def mkfs(self):
        self._mkdirs()
        self._make_images(self.ndev, self.dev_size)
        return measured([self.bin["mkfs"], "-q", "--force", *self.mkfs_args, *self.images],
                        self.logf)

    def mount(self):
        """Seconds from starting the daemon until the root can be listed."""
        logf = open(self.logf, "ab")
        t0 = time.monotonic()
        self.proc = subprocess.Popen([self.bin["daemon"], ",".join(self.images), self.mnt, "-f"],
                                     stdout=logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        logf.close()
        deadline = t0 + 600
        while True:
            if is_mounted(self.mnt):
                try:
                    os.listdir(self.mnt)
                    break
                except OSError:
                    pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self._kill_proc()
                raise RuntimeError(f"daxguard did not mount {self.mnt} (see {self.logf})")
            time.sleep(POLL)
        return round(time.monotonic() - t0, 4)

    def umount(self):
        self._stop_fuse_daemon()

    def fsck(self):
        return measured([self.bin["fsck"], "-n", *self.images], self.logf,
                        timeout=STEP_TIMEOUT[0])

    def ctl(self, *args, timeout=7200, check=True):
        return run([self.bin["ctl"], self.mnt, *map(str, args)], timeout=timeout, check=check)

    def scrub(self):
        """(seconds, last status, cut): scrub start, polled until it
        ends or STEP_TIMEOUT passes (then cancelled)."""
        return self._poll("scrub", ["scrub", "start"])

    def _poll(self, what, start):
        t0 = time.monotonic()
        self.ctl(*start)
        deadline = t0 + STEP_TIMEOUT[0]
        while True:
            st = json.loads(self.ctl(what, "status", "--json").stdout)
            if st.get("state") != "running":
                return time.monotonic() - t0, st, False
            if time.monotonic() > deadline:
                if what == "scrub":
                    self.ctl("scrub", "cancel", check=False)
                # a replace has no cancel: unmounting stops it
                return time.monotonic() - t0, st, True
            time.sleep(REPLACE_POLL)

    def replace(self):
        new = os.path.join(self.dir, f"dev{REPLACE_DEV}-new.img")
        with open(new, "wb") as f:
            f.truncate(self.dev_size)
        return self._poll("replace", ["replace", REPLACE_DEV, new])


def measure_empty(layout):
    """mkfs on fresh images, mount, RSS, statfs, unmount, fsck -n: the
    empty-volume figures, once."""
    r = {}
    log(f"{layout.label}: mkfs")
    mk = layout.mkfs()
    if mk["rc"] != 0:
        raise RuntimeError(f"mkfs exit {mk['rc']} (see {layout.logf})")
    r["mkfs_s"] = mk["seconds"]
    r["mount_s"] = layout.mount()
    mem = proc_mem_kib(layout.proc.pid)
    r["rss_kib"] = mem
    r["rss_mib"] = round(mem.get("VmRSS", 0) / 1024, 2)
    r["statfs"] = statfs(layout.mnt)
    r["statfs_s"] = r["statfs"]["seconds"]
    log(f"{layout.label}: mkfs {r['mkfs_s']} s, mount {r['mount_s']} s, "
        f"VmRSS {r['rss_mib']} MiB, size {r['statfs']['size_bytes'] / GIB:.1f} GiB")
    layout.umount()
    fe = layout.fsck()
    r["fsck_empty"] = fe
    r["fsck_empty_s"] = fe["seconds"]
    r["fsck_empty_maxrss_mib"] = round(fe["maxrss_kib"] / 1024, 2)
    if fe["cut_at_timeout"]:
        r["fsck_empty_s"] = None
        r["fsck_empty_cut_s"] = fe["seconds"]
    elif fe["rc"] != 0:
        raise RuntimeError(f"fsck -n of the empty volume: exit {fe['rc']}")
    log(f"{layout.label}: fsck -n empty {fe['seconds']} s, max RSS {r['fsck_empty_maxrss_mib']} MiB")
    return r


def measure_daxguard(layout, data_bytes):
    """Every daxguard figure of one layout; raises on a failed step."""
    r = {"devices": layout.ndev, "device_bytes": layout.dev_size, "parity": layout.parity,
         "loadavg_start": os.getloadavg()}
    reps = []
    for _ in range(EMPTY_REPS[0]):
        reps.append(measure_empty(layout))
    r["empty_reps"] = reps
    # Each figure the median of the repetitions (one sample of 10-80 ms
    # moves by 5x on a loaded machine); the last repetition's volume,
    # empty, is the one the used-data steps fill.
    for key in ("mkfs_s", "mount_s", "rss_mib", "statfs_s", "fsck_empty_s",
                "fsck_empty_maxrss_mib"):
        vals = sorted(x[key] for x in reps if x.get(key) is not None)
        r[key] = vals[len(vals) // 2] if vals else None
        if len(reps) > 1 and vals:
            r[key + "_min"], r[key + "_max"] = vals[0], vals[-1]
    for key in ("rss_kib", "statfs", "fsck_empty"):
        r[key] = reps[-1][key]
    if any(x.get("fsck_empty_cut_s") for x in reps):
        r["fsck_empty_cut_s"] = max(x.get("fsck_empty_cut_s") or 0 for x in reps)
    if len(reps) > 1:
        log(f"{layout.label}: medians of {len(reps)}: mkfs {r['mkfs_s']} s, mount "
            f"{r['mount_s']} s, fsck -n empty {r['fsck_empty_s']} s")
    if EMPTY_ONLY[0]:
        r["loadavg_end"] = os.getloadavg()
        return r
    r["mount_again_s"] = layout.mount()
    log(f"{layout.label}: writing {data_bytes / GIB:g} GiB")
    r["write"] = write_data(layout.mnt, data_bytes, layout.logf)
    r["write_mbps"] = round(data_bytes / r["write"]["seconds"] / 1e6, 1)
    log(f"{layout.label}: wrote in {r['write']['seconds']} s ({r['write_mbps']} MB/s)")
    r["statfs_data"] = statfs(layout.mnt)
    r["rss_after_write_kib"] = proc_mem_kib(layout.proc.pid)
    layout.umount()
    ru = read_used(layout.images, layout.logf)
    r["read_used"] = ru
    r["read_used_s"] = ru["seconds"]
    r["read_used_gbps"] = gbps(ru["bytes"], ru["seconds"])
    r["ceiling_gbps"] = gbps(data_bytes, ru["seconds"])
    log(f"{layout.label}: reading the used extents: {ru['bytes'] / GIB:.2f} GiB in "
        f"{ru['seconds']} s ({r['read_used_gbps']} GB/s; {r['ceiling_gbps']} GB/s of data)")
    dd = dd_ceiling(layout.images[0], layout.logf)
    r["dd_cold"] = dd
    r["dd_cold_mbps"] = round(dd["bytes"] / dd["seconds"] / 1e6, 1) if dd else None
    log(f"{layout.label}: dd of one image's largest extent, cold: {dd and dd['dd']}")
    drop_caches()
    fd = layout.fsck()
    r["fsck_data"] = fd
    r["fsck_data_s"] = fd["seconds"]
    r["fsck_data_gbps"] = gbps(data_bytes, fd["seconds"])
    if fd["cut_at_timeout"]:
        r["fsck_data_s"] = r["fsck_data_gbps"] = None
        r["fsck_data_cut_s"] = fd["seconds"]
    elif fd["rc"] != 0:
        raise RuntimeError(f"fsck -n with data: exit {fd['rc']}")
    log(f"{layout.label}: fsck -n with data {fd['seconds']} s ({r['fsck_data_gbps']} GB/s)")
    if COLD[0]:
        # Again at once: the images are in the page cache now (as much
        # as memory holds), so this is the CPU's part of the figure.
        fw = layout.fsck()
        r["fsck_data_warm"] = fw
        ok = fw["rc"] == 0 and not fw["cut_at_timeout"]
        r["fsck_data_warm_s"] = fw["seconds"] if ok else None
        r["fsck_data_warm_gbps"] = gbps(data_bytes, fw["seconds"]) if ok else None
        log(f"{layout.label}: fsck -n with data, warm {fw['seconds']} s "
            f"({r['fsck_data_warm_gbps']} GB/s)")
    layout.mount()
    drop_caches()
    secs, st, cut = layout.scrub()
    r["scrub_s"] = None if cut else round(secs, 4)
    r["scrub_gbps"] = None if cut else gbps(data_bytes, secs)
    r["scrub_status"] = st
    if cut:
        r["scrub_cut_s"] = round(secs, 4)
        r["scrub_projected_s"] = projected(secs, st)
    elif st.get("state") != "finished" or st.get("unrecoverable"):
        raise RuntimeError(f"scrub: {st}")
    log(f"{layout.label}: scrub {r['scrub_s']} s ({r['scrub_gbps']} GB/s)")
    if COLD[0] and not cut:
        secs, st, cut = layout.scrub()
        r["scrub_warm_s"] = None if cut else round(secs, 4)
        r["scrub_warm_gbps"] = None if cut else gbps(data_bytes, secs)
        log(f"{layout.label}: scrub again, warm {r['scrub_warm_s']} s ({r['scrub_warm_gbps']} GB/s)")
    drop_caches()
    secs, st, cut = layout.replace()
    r["replace_s"] = None if cut else round(secs, 4)
    r["replace_gbps"] = None if cut else gbps(data_bytes, secs)
    r["replace_status"] = st
    if cut:
        r["replace_cut_s"] = round(secs, 4)
        r["replace_projected_s"] = projected(secs, st)
        log(f"{layout.label}: replace cut after {secs:.0f} s at {st.get('percent')}% "
            f"(whole: about {r['replace_projected_s']} s)")
    elif st.get("state") != "finished" or st.get("pages_lost"):
        raise RuntimeError(f"replace: {st}")
    else:
        log(f"{layout.label}: replace {r['replace_s']} s")
    r["rss_end_kib"] = proc_mem_kib(layout.proc.pid)
    r["loadavg_end"] = os.getloadavg()
    layout.umount()
    return r


def projected(secs, st):
    """The whole operation's seconds at the rate so far (percent done)."""
    pct = st.get("percent")
    if pct is None and st.get("rows"):
        pct = 100 * st.get("next_row", 0) / st["rows"]
    return round(secs * 100 / pct, 1) if pct else None


# -- anchors --------------------------------------------------------------
class Ext4Loop(System):
    """ext4 on one sparse file, mounted with mount -o loop."""
    family = "ext4"

    def __init__(self, cfg, name, size):
        self.name = name
        self.size = size
        super().__init__(cfg)

    def _force_stop(self):
        if is_mounted(self.mnt):
            run(["umount", self.mnt], check=False, timeout=120)
            if is_mounted(self.mnt):
                run(["umount", "-l", self.mnt], check=False)


def measure_ext4(cfg, label, size, data_bytes, logf):
    e = Ext4Loop(cfg, f"ext4-{label}", size)
    try:
        e._mkdirs()
        e._make_images(1, size)
        r = {"image_bytes": size}
        mk = measured(["mkfs.ext4", "-F", "-q", e.images[0]], logf)
        if mk["rc"]:
            raise RuntimeError(f"mkfs.ext4 exit {mk['rc']}")
        r["mkfs_s"] = mk["seconds"]
        r["mount_s"] = measured(["mount", "-o", "loop", e.images[0], e.mnt], logf)["seconds"]
        if not is_mounted(e.mnt):
            raise RuntimeError("mount -o loop failed")
        r["statfs"] = statfs(e.mnt)
        r["statfs_s"] = r["statfs"]["seconds"]
        run(["umount", e.mnt], timeout=300)
        fe = measured(["e2fsck", "-fn", e.images[0]], logf)
        r["fsck_empty_s"], r["fsck_empty_maxrss_kib"] = fe["seconds"], fe["maxrss_kib"]
        run(["mount", "-o", "loop", e.images[0], e.mnt], timeout=300)
        r["write"] = write_data(e.mnt, data_bytes, logf)
        run(["umount", e.mnt], timeout=600)
        fd = measured(["e2fsck", "-fn", e.images[0]], logf)
        r["fsck_data_s"], r["fsck_data_maxrss_kib"] = fd["seconds"], fd["maxrss_kib"]
        r["fsck_data_gbps"] = gbps(data_bytes, fd["seconds"])
        r["fsck_rc"] = [fe["rc"], fd["rc"]]
        log(f"ext4 {label}: mkfs {r['mkfs_s']} s, mount {r['mount_s']} s, "
            f"e2fsck -fn empty {r['fsck_empty_s']} s, with data {r['fsck_data_s']} s")
        return r
    finally:
        e.teardown()


def ensure_btrfs_progs(logf):
    """None when mkfs.btrfs is there (installed now if need be), else why not."""
    if which("mkfs.btrfs") and which("btrfs"):
        return None
    if os.geteuid() != 0 or not which("apt-get"):
        return "btrfs-progs not installed and cannot apt-get it here"
    log("btrfs-progs missing: apt-get install -y btrfs-progs")
    r = measured(["apt-get", "install", "-y", "-q", "btrfs-progs"], logf, timeout=900)
    if r["rc"] != 0 or not which("mkfs.btrfs"):
        return f"btrfs-progs not installed: apt-get install exit {r['rc']} (see {logf})"
    return None


def measure_btrfs(cfg, label, dev_size, data_bytes, logf):
    b = Btrfs(cfg, f"btrfs-raid5-{label}", 4, ["-d", "raid5", "-m", "raid5"], [],
              "RAID-5 data and metadata", True)
    try:
        b.check()
        b._mkdirs()
        b._make_images(4, dev_size)
        b._attach()
        r = {"devices": 4, "device_bytes": dev_size}
        mk = measured(["mkfs.btrfs", "-f", "-q", *b.mkfs_args, *b.loops.values()], logf)
        if mk["rc"]:
            raise RuntimeError(f"mkfs.btrfs exit {mk['rc']} (see {logf})")
        r["mkfs_s"] = mk["seconds"]
        t0 = time.monotonic()
        b.start()
        r["mount_s"] = round(time.monotonic() - t0, 4)
        r["statfs"] = statfs(b.mnt)
        r["statfs_s"] = r["statfs"]["seconds"]
        t0 = time.monotonic()
        run(["btrfs", "scrub", "start", "-B", b.mnt], timeout=7200)
        r["scrub_empty_s"] = round(time.monotonic() - t0, 4)
        run(["umount", b.mnt], timeout=300)
        ce = measured(["btrfs", "check", "--readonly", b.loops[0]], logf)
        r["check_empty_s"], r["check_empty_maxrss_kib"] = ce["seconds"], ce["maxrss_kib"]
        run(["mount", "-t", "btrfs", "-o", ",".join(f"device={d}" for d in b.loops.values()),
             b.loops[0], b.mnt], timeout=300)
        r["write"] = write_data(b.mnt, data_bytes, logf)
        # cold like daxguard's scrub: the data just written is otherwise
        # still in the loop files' page cache
        drop_caches()
        t0 = time.monotonic()
        run(["btrfs", "scrub", "start", "-B", b.mnt], timeout=7200)
        r["scrub_s"] = round(time.monotonic() - t0, 4)
        r["scrub_gbps"] = gbps(data_bytes, r["scrub_s"])
        run(["umount", b.mnt], timeout=600)
        cd = measured(["btrfs", "check", "--readonly", b.loops[0]], logf)
        r["check_data_s"], r["check_data_maxrss_kib"] = cd["seconds"], cd["maxrss_kib"]
        r["check_rc"] = [ce["rc"], cd["rc"]]
        log(f"btrfs {label}: mkfs {r['mkfs_s']} s, mount {r['mount_s']} s, check empty "
            f"{r['check_empty_s']} s, with data {r['check_data_s']} s, scrub {r['scrub_s']} s")
        return r
    finally:
        b.teardown()


# -- the targets ----------------------------------------------------------
def size_label(nbytes):
    for unit, shift in (("T", 40), ("G", 30), ("M", 20)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift}{unit}"
    return str(nbytes)


def judge(value, limit, better):
    if value is None:
        return "n/a"
    return "PASS" if (value <= limit if better == "lower" else value >= limit) else "MISS"


def targets(layouts):
    """Rows of the issue's targets from the 4-device layouts: the
    absolute limit at the largest size (4 x 1 TiB in the full run), and
    'no more than 2x its figure' against the smallest (4 x 64 GiB)."""
    four = sorted((r for r in layouts.values() if r.get("devices") == 4 and "error" not in r),
                  key=lambda r: r["device_bytes"])
    rows = []
    if not four:
        return rows
    big, small = four[-1], four[0]
    at, base = f"4x{size_label(big['device_bytes'])}", f"4x{size_label(small['device_bytes'])}"
    for key, label, unit, limit, better in TARGETS:
        v, v0 = big.get(key), small.get(key)
        rows.append({"target": f"{label} at {at}", "value": v, "unit": unit,
                     "limit": f"{'<=' if better == 'lower' else '>='} {limit:g} {unit}",
                     "verdict": judge(v, limit, better)})
        if big is small:
            continue
        if v is None or not v0:
            ratio, verdict = None, "n/a"
        elif better == "lower":
            ratio = round(v / v0, 2)
            verdict = "PASS" if ratio <= 2 else "MISS"
        else:
            ratio = round(v0 / v, 2) if v else None
            verdict = "PASS" if ratio is not None and ratio <= 2 else "MISS"
        rows.append({"target": f"{label} {at} vs {base}", "value": ratio, "unit": "x worse",
                     "limit": "<= 2x", "verdict": verdict})
    rows += media_rows(big, at)
    return rows


# Where the 2 GB/s of used data is met or not. Cold, fsck and the scrub
# read data and parity from the disk: the disk's own rate, measured in the
# same run (every used extent of the images read at once, "ceiling_gbps",
# in GB/s of data), bounds them, and what is left to judge is the share of
# it they reach. Warm (every page in the page cache, as on persistent
# memory, where a load is the read), the pass is CPU only and the 2 GB/s
# applies as it is.
def media_rows(big, at):
    rows = []
    ceiling = big.get("ceiling_gbps")
    for key, label in (("fsck_data", "fsck -n of used data"), ("scrub", "scrub of used data")):
        warm = big.get(f"{key}_warm_gbps")
        rows.append({"target": f"{label}, warm (CPU only), at {at}", "value": warm,
                     "unit": "GB/s", "limit": ">= 2 GB/s", "verdict": judge(warm, 2.0, "higher")})
        cold = big.get(f"{key}_gbps")
        share = round(cold / ceiling, 2) if cold and ceiling else None
        rows.append({"target": f"{label}, cold, share of the disk's read rate "
                     f"({fmt(ceiling)} GB/s of data, same run) at {at}", "value": share,
                     "unit": "", "limit": "(the disk's limit)", "verdict": "-"})
    return rows


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"
    return str(v)


COLUMNS = [("mkfs_s", "mkfs s"), ("mount_s", "mount s"), ("rss_mib", "RSS MiB"),
           ("statfs_s", "statfs s"), ("fsck_empty_s", "fsck -n empty s"),
           ("fsck_empty_maxrss_mib", "fsck max RSS MiB"),
           ("write_mbps", "fill MB/s"), ("dd_cold_mbps", "dd cold MB/s"),
           ("ceiling_gbps", "read used extents GB/s of data"), ("fsck_data_s", "fsck -n data s"),
           ("fsck_data_gbps", "fsck GB/s"), ("fsck_data_warm_gbps", "fsck warm GB/s"),
           ("scrub_s", "scrub s"), ("scrub_gbps", "scrub GB/s"),
           ("scrub_warm_gbps", "scrub warm GB/s"),
           ("replace_s", "replace s"), ("replace_projected_s", "replace projected s (cut)")]


def fmt_load(la):
    return "/".join(f"{x:.2f}" for x in la) if la else "-"


def table(results):
    m = results["machine"]
    lines = [f"# Whole-volume operations against device size ({m.get('date')}, commit "
             f"{(m.get('git_commit') or '?')[:12]}{', dirty' if m.get('git_dirty') else ''}; "
             f"{results['data_bytes'] / GIB:g} GiB of data; images in {results['dir']}; "
             f"{'cold' if results.get('cold_cache') else 'warm'} page cache; load average "
             f"{fmt_load(results.get('loadavg_start'))} at the start, "
             f"{fmt_load(results.get('loadavg_end'))} at the end)", "",
             "| daxguard | " + " | ".join(c for _, c in COLUMNS) + " |",
             "|---" * (len(COLUMNS) + 1) + "|"]
    for name, r in results["layouts"].items():
        if "error" in r:
            lines.append(f"| {name} | failed: {r['error']} |")
            continue
        lines.append(f"| {name} | " + " | ".join(fmt(r.get(k)) for k, _ in COLUMNS) + " |")
    lines += ["", "| anchor | mkfs s | mount s | statfs s | check empty s | check data s "
              "| scrub empty s | scrub data s |", "|---|---|---|---|---|---|---|---|"]
    for name, r in results["anchors"].items():
        if "error" in r or "skipped" in r:
            lines.append(f"| {name} | {'skipped' if 'skipped' in r else 'failed'}: "
                         f"{r.get('skipped') or r.get('error')} |")
            continue
        check_e = r.get("fsck_empty_s", r.get("check_empty_s"))
        check_d = r.get("fsck_data_s", r.get("check_data_s"))
        lines.append(f"| {name} | {fmt(r.get('mkfs_s'))} | {fmt(r.get('mount_s'))} | "
                     f"{fmt(r.get('statfs_s'))} | {fmt(check_e)} | {fmt(check_d)} | "
                     f"{fmt(r.get('scrub_empty_s'))} | {fmt(r.get('scrub_s'))} |")
    lines += ["", "| target (issue 34) | measured | limit | verdict |", "|---|---|---|---|"]
    for t in results["targets"]:
        lines.append(f"| {t['target']} | {fmt(t['value'])} {t['unit']} | {t['limit']} | "
                     f"{t['verdict']} |")
    return "\n".join(lines) + "\n"


# -- plots ------------------------------------------------------------------
SERIES = [("daxguard", "mkfs_s"), ("daxguard", "mount_s"), ("daxguard", "fsck_empty_s"),
          ("daxguard", "fsck_data_s"), ("daxguard", "scrub_s"), ("daxguard", "replace_s"),
          ("ext4", "mkfs_s"), ("ext4", "mount_s"), ("ext4", "fsck_empty_s"),
          ("btrfs", "mkfs_s"), ("btrfs", "mount_s"), ("btrfs", "check_empty_s"),
          ("btrfs", "scrub_s")]


def series(results):
    """{(system, key): [(device GiB, seconds)]} over the 4-device sizes."""
    out = {}
    for fam, key in SERIES:
        pts = []
        for size in results["sizes"]:
            label = f"4x{size_label(size)}"
            rec = (results["layouts"].get(f"daxguard-{label}") if fam == "daxguard" else
                   results["anchors"].get(f"{fam}-raid5-{label}" if fam == "btrfs" else f"ext4-{label}"))
            if rec and rec.get(key) is not None:
                pts.append((size / GIB, rec[key]))
        if pts:
            out[(fam, key)] = pts
    return out


def write_csv(results, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["system", "layout", "metric", "value"])
        for name, r in results["layouts"].items():
            for k, _ in COLUMNS:
                w.writerow(["daxguard", name, k, r.get(k)])
        for name, r in results["anchors"].items():
            for k, v in sorted(r.items()):
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    w.writerow([name.split("-")[0], name, k, v])


def plot(results, out):
    """scale.png (matplotlib) or scale.svg; returns the file name."""
    ser = series(results)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return plot_svg(ser, os.path.join(out, "scale.svg"))
    fig, ax = plt.subplots(figsize=(9, 6))
    styles = {"daxguard": "-o", "ext4": "--s", "btrfs": ":^"}
    for (fam, key), pts in ser.items():
        ax.plot([p[0] for p in pts], [max(p[1], 1e-3) for p in pts], styles[fam],
                label=f"{fam} {key.replace('_s', '')}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("device size, GiB (4 devices)")
    ax.set_ylabel("seconds")
    ax.set_title(f"Whole-volume operations, {results['data_bytes'] / GIB:g} GiB of data")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "scale.png"), dpi=110)
    plt.close(fig)
    return "scale.png"


def plot_svg(ser, path):
    """A log-log line chart without matplotlib: one polyline a series."""
    import math
    W, H, M = 800, 500, 60
    xs = [p[0] for pts in ser.values() for p in pts] or [1]
    ys = [max(p[1], 1e-3) for pts in ser.values() for p in pts] or [1]
    lx0, lx1 = math.log2(min(xs)), math.log2(max(xs)) + 1e-9
    ly0, ly1 = math.log10(min(ys)), math.log10(max(ys)) + 1e-9

    def xy(x, y):
        return (M + (math.log2(x) - lx0) / (lx1 - lx0 or 1) * (W - 2 * M),
                H - M - (math.log10(max(y, 1e-3)) - ly0) / (ly1 - ly0 or 1) * (H - 2 * M))
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}">',
             f'<rect width="{W}" height="{H}" fill="white"/>',
             f'<text x="{W / 2}" y="{H - 10}" text-anchor="middle">device size, GiB (log)</text>',
             f'<text x="10" y="20">seconds (log), {min(ys):.3g} .. {max(ys):.3g}</text>']
    for i, ((fam, key), pts) in enumerate(ser.items()):
        c = colors[i % len(colors)]
        pl = " ".join(f"{a:.1f},{b:.1f}" for a, b in (xy(*p) for p in pts))
        dash = "" if fam == "daxguard" else ' stroke-dasharray="5,3"'
        parts.append(f'<polyline points="{pl}" fill="none" stroke="{c}"{dash}/>')
        parts.append(f'<text x="{W - M + 5 - 200}" y="{40 + 14 * i}" fill="{c}" '
                     f'font-size="11">{fam} {key}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")
    return os.path.basename(path)


# -- driver ---------------------------------------------------------------
def parse_layout(s):
    """'16x64G' -> (16, bytes)."""
    n, _, size = s.lower().partition("x")
    n, size = int(n), parse_size(size)
    if not 2 <= n <= 16 or size < GIB:
        raise ValueError(s)
    return n, size


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/scale.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="64G,256G,1T",
                   help="device sizes of the 4-device layouts (default 64G,256G,1T)")
    p.add_argument("--wide", default="16x64G",
                   help="the many-device layout, NxSIZE, parity 2 (default 16x64G; none: skip)")
    p.add_argument("--data-gib", type=float, default=8, help="GiB written before the "
                   "used-data measurements (default 8)")
    p.add_argument("--dir", default="/var/tmp/dgscale",
                   help="disk-backed directory for the sparse images (default /var/tmp/dgscale)")
    p.add_argument("--out", help="output directory (default bench/results/<timestamp>-scale)")
    p.add_argument("--build-dir", default="build", help="meson build dir with daxguard binaries")
    p.add_argument("--step-timeout", type=float, default=900,
                   help="seconds a fsck, scrub or replace may take before it is cut and "
                        "its whole time projected from its progress (default 900)")
    p.add_argument("--warm", action="store_true",
                   help="keep the page cache between steps (default: sync and drop it "
                        "before each used-data step, as the targets assume a cold cache)")
    p.add_argument("--empty-reps", type=int, default=5,
                   help="repetitions of mkfs, mount, RSS, statfs and fsck -n of the empty "
                        "volume, each a fresh volume; the table gives the medians (default 5)")
    p.add_argument("--empty-only", action="store_true",
                   help="only the empty-volume figures: no data, no anchors")
    p.add_argument("--render", metavar="DIR",
                   help="only write DIR/results.md again from DIR/results.json (the target "
                        "rows as this version judges them); measures nothing")
    p.add_argument("--anchors", default="ext4,btrfs",
                   help="comma-separated anchors: ext4, btrfs (default both; none: no anchors)")
    args = p.parse_args(argv)
    try:
        args.size_list = sorted({parse_size(s) for s in args.sizes.split(",") if s.strip()})
        if not args.size_list or min(args.size_list) < GIB:
            raise ValueError(args.sizes)
        args.wide_layout = None if args.wide.lower() == "none" else parse_layout(args.wide)
    except ValueError:
        p.error(f"bad --sizes {args.sizes!r} or --wide {args.wide!r} "
                "(sizes like 64G,1T, at least 1G; wide NxSIZE with 2 <= N <= 16)")
    if not 1 <= args.empty_reps <= 100:
        p.error("--empty-reps must be 1 to 100")
    if args.empty_only:
        args.anchors = "none"
    if not args.step_timeout > 0:
        p.error("--step-timeout must be above 0")
    if not 0 < args.data_gib <= 1024:
        p.error("--data-gib must be above 0 and at most 1024")
    args.anchor_list = [] if args.anchors == "none" else \
        [a.strip() for a in args.anchors.split(",") if a.strip()]
    if any(a not in ("ext4", "btrfs") for a in args.anchor_list):
        p.error(f"bad --anchors {args.anchors!r}: ext4, btrfs or none")
    data = int(args.data_gib * GIB) >> 20 << 20
    for n, size in [(4, s) for s in args.size_list] + ([args.wide_layout] if args.wide_layout else []):
        if data > (n - 2) * size // 2:
            p.error(f"--data-gib {args.data_gib:g} does not fit in {n}x{size_label(size)}")
    args.data_bytes = data
    return args


def render(out):
    """results.md of a run again, its targets judged by this version."""
    try:
        with open(os.path.join(out, "results.json")) as f:
            results = json.load(f)
    except (OSError, ValueError) as e:
        print(f"bench/scale.py: cannot read {out}/results.json: {e}", file=sys.stderr)
        return 2
    results["targets"] = targets(results["layouts"])
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(table(results))
    return 0


def main(argv=None):
    args = parse_args(argv)      # exits 2 on a usage error
    if args.render:
        return render(args.render)
    STEP_TIMEOUT[0] = args.step_timeout
    COLD[0] = not args.warm
    EMPTY_REPS[0], EMPTY_ONLY[0] = args.empty_reps, args.empty_only
    if os.geteuid() != 0:
        print("bench/scale.py: run as root (mounts, loop devices)", file=sys.stderr)
        return 2
    out = os.path.abspath(args.out or os.path.join(
        BENCH_DIR, "results", time.strftime("%Y%m%d-%H%M%S") + "-scale"))
    build_dir = os.path.abspath(args.build_dir if os.path.isabs(args.build_dir)
                                else os.path.join(REPO_ROOT, args.build_dir))
    os.makedirs(out, exist_ok=True)
    os.makedirs(args.dir, exist_ok=True)
    work_root = tempfile.mkdtemp(prefix="dgscale-", dir=args.dir)
    logf = os.path.join(out, "scale.log")
    cfg = Config(work_root, build_dir, 0, os.path.join(work_root, "bin"), REPO_ROOT)
    results = {"bench": "scale", "dir": args.dir, "data_bytes": args.data_bytes,
               "step_timeout_s": args.step_timeout, "cold_cache": COLD[0],
               "loadavg_start": os.getloadavg(),
               "sizes": args.size_list, "machine": machine.facts(REPO_ROOT),
               "layouts": {}, "anchors": {}, "targets": []}
    results["machine"]["versions"]["e2fsprogs"] = machine._dpkg("e2fsprogs")
    status = 0

    def on_term(signum, frame):
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGTERM, on_term)
    plan = [(4, s, 1) for s in args.size_list]
    if args.wide_layout:
        plan.append((*args.wide_layout, 2))
    try:
        probe = Daxguard(cfg, "probe", [], "")
        for tool in ("mkfs", "daemon", "fsck", "ctl"):
            if not probe.have(tool):
                print(f"bench/scale.py: {probe.bin[tool]} missing (build first)", file=sys.stderr)
                return 2
        btrfs_skip = ensure_btrfs_progs(logf) if "btrfs" in args.anchor_list else None
        for n, size, parity in plan:
            lay = DgLayout(cfg, n, size, parity)
            lay.logf = logf
            try:
                rec = measure_daxguard(lay, args.data_bytes)
            except (RuntimeError, ValueError, OSError) as e:
                log(f"{lay.name}: failed: {e}")
                rec, status = {"devices": n, "device_bytes": size, "error": str(e)}, 1
            finally:
                lay.teardown()
            results["layouts"][lay.name] = rec
            if n != 4:
                continue
            label = f"4x{size_label(size)}"
            usable = (rec.get("statfs") or {}).get("size_bytes") or 3 * size
            if "ext4" in args.anchor_list:
                try:
                    results["anchors"][f"ext4-{label}"] = measure_ext4(
                        cfg, label, usable >> 20 << 20, args.data_bytes, logf)
                except (RuntimeError, OSError) as e:
                    results["anchors"][f"ext4-{label}"], status = {"error": str(e)}, 1
            if "btrfs" in args.anchor_list:
                try:
                    if btrfs_skip:
                        raise Skip(btrfs_skip)
                    results["anchors"][f"btrfs-raid5-{label}"] = measure_btrfs(
                        cfg, label, size, args.data_bytes, logf)
                except Skip as e:
                    log(f"btrfs anchor skipped: {e}")
                    results["anchors"][f"btrfs-raid5-{label}"], status = {"skipped": str(e)}, 1
                except (RuntimeError, OSError) as e:
                    results["anchors"][f"btrfs-raid5-{label}"], status = {"error": str(e)}, 1
            save(results, out)
    except KeyboardInterrupt:
        log("interrupted: everything torn down, partial results written")
        status = 130
    finally:
        signal.signal(signal.SIGTERM, old)
        shutil.rmtree(work_root, ignore_errors=True)
        save(results, out)
    md = table(results)
    print(md)
    return status


def save(results, out):
    results["loadavg_end"] = os.getloadavg()
    results["targets"] = targets(results["layouts"])
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    write_csv(results, os.path.join(out, "results.csv"))
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(table(results))
    results["plot"] = plot(results, out)


if __name__ == "__main__":
    sys.exit(main())
