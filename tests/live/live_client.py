#!/usr/bin/env python3
"""A second, independent client of the live control socket (docs/live-protocol.md), written
from the protocol's description, for the tests: well-formed requests, and the misbehaving
clients a job must survive (garbage, oversized, wrong version, floods, never reading).

usage: live_client.py SOCKET ACTION
  status      one STATUS request; prints the reply's text (exit 1 on an ERROR reply)
  figures N   one FIGURES request for the last N steps; prints the reply's text (exit 1 on
              an ERROR reply)
  garbage     bytes that are no frame; prints the reply type and text
  oversize    a request longer than the limit
  badversion  a frame of protocol version 99
  flood       200 STATUS requests as fast as possible; prints how many were refused
  noread      connects, sends 300 WINDOW requests and never reads a reply; holds 5 s
  refused     expects the job to refuse this uid; prints the error
  denied      expects the socket's folder to keep this uid out (connect: permission denied)
"""
import socket
import struct
import sys
import time

MAGIC, VERSION = 0x564C5054, 1
STATUS, WINDOW, FIGURES, OK, ERROR = 1, 2, 4, 0x81, 0x82


def frame(kind, text=b"", version=VERSION, magic=MAGIC):
    return struct.pack("<IHHII", magic, version, kind, len(text), 0) + text


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(30)
    s.connect(path)
    return s


def reply(s):
    d = s.recv(70000)
    if len(d) < 16:
        return None, b""
    magic, version, kind, n, _ = struct.unpack("<IHHII", d[:16])
    assert magic == MAGIC and version == VERSION and n == len(d) - 16, d[:16]
    return kind, d[16:]


def main():
    path, action = sys.argv[1], sys.argv[2]
    if action == "denied":
        try:
            connect(path)
        except PermissionError:
            print("denied")
            return 0
        return 1
    s = connect(path)
    if action == "status":
        s.send(frame(STATUS))
        kind, text = reply(s)
        print(text.decode())
        return 0 if kind == OK else 1
    if action == "figures":
        s.send(frame(FIGURES, b"steps=%d\n" % int(sys.argv[3])))
        kind, text = reply(s)
        print(text.decode())
        return 0 if kind == OK else 1
    if action in ("garbage", "oversize", "badversion"):
        payload = {"garbage": b"\x00\xffhello, this is not a frame",
                   "oversize": frame(STATUS, b"x" * 5000),
                   "badversion": frame(STATUS, version=99)}[action]
        s.send(payload)
        kind, text = reply(s)
        print("type=%s %s" % (hex(kind) if kind else None, text.decode().strip()))
        return 0 if kind == ERROR else 1
    if action == "flood":
        for _ in range(200):
            s.send(frame(STATUS))
        refused = 0
        for _ in range(200):
            kind, text = reply(s)
            refused += kind == ERROR and b"too many requests" in text
        print("refused=%d" % refused)
        return 0
    if action == "noread":
        s.setblocking(False)
        sent = 0
        for _ in range(300):
            try:
                s.send(frame(WINDOW, b"seconds=1\n"))
                sent += 1
            except BlockingIOError:
                break
            except (BrokenPipeError, ConnectionResetError):
                break
        time.sleep(5)
        print("sent=%d" % sent)
        return 0
    if action == "refused":  # the job answers the connection itself, before any request
        kind, text = reply(s)
        print("type=%s %s" % (hex(kind) if kind else None, text.decode().strip()))
        return 0 if kind == ERROR and b"refused" in text else 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
