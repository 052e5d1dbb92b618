# daxguard bench: web-server mix (filebench WML).
# Read-mostly: each worker opens and reads ten whole small files, then
# appends one record to a shared access log.  bench/run.py rewrites the
# "set $dir=" and "run" lines.
set $dir=/tmp
set $files=1000
set $width=20
set $fsize=cvar(type=cvar-gamma,parameters=mean:16384;gamma:1.5)
set $workers=8
set $io=1m
set $logio=16k

define fileset name=ws_docs,path=$dir,size=$fsize,entries=$files,dirwidth=$width,prealloc=100,readonly
define fileset name=ws_log,path=$dir,size=0,entries=1,dirwidth=1,prealloc

define process name=ws_proc,instances=1
{
  thread name=ws_worker,memsize=10m,instances=$workers
  {
    flowop openfile name=ws_open1,filesetname=ws_docs,fd=1
    flowop readwholefile name=ws_read1,fd=1,iosize=$io
    flowop closefile name=ws_close1,fd=1
    flowop openfile name=ws_open2,filesetname=ws_docs,fd=1
    flowop readwholefile name=ws_read2,fd=1,iosize=$io
    flowop closefile name=ws_close2,fd=1
    flowop openfile name=ws_open3,filesetname=ws_docs,fd=1
    flowop readwholefile name=ws_read3,fd=1,iosize=$io
    flowop closefile name=ws_close3,fd=1
    flowop openfile name=ws_open4,filesetname=ws_docs,fd=1
    flowop readwholefile name=ws_read4,fd=1,iosize=$io
    flowop closefile name=ws_close4,fd=1
    flowop openfile name=ws_open5,filesetname=ws_docs,fd=1
    flowop readwholefile name=ws_read5,fd=1,iosize=$io
    flowop closefile name=ws_close5,fd=1
    flowop openfile name=ws_open6,filesetname=ws_docs,fd=1
    flowop readwholefile name=ws_read6,fd=1,iosize=$io
    flowop closefile name=ws_close6,fd=1
    flowop openfile name=ws_open7,filesetname=ws_docs,fd=1
    flowop readwholefile name=ws_read7,fd=1,iosize=$io
    flowop closefile name=ws_close7,fd=1
    flowop openfile name=ws_open8,filesetname=ws_docs,fd=1
    flowop readwholefile name=ws_read8,fd=1,iosize=$io
    flowop closefile name=ws_close8,fd=1
    flowop openfile name=ws_open9,filesetname=ws_docs,fd=1
    flowop readwholefile name=ws_read9,fd=1,iosize=$io
    flowop closefile name=ws_close9,fd=1
    flowop openfile name=ws_open10,filesetname=ws_docs,fd=1
    flowop readwholefile name=ws_read10,fd=1,iosize=$io
    flowop closefile name=ws_close10,fd=1
    flowop appendfilerand name=ws_logappend,filesetname=ws_log,iosize=$logio,fd=1
  }
}

echo "daxguard webserver personality loaded"
run 30
