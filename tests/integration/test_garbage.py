#!/usr/bin/python3
"""integ.garbage: a storage node survives garbage on its data port.

Frames follow common/include/cm_wire.h (64-byte little-endian header with CRC32C).
Every bad input must make the node close that connection (nothing after a bad
header can be trusted); the node stays alive and keeps serving: a PING on a new
connection is answered, and PUT/GET through the gateway still work.
"""
import os
import random
import socket
import time

import shoaltest as st

OP_PING, OP_PUT, OP_GET = 1, 2, 3
OP_RESPONSE = 0x80


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        b = s.recv(n - len(buf))
        if not b:
            return buf
        buf += b
    return buf


def expect_closed(t, port, payload, what, shut_wr=False, timeout=10):
    """Sends payload; the node must close the connection within timeout."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        try:
            s.sendall(payload)
            if shut_wr:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            return  # closed while we were still sending: fine
        deadline = time.monotonic() + timeout
        while True:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                return
            except socket.timeout:
                raise st.TestFailure("%s: node kept the connection open for %ds" % (what,
                                                                                  timeout))
            if not b:
                return
            # A response to something valid before the garbage is allowed; keep reading.
            if time.monotonic() > deadline:
                raise st.TestFailure("%s: node kept talking for %ds" % (what, timeout))
    finally:
        s.close()


def ping(t, port, what, req_id=77):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(st.wire_frame(OP_PING, req_id=req_id))
        h = recv_exact(s, 64)
        t.eq(len(h), 64, "%s: PING answer length" % what)
        hd = st.wire_parse_hdr(h)
        t.eq(hd["magic"], 0x4C4F4853, "%s: PING answer magic" % what)
        t.eq(hd["op"], OP_PING | OP_RESPONSE, "%s: PING answer op" % what)
        t.eq(hd["req_id"], req_id, "%s: PING answer req_id" % what)
        t.eq(hd["status"], 0, "%s: PING answer status" % what)
        t.eq(hd["hdr_crc"], st.crc32c(h[:60]), "%s: PING answer header CRC" % what)
        return hd
    finally:
        s.close()


def main(t):
    c = t.cluster(nodes=6)
    ten = c.create_tenant("garbage")
    g = c.gw(ten)
    data = os.urandom(3 << 20)
    t.status(g.put("before", data), 201, "PUT before the garbage")

    node = 2
    port = c.data_port(node)
    ping(t, port, "sanity")
    rng = random.Random(9)
    good_hdr = st.wire_frame(OP_PUT, tenant=ten["id"], req_id=5, obj=1, version=1, index=0,
                             data=b"z" * 1000)
    cases = [
        ("random garbage", rng.randbytes(4096), False),
        ("HTTP on the data port", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"\0" * 64, False),
        ("zeros", b"\0" * 128, False),
        ("bad magic", b"XXXX" + st.wire_frame(OP_PING)[4:], False),
        ("bad version", st.wire_frame(OP_PING)[:4] + b"\x09" + st.wire_frame(OP_PING)[5:], False),
        ("bad header CRC", st.wire_frame(OP_PING, bad_hdr_crc=True), False),
        ("unknown op", st.wire_frame(0x33), False),
        ("unknown flags", st.wire_frame(OP_PING, flags=0x8000), False),
        ("data_len over the hard cap", st.wire_frame(OP_PUT, data_len=0xFFFFFFFF), False),
        ("valid PING then garbage", st.wire_frame(OP_PING) + rng.randbytes(100), False),
        ("truncated header then EOF", good_hdr[:30], True),
        ("header, truncated payload, EOF", good_hdr[:64 + 100], True),
        ("bad payload CRC", st.wire_frame(OP_PUT, tenant=ten["id"], req_id=6, obj=2, version=1,
                                          data=b"q" * 100, bad_data_crc=True), True),
    ]
    for what, payload, shut in cases:
        expect_closed(t, port, payload, what, shut_wr=shut)
        t.check(c.alive("fnstore-%d" % node), "node died after: %s" % what)
        ping(t, port, "after %s" % what)
    # A header that promises a payload that never comes, connection left open:
    # the node must not stall other clients.
    hang = socket.create_connection(("127.0.0.1", port), timeout=10)
    hang.sendall(good_hdr[:64 + 10])
    ping(t, port, "while a truncated frame hangs")
    # Many garbage connections at once.
    socks = []
    for i in range(50):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(rng.randbytes(rng.randrange(1, 300)))
        socks.append(s)
    for s in socks:
        s.close()
    hang.close()
    ping(t, port, "after 50 garbage connections")
    t.check(c.alive("fnstore-%d" % node), "node died after garbage connections")
    # Metrics endpoint still up.
    st.wait_until(lambda: st.http_request(c.metrics_port(node), "GET", "/healthz").status == 200,
                  10, "node metrics /healthz")
    # The data path through the gateway works, including reads of older objects.
    r = g.get("before")
    t.status(r, 200, "GET after the garbage")
    t.eq(st.sha256(r.body), st.sha256(data), "GET after the garbage: content")
    for i in range(5):
        d = os.urandom(rng.randrange(1, 2 << 20))
        t.status(g.put("after/%d" % i, d), 201, "PUT after the garbage")
        t.eq(g.get("after/%d" % i).body, d, "GET after the garbage")
    for i in range(6):
        t.check(c.alive("fnstore-%d" % i), "fnstore-%d died" % i)
    st.log("garbage ok")


if __name__ == "__main__":
    st.run(main, timeout=200)
