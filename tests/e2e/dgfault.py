# SPDX-License-Identifier: MIT
"""Helpers for fault-injection tests and campaigns: a realistic file
tree, its sha256 manifest, and runners for fsck.daxguard and
daxguard-inject."""
import hashlib
import json
import os
import pwd
import random
import re
import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import CTL, FSCK, INJECT, run

KINDS = ["bitflip", "scribble", "zero", "lost-write", "misdirect"]
TARGETS = ["data", "directory", "inode", "extent", "allocation", "checksum",
           "parity", "superblock", "journal"]


def make_tree(root, seed=1, small=60, large=2, depth=5, frag=True):
    """Many small files, a few large ones, deep directories, and (frag)
    two files written interleaved so they need extent pages."""
    rng = random.Random(seed)
    root = Path(root)
    dirs = [root]
    d = root
    for i in range(depth):
        d = d / f"d{i}"
        d.mkdir()
        dirs.append(d)
    for i in range(4):
        (root / f"w{i}").mkdir()
        dirs.append(root / f"w{i}")
    for i in range(small):
        p = rng.choice(dirs) / f"s{i}.txt"
        p.write_bytes(rng.randbytes(rng.randint(1, 9000)))
    for i in range(large):
        p = rng.choice(dirs) / f"big{i}.bin"
        p.write_bytes(rng.randbytes(rng.randint(600_000, 1_500_000)))
    if frag:
        with open(root / "frag1", "wb") as a, open(root / "frag2", "wb") as b:
            for _ in range(200):
                a.write(rng.randbytes(4096))
                a.flush()
                os.fsync(a.fileno())
                b.write(rng.randbytes(4096))
                b.flush()
                os.fsync(b.fileno())
    os.symlink("d0/d1", root / "link")


def manifest(root, tolerant=False):
    """sha256 of every file (symlink targets, directories) under root.
    tolerant: a file that cannot be read maps to "error:<errno>"."""
    root = Path(root)
    out = {}
    for dp, dn, fn in os.walk(root):
        for f in fn:
            p = Path(dp) / f
            rel = str(p.relative_to(root))
            try:
                if p.is_symlink():
                    out[rel] = "->" + os.readlink(p)
                else:
                    out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            except OSError as e:
                if not tolerant:
                    raise
                out[rel] = f"error:{e.errno}"
        for d in dn:
            p = Path(dp) / d
            rel = str(p.relative_to(root))
            # A symlink to a directory is its target path, as any
            # symlink: whether that target is still there is the
            # target's own entry.
            if p.is_symlink():
                out[rel] = "->" + os.readlink(p)
            else:
                out[rel + "/"] = "dir"
    return out


def manifest_tolerant(root):
    return manifest(root, tolerant=True)


def diff_manifest(want, got):
    """Names of files whose contents differ or that are missing."""
    bad = [k for k in want if got.get(k) != want[k]]
    extra = [k for k in got if k not in want
             and not k.startswith("lost+found")]
    return bad + extra


def fsck(devs, *opts, json_out=False):
    cmd = [str(FSCK)] + list(opts) + (["--json"] if json_out else []) \
        + [str(d) for d in devs]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    rep = None
    if json_out and p.stdout.strip():
        rep = json.loads(p.stdout)
    return p.returncode, rep, p


def inject(devs, kind, target="any", seed=1, extra=(), check=True):
    cmd = [str(INJECT)] + [str(d) for d in devs] + [
        "--fault", kind, "--target", target, "--seed", str(seed),
        "--json"] + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"inject failed: {' '.join(cmd)}\n{p.stderr}")
    return json.loads(p.stdout) if p.returncode == 0 else None, p


def copy_of(g, volume_factory):
    """A new volume (same geometry) whose images are sparse copies of
    g's: one populated volume serves many destructive tests."""
    v = volume_factory(ndev=len(g.devs), size=g.size, parity=g.parity)
    for s, d in zip(g.devs, v.devs):
        subprocess.run(["cp", "--sparse=always", str(s), str(d)], check=True)
    return v


def fsck_lines(p, uuid):
    """fsck's stdout, uuid replaced, statistics lines left out, the
    count of pending updates as N (the write and, as timing has it, the
    times the close updates)."""
    out = []
    for line in p.stdout.splitlines():
        line = line.replace(uuid, "UUID")
        line = re.sub(r"journal holds \d+ committed", "journal holds N "
                      "committed", line)
        if re.match(r"UUID: \d+ rows, \d+ pages checked in [\d.]+ s$",
                    line) or re.match(r"UUID: \d+ metadata pages lie "
                                      r"outside the metadata zone", line):
            continue
        out.append(line)
    return out


def replace_status(v):
    """daxguard-ctl replace status --json, parsed."""
    p = run([CTL, v.mnt, "replace", "status", "--json"], check=False)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def wait_replace(v, timeout=120):
    """The replace status once it is no longer running."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        st = replace_status(v)
        if st["state"] != "running":
            return st
        time.sleep(0.1)
    raise AssertionError(f"replace still running: {replace_status(v)}")


# useradd/userdel exit codes that mean "another process holds the lock
# of the password (1) or group (10) file": a test or package adding a
# user at the same time. userdel's 8 (the user still runs processes) is
# transient too: an attacker process being reaped.
LOCKED = {"useradd": (1, 10), "userdel": (1, 8, 10)}


def retry_locked(cmd, deadline=60):
    """Run useradd/userdel cmd, again while the lock is held (up to
    deadline seconds): its last CompletedProcess."""
    end = time.monotonic() + deadline
    while True:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if p.returncode not in LOCKED[cmd[0]] or time.monotonic() > end:
            return p
        time.sleep(0.2)


@contextmanager
def system_user(name):
    """A real unprivileged system account: no home, nologin, its own
    group only; its passwd entry for the block. An account of that name
    that exists already (left by a run that was killed) is used and
    removed at the end like one made here. Skips without root or the
    tools; fails if the account cannot be made or removed."""
    if os.geteuid() != 0:
        pytest.skip("needs root (useradd)")
    for tool in ("useradd", "userdel", "setpriv"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed")
    p = retry_locked(["useradd", "--system", "--no-create-home",
                      "--user-group", "--shell", "/usr/sbin/nologin", name])
    if p.returncode not in (0, 9):          # 9: the name exists already
        pytest.fail(f"useradd {name} ({p.returncode}): {p.stderr}")
    try:
        yield pwd.getpwnam(name)
    finally:
        p = retry_locked(["userdel", name])
        if p.returncode not in (0, 6):      # 6: it is gone already
            pytest.fail(f"userdel {name} ({p.returncode}): {p.stderr}")
