#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Golden fsck tests, e2fsprogs style (tests/f_*/ there).

Each tests/fsck/f_<name>/ holds
  script    bash, sourced after lib.sh: makes a small volume in $IMG
            and damages it (mkvol, mounted, tree, inject; see lib.sh).
            No image is committed: the script is the test's input.
  expect.1  the exact output of the first `fsck.daxguard -y` on it
            (stdout, then stderr), and "Exit status is N"
  expect.2  the same of the second run: a clean volume, exit 0 (or the
            warnings an earlier run leaves, exit 0)

Output is normalised before it is compared, so that it holds only what
fsck decided (sed-like, in normalise()):
  IMG                   the test's image directory (device paths)
  UUID                  any volume UUID
  ROWS, PAGES, SECS     "N rows, M pages checked in S s": how much the
                        page pass read (which rows it may skip is not
                        what these tests pin) and how long it took
  SECS                  any other "in S s" / "S s" timing
  PAGES                 "rebuilt on 'PATH': N pages from parity": how
                        many pages a device rebuild wrote (which rows it
                        may skip is not what these tests pin either)

Usage: run_golden.py [--build DIR] [--update] [-j N] [f_NAME...]
  --update  write expect.1 and expect.2 from this run (review the diff)
  -j N      run N tests at a time (default 2; each is a few processes
            that mostly wait on one another)
Exit status: 0 all match, 1 a test differs or failed, 2 bad usage,
77 skipped (no FUSE to write the files through).
"""
import argparse
import concurrent.futures
import difflib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SKIP = 77

UUID_RE = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                     r"[0-9a-f]{12}\b")
STATS_RE = re.compile(r"\b\d+ rows, \d+ pages checked in \d+(\.\d+)? s\b")
SECS_RE = re.compile(r"\b\d+\.\d+ s\b")
REBUILT_RE = re.compile(r"\b\d+ pages from parity\b")


def normalise(text, img):
    text = text.replace(str(img), "IMG")
    text = UUID_RE.sub("UUID", text)
    text = STATS_RE.sub("ROWS rows, PAGES pages checked in SECS s", text)
    text = REBUILT_RE.sub("PAGES pages from parity", text)
    return SECS_RE.sub("SECS s", text)


def run_fsck(fsck, devs, img):
    p = subprocess.run([str(fsck), "-y"] + devs, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=300)
    out = normalise(p.stdout + p.stderr, img)
    return out + f"Exit status is {p.returncode}\n"


def make_image(test, img, build):
    """Run the test's script; the devices it leaves in DEVS."""
    env = dict(os.environ,
               IMG=str(img),
               MKFS=str(build / "mkfs" / "mkfs.daxguard"),
               DAEMON=str(build / "fs" / "daemon" / "daxguard"),
               INJECT=str(build / "fsck" / "daxguard-inject"))
    sh = (f'set -eu; source "{HERE / "lib.sh"}"; '
          f'source "{test / "script"}"; '
          'printf "%s\\n" "${DEVS[@]}"')
    p = subprocess.run(["bash", "-c", sh], env=env, cwd=img,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=300)
    if p.returncode:
        raise RuntimeError(f"script failed ({p.returncode}):\n{p.stderr}")
    return p.stdout.split()


def cleanup(img):
    mnt = img / "mnt"
    if os.path.ismount(mnt):
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)],
                       capture_output=True)
    shutil.rmtree(img, ignore_errors=True)


def check(test, build, update):
    """(0 when the test matches or was updated, else 1; what to print)"""
    out = io.StringIO()
    bad = check_into(test, build, update, out)
    return bad, out.getvalue()


def check_into(test, build, update, log):
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    img = Path(tempfile.mkdtemp(prefix="dg-golden-", dir=base))
    try:
        devs = make_image(test, img, build)
        fsck = build / "fsck" / "fsck.daxguard"
        got = [run_fsck(fsck, devs, img), run_fsck(fsck, devs, img)]
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"{test.name}: FAILED: {e}", file=log)
        return 1
    finally:
        cleanup(img)
    bad = 0
    for i, out in enumerate(got, 1):
        exp = test / f"expect.{i}"
        if update:
            exp.write_text(out)
            continue
        want = exp.read_text() if exp.exists() else ""
        if out != want:
            bad = 1
            log.writelines(difflib.unified_diff(
                want.splitlines(True), out.splitlines(True),
                str(exp), f"{test.name} run {i}"))
    print(f"{test.name}: {'updated' if update else 'FAILED' if bad else 'ok'}",
          file=log)
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("DG_BUILD_DIR",
                                                      "build"))
    ap.add_argument("--update", action="store_true")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("tests", nargs="*")
    a = ap.parse_args()
    build = Path(a.build).resolve()
    tests = sorted(p for p in HERE.glob("f_*") if p.is_dir())
    if a.tests:
        tests = [t for t in tests if t.name in a.tests]
        if len(tests) != len(set(a.tests)):
            ap.error("no such test among " + " ".join(a.tests))
    if not os.path.exists("/dev/fuse") or not shutil.which("fusermount3"):
        print("skipped: no FUSE")
        return SKIP
    bad = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as pool:
        for b, text in pool.map(lambda t: check(t, build, a.update), tests):
            sys.stdout.write(text)
            sys.stdout.flush()
            bad |= b
    return bad


if __name__ == "__main__":
    sys.exit(main())
