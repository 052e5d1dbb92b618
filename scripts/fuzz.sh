#!/bin/sh
# fuzz.sh [SECONDS [HARNESS...]] -- build the tests/fuzz harnesses as
# libFuzzer binaries (clang, AddressSanitizer and UndefinedBehaviorSanitizer)
# in build-fuzz and run each for SECONDS (default 10) over its committed
# seed corpus, tests/fuzz/corpus/<harness>/. Inputs libFuzzer finds
# interesting go to build-fuzz/corpus/<harness>/, never into the committed
# corpus; a crash, leak, timeout or failed invariant leaves its input in
# build-fuzz/artifacts/ and makes the script exit 1. One line a harness
# says how many inputs ran and how fast.
#   fuzz.sh --seeds   remake the committed seed corpus with mkseeds
set -eu
cd "$(dirname "$0")/.."
all="super jhead jentry inode emap dir xattr cpage cmap fsopen remap proto ctl"
if [ "${1:-}" = "--seeds" ]; then
	scripts/build.sh build
	rm -rf tests/fuzz/corpus.new
	build/tests/fuzz/mkseeds tests/fuzz/corpus.new
	for h in $all; do
		mkdir -p tests/fuzz/corpus/$h
		cp tests/fuzz/corpus.new/$h/* tests/fuzz/corpus/$h/
	done
	rm -rf tests/fuzz/corpus.new
	exit 0
fi
secs=${1:-10}
[ $# -gt 0 ] && shift
harnesses=${*:-$all}
if ! command -v clang >/dev/null; then
	echo "fuzz.sh: clang is not installed (scripts/install-deps.sh)" >&2
	exit 2
fi
if [ ! -f build-fuzz/build.ninja ]; then
	CC=clang meson setup build-fuzz -Dfuzzer=true \
		-Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
targets=""
for h in $harnesses; do
	targets="$targets tests/fuzz/fz_$h"
done
# Only the harnesses: the daemon and tools need no fuzzer build.
mkdir -p build-fuzz/artifacts build-fuzz/logs
if ! ninja -C build-fuzz $targets >build-fuzz/logs/build.log 2>&1; then
	tail -n 40 build-fuzz/logs/build.log >&2
	echo "fuzz.sh: the harnesses do not build" >&2
	exit 2
fi
fail=0
for h in $harnesses; do
	mkdir -p build-fuzz/corpus/$h
	log=build-fuzz/logs/$h.log
	# The socket protocols' decoders allocate no more than their
	# input: any single allocation past 64 MiB is a failure.
	case $h in
	proto|ctl) limits="-rss_limit_mb=2048 -malloc_limit_mb=64" ;;
	*) limits="-rss_limit_mb=2048" ;;
	esac
	if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	   UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	   build-fuzz/tests/fuzz/fz_$h -max_total_time="$secs" -timeout=10 \
		$limits -max_len=32768 -print_final_stats=1 \
		-artifact_prefix=build-fuzz/artifacts/$h- \
		build-fuzz/corpus/$h tests/fuzz/corpus/$h >"$log" 2>&1; then
		status=ok
	else
		status=FAILED
		fail=1
	fi
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	seeds=$(ls tests/fuzz/corpus/$h | wc -l)
	found=$(ls build-fuzz/corpus/$h | wc -l)
	printf '%-7s %-6s %9s runs %7s/s  seeds %2s  corpus found %s\n' \
		"$h" "$status" "${runs:-?}" "${rate:-?}" "$seeds" "$found"
	if [ $status = FAILED ]; then
		tail -n 40 "$log" >&2
	fi
done
exit $fail
