#!/bin/sh
# install-deps.sh -- the Debian packages daxguard builds, tests and
# benchmarks with. Run as root (or through sudo).
set -eu
if [ "$(id -u)" -ne 0 ]; then
	exec sudo "$0" "$@"
fi
export DEBIAN_FRONTEND=noninteractive
# Wait (up to 10 minutes) for another apt or unattended-upgrades holding
# the dpkg and list locks, as on a freshly booted machine, instead of
# failing at once (apt >= 1.9.11; Debian 12 has 2.6).
lock="-o DPkg::Lock::Timeout=600"
# shellcheck disable=SC2086
apt-get $lock update -qq
# shellcheck disable=SC2086
apt-get $lock install -y -qq --no-install-recommends \
	build-essential pkg-config meson ninja-build \
	fuse3 libfuse3-dev libpmem2-dev libpmem-dev libxxhash-dev libisal-dev libblkid-dev \
	e2fsprogs libjson-c-dev scdoc groff-base acl \
	python3 python3-pytest python3-matplotlib \
	fio dbench postmark clang libclang-rt-14-dev \
	glusterfs-server glusterfs-client nfs-ganesha nfs-ganesha-vfs \
	libnfs-utils >/dev/null
