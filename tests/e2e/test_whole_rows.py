# SPDX-License-Identifier: MIT
"""Large writes on whole rows (docs/design.md, "Whole rows"): a large
write to a new file, and a large overwrite, fill whole parity rows and
write them before their journal entry instead of copying their bytes
into it; status counts both; a small overwrite patches its row in
place; and a daemon killed in the middle of large overwrites leaves
every piece old or new, with fsck finding nothing to repair."""
import hashlib
import os
import subprocess
import sys
import time

from dgfault import fsck

MIB = 1 << 20


def rows(v):
    s = v.status()
    return (s["rows_written_whole"], s["rows_written_before_journal"],
            s["rows_patched"], s["free_bytes"])


def write_pieces(path, data, piece, flags=os.O_CREAT | os.O_WRONLY):
    fd = os.open(path, flags, 0o644)
    try:
        for off in range(0, len(data), piece):
            os.pwrite(fd, data[off:off + piece], off)
        os.fsync(fd)
    finally:
        os.close(fd)


def test_large_writes_skip_the_journal_and_overwrites_move(mounted):
    v = mounted
    p = v.mnt / "big"
    data = os.urandom(8 * MIB)
    # 4 devices, parity 1: 3 data pages a row; 8 MiB is 683 rows
    want_rows = 8 * MIB // 4096 // 3
    whole0, new0, _, _ = rows(v)
    write_pieces(p, data, MIB)
    whole1, new1, _, free1 = rows(v)
    assert new1 - new0 >= 0.95 * want_rows
    assert whole1 - whole0 >= new1 - new0
    # The same range again: moved to new rows, the old ones freed.
    data = os.urandom(8 * MIB)
    write_pieces(p, data, MIB)
    whole2, new2, patched2, free2 = rows(v)
    assert new2 - new1 >= 0.95 * want_rows
    assert free2 == free1
    # A page and a bit in the middle: patched in place, nothing new.
    small = os.urandom(5000)
    fd = os.open(p, os.O_WRONLY)
    os.pwrite(fd, small, 3 * MIB + 100)
    os.fsync(fd)
    os.close(fd)
    data = data[:3 * MIB + 100] + small + data[3 * MIB + 100 + 5000:]
    _, new3, patched3, _ = rows(v)
    assert new3 == new2 and patched3 > patched2
    v.remount()
    assert hashlib.sha256(p.read_bytes()).digest() == \
        hashlib.sha256(data).digest()
    v.umount()
    code, rep, proc = fsck(v.devs, "-n", json_out=True)
    assert code == 0, proc.stdout + proc.stderr


# Overwrites 1 MiB pieces of a file again and again, each stamped with
# its round, and fsyncs after each round; prints the round it finished.
WRITER = r"""
import os, sys
path, pieces = sys.argv[1], int(sys.argv[2])
piece = 1 << 20
fd = os.open(path, os.O_WRONLY)
r = 1
while True:
    for i in range(pieces):
        stamp = b"%08d:%08d;" % (r, i)
        os.pwrite(fd, stamp * (piece // len(stamp)) +
                  stamp[:piece % len(stamp)], i * piece)
    os.fsync(fd)
    print(r, flush=True)
    r += 1
"""


def piece_round(b, i):
    """The round a piece holds wholly, or None when it is a mix."""
    stamp = b[:18]
    if len(stamp) < 18 or stamp[8:9] != b":" or int(stamp[9:17]) != i:
        return None
    piece = len(b)
    full = stamp * (piece // 18) + stamp[:piece % 18]
    return int(stamp[:8]) if b == full else None


def test_kill_during_large_overwrites(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount()
    p = v.mnt / "f"
    npieces = 16
    piece = MIB
    with open(p, "wb") as f:
        for i in range(npieces):
            stamp = b"%08d:%08d;" % (0, i)
            f.write(stamp * (piece // 18) + stamp[:piece % 18])
    w = subprocess.Popen([sys.executable, "-c", WRITER, str(p),
                          str(npieces)], stdout=subprocess.PIPE, text=True)
    try:
        done = 0
        deadline = time.time() + 30
        new0 = v.status()["rows_written_before_journal"]
        while done < 3 and time.time() < deadline:
            line = w.stdout.readline()
            if not line:
                break
            done = int(line)
        time.sleep(0.05)
        assert done >= 3, "the writer made no progress"
        assert v.status()["rows_written_before_journal"] > new0
        v.kill9()
    finally:
        w.kill()
        w.wait()
    v.mount()
    b = p.read_bytes()
    assert len(b) == npieces * piece
    got = [piece_round(b[i * piece:(i + 1) * piece], i)
           for i in range(npieces)]
    assert None not in got, f"mixed pieces: {got}"
    # fsync'd rounds survive; at most the round under way is partial
    assert min(got) >= done and max(got) <= min(got) + 1
    v.umount()
    code, rep, proc = fsck(v.devs, "-n", json_out=True)
    assert code == 0, proc.stdout + proc.stderr
