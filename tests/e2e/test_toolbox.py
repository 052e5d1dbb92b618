# SPDX-License-Identifier: MIT
"""The tools as an administrator meets them: --version and --help on every
one, device lists in the forms fstab, mount(8) and fsck(8) use."""
import re

import pytest

from conftest import CTL, DAEMON, FSCK, INJECT, MKFS, ROOT, run

TOOLS = [MKFS, DAEMON, CTL, FSCK, INJECT]


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
