"""Teardown on failure and skipped-system reporting, with dummy systems
whose "mount point" is a plain temp directory: no root, no real mount."""

import json
import os

import pytest

from dgbench import cli, systems
from dgbench.util import Skip


class Dummy(systems.System):
    family = "fuse"
    description = "dummy"
    calls = []          # (system name, event), shared by all instances of a test

    def __init__(self, cfg, name, fail_in=None):
        self.name = name
        self.fail_in = fail_in
        super().__init__(cfg)

    def _ev(self, what):
        Dummy.calls.append((self.name, what))
        if self.fail_in == what:
            raise RuntimeError(f"{what} exploded")

    def check(self):
        self._ev("check")
        if self.fail_in == "skip":
            raise Skip("needs a unicorn")

    def create(self):
        self._mkdirs()
        self._on_teardown("release", lambda: Dummy.calls.append((self.name, "released")))
        self._ev("create")

    def start(self, degraded=False):
        self._ev("start")

    def stop(self):
        self._ev("stop")

    def _force_stop(self):
        Dummy.calls.append((self.name, "force_stop"))


@pytest.fixture
def cfg(tmp_path):
    Dummy.calls = []
    return systems.Config(str(tmp_path / "work"), "build", 1 << 20, str(tmp_path / "bin"))


def test_setup_failure_still_tears_down(cfg):
    s = Dummy(cfg, "a", fail_in="start")
    with pytest.raises(Skip, match="setup failed: start exploded"):
        with systems.mounted(s):
            pytest.fail("body must not run")
    assert ("a", "force_stop") in Dummy.calls
    assert ("a", "released") in Dummy.calls
    assert not os.path.exists(s.dir)


def test_exception_in_body_tears_down(cfg):
    s = Dummy(cfg, "b")
    with pytest.raises(KeyboardInterrupt):
        with systems.mounted(s):
            raise KeyboardInterrupt
    assert Dummy.calls[-2:] == [("b", "force_stop"), ("b", "released")]


def test_teardown_goes_on_after_errors_and_is_idempotent(cfg):
    s = Dummy(cfg, "c")
    s.create()
    s._on_teardown("bad", lambda: 1 / 0)
    s.teardown()
    s.teardown()
    assert Dummy.calls.count(("c", "released")) == 1
    assert any("bad" in e for e in s.teardown_errors)


def test_check_skip_is_reported(cfg):
    s = Dummy(cfg, "d", fail_in="skip")
    with pytest.raises(Skip, match="needs a unicorn"):
        with systems.mounted(s):
            pass
    assert ("d", "force_stop") in Dummy.calls


def test_missing_daxguard_binaries_skip_with_reason(cfg, tmp_path):
    cfg.build_dir = str(tmp_path / "nobuild")
    dg = {s.name: s for s in systems.all_systems(cfg)}["daxguard-p1"]
    with pytest.raises(Skip, match=r"nobuild/mkfs/mkfs.daxguard missing"):
        with systems.mounted(dg):
            pass


def _factory(fail):
    def make(name, cfg):
        return Dummy(cfg, name, fail_in=fail.get(name))
    return make


def test_cli_reports_skipped_systems_and_tears_down(tmp_path):
    Dummy.calls = []
    out = tmp_path / "out"
    rc = cli.main(["--quick", "--systems", "passthrough,tmpfs,zfs-raidz1", "--workloads",
                   "meta-flat", "--reps", "1", "--out", str(out)],
                  system_factory=_factory({"tmpfs": "skip", "zfs-raidz1": "create"}))
    assert rc == 0
    res = json.loads((out / "results.json").read_text())
    assert res["systems"]["passthrough"]["status"] == "ok"
    assert res["systems"]["tmpfs"] == {"status": "skipped", "reason": "needs a unicorn",
                                       "info": res["systems"]["tmpfs"]["info"]}
    assert "create exploded" in res["systems"]["zfs-raidz1"]["reason"]
    md = (out / "results.md").read_text()
    assert "| tmpfs | skipped: needs a unicorn |" in md
    # metabench really ran in the dummy's plain directory
    vals = [r["value"] for r in res["raw"] if r["system"] == "passthrough"]
    assert len(vals) == 4 and all(v > 0 for v in vals)
    for name in ("passthrough", "tmpfs", "zfs-raidz1"):
        assert (name, "force_stop") in Dummy.calls
    assert res["meta"]["complete"] is True


