#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/cluster.py -- what daxguard costs and buys under GlusterFS
(issue 33), in one run on this machine, loopback only.

Two GlusterFS volumes of the same layout (disperse 3 redundancy 1,
three bricks): `gluster-daxguard` with each brick on its own daxguard
volume (4 images on /dev/shm, parity 1, default durability), and
`gluster-tmpfs` with each brick a directory on /dev/shm. fio through
each volume's FUSE client (sequential 1 MiB write and read, random
4 KiB write), the two volumes interleaved in every round (the order
swapped each round), so the cost of daxguard under the distributed
engine is a ratio of the same run's medians.

Then repair: the time GlusterFS needs to heal a brick that lost all
its contents (reset-brick, wiped, `heal full`, until the brick holds
every file again and heal info is empty) on each volume, against the
time daxguard needs to rebuild one wiped device of a brick online
(`daxguard-ctl MNT replace`), which moves no data over the network.

    /usr/bin/python3 bench/cluster.py [--out DIR] [--runtime 10]
        [--rounds 3] [--size 256M] [--build-dir build]

Writes DIR/results.json (machine facts, every raw fio record, medians,
ratios, repair times) and DIR/results.md. Needs root, fio and
glusterfs-server/-client. Everything it made is torn down on exit,
error or Ctrl-C; glusterd is stopped only if this started it."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "cluster"))

from dgbench import fio, machine, stats  # noqa: E402
import gluster  # noqa: E402

WORKLOADS = {
    # name: (fio options, metric)
    "seq-write-1m": ({"rw": "write", "bs": "1M", "ioengine": "psync",
                      "end_fsync": "1"}, "bw_mib"),
    "seq-read-1m": ({"rw": "read", "bs": "1M", "ioengine": "psync"},
                    "bw_mib"),
    "rand-write-4k": ({"rw": "randwrite", "bs": "4k", "ioengine": "psync",
                       "end_fsync": "1"}, "iops"),
}


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def sh(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True,
                       text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed "
                           f"({p.returncode}): {p.stdout}{p.stderr}")
    return p


def drop_caches():
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


class DaxguardNode:
    """One node's daxguard volume: 4 images on /dev/shm, parity 1."""

    def __init__(self, build, work, i, image_size):
        self.build = build
        self.tag = f"dgcl-{uuid.uuid4().hex[:6]}-{i}"
        self.devs = [Path(f"/dev/shm/{self.tag}-{d}.img") for d in range(4)]
        self.mnt = work / f"node{i}"
        self.mnt.mkdir()
        self.image_size = image_size
        self.proc = None
        self.logf = None

    def ctl(self, *args):
        return sh([self.build / "fs/ctl/daxguard-ctl", self.mnt] + list(args))

    def start(self):
        sh([self.build / "mkfs/mkfs.daxguard", "-q", "--force", "--size",
            self.image_size, "--parity", "1"] + self.devs)
        self.logf = open(self.mnt.with_suffix(".log"), "a")
        self.proc = subprocess.Popen(
            [str(self.build / "fs/daemon/daxguard"),
             ",".join(map(str, self.devs)), str(self.mnt), "-f"],
            stdout=self.logf, stderr=subprocess.STDOUT,
            start_new_session=True)
        deadline = time.monotonic() + 20
        while not gluster.is_mounted(self.mnt):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"daxguard mount of {self.mnt} failed")
            time.sleep(0.05)
        return self.mnt

    def stop(self):
        if self.proc is not None:
            subprocess.run(["fusermount3", "-u", "-z", str(self.mnt)],
                           capture_output=True)
            gluster.wait_or_kill(self.proc)
            self.proc = None
        if self.logf:
            self.logf.close()
            self.logf = None
        for d in self.devs:
            d.unlink(missing_ok=True)


def brick_listing(brick):
    """{relative path: size} of a brick's files, .glusterfs left out."""
    out = {}
    for dp, dn, fn in os.walk(brick):
        dn[:] = [d for d in dn if d != ".glusterfs"]
        for f in fn:
            p = Path(dp) / f
            out[str(p.relative_to(brick))] = p.lstat().st_size
    return out


def run_fio(gv, name, opts, size, runtime):
    d = gv.mnt / "fio"
    d.mkdir(exist_ok=True)
    if opts["rw"] == "read":
        drop_caches()
    args = fio.job_args(name, opts, d, size, runtime)
    p = subprocess.run(args, capture_output=True, text=True,
                       timeout=runtime * 10 + 300)
    if p.returncode != 0:
        raise RuntimeError(f"fio {name} failed: {p.stderr}")
    return fio.parse(p.stdout), p.stdout


