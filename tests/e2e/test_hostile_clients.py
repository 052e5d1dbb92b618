# SPDX-License-Identifier: MIT
"""Issue 30: what a local user can do to a volume root mounted with
-o allow_other, through the daemon's two sockets and its text output,
tried as a real unprivileged user (dg-hostile, made for the session).
Each attack must be refused or harmless: the daemon's memory stays
bounded under a flood of commit connections, root is served while a
client holds a reply unread, the daemon exits at umount (and fsck finds
the volume free) while the client still stalls, a file name cannot
forge an event line or blind `events --follow`, and a user is shown only
the paths of damaged files they could stat themselves."""
import json
import os
import re
import selectors
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import CTL, FSCK, is_mounted, run
from dgfault import inject, system_user
from test_libcommit import PAGE, commit_socket, hdr

HELPER = Path(__file__).resolve().with_name("hostile_client.py")
USER = "dg-hostile"
# Daemon lines these tests cause on purpose: the faults they inject and
# the clients the caps refuse.
EXPECTED_LOG = (r"refusing clients|fault|unrecoverable|read error|EIO|"
                r"Input/output|checksum|rebuilt|scrub")


@pytest.fixture(scope="session")
def hostile():
    """A real unprivileged user, no home, no groups but its own; removed
    at the end (an account left by an earlier run is reused)."""
    with system_user(USER) as pw:
        yield pw


def as_user(pw, cmd):
    return ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}",
            "--clear-groups", "--", *map(str, cmd)]


def run_as(pw, cmd, cwd="/", check=True, timeout=60):
    p = subprocess.run(as_user(pw, cmd), cwd=cwd, capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=timeout)
    if check:
        assert p.returncode == 0, (cmd, p.stdout, p.stderr)
    return p


def ask(v, req):
    """One raw control request as the hostile user: the reply text (an
    events reply with its last line, "next N")."""
    sock = os.getxattr(v.mnt, "user.daxguard.socket").decode()
    return run_as(v.user, [sys.executable, HELPER, "ctl-ask", sock,
                           req]).stdout.decode("utf-8", "replace")


def readline(proc, timeout):
    """A line of proc's stdout within timeout seconds, or AssertionError."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    buf = b""
    deadline = time.monotonic() + timeout
    try:
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                raise AssertionError(f"no line in {timeout} s: {buf!r}")
            b = os.read(proc.stdout.fileno(), 1)
            if not b:
                raise AssertionError(f"EOF: {buf!r}")
            buf += b
    finally:
        sel.close()
    return buf.decode("utf-8", "replace")


@contextmanager
def attacker(v, args):
    """The helper as the hostile user, from / (not the mount, so that
    it holds nothing that would keep umount from working), until the
    block ends: (process, the first line it printed)."""
    p = subprocess.Popen(as_user(v.user, [sys.executable, HELPER, *args]),
                         cwd="/", stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        yield p, readline(p, 120).strip()
    finally:
        p.stdin.close()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@pytest.fixture
def shared(volume_factory, hostile):
    """A volume root mounted with allow_other at a mountpoint anyone can
    reach (pytest's own directories are root's alone), its root 0755."""
    top = Path(tempfile.mkdtemp(prefix="dg-hostile-", dir="/dev/shm"))
    os.chmod(top, 0o755)
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mnt = top / "mnt"
    v.mnt.mkdir()
    v.user = hostile
    v.expect_log(EXPECTED_LOG)
    v.mkfs()
    v.mount("allow_other")
    os.chmod(v.mnt, 0o755)
    try:
        yield v
    finally:
        try:
            v.umount()
        finally:
            # A mount still live there (umount failed) would have rmtree
            # delete the volume's files through it: leave the directory.
            # (is_mounted too: ismount says False for a dead FUSE mount.)
            if os.path.ismount(v.mnt) or is_mounted(v.mnt):
                print(f"{v.mnt} is still mounted: {top} left in place")
            else:
                shutil.rmtree(top, ignore_errors=True)


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) << 10
    raise AssertionError("no VmRSS")


@contextmanager
def rss_peak(pid, every=0.02):
    """The daemon's highest RSS seen, sampled every `every` s by a thread
    while the block runs: a one-item list, complete when the block
    ends."""
    peak = [rss(pid)]
    stop = threading.Event()

    def sample():
        while not stop.wait(every):
            try:
                peak[0] = max(peak[0], rss(pid))
            except (OSError, AssertionError):
                return      # the daemon is gone: the test says why
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        yield peak
    finally:
        stop.set()
        t.join(timeout=30)
    peak[0] = max(peak[0], rss(pid))


def root_maps(f):
    """Root's libcommit MAP of f gets its MAP_REP: the server still
    takes root's connections."""
    fd = os.open(f, os.O_RDWR)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    try:
        s.connect(commit_socket(f))
        body = struct.pack("<QQII", 0, 0, 1, 0)
        socket.send_fds(s, [hdr(1, len(body)) + body], [fd])
        h = b""
        while len(h) < 16:
            b = s.recv(16 - len(h))
            assert b, "the daemon closed root's connection"
            h += b
        return struct.unpack("<H", h[6:8])[0]
    finally:
        s.close()
        os.close(fd)


