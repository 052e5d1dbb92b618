# SPDX-License-Identifier: MIT
"""Concurrent small writes share the journal (docs/design.md, "Parallel
commits"): their entries are written side by side, and an update writes
in place only once every earlier entry is durable. Four writers
overwrite their own files page by page while the daemon is killed; each
file must come back as a prefix of the round under way over the round
before -- never a page of neither, never an acknowledged page lost --
and fsck finds nothing to repair."""
import subprocess
import sys
import time

from dgfault import fsck

PAGE = 4096
PAGES = 64
WRITERS = 4
ROUNDS = 20     # each writer's, at least, before the kill

# Overwrites every page of a file in order, round after round, each
# stamped with its round; prints each round it finished. Every write()
# is durable when it returns (no writeback mount option).
WRITER = r"""
import os, sys
path, pages = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_WRONLY)
r = 1
while True:
    for i in range(pages):
        stamp = b"%08d:%08d;" % (r, i)
        os.pwrite(fd, (stamp * (4096 // 18 + 1))[:4096], i * 4096)
    print(r, flush=True)
    r += 1
"""


def page_round(b, i):
    stamp = b[:18]
    if len(stamp) < 18 or stamp[8:9] != b":" or int(stamp[9:17]) != i:
        return None
    return int(stamp[:8]) if b == (stamp * (PAGE // 18 + 1))[:PAGE] else None


def test_kill_during_parallel_small_writes(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount()
    paths = [v.mnt / f"w{n}" for n in range(WRITERS)]
    for p in paths:
        with open(p, "wb") as f:
            for i in range(PAGES):
                stamp = b"%08d:%08d;" % (0, i)
                f.write((stamp * (PAGE // 18 + 1))[:PAGE])
    assert isinstance(v.status()["journal_appends_waited"], int)
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(p),
                               str(PAGES)], stdout=subprocess.PIPE, text=True)
             for p in paths]
    done = [0] * WRITERS
    try:
        deadline = time.time() + 60
        while min(done) < ROUNDS and time.time() < deadline:
            for n, w in enumerate(procs):
                if done[n] < ROUNDS:
                    line = w.stdout.readline()
                    if line:
                        done[n] = int(line)
        assert min(done) >= ROUNDS, f"the writers made no progress: {done}"
        v.kill9()
    finally:
        for w in procs:
            w.kill()
            w.wait()
    v.mount()
    for n, p in enumerate(paths):
        b = p.read_bytes()
        assert len(b) == PAGES * PAGE
        got = [page_round(b[i * PAGE:(i + 1) * PAGE], i)
               for i in range(PAGES)]
        assert None not in got, f"writer {n}: torn pages: {got}"
        # The round under way over the one before it, page by page in
        # order; every round the writer saw finish is there.
        low = min(got)
        assert low >= done[n], f"writer {n}: round {done[n]} lost: {got}"
        cut = next((i for i, g in enumerate(got) if g == low), PAGES)
        assert got[:cut] == [low + 1] * cut and \
            got[cut:] == [low] * (PAGES - cut), f"writer {n}: {got}"
    v.umount()
    code, rep, proc = fsck(v.devs, "-n", json_out=True)
    assert code == 0, proc.stdout + proc.stderr
