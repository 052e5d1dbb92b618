# SPDX-License-Identifier: MIT
"""Device rebuild: a missing device, or a blank, truncated or stale image
in its slot, is rebuilt completely from parity by fsck -y."""
import itertools
import os
import shutil

import pytest

from dgfault import fsck, inject, make_tree, manifest


def populate(v, seed=2):
    v.mkfs()
    v.mount()
    make_tree(v.mnt, seed=seed, small=30, large=1, frag=False)
    want = manifest(v.mnt)
    v.umount()
    return want


def lose(dev, how, stale_copy=None):
    if how == "removed":
        dev.unlink()
    elif how == "blank":
        size = dev.stat().st_size
        dev.unlink()
        with open(dev, "wb") as f:
            f.truncate(size)
    elif how == "truncated":
        os.truncate(dev, dev.stat().st_size // 3)
    elif how == "empty":
        os.truncate(dev, 0)
    elif how == "stale":
        shutil.copyfile(stale_copy, dev)


def rebuild_and_verify(v, want, lost):
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 4, p.stdout + p.stderr
    missing = sorted(f["device"] for f in rep["findings"]
                     if f["code"] == "PR_0_DEV_MISSING")
    assert missing == sorted(lost)
    rc, rep, p = fsck(v.devs, "-y", json_out=True)
    assert rc == 1, p.stdout + p.stderr
    rebuilt = sorted(f["device"] for f in rep["findings"]
                     if f["code"] == "PR_0_DEV_REBUILT")
    assert rebuilt == sorted(lost)
    assert all(f["fixed"] for f in rep["findings"])
    rc, _, p = fsck(v.devs, "-n")
    assert rc == 0, p.stdout
    v.mount()
    assert manifest(v.mnt) == want
    v.umount()


@pytest.mark.parametrize("pos", [0, 1, 2, 3])
@pytest.mark.parametrize("how", ["removed", "blank", "truncated", "empty",
                                 "stale"])
def test_rebuild_one_device_parity1(volume_factory, tmp_path, pos, how):
    v = volume_factory(ndev=4, size="32M", parity=1)
    stale = None
    if how == "stale":
        v.mkfs()
        stale = tmp_path / "stale.img"
        shutil.copyfile(v.devs[pos], stale)
        want = None
        v.mount()
        make_tree(v.mnt, seed=4, small=30, large=1, frag=False)
        want = manifest(v.mnt)
        v.umount()
    else:
        want = populate(v)
    lose(v.devs[pos], how, stale)
    rebuild_and_verify(v, want, [pos])


@pytest.mark.parametrize("pair", list(itertools.combinations(range(4), 2)))
def test_rebuild_two_devices_parity2(volume_factory, pair):
    v = volume_factory(ndev=4, size="32M", parity=2)
    want = populate(v)
    for i, pos in enumerate(pair):
        lose(v.devs[pos], ["removed", "blank"][i])
    rebuild_and_verify(v, want, list(pair))


@pytest.mark.parametrize("pos", [0, 2])
def test_rebuild_one_device_parity2(volume_factory, pos):
    v = volume_factory(ndev=4, size="32M", parity=2)
    want = populate(v)
    lose(v.devs[pos], "blank")
    rebuild_and_verify(v, want, [pos])


def test_inject_device_loss_and_stale(volume_factory):
    v = volume_factory(ndev=4, size="32M")
    want = populate(v)
    for seed, kind in [(1, "device-loss"), (2, "stale-device"),
                       (3, "device-loss"), (4, "device-loss")]:
        rep, _ = inject(v.devs, kind, seed=seed)
        rebuild_and_verify(v, want, [rep["changes"][0]["device"]])


def test_too_many_missing_is_uncorrectable(volume_factory):
    v = volume_factory(ndev=4, size="32M", parity=1)
    populate(v)
    lose(v.devs[0], "blank")
    lose(v.devs[2], "blank")
    rc, _, p = fsck(v.devs, "-y")
    assert rc == 8, p.stdout + p.stderr
    assert "missing" in p.stderr
