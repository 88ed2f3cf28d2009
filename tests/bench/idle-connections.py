#!/usr/bin/env python3
"""Resident memory of hearthd with many idle authenticated clients.

Starts hearthd on a temporary home (no model, nothing leaves the machine),
opens N connections over its Unix socket, each with the WebSocket handshake
and a hello answered by `welcome`, then reads VmRSS and RssAnon from
/proc/PID/status: before, with all N attached and idle, and after they have
left. Prints one Markdown table row per figure.

    tests/bench/idle-connections.py [--hearthd target/debug/hearthd] [-n 2000]

Only the Python standard library; the descriptor limit is raised to its
hard limit for the N sockets.
"""

import argparse
import base64
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time


def status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM", "RssAnon"):
                fields[name] = int(value.split()[0]) * 1024
    return fields


def frame(text):
    """A masked client text frame."""
    data = text.encode()
    mask = os.urandom(4)
    head = bytes([0x81])
    if len(data) < 126:
        head += bytes([0x80 | len(data)])
    else:
        head += bytes([0x80 | 126]) + len(data).to_bytes(2, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def read_until(sock, marker):
    got = b""
    while marker not in got:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("hearthd closed the connection")
        got += chunk
    return got


def attach(path, name):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            "GET / HTTP/1.1\r\nHost: hearthd\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Key: {key}\r\n\r\n"
        ).encode()
    )
    read_until(sock, b"\r\n\r\n")
    hello = {"type": "hello", "client": name, "version": 1}
    sock.sendall(frame(json.dumps(hello)))
    read_until(sock, b'"welcome"')
    return sock


def mb(n):
    return f"{n / 1e6:.1f} MB"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hearthd", default="target/debug/hearthd")
    parser.add_argument("-n", type=int, default=2000)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, HEARTH_OLLAMA_URL="off", RUST_LOG="warn")
        env.pop("HEARTH_HOME", None)
        daemon = subprocess.Popen(
            [args.hearthd, "--home", home], env=env, stdin=subprocess.DEVNULL
        )
        try:
            path = os.path.join(home, "hearth.sock")
            for _ in range(500):
                if os.path.exists(path):
                    break
                time.sleep(0.01)
            first = attach(path, "probe")
            time.sleep(1)
            before = status(daemon.pid)
            socks = [attach(path, f"idle-{n}") for n in range(args.n)]
            time.sleep(2)
            attached = status(daemon.pid)
            for sock in socks:
                sock.close()
            time.sleep(2)
            after = status(daemon.pid)
            first.close()
        finally:
            daemon.terminate()
            daemon.wait()
    per = (attached["RssAnon"] - before["RssAnon"]) / args.n
    print("| When | VmRSS | RssAnon |")
    print("|---|---|---|")
    print(f"| one client attached | {mb(before['VmRSS'])} | {mb(before['RssAnon'])} |")
    print(
        f"| {args.n} more idle clients attached | {mb(attached['VmRSS'])} "
        f"| {mb(attached['RssAnon'])} |"
    )
    print(f"| after they left | {mb(after['VmRSS'])} | {mb(after['RssAnon'])} |")
    print(f"\nRssAnon per idle client: {per / 1024:.1f} KiB")


if __name__ == "__main__":
    sys.exit(main())
