#!/bin/sh
# fuzz_long.sh [SECONDS] -- the fuzz campaign: every libFuzzer harness of
# tests/fuzz for SECONDS each (default 600), over its committed seeds and
# what earlier campaigns found (build-fuzz/corpus/, kept between runs).
# Prints one line a harness (runs, runs per second, corpus size) and
# keeps the full logs in build-fuzz/logs/; exits 1 on any finding, whose
# input is in build-fuzz/artifacts/. A finding gets fixed in the engine
# and its input committed to tests/fuzz/corpus/<harness>/.
set -eu
cd "$(dirname "$0")/.."
exec scripts/fuzz.sh "${1:-600}"