def test_cli_interrupt_tears_down_and_writes_partial_results(tmp_path, monkeypatch):
    Dummy.calls = []

    def boom(live, *a, **kw):
        assert [s.name for s in live] == ["passthrough", "tmpfs"]
        raise KeyboardInterrupt("signal 2")
    monkeypatch.setattr(cli, "_run_interleaved", boom)
    out = tmp_path / "out"
    rc = cli.main(["--quick", "--systems", "passthrough,tmpfs", "--workloads", "meta-flat",
                   "--out", str(out)], system_factory=_factory({}))
    assert rc == 130
    assert ("passthrough", "released") in Dummy.calls and ("tmpfs", "released") in Dummy.calls
    res = json.loads((out / "results.json").read_text())
    assert res["meta"]["complete"] is False and res["meta"]["interrupted"] == "signal 2"


def test_cli_rejects_unknown_names(tmp_path, capsys):
    assert cli.main(["--systems", "ext9", "--out", str(tmp_path)]) == 2
    assert cli.main(["--workloads", "fio,nope", "--out", str(tmp_path)]) == 2
    assert "unknown" in capsys.readouterr().err


def test_cli_stops_cleanly_on_low_memory(tmp_path, monkeypatch):
    """Images on /dev/shm live in RAM: when memory runs low the run stops
    before the next workload, tears down and keeps what it measured,
    rather than letting the OOM killer take everything."""
    Dummy.calls = []
    avail = iter([8 << 30, 100 << 20])
    monkeypatch.setattr(cli, "mem_available", lambda: next(avail))
    out = tmp_path / "out"
    rc = cli.main(["--quick", "--systems", "passthrough,tmpfs", "--workloads",
                   "meta-flat,meta-tree", "--reps", "1", "--out", str(out)],
                  system_factory=_factory({}))
    assert rc == 3
    assert ("passthrough", "released") in Dummy.calls and ("tmpfs", "released") in Dummy.calls
    res = json.loads((out / "results.json").read_text())
    assert res["meta"]["complete"] is False
    assert "memory" in res["meta"]["interrupted"]
    assert {r["workload"] for r in res["raw"]} == {"meta-flat"}


def test_results_are_checkpointed_after_each_workload():
    """A SIGKILL (say, the OOM killer) must not lose the workloads done."""
    class W:
        durable = True

        def __init__(self, name):
            self.name = name

        def run(self, system, ctx, rep):
            return [{"metric": "m", "value": 1.0, "unit": "", "better": "higher"}]

    class S:
        def __init__(self, name):
            self.name = name

    seen = []
    results = {"raw": []}
    cli._run_interleaved([S("a"), S("b")], [W("w1"), W("w2")], None, 2, results,
                         checkpoint=lambda: seen.append(len(results["raw"])),
                         available=lambda: None)
    assert seen == [2, 4, 6, 8]


def test_raise_nofile_lifts_the_limit_for_the_child():
    """passthrough_ll needs a descriptor per inode the kernel holds."""
    import subprocess
    from dgbench.systems import raise_nofile
    out = subprocess.run(["sh", "-c", "ulimit -n"], preexec_fn=raise_nofile,
                         capture_output=True, text=True, check=True).stdout
    soft, hard = __import__("resource").getrlimit(__import__("resource").RLIMIT_NOFILE)
    assert int(out) >= hard     # 1 << 20 where CAP_SYS_RESOURCE allows


def test_metadata_refuses_more_files_than_the_system_can_hold(tmp_path):
    """Rather than run passthrough_ll into EMFILE (which breaks it for
    every later workload), the metadata workload says why it cannot."""
    from dgbench.workloads import Metadata

    class Small:
        name = "passthrough"

        def max_files(self):
            return 1000

    class Ctx:
        scale = {"meta_files": 5000}

    w = Metadata("flat")
    w.binary = "/nonexistent"       # must not be run
    recs = w._run(str(tmp_path), Small(), Ctx(), 0)
    assert recs[0]["value"] is None
    assert "1000" in recs[0]["error"] and "--meta-files" in recs[0]["error"]


def test_system_names_are_the_systems(cfg):
    assert [s.name for s in systems.all_systems(cfg)] == systems.SYSTEM_NAMES


@pytest.mark.parametrize("name,opts", [("daxguard-p1", None), ("daxguard-p1-wb", "writeback"),
                                       ("passthrough", None), ("passthrough-wb", "writeback")])
def test_writeback_variants_mount_with_the_option(cfg, monkeypatch, name, opts):
    """The -wb systems differ from their peers only by -o writeback."""
    s = {x.name: x for x in systems.all_systems(cfg)}[name]
    argv = []
    monkeypatch.setattr(s, "_start_fuse_daemon", argv.extend)
    s.src = "/src"
    s.binary = "/pt"
    s.images = ["a", "b"]
    s.start()
    o = [argv[i + 1] for i, a in enumerate(argv) if a == "-o"]
    assert any("writeback" in x for x in o) == bool(opts)
    assert s.dir.endswith("/" + name)
