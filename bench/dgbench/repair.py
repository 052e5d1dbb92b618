"""The repair workload: the same faults, written into each system's backing
images behind its back, then: detected? repaired? data intact? how long?

Faults (all deterministic from --seed):
  bitflip      one bit flipped inside the victim file's data
  zero-1m      1 MiB zeroed in one image, starting at the victim file's data
  device-loss  one whole image replaced by a blank one of the same size

The victim file is written with pseudo-random content whose every 4 KiB
block is unique, so the harness finds where each system stored it by
searching the images for that block: the same fault for every system
without knowing any on-media format.  For daxguard, daxguard-inject is
used when the search finds nothing (e.g. a transformed layout).
"""

import hashlib
import json
import mmap
import os
import random
import re
import time

from .systems import Btrfs, Daxguard, Passthrough, Zfs, mounted
from .util import Skip, log, run, wait_for

FAULTS = ["bitflip", "zero-1m", "device-loss"]
BLOCK = 4096


def victim_bytes(size, seed):
    return random.Random(seed).randbytes(size)


def locate(paths, needle):
    """First (path, offset) where needle occurs in one of paths, or None."""
    for p in paths:
        if not os.path.getsize(p):
            continue
        with open(p, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            off = m.find(needle)
            if off >= 0:
                return p, off
    return None


def flip_bit(path, offset, bit):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([b ^ (1 << bit)]))


def zero_range(path, offset, length):
    size = os.path.getsize(path)
    length = max(0, min(length, size - offset))
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(b"\0" * length)
    return length


