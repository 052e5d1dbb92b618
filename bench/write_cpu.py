#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The daemon's instructions per write: callgrind inside op_write.

On a shared 2-core machine the daemon's CPU time per write moves by 2x
from run to run (other processes share the caches and the cores); its
instruction count does not (0.1% between runs). So a change to the write
path is measured here as instructions (callgrind's Ir) executed inside
the FUSE write handler, op_write(), and everything it calls, per write:
the engine's whole update (hashes, parity, journal, stores, checksum
pages, locks, allocations), not the kernel's part (the FUSE copy of the
request, context switches), which no change to daxguard's code touches.

  bench/write_cpu.py --build build --mode p1 --job rand
  bench/write_cpu.py --build /tmp/old/build --mode none --job seq

Formats 4 x 1 GiB images on /dev/shm, lays out a 64 MiB file with fio
under a plain daemon, remounts under valgrind --tool=callgrind
--toggle-collect=op_write, runs the fio job (psync, one job: `rand`
3,000 4 KiB random writes of the file, seed 7; `seq` 128 1 MiB writes,
the file twice; `sparse` the random writes into a file not laid out),
unmounts, and prints the writes and Ir per write.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

JOBS = {"rand": ["--rw=randwrite", "--bs=4k", "--size=64M",
                 "--number_ios=3000", "--randseed=7"],
        "seq": ["--rw=write", "--bs=1M", "--size=64M", "--loops=2"],
        # The same writes into a file fio only truncates (as bench/run.py's
        # jobs, --fallocate=none): each fills a hole, so it allocates and
        # changes the extent map, the bitmap and the inode too.
        "sparse": ["--rw=randwrite", "--bs=4k", "--size=64M",
                   "--number_ios=3000", "--randseed=7",
                   "--fallocate=none"]}


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, **kw)


def calls_and_cost(path, fn):
    """Calls of fn and their inclusive Ir, from a callgrind out file."""
    names, cur, calls, incl = {}, None, 0, 0
    lines = Path(path).read_text().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"^c?fn=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(2):
                names[m.group(1)] = m.group(2)
            if line.startswith("cfn="):
                cur = names.get(m.group(1))
            continue
        if line.startswith("calls=") and cur == fn:
            calls += int(line.split("=")[1].split()[0])
            incl += int(lines[i + 1].split()[1])
    return calls, incl


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--mode", choices=["p1", "p2", "none"], default="p1")
    ap.add_argument("--job", choices=list(JOBS), default="rand")
    ap.add_argument("--out", help="keep the callgrind file here")
    a = ap.parse_args()
    build = Path(a.build).resolve()
    tag = uuid.uuid4().hex[:8]
    devs = [f"/dev/shm/dg-wcpu-{tag}-{i}.img" for i in range(4)]
    tmp = Path(tempfile.mkdtemp(prefix="dg-wcpu-"))
    mnt = tmp / "mnt"
    mnt.mkdir()
    out = a.out or str(tmp / "callgrind.out")
    red = (["--redundancy", "none"] if a.mode == "none"
           else ["--parity", a.mode[1]])
    d = None

    def up(pre):
        p = subprocess.Popen(pre + [str(build / "fs/daemon/daxguard"),
                                    ",".join(devs), str(mnt), "-f"],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not os.path.ismount(mnt):
            if time.monotonic() > deadline or p.poll() is not None:
                # Not left running on images the caller deletes.
                p.kill()
                p.wait()
                raise RuntimeError("mount did not come up")
            time.sleep(0.05)
        return p

    def down(p):
        run(["fusermount3", "-u", mnt])
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    try:
        p = run([build / "mkfs/mkfs.daxguard", "-q", "--force", "--size",
                 "1G"] + red + devs)
        if p.returncode:
            raise RuntimeError(f"mkfs: {p.stderr}")
        fio = ["fio", "--name=j", f"--directory={mnt}", "--filename=f",
               "--ioengine=psync"]
        if a.job != "sparse":
            d = up([])
            p = run(fio + ["--rw=write", "--bs=1M", "--size=64M"])
            down(d)
            d = None
            if p.returncode:
                raise RuntimeError(f"fio layout: {p.stderr}")
        d = up(["valgrind", "--tool=callgrind", "--toggle-collect=op_write",
                f"--callgrind-out-file={out}"])
        p = run(fio + JOBS[a.job])
        down(d)
        d = None
        if p.returncode:
            raise RuntimeError(f"fio: {p.stderr}")
        calls, ir = calls_and_cost(out, "op_write")
        print(f"{a.mode} {a.job}: {calls} writes, "
              f"{ir / max(calls, 1):,.0f} Ir a write")
    finally:
        if d:
            down(d)
        for x in devs:
            try:
                os.unlink(x)
            except FileNotFoundError:
                pass
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
