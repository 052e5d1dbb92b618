"""The filesystems under test: how to set each one up and always tear it down.

Every system follows the same life cycle, driven by `mounted()`:

    check()     prerequisites present?  raises Skip(reason) if not
    create()    make images / loop devices / pools and format them
    start()     mount at self.mnt (start() again after stop() remounts)
    stop()      clean unmount, so faults can be written into the images
    teardown()  best effort, idempotent: lazy-unmount, kill daemons, detach
                loop devices, export pools, delete images.  Always called,
                also when check/create/start raised or on SIGINT.

Systems that keep data in device images list them in self.images; the
repair workload writes its faults there (see repair.py).
"""

import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import time

from .util import Skip, is_mounted, log, run, wait_for, which

NIMAGES = 4


class Config:
    """What every system needs to know about this run."""

    def __init__(self, work_root, build_dir, image_size, bin_dir, repo_root=None):
        self.work_root = work_root      # on /dev/shm: images and mount points
        self.build_dir = build_dir      # meson build dir with daxguard binaries
        self.image_size = image_size    # bytes per device image
        self.bin_dir = bin_dir          # helpers compiled by the harness
        self.repo_root = repo_root


class System:
    name = "?"
    family = "?"          # groups systems for plots: daxguard, fuse, btrfs, zfs, tmpfs
    description = ""
    redundancy = "none"   # human-readable: what protects the data
    checksums = False
    uses_images = False   # keeps its data in self.images (device images)

    def __init__(self, cfg):
        self.cfg = cfg
        self.dir = os.path.join(cfg.work_root, self.name)
        self.mnt = os.path.join(self.dir, "mnt")
        self.images = []
        self.proc = None          # FUSE daemon we started in the foreground
        self._undo = []           # (description, callable) run in reverse by teardown
        self.teardown_errors = []
        self.torn_down = False
        self.degraded = False

    # -- life cycle -------------------------------------------------------
    def check(self):
        pass

    def create(self):
        pass

    def start(self, degraded=False):
        raise NotImplementedError

    def stop(self):
        raise NotImplementedError

    def info(self):
        """Facts recorded in results.json (options, versions)."""
        return {"description": self.description, "redundancy": self.redundancy,
                "family": self.family,
                "checksums": self.checksums, "images": len(self.images),
                "image_size": self.cfg.image_size if self.images else None}

    def _mkdirs(self):
        os.makedirs(self.mnt, exist_ok=True)
        self._on_teardown("remove " + self.dir, lambda: shutil.rmtree(self.dir, ignore_errors=True))

    def _make_images(self, n=NIMAGES, size=None):
        self.images = [os.path.join(self.dir, f"dev{i}.img") for i in range(n)]
        for img in self.images:
            with open(img, "wb") as f:
                f.truncate(size or self.cfg.image_size)

    def _on_teardown(self, what, fn):
        self._undo.append((what, fn))

    def _force_stop(self):
        """Undo start() whatever state it is in; never raises."""
        if is_mounted(self.mnt):
            for cmd in (["fusermount3", "-u", "-z", self.mnt], ["umount", "-l", self.mnt]):
                try:
                    run(cmd, check=False, timeout=30)
                except RuntimeError:
                    pass
                if not is_mounted(self.mnt):
                    break
        self._kill_proc()

    def _kill_proc(self):
        p, self.proc = self.proc, None
        if p is None or p.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                p.send_signal(sig)
                p.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue
            except ProcessLookupError:
                return

    def teardown(self):
        if self.torn_down:
            return
        self.torn_down = True
        try:
            self._force_stop()
        except Exception as e:  # noqa: BLE001 - teardown must go on
            self.teardown_errors.append(f"force stop: {e}")
        while self._undo:
            what, fn = self._undo.pop()
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                self.teardown_errors.append(f"{what}: {e}")
        for e in self.teardown_errors:
            log(f"{self.name}: teardown: {e}")

    # -- helpers for FUSE daemons run in the foreground ---------------------
    def _start_fuse_daemon(self, cmd, env=None):
        logf = open(os.path.join(self.dir, "daemon.log"), "ab")
        full_env = dict(os.environ, **(env or {}))
        self.proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=full_env,
                                     start_new_session=True)
        logf.close()
        ok = wait_for(lambda: is_mounted(self.mnt) or self.proc.poll() is not None, 30)
        if not ok or not is_mounted(self.mnt):
            rc = self.proc.poll()
            self._kill_proc()
            with open(os.path.join(self.dir, "daemon.log"), errors="replace") as f:
                tail = " | ".join(f.read().strip().splitlines()[-3:])
            raise RuntimeError(f"{os.path.basename(cmd[0])} did not mount (exit {rc}): {tail}")

    def _stop_fuse_daemon(self):
        if is_mounted(self.mnt):
            run(["fusermount3", "-u", self.mnt], timeout=60)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self._kill_proc()


