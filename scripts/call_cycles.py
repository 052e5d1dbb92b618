#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""call_cycles.py -- loops of calls between the C files of one folder.

Usage: scripts/call_cycles.py [FOLDER ...]
  (default: fs/volume fs/fsys fs/daemon of the checkout the script is in)

An arrow A -> B means A.c names a function that B.c alone defines with
external linkage (a call, or its address taken as a hook).  Headers are not
rooms: a constant or an inline function is no arrow.  Prints every strongly
connected component of more than one file, with the names that tie it, and
exits 1 if any folder has one (0 if none; 2 on a usage error).
"""
import os
import re
import sys

IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
MEMBER = re.compile(r"(?:\.|->)\s*[A-Za-z_]\w*")


SIGNATURE = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
ATTRIBUTE = re.compile(r"^__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)\s*")


def definitions(path):
    """Functions a file defines: {name: is_static}.  The kernel style the
    project keeps: a definition's body opens with a "{" alone at the
    start of a line, under its signature, whose first line starts at
    column 0."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    defs = {}
    for i, line in enumerate(lines):
        if line.rstrip() != "{":
            continue
        j = i - 1
        while j > 0 and lines[j][:1] in ("\t", " "):
            j -= 1
        sig = ATTRIBUTE.sub("", lines[j])
        m = SIGNATURE.search(sig)
        if m and not sig.startswith("#"):
            defs[m.group(1)] = sig.startswith("static")
    return defs


def graph(folder):
    files = sorted(f for f in os.listdir(folder) if f.endswith(".c"))
    defs = {f: definitions(os.path.join(folder, f)) for f in files}
    owner = {}
    for f, d in defs.items():
        for name, static in d.items():
            if not static and name != "main":  # main is never called
                owner.setdefault(name, []).append(f)
    owner = {n: fs[0] for n, fs in owner.items() if len(fs) == 1}
    edges = {f: {} for f in files}
    for f in files:
        with open(os.path.join(folder, f), encoding="utf-8") as fh:
            text = STRING.sub('""', COMMENT.sub(" ", fh.read()))
        text = MEMBER.sub(" ", text)  # a struct's member, not a call
        for name in set(IDENT.findall(text)):
            g = owner.get(name)
            if g and g != f and name not in defs[f]:
                edges[f].setdefault(g, []).append(name)
    return edges


def sccs(edges):
    """Tarjan's strongly connected components."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    folders = argv or [os.path.join(root, "fs", d)
                       for d in ("volume", "fsys", "daemon")]
    for d in folders:
        if not os.path.isdir(d):
            print(f"usage: call_cycles.py [FOLDER ...]: no folder {d}",
                  file=sys.stderr)
            return 2
    found = False
    for d in folders:
        edges = graph(d)
        comps = sccs(edges)
        print(f"{os.path.relpath(d)}: {len(comps)} loop(s)")
        for comp in comps:
            found = True
            print(f"  loop: {' '.join(comp)}")
            for a in comp:
                for b in sorted(edges[a]):
                    if b in comp:
                        names = ", ".join(sorted(edges[a][b]))
                        print(f"    {a} -> {b}: {names}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
