# SPDX-License-Identifier: MIT
"""The daemon's fault event records are JSON built with json-c: one
line each, "event " and an object, whatever bytes the file's name holds
(quotes, a newline, bytes that are not UTF-8: path_hex has them all)."""
import json
import os
import subprocess

from conftest import INJECT


def test_event_record_with_hostile_name(volume_factory):
    v = volume_factory()
    v.mkfs()
    v.mount()
    v.expect_log(r"fault")
    name = b'ev "q"\nforged=1 \xff\xfe.bin'
    data = os.urandom(256 * 1024)
    with open(os.fsencode(v.mnt) + b"/" + name, "wb") as f:
        f.write(data)
    p = subprocess.run([os.fsencode(str(INJECT))] +
                       [os.fsencode(str(d)) for d in v.devs] +
                       [b"--fault", b"bitflip", b"--target", b"data",
                        b"--seed", b"5", b"--json", b"--file", b"/" + name],
                       capture_output=True)
    assert p.returncode == 0, p.stderr
    v.drop_caches()
    with open(os.fsencode(v.mnt) + b"/" + name, "rb") as f:
        assert f.read() == data
    v.status()      # turns the faults the read met into events
    events = []
    for line in v.read_log().splitlines():
        i = line.find("event ")
        if i >= 0:
            events.append(json.loads(line[i + len("event "):]))
    assert events, v.read_log()
    named = [e for e in events if "path_hex" in e]
    assert named, events
    e = named[0]
    assert bytes.fromhex(e["path_hex"]) == b"/" + name
    assert e["type"] in ("fault-detected", "fault-repaired")
    assert e["what"] == "data"
    assert isinstance(e["offset"], int) and isinstance(e["page"], int)
    assert "\ufffd" in e["path"]
    # No record was split or forged by the name's newline.
    assert not any(ln.startswith("forged=") for ln in
                   v.read_log().splitlines())