# ---------------------------------------------------------------------------
class Tmpfs(System):
    name = "tmpfs"
    family = "tmpfs"
    description = "kernel tmpfs, no FUSE, no redundancy: upper bound"

    def check(self):
        if os.geteuid() != 0:
            raise Skip("mounting tmpfs needs root")

    def create(self):
        self._mkdirs()

    def start(self, degraded=False):
        size = self.cfg.image_size * NIMAGES
        run(["mount", "-t", "tmpfs", "-o", f"size={size}", "dgbench-tmpfs", self.mnt])

    def stop(self):
        run(["umount", self.mnt])


def raise_nofile(want=1 << 20):
    """Raise this process's open-file limit as far as allowed: to want with
    CAP_SYS_RESOURCE, else to the hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for lim in ((want, want), (hard, hard)):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, lim)
            return
        except (ValueError, OSError):
            continue


class Passthrough(System):
    family = "fuse"
    SRC = "/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c"

    def __init__(self, cfg, name="passthrough", opts=()):
        self.name = name
        self.opts = list(opts)
        self.description = ("libfuse passthrough_ll example (Debian libfuse3-dev) over a "
                            "tmpfs directory, " + (f"-o {','.join(self.opts)}" if self.opts
                                                   else "default options: the FUSE ceiling"))
        super().__init__(cfg)

    def check(self):
        if not os.path.exists("/dev/fuse"):
            raise Skip("/dev/fuse missing")
        if not which("fusermount3"):
            raise Skip("fusermount3 not installed (apt-get install fuse3)")
        self.binary = build_passthrough(self.cfg.bin_dir, self.SRC)

    def create(self):
        self._mkdirs()
        self.src = os.path.join(self.dir, "src")
        os.makedirs(self.src, exist_ok=True)

    def start(self, degraded=False):
        raise_nofile()      # the daemon inherits the harness's limit
        self._start_fuse_daemon([self.binary, "-f", "-o",
                                 ",".join([f"source={self.src}"] + self.opts), self.mnt])

    def max_files(self):
        """passthrough_ll holds an O_PATH descriptor for every inode the
        kernel knows, so the open-file limit it inherited bounds the files
        it can serve."""
        return resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 1000

    def stop(self):
        self._stop_fuse_daemon()

    def backing_path(self, path_in_fs):
        return os.path.join(self.src, os.path.relpath(path_in_fs, self.mnt))


def build_passthrough(bin_dir, src):
    """Compile libfuse's passthrough_ll.c once per run; raise Skip if we cannot."""
    out = os.path.join(bin_dir, "passthrough_ll")
    if os.path.exists(out):
        return out
    if not os.path.exists(src):
        raise Skip(f"{src} missing (apt-get install libfuse3-dev)")
    cc = which("cc") or which("gcc")
    if not cc:
        raise Skip("no C compiler")
    try:
        flags = run(["pkg-config", "--cflags", "--libs", "fuse3"]).stdout.split()
        os.makedirs(bin_dir, exist_ok=True)
        run([cc, "-O2", "-o", out, src] + flags, timeout=120)
    except RuntimeError as e:
        raise Skip(f"cannot build passthrough_ll: {e}") from e
    return out


