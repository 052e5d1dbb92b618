# SPDX-License-Identifier: MIT
"""daxguard-ctl replace (issue 17): a device rebuilt onto a new file while
the volume stays mounted and serves reads and writes -- a present device
under a running fio writer that verifies what it wrote, a missing device
of a degraded mount, a daemon killed midway that resumes at the next
mount; a file that holds a file system is refused, untouched. At the end
the volume mounts with the new file in the device list, fsck -n is clean
and every file is bit-exact."""
import hashlib
import json
import os
import subprocess
import time

import pytest

from conftest import CTL, run
from dgfault import fsck, replace_status, wait_replace


def sha(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


def ctl(v, *args):
    return run([CTL, v.mnt] + [str(a) for a in args], check=False)


def fill(v, n=10):
    files = {}
    for i in range(n):
        data = os.urandom(300000 * (i + 1))
        (v.mnt / f"f{i}").write_bytes(data)
        files[f"f{i}"] = hashlib.sha256(data).hexdigest()
    return files


def check_files(v, files):
    v.drop_caches()
    for n, h in files.items():
        assert sha(v.mnt / n) == h, n


def fio_writer(v, seconds):
    """fio writing and verifying (crc32c) a file for about `seconds`."""
    return subprocess.Popen(
        ["fio", "--name=w", f"--filename={v.mnt}/fio.dat", "--size=8M",
         "--bs=4k", "--rw=randwrite", "--ioengine=psync",
         "--verify=crc32c", "--do_verify=1", "--verify_fatal=1",
         f"--runtime={seconds}", "--time_based=0", "--loops=1000",
         "--verify_state_save=0", "--output-format=terse"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def after_replace(v, dev, new, files):
    """Unmount, take the new file into the list, fsck -n, remount, check."""
    v.umount()
    old = v.devs[dev]
    v.devs[dev] = new
    if old.exists():
        # The old device is behind the volume now: not used again.
        old.unlink()
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    v.mount()
    st = v.status()
    assert st["degraded"] is False and st["health"] == "ok", st
    assert st["device_table"][dev]["path"] == str(new), st
    check_files(v, files)


@pytest.mark.parametrize("missing", [False, True])
def test_replace_under_fio(volume_factory, tmp_path, missing):
    v = volume_factory(ndev=4, size="64M", parity=1)
    v.mkfs()
    v.mount()
    files = fill(v)
    dev = 1
    if missing:
        v.umount()
        os.unlink(v.devs[dev])
        v.mount("degraded")
    new = v.devs[dev].with_name(v.devs[dev].stem + "-new.img")
    fio = fio_writer(v, 8)
    try:
        time.sleep(1)
        # 64 MiB at 24 MB/s: a few seconds, fio writing throughout.
        p = ctl(v, "replace", dev, new, "--rate", 24)
        assert p.returncode == 0, p.stdout + p.stderr
        assert p.stdout == f"replacing device {dev} onto {new}\n", p.stdout
        st = v.status()
        assert st["device_table"][dev]["state"] == "replacing", st
        assert st["replace"]["state"] == "running", st
        text = ctl(v, "status").stdout
        assert f"replace running: device {dev} onto {new}" in text, text
        # A second one is refused while this one runs.
        p = ctl(v, "replace", 2, str(new) + "2")
        assert p.returncode == 1 and "is being replaced" in p.stdout, p
        st = wait_replace(v)
        assert st["state"] == "finished" and st["pages_lost"] == 0, st
        assert fio.poll() is None, "fio ended before the replace did"
    finally:
        out, err = fio.communicate(timeout=120)
    assert fio.returncode == 0, out + err
    files["fio.dat"] = sha(v.mnt / "fio.dat")
    st = v.status()
    assert st["degraded"] is False, st
    assert st["device_table"][dev] == dict(st["device_table"][dev],
                                           state="online", path=str(new))
    ev = [json.loads(x) for x in ctl(v, "events", "--json").stdout.split("\n")
          if x]
    done = [e for e in ev if e["type"] == "device-replaced"]
    assert len(done) == 1 and done[0]["device"] == dev, ev
    # Writes after the end land on the new device.
    (v.mnt / "after").write_bytes(b"after the replace\n" * 1000)
    files["after"] = sha(v.mnt / "after")
    after_replace(v, dev, new, files)


def test_replace_with_discard(volume_factory):
    """-o discard's blanker gives deleted files' rows back while a replace
    runs (fs/volume/blank.c): it passes them by for the replace's
    duration, quietly, and the files written meanwhile, the replace and
    fsck come out as without it."""
    v = volume_factory(ndev=4, size="64M", parity=1)
    v.mkfs()
    v.mount("discard")
    files = fill(v)
    dev = 1
    new = v.devs[dev].with_name(v.devs[dev].stem + "-new.img")
    p = ctl(v, "replace", dev, new, "--rate", 24)
    assert p.returncode == 0, p.stdout + p.stderr
    i = 0
    while replace_status(v).get("state") == "running":
        name = f"f{i % 10}"
        (v.mnt / name).unlink()
        data = os.urandom(200000 + 4096 * i)
        (v.mnt / name).write_bytes(data)
        files[name] = hashlib.sha256(data).hexdigest()
        i += 1
    st = wait_replace(v)
    assert st["state"] == "finished" and st["pages_lost"] == 0, st
    assert i > 0
    # Freed once the replace is over: given back again.
    (v.mnt / "f0").unlink()
    del files["f0"]
    v.wait_blanked()
    st = v.status()
    assert st["freed_rows_blanked"] > 0, st
    check_files(v, files)
    assert "blanking freed rows" not in v.read_log()
    after_replace(v, dev, new, files)


@pytest.mark.parametrize("missing", [False, True])
def test_replace_killed_midway_resumes(volume_factory, missing):
    v = volume_factory(ndev=4, size="128M", parity=1)
    v.mkfs()
    v.mount()
    files = fill(v, 12)
    dev = 2
    opts = ()
    if missing:
        v.umount()
        os.unlink(v.devs[dev])
        opts = ("degraded",)
        v.mount(*opts)
    new = v.devs[dev].with_name(v.devs[dev].stem + "-new.img")
    p = ctl(v, "replace", str(v.devs[dev]), new, "--rate", 8)
    assert p.returncode == 0, p.stdout + p.stderr
    # Past the first saved position (every 2 s), then a crash. 128 MiB
    # at 8 MB/s: some 17 s, so it is still running.
    deadline = time.time() + 30
    while replace_status(v)["next_row"] == 0:
        assert time.time() < deadline
        time.sleep(0.2)
    time.sleep(2.5)
    before = replace_status(v)
    assert before["state"] == "running", before
    (v.mnt / "during").write_bytes(os.urandom(1 << 20))
    os.sync()
    files["during"] = sha(v.mnt / "during")
    v.kill9()
    v.mount(*opts)
    st = replace_status(v)
    assert st["state"] == "running", st
    assert st["next_row"] >= before["next_row"] // 2 > 0, (before, st)
    types = [json.loads(x)["type"] for x in
             ctl(v, "events", "--json").stdout.split("\n") if x]
    assert "replace-resumed" in types, types
    st = wait_replace(v, timeout=180)
    assert st["state"] == "finished" and st["pages_lost"] == 0, st
    after_replace(v, dev, new, files)


def test_replace_onto_a_file_system_is_refused(volume_factory, tmp_path):
    v = volume_factory(ndev=4, size="32M", parity=1)
    v.mkfs()
    v.mount()
    (v.mnt / "f").write_bytes(b"x" * 100000)
    ext4 = tmp_path / "ext4.img"
    with open(ext4, "wb") as f:
        f.truncate(32 << 20)
    run(["mkfs.ext4", "-q", "-F", str(ext4)])
    before = sha(ext4)
    p = ctl(v, "replace", 1, ext4)
    assert p.returncode == 1, p
    assert p.stdout.startswith(f"error: '{ext4}' contains an ext4 file "
                               f"system"), p.stdout
    assert "refusing to replace device 1" in p.stdout, p.stdout
    assert "nothing was written" in p.stdout, p.stdout
    assert sha(ext4) == before
    assert os.path.getsize(ext4) == 32 << 20
    assert replace_status(v)["state"] == "none"
    st = v.status()
    assert [d["state"] for d in st["device_table"]] == ["online"] * 4, st
    # Bad input: a clear message and a non-zero exit, nothing started.
    p = ctl(v, "replace", 7, tmp_path / "x.img")
    assert p.returncode == 1 and "no device 7" in p.stdout, p
    p = ctl(v, "replace", tmp_path / "nodev.img", tmp_path / "x.img")
    assert p.returncode == 1 and "is not a device of this volume" in \
        p.stdout, p
    p = ctl(v, "replace", 1)
    assert p.returncode == 2 and "replace takes DEV NEWPATH" in p.stderr, p
    p = ctl(v, "replace", 1, tmp_path / "x.img", "--rate", "fast")
    assert p.returncode == 2, p
    assert not (tmp_path / "x.img").exists()
    # A device of the volume itself, in use: refused.
    p = ctl(v, "replace", 1, v.devs[0])
    assert p.returncode == 1, p
    assert (v.mnt / "f").read_bytes() == b"x" * 100000
