#!/bin/sh
# install-deps.sh -- the Debian packages daxguard builds, tests and
# benchmarks with. Run as root (or through sudo).
set -eu
if [ "$(id -u)" -ne 0 ]; then
	exec sudo "$0" "$@"
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
	build-essential pkg-config meson ninja-build \
	fuse3 libfuse3-dev libpmem2-dev libpmem-dev libxxhash-dev libisal-dev libblkid-dev \
	e2fsprogs libjson-c-dev scdoc groff-base acl \
	python3 python3-pytest python3-matplotlib \
	fio dbench postmark clang libclang-rt-14-dev >/dev/null
