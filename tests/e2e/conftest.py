# SPDX-License-Identifier: MIT
"""Fixtures for end-to-end tests: real device images on /dev/shm, real
FUSE mounts, always unmounted in teardown (libfuse test/util.py style)."""
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("DG_BUILD_DIR", ROOT / "build")).resolve()
MKFS = BUILD / "mkfs" / "mkfs.daxguard"
DAEMON = BUILD / "fs" / "daemon" / "daxguard"
CTL = BUILD / "fs" / "ctl" / "daxguard-ctl"
FSCK = BUILD / "fsck" / "fsck.daxguard"
INJECT = BUILD / "fsck" / "daxguard-inject"

# Daemon stderr lines that mean something went wrong, unless a test
# expects them (see Volume.expect_log).
BAD_LOG = re.compile(r"\b(error|warning|traceback|corrupt)\b", re.I)


def run(cmd, check=True, **kw):
    """Run a command, capture text output; on failure show how to rerun."""
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       **kw)
    if check and p.returncode != 0:
        raise AssertionError(
            f"command failed ({p.returncode}): {' '.join(map(str, cmd))}\n"
            f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def is_mounted(mnt):
    mnt = os.path.realpath(mnt)
    with open("/proc/mounts") as f:
        return any(line.split()[1] == mnt for line in f)


def default_stop_signals():
    """In the daemon's child process: SIGINT and SIGQUIT as a terminal
    would deliver them. A non-interactive shell starts a background job
    with both ignored, the ignore is inherited, and libfuse (rightly)
    leaves an ignored SIGINT alone, so such a run of the suite would
    see a daemon that SIGINT cannot stop."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


class Volume:
    """A set of device images and, while mounted, a foreground daemon."""

    def __init__(self, tmp_path, ndev=4, size="64M", parity=None,
                 redundancy=None, tag=None):
        tag = tag or uuid.uuid4().hex[:8]
        self.devs = [Path(f"/dev/shm/dg-e2e-{tag}-{i}.img") for i in range(ndev)]
        self.mnt = tmp_path / "mnt"
        self.mnt.mkdir(exist_ok=True)
        self.log_path = tmp_path / "daemon.log"
        self.daemon = None
        self.expected = []          # regexes of log lines a test expects
        self.size = size
        self.parity = parity
        self.redundancy = redundancy

    @property
    def devlist(self):
        return ",".join(str(d) for d in self.devs)

    def mkfs(self, *extra):
        cmd = [MKFS, "-q", "--force", "--size", self.size]
        if self.parity is not None:
            cmd += ["--parity", str(self.parity)]
        if self.redundancy:
            cmd += ["--redundancy", self.redundancy]
        return run(cmd + list(extra) + self.devs)

    def mount(self, *opts, devlist=None):
        assert self.daemon is None
        self.log = open(self.log_path, "a")
        cmd = [str(DAEMON), devlist or self.devlist, str(self.mnt), "-f"]
        for o in opts:
            cmd += ["-o", o]
        self.daemon = subprocess.Popen(cmd, stdout=self.log,
                                       stderr=subprocess.STDOUT,
                                       preexec_fn=default_stop_signals)
        deadline = time.time() + 10
        while not is_mounted(self.mnt):
            if self.daemon.poll() is not None:
                self.daemon = None
                raise AssertionError("daemon exited:\n" + self.read_log())
            if time.time() > deadline:
                raise AssertionError("mount timed out:\n" + self.read_log())
            time.sleep(0.02)
        return self.mnt

    def umount(self):
        if self.daemon is None:
            return
        subprocess.run(["fusermount3", "-u", "-z", str(self.mnt)],
                       capture_output=True)
        try:
            self.daemon.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.daemon.kill()
            self.daemon.wait()
        self.daemon = None
        self.log.close()

    def kill9(self):
        """Kill the daemon the hard way (a crash) and clean the mount."""
        self.daemon.kill()
        self.daemon.wait()
        self.daemon = None
        subprocess.run(["fusermount3", "-u", "-z", str(self.mnt)],
                       capture_output=True)
        self.log.close()

    def remount(self, *opts):
        self.umount()
        return self.mount(*opts)

    def read_log(self):
        try:
            return self.log_path.read_text()
        except FileNotFoundError:
            return ""

    def expect_log(self, regex):
        self.expected.append(re.compile(regex))

    def unexpected_log_lines(self):
        bad = []
        for line in self.read_log().splitlines():
            if BAD_LOG.search(line) and not any(r.search(line)
                                                for r in self.expected):
                bad.append(line)
        return bad

    def ctl(self, *args, check=True):
        return run([CTL, self.mnt] + list(args), check=check)

    def status(self):
        import json
        return json.loads(self.ctl("status", "--json").stdout)

    def wait_blanked(self, timeout=60):
        """Until -o discard's blanker has looked at every page freed so
        far (fs/volume/blank.c)."""
        end = time.monotonic() + timeout
        while self.status()["freed_pages_to_blank"]:
            assert time.monotonic() < end, "the blanker did not finish"
            time.sleep(0.02)

    def drop_caches(self):
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")

    def cleanup(self):
        self.umount()
        for d in self.devs:
            try:
                d.unlink()
            except FileNotFoundError:
                pass


@pytest.fixture
def volume_factory(tmp_path, request):
    """Make volumes; every one is unmounted and removed at teardown, and
    the test fails on unexpected error/warning lines from the daemon."""
    vols = []

    def make(**kw):
        sub = tmp_path / f"v{len(vols)}"
        sub.mkdir()
        v = Volume(sub, **kw)
        vols.append(v)
        return v

    yield make
    problems = []
    for v in vols:
        v.umount()
        bad = v.unexpected_log_lines()
        if bad:
            problems.append(f"daemon log of {v.devlist}:\n" + "\n".join(bad))
        v.cleanup()
    if problems and not request.node.rep_call_failed:
        pytest.fail("\n".join(problems))


@pytest.fixture
def mounted(volume_factory):
    """A formatted, mounted 4-device parity-1 volume."""
    v = volume_factory()
    v.mkfs()
    v.mount()
    return v


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        item.rep_call_failed = rep.failed


def pytest_collection_modifyitems(config, items):
    for it in items:
        it.rep_call_failed = False


@pytest.fixture(scope="session", autouse=True)
def built():
    for b in (MKFS, DAEMON, CTL):
        if not b.exists():
            pytest.exit(f"{b} is not built: run meson/ninja first", 2)
    if not shutil.which("fusermount3"):
        pytest.exit("fusermount3 missing: install fuse3", 2)
