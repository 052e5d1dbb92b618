#!/bin/sh
# test.sh -- install, build and run the whole test suite, then the unit
# and fuzz tests under AddressSanitizer and UndefinedBehaviorSanitizer,
# the unit and concurrent crash tests under ThreadSanitizer,
# every libFuzzer harness for a few seconds (scripts/fuzz.sh), and again
# sanitized the mkfs/posix end-to-end tests, the tool-safety,
# health, mount-safety, toolbox and whole-row tests, the lost-metadata
# fsck and mount tests and the libcommit tests. (Not the preload
# shim's: it would put the sanitized library into unsanitized programs;
# nor those that preload or dlopen a library into an unsanitized program:
# the sanitizer's runtime must come first; nor the guard page test: the
# sanitizer takes the SIGSEGV it expects; nor the daemon out of memory:
# the sanitizer's allocator aborts instead of returning NULL.)
#
# Every build here has -Dwerror=true (meson.build leaves it off, so that
# a distribution's build does not break on a new compiler's warning):
# the tests keep the code free of warnings, in debug and release.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build -Dwerror=true
meson test -C build --print-errorlogs --num-processes 2
# A release build (NDEBUG, -O3) as a distribution makes it: asserts gone,
# other warnings; its unit suite checks the code does not rely on them.
scripts/build.sh build-release -Dbuildtype=release -Dwerror=true
meson test -C build-release --suite unit --num-processes 2 --print-errorlogs
scripts/build.sh build-san -Db_sanitize=address,undefined -Db_lundef=false \
	-Dwerror=true
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	meson test -C build-san --suite unit --suite fuzz --print-errorlogs \
	--num-processes 2
# ThreadSanitizer over the concurrent code -- the journal's side-by-side
# appends, the two threads of a large update's prepare and write, the
# row and checksum page locks -- in the unit suite and the crash tests
# that run updates on several threads. detect_deadlocks=0: its lock-order
# checker holds 64 locks per thread, fewer than an update's row locks
# (races are still reported). -Wno-tsan: TSan does not model the
# standalone fence of a persist on tmpfs (media.c), which orders stores
# for the medium, not between threads. setarch -R: TSan's fixed memory
# layout fails on kernels with high mmap randomisation.
scripts/build.sh build-tsan -Db_sanitize=thread -Db_lundef=false \
	-Dc_args=-Wno-tsan -Dwerror=true
TSAN_OPTIONS=halt_on_error=1:detect_deadlocks=0:second_deadlock_stack=1 \
	setarch "$(uname -m)" -R meson test -C build-tsan --suite unit \
	--print-errorlogs --num-processes 2
# TSan watches the recorded runs' threads; of the crash states, single
# threaded replays that the plain run checks all of, every 16th will do.
CRASH_STRIDE=16 TSAN_OPTIONS=halt_on_error=1:detect_deadlocks=0 \
	setarch "$(uname -m)" -R meson test -C build-tsan crash-concurrent \
	crash-split --print-errorlogs --num-processes 2 \
	--timeout-multiplier 4
# Every libFuzzer harness for a short fixed time over its seed corpus
# (bench/fuzz_long.sh runs them longer).
scripts/fuzz.sh 4
ASAN_OPTIONS=detect_leaks=1 DG_BUILD_DIR=build-san \
	/usr/bin/python3 -m pytest -q tests/e2e/test_mkfs.py tests/e2e/test_posix.py \
	tests/e2e/test_tool_safety.py tests/e2e/test_health.py \
	tests/e2e/test_mount_safety.py tests/e2e/test_toolbox.py \
	tests/e2e/test_setid.py tests/e2e/test_acl.py tests/e2e/test_handles.py \
	tests/e2e/test_stale_reads.py tests/e2e/test_event_log.py \
	tests/e2e/test_fsck_ask.py tests/e2e/test_whole_rows.py \
	tests/e2e/test_file_modes.py tests/e2e/test_identity.py \
	tests/e2e/test_remap.py
ASAN_OPTIONS=detect_leaks=1 DG_BUILD_DIR=build-san \
	/usr/bin/python3 -m pytest -q tests/e2e/test_fsck.py -k "lost or mounts"
# daxguard-inject's engine uses (reopens, a stale device) under ASan:
# a use after free there once hung the golden tests.
ASAN_OPTIONS=detect_leaks=1 DG_BUILD_DIR=build-san \
	/usr/bin/python3 -m pytest -q tests/e2e/test_inject.py \
	tests/e2e/test_inject_alloc.py tests/e2e/test_rebuild.py \
	-k "not parity2 and not too_many"
ASAN_OPTIONS=detect_leaks=1 DG_BUILD_DIR=build-san \
	/usr/bin/python3 -m pytest -q tests/e2e/test_libcommit.py \
	tests/e2e/test_libcommit_atomicity.py tests/e2e/test_libcommit_robust.py \
	tests/e2e/test_libcommit_boundary.py tests/e2e/test_libcommit_faults.py \
	-k "not shim and not guard and not write_protect and not outside and \
	not devices_readable and not media_view and not out_of_memory and \
	not failed_resume"
