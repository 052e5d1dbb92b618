#!/bin/sh
# SPDX-License-Identifier: MIT
# warm_check_ab.sh OLD_BUILD NEW_BUILD DIR DATA_BYTES [ROUNDS [NEW_FSCK_OPTS
#                  [NEW_SCRUB_OPTS [OLD_FSCK_OPTS [OLD_SCRUB_OPTS]]]]]
#
# Warm fsck -n and scrub of one filled volume (DIR/d0.img..d3.img, on
# /dev/shm: the page cache is the media) with two builds, alternating
# (A B, B A, ...), ROUNDS times (default 3). Prints, per run, the build,
# the seconds and the GB/s of DATA_BYTES (the file data written); the
# scrub is `daxguard-ctl MNT scrub` (start and wait) on a fresh mount of
# the build's own daemon (NEW_SCRUB_OPTS, e.g. "--threads 1", added to
# the new build's; OLD_*_OPTS to the old's: the same build twice, with
# other options, compares those). A build is a meson build directory or any
# directory with fsck/fsck.daxguard, fs/daemon/daxguard and
# fs/ctl/daxguard-ctl under it.
set -eu
old=$1 new=$2 dir=$3 data=$4 rounds=${5:-3} newopts=${6:-}
newscrub=${7:-} oldopts=${8:-} oldscrub=${9:-}
imgs="$dir/d0.img $dir/d1.img $dir/d2.img $dir/d3.img"
mnt=$dir/mnt
mkdir -p "$mnt"

now() { date +%s.%N; }
rate() { awk -v b="$data" -v s="$1" 'BEGIN { printf "%.3f", b / s / 1e9 }'; }

one() {	# build label fsck-opts scrub-opts
	t0=$(now)
	# shellcheck disable=SC2086
	"$1/fsck/fsck.daxguard" -n $3 $imgs >/dev/null
	t1=$(now)
	s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	echo "$2 fsck  $s s $(rate "$s") GB/s"
	"$1/fs/daemon/daxguard" "$(echo $imgs | tr ' ' ',')" "$mnt" \
		-o log="$dir/daemon.log" >/dev/null
	t0=$(now)
	# shellcheck disable=SC2086
	"$1/fs/ctl/daxguard-ctl" "$mnt" scrub $4 >/dev/null 2>&1
	t1=$(now)
	# The daemon's own time for it: the wall clock above waits in
	# steps of the tool's poll (200 ms).
	ms=$("$1/fs/ctl/daxguard-ctl" "$mnt" scrub status --json |
		sed -n 's/.*"run_ms": *\([0-9]*\).*/\1/p')
	umount "$mnt"
	s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	d=$(awk -v m="$ms" 'BEGIN { printf "%.3f", m / 1000 }')
	echo "$2 scrub $s s $(rate "$s") GB/s, daemon $d s $(rate "$d") GB/s"
}

# The daemon holds the images until it is gone: wait for its lock.
settle() { sleep 1; }

for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then
		one "$old" old "$oldopts" "$oldscrub"; settle
		one "$new" new "$newopts" "$newscrub"; settle
	else
		one "$new" new "$newopts" "$newscrub"; settle
		one "$old" old "$oldopts" "$oldscrub"; settle
	fi
done
