# SPDX-License-Identifier: MIT
"""Firmware-style faults on device images, modelled from the outside
(issue 15): lost writes, a whole device gone back in time with or without
its superblocks, zeroed pages and misdirected writes.

Nothing here knows the on-media layout. A base volume is populated,
its images are snapshotted, and the volume keeps being written through
the mounted filesystem (overwrite, append, truncate, rename, delete,
xattrs, fsync, large and small writes, libcommit syncs and the mmap
preload shim). The pages that differ between a snapshot and the final
image of a device are exactly the pages a device that drops writes could
hand back, whatever they hold: data, parity, checksums and their copies,
journal, metadata. The only layout fact used is where each device
keeps its superblock copies (page 0 and the last page, format.h of
formats 2 and 3; superblock_pages()), to tell "device older but
superblocks current" from "device older, superblocks too".

Each trial copies the final images, applies one fault, then checks what
a user sees: mount, read every file (bytes, size, listing, xattrs),
unmount, fsck -y, fsck -n (or a second fsck -y beyond parity), mount and
read again. Outcome classes, gravest first, are in OUTCOMES.

  base = Base(workdir, parity=1, seed=1); base.build()
  r = run_trial(base, "lost", trial_seed, workdir)   # -> dict
"""
import concurrent.futures
import errno
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import BUILD, CTL, Volume, run
from dgfault import fsck, inject, make_tree

PAGE = 4096
CHILD = BUILD / "tests" / "e2e" / "commit_child"
SHIM = BUILD / "libcommit" / "libcommit-preload.so"

# Gravest first: a trial's outcome is the first class any check hit.
OUTCOMES = ["WRONG_BYTES", "CRASH", "MOUNT_REFUSED", "EIO", "FSCK_EXIT",
            "NOT_CONVERGED", "OK"]

# kind -> how many devices it faults. A fault on no more devices than
# the volume's parity is within parity (G3).
KINDS = {
    "none": 0,            # no fault: the control
    "lost": 1,            # a random subset of one device's changed pages
    "older": 1,           # every changed page but the superblocks
    "stale": 1,           # every changed page, superblocks included
    "window": 1,          # every write between two snapshots dropped
    "zero": 1,            # a random set of written pages zeroed
    "misdirect": 1,       # a current page written over another position
    "misdirect-old": 1,   # a snapshot page written over another position
    "lost2": 2,           # "lost" on two devices
    "zero2": 2,           # "zero" on two devices
    "lost3": 3,           # "lost" on three devices
    # Issue 34: the allocation state (bitmap pages, both slots of the
    # init map) and rows it calls empty. The one layout fact they need,
    # where those pages lie, daxguard-inject tells (Base.alloc_pages).
    "alloc-lost": 1,      # its changed bitmap/map pages back to a snapshot
    "alloc-zero": 1,      # some of its bitmap/map pages zeroed
    "alloc-misdirect": 1,  # another page written over a bitmap/map page
    "garbage": 1,         # random bytes in pages that are all zeros
}
ALLOC_KINDS = ("alloc-lost", "alloc-zero", "alloc-misdirect", "garbage")

# Daemon or fsck output that means it crashed rather than answered.
CRASH_LOG = re.compile(r"AddressSanitizer|UndefinedBehaviorSanitizer|"
                       r"LeakSanitizer|runtime error:|Assertion .* failed|"
                       r"Segmentation fault|stack-buffer|heap-buffer")


def within_parity(kind, parity):
    return KINDS[kind] <= parity


def superblock_pages(npages):
    """DESIGN §6: each device's superblock copies (first and last page)."""
    return {0, npages - 1}


def ranges(pages):
    """[0, 1, 2, 7, 9, 10] -> '0-2,7,9-10'."""
    out = []
    for p in sorted(pages):
        if out and p == out[-1][1] + 1:
            out[-1][1] = p
        else:
            out.append([p, p])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out)


# ---------------------------------------------------------------- images

def read_image(path):
    with open(path, "rb") as f:
        return f.read()


def page(buf, n):
    return buf[n * PAGE:(n + 1) * PAGE]


def changed_pages(old, new):
    """Pages whose bytes differ between two images of one device (a
    missing tail counts as zeros)."""
    n = max(len(old), len(new)) // PAGE
    out = []
    for i in range(n):
        if page(old, i) != page(new, i):
            out.append(i)
    return out


