# daxguard bench: mail-server mix (filebench WML).
# Many small files in one flat directory; every delivery is appended and
# fsync'ed, and every read is preceded by a delete/create churn, like an
# mbox-per-message mail spool.  The fsyncs make this the durability-bound
# personality.  bench/run.py rewrites the "set $dir=" and "run" lines.
set $dir=/tmp
set $files=1000
set $width=1000000
set $fsize=cvar(type=cvar-gamma,parameters=mean:16384;gamma:1.5)
set $workers=4
set $io=1m
set $appendio=16k

define fileset name=vm_spool,path=$dir,size=$fsize,entries=$files,dirwidth=$width,prealloc=80

define process name=vm_proc,instances=1
{
  thread name=vm_worker,memsize=10m,instances=$workers
  {
    flowop deletefile name=vm_delete,filesetname=vm_spool
    flowop createfile name=vm_create,filesetname=vm_spool,fd=1
    flowop appendfilerand name=vm_deliver,iosize=$appendio,fd=1
    flowop fsync name=vm_fsync1,fd=1
    flowop closefile name=vm_close1,fd=1
    flowop openfile name=vm_open1,filesetname=vm_spool,fd=1
    flowop readwholefile name=vm_read1,fd=1,iosize=$io
    flowop appendfilerand name=vm_flag,iosize=$appendio,fd=1
    flowop fsync name=vm_fsync2,fd=1
    flowop closefile name=vm_close2,fd=1
    flowop openfile name=vm_open2,filesetname=vm_spool,fd=1
    flowop readwholefile name=vm_read2,fd=1,iosize=$io
    flowop closefile name=vm_close3,fd=1
  }
}

echo "daxguard varmail personality loaded"
run 30
