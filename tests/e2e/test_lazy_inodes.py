# SPDX-License-Identifier: MIT
"""Inodes are read on use, not at mount (issue 34): the daemon's own
memory (RssAnon) after mounting a volume of 20,000 files is about that
of an empty volume, the mount keeps the root alone in core, and once
the kernel forgets the files it stat'ed, the daemon keeps no more
than -o inode_cache of them. Memory and counts, not timings."""
import os
import subprocess
import time

from conftest import DAEMON

N = 20000
BOUND = 1000


def rss_anon_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    raise AssertionError("no RssAnon in /proc/%d/status" % pid)


def create(d, n):
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY
    for i in range(n):
        os.close(os.open(os.path.join(d, f"f{i:06d}"), flags, 0o644))


def wait_status(vol, key, most, secs=30):
    """Poll the status until key <= most (forgets come when the kernel
    sends them); the last status."""
    deadline = time.time() + secs
    while True:
        st = vol.status()
        if st[key] <= most or time.time() > deadline:
            return st
        vol.drop_caches()
        time.sleep(0.2)


def test_mount_memory_follows_use(volume_factory):
    empty = volume_factory(size="128M")
    empty.mkfs()
    empty.mount()
    base = rss_anon_kib(empty.daemon.pid)
    empty.umount()

    vol = volume_factory(size="128M")
    vol.mkfs()
    mnt = vol.mount()
    d = mnt / "many"
    d.mkdir()
    create(d, N)
    vol.umount()
    vol.mount(f"inode_cache={BOUND}")
    st = vol.status()
    rss = rss_anon_kib(vol.daemon.pid)
    print(f"RssAnon after mount: empty volume {base} KiB, "
          f"{N} files {rss} KiB; inodes_cached {st['inodes_cached']}")
    # The root's inode table page alone (16 inodes); reading every inode
    # at mount held ~10 MiB here.
    assert st["inodes_cached"] <= 16, st["inodes_cached"]
    assert rss - base < 4 * 1024, (base, rss)

    # Every file stat'ed, then forgotten by the kernel: down to the bound
    # (plus what the kernel still holds: the directory, the root).
    for i in range(N):
        os.stat(d / f"f{i:06d}")
    # inode_loads counts table pages read (16 inodes a page).
    assert vol.status()["inode_loads"] >= N // 16
    st = wait_status(vol, "inodes_cached", BOUND + 2)
    assert st["inodes_cached"] <= BOUND + 2, st["inodes_cached"]
    # Still all there, read again on use.
    assert len(os.listdir(d)) == N
    assert os.stat(d / "f000123").st_size == 0


def test_inode_cache_option_usage(volume_factory):
    """A bad -o inode_cache is a usage error (2), refused before the
    devices are opened; --help names the option."""
    v = volume_factory()
    v.mkfs()
    for bad in ("abc", "10", "-5", "1x", ""):
        p = subprocess.run([str(DAEMON), v.devlist, str(v.mnt), "-f",
                            "-o", f"inode_cache={bad}"],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 2, (bad, p.returncode, p.stderr)
        assert "inode_cache" in p.stderr, p.stderr
    p = subprocess.run([str(DAEMON), "--help"], capture_output=True,
                       text=True, timeout=10)
    assert p.returncode == 0 and "inode_cache=N" in p.stdout
