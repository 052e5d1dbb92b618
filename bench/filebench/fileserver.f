# daxguard bench: file-server mix (filebench WML).
# Each worker creates a file and writes it whole, appends to a random file,
# reads a whole file, deletes one and stats one: the classic file-server
# pattern, sized for a 2-core machine with device images in RAM.
# bench/run.py rewrites the "set $dir=" and "run" lines; do not add others.
set $dir=/tmp
set $files=2000
set $width=20
set $fsize=cvar(type=cvar-gamma,parameters=mean:131072;gamma:1.5)
set $workers=8
set $wholeio=1m
set $appendio=16k

define fileset name=fs_files,path=$dir,size=$fsize,entries=$files,dirwidth=$width,prealloc=80

define process name=fs_proc,instances=1
{
  thread name=fs_worker,memsize=10m,instances=$workers
  {
    flowop createfile name=fs_create,filesetname=fs_files,fd=1
    flowop writewholefile name=fs_write,srcfd=1,fd=1,iosize=$wholeio
    flowop closefile name=fs_close1,fd=1
    flowop openfile name=fs_open1,filesetname=fs_files,fd=1
    flowop appendfilerand name=fs_append,iosize=$appendio,fd=1
    flowop closefile name=fs_close2,fd=1
    flowop openfile name=fs_open2,filesetname=fs_files,fd=1
    flowop readwholefile name=fs_read,fd=1,iosize=$wholeio
    flowop closefile name=fs_close3,fd=1
    flowop deletefile name=fs_delete,filesetname=fs_files
    flowop statfile name=fs_stat,filesetname=fs_files
  }
}

echo "daxguard fileserver personality loaded"
run 30
