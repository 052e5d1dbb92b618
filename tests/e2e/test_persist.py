# SPDX-License-Identifier: MIT
"""Everything a mounted volume holds survives unmount and mount: the
namespace, contents, links, attributes and times; a 100,000-entry
directory; a volume filled to ENOSPC and emptied again."""
import errno
import hashlib
import os
import random
import stat
import subprocess
import time

import pytest

PAGE = 4096


def clean_umount(v):
    """Unmount and check the daemon exited 0 after a clean volume close."""
    d = v.daemon
    n = v.read_log().count("unmounted cleanly")
    v.umount()
    assert d.returncode == 0, v.read_log()
    assert v.read_log().count("unmounted cleanly") == n + 1, v.read_log()


def snapshot(root):
    """Everything observable about a tree, keyed by relative path."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [""] + dirnames + filenames if dirpath == str(root) \
                else dirnames + filenames:
            p = os.path.join(dirpath, name) if name else dirpath
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            e = {"mode": st.st_mode, "uid": st.st_uid, "gid": st.st_gid,
                 "nlink": st.st_nlink, "size": st.st_size,
                 "ino": st.st_ino, "blocks": st.st_blocks,
                 "atime": st.st_atime_ns, "mtime": st.st_mtime_ns,
                 "ctime": st.st_ctime_ns, "rdev": st.st_rdev}
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    e["sha256"] = hashlib.sha256(f.read()).hexdigest()
            if stat.S_ISLNK(st.st_mode):
                e["target"] = os.readlink(p)
            else:
                e["xattrs"] = {n: os.getxattr(p, n, follow_symlinks=False)
                               for n in sorted(os.listxattr(p))}
            snap[rel] = e
    return snap


def test_tree_survives_remount(volume_factory):
    v = volume_factory()
    v.mkfs()
    m = v.mount()
    rng = random.Random(1234)
    sizes = [0, 1, 100, PAGE - 1, PAGE, PAGE + 1, 3 * PAGE, 65536 + 7,
             1 << 20, (3 << 20) + 12345]
    os.makedirs(m / "a" / "b" / "c")
    os.makedirs(m / "x" / "y")
    os.mkdir(m / "empty")
    for i, size in enumerate(sizes):
        d = [m, m / "a", m / "a" / "b" / "c", m / "x" / "y"][i % 4]
        (d / f"file{i}").write_bytes(rng.randbytes(size))
    # A sparse file with data far out.
    with open(m / "sparse", "wb") as f:
        f.seek(10 << 20)
        f.write(b"tail")
    # Hard links across directories, symlinks (short, long, dangling).
    os.link(m / "file0", m / "x" / "hard0")
    os.link(m / "a" / "file1", m / "a" / "b" / "hard1")
    os.link(m / "a" / "file1", m / "hard1b")
    os.symlink("a/b/c", m / "link-dir")
    os.symlink("../file0", m / "a" / "link-rel")
    os.symlink("/" + "t" * 3000, m / "link-long")
    os.symlink("nowhere", m / "dangling")
    os.mkfifo(m / "fifo", 0o600)
    os.mknod(m / "chardev", stat.S_IFCHR | 0o640, os.makedev(4, 5))
    # Xattrs on files, directories; modes, owners.
    os.setxattr(m / "a" / "file1", "user.k", b"v1")
    os.setxattr(m / "a" / "file1", "user.bin", rng.randbytes(3000))
    os.setxattr(m / "a", "user.dir", b"dirattr")
    os.setxattr(m / "x" / "y" / "file3", "trusted.t", b"")
    os.chmod(m / "file0", 0o4751)
    os.chmod(m / "a" / "b", 0o1770)
    os.chown(m / "x" / "y" / "file3", 1001, 2002)
    os.lchown(m / "dangling", 3, 4)
    # Renames and deletes leave holes in directories.
    (m / "a" / "gone").write_bytes(b"gone")
    os.unlink(m / "a" / "gone")
    os.rename(m / "x" / "y" / "file7", m / "a" / "moved7")
    # Times last, leaves first, at odd nanoseconds.
    paths = []
    for dirpath, dirnames, filenames in os.walk(m, topdown=False):
        paths += [os.path.join(dirpath, n) for n in filenames + dirnames]
    for i, p in enumerate(paths + [str(m)]):
        os.utime(p, ns=(1_600_000_000_000_000_000 + i * 1_000_001,
                        1_500_000_000_123_456_789 + i),
                 follow_symlinks=False)
    before = snapshot(m)
    assert len(before) == 27
    clean_umount(v)
    v.drop_caches()
    v.mount()
    after = snapshot(m)
    assert after.keys() == before.keys()
    for k in before:
        assert after[k] == before[k], k
    assert (m / "sparse").read_bytes() == bytes(10 << 20) + b"tail"
    # And the tree is still writable after the remount.
    (m / "a" / "file1").write_bytes(b"changed")
    assert (m / "hard1b").read_bytes() == b"changed"
    os.unlink(m / "a" / "file1")
    assert os.stat(m / "hard1b").st_nlink == 2
    v.remount()
    assert (m / "a" / "b" / "hard1").read_bytes() == b"changed"
    assert os.stat(m / "hard1b").st_nlink == 2
    assert not (m / "a" / "file1").exists()


def test_overwrites_and_truncates_survive_remount(volume_factory):
    v = volume_factory()
    v.mkfs()
    m = v.mount()
    rng = random.Random(7)
    model = {}
    for i in range(8):
        model[f"f{i}"] = bytearray(rng.randbytes(rng.randrange(1, 300000)))
        (m / f"f{i}").write_bytes(model[f"f{i}"])
    for _ in range(200):
        name = f"f{rng.randrange(8)}"
        buf = model[name]
        op = rng.random()
        with open(m / name, "r+b") as f:
            if op < 0.6:
                off = rng.randrange(0, len(buf) + 10000)
                data = rng.randbytes(rng.randrange(1, 20000))
                f.seek(off)
                f.write(data)
                if len(buf) < off:
                    buf.extend(bytes(off - len(buf)))
                buf[off:off + len(data)] = data
            else:
                size = rng.randrange(0, 400000)
                f.truncate(size)
                if size < len(buf):
                    del buf[size:]
                else:
                    buf.extend(bytes(size - len(buf)))
    for n, b in model.items():
        assert (m / n).read_bytes() == bytes(b), n
    clean_umount(v)
    v.mount()
    for n, b in model.items():
        assert (m / n).read_bytes() == bytes(b), n
        assert os.stat(m / n).st_size == len(b)


def test_fragmented_file_extent_chain(volume_factory):
    """Thousands of extents (every other page, two files interleaved)
    go beyond the inline extents into a chain of extent pages; holes
    punched and filled later, a shrink, a remount: all consistent."""
    v = volume_factory()
    v.mkfs()
    m = v.mount()
    n = 3000
    model = {name: bytearray(n * PAGE) for name in ("a", "b")}
    fds = {name: os.open(m / name, os.O_CREAT | os.O_RDWR)
           for name in model}
    try:
        for pg in range(0, n, 2):
            for name, fd in fds.items():
                d = os.urandom(PAGE)
                os.pwrite(fd, d, pg * PAGE)
                model[name][pg * PAGE:(pg + 1) * PAGE] = d
        for name in model:
            del model[name][(n - 1) * PAGE:]
            # Data pages plus the extent chain (170 extents a page).
            pages = os.fstat(fds[name]).st_blocks // (PAGE // 512)
            assert n // 2 < pages <= n // 2 + (n // 2) // 170 + 2, pages
        # Fill some odd pages of "a", punch a range of "b".
        fd = fds["a"]
        for pg in range(1, 1000, 2):
            d = os.urandom(PAGE)
            os.pwrite(fd, d, pg * PAGE)
            model["a"][pg * PAGE:(pg + 1) * PAGE] = d
        os.truncate(m / "b", 2500 * PAGE + 7)
        del model["b"][2500 * PAGE + 7:]
        subprocess.run(["fallocate", "-p", "-o", str(100 * PAGE), "-l",
                        str(1000 * PAGE), str(m / "b")], check=True)
        model["b"][100 * PAGE:1100 * PAGE] = bytes(1000 * PAGE)
    finally:
        for fd in fds.values():
            os.close(fd)
    for name, b in model.items():
        assert (m / name).read_bytes() == bytes(b), name
    clean_umount(v)
    v.mount()
    for name, b in model.items():
        assert (m / name).read_bytes() == bytes(b), name
    # Freeing the fragmented files gives every page back.
    free0 = os.statvfs(m).f_bfree
    blocks = sum(os.stat(m / name).st_blocks for name in model) // 8
    for name in model:
        os.unlink(m / name)
    deadline = time.time() + 5
    while os.statvfs(m).f_bfree < free0 + blocks and time.time() < deadline:
        time.sleep(0.05)
    assert os.statvfs(m).f_bfree >= free0 + blocks


def test_hundred_thousand_entries(volume_factory):
    """A 100k-entry directory: every name created is found, listed once,
    survives a remount with its inode, absent names are absent, and every
    name can be removed again. (How the cost per name stays flat is a
    speed target for bench/, not a timed test.)"""
    v = volume_factory()
    v.mkfs()
    m = v.mount()
    d = m / "big"
    os.mkdir(d)
    n = 100_000
    names = [f"{d}/entry-{i:06d}" for i in range(n)]
    for p in names:
        os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    rng = random.Random(3)
    for i in rng.sample(range(n), 50):
        assert stat.S_ISREG(os.stat(names[i]).st_mode)
    ino = os.stat(names[12345]).st_ino
    assert len(os.listdir(d)) == n
    assert os.stat(d).st_size >= n * 24
    clean_umount(v)
    v.drop_caches()
    v.mount()
    listing = os.listdir(d)
    assert len(listing) == n and len(set(listing)) == n
    assert set(listing) == {os.path.basename(p) for p in names}
    assert os.stat(names[12345]).st_ino == ino
    for i in range(1000):
        assert not os.path.exists(f"{d}/absent-{i}")
        assert not os.path.exists(f"{d}/entry-{n + i:06d}")
    v.drop_caches()                # stat does a LOOKUP for every name
    inos = {os.stat(p).st_ino for p in names}
    assert len(inos) == n          # every name its own file
    # Half removed: the other half is still there, after a remount too.
    for p in names[::2]:
        os.unlink(p)
    v.remount()
    assert sorted(os.listdir(d)) == [os.path.basename(p) for p in names[1::2]]
    for p in names[1::2]:
        os.unlink(p)
    assert os.listdir(d) == []
    os.rmdir(d)
    v.remount()
    assert os.listdir(m) == []


def test_enospc_and_recovery(volume_factory):
    v = volume_factory(size="16M")     # the smallest device size
    v.mkfs()
    m = v.mount()
    keep = {f"keep{i}": os.urandom(50000 * (i + 1)) for i in range(4)}
    for k, data in keep.items():
        (m / k).write_bytes(data)
    os.setxattr(m / "keep0", "user.x", b"attr")
    fd = os.open(m / "big", os.O_CREAT | os.O_WRONLY)
    total = 0
    chunk = os.urandom(1 << 20)
    try:
        with pytest.raises(OSError) as ei:
            for _ in range(1000):
                total += os.write(fd, chunk)
        assert ei.value.errno == errno.ENOSPC
        # Nothing is left, not even a page.
        with pytest.raises(OSError) as ei:
            for _ in range(1000):
                total += os.write(fd, b"p" * PAGE)
        assert ei.value.errno == errno.ENOSPC
    finally:
        os.close(fd)
    assert os.statvfs(m).f_bfree == 0
    assert os.stat(m / "big").st_size == total
    assert total > 20 << 20
    # The other files, their attributes, and the volume's metadata are
    # intact; operations needing space fail cleanly.
    for k, data in keep.items():
        assert (m / k).read_bytes() == data
    assert os.getxattr(m / "keep0", "user.x") == b"attr"
    for fn, args in [(os.symlink, ("target", m / "sl")),
                     (os.setxattr, (m / "keep1", "user.y", b"v")),
                     ((m / "small").write_bytes, (b"s",))]:
        with pytest.raises(OSError) as ei:
            fn(*args)
        assert ei.value.errno == errno.ENOSPC, fn
    fd = os.open(m / "keep2", os.O_RDWR)
    try:
        with pytest.raises(OSError) as ei:
            os.posix_fallocate(fd, 0, 4 << 20)
        assert ei.value.errno == errno.ENOSPC
    finally:
        os.close(fd)
    assert (m / "keep2").read_bytes() == keep["keep2"]
    # Delete the big file: space comes back and writes succeed again.
    os.unlink(m / "big")
    deadline = time.time() + 5
    while os.statvfs(m).f_bfree < total // PAGE and time.time() < deadline:
        time.sleep(0.05)
    assert os.statvfs(m).f_bfree >= total // PAGE
    again = os.urandom(8 << 20)
    (m / "again").write_bytes(again)
    os.symlink("target", m / "sl")
    os.setxattr(m / "keep1", "user.y", b"v")
    clean_umount(v)
    v.mount()
    for k, data in keep.items():
        assert (m / k).read_bytes() == data
    assert (m / "again").read_bytes() == again
    assert os.readlink(m / "sl") == "target"
    assert os.getxattr(m / "keep1", "user.y") == b"v"
    # The file whose first write hit ENOSPC exists, empty.
    assert os.stat(m / "small").st_size == 0
    assert sorted(os.listdir(m)) == sorted(list(keep) +
                                           ["again", "sl", "small"])
    # Fill it once more after the remount: the space accounting held.
    with open(m / "big2", "wb") as f:
        with pytest.raises(OSError) as ei:
            for _ in range(1000):
                f.write(chunk)
                f.flush()
        assert ei.value.errno == errno.ENOSPC
    os.unlink(m / "big2")
    v.remount()
    assert (m / "again").read_bytes() == again


def test_remount_many_times(volume_factory):
    """Repeated mount cycles each add a file; all stay readable."""
    v = volume_factory()
    v.mkfs()
    v.mount()
    contents = {}
    for i in range(8):
        data = os.urandom(1000 * (i + 1))
        (v.mnt / f"cycle{i}").write_bytes(data)
        contents[f"cycle{i}"] = data
        clean_umount(v)
        v.mount()
        for n, dta in contents.items():
            assert (v.mnt / n).read_bytes() == dta