def gluster_heal_time(gv, i, timeout):
    """Brick i loses everything (a replaced disk): reset-brick start,
    wiped, reset-brick commit force, heal full; seconds until the brick
    lists the same files and sizes as a sibling and heal info is empty,
    and the bytes it had to receive."""
    brick = gv.bricks[i]
    sibling = gv.bricks[(i + 1) % len(gv.bricks)]
    want = brick_listing(sibling)
    nbytes = sum(want.values())
    spec = f"{gluster.HOST}:{brick}"
    gluster.cli("volume", "reset-brick", gv.name, spec, "start")
    for child in brick.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    for k in list(os.listxattr(brick)):
        if k.startswith("trusted."):
            os.removexattr(brick, k)
    t0 = time.monotonic()
    gluster.cli("volume", "reset-brick", gv.name, spec, spec, "commit",
                "force")
    gv.wait_online()
    gluster.cli("volume", "heal", gv.name, "full")
    while True:
        if brick_listing(brick) == want and gv.pending() == 0:
            return time.monotonic() - t0, nbytes
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"heal of {brick} not done in {timeout} s")
        time.sleep(0.2)


def daxguard_replace_time(node, dev, timeout):
    """Device dev of a brick's daxguard volume wiped (zeroed in place,
    as a failed disk's replacement reads) while the brick serves; then
    rebuilt online onto a new image. Seconds and the replace status."""
    with open(node.devs[dev], "r+b") as f:
        size = os.fstat(f.fileno()).st_size
        zero = bytes(1 << 20)
        for off in range(0, size, len(zero)):
            f.write(zero[:min(len(zero), size - off)])
    new = node.devs[dev].with_name(node.devs[dev].stem + "-new.img")
    t0 = time.monotonic()
    node.ctl("replace", str(dev), str(new))
    while True:
        st = json.loads(node.ctl("replace", "status", "--json").stdout)
        if st["state"] != "running":
            secs = time.monotonic() - t0
            break
        if secs_over(t0, timeout):
            raise RuntimeError("daxguard replace did not finish")
        time.sleep(0.05)
    node.devs[dev].unlink(missing_ok=True)
    node.devs[dev] = new
    return secs, st


def secs_over(t0, limit):
    return time.monotonic() - t0 > limit