def test_commit_flood_keeps_memory_bounded(shared):
    """512 connections of one user, each a COMMIT header announcing 160
    MiB with no map and some of that body: the daemon keeps no buffer
    for them (the user's cap refuses most, the rest are closed unread),
    and root still maps a file and gets its status."""
    v = shared
    f = v.mnt / "rootfile"
    f.write_bytes(b"\0" * (4 * PAGE))
    v.ctl("status")
    before = rss(v.daemon.pid)
    # Sampled all along, as the connections are made and after: the
    # peak of the flood, not what is left once it is over.
    with rss_peak(v.daemon.pid) as peak:
        with attacker(v, ["commit-flood", commit_socket(f), "512",
                          str(256 << 10)]) as (_, line):
            rep = json.loads(line)
            assert rep["connected"] + rep["failed"] == 512, rep
            assert root_maps(f) == 2                        # MAP_REP
            run([CTL, v.mnt, "status"], timeout=30)
            time.sleep(1)       # a few more samples, the flood held
    assert peak[0] - before < 64 << 20, (before, peak[0])


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_idle_clients_cost_nothing(shared):
    """Clients that connect and wait (a map held between syncs, control
    connections that never ask) cost the daemon no CPU, and root gets
    through the control socket past the user's cap."""
    v = shared
    f = v.mnt / "mapped"
    f.write_bytes(b"\0" * (4 * PAGE))
    fd = os.open(f, os.O_RDWR)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    sock = os.getxattr(v.mnt, "user.daxguard.socket").decode()
    try:
        s.connect(commit_socket(f))
        body = struct.pack("<QQII", 0, 0, 1, 0)
        socket.send_fds(s, [hdr(1, len(body)) + body], [fd])
        assert struct.unpack("<H", s.recv(16)[6:8])[0] == 2   # mapped
        with attacker(v, ["ctl-hold", sock, "100", ""]) as (_, line):
            assert line == "ready"
            # A daemon spinning on these clients burns the whole window
            # (or what a loaded machine leaves it of one core); an idle
            # one almost nothing. A quarter of the window tells them
            # apart with room for a slow, busy machine.
            window = 8
            before = cpu_seconds(v.daemon.pid)
            time.sleep(window)
            used = cpu_seconds(v.daemon.pid) - before
            assert used < window / 4, used
            run([CTL, v.mnt, "status"], timeout=60)
    finally:
        s.close()
        os.close(fd)


