#!/bin/sh
# demo.sh -- install, build, format a 4-device demo volume on /dev/shm and
# mount it at ./demo/mnt. Unmount with: fusermount3 -u demo/mnt
# The images are named after this checkout (a hash of its absolute path),
# so that the demo of a second checkout never reformats this one's volume;
# running the demo again in the same checkout starts it afresh.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
mkdir -p demo/mnt
if grep -q " $(pwd)/demo/mnt " /proc/mounts; then
	fusermount3 -u demo/mnt
fi
tag=$(pwd | sha256sum | cut -c1-12)
devs=""
for i in 0 1 2 3; do
	devs="$devs /dev/shm/daxguard-demo-$tag-$i.img"
done
# shellcheck disable=SC2086
build/mkfs/mkfs.daxguard --force --size 256M --label demo $devs
list=$(echo $devs | tr ' ' ',')
build/fs/daemon/daxguard "$list" demo/mnt
echo "daxguard $list mounted on demo/mnt"
echo "unmount with: fusermount3 -u demo/mnt; remove the images with:" \
	"rm /dev/shm/daxguard-demo-$tag-*.img"
build/fs/ctl/daxguard-ctl demo/mnt status
