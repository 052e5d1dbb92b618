#!/bin/bash
# usage: probe.sh BUILD SIZE MiB  -- 4 images, 1 MiB dd writes, prints MB/s and media counts
B=$1; SZ=${2:-64G}; MIB=${3:-1024}
D=/var/tmp/scale/probe.$$; mkdir -p $D/mnt
for i in 0 1 2 3; do truncate -s $SZ $D/d$i.img; chmod 600 $D/d$i.img; done
I=$D/d0.img,$D/d1.img,$D/d2.img,$D/d3.img
$B/mkfs/mkfs.daxguard -q --force --parity 1 ${I//,/ } || exit 1
setsid $B/fs/daemon/daxguard $I $D/mnt -f > $D/daemon.log 2>&1 &
P=$!
for k in $(seq 200); do mountpoint -q $D/mnt && break; sleep 0.05; done; mountpoint -q $D/mnt || { echo no mount; cat $D/daemon.log; kill $P; rm -rf $D; exit 1; }
uptime
$B/fs/ctl/daxguard-ctl $D/mnt status --json > $D/s0.json
t0=$(date +%s.%N)
dd if=/dev/urandom of=/dev/shm/probe.src.$$ bs=1M count=64 status=none
python3 - $D/mnt/data $MIB /dev/shm/probe.src.$$ <<'PY'
import os,sys,time
p,mib,src=sys.argv[1],int(sys.argv[2]),sys.argv[3]
buf=open(src,'rb').read()
fd=os.open(p,os.O_WRONLY|os.O_CREAT,0o600)
t=time.monotonic()
for i in range(mib):
    o=(i%64)<<20
    os.write(fd,buf[o:o+(1<<20)])
os.fsync(fd); os.close(fd)
s=time.monotonic()-t
print(f"wrote {mib} MiB in {s:.2f} s: {mib*1.048576/s:.1f} MB/s")
PY
$B/fs/ctl/daxguard-ctl $D/mnt status --json > $D/s1.json
python3 - $D/s0.json $D/s1.json <<'PY'
import json,sys
a=json.load(open(sys.argv[1]))['media'];b=json.load(open(sys.argv[2]))['media']
print({k:b[k]-a.get(k,0) for k in b if isinstance(b[k],(int,float))})
PY
uptime
fusermount3 -u $D/mnt; wait $P
du -sh $D
rm -rf $D /dev/shm/probe.src.$$