def nonzero_pages(buf):
    """Pages that hold anything but zeros. Walks the image in 1 MiB
    steps so the (mostly sparse) images cost little."""
    out = []
    step = 256 * PAGE
    for base in range(0, len(buf), step):
        blk = buf[base:base + step]
        if not blk.strip(b"\0"):
            continue
        for i in range(0, len(blk), PAGE):
            if blk[i:i + PAGE].strip(b"\0"):
                out.append((base + i) // PAGE)
    return out


def copy_image(src, dst):
    subprocess.run(["cp", "--sparse=always", str(src), str(dst)],
                   check=True)


def write_pages(path, edits):
    """edits: [(page number, 4096 bytes)] written in place."""
    with open(path, "r+b") as f:
        for n, data in edits:
            assert len(data) == PAGE
            f.seek(n * PAGE)
            f.write(data)


# ------------------------------------------------- the tree a user sees

def _xattrs(p):
    try:
        names = os.listxattr(p, follow_symlinks=False)
    except OSError as e:
        return ("error", e.errno)
    out = []
    for n in sorted(names):
        try:
            out.append((n, os.getxattr(p, n, follow_symlinks=False)))
        except OSError as e:
            return ("error", e.errno)
    return tuple(out)


def scan(root):
    """What a user sees under root: rel path -> entry, where entry is
    ("dir", xattrs), ("file", size, sha256, xattrs), ("link", target) or
    ("error", errno, what) for a path that could not be listed ("list"),
    stat'ed, read or its xattrs read. The root is "". Reads go through
    the mount; each file is opened once, read whole."""
    root = str(root)
    out = {}

    def walk(rel):
        full = os.path.join(root, rel) if rel else root
        x = _xattrs(full)
        if x and x[0] == "error":
            out[rel] = ("error", x[1], "xattr")
        else:
            out[rel] = ("dir", x)
        try:
            names = sorted(os.listdir(full))
        except OSError as e:
            out[rel] = ("error", e.errno, "list")
            return
        for name in names:
            r = os.path.join(rel, name) if rel else name
            p = os.path.join(root, r)
            try:
                st = os.lstat(p)
            except OSError as e:
                out[r] = ("error", e.errno, "stat")
                continue
            if os.path.isdir(p) and not os.path.islink(p):
                walk(r)
            elif os.path.islink(p):
                try:
                    out[r] = ("link", os.readlink(p))
                except OSError as e:
                    out[r] = ("error", e.errno, "readlink")
            else:
                try:
                    with open(p, "rb") as f:
                        data = f.read()
                except OSError as e:
                    out[r] = ("error", e.errno, "read")
                    continue
                x = _xattrs(p)
                if x and x[0] == "error":
                    out[r] = ("error", x[1], "xattr")
                    continue
                out[r] = ("file", st.st_size, hashlib.sha256(data)
                          .hexdigest(), x)
                if len(data) != st.st_size:
                    out[r] = ("file", st.st_size, "short read "
                              f"{len(data)}", x)
    walk("")
    return out


class Model:
    """The tree the workload believes it wrote: the expected final state
    of every path, independent of what daxguard returns."""

    def __init__(self):
        self.files = {}     # rel -> bytearray
        self.links = {}     # rel -> target
        self.dirs = {""}
        self.xattrs = {}    # rel -> {name: bytes}

    @classmethod
    def from_tree(cls, root):
        """Read a tree written without faults (the population step)."""
        m = cls()
        root = Path(root)
        for dp, dn, fn in os.walk(root):
            for name in dn + fn:
                p = Path(dp) / name
                rel = str(p.relative_to(root))
                if p.is_symlink():
                    m.links[rel] = os.readlink(p)
                elif p.is_dir():
                    m.dirs.add(rel)
                else:
                    m.files[rel] = bytearray(p.read_bytes())
                x = _xattrs(p) if not p.is_symlink() else ()
                if x:
                    m.xattrs[rel] = dict(x)
        x = _xattrs(root)
        if x:
            m.xattrs[""] = dict(x)
        return m

    def entries(self):
        out = {}
        for d in self.dirs:
            out[d] = ("dir", tuple(sorted(self.xattrs.get(d, {}).items())))
        for f, data in self.files.items():
            out[f] = ("file", len(data), hashlib.sha256(data).hexdigest(),
                      tuple(sorted(self.xattrs.get(f, {}).items())))
        for l, t in self.links.items():
            out[l] = ("link", t)
        return out


def _xdesc(x):
    if not x:
        return "none"
    return f"{len(x)}:" + hashlib.sha256(repr(x).encode()).hexdigest()[:8]


def describe(e):
    if e is None:
        return "absent"
    if e[0] == "file":
        return f"file size={e[1]} sha={e[2][:12]} xattrs={_xdesc(e[3])}"
    if e[0] == "dir":
        return f"dir xattrs={_xdesc(e[1])}"
    if e[0] == "error":
        return f"{e[2]}: {errno.errorcode.get(e[1], e[1])}"
    return f"{e[0]} {e[1]}"


def judge(want, got, data=None, named=(), gave_up=False):
    """Compare what a user sees (got, from scan) with the model (want).
    Returns (wrong, eio, lost, gone):
      wrong: other bytes, sizes, listing or xattrs without an error;
      eio:   paths that give an error (or sit in a directory that does);
      lost:  paths fsck gave up and named (named: paths or directories
             named by fsck, '/'-less): removed, cut to a prefix of their
             contents (data: rel -> the model's bytes), xattrs dropped;
             or files moved whole to lost+found;
      gone:  paths that vanished or lost xattrs, not named. Only with
             gave_up (fsck said it gave data up) are these counted apart
             from wrong, and lost+found's contents accepted."""
    wrong, eio, lost, gone = [], [], [], []
    unlisted = [p for p, e in got.items()
                if e[0] == "error" and e[2] == "list"]

    def under(p, dirs):
        return any(d == "" or p == d or p.startswith(d + "/") for d in dirs)

    named = set(named)
    # fsck moves the files of a directory it gave up to lost+found, whole
    found = {(e[1], e[2]) for q, e in got.items()
             if gave_up and q.startswith("lost+found/") and e[0] == "file"}
    for p, w in sorted(want.items()):
        g = got.get(p)
        if g == w:
            continue
        if g is not None and g[0] == "error":
            eio.append(p)
            continue
        if g is None and under(p, unlisted):
            eio.append(p)
            continue
        if g is None and w[0] == "file" and (w[1], w[2]) in found:
            lost.append(p)
            continue
        shrunk = g is None or (g[0] == w[0] == "dir" and
                               set(g[1]) <= set(w[1])) or \
            (g[0] == w[0] == "file" and g[1:3] == w[1:3] and
             set(g[3]) <= set(w[3]))
        if under(p, named):
            if shrunk:
                lost.append(p)
                continue
            if g[0] == w[0] == "file" and data is not None \
                    and g[1] <= w[1] and set(g[3]) <= set(w[3]) and \
                    g[2] == hashlib.sha256(data[p][:g[1]]).hexdigest():
                lost.append(p)
                continue
        if gave_up and shrunk:
            gone.append(p)
            continue
        wrong.append(f"{p}: want {describe(w)}, got {describe(g)}")
    shas = {w[2] for w in want.values() if w[0] == "file"}
    for p, g in sorted(got.items()):
        if p in want:
            continue
        if p == "lost+found" or (gave_up and p.startswith("lost+found/") and
                                 (g[0] != "file" or g[2] in shas)):
            continue     # fsck moved it there whole
        wrong.append(f"{p}: not in the model, got {describe(g)}")
    return wrong, eio, lost, gone


# ------------------------------------------------------------ workload

SHIM_PROG = """
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
size = os.fstat(fd).st_size
m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
args = sys.argv[2:]
for off, hx in zip(args[0::2], args[1::2]):
    b = bytes.fromhex(hx)
    m[int(off):int(off) + len(b)] = b
    m.flush()
m.close()
os.close(fd)
"""


class Workload:
    """Random POSIX, xattr and libcommit changes to a mounted tree, kept
    in a Model. Deterministic for a seed (the bytes; not where the
    volume puts them)."""

    WEIGHTS = {"overwrite": 6, "append": 3, "truncate": 2, "rename": 2,
               "delete": 1, "create": 3, "mkdir": 1, "rmdir": 1,
               "setxattr": 3, "removexattr": 1, "fsync": 1,
               "commit": 1, "shim": 1}

    def __init__(self, root, model, rng):
        self.root = Path(root)
        self.m = model
        self.rng = rng
        self.n = 0
        self.log = []
        self.has_commit = CHILD.exists()
        self.has_shim = SHIM.exists() and subprocess.run(
            [sys.executable, "-c", "pass"], capture_output=True,
            env=dict(os.environ, LD_PRELOAD=str(SHIM))).returncode == 0
        # (a sanitizer build's shim cannot be preloaded into python)

    def path(self, rel):
        return self.root / rel

    def length(self):
        r = self.rng.random()
        if r < 0.5:
            return self.rng.randint(1, 300)          # small, within a page
        if r < 0.8:
            return self.rng.choice([PAGE, 2 * PAGE, self.rng.randint(
                PAGE, 5 * PAGE)])
        if r < 0.85:
            return self.rng.randint(64 << 10, 400 << 10)  # whole rows
        # new rows: a band of 64 rows or more, written before its journal
        # entry, and overwrites moved to new rows (docs/design.md)
        return self.rng.randint(800 << 10, 1200 << 10)

    def some_file(self, nonempty=False):
        fs = sorted(f for f, d in self.m.files.items()
                    if len(d) or not nonempty)
        return self.rng.choice(fs) if fs else None

    def new_name(self, prefix):
        self.n += 1
        d = self.rng.choice(sorted(self.m.dirs))
        return os.path.join(d, f"{prefix}{self.n}") if d else \
            f"{prefix}{self.n}"

    def op_overwrite(self):
        f = self.some_file(nonempty=True)
        if not f:
            return self.op_create()
        data = self.rng.randbytes(self.length())
        off = self.rng.randrange(len(self.m.files[f]))
        if self.rng.random() < 0.3:
            off -= off % PAGE
        with open(self.path(f), "r+b") as fh:
            fh.seek(off)
            fh.write(data)
        buf = self.m.files[f]
        if off + len(data) > len(buf):
            buf.extend(bytes(off + len(data) - len(buf)))
        buf[off:off + len(data)] = data
        return f"overwrite {f} @{off} +{len(data)}"

    def op_append(self):
        f = self.some_file()
        if not f:
            return self.op_create()
        data = self.rng.randbytes(self.length())
        with open(self.path(f), "ab") as fh:
            fh.write(data)
        self.m.files[f].extend(data)
        return f"append {f} +{len(data)}"

    def op_truncate(self):
        f = self.some_file()
        if not f:
            return self.op_create()
        buf = self.m.files[f]
        n = self.rng.choice([0, len(buf) // 2, self.rng.randrange(
            len(buf) + 1), len(buf) + self.rng.randint(1, 3 * PAGE)])
        os.truncate(self.path(f), n)
        if n < len(buf):
            del buf[n:]
        else:
            buf.extend(bytes(n - len(buf)))
        return f"truncate {f} {n}"

    def op_rename(self):
        f = self.some_file()
        if not f:
            return self.op_create()
        if self.rng.random() < 0.3:
            dst = self.some_file()          # replace an existing file
        else:
            dst = self.new_name("r")
        if dst == f:
            return "rename skipped"
        os.rename(self.path(f), self.path(dst))
        self.m.files[dst] = self.m.files.pop(f)
        x = self.m.xattrs.pop(f, None)
        self.m.xattrs.pop(dst, None)
        if x:
            self.m.xattrs[dst] = x
        return f"rename {f} {dst}"

    def op_delete(self):
        f = self.some_file()
        if not f:
            return self.op_create()
        os.unlink(self.path(f))
        del self.m.files[f]
        self.m.xattrs.pop(f, None)
        return f"delete {f}"

    def op_create(self):
        f = self.new_name("n")
        data = self.rng.randbytes(self.length())
        with open(self.path(f), "wb") as fh:
            fh.write(data)
            if self.rng.random() < 0.3:
                fh.flush()
                os.fsync(fh.fileno())
        self.m.files[f] = bytearray(data)
        return f"create {f} {len(data)}"

    def op_mkdir(self):
        d = self.new_name("D")
        os.mkdir(self.path(d))
        self.m.dirs.add(d)
        return f"mkdir {d}"

    def op_rmdir(self):
        used = {os.path.dirname(p) for p in
                list(self.m.files) + list(self.m.links) + list(self.m.dirs)
                if p}
        empty = sorted(d for d in self.m.dirs if d and d not in used)
        if not empty:
            return self.op_mkdir()
        d = self.rng.choice(empty)
        os.rmdir(self.path(d))
        self.m.dirs.discard(d)
        self.m.xattrs.pop(d, None)
        return f"rmdir {d}"

    def op_setxattr(self):
        t = self.rng.choice(sorted(self.m.files) + sorted(self.m.dirs))
        x = self.m.xattrs.setdefault(t, {})
        name = f"user.k{self.rng.randrange(5)}"
        # Now and then a large value, so that inodes hold runs of
        # several xattr pages (format.h) through the campaign too.
        big = self.rng.random() < 0.2
        val = self.rng.randbytes(self.rng.randint(2000, 6000) if big
                                 else self.rng.randint(1, 200))
        os.setxattr(self.path(t), name, val)
        x[name] = val
        return f"setxattr {t} {name} {len(val)}"

    def op_removexattr(self):
        have = sorted(t for t, x in self.m.xattrs.items() if x)
        if not have:
            return self.op_setxattr()
        t = self.rng.choice(have)
        name = self.rng.choice(sorted(self.m.xattrs[t]))
        os.removexattr(self.path(t), name)
        del self.m.xattrs[t][name]
        return f"removexattr {t} {name}"

    def op_fsync(self):
        f = self.some_file()
        if not f:
            return "fsync skipped"
        fd = os.open(self.path(f), os.O_RDWR)
        try:
            os.write(fd, bytes(self.m.files[f][:1]))  # same byte: a write
            os.fsync(fd)
        finally:
            os.close(fd)
        return f"fsync {f}"

    SCATTER = 256       # pages: an update the daemon splits (apply.c)

    def _stores(self, f, scatter=False):
        """A few stores, or (scatter) 8 bytes into each of SCATTER to
        400 pages, when the file has that many: a sync whose pages the
        daemon reads, verifies and writes on two threads."""
        buf = self.m.files[f]
        npages = len(buf) // PAGE
        out = []
        if scatter and npages >= self.SCATTER:
            k = self.rng.randint(self.SCATTER, min(npages, 400))
            for pg in sorted(self.rng.sample(range(npages), k)):
                off = pg * PAGE + self.rng.randrange(PAGE - 8)
                data = self.rng.randbytes(8)
                buf[off:off + 8] = data
                out.append((off, data))
            return out
        for _ in range(self.rng.randint(1, 3)):
            ln = min(len(buf), self.rng.choice([8, 64, 200, PAGE + 100]))
            off = self.rng.randrange(len(buf) - ln + 1)
            data = self.rng.randbytes(ln)
            buf[off:off + ln] = data
            out.append((off, data))
        return out

    def op_commit(self, scatter=None):
        """libcommit: map the file, store, commit_sync, unmap; a third
        of them (or as told) scattered over hundreds of pages of the
        largest file."""
        if scatter is None:
            scatter = self.rng.random() < 0.3
        f = (max(self.m.files, key=lambda x: len(self.m.files[x]))
             if scatter and self.m.files else self.some_file(nonempty=True))
        if not f or not self.has_commit:
            return self.op_overwrite()
        stores = self._stores(f, scatter)
        cmds = ["map rw 0 0"] + [f"store {o} {d.hex()}" for o, d in stores] \
            + ["sync", "unmap"]
        p = subprocess.run([str(CHILD), str(self.path(f))] + cmds,
                           stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=60)
        bad = [l for l in p.stdout.splitlines() if not l.startswith("ok")]
        if p.returncode or bad:
            raise AssertionError(f"commit_child {f}: {p.stdout} {p.stderr}")
        return f"commit {f} " + " ".join(f"@{o}+{len(d)}" for o, d in stores)

    def op_shim(self):
        """mmap + msync of an unmodified program through the shim."""
        f = self.some_file(nonempty=True)
        if not f or not self.has_shim:
            return self.op_overwrite()
        stores = self._stores(f)
        args = [x for o, d in stores for x in (str(o), d.hex())]
        env = dict(os.environ, LD_PRELOAD=str(SHIM))
        p = subprocess.run([sys.executable, "-c", SHIM_PROG,
                            str(self.path(f))] + args, env=env,
                           capture_output=True, text=True, timeout=60)
        if p.returncode:
            raise AssertionError(f"shim on {f}: {p.stderr}")
        return f"shim {f} " + " ".join(f"@{o}+{len(d)}" for o, d in stores)

    def step(self):
        ops = sorted(self.WEIGHTS)
        op = self.rng.choices(ops, [self.WEIGHTS[o] for o in ops])[0]
        self.log.append(getattr(self, "op_" + op)())

    def run(self, nops):
        for _ in range(nops):
            self.step()