def long_name_faults(v, nfaults):
    """A file whose path is long and all escapes (so its events are
    large), with nfaults repairable faults, found by a scrub: every
    fault on device 0, so no row holds two."""
    d = v.mnt / ("\x01" * 240)
    d.mkdir()
    f = d / ("\x02" * 240)
    f.write_bytes(os.urandom(4 << 20))
    rel = "/" + str(f.relative_to(v.mnt))
    rep, _ = inject(v.devs, "zero", "data", seed=11,
                    extra=["--file", rel, "--count", str(nfaults),
                           "--device", "0"])
    assert len(rep["changes"]) == nfaults, rep
    p = run([CTL, v.mnt, "scrub"], check=False, timeout=300)
    assert p.returncode == 0, p


def test_stalled_reader_delays_no_one(shared):
    """Clients that ask for a large reply and never read it: root's
    status is answered, and umount ends the daemon (the devices free for
    fsck) while they still hold their connections."""
    v = shared
    long_name_faults(v, 60)
    ev = [x for x in v.ctl("events", "--json").stdout.splitlines()]
    assert len(ev) >= 120 and sum(map(len, ev)) > 250 << 10, len(ev)
    sock = os.getxattr(v.mnt, "user.daxguard.socket").decode()
    with attacker(v, ["ctl-hold", sock, "4", "events since=0 json"]) as \
            (_, line):
        assert line == "ready"
        p = run([CTL, v.mnt, "status"], timeout=60)
        assert "health ok" in p.stdout, p.stdout
        u = subprocess.run(["fusermount3", "-u", str(v.mnt)],
                           capture_output=True, text=True, timeout=60)
        assert u.returncode == 0, u.stderr
        assert v.daemon.wait(timeout=30) == 0
        v.daemon = None
        v.log.close()
        p = run([FSCK, "-n", *v.devs], check=False, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr


def pub_dir(v):
    d = v.mnt / "pub"
    d.mkdir()
    os.chmod(d, 0o1777)
    return d


def user_creates(v, path, size=1 << 20):
    run_as(v.user, [sys.executable, "-c",
                    "import os,sys; open(sys.argv[1], 'wb').write("
                    "os.urandom(int(sys.argv[2])))", path, size])


def fault_in(v, rel):
    rep, _ = inject(v.devs, "zero", "data", seed=5,
                    extra=["--file", rel, "--count", "1"])
    assert rep["changes"][0].get("file") == rel, rep
    assert run([CTL, v.mnt, "scrub"], check=False,
               timeout=300).returncode == 0


EVENT_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} #\d+ [a-z-]+")


def test_a_name_cannot_forge_an_event_line(shared):
    v = shared
    forged = ("x\n2026-01-01 00:00:00.000 #1 fault-repaired device 0 page 0 "
              "(data) shadow")
    user_creates(v, pub_dir(v) / forged)
    fault_in(v, "/pub/" + forged)
    text = run_as(v.user, [CTL, ".", "events"], cwd=v.mnt).stdout.decode()
    js = run_as(v.user, [CTL, ".", "events", "--json"],
                cwd=v.mnt).stdout.decode().splitlines()
    lines = text.splitlines()
    assert len(lines) == len(js) and len(js) >= 2, (text, js)
    assert all(EVENT_LINE.match(x) for x in lines), text
    assert not any(x.startswith("2026-01-01 00:00:00.000") for x in lines)
    assert "/pub/x\\n2026-01-01 00:00:00.000 #1 fault-repaired" in text, text
    assert forged in [json.loads(x).get("path", "")[5:] for x in js]