# ---------------------------------------------------------------------------
class Daxguard(System):
    family = "daxguard"
    uses_images = True
    checksums = True

    def __init__(self, cfg, name, mkfs_args, redundancy, checksums=True, mount_opts=()):
        self.name = name
        self.mkfs_args = mkfs_args
        self.mount_opts = list(mount_opts)
        self.redundancy = redundancy
        self.checksums = checksums
        self.description = (f"daxguard {' '.join(mkfs_args)} on {NIMAGES} images"
                            + "".join(f", -o {o}" for o in self.mount_opts))
        super().__init__(cfg)
        b = cfg.build_dir
        self.bin = {
            "mkfs": os.path.join(b, "mkfs", "mkfs.daxguard"),
            "daemon": os.path.join(b, "fs", "daemon", "daxguard"),
            "fsck": os.path.join(b, "fsck", "fsck.daxguard"),
            "inject": os.path.join(b, "fsck", "daxguard-inject"),
            "ctl": os.path.join(b, "fs", "ctl", "daxguard-ctl"),
        }

    def have(self, tool):
        p = self.bin[tool]
        return os.path.isfile(p) and os.access(p, os.X_OK)

    def check(self):
        for tool in ("mkfs", "daemon"):
            if not self.have(tool):
                raise Skip(f"daxguard not built: {self.bin[tool]} missing "
                           f"(meson setup {self.cfg.build_dir} && ninja -C {self.cfg.build_dir})")
        if not os.path.exists("/dev/fuse"):
            raise Skip("/dev/fuse missing")

    def create(self):
        self._mkdirs()
        self._make_images()
        size_m = self.cfg.image_size >> 20
        run([self.bin["mkfs"], *self.mkfs_args, "--size", f"{size_m}M", "--force", "-q",
             *self.images], timeout=300)

    def start(self, degraded=False):
        self.degraded = degraded
        # A device missing or stale mounts only when asked (as btrfs).
        opts = self.mount_opts + (["degraded"] if degraded else [])
        self._start_fuse_daemon([self.bin["daemon"], ",".join(self.images), self.mnt, "-f"]
                                + (["-o", ",".join(opts)] if opts else []))

    def stop(self):
        self._stop_fuse_daemon()

    def media(self):
        """status --json's media counts (docs/design.md, "What a write costs
        the media"), or None when this build or mount has none."""
        if not self.have("ctl") or not is_mounted(self.mnt):
            return None
        cp = run([self.bin["ctl"], self.mnt, "status", "--json"], check=False, timeout=60)
        try:
            return json.loads(cp.stdout).get("media") if cp.returncode == 0 else None
        except ValueError:
            return None

    def status(self):
        if not self.have("ctl") or not is_mounted(self.mnt):
            return None
        cp = run([self.bin["ctl"], self.mnt, "status", "--json"], check=False, timeout=60)
        return {"rc": cp.returncode, "out": cp.stdout[-4000:], "err": cp.stderr[-1000:]}


