# SPDX-License-Identifier: MIT
"""Helpers for fault-injection tests and campaigns: a realistic file
tree, its sha256 manifest, and runners for fsck.daxguard and
daxguard-inject."""
import hashlib
import json
import os
import random
import subprocess
from pathlib import Path

from conftest import FSCK, INJECT

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
