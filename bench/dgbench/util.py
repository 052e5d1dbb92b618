"""Small helpers shared by the harness modules: running commands, logging."""

import os
import shutil
import subprocess
import sys
import time


class Skip(Exception):
    """A system or workload cannot run here; the message is the reason."""


def log(msg):
    print(f"[dgbench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(cmd, *, check=True, timeout=600, env=None, cwd=None, input=None):
    """Run cmd (a list), return CompletedProcess with text stdout/stderr.

    Raises RuntimeError with the command's stderr when check is true and the
    command fails, so callers see why a setup step went wrong.
    """
    full_env = None
    if env:
        full_env = dict(os.environ)
        full_env.update(env)
    try:
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                            env=full_env, cwd=cwd, input=input)
    except FileNotFoundError as e:
        raise RuntimeError(f"{cmd[0]}: not found") from e
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: timed out after {timeout}s") from e
    if check and cp.returncode != 0:
        msg = (cp.stderr or cp.stdout).strip().splitlines()
        tail = " | ".join(msg[-3:])
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {cp.returncode}: {tail}")
    return cp


def which(name):
    return shutil.which(name)


def is_mounted(path):
    path = os.path.realpath(path)
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 1 and fields[1].replace("\\040", " ") == path:
                    return True
    except OSError:
        pass
    return False


def wait_for(pred, timeout=10.0, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def parse_size(s):
    """'1G' -> bytes. Accepts K, M, G, T suffixes (binary) and plain bytes."""
    s = str(s).strip().upper().rstrip("B").rstrip("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)
