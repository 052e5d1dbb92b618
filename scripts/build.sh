#!/bin/sh
# build.sh [DIR [MESON-OPTIONS...]] -- configure (once) and build,
# quietly when it works; on failure the output says why (ninja prints
# the compiler's errors on stdout, so it is kept, not thrown away).
# MESON-OPTIONS also apply to a directory configured before (meson
# configure), so that e.g. -Dwerror=true from scripts/test.sh holds for
# a build directory an earlier plain build left behind.
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build}
[ $# -gt 0 ] && shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ ! -f "$dir/build.ninja" ]; then
	meson setup "$dir" "$@" >"$log" 2>&1 || { cat "$log"; exit 1; }
elif [ $# -gt 0 ]; then
	meson configure "$dir" "$@" >"$log" 2>&1 || { cat "$log"; exit 1; }
fi
ninja -C "$dir" >"$log" 2>&1 || { cat "$log"; exit 1; }
