# daxguard bench: caching web-proxy mix (filebench WML).
# Each worker replaces one cached object (delete, create, write whole),
# reads five cached objects whole and appends to a shared log.
# bench/run.py rewrites the "set $dir=" and "run" lines.
set $dir=/tmp
set $files=2000
set $width=1000000
set $fsize=cvar(type=cvar-gamma,parameters=mean:16384;gamma:1.5)
set $workers=8
set $io=1m
set $logio=16k

define fileset name=wp_cache,path=$dir,size=$fsize,entries=$files,dirwidth=$width,prealloc=80
define fileset name=wp_logs,path=$dir,size=0,entries=1,dirwidth=1,prealloc

define process name=wp_proc,instances=1
{
  thread name=wp_worker,memsize=10m,instances=$workers
  {
    flowop deletefile name=wp_evict,filesetname=wp_cache
    flowop createfile name=wp_create,filesetname=wp_cache,fd=1
    flowop appendfilerand name=wp_fill,iosize=$io,fd=1
    flowop closefile name=wp_close1,fd=1
    flowop openfile name=wp_open2,filesetname=wp_cache,fd=1
    flowop readwholefile name=wp_read2,fd=1,iosize=$io
    flowop closefile name=wp_close2,fd=1
    flowop openfile name=wp_open3,filesetname=wp_cache,fd=1
    flowop readwholefile name=wp_read3,fd=1,iosize=$io
    flowop closefile name=wp_close3,fd=1
    flowop openfile name=wp_open4,filesetname=wp_cache,fd=1
    flowop readwholefile name=wp_read4,fd=1,iosize=$io
    flowop closefile name=wp_close4,fd=1
    flowop openfile name=wp_open5,filesetname=wp_cache,fd=1
    flowop readwholefile name=wp_read5,fd=1,iosize=$io
    flowop closefile name=wp_close5,fd=1
    flowop openfile name=wp_open6,filesetname=wp_cache,fd=1
    flowop readwholefile name=wp_read6,fd=1,iosize=$io
    flowop closefile name=wp_close6,fd=1
    flowop appendfilerand name=wp_log,filesetname=wp_logs,iosize=$logio,fd=1
  }
}

echo "daxguard webproxy personality loaded"
run 30
