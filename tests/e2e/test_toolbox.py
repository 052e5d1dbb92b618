# SPDX-License-Identifier: MIT
"""The tools as an administrator meets them: --version and --help on every
one, device lists in the forms fstab, mount(8) and fsck(8) use."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from conftest import BUILD, CTL, DAEMON, FSCK, INJECT, MKFS, ROOT, run

DUMPFS = BUILD / "dump" / "dumpfs.daxguard"
TOOLS = [MKFS, DAEMON, CTL, FSCK, INJECT, DUMPFS]


def project_version():
    m = re.search(r"version:\s*'([^']+)'", (ROOT / "meson.build").read_text())
    return m.group(1)


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
@pytest.mark.parametrize("opt", ["--version", "-V"])
def test_version(tool, opt):
    p = run([tool, opt])
    first = p.stdout.splitlines()[0]
    assert first == f"{tool.name} (daxguard) {project_version()}"
    assert p.stderr == ""


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
@pytest.mark.parametrize("opt", ["--help", "-h"])
def test_help_is_complete_and_exits_0(tool, opt):
    p = run([tool, opt])
    assert p.stdout.startswith(f"usage: {tool.name} ")
    # Every long option the usage line names is explained below it.
    usage, rest = p.stdout.split("\n", 1)
    for o in re.findall(r"--[a-z][a-z-]*", usage):
        assert o in rest, f"{o} of the usage line is not explained"
    for o in ("--help", "--version"):
        assert o in rest


def test_mkfs_help_says_what_size_takes():
    out = run([MKFS, "--help"]).stdout
    assert "SIZE is a number of bytes" in out
    assert "K, M, G or T" in out


def test_fsck_help_gives_exit_codes():
    out = run([FSCK, "--help"]).stdout
    for code in ("0 clean", "1 errors corrected", "4 errors left",
                 "8 operational error", "16 usage error"):
        assert code in out


# ---- device lists: ':' and ',', fstab, fsck(8), mount(8) --------------------

def mounts_source(mnt):
    """The source of mnt in /proc/mounts, its octal escapes (\\134 for a
    backslash, \\040 for a space) decoded as getmntent(3) does."""
    def unescape(s):
        return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)

    mnt = os.path.realpath(mnt)
    with open("/proc/mounts") as f:
        for line in f:
            src, target = line.split()[:2]
            if unescape(target) == mnt:
                return unescape(src)
    return None


def test_colon_list_mounts_and_shows_in_proc_mounts(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount(devlist=":".join(map(str, v.devs)))
    assert mounts_source(v.mnt) == ":".join(map(str, v.devs))
    (v.mnt / "f").write_bytes(b"colon")
    assert v.status()["degraded"] is False
    v.umount()
    # The source /proc/mounts showed is what fsck.daxguard takes back.
    for sep in (":", ","):
        p = run([FSCK, "-n", sep.join(map(str, v.devs))])
        assert p.stdout.endswith(": clean\n")


def test_paths_with_colons_take_the_comma_form(volume_factory):
    v = volume_factory(ndev=3, tag=f"c:{uuid.uuid4().hex[:6]}")
    v.mkfs()
    v.mount()                      # the comma list
    # ... which /proc/mounts shows, so that fsck takes it back.
    assert mounts_source(v.mnt) == ",".join(map(str, v.devs))
    v.umount()
    run([FSCK, "-n", ",".join(map(str, v.devs))])
    # A single path that exists is one device, whatever it holds.
    one = volume_factory(ndev=1, tag=f"o:n,e\\{uuid.uuid4().hex[:6]}")
    one.mkfs()
    one.mount(devlist=str(one.devs[0]))
    assert mounts_source(one.mnt) == str(one.devs[0])
    one.umount()
    run([FSCK, "-n", str(one.devs[0])])


def test_bad_device_lists(volume_factory, tmp_path):
    many = ":".join(f"/dev/shm/none{i}" for i in range(17))
    p = run([FSCK, "-n", many], check=False)
    assert p.returncode == 16 and "at most 16 devices" in p.stderr
    p = run([DAEMON, many, tmp_path, "-f"], check=False)
    assert p.returncode != 0 and "at most 16 devices" in p.stderr
    p = run([FSCK, "-n", ",,"], check=False)
    assert p.returncode == 16 and "bad device list" in p.stderr
    v = volume_factory(ndev=2)
    v.mkfs()
    p = run([INJECT, ":".join(map(str, v.devs)), "--fault", "bitflip",
             "--target", "data", "--seed", "1", "--json"], check=False)
    # An empty volume has no data page, but the list was understood.
    assert "no data page" in p.stderr or p.returncode == 0, p.stderr


@pytest.fixture
def fsck_path(tmp_path):
    """A PATH whose first directory holds fsck.daxguard, and the
    fsck.fuse.daxguard name fsck -A uses for fstab's fuse.daxguard type,
    as `meson install` lays them out."""
    if not shutil.which("fsck"):
        pytest.skip("util-linux fsck missing")
    d = tmp_path / "sbin"
    d.mkdir()
    (d / "fsck.daxguard").symlink_to(FSCK)
    (d / "fsck.fuse.daxguard").symlink_to("fsck.daxguard")
    return f"{d}:{os.environ['PATH']}"


@pytest.mark.parametrize("sep", [":", ","])
def test_util_linux_fsck_runs_fsck_daxguard(volume_factory, fsck_path, sep):
    v = volume_factory()
    v.mkfs()
    env = dict(os.environ, PATH=fsck_path)
    p = run(["fsck", "-t", "daxguard", "-n", sep.join(map(str, v.devs))],
            env=env)
    assert p.stdout.rstrip().endswith(": clean"), p.stdout
    # A lost device: fsck(8) passes fsck.daxguard's exit code on.
    v.devs[1].unlink()
    p = run(["fsck", "-t", "daxguard", "-n", sep.join(map(str, v.devs))],
            env=env, check=False)
    assert p.returncode == 4, (p.stdout, p.stderr)
    p = run(["fsck", "-t", "daxguard", "-y", sep.join(map(str, v.devs))],
            env=env, check=False)
    assert p.returncode == 1, (p.stdout, p.stderr)


def test_fsck_all_checks_the_fstab_line(volume_factory, fsck_path, tmp_path):
    """The README's fstab line: fsck -A (sysvinit's checkfs) runs
    fsck.fuse.daxguard -a with the source for a pass-2 entry."""
    v = volume_factory()
    v.mkfs()
    fstab = tmp_path / "fstab"
    fstab.write_text(f"{':'.join(map(str, v.devs))} {v.mnt} fuse.daxguard "
                     "defaults 0 2\n")
    env = dict(os.environ, PATH=fsck_path, LIBMOUNT_FSTAB=str(fstab))
    p = run(["fsck", "-A", "-V", "-a"], env=env)
    assert "fsck.fuse.daxguard -a " + ":".join(map(str, v.devs)) in p.stdout
    assert p.stdout.rstrip().endswith(": clean"), p.stdout


def test_mount_helper_runs_daxguard_from_path(volume_factory):
    """mount -t fuse.daxguard runs mount.fuse3, which runs `daxguard` from
    its PATH. (mount(8) itself gives helpers a fixed PATH, so this calls
    the helper directly, with the build directory on the PATH.)"""
    helper = shutil.which("mount.fuse3") or "/sbin/mount.fuse3"
    if not os.path.exists(helper):
        pytest.skip("mount.fuse3 missing")
    v = volume_factory()
    v.mkfs()
    env = dict(os.environ, PATH=f"{DAEMON.parent}:{os.environ['PATH']}")
    src = ":".join(map(str, v.devs))
    try:
        run([helper, src, v.mnt, "-t", "fuse.daxguard", "-o", "rw"], env=env)
        assert mounts_source(v.mnt) == src
        (v.mnt / "f").write_bytes(b"mounted by mount.fuse3")
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(v.mnt)],
                       capture_output=True)
        # The daemon ran in the background: wait until it let go of the
        # images, or the cleanup would remove them under it.
        deadline = time.time() + 20
        while time.time() < deadline:
            p = run([FSCK, "-n", src], check=False)
            if "in use" not in p.stderr and "mounted" not in p.stderr:
                break
            time.sleep(0.1)
    assert run([FSCK, "-n", src]).stdout.endswith(": clean\n")


# ---- JSON: json-c, and names that are not UTF-8 -----------------------------

def strict_json(raw: bytes):
    """Parse as a strict reader would: the text must be UTF-8."""
    return json.loads(raw.decode("utf-8", errors="strict"))


def run_bytes(cmd, ok=(0,)):
    p = subprocess.run([os.fsencode(c) if not isinstance(c, bytes) else c
                        for c in cmd], capture_output=True)
    assert p.returncode in ok, (cmd, p.returncode, p.stderr)
    return p


def test_json_names_that_are_not_utf8(volume_factory):
    v = volume_factory()
    label = b"lab\xffel\xe9"
    run_bytes([MKFS, "-q", "--force", "--size", v.size, b"--label", label]
              + v.devs)
    v.mount()
    bad = b"bad-\xff\xfe\"\\\n.bin"          # also a quote, backslash, newline
    good = "caf\u00e9.bin".encode()
    with open(os.path.join(os.fsencode(v.mnt), bad), "wb") as f:
        f.write(os.urandom(256 << 10))
    with open(os.path.join(os.fsencode(v.mnt), good), "wb") as f:
        f.write(os.urandom(256 << 10))
    st = strict_json(run_bytes([CTL, v.mnt, "status", "--json"]).stdout)
    assert st["label"] == "lab\ufffdel\ufffd"
    assert bytes.fromhex(st["label_hex"]) == label
    assert "mountpoint_hex" not in st
    sc = strict_json(run_bytes([CTL, v.mnt, "scrub", "--json"]).stdout)
    assert sc["unrecoverable"] == 0
    v.umount()

    for name in (bad, good):
        out = run_bytes([INJECT] + v.devs + [
            "--fault", "bitflip", "--target", "data", b"--file",
            b"/" + name, "--seed", "7", "--json"]).stdout
        rep = strict_json(out)
        ch = rep["changes"][0]
        if name == bad:
            assert bytes.fromhex(ch["file_hex"]) == b"/" + bad
            assert ch["file"] == "/bad-\ufffd\ufffd\"\\\n.bin"
        else:
            assert ch["file"] == "/caf\u00e9.bin" and "file_hex" not in ch

    rep = strict_json(run_bytes([FSCK, "-n", "--json"] + v.devs,
                                ok=(4,)).stdout)
    files = {}
    for f in rep["findings"]:
        raw = (bytes.fromhex(f["file_hex"]) if "file_hex" in f
               else (f["file"] or "").encode())
        files[raw] = f
    assert b"/" + bad in files and b"/" + good in files, rep
    assert rep["exit"] == 4 and rep["uncorrected"] >= 2
    rep = strict_json(run_bytes([FSCK, "-y", "--json"] + v.devs,
                                ok=(1,)).stdout)
    assert rep["corrected"] >= 2 and rep["uncorrected"] == 0


def test_logical_fault_json_names_a_non_utf8_file(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount()
    bad = b"x\xc3(y"                        # a broken two-byte sequence
    with open(os.path.join(os.fsencode(v.mnt), bad), "wb") as f:
        f.write(b"z" * 100000)
    v.umount()
    rep = strict_json(run_bytes([INJECT] + v.devs + [
        "--fault", "logical", "--target", "extent", b"--file", b"/" + bad,
        "--seed", "1", "--json"]).stdout)
    assert bytes.fromhex(rep["file_hex"]) == b"/" + bad
    assert rep["file"] == "/x\ufffd(y"
    run_bytes([FSCK, "-y", "--json"] + v.devs, ok=(1, 4))


# ---- man pages ---------------------------------------------------------------

MAN = ROOT / "doc" / "man"
PAGES = {MKFS: "mkfs.daxguard.8", DAEMON: "daxguard.8", CTL: "daxguard-ctl.8",
         FSCK: "fsck.daxguard.8", INJECT: "daxguard-inject.8",
         DUMPFS: "dumpfs.daxguard.8"}


def render(page):
    """scdoc source -> roff -> text; fails on any scdoc error or groff
    warning."""
    if not shutil.which("scdoc") or not shutil.which("groff"):
        pytest.skip("scdoc or groff missing")
    roff = subprocess.run(["scdoc"], input=(MAN / f"{page}.scd").read_bytes(),
                          capture_output=True)
    assert roff.returncode == 0, roff.stderr
    text = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-P-cbou"],
                          input=roff.stdout, capture_output=True,
                          env=dict(os.environ, MANWIDTH="200"))
    assert text.returncode == 0 and text.stderr == b"", text.stderr
    # groff may draw '-' as U+2010 or U+2212; compare with ASCII hyphens.
    return text.stdout.decode().replace("\u2010", "-").replace("\u2212", "-")


def help_names(tool):
    """Every option and -o option or command name --help lists."""
    names = set()
    for line in run([tool, "--help"]).stdout.splitlines()[1:]:
        s = line.strip()
        if s.startswith("-"):
            names.update(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", s))
            names.update(re.findall(r"-o ([a-z_]+)", s))
        else:
            m = re.match(r"\s+([a-z][a-z_]*)(=[A-Z]+)?\s{2,}\S", line)
            if m:
                names.add(m.group(1))
    return names


@pytest.mark.parametrize("page", ["libcommit.3"] + list(PAGES.values()))
def test_man_page_renders(page):
    text = render(page)
    name = page.rsplit(".", 1)[0]
    assert "NAME" in text and "SYNOPSIS" in text and name in text


@pytest.mark.parametrize("tool", PAGES, ids=lambda t: t.name)
def test_man_page_has_every_help_option(tool):
    text = render(PAGES[tool])
    names = help_names(tool)
    assert "--help" in names and "--version" in names
    missing = [n for n in sorted(names)
               if not re.search(r"(?<![\w-])" + re.escape(n) + r"(?![\w-])",
                                text)]
    assert not missing, f"{PAGES[tool]} lacks {missing}"


def test_man_pages_are_built_and_installed(tmp_path):
    if not shutil.which("scdoc"):
        pytest.skip("scdoc missing")
    for page in ["libcommit.3"] + list(PAGES.values()):
        assert (BUILD / "doc" / page).exists(), page
    p = run(["meson", "install", "-C", BUILD, "--no-rebuild", "--destdir",
             tmp_path / "root"])
    installed = {p.name for p in (tmp_path / "root").rglob("man*/*.[38]")}
    assert installed == {"libcommit.3"} | set(PAGES.values()), p.stdout


# ---- dumpfs.daxguard ----------------------------------------------------------

def dump(devs, *opts, ok=(0,)):
    p = run_bytes([DUMPFS, "--json", *opts] + list(devs), ok=ok)
    return strict_json(p.stdout)


def test_dumpfs_shows_every_superblock_and_the_geometry(volume_factory):
    v = volume_factory(ndev=3)
    v.mkfs("--label", "dump-me", "--chunk", "64K")
    d = dump([":".join(map(str, v.devs))])
    g = d["geometry"]
    assert d["label"] == "dump-me" and d["mounted"] is False
    assert g["devices"] == 3 and g["parity"] == 1 and g["data_per_row"] == 2
    assert g["chunk_pages"] == 16 and g["redundancy_text"] == "full"
    assert d["free_space"]["free_vpns"] + d["free_space"]["used_vpns"] \
        == g["vpns"]
    assert d["features"]["incompat"] == ["sealed_journal", "meta_zone",
                                         "xattr_run", "staged_sync",
                                         "journal_copies", "new_rows",
                                         "journal_v2", "reserved_rows",
                                         "copies_together", "line_seal"]
    # the metadata zone: whole chunks of rows, and how full it is
    assert g["zone_vpns"] % (2 * 16) == 0 and g["zone_vpns"] > 0
    assert g["zone_rows"] == g["zone_vpns"] // 2
    assert 0 < d["free_space"]["zone_used_vpns"] < g["zone_vpns"]
    assert d["meta_outside_zone"] == 0
    assert [x["path"] for x in d["devices"]] == list(map(str, v.devs))
    for i, dev in enumerate(d["devices"]):
        prim, back = dev["superblocks"]
        assert prim["status"] == back["status"] == "valid"
        assert prim["page"] == 0 and back["page"] == g["dev_pages"] - 1
        f = prim["fields"]
        assert f["dev_index"] == i and f["label"] == "dump-me"
        assert f["vol_uuid"] == g["uuid"] and f["state_text"] == "clean"
        assert f["magic"] == "0x5344524155475844"
        assert back["fields"] == f
    j = d["journal"]
    assert j["live_entries"] == 0 and j["entries"] == []
    assert {h["status"] for h in j["headers"]} <= {"valid", "absent"}
    # parity + 2 journal copies: here every device (journal_copies)
    assert j["copies"] == 3 and len(j["headers"]) == 6
    assert [j[f"copy{c}_device"] for c in range(3)] == [0, 1, 2]
    # The text form says the same.
    out = run([DUMPFS, *v.devs]).stdout
    assert "label 'dump-me'" in out and "same as the primary" in out
    assert out.count("superblock primary (page 0): valid") == 3


def test_dumpfs_shows_damage_and_a_live_journal(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount()
    for i in range(20):
        (v.mnt / f"f{i}").write_bytes(os.urandom(5000))
    d = dump(v.devs)                       # while mounted, read-only
    assert d["mounted"] is True
    v.kill9()                              # a crash: the journal is live
    d = dump(v.devs)
    j = d["journal"]
    assert j["live_entries"] == len(j["entries"]) > 0
    assert j["entries"][0]["seq"] == j["tail_seq"]
    assert all(e["ranges"] > 0 or e["wrap"] for e in j["entries"])
    run([FSCK, "-y"] + v.devs, check=False)
    d = dump(v.devs)
    assert d["journal"]["live_entries"] == 0
    cs = d["checksum_pages"]
    assert cs["written"] > 0 and cs["copies_stale"] == cs["copies_bad"] == 0
    assert cs["copies_current"] == cs["written"] * cs["copies"]
    assert cs["newest_gen"] >> 40 == d["geometry"]["generation"]
    # A lost write of a checksum page leaves a stale copy: shown, exit 1,
    # until fsck rewrites it.
    run([INJECT] + v.devs + ["--fault", "lost-write", "--target",
                             "checksum", "--seed", "2"])
    assert dump(v.devs, ok=(1,))["checksum_pages"]["copies_stale"] == 1
    run([FSCK, "-y"] + v.devs, check=False)
    assert dump(v.devs)["checksum_pages"]["copies_stale"] == 0
    # A damaged superblock copy is shown, field by field, and exits 1.
    run([INJECT] + v.devs + ["--fault", "scribble", "--target",
                             "superblock", "--device", "2", "--seed", "5"])
    d = dump(v.devs, ok=(1,))
    sbs = d["devices"][2]["superblocks"]
    assert "damaged" in [s["status"] for s in sbs]
    bad = [s for s in sbs if s["status"] == "damaged"][0]
    assert "generation" in bad["fields"]


def test_dumpfs_sets_the_label(volume_factory):
    v = volume_factory(ndev=2)
    v.mkfs("--label", "old")
    run([DUMPFS, "--set-label", "new label", ",".join(map(str, v.devs))])
    d = dump(v.devs)
    assert d["label"] == "new label"
    for dev in d["devices"]:
        for sb in dev["superblocks"]:
            assert sb["status"] == "valid"
            assert sb["fields"]["label"] == "new label"
    v.mount()
    assert v.status()["label"] == "new label"
    p = run([DUMPFS, "-L", "x"] + v.devs, check=False)
    assert p.returncode == 1 and "mounted" in p.stderr
    v.umount()
    p = run([DUMPFS, "-L", "x" * 64] + v.devs, check=False)
    assert p.returncode == 2 and "longer than 63 bytes" in p.stderr
    run([FSCK, "-n"] + v.devs)


# ---- boot under systemd: daxguard-fsck@.service ------------------------------

GENERATOR = "/usr/lib/systemd/system-generators/systemd-fstab-generator"


def instance(devs):
    return run(["systemd-escape", "--template=daxguard-fsck@.service",
                "--path", ":".join(map(str, devs))]).stdout.strip()


def test_fstab_line_for_systemd_requires_the_check(volume_factory, tmp_path):
    """The README's systemd line: the generated mount unit requires
    daxguard-fsck@<list>.service and is ordered after it."""
    if not os.access(GENERATOR, os.X_OK) or not shutil.which("systemd-escape"):
        pytest.skip("systemd-fstab-generator missing")
    v = volume_factory()
    unit = instance(v.devs)
    fstab = tmp_path / "fstab"
    fstab.write_text(f"{':'.join(map(str, v.devs))} {v.mnt} fuse.daxguard "
                     f"defaults,x-systemd.requires={unit} 0 0\n")
    out = tmp_path / "gen"
    out.mkdir()
    run([GENERATOR, out, out, out],
        env=dict(os.environ, SYSTEMD_FSTAB=str(fstab),
                 SYSTEMD_PROC_CMDLINE="", SYSTEMD_LOG_LEVEL="err"))
    mount_unit = [p for p in out.iterdir() if p.suffix == ".mount"]
    assert len(mount_unit) == 1
    text = mount_unit[0].read_text()
    esc = unit.replace("\\", "\\\\")
    assert re.search(rf"^Requires=.*{re.escape(unit)}", text, re.M), text
    assert re.search(rf"^After=.*{re.escape(unit)}", text, re.M), text
    assert "systemd-fsck@" not in text and esc


def test_fsck_unit_checks_the_instance_list(volume_factory):
    """The unit's ExecStart, with %f expanded from an instance name as
    systemd does, checks the volume; 1 counts as success."""
    if not shutil.which("systemd-escape"):
        pytest.skip("systemd-escape missing")
    text = (BUILD / "doc" / "daxguard-fsck@.service").read_text()
    exec_start = re.search(r"^ExecStart=(.*)$", text, re.M).group(1).split()
    assert re.search(r"^SuccessExitStatus=1$", text, re.M)
    assert exec_start[0].endswith("/fsck.daxguard") and exec_start[-1] == "%f"
    v = volume_factory()
    v.mkfs()
    name = instance(v.devs)[len("daxguard-fsck@"):-len(".service")]
    f = run(["systemd-escape", "--unescape", "--path", name]).stdout.strip()
    assert f == ":".join(map(str, v.devs))
    cmd = [FSCK] + exec_start[1:-1] + [f]
    assert run(cmd).returncode == 0
    # A damaged superblock copy: -p repairs it, the unit succeeds.
    run([INJECT] + v.devs + ["--fault", "scribble", "--target",
                             "superblock", "--device", "1", "--seed", "3"])
    assert run(cmd, check=False).returncode == 1
    run([FSCK, "-n", f])
    # A missing device is not preened: -p checks the rest and exits 4
    # (the unit fails, and so the mount) saying what to run; -y rebuilds.
    v.devs[2].unlink()
    p = run(cmd, check=False)
    assert p.returncode == 4, (p.stdout, p.stderr)
    assert "PR_0_DEV_MISSING" in p.stdout
    assert "run fsck.daxguard -y" in p.stdout
    assert run([FSCK, "-y", f], check=False).returncode == 1
    run([FSCK, "-n", f])


def test_ctl_refusal_is_an_error_in_both_forms(volume_factory):
    """A scrub by someone else than root or the mount's owner is refused:
    exit 1, and with --json the refusal is JSON too."""
    if not shutil.which("setpriv"):
        pytest.skip("setpriv missing")
    v = volume_factory()
    v.mkfs()
    # pytest's own directories are root's alone: mount where others can
    # reach.
    v.mnt = Path(tempfile.mkdtemp(prefix="dg-e2e-ctl-"))
    v.mnt.chmod(0o755)
    try:
        v.mount("allow_other")
        nobody = ["setpriv", "--reuid=65534", "--regid=65534",
                  "--clear-groups"]
        p = run(nobody + [CTL, v.mnt, "status", "--json"])
        assert strict_json(p.stdout.encode())["degraded"] is False
        p = run(nobody + [CTL, v.mnt, "scrub"], check=False)
        assert p.returncode == 1
        assert p.stdout == "error: permission denied\n"
        p = run(nobody + [CTL, v.mnt, "scrub", "--json"], check=False)
        assert p.returncode == 1
        assert strict_json(p.stdout.encode()) == {"error":
                                                  "permission denied"}
        assert run([CTL, v.mnt, "scrub"]).returncode == 0
    finally:
        v.umount()
        v.mnt.rmdir()


def test_libcommit_page_has_every_exported_function():
    """Every function libcommit.sym exports is in libcommit(3)."""
    sym = (ROOT / "libcommit" / "libcommit.sym").read_text()
    names = set(re.findall(r"\b(commit_[a-z_]+)\s*;", sym))
    assert names
    text = render("libcommit.3")
    missing = sorted(n for n in names if n not in text)
    assert not missing, f"libcommit.3 lacks {missing}"
