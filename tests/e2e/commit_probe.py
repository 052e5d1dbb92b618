# SPDX-License-Identifier: MIT
"""Run by test_libcommit_boundary.py as an unprivileged user (not a test
itself): map FILE through libcommit (mode lib, ctypes) or through the
preload shim (mode shim, mmap(MAP_SHARED) under LD_PRELOAD), then try
every descriptor the process holds with pread and mmap over its whole
length, looking for SECRET. Prints one JSON object.

usage: commit_probe.py lib|shim LIBCOMMIT_SO FILE OWN_HEX SECRET_HEX"""
import ctypes
import json
import mmap
import os
import stat
import sys

CHUNK = 16 << 20


def scan_fd(fd, secret, own):
    """What pread and mmap of fd reach: sizes, and whether secret/own
    bytes appear anywhere in them."""
    r = {"fd": fd, "found_secret": False, "found_own": False}
    try:
        st = os.fstat(fd)
        r["target"] = os.readlink(f"/proc/self/fd/{fd}")
    except OSError as e:
        r["error"] = e.errno
        return r
    r["dev_ino"] = [st.st_dev, st.st_ino]
    r["mode"] = stat.filemode(st.st_mode)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
    except OSError:
        size = st.st_size
    size = max(size, st.st_size)
    r["size"] = size
    # pread of every byte, chunk by chunk (a chunk overlaps the next by
    # the marker's length so nothing straddles unseen).
    off, got = 0, 0
    while off < size:
        try:
            b = os.pread(fd, CHUNK + len(secret), off)
        except OSError as e:
            r["pread_error"] = e.errno
            break
        if not b:
            break
        got += len(b)
        r["found_secret"] |= secret in b
        r["found_own"] |= own in b
        off += CHUNK
    r["pread_bytes"] = got
    # mmap at every chunk offset, private and shared.
    mapped = 0
    for flags in (mmap.MAP_PRIVATE, mmap.MAP_SHARED):
        for off in range(0, size, CHUNK):
            n = min(CHUNK, size - off)
            try:
                mm = mmap.mmap(fd, n, flags=flags, prot=mmap.PROT_READ,
                               offset=off)
            except (OSError, ValueError) as e:
                r.setdefault("mmap_errors", []).append(
                    getattr(e, "errno", None) or str(e))
                break
            try:
                data = mm[:]
            finally:
                mm.close()
            mapped += len(data)
            r["found_secret"] |= secret in data
            r["found_own"] |= own in data
    r["mmap_bytes"] = mapped
    return r


def main():
    mode, lib, path, own, secret = sys.argv[1:6]
    own, secret = bytes.fromhex(own), bytes.fromhex(secret)
    out = {"uid": os.getuid(), "euid": os.geteuid()}
    keep = []
    if mode == "lib":
        lc = ctypes.CDLL(lib)
        lc.commit_map_new.argtypes = [ctypes.c_char_p, ctypes.c_uint64,
                                      ctypes.c_size_t, ctypes.c_uint,
                                      ctypes.POINTER(ctypes.c_void_p)]
        lc.commit_map_addr.restype = ctypes.c_void_p
        lc.commit_map_addr.argtypes = [ctypes.c_void_p]
        lc.commit_map_len.restype = ctypes.c_size_t
        lc.commit_map_len.argtypes = [ctypes.c_void_p]
        lc.commit_map_is_direct.argtypes = [ctypes.c_void_p]
        lc.commit_errormsg.restype = ctypes.c_char_p
        m = ctypes.c_void_p()
        out["map_rdwr"] = lc.commit_map_new(path.encode(), 0, 0, 1,
                                            ctypes.byref(m))
        out["map_direct"] = lc.commit_map_new(path.encode(), 0, 0, 2,
                                              ctypes.byref(m))
        out["map_direct_msg"] = lc.commit_errormsg().decode()
        out["map"] = lc.commit_map_new(path.encode(), 0, 0, 0,
                                       ctypes.byref(m))
        if out["map"] == 0:
            out["direct"] = lc.commit_map_is_direct(m)
            data = ctypes.string_at(lc.commit_map_addr(m),
                                    lc.commit_map_len(m))
            out["content_own"] = own in data
            out["content_secret"] = secret in data
            keep.append(m)
    else:
        fd = os.open(path, os.O_RDONLY)
        size = os.fstat(fd).st_size
        try:
            mmap.mmap(fd, size, flags=mmap.MAP_SHARED,
                      prot=mmap.PROT_READ | mmap.PROT_WRITE)
            out["map_rdwr"] = 0
        except OSError as e:
            out["map_rdwr"] = -e.errno
        mm = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        out["map"] = 0
        data = mm[:]
        out["content_own"] = own in data
        out["content_secret"] = secret in data
        keep.append(mm)
    fds = sorted(int(x) for x in os.listdir("/proc/self/fd"))
    out["fds"] = [scan_fd(fd, secret, own) for fd in fds]
    out["sockets"] = sum(1 for f in out["fds"]
                         if f.get("target", "").startswith("socket:"))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
