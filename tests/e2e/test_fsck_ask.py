# SPDX-License-Identifier: MIT
"""fsck.daxguard without -n, -y or -p on a terminal asks before each
repair (fsck/ask.c), as e2fsck does: one question per finding, the
answer kept by device page so that no later pass repairs what was
declined, and the report says "declined". Run under a real pseudo
terminal; no terminal means check only."""
import os
import pty
import select
import subprocess
import time

import pytest

from conftest import FSCK
from dgfault import copy_of, fsck, inject, make_tree, manifest


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    from conftest import Volume
    tmp = tmp_path_factory.mktemp("golden-ask")
    v = Volume(tmp, ndev=4, size="32M", tag=f"fsck-ask-{os.getpid()}")
    v.mkfs()
    v.mount()
    try:
        make_tree(v.mnt, seed=3, small=20, large=1)
        want = manifest(v.mnt)
    finally:
        v.umount()
    yield v, want
    v.cleanup()


def two_bad_pages(v):
    """Two data pages on different devices fail their checksums; both
    are repairable from parity. Returns their (device, page)."""
    where = set()
    for seed in range(1, 40):
        rep, _ = inject(v.devs, "bitflip", "data", seed=seed)
        for ch in rep["changes"]:
            where.add((ch["device"], ch["page"]))
        if len({d for d, _ in where}) >= 2:
            break
    assert len({d for d, _ in where}) >= 2, where
    return where


def ask_run(devs, answer, timeout=120):
    """fsck.daxguard DEVS on a pty; answer(question) gives each reply
    (None: close the terminal, which is end of input). Returns the exit
    status, the questions asked and everything printed."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(str(FSCK), [str(FSCK)] + [str(d) for d in devs])
    out, questions, pending = b"", [], b""
    deadline = time.monotonic() + timeout
    status = None
    try:
        while time.monotonic() < deadline:
            r, _, _ = select.select([fd], [], [], 0.5)
            if not r:
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = st
                    break
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                break
            out += chunk
            pending += chunk
            if pending.rstrip().endswith(b"[no]"):
                q = pending.decode(errors="replace")
                questions.append(q)
                pending = b""
                reply = answer(q)
                if reply is None:
                    os.write(fd, b"\x04")	# ^D: end of input
                else:
                    os.write(fd, reply.encode() + b"\n")
        if status is None:
            _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    return os.waitstatus_to_exitcode(status), questions, out.decode(
        errors="replace")


def page_findings(rep):
    return {(f["device"], f["page"]) for f in rep["findings"]
            if f["code"] == "PR_2_PAGE_BAD"}


def test_each_finding_asked_and_a_no_is_kept(golden, volume_factory):
    g, want = golden
    v = copy_of(g, volume_factory)
    bad = two_bad_pages(v)
    declined = sorted(bad)[0]
    rc, questions, out = ask_run(
        v.devs, lambda q: "no" if f"device {declined[0]} page "
        f"{declined[1]} " in q else "yes")
    # One question per bad page, each once, whatever pass met it.
    asked = [q for q in questions if "PR_2_PAGE_BAD" in q]
    assert len(asked) == len(bad), out
    assert rc == 4, out		# one corrected, one left (4 wins)
    assert "declined" in out, out
    # What was declined is still there, and only that.
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 4, p.stdout + p.stderr
    assert page_findings(rep) == {declined}, rep
    rc, rep, p = fsck(v.devs, "-y", json_out=True)
    assert rc == 1, p.stdout + p.stderr
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0, p.stdout + p.stderr
    v.mount()
    try:
        assert manifest(v.mnt) == want
    finally:
        v.umount()


def test_all_answers_yes_to_the_rest(golden, volume_factory):
    g, _ = golden
    v = copy_of(g, volume_factory)
    two_bad_pages(v)
    rc, questions, out = ask_run(v.devs, lambda q: "all")
    assert len(questions) == 1, out	# no more questions after "all"
    assert rc == 1, out
    rc, _, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0, p.stdout + p.stderr


def test_end_of_input_and_nonsense_are_no(golden, volume_factory):
    g, _ = golden
    v = copy_of(g, volume_factory)
    bad = two_bad_pages(v)
    replies = iter(["maybe", None])
    rc, questions, out = ask_run(v.devs, lambda q: next(replies, None))
    assert "Please answer yes, no or all." in out, out
    assert rc == 4, out
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 4 and page_findings(rep) == bad, p.stdout + p.stderr


def test_json_report_marks_declined(golden, volume_factory):
    """--json never asks (its output is the report), so a declined
    finding is seen through the text run; the JSON of a check-only run
    has declined false everywhere."""
    g, _ = golden
    v = copy_of(g, volume_factory)
    two_bad_pages(v)
    rc, rep, p = fsck(v.devs, json_out=True)
    assert rc == 4 and rep["mode"] == "n", rep["mode"]
    assert rep["findings"] and not any(f["declined"]
                                       for f in rep["findings"])


def test_without_a_terminal_only_checks(golden, volume_factory):
    g, _ = golden
    v = copy_of(g, volume_factory)
    bad = two_bad_pages(v)
    p = subprocess.run([str(FSCK)] + [str(d) for d in v.devs],
                       stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 4, p.stdout + p.stderr
    assert "[no]" not in p.stdout, p.stdout
    rc, rep, _ = fsck(v.devs, "-n", json_out=True)
    assert rc == 4 and page_findings(rep) == bad


def test_a_declined_superblock_repair_leaves_a_check(golden, volume_factory):
    """Superblocks and the journal are repaired together by the writable
    open: a no to one of them writes nothing at all."""
    g, _ = golden
    v = copy_of(g, volume_factory)
    inject(v.devs, "scribble", "superblock", seed=1)
    two_bad_pages(v)
    before = [d.read_bytes() for d in v.devs]
    rc, questions, out = ask_run(
        v.devs, lambda q: "no" if "PR_0_SUPER" in q else "yes")
    assert any("PR_0_SUPER" in q for q in questions), out
    assert "checking only, nothing written" in out, out
    assert rc == 4, out
    assert [d.read_bytes() for d in v.devs] == before


@pytest.mark.parametrize("target,code", [("checksum", "PR_2_CSUM"),
                                         ("parity", "PR_2_")])
def test_engine_repairs_are_asked(golden, volume_factory, target, code):
    """Checksum copies and parity are repaired by the engine on its own
    way: asked too, and a no leaves them as found."""
    g, _ = golden
    v = copy_of(g, volume_factory)
    inject(v.devs, "bitflip", target, seed=2)
    _, rep0, _ = fsck(v.devs, "-n", json_out=True)
    rc, questions, out = ask_run(v.devs, lambda q: "no")
    assert any(code in q for q in questions), out
    assert rc == 4, out
    rc, rep, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 4, p.stdout
    assert {(f["code"], f["device"], f["page"]) for f in rep["findings"]} \
        == {(f["code"], f["device"], f["page"]) for f in rep0["findings"]}
    rc, questions, out = ask_run(v.devs, lambda q: "yes")
    assert rc == 1, out
    rc, _, p = fsck(v.devs, "-n", json_out=True)
    assert rc == 0, p.stdout
