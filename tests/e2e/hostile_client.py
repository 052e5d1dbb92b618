# SPDX-License-Identifier: MIT
"""Run by test_hostile_clients.py as an unprivileged user (not a test
itself): the attacks of issue 30 on the daemon's two sockets.

usage: hostile_client.py commit-flood SOCK N BYTES
           N connections, each a COMMIT header announcing 160 MiB and
           BYTES of its body (as much as the socket takes at once);
           prints {"connected": .., "failed": ..}, holds them until
           stdin closes
       hostile_client.py ctl-hold SOCK N REQUEST
           N connections that send REQUEST and never read the reply;
           prints "ready", holds them until stdin closes
       hostile_client.py ctl-ask SOCK REQUEST
           one request; prints the reply"""
import json
import os
import socket
import struct
import sys

COMMIT, MAGIC, VERSION = 3, 0x4d434744, 2


def hold():
    sys.stdout.flush()
    sys.stdin.read()        # until the test closes our stdin


def commit_flood(path, n, nbytes):
    socks, failed = [], 0
    head = struct.pack("<IHHII", MAGIC, VERSION, COMMIT, 160 << 20, 1)
    body = b"\xa5" * nbytes
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            s.setblocking(False)
            s.send(head)
            sent = 0
            while sent < len(body):
                sent += s.send(body[sent:sent + (64 << 10)])
        except BlockingIOError:
            pass            # the socket is full: that is all it takes
        except OSError:
            failed += 1
        socks.append(s)
    print(json.dumps({"connected": n - failed, "failed": failed}))
    hold()


def ctl_hold(path, n, req):
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # As small a window as the kernel gives: the reply must wait
        # for us.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
        try:
            s.connect(path)
            if req:         # none: a connection that never asks
                s.sendall(req.encode() + b"\n")
        except OSError:
            pass            # refused: past the cap
        socks.append(s)
    print("ready")
    hold()


def ctl_ask(path, req):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(path)
    s.sendall(req.encode() + b"\n")
    s.shutdown(socket.SHUT_WR)
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    sys.stdout.buffer.write(out)


def main():
    mode = sys.argv[1]
    if mode == "commit-flood":
        commit_flood(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif mode == "ctl-hold":
        ctl_hold(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif mode == "ctl-ask":
        ctl_ask(sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    os.umask(0o077)
    main()
