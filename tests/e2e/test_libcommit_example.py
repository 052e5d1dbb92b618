# SPDX-License-Identifier: MIT
"""The libcommit example program (libcommit/examples/counter.c, shown in
libcommit/README.md and libcommit(3)) works as documented: its counter
grows by one a run, and the synced value survives a remount."""
import struct
import subprocess

import pytest

from conftest import BUILD, ROOT

COUNTER = BUILD / "libcommit" / "examples" / "counter"


def counter(path, *args):
    p = subprocess.run([str(COUNTER), str(path), *map(str, args)],
                       stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, (p.stdout, p.stderr)
    return int(p.stdout.strip())


def stored_count(path):
    """The counter as the file holds it, read through the mount."""
    with open(path, "rb") as f:
        magic, count = struct.unpack("<8sQ", f.read(16))
    assert magic == b"dgcount1"
    return count


def test_counter_persists_across_runs_and_remount(mounted):
    if not COUNTER.exists():
        pytest.fail(f"{COUNTER} is not built")
    f = mounted.mnt / "counter"
    assert counter(f) == 1
    assert counter(f) == 2
    assert stored_count(f) == 2
    mounted.remount()
    assert stored_count(f) == 2
    assert counter(f, 5) == 7
    mounted.remount()
    assert stored_count(f) == 7
    assert counter(f) == 8


def example_body():
    """counter.c from its first #include on: what the docs show."""
    src = (ROOT / "libcommit" / "examples" / "counter.c").read_text()
    return src[src.index("#include <errno.h>"):].rstrip("\n")


def test_docs_show_the_example_as_built():
    """README and man page carry the program verbatim (scdoc needs each
    backslash doubled), so they cannot drift from what the test runs."""
    body = example_body()
    readme = (ROOT / "libcommit" / "README.md").read_text()
    assert "```c\n" + body + "\n```" in readme
    man = (ROOT / "doc" / "man" / "libcommit.3.scd").read_text()
    assert "```\n" + body.replace("\\", "\\\\") + "\n```" in man