# ---------------------------------------------------------------------------
class Btrfs(System):
    family = "btrfs"
    uses_images = True
    checksums = True

    def __init__(self, cfg, name, nimages, mkfs_args, mount_opts, redundancy, checksums):
        self.name = name
        self.nimages = nimages
        self.mkfs_args = mkfs_args
        self.mount_opts = mount_opts
        self.redundancy = redundancy
        self.checksums = checksums
        self.description = (f"kernel btrfs mkfs {' '.join(mkfs_args)}"
                            f"{' -o ' + ','.join(mount_opts) if mount_opts else ''}"
                            f" on {nimages} loop device(s) over /dev/shm images"
                            + (f" ({NIMAGES}x the image size)" if nimages == 1 else ""))
        super().__init__(cfg)
        self.loops = {}   # image index -> /dev/loopN

    def check(self):
        if os.geteuid() != 0:
            raise Skip("btrfs on loop devices needs root")
        if not which("mkfs.btrfs"):
            raise Skip("mkfs.btrfs not installed (apt-get install btrfs-progs)")
        if not which("losetup"):
            raise Skip("losetup missing")
        if not _fs_supported("btrfs"):
            run(["modprobe", "btrfs"], check=False, timeout=60)
            if not _fs_supported("btrfs"):
                raise Skip("kernel has no btrfs (not in /proc/filesystems after modprobe btrfs)")

    def create(self):
        self._mkdirs()
        # A single device gets the capacity of all four images together.
        self._make_images(self.nimages, self.cfg.image_size * NIMAGES // self.nimages)
        self._attach()
        try:
            run(["mkfs.btrfs", "-f", *self.mkfs_args, *self.loops.values()], timeout=300)
        except RuntimeError as e:
            raise Skip(f"mkfs.btrfs failed: {e}") from e

    def _attach(self, skip=()):
        for i, img in enumerate(self.images):
            if i in self.loops or i in skip:
                continue
            try:
                dev = run(["losetup", "-f", "--show", img]).stdout.strip()
            except RuntimeError as e:
                raise Skip(f"no loop device: {e}") from e
            self.loops[i] = dev

    def _detach(self):
        errs = []
        for i, dev in list(self.loops.items()):
            cp = run(["losetup", "-d", dev], check=False)
            if cp.returncode == 0:
                del self.loops[i]
            else:
                errs.append(f"losetup -d {dev}: {cp.stderr.strip()}")
        if errs:
            raise RuntimeError("; ".join(errs))

    def start(self, degraded=False, missing=()):
        self.degraded = degraded
        self._attach(skip=missing)
        devs = list(self.loops.values())
        opts = list(self.mount_opts) + [f"device={d}" for d in devs]
        if degraded:
            opts.append("degraded")
        run(["mount", "-t", "btrfs", "-o", ",".join(opts), devs[0], self.mnt], timeout=120)

    def stop(self):
        if is_mounted(self.mnt):
            run(["umount", self.mnt], timeout=120)
        self._detach()

    def _force_stop(self):
        if is_mounted(self.mnt):
            run(["umount", self.mnt], check=False, timeout=120)
            if is_mounted(self.mnt):
                run(["umount", "-l", self.mnt], check=False)
        for _ in range(3):
            try:
                self._detach()
                break
            except RuntimeError as e:
                self.teardown_errors.append(str(e))
                time.sleep(1)


def _fs_supported(fs):
    try:
        with open("/proc/filesystems") as f:
            return any(line.split()[-1] == fs for line in f if line.strip())
    except OSError:
        return False


# ---------------------------------------------------------------------------
class ZfsDaemon:
    """One zfs-fuse daemon serves every pool; start it once, stop it if ours."""

    proc = None
    users = 0

    @classmethod
    def acquire(cls, log_dir):
        cls.users += 1
        if cls._responds():
            return
        logf = open(os.path.join(log_dir, "zfs-fuse.log"), "ab")
        cls.proc = subprocess.Popen(["zfs-fuse", "--no-daemon"], stdout=logf,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        logf.close()
        if not wait_for(lambda: cls.proc.poll() is not None or cls._responds(), 20) \
                or cls.proc.poll() is not None:
            rc = cls.proc.poll()
            cls.release()
            raise Skip(f"zfs-fuse daemon did not start (exit {rc}); see zfs-fuse.log")

    @classmethod
    def _responds(cls):
        try:
            return run(["zpool", "list", "-H"], check=False, timeout=10).returncode == 0
        except RuntimeError:
            return False

    @classmethod
    def release(cls):
        cls.users = max(0, cls.users - 1)
        if cls.users == 0 and cls.proc is not None:
            p, cls.proc = cls.proc, None
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=5)


class Zfs(System):
    family = "zfs"
    uses_images = True

    def __init__(self, cfg, name, vdev_kind, props, redundancy, checksums):
        self.name = name
        self.vdev_kind = vdev_kind     # "raidz1" or None (plain stripe)
        self.props = props
        self.redundancy = redundancy
        self.checksums = checksums
        self.description = (f"zfs-fuse pool {vdev_kind or 'stripe'} of {NIMAGES} image files"
                            + (f", {' '.join(props)}" if props else ""))
        super().__init__(cfg)
        self.pool = f"dgb{os.getpid()}{name.replace('-', '')}"
        self.imported = False
        self.have_daemon = False

    def check(self):
        for tool in ("zfs-fuse", "zpool", "zfs"):
            if not which(tool):
                raise Skip(f"{tool} not installed (apt-get install zfs-fuse)")
        if not os.path.exists("/dev/fuse"):
            raise Skip("/dev/fuse missing")

    def create(self):
        self._mkdirs()
        ZfsDaemon.acquire(self.dir)
        self.have_daemon = True
        self._make_images()
        vdevs = ([self.vdev_kind] if self.vdev_kind else []) + self.images
        opts = []
        for p in self.props:
            opts += ["-O", p]
        run(["zpool", "create", "-f", "-m", self.mnt, *opts, self.pool, *vdevs], timeout=300)
        self.imported = True
        if not wait_for(lambda: is_mounted(self.mnt), 20):
            raise RuntimeError(f"zfs dataset {self.pool} not mounted at {self.mnt}")

    def start(self, degraded=False):
        self.degraded = degraded
        if not self.imported:
            run(["zpool", "import", "-d", self.dir, self.pool], timeout=300)
            self.imported = True
        if not wait_for(lambda: is_mounted(self.mnt), 20):
            run(["zfs", "mount", self.pool], timeout=60)

    def stop(self):
        if self.imported:
            run(["zpool", "export", self.pool], timeout=300)
            self.imported = False

    def _force_stop(self):
        if self.imported:
            cp = run(["zpool", "export", "-f", self.pool], check=False, timeout=300)
            if cp.returncode != 0:
                run(["zpool", "destroy", "-f", self.pool], check=False, timeout=300)
            self.imported = False
        if is_mounted(self.mnt):
            run(["fusermount", "-u", "-z", self.mnt], check=False)
            run(["umount", "-l", self.mnt], check=False)
        if self.have_daemon:
            self.have_daemon = False
            ZfsDaemon.release()

    def info(self):
        d = super().info()
        d["pool"] = self.pool
        return d


# ---------------------------------------------------------------------------
def all_systems(cfg):
    """Every system the harness knows, in default run order."""
    return [
        Daxguard(cfg, "daxguard-p1", ["--parity", "1"], "parity 1 + checksums"),
        # Smaller chunks: a 1 MiB write fills whole rows, whose parity
        # needs no old data (not the default, see README "Chunk size").
        Daxguard(cfg, "daxguard-p1-64k", ["--parity", "1", "--chunk", "64K"],
                 "parity 1 + checksums, 64 KiB chunks"),
        # A whole page's overwrite journaled on parity copies (not the
        # default: docs/design.md, "Lean entries").
        Daxguard(cfg, "daxguard-p1-lean", ["--parity", "1", "--lean-journal"],
                 "parity 1 + checksums, --lean-journal"),
        Daxguard(cfg, "daxguard-p2", ["--parity", "2"], "parity 2 + checksums"),
        Daxguard(cfg, "daxguard-none", ["--redundancy", "none"], "none", checksums=False),
        # The kernel's writeback cache: a write() is durable only at fsync
        # (not the default: README, "-o writeback"); measured against
        # passthrough_ll with its own writeback cache.
        Daxguard(cfg, "daxguard-p1-wb", ["--parity", "1"], "parity 1 + checksums",
                 mount_opts=["writeback"]),
        Passthrough(cfg),
        Passthrough(cfg, "passthrough-wb", ["writeback"]),
        Btrfs(cfg, "btrfs-raid5", NIMAGES, ["-d", "raid5", "-m", "raid1", "--csum", "xxhash"],
              [], "RAID-5 data, RAID-1 metadata, xxhash checksums", True),
        Btrfs(cfg, "btrfs-single", 1, ["-d", "single", "-m", "single", "--csum", "xxhash"],
              ["nodatasum"], "none (single device, nodatasum)", False),
        Zfs(cfg, "zfs-raidz1", "raidz1", [], "raidz1 + fletcher4 checksums", True),
        Zfs(cfg, "zfs-single", None, ["checksum=off"], "none (stripe, checksum=off)", False),
        Tmpfs(cfg),
    ]


SYSTEM_NAMES = ["daxguard-p1", "daxguard-p1-64k", "daxguard-p1-lean", "daxguard-p2", "daxguard-none",
                "daxguard-p1-wb", "passthrough", "passthrough-wb", "btrfs-raid5", "btrfs-single", "zfs-raidz1", "zfs-single", "tmpfs"]


@contextlib.contextmanager
def mounted(system):
    """Set up and mount `system`; tear it down on any exit, also on errors.

    Skip from check() propagates unchanged; any other failure during setup is
    re-raised as Skip with the reason, after teardown has run.
    """
    try:
        system.check()
        try:
            system.create()
            system.start()
        except Skip:
            raise
        except Exception as e:
            raise Skip(f"setup failed: {e}") from e
        yield system
    finally:
        system.teardown()
