# SPDX-License-Identifier: MIT
"""Block devices (loop devices over image files) as volume devices."""
import subprocess

import pytest

from conftest import MKFS, run


@pytest.fixture
def loops(tmp_path):
    """Four loop devices over 32 MiB images; always detached again."""
    devs = []
    try:
        for i in range(4):
            img = tmp_path / f"blk{i}.img"
            with open(img, "wb") as f:
                f.truncate(32 << 20)
            p = subprocess.run(["losetup", "-f", "--show", str(img)],
                               capture_output=True, text=True)
            if p.returncode != 0:
                pytest.skip(f"no loop devices here: {p.stderr.strip()}")
            devs.append(p.stdout.strip())
        yield devs
    finally:
        for d in devs:
            subprocess.run(["losetup", "-d", d], capture_output=True)


def test_block_devices(volume_factory, loops):
    v = volume_factory(ndev=0)   # no image files of its own to remove
    out = run([MKFS, "--force"] + loops).stdout
    assert "devices 4, parity 1" in out
    v.mount(devlist=",".join(loops))
    data = bytes(range(256)) * 4096
    (v.mnt / "f").write_bytes(data)
    v.umount()
    # Any order: the superblocks say which device is which.
    v.mount(devlist=",".join(reversed(loops)))
    assert (v.mnt / "f").read_bytes() == data
    scrub = v.ctl("scrub", "--json").stdout
    assert '"unrecoverable":0' in scrub and '"parity_mismatch":0' in scrub
