#!/usr/bin/env python3
"""Send strata-server random and mangled RESP requests; it must keep answering PING.

Usage (from the project root, after `cargo build -p strata-server`):
  tools/resp-fuzz.py [--server target/debug/strata-server] [--connections 1500] [--seed 1]

Starts the server on a fresh database (port 6399), opens CONNECTIONS connections and sends
each one to five requests: well-formed arrays of known commands with hostile arguments
(huge and negative numbers, NaN, empty and binary strings), inline commands, and arrays with
bytes flipped and cut short. Every 50 connections a new connection must get +PONG. A
server that exits, stops answering, or answers PING wrongly is a failure (exit status 1).
"""
import argparse
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

CMDS = [b"GET", b"SET", b"DEL", b"SCAN", b"KEYS", b"MGET", b"MSET", b"EXISTS", b"INCR", b"INCRBY",
        b"APPEND", b"GETRANGE", b"SETRANGE", b"STRLEN", b"EXPIRE", b"TTL", b"TYPE", b"DBSIZE",
        b"FLUSHDB", b"INFO", b"CONFIG", b"CLIENT", b"HELLO", b"AUTH", b"SELECT", b"COMMAND", b"SETNX",
        b"GETSET", b"DECR", b"INCRBYFLOAT", b"RENAME", b"UNLINK", b"SETEX", b"PSETEX", b"GETDEL",
        b"COPY", b"QUIT", b"MULTI", b"EXEC", b"LPUSH", b"HSET"]
WORDS = [b"", b"*", b"\x00", b"MATCH", b"COUNT", b"-1", b"0", b"1e400", b"nan", b"inf", b"EX", b"PX",
         b"NX", b"XX", b"KEEPTTL", b"TYPE", b"string", b"9223372036854775807"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", default="target/debug/strata-server")
    ap.add_argument("--connections", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=6399)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    d = tempfile.mkdtemp(prefix="strata-resp-fuzz-")
    log = open(f"{d}/server.log", "w")
    p = subprocess.Popen([a.server, "--dir", f"{d}/db", "--port", str(a.port), "--enable-flushdb"],
                         stdout=log, stderr=subprocess.STDOUT)
    time.sleep(1.5)

    def arg():
        c = rng.random()
        if c < 0.3:
            return str(rng.randint(-2**70, 2**70)).encode()
        if c < 0.5:
            return rng.choice(WORDS)
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))

    def request():
        args = [rng.choice(CMDS)] + [arg() for _ in range(rng.randint(0, 5))]
        wire = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in args)
        c = rng.random()
        if c < 0.7:
            return wire
        if c < 0.8:
            return b" ".join(args) + b"\r\n"
        raw = bytearray(wire)
        for _ in range(rng.randint(1, 3)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        return bytes(raw[: rng.randint(1, len(raw))])

    failed = None
    for i in range(a.connections):
        try:
            s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
            s.sendall(b"".join(request() for _ in range(rng.randint(1, 5))))
            s.settimeout(0.2)
            try:
                s.recv(65536)
            except OSError:
                pass
            s.close()
        except OSError:
            pass  # the server may close a connection that sent garbage
        if p.poll() is not None:
            failed = f"the server exited with {p.returncode} after {i} connections"
            break
        if i % 50 == 0:
            try:
                s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
                s.sendall(b"*1\r\n$4\r\nPING\r\n")
                r = s.recv(100)
                s.close()
                if not r.startswith(b"+PONG"):
                    failed = f"PING answered {r!r} after {i} connections"
            except OSError as e:
                failed = f"PING failed after {i} connections: {e}"
            if failed:
                break
    p.terminate()
    p.wait()
    print(failed or f"{a.connections} connections, the server answered every PING")
    if failed:
        print(open(f"{d}/server.log").read()[-2000:])
        sys.exit(1)
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
