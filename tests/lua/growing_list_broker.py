#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""A hostile broker for broker_test.lua: every list reply is bigger than the
size the previous one announced, so a client that retries on NOSPACE with
the announced size would never be served. It counts the requests it gets in
COUNTFILE (rewritten after each) and exits after two idle seconds.

  growing_list_broker.py ENDPOINT COUNTFILE
"""
import socket
import struct
import sys

endpoint, countfile = sys.argv[1], sys.argv[2]
listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
listener.bind(endpoint)
listener.listen(8)
listener.settimeout(2)
served = 0
while True:
    try:
        conn, _ = listener.accept()
    except OSError:
        break
    with conn:
        conn.recv(64)
        served += 1
        with open(countfile, "w") as f:
            f.write(str(served))
        # The wire format of docs/broker.md: header "RSBK", version 1, the
        # list reply type (0x84), more-follows, chunk length, status 0.
        body = b"[" + b"x" * (16384 * (served + 1)) + b"]"
        for off in range(0, len(body), 32768):
            chunk = body[off:off + 32768]
            more = 1 if off + 32768 < len(body) else 0
            conn.send(b"RSBK" + struct.pack("<HBBIi", 1, 0x84, more, len(chunk), 0) + chunk)
listener.close()
