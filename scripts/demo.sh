#!/bin/sh
# demo.sh -- install, build, format a 4-device demo volume on /dev/shm and
# mount it at ./demo/mnt. Unmount with: fusermount3 -u demo/mnt
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
mkdir -p demo/mnt
if grep -q " $(pwd)/demo/mnt " /proc/mounts; then
	fusermount3 -u demo/mnt
fi
devs=""
for i in 0 1 2 3; do
	devs="$devs /dev/shm/daxguard-demo-$i.img"
done
# shellcheck disable=SC2086
build/mkfs/mkfs.daxguard --force --size 256M --label demo $devs
list=$(echo $devs | tr ' ' ',')
build/fs/daemon/daxguard "$list" demo/mnt
echo "daxguard $list mounted on demo/mnt"
build/fs/ctl/daxguard-ctl demo/mnt status