def inject(system, fault, data, seed, victim_in_fs):
    """Write `fault` into system's backing store (system is stopped)."""
    rnd = random.Random(seed)
    if isinstance(system, Passthrough):
        paths = [system.backing_path(victim_in_fs)]
        if fault == "device-loss":
            raise Skip("no devices: passthrough over a directory")
    else:
        paths = list(system.images)
    if not paths:
        raise Skip("no backing images")
    if fault == "device-loss":
        if len(paths) < 2:
            raise Skip("single device: losing it loses everything")
        idx = rnd.randrange(len(paths))
        size = os.path.getsize(paths[idx])
        with open(paths[idx], "r+b") as f:
            f.truncate(0)
            f.truncate(size)
        return {"image": idx, "what": f"image {idx} replaced by a blank one"}
    # daxguard's journal holds copies of recent writes: a content search
    # may find one of those instead of the file's page, so daxguard is
    # told where the file lives by its own injector.
    if isinstance(system, Daxguard) and system.have("inject"):
        return _daxguard_inject(system, fault, victim_in_fs, seed)
    nblocks = len(data) // BLOCK
    blk = rnd.randrange(nblocks // 4, nblocks // 2) if fault == "zero-1m" else rnd.randrange(nblocks)
    hit = locate(paths, data[blk * BLOCK:(blk + 1) * BLOCK])
    if hit is None:
        raise Skip("victim data not found in the images (stored transformed?)")
    path, off = hit
    idx = paths.index(path)
    if fault == "bitflip":
        byte, bit = rnd.randrange(BLOCK), rnd.randrange(8)
        flip_bit(path, off + byte, bit)
        return {"image": idx, "offset": off + byte, "bit": bit,
                "what": f"bit {bit} flipped at image {idx} offset {off + byte} (file block {blk})"}
    n = zero_range(path, off, 1 << 20)
    return {"image": idx, "offset": off, "length": n,
            "what": f"{n} bytes zeroed in image {idx} from offset {off} (file block {blk})"}


def _daxguard_inject(system, fault, victim_in_fs, seed):
    kind = {"bitflip": "bitflip", "zero-1m": "zero"}[fault]
    extra = ["--len", str(1 << 20)] if fault == "zero-1m" else []
    rel = "/" + os.path.relpath(victim_in_fs, system.mnt)
    cp = run([system.bin["inject"], *system.images, "--fault", kind, "--target", "data",
              "--file", rel, "--seed", str(seed), "--json", *extra], timeout=300)
    try:
        return {"what": "daxguard-inject", "report": json.loads(cp.stdout)}
    except ValueError:
        return {"what": "daxguard-inject", "report": cp.stdout[-2000:]}


def sha_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _read_ok(path, want):
    try:
        return sha_of(path) == want, None
    except OSError as e:
        return False, f"{e.strerror} (errno {e.errno})"


# -- per-family detection and repair ------------------------------------------
def parse_btrfs_scrub(text):
    if "no errors found" in text:
        return {"errors": 0, "corrected": 0, "uncorrectable": 0}
    def num(label):
        m = re.search(label + r"(?: errors)?:\s+(\d+)", text, re.I)
        return int(m.group(1)) if m else 0
    csum = sum(int(x) for x in re.findall(r"(?:csum|read|verify|super)=(\d+)", text))
    corrected, unc = num("corrected"), num("uncorrectable")
    return {"errors": max(csum, corrected + unc), "corrected": corrected, "uncorrectable": unc}


def btrfs_repair(system, fault, info):
    out = {}
    stats = run(["btrfs", "device", "stats", system.mnt], check=False).stdout
    out["device_stats_errors"] = sum(int(x) for x in re.findall(r"\s(\d+)$", stats, re.M))
    t0 = time.monotonic()
    if fault == "device-loss":
        new = run(["losetup", "-f", "--show", system.images[info["image"]]]).stdout.strip()
        system.loops[info["image"]] = new
        cp = run(["btrfs", "replace", "start", "-B", "-f", str(info["image"] + 1), new,
                  system.mnt], check=False, timeout=3600)
        out["replace"] = (cp.stdout + cp.stderr).strip()[-500:]
        out["replace_rc"] = cp.returncode
    cp = run(["btrfs", "scrub", "start", "-B", system.mnt], check=False, timeout=3600)
    out["seconds"] = time.monotonic() - t0
    first = parse_btrfs_scrub(cp.stdout + cp.stderr)
    again = parse_btrfs_scrub(run(["btrfs", "scrub", "start", "-B", system.mnt],
                                  check=False, timeout=3600).stdout)
    out.update(scrub=first, rescrub=again)
    out["detected"] = bool(out["device_stats_errors"] or first["errors"] or fault == "device-loss")
    out["repaired"] = again["errors"] == 0 and first["uncorrectable"] == 0 and \
        out.get("replace_rc", 0) == 0
    return out


def _zpool_status(pool):
    return run(["zpool", "status", "-v", pool], check=False).stdout


def _zpool_errors(status):
    total = 0
    for line in status.splitlines():
        f = line.split()
        if len(f) >= 5 and all(x.isdigit() for x in f[2:5]) and f[0] != "NAME":
            total += sum(int(x) for x in f[2:5])
    bad_state = re.search(r"\b(DEGRADED|FAULTED|UNAVAIL|REMOVED)\b", status) is not None \
        or re.search(r"^status:", status, re.M) is not None
    return total, bad_state


def _zpool_wait(pool, timeout=3600):
    wait_for(lambda: not re.search(r"(scrub|resilver) in progress", _zpool_status(pool)),
             timeout, 0.5)


def zfs_repair(system, fault, info):
    out = {}
    before = _zpool_status(system.pool)
    errs, bad = _zpool_errors(before)
    t0 = time.monotonic()
    if fault == "device-loss":
        cp = run(["zpool", "replace", "-f", system.pool, system.images[info["image"]]],
                 check=False, timeout=600)
        out["replace"] = (cp.stdout + cp.stderr).strip()[-500:]
        _zpool_wait(system.pool)
    run(["zpool", "scrub", system.pool], check=False)
    _zpool_wait(system.pool)
    out["seconds"] = time.monotonic() - t0
    after = _zpool_status(system.pool)
    errs2, _ = _zpool_errors(after)
    out["status_before"], out["status_after_scrub"] = before[-1500:], after[-1500:]
    run(["zpool", "clear", system.pool], check=False)
    run(["zpool", "scrub", system.pool], check=False)
    _zpool_wait(system.pool)
    final = _zpool_status(system.pool)
    errs3, bad3 = _zpool_errors(final)
    out["detected"] = bool(errs or bad or errs2)
    out["repaired"] = errs3 == 0 and not bad3 and "No known data errors" in final
    return out


def daxguard_repair(system, fault, info):
    out = {"status": system.status()}
    system.stop()
    t0 = time.monotonic()
    cp = run([system.bin["fsck"], "-y", *system.images], check=False, timeout=3600)
    out["seconds"] = time.monotonic() - t0
    out["fsck_y_rc"] = cp.returncode
    out["fsck_y"] = (cp.stdout + cp.stderr)[-1500:]
    cp = run([system.bin["fsck"], "-n", *system.images], check=False, timeout=3600)
    out["fsck_n_after_rc"] = cp.returncode
    st = json.dumps(out["status"] or {})
    out["detected"] = bool(info.get("fsck_n_rc") not in (0, None) or cp.returncode != 0
                           or out["fsck_y_rc"] in (1, 2, 3, 4, 5, 6, 7)
                           or re.search(r'"(detected|repaired|degraded)[a-z_]*"\s*:\s*[1-9t]', st))
    out["repaired"] = out["fsck_y_rc"] in (0, 1) and cp.returncode == 0
    system.start()
    return out


def plain_repair(system, fault, info):
    return {"detected": False, "repaired": False, "seconds": None,
            "note": "no checksums or redundancy to repair from"}


def repair_fn(system):
    if isinstance(system, Btrfs):
        return btrfs_repair
    if isinstance(system, Zfs):
        return zfs_repair
    if isinstance(system, Daxguard):
        return daxguard_repair
    return plain_repair


def check_system(system):
    """Raise Skip when the repair workload cannot run on this system."""
    if isinstance(system, Daxguard):
        for tool in ("fsck", "inject"):
            if not system.have(tool):
                raise Skip(f"{system.bin[tool]} missing")
    if not system.uses_images and not isinstance(system, Passthrough):
        raise Skip("no backing images to damage (data lives only in RAM)")


def run_fault(system, fault, size, seed):
    """One fault on a fresh system; returns the result record."""
    rec = {"system": system.name, "fault": fault, "seed": seed}
    data = victim_bytes(size, seed)
    want = hashlib.sha256(data).hexdigest()
    check_system(system)
    with mounted(system):
        victim = os.path.join(system.mnt, "victim.bin")
        with open(victim, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        system.stop()
        info = inject(system, fault, data, seed, victim)
        rec["injected"] = info.get("what")
        if isinstance(system, Daxguard):
            cp = run([system.bin["fsck"], "-n", *system.images], check=False, timeout=3600)
            info["fsck_n_rc"] = rec["fsck_n_before_rc"] = cp.returncode
        try:
            if isinstance(system, Btrfs) and fault == "device-loss":
                system.start(degraded=True, missing=(info["image"],))
            else:
                system.start(degraded=fault == "device-loss")
        except Exception as e:  # noqa: BLE001 - a failed mount is a result
            rec.update(mounted=False, detected=True, repaired=False, intact=False,
                       error=f"mount after fault failed: {e}")
            return rec
        rec["read_ok"], rec["read_error"] = _read_ok(victim, want)
        res = repair_fn(system)(system, fault, info)
        rec.update({k: v for k, v in res.items() if k not in ("detected", "repaired")})
        rec["repair_seconds"] = res.get("seconds")
        system.stop()
        system.start()
        rec["intact"], rec["intact_error"] = _read_ok(victim, want)
        rec["detected"] = bool(res["detected"] or not rec["read_ok"] and rec["read_error"])
        rec["repaired"] = bool(res["repaired"] and rec["intact"])
    return rec


def run_repair(make_system, names, scale, seed, log_path):
    """Run every fault on every named system; returns a list of records."""
    out = []
    open(log_path, "w").close()
    for name in names:
        for i, fault in enumerate(FAULTS):
            system = make_system(name)
            log(f"repair: {name} {fault}")
            try:
                rec = run_fault(system, fault, scale["repair_file"], seed + i)
            except Skip as e:
                rec = {"system": name, "fault": fault, "skipped": str(e)}
            except Exception as e:  # noqa: BLE001 - record, go on with the next
                rec = {"system": name, "fault": fault, "error": f"{type(e).__name__}: {e}"}
            if system.teardown_errors:
                rec["teardown_errors"] = system.teardown_errors
            out.append(rec)
            with open(log_path, "a") as f:
                f.write(json.dumps(rec, default=str) + "\n")
    return out
