#!/usr/bin/env python3
"""Fail when a tests/e2e/test_*.py file is not in tests/meson.build's
e2e_files list (meson would silently never run it), or when the list
names a file that does not exist."""
import pathlib
import sys

here = pathlib.Path(__file__).resolve().parent
on_disk = {p.name for p in here.glob('test_*.py')}
listed = set(sys.argv[1:])
missing = sorted(on_disk - listed)
stale = sorted(listed - on_disk)
for name in missing:
    print(f'tests/e2e/{name} is not in e2e_files in tests/meson.build')
for name in stale:
    print(f'e2e_files in tests/meson.build names {name}, which does not exist')
sys.exit(1 if missing or stale else 0)
