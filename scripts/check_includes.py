#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_includes.py -- each engine layer is used through its face only.

Usage: scripts/check_includes.py [ROOT]
  (default: the checkout the script is in)

docs/design.md "Layers": a layer's public headers are in its include/
folder (fs/volume/include, fs/fsys/include); the headers next to its .c
files are its own.  The build enforces most of it (engine_dep exports the
include/ folders only), this names what the build cannot see:

  - a file outside a layer's folder that includes one of the layer's
    private headers, unless it is a white-box file named in WHITE_BOX
    below (its target then takes engine_internal_dep, fs/meson.build);
    a relative path ("../volume/volume_i.h") counts as well;
  - a public header (include/) that includes a private one;
  - the volume layer including any header of the filesystem layer above it;
  - a WHITE_BOX entry that no longer includes a private header (the list
    stays the list of files that look inside);
  - another header with the file name of a layer's header (an #include
    is matched by file name, as -I finds it).

Prints one line per finding and exits 1 if there is any (0 if none;
2 on a usage error).
"""
import os
import re
import sys

# Layers, lowest first: folder -> the layers above it, whose headers it
# must not include.
LAYERS = {"fs/volume": ("fs/fsys",), "fs/fsys": ()}

# White-box files: tests and test helpers that look inside a layer. A new
# one goes here and its meson target takes engine_internal_dep (and only
# then); a tool in the tree gets a public function in the engine instead.
WHITE_BOX = frozenset("""
tests/crash/old_layout.c
tests/crash/recorder.c
tests/crash/test_crash.c
tests/crash/test_crash_concurrent.c
tests/crash/test_crash_failpersist.c
tests/crash/test_crash_itable.c
tests/crash/test_crash_jbytes.c
tests/crash/test_crash_lean.c
tests/crash/test_crash_new_rows.c
tests/crash/test_crash_lone.c
tests/crash/test_crash_repair.c
tests/crash/test_crash_stage.c
tests/fuzz/fuzz_super.c
tests/fuzz/fuzz_vol.h
tests/fuzz/fz_cpage.c
tests/fuzz/fz_super.c
tests/fuzz/mkseeds.c
tests/unit/test_acl.c
tests/unit/test_alloc.c
tests/unit/test_check.c
tests/unit/damaged_rows.h
tests/unit/test_check_par.c
tests/unit/test_csum.c
tests/unit/test_csum_cache.c
tests/unit/test_dir.c
tests/unit/test_ditto.c
tests/unit/test_extent.c
tests/unit/test_geom.c
tests/unit/test_ident.c
tests/unit/test_inode.c
tests/unit/test_inspect.c
tests/unit/test_itable.c
tests/unit/test_journal.c
tests/unit/test_lean.c
tests/unit/test_copies_together.c
tests/unit/test_new_index.c
tests/unit/test_lone_rows.c
tests/unit/test_lazy.c
tests/unit/test_icache.c
tests/unit/test_icache_bound.c
tests/unit/test_latch.c
tests/unit/test_media_counts.c
tests/unit/test_parity.c
tests/unit/test_read.c
tests/unit/test_replace.c
tests/unit/test_scrub.c
tests/unit/test_scrub_par.c
tests/unit/test_setid.c
tests/unit/test_sigbus.c
tests/unit/test_stage.c
tests/unit/test_super.c
tests/unit/test_verify.c
tests/unit/test_walk.c
tests/unit/test_xattr.c
tests/unit/test_xattr_64k.c
tests/unit/test_xattr_run.c
""".split())

INCLUDE = re.compile(r'^\s*#\s*include\s*["<]([^">]+)[">]', re.M)
COMMENT = re.compile(r"/\*.*?\*/", re.S)
SOURCE = (".c", ".h", ".cc", ".cpp")


def headers(root, folder):
    """(private, public) headers of a layer: {basename: path}."""
    def listing(d):
        full = os.path.join(root, d)
        return {f: d + "/" + f for f in sorted(os.listdir(full))
                if f.endswith(".h")}
    return listing(folder), listing(folder + "/include")


def sources(root):
    """Every C source or header of the checkout, build folders left out."""
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and
                         not os.path.isdir(os.path.join(d, x, "meson-info")))
        for f in sorted(files):
            if f.endswith(SOURCE):
                yield os.path.relpath(os.path.join(d, f), root)


def resolve(root, src, name, layers):
    """The layer header an #include names, as (folder, path, private), or
    None. A name found next to the includer (or by a relative path from
    it) is that file; any other is found through -I, by its file name:
    no two headers of the checkout share one."""
    local = os.path.normpath(os.path.join(os.path.dirname(src), name))
    if os.path.isfile(os.path.join(root, local)):
        for folder, (private, public) in layers.items():
            if local in private.values():
                return folder, local, True
            if local in public.values():
                return folder, local, False
        return None
    base = os.path.basename(name)
    for folder, (private, public) in layers.items():
        if base in private:
            return folder, private[base], True
        if base in public:
            return folder, public[base], False
    return None


def check(root):
    layers = {f: headers(root, f) for f in LAYERS}
    findings = []
    looks_inside = set()
    srcs = list(sources(root))
    ours = {}
    for private, public in layers.values():
        ours.update(private)
        ours.update(public)
    for src in srcs:
        base = os.path.basename(src)
        if base in ours and src.replace(os.sep, "/") != ours[base]:
            findings.append("%s: has the name of %s, so an #include of it "
                            "cannot be told apart (rename one)"
                            % (src, ours[base]))
    for src in srcs:
        with open(os.path.join(root, src), encoding="utf-8",
                  errors="replace") as fh:
            text = COMMENT.sub(" ", fh.read())
        src_slash = src.replace(os.sep, "/")
        for name in INCLUDE.findall(text):
            hit = resolve(root, src_slash, name, layers)
            if hit is None:
                continue
            folder, path, private = hit
            inside = src_slash.startswith(folder + "/")
            public_face = src_slash.startswith(folder + "/include/")
            own = next((f for f in LAYERS if src_slash.startswith(f + "/")),
                       None)
            if own and folder in LAYERS[own]:
                findings.append("%s: includes %s: the %s layer is below %s"
                                % (src_slash, path, own, folder))
            elif private and public_face:
                findings.append("%s: a public header includes the private %s"
                                % (src_slash, path))
            elif private and not inside:
                looks_inside.add(src_slash)
                if src_slash not in WHITE_BOX:
                    findings.append(
                        "%s: includes %s, private to %s (use the headers of "
                        "%s/include, or, for a test, add the file to "
                        "WHITE_BOX in scripts/check_includes.py and give "
                        "its target engine_internal_dep)"
                        % (src_slash, path, folder, folder))
    for src in sorted(WHITE_BOX - looks_inside):
        findings.append("%s: in WHITE_BOX but includes no private header "
                        "of a layer (take it off the list, and its target "
                        "off engine_internal_dep)" % src)
    return findings


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    root = argv[1] if len(argv) == 2 else \
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not all(os.path.isdir(os.path.join(root, f, "include"))
               for f in LAYERS):
        sys.stderr.write("check_includes.py: %s has no %s\n"
                         % (root, " and ".join(f + "/include" for f in LAYERS)))
        return 2
    findings = check(root)
    for line in findings:
        print(line)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
