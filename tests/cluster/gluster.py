# SPDX-License-Identifier: MIT
"""A GlusterFS volume on this machine for tests and the bench: glusterd
(started here only if none answers, and stopped again only then), a
volume of bricks on local directories, its FUSE client mount, heal
info, and a teardown that leaves nothing behind.

Bricks are named by 127.0.0.2: the gluster CLI refuses 127.0.0.1 and
localhost as brick hosts, but glusterd takes any 127/8 address as its
own, so everything stays on loopback."""
import os
import re
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HOST = "127.0.0.2"
TOOLS = ("gluster", "glusterd", "glusterfsd", "mount.glusterfs")


def missing_tools():
    """The GlusterFS programs that are not installed (empty: all are)."""
    return [t for t in TOOLS if not shutil.which(t)]


def cli(*args, check=True, timeout=120):
    p = subprocess.run(["gluster", "--mode=script"] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"gluster {' '.join(map(str, args))} failed "
                             f"({p.returncode}):\n{p.stdout}{p.stderr}")
    return p


def glusterd_answers():
    try:
        return cli("pool", "list", check=False, timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        return False


class Glusterd:
    """The running glusterd, or one started here (foreground, -N)."""

    def __init__(self):
        self.proc = None

    def start(self):
        if glusterd_answers():
            return self
        self.proc = subprocess.Popen(["glusterd", "-N"],
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.monotonic() + 60
        while not glusterd_answers():
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"glusterd exited ({self.proc.returncode}); see "
                    "/var/log/glusterfs/glusterd.log")
            if time.monotonic() > deadline:
                raise AssertionError("glusterd did not answer in 60 s")
            time.sleep(0.2)
        return self

    def stop(self):
        if self.proc is None:
            return
        self.proc.terminate()
        wait_or_kill(self.proc)
        self.proc = None


def wait_or_kill(proc, timeout=30):
    """Wait for a process asked to stop (a signal, an unmount); kill it
    if it has not gone in `timeout` seconds."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def is_mounted(mnt):
    mnt = os.path.realpath(mnt)
    with open("/proc/mounts") as f:
        return any(line.split()[1] == mnt for line in f)


class GlusterVolume:
    """One GlusterFS volume NAME over brick directories, and its client
    mount at mnt (logging to log)."""

    def __init__(self, name, bricks, mnt, log, layout=("disperse", "3",
                                                       "redundancy", "1")):
        self.name = name
        self.bricks = [Path(b) for b in bricks]
        self.mnt = Path(mnt)
        self.log = Path(log)
        self.layout = list(layout)
        self.created = False
        self.pids = set()       # brick processes seen, for the teardown

    def create(self, *options):
        """Create and start; options are (key, value) volume settings
        applied before the start."""
        cli("volume", "create", self.name, *self.layout,
            *[f"{HOST}:{b}" for b in self.bricks], "force")
        self.created = True
        for k, v in options:
            cli("volume", "set", self.name, k, v)
        cli("volume", "start", self.name)
        self.wait_online()

    def set(self, key, value):
        cli("volume", "set", self.name, key, value)

    def heals(self, on):
        """Turn GlusterFS's own healing (the self-heal daemon and the
        client's background heals) on or off. Off, an entry that needs
        healing stays in heal info: pending() reaching 0 then proves
        none did (entries of operations in flight clear by themselves)."""
        self.set("cluster.disperse-self-heal-daemon",
                 "enable" if on else "disable")
        self.set("disperse.background-heals", "8" if on else "0")

    def status(self):
        """{brick path: (online, pid)} from volume status --xml."""
        p = cli("--xml", "volume", "status", self.name, check=False)
        out = {}
        if p.returncode != 0:
            return out
        for node in ET.fromstring(p.stdout).iter("node"):
            path = node.findtext("path")
            if path and path.startswith("/"):
                pid = int(node.findtext("pid") or -1)
                online = node.findtext("status") == "1"
                out[path] = (online, pid)
                if pid > 0:
                    self.pids.add(pid)
        return out

    def wait_online(self, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            st = self.status()
            if all(st.get(str(b), (False, 0))[0] for b in self.bricks):
                return st
            if time.monotonic() > deadline:
                raise AssertionError(f"bricks not online in {timeout} s: {st}")
            time.sleep(0.3)

    def brick_pid(self, i):
        online, pid = self.status()[str(self.bricks[i])]
        assert online and pid > 0, (i, online, pid)
        return pid

    def kill_brick(self, i):
        """A node lost: its brick process killed, no goodbye."""
        pid = self.brick_pid(i)
        os.kill(pid, 9)
        deadline = time.monotonic() + 30
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.1)

    def start_force(self):
        """Restart the bricks that are down (a node back)."""
        cli("volume", "start", self.name, "force")
        return self.wait_online()

    def mount(self, timeout=60):
        self.mnt.mkdir(parents=True, exist_ok=True)
        p = subprocess.run(["mount", "-t", "glusterfs", "-o",
                            f"log-file={self.log}", f"{HOST}:/{self.name}",
                            str(self.mnt)], capture_output=True, text=True,
                           timeout=timeout)
        assert p.returncode == 0 and is_mounted(self.mnt), \
            f"mount -t glusterfs failed ({p.returncode}): {p.stderr}"
        # The client mounts with a quorum of bricks; wait until it can
        # serve the root (the first lookup after mount may race it).
        deadline = time.monotonic() + timeout
        while True:
            try:
                os.listdir(self.mnt)
                return self.mnt
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def umount(self):
        if is_mounted(self.mnt):
            subprocess.run(["umount", str(self.mnt)], capture_output=True)
        if is_mounted(self.mnt):
            subprocess.run(["umount", "-l", str(self.mnt)],
                           capture_output=True)

    def heal_info(self):
        """{brick path: entries (None when the brick is not connected)}."""
        p = cli("--xml", "volume", "heal", self.name, "info")
        out = {}
        for b in ET.fromstring(p.stdout).iter("brick"):
            path = b.findtext("name").split(":", 1)[1]
            n = b.findtext("numberOfEntries")
            out[path] = int(n) if n and n.isdigit() else None
        return out

    def pending(self):
        """Entries heal info lists in all (None if a brick is away)."""
        info = self.heal_info()
        if len(info) != len(self.bricks) or None in info.values():
            return None
        return sum(info.values())

    def wait_healed(self, timeout=180, poll=0.5):
        """Seconds until heal info lists no entry on any brick."""
        t0 = time.monotonic()
        while True:
            if self.pending() == 0:
                return time.monotonic() - t0
            if time.monotonic() - t0 > timeout:
                raise AssertionError(
                    f"heal not done in {timeout} s: {self.heal_info()}")
            time.sleep(poll)

    def client_log_problems(self, since=0):
        """Client log lines from offset since on where the disperse
        layer saw a brick fail an operation or give other bytes."""
        try:
            text = self.log.read_text(errors="replace")[since:]
        except FileNotFoundError:
            return []
        bad = re.compile(r"Operation failed on|Mismatching|[Hh]eal fail|"
                         r"Input/output error|checksum")
        # Log messages only ("[date time] E [file:line] ..."): a client
        # that mounts also dumps its volume file ("  5:     option
        # volfile-checksum 0"), which is not a finding.
        return [ln for ln in text.splitlines()
                if ln.startswith("[") and bad.search(ln)]

    def log_size(self):
        try:
            return len(self.log.read_text(errors="replace"))
        except FileNotFoundError:
            return 0

    def destroy(self):
        """Unmount, stop and delete, whatever state it is in; kill any
        brick process of this volume that is left."""
        self.umount()
        if self.created:
            self.status()
            cli("volume", "stop", self.name, "force", check=False)
            cli("volume", "delete", self.name, check=False)
            self.created = False
        for pid in self.pids:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    mine = self.name.encode() in f.read()
            except OSError:
                continue
            if mine:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
        logs = [Path("/var/log/glusterfs") / f"glfsheal-{self.name}.log"]
        logs += [Path("/var/log/glusterfs/bricks") / (
            str(b).strip("/").replace("/", "-") + ".log")
            for b in self.bricks]
        for log in logs:
            try:
                log.unlink()
            except FileNotFoundError:
                pass
