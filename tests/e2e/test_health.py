# SPDX-License-Identifier: MIT
"""A status that does not hide lost data: after a fault beyond parity the
health says so and names the file, scrub exits 3 (as btrfs scrub does),
`clear` resets the counters, and errors go away once what they name is
gone: a deleted file is no longer reported, and fsck -y gives its freed
page fresh contents instead of reporting it bad for ever."""
import errno
import json
import os
import subprocess

import pytest

from conftest import CTL, run
from dgfault import fsck, inject


def lose_a_page_of(v, name="big", size=3 << 20):
    """Two faults in one row of the file's data (beyond parity 1), the
    other page being the file's own or parity: (inject report)."""
    for seed in range(1, 30):
        v.mkfs()
        v.mount()
        (v.mnt / name).write_bytes(os.urandom(size))
        (v.mnt / "small").write_bytes(b"small file\n")
        v.umount()
        rep, _ = inject(v.devs, "zero", "data", seed=seed,
                        extra=["--file", "/" + name, "--count", "2",
                               "--same-row"])
        ch = rep["changes"]
        if len(ch) == 2 and all(c["structure"] == "parity" or
                                c.get("file") == "/" + name for c in ch):
            return rep
    pytest.fail("no seed put both faults in the file's row")


def ctl(v, *args):
    return run([CTL, v.mnt] + list(args), check=False)


@pytest.fixture
def lost(volume_factory):
    v = volume_factory(ndev=4, size="32M", parity=1)
    rep = lose_a_page_of(v)
    v.expect_log(r"fault|unrecoverable|read error|EIO|Input/output")
    v.mount()
    return v, rep


def test_status_names_the_file_that_lost_data(lost):
    v, _ = lost
    with pytest.raises(OSError) as e:
        (v.mnt / "big").read_bytes()
    assert e.value.errno == errno.EIO
    assert (v.mnt / "small").read_bytes() == b"small file\n"
    st = v.status()
    assert st["health"] == "data_lost" and st["data_lost"] is True, st
    assert st["needs_fsck"] is False and st["damaged_inodes"] == 1, st
    assert st["faults"]["unrecoverable"] >= 1, st
    [f] = st["damaged_files"]
    assert f["path"] == "/big" and f["lost_pages"] >= 1 and \
        not f["metadata"], st
    off = f["first_lost_offset"]
    assert off % 4096 == 0
    with open(v.mnt / "big", "rb") as fh:
        with pytest.raises(OSError) as e:
            os.pread(fh.fileno(), 4096, off)
        assert e.value.errno == errno.EIO
    p = ctl(v, "status")
    assert p.returncode == 0
    assert "\nhealth errors: data lost (4 of 4 devices present)\n" in p.stdout
    assert ("data lost: 1 file has pages that cannot be read: restore or "
            "delete it (status -v lists them)\n") in p.stdout
    p = ctl(v, "status", "-v")
    assert p.returncode == 0
    n = f["lost_pages"]
    assert (f"damaged files:\n  /big: {n} page{'s' if n > 1 else ''} lost, "
            f"the first at offset {off}\n") in p.stdout, p.stdout


def test_scrub_exits_3_when_data_is_lost(lost):
    v, _ = lost
    p = ctl(v, "scrub")
    assert p.returncode == 3, p.stdout + p.stderr
    assert ", unrecoverable 0," not in p.stdout
    n = v.status()["damaged_files"][0]["lost_pages"]
    assert (f"data lost: {n} page{'s' if n > 1 else ''} in use cannot be "
            f"read: 'daxguard-ctl {v.mnt} status -v' names the files\n") \
        in p.stdout, p.stdout
    p = ctl(v, "scrub", "--json")
    assert p.returncode == 3
    r = json.loads(p.stdout)
    assert r["unrecoverable"] >= 1 and r["unrecoverable_in_use"] >= 1
    assert v.status()["damaged_files"][0]["path"] == "/big"


def test_clear_resets_counters(lost):
    v, _ = lost
    ctl(v, "scrub")
    assert v.status()["faults"]["unrecoverable"] > 0
    p = ctl(v, "clear")
    assert p.returncode == 0 and p.stdout == "cleared\n"
    st = v.status()
    assert st["faults"] == {"detected": 0, "repaired": 0,
                            "unrecoverable": 0, "recovered": 0}, st
    assert st["health"] == "ok" and st["damaged_files"] == [], st
    # The page is still bad: the next scrub finds it and names it again.
    assert ctl(v, "scrub").returncode == 3
    assert v.status()["damaged_files"][0]["path"] == "/big"


def events(v):
    p = ctl(v, "events", "--json")
    assert p.returncode == 0, p
    return [json.loads(x) for x in p.stdout.splitlines()]


def assert_gone_for_good(v):
    """No scrub, and no fsck after the unmount, finds anything left."""
    p = ctl(v, "scrub", "--json")
    r = json.loads(p.stdout)
    assert p.returncode == 0 and r["detected"] == 0 and \
        r["unrecoverable"] == 0, p.stdout
    v.umount()
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0 and rep["findings"] == [], p.stdout + p.stderr
    v.mount()
    assert (v.mnt / "small").read_bytes() == b"small file\n"
    assert v.status()["health"] == "ok"


