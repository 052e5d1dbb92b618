#!/bin/sh
# build.sh [DIR [MESON-OPTIONS...]] -- configure (once) and build.
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build}
[ $# -gt 0 ] && shift
if [ ! -f "$dir/build.ninja" ]; then
	meson setup "$dir" "$@" >/dev/null
fi
ninja -C "$dir" >/dev/null
