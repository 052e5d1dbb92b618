# SPDX-License-Identifier: MIT
"""One directory of 20,000 names (issue 34): creates, renames, unlinks
and listings agree with each other and with the media after a remount,
a listing interleaved with unlinks hands out every name once, and the
work of a change (rows the journal patches) does not grow with the
directory."""
import os

N = 20000


def names(lo, hi, prefix="f"):
    return [f"{prefix}{i:06d}" for i in range(lo, hi)]


def create(d, ns):
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY
    for n in ns:
        os.close(os.open(os.path.join(d, n), flags, 0o644))


def rows_patched(vol):
    return vol.status()["rows_patched"]


def patched_per_change(vol, d, tag, count=200):
    """Rows patched per create and per unlink of count fresh names in d."""
    ns = names(0, count, f"{tag}-")
    r0 = rows_patched(vol)
    create(d, ns)
    r1 = rows_patched(vol)
    for n in ns:
        os.unlink(os.path.join(d, n))
    r2 = rows_patched(vol)
    return (r1 - r0) / count, (r2 - r1) / count


def test_big_directory(volume_factory):
    vol = volume_factory(size="128M")
    vol.mkfs()
    mnt = vol.mount()
    st = os.statvfs(mnt)
    used0 = st.f_files - st.f_ffree     # the root, and whatever mkfs made
    small = mnt / "small"
    big = mnt / "big"
    small.mkdir()
    big.mkdir()
    # The cost of a change in a directory of one name...
    create(small, ["x"])
    c_small, u_small = patched_per_change(vol, small, "p")

    create(big, names(0, N))
    assert len(os.listdir(big)) == N
    # ...and in one of 20,000: the same rows, within a margin for where
    # the new records and inodes happen to fall.
    c_big, u_big = patched_per_change(vol, big, "p")
    print(f"rows patched per create {c_small:.2f} -> {c_big:.2f}, "
          f"per unlink {u_small:.2f} -> {u_big:.2f}")
    assert c_big <= c_small * 1.5 + 1, (c_small, c_big)
    assert u_big <= u_small * 1.5 + 1, (u_small, u_big)

    # Renames within the directory and out of it, unlinks of a third.
    want = set(names(0, N))
    for i in range(0, N, 7):
        old = f"f{i:06d}"
        new = f"renamed-{i:06d}-with-a-longer-name"
        os.rename(big / old, big / new)
        want.discard(old)
        want.add(new)
    moved = 0
    for i in range(3, N, 11):
        if f"f{i:06d}" in want:
            os.rename(big / f"f{i:06d}", small / f"moved-{i:06d}")
            want.discard(f"f{i:06d}")
            moved += 1
    for i in range(1, N, 3):
        n = f"f{i:06d}"
        if n in want:
            os.unlink(big / n)
            want.discard(n)
    # New names reuse the freed records.
    create(big, names(0, 2000, "again-"))
    want.update(names(0, 2000, "again-"))
    assert set(os.listdir(big)) == want
    for n in list(want)[:500]:
        assert (big / n).is_file()

    vol.remount()
    assert set(os.listdir(big)) == want
    assert sorted(os.listdir(small))[0] == "moved-000003"

    # rm -rf's pattern: list a batch, unlink it, list on from the same
    # stream. Every name comes once, none is missed.
    seen = []
    with os.scandir(big) as it:
        batch = []
        for e in it:
            batch.append(e.name)
            if len(batch) == 1000:
                for n in batch:
                    os.unlink(big / n)
                seen += batch
                batch = []
        for n in batch:
            os.unlink(big / n)
        seen += batch
    assert len(seen) == len(set(seen))
    assert set(seen) == want
    assert os.listdir(big) == []
    os.rmdir(big)
    vol.remount()
    assert not big.exists()
    st = os.statvfs(mnt)
    # small, x and the moved files: nothing else holds an inode.
    assert st.f_files - st.f_ffree == used0 + 2 + moved, "inodes leaked"