# ------------------------------------------------------------ the base

class Base:
    """One populated volume: snapshots of its images taken along the way,
    the final images, the model of the final tree, and, per snapshot and
    device, the pages that changed since and their old bytes. Snapshots:
    0 clean, after population (an older generation); 1 mounted and idle
    in the middle of the workload (superblocks say the volume is open);
    2 mounted, after a remount, before the last few writes (same
    generation as the final images, few changed pages)."""

    def __init__(self, work, parity=1, ndev=None, size="16M", seed=1,
                 chunk=None, nops=70, tag=None, remap=False):
        self.work = Path(work)
        self.parity = parity
        self.ndev = ndev or 3 + parity
        self.size = size
        self.seed = seed
        self.chunk = chunk
        self.remap = remap    # mkfs --remap: overwrites redirected
        self.nops = nops
        self.tag = tag or f"lw{os.getpid()}-p{parity}-s{seed}"
        d = self.work / f"base-{self.tag}"
        d.mkdir(parents=True, exist_ok=True)
        self.vol = Volume(d, ndev=self.ndev, size=size, parity=parity,
                          tag=self.tag)
        self.snaps = []       # [{dev: {page: old bytes}}]
        self.npages = []      # per device
        self.nonzero = []     # per device: pages not all zeros, final
        self.model = None
        self.want = None
        # Copies of one base share its volume UUID, and the daemon names
        # its control and libcommit sockets after it (unlinking whatever
        # is there), so only one copy of a base is mounted at a time.
        self.lock = threading.Lock()
        self.ops = []
        self.build_secs = 0
        self._alloc_pages = None  # see alloc_pages
        self._locate_lock = threading.Lock()

    @property
    def devs(self):
        return self.vol.devs

    def _snapshot(self):
        return [read_image(d) for d in self.devs]

    def build(self):
        t = time.time()
        rng = random.Random(f"base:{self.seed}")
        v = self.vol
        v.mkfs(*(["--chunk", self.chunk] if self.chunk else []),
               *(["--remap"] if self.remap else []))
        v.mount()
        try:
            make_tree(v.mnt, seed=self.seed, small=40, large=2, depth=4)
            self.model = Model.from_tree(v.mnt)
            w = Workload(v.mnt, self.model, rng)
            for _ in range(12):
                w.op_setxattr()
        finally:
            v.umount()
        snaps = [self._snapshot()]            # 0: clean, after population
        v.mount()
        try:
            w.run(self.nops)
            w.op_create()                     # at least one large write
            w.op_commit(scatter=True)         # and one scattered sync
            snaps.append(self._snapshot())    # 1: mounted, idle
            w.run(self.nops)
        finally:
            v.umount()
        v.mount()                             # a new generation
        try:
            w.run(self.nops // 2)
            snaps.append(self._snapshot())    # 2: only the last writes
            w.run(8)
            self.want = self.model.entries()
        finally:
            v.umount()
        self.ops = w.log
        bad = v.unexpected_log_lines()
        if bad:
            raise AssertionError("base volume: daemon complained without "
                                 "any fault:\n" + "\n".join(bad))
        final = self._snapshot()
        self.npages = [len(b) // PAGE for b in final]
        self.nonzero = [nonzero_pages(b) for b in final]
        for s in snaps:
            self.snaps.append([{n: page(old, n) for n in
                                changed_pages(old, new)}
                               for old, new in zip(s, final)])
        self.data = {f: bytes(d) for f, d in self.model.files.items()}
        # The control: a trial without a fault, read through a fresh
        # mount (no page cache), must give the model, fsck nothing.
        r = run_trial(self, "none", 0, self.work)
        if r["outcome"] != "OK" or r["codes"]["fsck-y"] != 0:
            raise AssertionError("base volume: wrong without any fault:\n"
                                 + report(r))
        self.build_secs = time.time() - t
        return self

    @property
    def alloc_pages(self):
        """Per device: {page: "bitmap" | "cmap"}, found once, when a
        trial of an allocation-state kind first asks."""
        with self._locate_lock:
            if self._alloc_pages is None:
                self._alloc_pages = self._locate_alloc()
            return self._alloc_pages

    def _locate_alloc(self, tries=24):
        """Where the bitmap pages (those written) and every copy of the
        init map lie, as daxguard-inject picks them (on a scratch copy:
        a bitflip per pick, seeds 1 .. tries)."""
        out = [dict() for _ in range(self.ndev)]
        d = self.work / f"locate-{self.tag}"
        d.mkdir(parents=True, exist_ok=True)
        v = Volume(d, ndev=self.ndev, size=self.size, parity=self.parity,
                   tag=f"{self.tag}-loc")
        try:
            for s, t in zip(self.devs, v.devs):
                copy_image(s, t)
            for target in ("bitmap", "cmap"):
                for seed in range(1, tries + 1):
                    rep, _ = inject(v.devs, "bitflip", target, seed=seed,
                                    check=False)
                    for c in (rep or {}).get("changes", []):
                        out[c["device"]][c["page"]] = target
        finally:
            v.cleanup()
            shutil.rmtree(d, ignore_errors=True)
        return out

    def changed(self, snap, dev):
        return sorted(self.snaps[snap][dev])

    def summary(self):
        per = ["/".join(str(len(s[d])) for d in range(self.ndev))
               for s in self.snaps]
        return (f"{self.ndev} devices x {self.size}, parity {self.parity}, "
                f"{len(self.want)} paths, {len(self.ops)} ops; changed "
                f"pages per device since each snapshot: {'; '.join(per)}; "
                f"built in {self.build_secs:.1f} s")

    def final_page(self, dev, n):
        with open(self.devs[dev], "rb") as f:
            f.seek(n * PAGE)
            return f.read(PAGE).ljust(PAGE, b"\0")

    def cleanup(self):
        self.vol.cleanup()
        shutil.rmtree(self.work / f"base-{self.tag}", ignore_errors=True)


# ------------------------------------------------------------ faults

class Fault:
    """Pages to write into one copy of the final images. edits:
    {dev: [(page, src)]}, src one of ("snap", s) (that page as it was
    at snapshot s), ("zero",), ("final", q) (page q as it is now),
    ("snapof", s, q) (page q as it was at snapshot s)."""

    def __init__(self, kind, snap=None):
        self.kind = kind
        self.snap = snap
        self.edits = {}
        self.pool_sizes = []      # candidate pages per device, in order
        self.window = None        # "window": the snapshot it ends at
        self.scrub = False
        self.label = None         # alloc kinds: what was hit

    @property
    def target(self):
        """A layout-free name for what was hit: which snapshot the old
        pages come from (see Base) and how many of the candidate pages:
        few (1-4), part, all (every changed page, or all but at most
        3)."""
        if self.kind == "misdirect":
            return "now"
        if not self.edits:
            return ""
        if self.label:
            return self.label
        t = f"snap{self.snap}" if self.snap is not None else ""
        if self.kind == "window":
            return f"{t}-{self.window if self.window else 'now'}"
        if self.kind in ("older", "stale", "misdirect-old"):
            return t
        sizes = [len(e) for e in self.edits.values()]
        if max(sizes) <= 4:
            size = "few"
        elif all(n >= p - 3 for n, p in zip(sizes, self.pool_sizes)):
            size = "all"
        else:
            size = "part"
        return f"{t} {size}".strip()

    @property
    def devices(self):
        return sorted(d for d, e in self.edits.items() if e)

    @staticmethod
    def bytes_of(base, dev, n, src):
        if src[0] == "snap":
            return base.snaps[src[1]][dev][n]
        if src[0] == "zero":
            return bytes(PAGE)
        if src[0] == "final":
            return base.final_page(dev, src[1])
        if src[0] == "snapof":
            return base.snaps[src[1]][dev][src[2]]
        if src[0] == "bytes":
            return src[1]
        raise ValueError(src)

    def apply(self, base, devs):
        for dev, edits in self.edits.items():
            write_pages(devs[dev], [(n, self.bytes_of(base, dev, n, src))
                                    for n, src in edits])

    def describe(self, base=None):
        parts = []
        for dev in self.devices:
            e = self.edits[dev]
            moves = [(n, s) for n, s in e if s[0] in ("final", "snapof")]
            plain = [n for n, s in e if s[0] not in ("final", "snapof",
                                                     "bytes")]
            junk = [n for n, s in e if s[0] == "bytes"]
            what = []
            if plain:
                of = ""
                if base is not None and self.snap is not None:
                    of = f" of {len(base.snaps[self.snap][dev])} changed"
                src = "zeroed" if e[0][1][0] == "zero" else \
                    f"from snapshot {self.snap}"
                if self.window:
                    src += f" (unchanged since snapshot {self.window})"
                what.append(f"{len(plain)}{of} pages {src}: {ranges(plain)}")
            if junk:
                what.append(f"random bytes in zero pages {ranges(junk)}")
            for n, s in moves:
                what.append(f"page {s[-1]} ({'now' if s[0] == 'final' else 'snapshot %d' % s[1]}) written at {n}")
            parts.append(f"dev {dev}: " + "; ".join(what))
        return f"{self.kind}: " + " | ".join(parts) + \
            (" (+scrub)" if self.scrub else "")


def pick_subset(rng, pages):
    """Any size from one page to all, weighted towards both ends."""
    n = len(pages)
    r = rng.random()
    if r < 0.3:
        k = rng.randint(1, min(4, n))
    elif r < 0.8:
        k = rng.randint(1, n)
    else:
        k = n - rng.randint(0, min(3, n - 1))
    return sorted(rng.sample(pages, k))


def make_fault(base, kind, rng):
    """A fault of kind on devices the rng picks among those it can hit."""
    ndevs = KINDS[kind]
    snap = rng.randrange(len(base.snaps))
    f = Fault(kind, snap)
    if not ndevs:
        f.snap = None
        return f
    if kind.startswith("zero") or kind.startswith("misdirect"):
        f.snap = None if kind != "misdirect-old" else snap
    if kind in ALLOC_KINDS:
        return make_alloc_fault(base, kind, rng, f)
    cands = [d for d in range(base.ndev) if base.snaps[snap][d]]
    devs = sorted(rng.sample(cands, min(ndevs, len(cands))))
    for dev in devs:
        changed = base.changed(snap, dev)
        sb = superblock_pages(base.npages[dev])
        if kind in ("lost", "lost2", "lost3"):
            f.pool_sizes.append(len(changed))
            f.edits[dev] = [(n, ("snap", snap)) for n in
                            pick_subset(rng, changed)]
        elif kind == "older":
            f.edits[dev] = [(n, ("snap", snap)) for n in changed
                            if n not in sb]
        elif kind == "stale":
            f.edits[dev] = [(n, ("snap", snap)) for n in changed]
        elif kind == "window":
            # Writes from snapshot snap to a later snapshot j lost, the
            # later ones kept: the pages that changed after snap but not
            # after j go back (superblocks too, or not).
            later = [j for j in range(snap + 1, len(base.snaps))]
            if later:
                j = rng.choice(later)
                f.window = j
                f.edits[dev] = [(n, ("snap", snap)) for n in changed
                                if n not in base.snaps[j][dev]
                                and (rng.random() < 0.5 or n not in sb)]
            if not f.edits.get(dev):      # no later snapshot: "older"
                f.edits[dev] = [(n, ("snap", snap)) for n in changed
                                if n not in sb]
        elif kind in ("zero", "zero2"):
            pool = sorted(set(changed) | set(base.nonzero[dev]))
            f.pool_sizes.append(len(pool))
            f.edits[dev] = [(n, ("zero",)) for n in pick_subset(rng, pool)]
        elif kind == "misdirect":
            pool = sorted(set(changed) | set(base.nonzero[dev]))
            e, k = [], rng.randint(1, 3)
            for _ in range(100 * k):
                if len(e) == k:
                    break
                q = rng.choice(base.nonzero[dev])
                n = rng.choice(pool)
                if base.final_page(dev, q) != base.final_page(dev, n):
                    e.append((n, ("final", q)))
            f.edits[dev] = e
        elif kind == "misdirect-old":
            pool = sorted(set(changed) | set(base.nonzero[dev]))
            e = []
            for _ in range(rng.randint(1, 3)):
                q = rng.choice(changed)
                n = rng.choice([x for x in pool if x != q])
                e.append((n, ("snapof", snap, q)))
            f.edits[dev] = e
        else:
            raise ValueError(kind)
    f.scrub = rng.random() < 0.5
    return f


def make_alloc_fault(base, kind, rng, f):
    """Issue 34: one device's allocation state (bitmap pages, the init
    map's pages in both slots) lost, zeroed or overwritten, or garbage
    in pages that hold only zeros (rows never written, mostly)."""
    if kind == "garbage":
        f.snap = None
        dev = rng.randrange(base.ndev)
        nz = set(base.nonzero[dev]) | superblock_pages(base.npages[dev])
        pages = set()
        while len(pages) < rng.randint(1, 8):
            n = rng.randrange(base.npages[dev])
            if n not in nz:
                pages.add(n)
        f.edits[dev] = [(n, ("bytes", rng.randbytes(PAGE)))
                        for n in sorted(pages)]
        f.label = "never-written"
        f.scrub = rng.random() < 0.5
        return f
    # bitmap or map first (the map has pages on every device, the bitmap
    # few), then a device that has such pages
    classes = sorted({c for d in base.alloc_pages for c in d.values()})
    if not classes:
        return f                  # nothing located: an empty fault
    cls = rng.choice(classes)
    dev = rng.choice([d for d in range(base.ndev)
                      if cls in base.alloc_pages[d].values()])
    where = {n: c for n, c in base.alloc_pages[dev].items() if c == cls}
    if kind == "alloc-lost":
        # the snapshot whose pages differ most from now on this device
        snaps = [s for s in range(len(base.snaps))
                 if set(base.snaps[s][dev]) & set(where)]
        if not snaps:
            return f
        f.snap = rng.choice(snaps)
        pool = sorted(set(base.snaps[f.snap][dev]) & set(where))
        f.edits[dev] = [(n, ("snap", f.snap)) for n in
                        pick_subset(rng, pool)]
    elif kind == "alloc-zero":
        f.snap = None
        f.edits[dev] = [(n, ("zero",)) for n in
                        pick_subset(rng, sorted(where))]
    else:
        f.snap = None
        e, k = [], rng.randint(1, 2)
        for _ in range(100):
            if len(e) == k:
                break
            n = rng.choice(sorted(where))
            q = rng.choice(base.nonzero[dev])
            if q != n and base.final_page(dev, q) != \
                    base.final_page(dev, n):
                e.append((n, ("final", q)))
        f.edits[dev] = e
    hit = {where[n] for n, _ in f.edits.get(dev, [])}
    f.label = "+".join(sorted(hit))
    f.scrub = rng.random() < 0.5
    return f


# ------------------------------------------------------------ a trial

class Watchdog:
    """Kills the daemon if the reads of one mount take longer than secs
    (a hang); the reads then fail with ENOTCONN."""

    def __init__(self, daemon, secs=60):
        self.fired = False
        self.t = threading.Timer(secs, self._fire, (daemon,))

    def _fire(self, daemon):
        self.fired = True
        daemon.kill()

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *a):
        self.t.cancel()


def named_paths(rep):
    return {f["file"].lstrip("/") for f in (rep or {}).get("findings", [])
            if f.get("file")}


def _umount(v, secs=20):
    """Volume.umount, but wait for the daemon without polling (it is
    most of a trial's time). True if the daemon had to be killed."""
    subprocess.run(["fusermount3", "-u", "-z", str(v.mnt)],
                   capture_output=True)
    with Watchdog(v.daemon, secs) as wd:
        v.daemon.wait()
    v.umount()
    return wd.fired


def _mount_and_read(v, res, stage):
    """One mount, read everything, unmount. Returns the scan or None if
    the volume did not mount. Records crashes and hangs in res."""
    start = len(v.read_log())
    try:
        try:
            v.mount()
        except AssertionError as e:
            # A device left out (stale, missing) needs -o degraded, and
            # the refusal says so: do what it tells the user to do.
            if "-o degraded" not in str(e) or v.daemon is not None:
                raise
            res["degraded"].append(stage)
            v.mount("degraded", "ro")   # read only: change nothing
    except AssertionError as e:
        msg = str(e).strip().splitlines()
        res["refused"].append(f"{stage}: did not mount: "
                              + " / ".join(msg[-3:]))
        if v.daemon is not None:              # timed out, still running
            res["crash"].append(f"{stage}: mount timed out")
            _umount(v)
        log = v.read_log()[start:]
        m = CRASH_LOG.search(log)
        if m:
            res["crash"].append(f"{stage}: daemon crashed at mount: "
                                + log[m.start():][:300])
        return None
    daemon = v.daemon
    with Watchdog(daemon) as wd:
        got = scan(v.mnt)
        if res["fault"].scrub and stage == "mount1":
            try:
                p = run([CTL, v.mnt, "scrub", "--json"], check=False,
                        timeout=60)
                res["scrub"] = p.returncode
            except subprocess.TimeoutExpired:
                res["crash"].append(f"{stage}: scrub hung")
    dead = daemon.poll()
    hung = _umount(v) or wd.fired
    log = v.read_log()[start:]
    if hung:
        res["crash"].append(f"{stage}: daemon hung, killed")
    elif dead is not None or daemon.returncode != 0:
        tail = " / ".join(log.strip().splitlines()[-4:])
        res["crash"].append(f"{stage}: daemon exit {daemon.returncode}"
                            + (" while mounted" if dead is not None else "")
                            + f"; its log ends: {tail}")
    m = CRASH_LOG.search(log)
    if m:
        res["crash"].append(f"{stage}: daemon log: " + log[m.start():][:300])
    if any(e[0] == "error" and e[1] in (errno.ENOTCONN, errno.ECONNABORTED)
           for e in got.values()):
        res["crash"].append(f"{stage}: mount went away while reading")
    return got


REPLACE_HINT = re.compile(r"use --replace (\d+=\S+) to overwrite")


def _fsck(v, res, mode):
    """dgfault.fsck with --json, but a crash (no or cut JSON, a signal,
    a sanitizer report) or a hang is an outcome, not an exception."""
    try:
        rc, _, p = fsck(v.devs, mode, "--json")
        # A slot whose file nothing proves to be this volume's device
        # (superblocks and every sealed structure zeroed) is rebuilt only
        # when the user names it; fsck says how, for each such slot: do
        # as it says.
        hints = REPLACE_HINT.findall(p.stderr)
        if rc == 8 and mode == "-y" and hints:
            args = []
            for h in hints:
                res["replaced"].append(f"--replace {h}")
                args += ["--replace", h]
            rc, _, p = fsck(v.devs, mode, "--json", *args)
    except subprocess.TimeoutExpired:
        res["crash"].append(f"fsck {mode}: hung (killed after 300 s)")
        return -9, None, subprocess.CompletedProcess([], -9, "", "hung")
    try:
        rep = json.loads(p.stdout) if p.stdout.strip() else None
    except ValueError:
        rep = None
        res["crash"].append(f"fsck {mode}: exit {rc}, cut JSON report")
    if rc < 0 or CRASH_LOG.search(p.stderr):
        res["crash"].append(f"fsck {mode}: exit {rc}: {p.stderr[-300:]}")
    return rc, rep, p


def run_trial(base, kind, seed, work, keep=None):
    """One fault of kind on a fresh copy of base's final images, and the
    checks. Returns a dict: kind, target, parity, base (its seed), seed,
    within, fault (text), outcome (one of OUTCOMES), problems (list of
    text), codes (fsck exits). keep: a directory to copy the faulted
    images to (before any check touches them)."""
    rng = random.Random(f"{kind}:{seed}")
    fault = make_fault(base, kind, rng)
    within = len(fault.devices) <= base.parity
    res = {"kind": kind, "target": fault.target, "parity": base.parity,
           "base": base.seed, "remap": base.remap, "seed": seed,
           "within": within,
           "fault": fault, "crash": [], "refused": [], "problems": [],
           "degraded": [], "replaced": [], "codes": {}, "scrub": None}
    tag = f"{base.tag}-{kind}-{seed}"
    d = Path(work) / f"trial-{tag}"
    d.mkdir(parents=True)
    v = Volume(d, ndev=base.ndev, size=base.size, parity=base.parity,
               tag=tag)
    with base.lock:
        try:
            for s, t in zip(base.devs, v.devs):
                copy_image(s, t)
            fault.apply(base, v.devs)
            if keep:
                Path(keep).mkdir(parents=True, exist_ok=True)
                for i, t in enumerate(v.devs):
                    copy_image(t, Path(keep) / f"{tag}-{i}.img")
            _checks(base, v, res)
        finally:
            v.cleanup()
            shutil.rmtree(d, ignore_errors=True)
    res["fault"] = fault.describe(base)
    short = [(v.devlist, "DEVS")] + [(str(t), f"dev{i}")
                                     for i, t in enumerate(v.devs)]
    for i, p in enumerate(res["problems"]):
        for a, b in short:
            p = p.replace(a, b)
        res["problems"][i] = p
    return res


def _checks(base, v, res):
    """Mount and read, fsck -y, fsck -n (beyond parity: fsck -y again),
    mount and read; the outcome goes to res (see OUTCOMES, failed())."""
    want, data = base.want, base.data
    within = res["within"]
    probs = res["problems"]

    def seen(stage, got, wrong, eio, lost=()):
        if got is None:
            probs.append(res["refused"][-1])
            return
        probs.append(f"{stage}: {len(want) - len(wrong) - len(eio) - len(lost)}"
                     f" of {len(want)} paths exact, {len(wrong)} wrong, "
                     f"{len(eio)} errors, {len(lost)} given up by fsck")
        probs.extend(f"{stage} wrong: {w}" for w in wrong[:6])
        if eio:
            probs.append(f"{stage} errors: " + ", ".join(
                f"{p} ({describe(got.get(p))})" for p in eio[:6]))
        if lost:
            probs.append(f"{stage} given up: {', '.join(lost[:6])}")

    got1 = _mount_and_read(v, res, "mount1")
    wrong1, eio1 = judge(want, got1)[:2] if got1 is not None else ([], [])
    # (before fsck a name that vanishes without an error is wrong)
    seen("mount1", got1, wrong1, eio1)
    if res["scrub"] is not None:
        probs.append(f"mount1: daxguard-ctl scrub exit {res['scrub']}")

    rc1, rep1, p1 = _fsck(v, res, "-y")
    res["codes"]["fsck-y"] = rc1
    named = named_paths(rep1)
    probs.append(f"fsck -y exit {rc1}: {_findings(rep1, p1)}")
    mode2 = "-n" if within else "-y"
    rc2, rep2, p2 = _fsck(v, res, mode2)
    res["codes"]["fsck-n" if within else "fsck-y2"] = rc2
    if rc2 != 0:
        probs.append(f"then fsck {mode2} exit {rc2}: {_findings(rep2, p2)}")

    got2 = _mount_and_read(v, res, "mount2")
    gave_up = not within and rc1 in (4, 5)
    wrong2, eio2, lost2, gone2 = judge(
        want, got2, data, () if within else named, gave_up) \
        if got2 is not None else ([], [], [], [])
    seen("mount2", got2, wrong2, eio2, lost2 + gone2)

    fsck_bad = []
    if within and rc1 not in (0, 1):
        fsck_bad.append(f"fsck -y exit {rc1} within parity")
    if not within:
        # fsck(8) bitmask: 4 = left uncorrected (data given up), 1 = fixed
        if rc1 not in (0, 1, 4, 5):
            fsck_bad.append(f"fsck -y exit {rc1}")
        elif (eio2 or lost2 or gone2) and not rc1 & 4:
            fsck_bad.append(f"fsck -y exit {rc1} although data was lost")
        unnamed = gone2 + [p for p in eio2 if not any(
            p == n or p.startswith(n + "/") for n in named)]
        if unnamed:
            fsck_bad.append("fsck -y did not name damaged paths: "
                            + ", ".join(unnamed[:8]))
    probs.extend(fsck_bad)
    probs.extend(res["crash"])

    if wrong1 or wrong2:
        out = "WRONG_BYTES"
    elif res["crash"]:
        out = "CRASH"
    elif (within and res["refused"]) or got2 is None:
        out = "MOUNT_REFUSED"     # beyond parity too, once fsck is done
    elif within and (eio1 or eio2):
        out = "EIO"
    elif fsck_bad:
        out = "FSCK_EXIT"
    elif rc2 != 0 and (within or rc2 != 4 or new_findings(rep1, rep2)):
        # Beyond parity, a second fsck -y may report again the data it
        # could not save (exit 4, as ZFS keeps listing permanent errors),
        # but must find nothing new.
        out = "NOT_CONVERGED"
    elif eio1 or eio2 or lost2 or gone2 or res["refused"]:
        out = "EIO"
    else:
        out = "OK"
    res["outcome"] = out
    if res["degraded"]:
        probs.append("mounted with -o degraded at " +
                     ", ".join(res["degraded"]) + " (a device left out)")
    if res["replaced"]:
        probs.append("fsck -y was told " + ", ".join(res["replaced"]) +
                     " (nothing left on that file proves it ours)")
    del res["crash"], res["refused"], res["degraded"], res["replaced"]


def new_findings(rep1, rep2):
    """Findings of the second fsck that the first did not report."""
    def keys(rep):
        return {(f["code"], f["device"], f["page"])
                for f in (rep or {}).get("findings", [])}
    return keys(rep2) - keys(rep1)


def _findings(rep, p, most=4):
    """fsck's findings in brief (the first few, and how many)."""
    if rep and rep.get("findings"):
        fs = rep["findings"]
        return f"{len(fs)} findings: " + "; ".join(
            f"{f['code']} dev {f['device']} page {f['page']}"
            f"{' ' + f['file'] if f.get('file') else ''}: "
            f"{f['detail']} -> {f['action']}" for f in fs[:most]) + \
            (" ..." if len(fs) > most else "")
    err = p.stderr.strip().replace("\n", " / ")[:400]
    return err or ("clean" if rep is not None else p.stdout.strip()[:400])


def failed(res):
    """Is this outcome against the rules? Within parity only OK passes;
    beyond parity OK and EIO (data named and given up, never wrong)."""
    if res["within"]:
        return res["outcome"] != "OK"
    return res["outcome"] not in ("OK", "EIO")


def report(res, width=400):
    """One trial, with what it takes to reproduce it."""
    def cut(t):
        return t if len(t) <= width else t[:width] + " ..."
    return (f"[{res['outcome']}] parity {res['parity']} kind {res['kind']} "
            f"({res['target']}) seed {res['seed']} "
            f"({'within' if res['within'] else 'beyond'} parity)\n"
            f"  reproduce: {repro_cmd(res)}\n"
            f"  fault: {cut(res['fault'])}\n"
            + "".join(f"  - {cut(p)}\n" for p in res["problems"][:24]))


def repro_cmd(res):
    return (f"bench/campaign.py lostwrite --seed {res['base']} --bases 1 "
            f"--parity {res['parity']} --kinds {res['kind']} "
            + ("--remap " if res.get("remap") else "")
            + f"--repro {res['seed']} --keep /dev/shm/lw-repro")


def campaign(bases, kinds, trials, seed, work, jobs=2, progress=None):
    """trials of each kind for each parity among bases (a kind on as many
    devices as the volume has is skipped), spread round-robin over the
    bases of that parity, jobs at a time: a trial mostly waits (for the
    daemon to exit), so a few in parallel cost little CPU. Trials of one
    base never run at once (see Base.lock): jobs beyond the number of
    bases of a parity only wait. Trial i has the trial seed
    seed * 1000000 + i. Returns the results in a fixed order."""
    groups = {}
    for b in bases:
        groups.setdefault(b.parity, []).append(b)
    todo = [(g[i % len(g)], k, seed * 1_000_000 + i)
            for g in groups.values() for k in kinds
            if KINDS[k] < g[0].ndev for i in range(trials)]
    out = [None] * len(todo)

    def one(i):
        b, k, s = todo[i]
        out[i] = run_trial(b, k, s, work)
        if progress:
            progress(out[i])

    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as ex:
        for f in [ex.submit(one, i) for i in range(len(todo))]:
            f.result()
    return out


def tally(results):
    """{(parity, kind, target, within): {outcome: count}}"""
    t = {}
    for r in results:
        key = (r["parity"], r["kind"], r["target"], r["within"])
        row = t.setdefault(key, dict.fromkeys(OUTCOMES, 0))
        row[r["outcome"]] += 1
    return t