def markdown(res):
    lines = ["# daxguard under GlusterFS (bench/cluster.py)", "",
             f"{res['facts']['date']}, {res['facts']['cores']} cores, "
             f"kernel {res['facts']['kernel']}, glusterfs "
             f"{res['facts']['versions'].get('glusterfs')}; "
             f"{res['params']['rounds']} rounds x "
             f"{res['params']['runtime_s']} s per job, file "
             f"{res['params']['size']}, both volumes disperse 3 redundancy 1 "
             "on 127.0.0.2, interleaved.", "",
             "| workload | metric | gluster-daxguard (p1) | gluster-tmpfs "
             "| ratio (range) |", "|---|---|---|---|---|"]
    for w, (_, metric) in WORKLOADS.items():
        a = res["summary"][w]["gluster-daxguard"]
        b = res["summary"][w]["gluster-tmpfs"]
        r = res["ratios"][w]
        unit = "MiB/s" if metric == "bw_mib" else "IOPS"
        lines.append(
            f"| {w} | {unit} | {a['median']:.1f} | {b['median']:.1f} | "
            f"{r['ratio']:.2f} ({r['lo']:.2f}-{r['hi']:.2f}) |")
    lines += ["", "Repair after losing one disk's contents:", "",
              "| what | seconds | data moved |", "|---|---|---|"]
    for rec in res["repair"]:
        lines.append(f"| {rec['what']} | {rec['seconds']:.2f} | "
                     f"{rec['bytes_moved'] / (1 << 20):.1f} MiB "
                     f"{rec['over']} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--build-dir", type=Path, default=ROOT / "build")
    ap.add_argument("--runtime", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", default="128M",
                    help="fio file size (each brick holds half)")
    ap.add_argument("--image-size", default="192M",
                    help="each daxguard device image (4 per node)")
    ap.add_argument("--heal-timeout", type=int, default=600)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/cluster.py: needs root")
    missing = gluster.missing_tools() + [t for t in ("fio",)
                                         if not shutil.which(t)]
    if missing:
        sys.exit("bench/cluster.py: not installed: " + ", ".join(missing))
    build = a.build_dir.resolve()
    out = a.out or ROOT / "bench" / "results" / (
        time.strftime("%Y-%m-%d-%H%M%S") + "-cluster")
    out.mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    size = a.size.upper()
    size_b = int(size[:-1]) << {"K": 10, "M": 20, "G": 30}[size[-1]]

    facts = machine.facts(str(ROOT))
    facts["versions"]["glusterfs"] = machine._dpkg("glusterfs-server")
    res = {"facts": facts, "params": {"runtime_s": a.runtime,
                                      "rounds": a.rounds, "size": a.size,
                                      "image_size": a.image_size},
           "raw": [], "summary": {}, "ratios": {}, "repair": []}
    work = Path(f"/dev/shm/dgcl-{uuid.uuid4().hex[:6]}")
    work.mkdir()
    gd = gluster.Glusterd()
    nodes, vols = [], {}
    try:
        for i in range(3):
            n = DaxguardNode(build, work, i, a.image_size)
            nodes.append(n)
            n.start()
            (n.mnt / "brick").mkdir()
        for i in range(3):
            (work / f"tmpfs{i}" / "brick").mkdir(parents=True)
        gd.start()
        tag = uuid.uuid4().hex[:6]
        vols["gluster-daxguard"] = gluster.GlusterVolume(
            f"dgbench-dg-{tag}", [n.mnt / "brick" for n in nodes],
            work / "gm-dg", out / "logs" / "client-dg.log")
        vols["gluster-tmpfs"] = gluster.GlusterVolume(
            f"dgbench-tmpfs-{tag}",
            [work / f"tmpfs{i}" / "brick" for i in range(3)],
            work / "gm-tmpfs", out / "logs" / "client-tmpfs.log")
        for gv in vols.values():
            gv.create()
            gv.mount()
        names = list(vols)
        for r in range(a.rounds):
            order = names if r % 2 == 0 else names[::-1]
            for w, (opts, metric) in WORKLOADS.items():
                for sysname in order:
                    gv = vols[sysname]
                    log(f"round {r + 1}/{a.rounds} {w} on {sysname}")
                    fig, text = run_fio(gv, w, opts, size_b, a.runtime)
                    (out / "logs" / f"{sysname}-{w}-{r}.json").write_text(text)
                    res["raw"].append({"system": sysname, "workload": w,
                                       "round": r, "metric": metric,
                                       "value": fig[metric], "fio": fig})
        for w in WORKLOADS:
            res["summary"][w] = {
                s: stats.summarize([x["value"] for x in res["raw"]
                                    if x["system"] == s and x["workload"] == w])
                for s in names}
            res["ratios"][w] = stats.ratio(res["summary"][w]["gluster-daxguard"],
                                           res["summary"][w]["gluster-tmpfs"])
        # Repair. A small tree besides fio's files, so that the heal has
        # entries to walk as well as bytes to move.
        for gv in vols.values():
            t = gv.mnt / "tree"
            t.mkdir()
            for j in range(200):
                (t / f"f{j}").write_bytes(os.urandom(16384))
            gv.wait_healed(timeout=120)
        for sysname, gv in vols.items():
            log(f"GlusterFS heal of a wiped brick on {sysname}")
            secs, nbytes = gluster_heal_time(gv, 1, a.heal_timeout)
            res["repair"].append({"what": f"GlusterFS heal full of a wiped "
                                  f"brick ({sysname})", "seconds": secs,
                                  "bytes_moved": nbytes,
                                  "over": "over the network (loopback here)"})
        log("daxguard online replace of a wiped device under brick 0")
        node = nodes[0]
        secs, st = daxguard_replace_time(node, 1, a.heal_timeout)
        dev_bytes = st["pages_written"] * 4096
        res["repair"].append({"what": "daxguard-ctl replace of a wiped "
                              "device under a brick (brick serving)",
                              "seconds": secs, "bytes_moved": dev_bytes,
                              "over": "inside the node, none over the "
                              "network", "replace_status": st})
        f = json.loads(node.ctl("status", "--json").stdout)["faults"]
        res["repair"][-1]["faults"] = f
        assert st["state"] == "finished" and st.get("pages_lost", 0) == 0, st
    finally:
        for gv in vols.values():
            gv.destroy()
        gd.stop()
        for n in nodes:
            n.stop()
        shutil.rmtree(work, ignore_errors=True)
    (out / "results.json").write_text(json.dumps(res, indent=1) + "\n")
    md = markdown(res)
    (out / "results.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
