#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs_time.sh -- time mkfs.daxguard on sparse images; show nothing was zeroed
#
# usage: mkfs_time.sh [-m MKFS] [-n DEVS] [-s SIZE] [-r REPS] [-d DIR]
#                     [-t TARGET_S] [-- MKFS_ARGS...]
#
# Each rep removes the images and runs mkfs.daxguard --size SIZE on DEVS
# fresh paths (mkfs creates them sparse), then a second series reformats
# the existing images with --force. Wall time is measured around the
# process (fork, exec, format, exit); "in-process" is the dg_format() time
# mkfs prints itself. After the last rep the apparent size of the images
# is compared with the blocks they really hold (du), then they are
# removed, also on error or Ctrl-C.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
mkfs=$here/../../build/mkfs/mkfs.daxguard
ndev=4
size=64G
reps=7
dir=/dev/shm
target=1.0

while getopts "m:n:s:r:d:t:h" o; do
	case $o in
	m) mkfs=$OPTARG ;;
	n) ndev=$OPTARG ;;
	s) size=$OPTARG ;;
	r) reps=$OPTARG ;;
	d) dir=$OPTARG ;;
	t) target=$OPTARG ;;
	h) sed -n '4,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) exit 1 ;;
	esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift

if [ ! -x "$mkfs" ]; then
	echo "mkfs_time.sh: cannot run '$mkfs': build it with 'ninja -C build'" >&2
	exit 1
fi

imgs=()
for i in $(seq 0 $((ndev - 1))); do
	imgs+=("$dir/dgmkfstime-$$-$i.img")
done
cleanup() { rm -f "${imgs[@]}"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ns() { date +%s%N; }

# median of the numbers on stdin, and min and max: "med min max"
stats() {
	sort -g | awk '{ v[NR] = $1 }
		END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
		      printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'
}

# run_series NAME FRESH -> prints one Markdown row
run_series() {
	local name=$1 fresh=$2 wall=() inproc=() t0 t1 out
	shift 2
	for r in $(seq 1 "$reps"); do
		[ "$fresh" = 1 ] && rm -f "${imgs[@]}"
		t0=$(now_ns)
		out=$("$mkfs" --size "$size" --force "$@" "${imgs[@]}")
		t1=$(now_ns)
		wall+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", (b - a) / 1e9 }')")
		inproc+=("$(printf '%s\n' "$out" | sed -n 's/.*formatted in \([0-9.]*\) s.*/\1/p')")
	done
	read -r wm wmin wmax < <(printf '%s\n' "${wall[@]}" | stats)
	read -r im imin imax < <(printf '%s\n' "${inproc[@]}" | stats)
	verdict=$(awk -v m="$wm" -v t="$target" 'BEGIN { print (m < t) ? "yes" : "NO" }')
	printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$wm" \
		"$wmin" "$wmax" "$im" "$imin" "$imax" "$verdict"
}

shift_args=("$@")
echo "mkfs_time: $ndev x $size in $dir, $reps reps, mkfs $(realpath "$mkfs")${shift_args[*]:+, extra args: ${shift_args[*]}}"
echo
echo "| series | wall median s | min | max | in-process median s | min | max | under ${target} s |"
echo "|---|---|---|---|---|---|---|---|"
run_series "fresh images" 1 "$@"
run_series "reformat (--force)" 0 "$@"

apparent=$(du -c -k --apparent-size "${imgs[@]}" | tail -1 | cut -f1)
used=$(du -c -k "${imgs[@]}" | tail -1 | cut -f1)
echo
echo "| after the last mkfs | KiB |"
echo "|---|---|"
echo "| apparent size of the $ndev images (du --apparent-size) | $apparent |"
echo "| blocks really used (du; on tmpfs this is RAM) | $used |"
awk -v u="$used" -v a="$apparent" 'BEGIN {
	printf "| used / apparent | %.6f%% |\n", 100 * u / a }'
echo
"$mkfs" --size "$size" --force "$@" "${imgs[@]}" | sed -n 's/^  \(raw\|overhead\)/\1/p' |
	sed 's/^/    mkfs: /'
