# SPDX-License-Identifier: MIT
"""A daxguard mount exported by NFS-Ganesha through FSAL_VFS (issue 33),
read and written with libnfs's user-space tools over NFSv4 on
127.0.0.1, on a port of its own; Ganesha restarted (the NFS file
handles it gives stay the same); then daxguard and Ganesha restarted
and the same paths read again.

FSAL_VFS serves the exported filesystem by file handles
(name_to_handle_at / open_by_handle_at on the daxguard mount), so this
is those handles under a real exporter. NFSv4 only: Ganesha's NFSv3
needs rpcbind (without it Ganesha exits after "Cannot register NFS V3
on TCP"); NFSv4 registers too, but goes on without it. Writes are
under 4 KiB a file: libnfs-utils 4.0's nfs-cp fails any NFSv4 write of
4 KiB or more ("Failed to write to dest file"), to a tmpfs export as
much as to daxguard.

Opt-in: skipped, saying why, without root, nfs-ganesha, nfs-ganesha-vfs
or libnfs-utils."""
import glob
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[0] / "e2e"))

sys.path.insert(0, str(HERE))

from conftest import DAEMON, MKFS, Volume  # noqa: E402
from dgfault import fsck  # noqa: E402
import gluster  # noqa: E402
import libnfs  # noqa: E402

FSAL_VFS = "/usr/lib/*/ganesha/libfsalvfs.so"


def skip_reason():
    if os.geteuid() != 0:
        return "needs root (ganesha.nfsd, open_by_handle_at)"
    missing = [t for t in ("ganesha.nfsd", "nfs-cp", "nfs-cat", "nfs-ls")
               if not shutil.which(t)]
    if not glob.glob(FSAL_VFS):
        missing.append("libfsalvfs.so")
    if libnfs.load() is None:
        missing.append("libnfs.so.13")
    if missing:
        return ("NFS-Ganesha or libnfs-utils is not installed (missing "
                + ", ".join(missing) + "): apt-get install nfs-ganesha "
                "nfs-ganesha-vfs libnfs-utils")
    for b in (MKFS, DAEMON):
        if not b.exists():
            return f"{b} is not built"
    return None


pytestmark = pytest.mark.skipif(skip_reason() is not None,
                                reason=skip_reason() or "")

CONF = """\
NFS_CORE_PARAM {{
	Bind_addr = 127.0.0.1;
	NFS_Port = {port};
	Protocols = 4;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Enable_UDP = false;
}}
NFSv4 {{
	Graceless = true;
	RecoveryRoot = {recovery};
}}
EXPORT {{
	Export_Id = 1;
	Path = {path};
	Pseudo = /dg;
	Access_Type = RW;
	Squash = No_Root_Squash;
	Protocols = 4;
	SecType = sys;
	FSAL {{ Name = VFS; }}
}}
LOG {{ Default_Log_Level = EVENT; }}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ganesha:
    def __init__(self, tmp, export):
        self.tmp = tmp
        self.port = free_port()
        (tmp / "recovery").mkdir()
        self.conf = tmp / "ganesha.conf"
        self.conf.write_text(CONF.format(port=self.port, path=export,
                                         recovery=tmp / "recovery"))
        self.log = tmp / "ganesha.log"
        self.proc = None

    def url(self, path=""):
        return (f"nfs://127.0.0.1/dg/{path}?version=4"
                f"&nfsport={self.port}")

    def start(self):
        self.proc = subprocess.Popen(
            ["ganesha.nfsd", "-F", "-f", str(self.conf), "-L", str(self.log),
             "-p", str(self.tmp / "ganesha.pid")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("ganesha.nfsd exited:\n"
                                     + self.log.read_text(errors="replace"))
            p = nfs("nfs-ls", self.url(), check=False)
            if p.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise AssertionError("Ganesha did not serve in 60 s: "
                                     + p.stderr)
            time.sleep(0.3)

    def stop(self):
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        gluster.wait_or_kill(self.proc)
        self.proc = None


def nfs(*cmd, check=True):
    p = subprocess.run(list(cmd), capture_output=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({p.returncode}): "
                             f"{p.stdout[-500:]!r} {p.stderr[-500:]!r}")
    return p


def sha(b):
    return hashlib.sha256(b).hexdigest()


@pytest.fixture
def exported(tmp_path):
    vol = Volume(tmp_path, ndev=3, size="48M", parity=1)
    g = None
    try:
        vol.mkfs()
        vol.mount()
        export = vol.mnt / "export"
        export.mkdir()
        g = Ganesha(tmp_path, export)
        yield vol, g
    finally:
        if g is not None:
            g.stop()
        vol.cleanup()


def read_all(g, names):
    return {n: sha(nfs("nfs-cat", g.url(n)).stdout) for n in names}


def test_ganesha_vfs_export_of_daxguard(exported, tmp_path):
    vol, g = exported
    export = vol.mnt / "export"
    want = {}
    # Written on the server side: large files, read over NFS.
    for i, n in enumerate([3_000_000, 700_000, 65_536]):
        data = os.urandom(n)
        (export / f"server{i}.bin").write_bytes(data)
        want[f"server{i}.bin"] = sha(data)
    (export / "sub").mkdir()
    g.start()
    # Written over NFS (under 4 KiB each: see the docstring).
    for i in range(3):
        data = os.urandom(1000 + i * 1000)
        src = tmp_path / f"src{i}"
        src.write_bytes(data)
        nfs("nfs-cp", str(src), g.url(f"client{i}.txt"))
        want[f"client{i}.txt"] = sha(data)
        assert sha((export / f"client{i}.txt").read_bytes()) == sha(data)
    listing = nfs("nfs-ls", g.url()).stdout.decode()
    for name in list(want) + ["sub"]:
        assert name in listing, listing
    assert read_all(g, want) == want

    # Ganesha restarted, daxguard mounted throughout: the NFS file
    # handles it gives are the same, so a client's handles hold.
    lib = libnfs.load()
    handles = {n: libnfs.file_handle(lib, g.url(n)) for n in want}
    g.stop()
    g.start()
    assert {n: libnfs.file_handle(lib, g.url(n)) for n in want} == handles
    assert read_all(g, want) == want

    # daxguard and Ganesha restarted (Ganesha holds the export open, so
    # the daemon can only go with it): the same paths, the same bytes.
    # Not the same handles, necessarily: FUSE's statfs f_fsid is 0, so
    # Ganesha puts the mount's device number into its handles, and the
    # kernel numbers each new mount anew (docs/cluster.md).
    g.stop()
    vol.umount()
    vol.mount()
    g.start()
    assert read_all(g, want) == want
    nfs("nfs-cp", str(tmp_path / "src0"), g.url("sub/after.txt"))
    assert (export / "sub" / "after.txt").read_bytes() == \
        (tmp_path / "src0").read_bytes()

    g.stop()
    vol.umount()
    rc, _, p = fsck(vol.devs, "-n")
    assert rc == 0, p.stdout + p.stderr
    assert vol.unexpected_log_lines() == []
