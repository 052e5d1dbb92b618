# SPDX-License-Identifier: MIT
# lib.sh -- what an f_*/script may call to make its damaged volume
# (sourced by run_golden.py, with set -eu). The runner sets:
#   IMG     an empty private directory (0700) for the images and mounts
#   MKFS, DAEMON, INJECT   the built tools
# and reads back DEVS, the devices fsck.daxguard is given (see devs()).
# Everything a script makes is deterministic: fixed file contents, one
# writer, fixed --seed, so the findings fsck prints are the same on
# every run (what is not -- the volume UUID, IMG -- the runner
# normalises).

# mkvol NDEV SIZE [MKFS OPTION...]: a fresh volume IMG/d0..d<NDEV-1>.
mkvol() {
	local n=$1 size=$2 i
	shift 2
	DEVS=()
	for ((i = 0; i < n; i++)); do
		DEVS+=("$IMG/d$i")
	done
	"$MKFS" -q --force --size "$size" "$@" "${DEVS[@]}"
	chmod 600 "${DEVS[@]}"
}

# devlist: the devices as the daemon takes them, d0:d1:...
devlist() {
	local IFS=:
	echo "${DEVS[*]}"
}

# started: start the daemon on IMG/mnt in the foreground and wait for the
# mount; DAEMON_PID is its pid. On failure (the daemon exits, or 30 s
# without a mount) nothing is left running.
started() {
	local mnt="$IMG/mnt" t
	mkdir -p "$mnt"
	"$DAEMON" "$(devlist)" "$mnt" -f >>"$IMG/daemon.log" 2>&1 &
	DAEMON_PID=$!
	for ((t = 0; t < 1500; t++)); do
		mountpoint -q "$mnt" && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || {
			cat "$IMG/daemon.log" >&2
			return 1
		}
		sleep 0.02
	done
	echo "mount timed out" >&2
	kill -KILL "$DAEMON_PID"
	wait "$DAEMON_PID" || true
	fusermount3 -u -z "$mnt" 2>/dev/null || true
	return 1
}

# mounted CMD...: mount the volume on IMG/mnt, run CMD there (cwd is
# the mount point), unmount and wait for the daemon to let go.
mounted() {
	started || return 1
	(cd "$IMG/mnt" && "$@") || { unmounted "$IMG/mnt" "$DAEMON_PID"; return 1; }
	unmounted "$IMG/mnt" "$DAEMON_PID"
}

# unmounted MNT PID: unmount (a few tries while something still has the
# mount busy, then lazily) and wait, boundedly, for the daemon to exit.
unmounted() {
	local mnt=$1 pid=$2 t
	for ((t = 0; t < 50; t++)); do
		fusermount3 -u "$mnt" 2>/dev/null && break
		sleep 0.1
	done
	mountpoint -q "$mnt" && fusermount3 -u -z "$mnt"
	for ((t = 0; t < 1500; t++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.02
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "the daemon did not exit after the unmount" >&2
		kill -KILL "$pid"
		wait "$pid" || true
		return 1
	fi
	wait "$pid"
}

# crashed CMD...: as mounted, but the daemon is killed (SIGKILL) after
# CMD instead of unmounted: what CMD wrote without a sync stays in the
# journal, committed and not yet replayed.
crashed() {
	started || return 1
	(cd "$IMG/mnt" && "$@") || true
	kill -KILL "$DAEMON_PID"
	wait "$DAEMON_PID" || true
	fusermount3 -u -z "$IMG/mnt" 2>/dev/null || true
}

# overwrite FILE N SEED: N bytes of pattern SEED over the start of FILE,
# no sync.
overwrite() {
	pattern "$2" "$3" | dd of="$1" conv=notrunc status=none
}

# pattern N SEED: N bytes that depend only on SEED.
pattern() {
	python3 -c 'import random, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
sys.stdout.buffer.write(random.Random(seed).randbytes(n))' "$1" "$2"
}

# tree: a small fixed tree (files, a directory, a symlink, an xattr),
# written one file at a time (the unmount makes it durable).
tree() {
	mkdir -p dir/sub
	pattern 300000 1 >big
	pattern 5000 2 >dir/small
	pattern 70000 3 >dir/sub/mid
	echo hello >dir/sub/hello
	ln -s dir/sub link
	python3 -c "import os; os.setxattr('dir/small', 'user.note', b'golden')"
}

# inject ARG...: daxguard-inject on the volume, its report kept aside
# (the golden output is fsck's, not the injector's).
inject() {
	"$INJECT" "${DEVS[@]}" "$@" >>"$IMG/inject.log"
}

# frag: two files written interleaved, a page at a time, each synced, so
# that their extents need extent pages.
frag() {
	python3 - <<'PY'
import os, random
r = random.Random(4)
with open("frag1", "wb") as a, open("frag2", "wb") as b:
    for _ in range(24):
        for f in (a, b):
            f.write(r.randbytes(4096))
            f.flush()
            os.fsync(f.fileno())
PY
}
