# SPDX-License-Identifier: MIT
"""The NFS file handle a server gives for a path, through libnfs
(libnfs13, which libnfs-utils installs) by ctypes: what a client keeps
and sends back for every later operation on the file."""
import ctypes
import ctypes.util
import os


class NfsUrl(ctypes.Structure):
    _fields_ = [("server", ctypes.c_char_p), ("path", ctypes.c_char_p),
                ("file", ctypes.c_char_p)]


class NfsFh(ctypes.Structure):
    _fields_ = [("len", ctypes.c_int), ("val", ctypes.POINTER(ctypes.c_char))]


def load():
    """The libnfs library, or None if it is not installed."""
    for name in (ctypes.util.find_library("nfs"), "libnfs.so.13"):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.nfs_init_context.restype = ctypes.c_void_p
        lib.nfs_destroy_context.argtypes = [ctypes.c_void_p]
        lib.nfs_get_error.restype = ctypes.c_char_p
        lib.nfs_get_error.argtypes = [ctypes.c_void_p]
        lib.nfs_parse_url_full.restype = ctypes.POINTER(NfsUrl)
        lib.nfs_parse_url_full.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.nfs_destroy_url.argtypes = [ctypes.POINTER(NfsUrl)]
        lib.nfs_set_version.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.nfs_mount.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                  ctypes.c_char_p]
        lib.nfs_open.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_int,
                                 ctypes.POINTER(ctypes.c_void_p)]
        lib.nfs_close.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.nfs_get_fh.restype = ctypes.POINTER(NfsFh)
        lib.nfs_get_fh.argtypes = [ctypes.c_void_p]
        return lib
    return None


def file_handle(lib, url, export="/dg"):
    """The NFS file handle (bytes) of the file at url
    (nfs://HOST/EXPORT/PATH?version=4&nfsport=N), by OPEN."""
    nfs = lib.nfs_init_context()
    assert nfs, "nfs_init_context failed"
    u = None
    try:
        u = lib.nfs_parse_url_full(nfs, url.encode())
        assert u, lib.nfs_get_error(nfs)
        path = u.contents.path.decode() + u.contents.file.decode()
        rc = lib.nfs_mount(nfs, u.contents.server, export.encode())
        assert rc == 0, lib.nfs_get_error(nfs)
        fh = ctypes.c_void_p()
        rel = path[len(export):] if path.startswith(export) else path
        rc = lib.nfs_open(nfs, rel.encode(), os.O_RDONLY, ctypes.byref(fh))
        assert rc == 0, (rel, lib.nfs_get_error(nfs))
        h = lib.nfs_get_fh(fh).contents
        out = ctypes.string_at(h.val, h.len)
        lib.nfs_close(nfs, fh)
        return out
    finally:
        if u:
            lib.nfs_destroy_url(u)
        lib.nfs_destroy_context(nfs)