def test_errors_go_away_with_the_deleted_file(lost):
    """Issue 16's leftover: once the file is deleted, its unreadable page
    is given fresh contents while the volume stays mounted, not after an
    offline fsck -y."""
    v, _ = lost
    assert ctl(v, "scrub").returncode == 3
    assert v.status()["health"] == "data_lost"
    os.unlink(v.mnt / "big")
    st = v.status()
    assert st["health"] == "ok" and st["damaged_files"] == [] and \
        st["damaged_inodes"] == 0 and st["data_lost"] is False, st
    p = ctl(v, "status")
    assert "\nhealth ok (4 of 4 devices present)\n" in p.stdout
    assert "data lost" not in p.stdout
    reset = [e for e in events(v) if e["type"] == "free-page-reset"]
    assert reset and reset[0]["detail"] == ("its file gave it up: "
                                            "rewritten as zeros with its "
                                            "row"), reset
    assert_gone_for_good(v)


def test_scrub_resets_a_free_page_no_one_read(lost):
    """The file is deleted before anything read the bad page: the scrub
    meets it free, resets it (exit 0: nothing is lost) and says so."""
    v, _ = lost
    os.unlink(v.mnt / "big")
    p = ctl(v, "scrub", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(p.stdout)
    assert r["unrecoverable"] >= 1 and r["unrecoverable_in_use"] == 0, r
    assert r["free_pages_reset"] >= 1 and \
        r["unrecoverable_not_reset"] == 0, r
    ev = events(v)
    reset = [e for e in ev if e["type"] == "free-page-reset"]
    assert reset and reset[0]["detail"].startswith("unreadable, and no "
                                                   "file holds it"), ev
    lost_ev = [e for e in ev if e["type"] == "fault-unrecoverable" and
               e["what"] == "data"]
    assert {e["vpn"] for e in reset} <= {e["vpn"] for e in lost_ev}, ev
    assert_gone_for_good(v)


def test_fsck_never_zeroes_a_page_a_file_still_uses(volume_factory):
    """fsck -y with the file still there: the page stays lost (exit 4),
    it is not reset to zeros behind the file's back."""
    v = volume_factory(ndev=4, size="32M", parity=1)
    lose_a_page_of(v)
    rc, rep, p = fsck(v.devs, "-y", json_out=True)
    assert rc & 4, p.stdout
    assert "free page reset" not in {f["action"] for f in rep["findings"]}
    v.expect_log(r"fault|unrecoverable|read error")
    v.mount()
    with pytest.raises(OSError) as e:
        (v.mnt / "big").read_bytes()
    assert e.value.errno == errno.EIO


def test_ctl_usage(mounted):
    for args in (["status", "--bogus"], ["scrub", "-v"], ["clear", "--json"],
                 ["frob"]):
        p = run([CTL, mounted.mnt] + args, check=False)
        assert p.returncode == 2, args
        assert "usage: daxguard-ctl" in p.stderr


def test_ctl_on_a_mount_whose_daemon_died(volume_factory):
    v = volume_factory(ndev=2, size="32M")
    v.mkfs()
    v.mount()
    v.expect_log(r".")
    try:
        v.daemon.kill()
        v.daemon.wait()
        p = run([CTL, v.mnt, "status"], check=False)
        assert p.returncode == 1
        assert p.stderr == (
            f"daxguard-ctl: '{v.mnt}': Transport endpoint is not connected: "
            f"its daemon is gone; run 'fusermount3 -u {v.mnt}' and mount it "
            f"again\n")
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(v.mnt)],
                       capture_output=True)
        v.daemon = None
        v.log.close()


def test_read_only_recovers_but_does_not_call_it_repaired(volume_factory):
    """A bad page read on a mount that writes nothing comes back from
    parity, but the media keeps the bad page: status and events say "recovered",
    never "repaired"; the same read on a writable mount repairs it."""
    v = volume_factory(ndev=5, size="32M", parity=2)
    v.mkfs()
    v.mount()
    data = os.urandom(1 << 20)
    (v.mnt / "f").write_bytes(data)
    v.umount()
    rep, _ = inject(v.devs, "bitflip", "data", seed=5, extra=["--file", "/f"])
    hit = {c["device"] for c in rep["changes"]}
    left_out = next(d for d in range(5) if d not in hit)
    v.expect_log(r"fault|missing|degraded")
    # -o degraded,ro is the mount that writes nothing (a plain -o ro
    # opens the volume as always and repairs, as ext4 replays).
    v.mount("degraded,ro", devlist=":".join(
        str(d) for i, d in enumerate(v.devs) if i != left_out))
    assert (v.mnt / "f").read_bytes() == data
    f = v.status()["faults"]
    assert f["repaired"] == 0 and f["recovered"] >= 1, f
    ev = [json.loads(x) for x in
          ctl(v, "events", "--json").stdout.splitlines()]
    types = {e["type"] for e in ev if "type" in e}
    assert "fault-recovered" in types and "fault-repaired" not in types, ev
    assert "recovered but not repaired" in ctl(v, "status").stdout
    v.umount()
    rc, _, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 4, p.stdout		# still bad on the media
    v.mount()
    v.drop_caches()
    assert (v.mnt / "f").read_bytes() == data
    f = v.status()["faults"]
    assert f["repaired"] >= 1 and f["recovered"] == 0, f
    v.umount()
    rc, _, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0, p.stdout