def test_follow_is_not_blinded_by_a_name(shared):
    v = shared
    user_creates(v, pub_dir(v) / "x #999999999")
    fault_in(v, "/pub/x #999999999")
    f = subprocess.Popen(as_user(v.user, [CTL, ".", "events", "--follow"]),
                         cwd=v.mnt, stdout=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    try:
        seen = ""
        while " fault-repaired " not in seen:
            seen = readline(f, 30)
        assert "x #999999999" in seen, seen
        v.ctl("clear")
        while " counters-cleared" not in seen:
            seen = readline(f, 30)
    finally:
        f.terminate()
        f.wait(timeout=30)


def lose_pages(v, files):
    """A page of each file lost (two faults in its row, beyond parity
    1): mkfs, make the tree, inject offline, until a seed does it."""
    for seed in range(1, 40):
        v.umount()
        v.mkfs()
        v.mount("allow_other")
        os.chmod(v.mnt, 0o755)
        (v.mnt / "private").mkdir(mode=0o700)
        (v.mnt / "pub").mkdir(mode=0o755)
        for f in files:
            (v.mnt / f[1:]).write_bytes(os.urandom(3 << 20))
        v.umount()
        ok = True
        for i, f in enumerate(files):
            rep, _ = inject(v.devs, "zero", "data", seed=seed + 100 * i,
                            extra=["--file", f, "--count", "2",
                                   "--same-row"])
            ch = rep["changes"]
            ok = ok and len(ch) == 2 and all(
                c["structure"] == "parity" or c.get("file") == f for c in ch)
        if ok:
            return
    pytest.fail("no seed lost a page of each file")


def test_status_names_only_what_the_user_could_stat(shared):
    v = shared
    secret, public = "/private/offer-letter.pdf", "/pub/open.bin"
    lose_pages(v, [secret, public])
    v.mount("allow_other")
    assert run([CTL, v.mnt, "scrub"], check=False,
               timeout=300).returncode == 3           # data lost
    st = v.status()
    assert {f["path"] for f in st["damaged_files"]} == {secret, public}, st
    # The user sees the file it could stat, and a count of the other.
    st = json.loads(ask(v, "status json"))
    assert [f["path"] for f in st["damaged_files"]] == [public], st
    assert st["damaged_files_not_listed"] == 1, st
    text = ask(v, "status verbose")
    assert public in text and "offer-letter" not in text, text
    assert "and 1 more not listed" in text, text
    ev = ask(v, "events since=0 json")
    assert public in ev, ev
    for word in ("offer-letter", "offer-letter".encode().hex(), "private"):
        assert word not in ev, ev
    # Without allow_other the user reaches no file: no path at all.
    v.umount()
    v.mount()
    assert run([CTL, v.mnt, "scrub"], check=False,
               timeout=300).returncode == 3
    st = json.loads(ask(v, "status json"))
    assert st["damaged_files"] == [] and st["damaged_files_not_listed"] == 2
    ev = ask(v, "events since=0")
    assert "fault-unrecoverable" in ev, ev
    assert "offer-letter" not in ev and public not in ev, ev


def test_the_log_is_private(volume_factory, tmp_path):
    """The log names damaged files: it is created 0600 whatever the
    umask, an existing one is tightened, and a symlink or a second hard
    link at its path is refused (the mount fails, the file it names
    unchanged)."""
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    log = tmp_path / "new.log"
    old = os.umask(0)
    try:
        v.mount(f"log={log}")
    finally:
        os.umask(old)
    v.umount()
    assert log.stat().st_mode & 0o777 == 0o600
    assert "unmounted cleanly" in log.read_text()
    os.chmod(log, 0o644)
    v.mount(f"log={log}")
    v.umount()
    assert log.stat().st_mode & 0o777 == 0o600
    target = tmp_path / "target"
    target.write_text("root's file\n")
    os.chmod(target, 0o644)
    link = tmp_path / "link.log"
    link.symlink_to(target)
    with pytest.raises(AssertionError, match="cannot open log file"):
        v.mount(f"log={link}")
    hard = tmp_path / "hard.log"
    os.link(target, hard)
    with pytest.raises(AssertionError, match="with one name"):
        v.mount(f"log={hard}")
    assert target.read_text() == "root's file\n"
    assert target.stat().st_mode & 0o777 == 0o644
