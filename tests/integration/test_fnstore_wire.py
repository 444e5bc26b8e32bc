#!/usr/bin/env python3
"""integ.fnstore.wire - starts the real shoal-fnstore on loopback and checks
the wire protocol end to end (stdlib only).

usage: test_fnstore_wire.py PATH/TO/shoal-fnstore
       FNS_ADDR=127.0.0.1:9500 test_fnstore_wire.py --attached  (skips restarts)
"""
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

from shoaltest import crc32c, free_port

MAGIC = 0x4C4F4853
HDR = struct.Struct("<IBBHiIQQQIIIII")  # 60 bytes, then hdr_crc
OP_PING, OP_PUT, OP_GET, OP_DEL, OP_STAT, OP_PERSISTED, OP_RESP = 1, 2, 3, 4, 5, 6, 0x80
OP_LIST, LIST_END = 8, (1 << 64) - 1
WF_PERSISTED, WF_COS_SYNC, WF_FROM_COS, WF_NOTIFY = 1, 2, 4, 8
NOTE = struct.Struct("<IIQ")  # tenant, index, object
E_PROTO, E_CRC, E_NOTFOUND, E_TOOBIG, E_BUSY = -1001, -1002, -1003, -1004, -1007


def hdr(op, req_id, tenant=1, obj=0, ver=0, idx=0, data=b"", flags=0, inc=0, crc=None):
    if crc is None:
        crc = crc32c(data)
    h = HDR.pack(MAGIC, 1, op, flags, 0, tenant, req_id, obj, ver, idx, inc, len(data), crc, 0)
    return h + struct.pack("<I", crc32c(h))


def frame(op, req_id, data=b"", **kw):
    return hdr(op, req_id, data=data, **kw) + data


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        b = s.recv(n - len(buf))
        if not b:
            raise EOFError("closed after %d of %d bytes" % (len(buf), n))
        buf += b
    return bytes(buf)


def read_resp(s, verify=True):
    raw = recv_exact(s, 64)
    f = HDR.unpack(raw[:60])
    assert f[0] == MAGIC, "bad magic"
    assert struct.unpack("<I", raw[60:])[0] == crc32c(raw[:60]), "bad hdr crc"
    r = dict(op=f[2], flags=f[3], status=f[4], tenant=f[5], req_id=f[6], obj=f[7], ver=f[8],
             idx=f[9], inc=f[10], data_len=f[11], data_crc=f[12])
    r["data"] = recv_exact(s, r["data_len"]) if r["data_len"] else b""
    if verify:
        assert crc32c(r["data"]) == r["data_crc"], "bad payload crc"
    return r


class Conn:
    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=20)
        self.next = 1

    def call(self, op, **kw):
        rid = self.next
        self.next += 1
        self.s.sendall(frame(op, rid, **kw))
        r = read_resp(self.s)
        assert r["req_id"] == rid and r["op"] == op | OP_RESP, r
        return r

    def close(self):
        self.s.close()


def wait_port(addr, proc, timeout=10):
    host, port = addr.rsplit(":", 1)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("shoal-fnstore exited with %d" % proc.returncode)
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("shoal-fnstore did not listen on " + addr)


class Node:
    def __init__(self, binary, tmp, extra=()):
        self.binary, self.tmp, self.extra = binary, tmp, list(extra)
        self.addr = "127.0.0.1:%d" % free_port()
        self.maddr = "127.0.0.1:%d" % free_port()
        self.proc = None

    def start(self):
        dead = "127.0.0.1:%d" % free_port()  # no controller there
        args = [self.binary, "--listen", self.addr, "--metrics-listen", self.maddr,
                "--controller", dead, "--heartbeat-ms", "200",
                "--cos", os.path.join(self.tmp, "cos"),
                "--data-dir", os.path.join(self.tmp, "data"),
                "--capacity", "64MiB", "--instance-size", "16MiB", "--max-chunk", "1MiB"] + self.extra
        self.log = open(os.path.join(self.tmp, "node.log"), "a")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log)
        wait_port(self.addr, self.proc)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def term(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(20)


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def payload(n, seed):
    return bytes((i * 131 + seed * 7 + (i >> 8)) & 0xFF for i in range(n))


def test_roundtrip(addr):
    c = Conn(addr)
    ping = c.call(OP_PING)
    check(ping["status"] == 0 and ping["inc"] != 0, "ping %r" % ping)
    data = payload(100000, 1)
    r = c.call(OP_PUT, tenant=3, obj=0xABCDEF, ver=1, idx=0, data=data)
    # the answer names the instance the chunk went to: a tag, slot < 4 here
    check(r["status"] == 0 and r["inc"] != 0 and r["inc"] >> 20 < 4, "put %r" % r)
    tag = r["inc"]
    r = c.call(OP_GET, tenant=3, obj=0xABCDEF, ver=1, idx=0, inc=tag)
    check(r["status"] == 0 and r["data"] == data and r["data_crc"] == crc32c(data), "get")
    check(not (r["flags"] & WF_FROM_COS) and r["inc"] == tag, "get from memory %r" % r)
    # same key under another tenant is another chunk
    r = c.call(OP_GET, tenant=4, obj=0xABCDEF, ver=1, idx=0)
    check(r["status"] == E_NOTFOUND, "other tenant %r" % r["status"])
    r = c.call(OP_STAT, tenant=3, obj=0xABCDEF, ver=1, idx=0)
    check(r["status"] == 0, "stat")
    # empty chunk
    r = c.call(OP_PUT, tenant=3, obj=5, ver=1, idx=9, data=b"")
    check(r["status"] == 0, "put empty")
    r = c.call(OP_GET, tenant=3, obj=5, ver=1, idx=9)
    check(r["status"] == 0 and r["data"] == b"", "get empty")
    r = c.call(OP_DEL, tenant=3, obj=0xABCDEF, ver=1, idx=0)
    check(r["status"] == 0, "del")
    r = c.call(OP_GET, tenant=3, obj=0xABCDEF, ver=1, idx=0)
    check(r["status"] == E_NOTFOUND, "get after del %r" % r["status"])
    r = c.call(OP_STAT, tenant=3, obj=0xABCDEF, ver=1, idx=0)
    check(r["status"] == E_NOTFOUND, "stat after del %r" % r["status"])
    r = c.call(OP_DEL, tenant=3, obj=0xABCDEF, ver=1, idx=0)
    check(r["status"] == 0, "del missing is not an error")
    # COS_SYNC: answered once durable
    r = c.call(OP_PUT, tenant=3, obj=6, ver=1, idx=0, data=b"sync", flags=WF_COS_SYNC)
    check(r["status"] == 0 and r["flags"] & WF_PERSISTED, "sync put %r" % r)
    c.close()
    return ping["inc"]


def test_pipelined(addr):
    c = Conn(addr)
    n = 64
    blobs = {i: payload(1000 + 37 * i, i) for i in range(n)}
    out = b"".join(frame(OP_PUT, 1000 + i, tenant=1 + i % 3, obj=77, ver=2, idx=i, data=blobs[i])
                   for i in range(n))
    c.s.sendall(out)
    tags = {}
    for _ in range(n):
        r = read_resp(c.s)
        check(r["status"] == 0 and r["op"] == OP_PUT | OP_RESP, "pipelined put %r" % r)
        tags[r["req_id"] - 1000] = r["inc"]
    check(set(tags) == set(range(n)), "all req ids answered")
    # one instance per tenant's pool: the chunks of a tenant share a tag
    check(len({tags[i] for i in range(n)}) == 3, "tags %r" % set(tags.values()))
    out = b"".join(frame(OP_GET, 2000 + i, tenant=1 + i % 3, obj=77, ver=2, idx=i)
                   for i in range(n))
    c.s.sendall(out)
    for _ in range(n):
        r = read_resp(c.s)
        i = r["req_id"] - 2000
        check(r["status"] == 0 and r["data"] == blobs[i] and r["idx"] == i, "pipelined get")
    c.close()
    return blobs, tags


def test_dribbled(addr):
    """Big payloads arriving in pieces with pauses: the node waits for the
    rest of a payload with SO_RCVLOWAT, so the last piece, however late and
    however small, must still wake it, and a frame right behind must be
    served too. Another connection is served meanwhile."""
    c, other = Conn(addr), Conn(addr)
    data = payload(1 << 20, 77)
    f = frame(OP_PUT, 1, tenant=5, obj=0xD1, ver=1, idx=0, data=data)
    ping = frame(OP_PING, 2)
    pos = 0
    for piece in (64, 70000, 300000, 1, 200000):
        c.s.sendall(f[pos:pos + piece])
        pos += piece
        time.sleep(0.02)
    check(other.call(OP_PING)["status"] == 0, "another connection served meanwhile")
    c.s.sendall(f[pos:-5])
    time.sleep(0.3)
    c.s.sendall(f[-5:] + ping)
    rs = {r["req_id"]: r for r in (read_resp(c.s), read_resp(c.s))}  # any order
    check(sorted(rs) == [1, 2], "answers %r" % sorted(rs))
    check(rs[1]["status"] == 0 and rs[2]["status"] == 0, "dribbled put and the ping behind it")
    r = c.call(OP_GET, tenant=5, obj=0xD1, ver=1, idx=0)
    check(r["status"] == 0 and r["data"] == data, "dribbled payload intact")
    # Two big frames in one write, then half of a third and a pause.
    blobs = [payload(300000 + i, 80 + i) for i in range(3)]
    fs = [frame(OP_PUT, 10 + i, tenant=5, obj=0xD2, ver=1, idx=i, data=b)
          for i, b in enumerate(blobs)]
    c.s.sendall(fs[0] + fs[1] + fs[2][:150000])
    rs = [read_resp(c.s) for _ in range(2)]
    check(sorted(r["req_id"] for r in rs) == [10, 11] and all(r["status"] == 0 for r in rs),
          "back-to-back puts %r" % rs)
    time.sleep(0.2)
    c.s.sendall(fs[2][150000:])
    r = read_resp(c.s)
    check(r["req_id"] == 12 and r["status"] == 0, "put after a pause %r" % r)
    for obj, idx in ((0xD1, 0), (0xD2, 0), (0xD2, 1), (0xD2, 2)):  # the node's capacity is small
        check(c.call(OP_DEL, tenant=5, obj=obj, ver=1, idx=idx)["status"] == 0, "del")
    c.close()
    other.close()


def test_persisted(addr):
    c = Conn(addr)
    end = time.monotonic() + 15
    while True:
        r = c.call(OP_STAT, tenant=1, obj=77, ver=2, idx=0)
        if r["flags"] & WF_PERSISTED:
            break
        check(time.monotonic() < end, "chunk never persisted")
        time.sleep(0.05)
    r = c.call(OP_GET, tenant=1, obj=77, ver=2, idx=0)
    check(r["status"] == 0 and r["flags"] & WF_PERSISTED, "get persisted flag")
    # every pipelined chunk ends up persisted
    for i in range(64):
        while True:
            r = c.call(OP_STAT, tenant=1 + i % 3, obj=77, ver=2, idx=i)
            if r["flags"] & WF_PERSISTED:
                break
            check(time.monotonic() < end, "chunk %d never persisted" % i)
            time.sleep(0.05)
    c.close()


def segment_entries(tmp):
    """{segment path: [(tenant, index, object)...]} of the packed chunks."""
    return {path: ents for path, (ents, _tombs) in segment_contents(tmp).items()}


def segment_contents(tmp):
    """{segment path: ([(tenant, index, object)] chunks, [..] tombstones)}
    of every record of every segment (fnstore/fns_pack.h: records back to
    back, each a 32-byte fixed part with its length, 32-byte entries, 24-byte
    tombstones), up to the first record not whole yet. A segment deleted
    while we look is left out."""
    out = {}
    for path in segments(tmp):
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            continue
        ents, tombs, at = [], [], 0
        while at + 32 <= len(raw):
            magic, ver, nent, ntomb, hl, _crc, rl, _bcrc = struct.unpack_from("<8I", raw, at)
            check(magic == 0x47534853 and ver == 2 and rl >= hl, "not a segment: %s" % path)
            if at + rl > len(raw):
                break  # being appended
            p = at + 32
            ents += [struct.unpack_from("<IIQQII", raw, p + 32 * i)[:3] for i in range(nent)]
            p += 32 * nent
            tombs += [struct.unpack_from("<IIQQ", raw, p + 24 * i)[:3] for i in range(ntomb)]
            at += rl
        out[path] = (ents, tombs)
    return out


def segments(tmp):
    root = os.path.join(tmp, "cos", "seg")
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if "#" not in f]


def cos_file(tmp, tenant, obj, ver, idx):
    return os.path.join(tmp, "cos", "t%d" % tenant, "%016x.%d.%d" % (obj, ver, idx))


def test_notify(node):
    # PUTs flagged NOTIFY: each persisted chunk is announced once, unasked
    T = 1  # a tenant that already has an instance (the node has only 4)
    c = Conn(node.addr)
    want = {(T, i % 3, 900 + i) for i in range(20)}
    for i in range(20):
        c.s.sendall(frame(OP_PUT, 1000 + i, tenant=T, obj=900 + i, idx=i % 3,
                          data=payload(512 + i, i), flags=WF_NOTIFY))
    acks, notes = set(), []
    end = time.monotonic() + 15
    while len(acks) < 20 or len(notes) < 20:
        check(time.monotonic() < end, "notices missing: %d acks %d records" % (len(acks), len(notes)))
        r = read_resp(c.s)
        if r["op"] == OP_PERSISTED | OP_RESP:
            check(r["req_id"] == 0 and r["data_len"] % NOTE.size == 0, "notice shape %r" % r)
            notes += [NOTE.unpack_from(r["data"], o) for o in range(0, r["data_len"], NOTE.size)]
        else:
            check(r["op"] == OP_PUT | OP_RESP and r["status"] == 0, "put answer %r" % r)
            acks.add(r["req_id"])
    check(sorted(notes) == sorted(want), "notice records %r" % sorted(notes))
    # small chunks are packed into the node's COS segments, not an object each
    for (t, idx, obj) in want:
        check(not os.path.exists(cos_file(node.tmp, t, obj, 0, idx)), "small chunk not packed")
    check(segments(node.tmp), "no COS segment written")
    # without the flag: no notice
    r = c.call(OP_PUT, tenant=T, obj=950, idx=0, data=payload(100, 1))
    check(r["status"] == 0, "plain put")
    end = time.monotonic() + 15
    while not c.call(OP_STAT, tenant=T, obj=950, idx=0)["flags"] & WF_PERSISTED:
        check(time.monotonic() < end, "plain put never persisted")
        time.sleep(0.02)
    c.s.settimeout(0.5)
    try:
        extra = c.s.recv(1)
    except socket.timeout:
        extra = None
    check(extra is None, "unasked notice for a PUT without NOTIFY")
    c.s.settimeout(20)
    for (t, idx, obj) in want | {(T, 0, 950)}:
        check(c.call(OP_DEL, tenant=t, obj=obj, idx=idx)["status"] == 0, "cleanup del")
    c.close()


def test_bad_crc_and_too_big(addr):
    c = Conn(addr)
    data = b"x" * 1000
    c.s.sendall(hdr(OP_PUT, 42, tenant=2, obj=1, ver=1, data=data, crc=crc32c(data) ^ 1) + data)
    r = read_resp(c.s)
    check(r["req_id"] == 42 and r["status"] == E_CRC, "bad crc -> CM_E_CRC %r" % r)
    big = bytes(1024 * 1024 + 1)
    c.s.sendall(frame(OP_PUT, 43, tenant=2, obj=1, ver=1, data=big))
    r = read_resp(c.s)
    check(r["req_id"] == 43 and r["status"] == E_TOOBIG, "too big %r" % r)
    check(c.call(OP_PING)["status"] == 0, "connection still usable")
    r = c.call(OP_GET, tenant=2, obj=1, ver=1)
    check(r["status"] == E_NOTFOUND, "bad put stored nothing")
    c.close()


def expect_closed(s, what):
    s.settimeout(10)
    try:
        while True:
            b = s.recv(4096)
            if not b:
                return
    except ConnectionResetError:
        return
    except socket.timeout:
        raise AssertionError(what + ": connection not closed")


def test_bad_frames(addr):
    good = Conn(addr)
    check(good.call(OP_PING)["status"] == 0, "ping")
    g = Conn(addr)
    g.s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"\x00" * 64)
    expect_closed(g.s, "garbage")
    check(good.call(OP_PING)["status"] == 0, "other conn after garbage")
    t = Conn(addr)
    data = b"y" * 100
    t.s.sendall(hdr(OP_PUT, 7, data=data) + data[:10])
    t.s.shutdown(socket.SHUT_WR)
    expect_closed(t.s, "truncated")
    check(good.call(OP_PING)["status"] == 0, "other conn after truncated")
    # a complete frame then EOF is still answered
    e = Conn(addr)
    e.s.sendall(frame(OP_PING, 9))
    e.s.shutdown(socket.SHUT_WR)
    r = read_resp(e.s)
    check(r["req_id"] == 9 and r["status"] == 0, "answer after clean EOF")
    expect_closed(e.s, "clean eof")
    good.close()


def test_backpressure_and_del_during_send(addr):
    """40 pipelined GETs of 512 KiB (over the 8 MiB output mark) read slowly,
    with a DEL of the same chunk queued behind them: every GET still gets
    intact bytes (responses hold chunk references), the DEL succeeds."""
    c = Conn(addr)
    data = payload(4096, 9) * 128
    crc = crc32c(data)
    r = c.call(OP_PUT, tenant=9, obj=9, ver=1, data=data)
    check(r["status"] == 0, "put big %r" % r)
    n = 40
    c.s.sendall(b"".join(frame(OP_GET, 3000 + i, tenant=9, obj=9, ver=1) for i in range(n)) +
                frame(OP_DEL, 4000, tenant=9, obj=9, ver=1))
    time.sleep(0.5)
    got, dels = 0, 0
    for _ in range(n + 1):
        r = read_resp(c.s, verify=False)
        if r["req_id"] == 4000:
            check(r["status"] == 0, "del")
            dels += 1
        else:
            check(r["status"] == 0 and r["data_crc"] == crc and r["data"] == data, "big get")
            got += 1
    check(got == n and dels == 1, "all answered")
    check(c.call(OP_GET, tenant=9, obj=9, ver=1)["status"] == E_NOTFOUND, "deleted")
    c.close()


def test_metrics(maddr):
    body = urllib.request.urlopen("http://%s/metrics" % maddr, timeout=10).read().decode()
    for name in ("shoal_fnstore_memory_used_bytes", "shoal_fnstore_chunks",
                 "shoal_fnstore_cos_pending", "shoal_fnstore_cos_writes_total",
                 "shoal_fnstore_cos_reloads_total", "shoal_fnstore_bad_frames_total",
                 "shoal_fnstore_requests_total"):
        check(name in body, "metric %s missing" % name)
    bad = [l for l in body.splitlines() if l.startswith("shoal_fnstore_bad_frames_total")]
    check(bad and float(bad[0].split()[-1]) >= 2, "bad frames counted: %r" % bad)
    h = urllib.request.urlopen("http://%s/healthz" % maddr, timeout=10).read()
    check(h.strip() == b"ok", "healthz")


def metric(maddr, name):
    body = urllib.request.urlopen("http://%s/metrics" % maddr, timeout=10).read().decode()
    for line in body.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return int(float(line.split()[-1]))
    raise AssertionError("metric %s missing" % name)


def wait_metric(maddr, name, want, timeout=15):
    end = time.monotonic() + timeout
    while metric(maddr, name) != want:
        check(time.monotonic() < end, "%s stays %d, want %d" % (name, metric(maddr, name), want))
        time.sleep(0.05)


def test_arena_accounting(binary, tmp):
    """Used bytes are exactly the chunk lengths held; PUT chunks of 64 KiB and
    up are packed into arena segments, and emptied segments are reused."""
    seg = 4 << 20
    node = Node(binary, os.path.join(tmp, "arena"),
                ["--arena-segment", "4MiB", "--arena-keep", "1"])
    os.makedirs(node.tmp)
    node.start()
    try:
        c = Conn(node.addr)
        sizes = [1 << 20] * 12 + [1000] * 5 + [200000] * 3 + [65535, 65536 - 8]
        big = [n for n in sizes if n + 8 >= 64 << 10]

        def fill(ver):
            for i, n in enumerate(sizes):
                r = c.call(OP_PUT, tenant=5, obj=1, ver=ver, idx=i, data=payload(n, i + ver))
                check(r["status"] == 0, "put %d: %r" % (i, r["status"]))
            check(metric(node.maddr, "shoal_fnstore_memory_used_bytes") == sum(sizes),
                  "used bytes %d != sum of chunk lengths %d"
                  % (metric(node.maddr, "shoal_fnstore_memory_used_bytes"), sum(sizes)))
            check(metric(node.maddr, "shoal_fnstore_arena_buffers") == len(big), "arena buffers")
            held = metric(node.maddr, "shoal_fnstore_arena_held_bytes")
            check(sum(big) <= held <= sum(big) + 2 * seg, "held %d for %d" % (held, sum(big)))
            for i, n in enumerate(sizes):
                r = c.call(OP_GET, tenant=5, obj=1, ver=ver, idx=i)
                check(r["status"] == 0 and r["data"] == payload(n, i + ver), "get %d" % i)
            return held

        def drain(ver):
            for i in range(len(sizes)):
                check(c.call(OP_DEL, tenant=5, obj=1, ver=ver, idx=i)["status"] == 0, "del")
            wait_metric(node.maddr, "shoal_fnstore_arena_buffers", 0)
            check(metric(node.maddr, "shoal_fnstore_memory_used_bytes") == 0, "used after del")
            # the current segment and one warm one stay; the rest is returned
            check(metric(node.maddr, "shoal_fnstore_arena_held_bytes") <= 2 * seg, "held")

        held1 = fill(1)
        drain(1)
        check(metric(node.maddr, "shoal_fnstore_arena_segment_reuses_total") == 0, "no reuse yet")
        held2 = fill(2)
        check(held2 == held1, "refill held %d, first fill %d" % (held2, held1))
        check(metric(node.maddr, "shoal_fnstore_arena_segment_reuses_total") >= 2, "reused")
        check(metric(node.maddr, "shoal_fnstore_arena_fallbacks_total") == 0, "fallbacks")
        drain(2)
        c.close()
        check(node.term() == 0, "clean exit")
    finally:
        if node.proc.poll() is None:
            node.proc.kill()
            node.proc.wait()


def wait_persisted(c, **key):
    end = time.monotonic() + 15
    while not c.call(OP_STAT, **key)["flags"] & WF_PERSISTED:
        check(time.monotonic() < end, "never persisted: %r" % key)
        time.sleep(0.02)


def test_restart(node, inc_before, blobs, tags):
    # A packed chunk deleted after it was persisted stays deleted across the
    # restart although its segment lives on (A2 is in it): the tombstone
    # rides in the next segment (B's) and the replay applies it.
    c = Conn(node.addr)
    a, a2, b = payload(300, 51), payload(350, 53), payload(400, 52)
    c.s.sendall(frame(OP_PUT, 1, tenant=1, obj=0x5151, idx=0, data=a) +
                frame(OP_PUT, 2, tenant=1, obj=0x5153, idx=0, data=a2))
    check(read_resp(c.s)["status"] == 0 and read_resp(c.s)["status"] == 0, "put A, A2")
    wait_persisted(c, tenant=1, obj=0x5151, idx=0)
    wait_persisted(c, tenant=1, obj=0x5153, idx=0)
    segs = segment_entries(node.tmp)
    check(any((1, 0, 0x5151) in e and (1, 0, 0x5153) in e for e in segs.values()),
          "A and A2 not in one segment: %r" % segs)
    check(c.call(OP_DEL, tenant=1, obj=0x5151, idx=0)["status"] == 0, "del A")
    check(c.call(OP_PUT, tenant=1, obj=0x5152, idx=0, data=b)["status"] == 0, "put B")
    wait_persisted(c, tenant=1, obj=0x5152, idx=0)
    c.close()
    node.kill9()
    node.start()
    c = Conn(node.addr)
    ping = c.call(OP_PING)
    check(ping["inc"] != inc_before and ping["inc"] != 0, "new incarnation %r" % ping["inc"])
    # The instances were recovered from the insertion log: every chunk is in
    # memory again, in an instance of a new incarnation (found by key).
    wait_metric(node.maddr, "shoal_fnstore_recovery_running", 0)
    check(metric(node.maddr, "shoal_fnstore_recovery_chunks_total") >= 60, "chunks recovered")
    for i in (0, 5, 63):
        r = c.call(OP_GET, tenant=1 + i % 3, obj=77, ver=2, idx=i, inc=tags[i])
        check(r["status"] == 0 and r["data"] == blobs[i], "recovered %d: %r" % (i, r["status"]))
        check(not r["flags"] & WF_FROM_COS and r["flags"] & WF_PERSISTED, "from memory flags")
        check(r["inc"] not in (0, tags[i]), "the answer names the new instance %r" % r["inc"])
    r = c.call(OP_STAT, tenant=1 + 7 % 3, obj=77, ver=2, idx=7)
    check(r["status"] == 0 and r["flags"] & WF_PERSISTED, "stat of a recovered chunk")
    r = c.call(OP_GET, tenant=3, obj=0xABCDEF, ver=1, idx=0)
    check(r["status"] == E_NOTFOUND, "deleted chunk stays deleted")
    r = c.call(OP_GET, tenant=1, obj=0x5151, idx=0)
    check(r["status"] == E_NOTFOUND, "deleted packed chunk back after restart: %r" % r["status"])
    r = c.call(OP_GET, tenant=1, obj=0x5152, idx=0)
    check(r["status"] == 0 and r["data"] == b, "packed chunk B after restart")
    r = c.call(OP_GET, tenant=1, obj=0x5153, idx=0)
    check(r["status"] == 0 and r["data"] == a2, "packed chunk A2 after restart")
    c.close()


def segment_of(tmp, obj):
    """The segment file that packs object obj's chunk, or None."""
    for path, ents in segment_entries(tmp).items():
        if any(e[2] == obj for e in ents):
            return path
    return None


def put_pair(node, c, tenant, obj1, data1, obj2, data2, what):
    """PUTs two small chunks in one go and waits until both are persisted
    in one segment; returns that segment's path."""
    c.s.sendall(frame(OP_PUT, 1, tenant=tenant, obj=obj1, idx=0, data=data1) +
                frame(OP_PUT, 2, tenant=tenant, obj=obj2, idx=0, data=data2))
    check(read_resp(c.s)["status"] == 0 and read_resp(c.s)["status"] == 0, "put " + what)
    wait_persisted(c, tenant=tenant, obj=obj1, idx=0)
    wait_persisted(c, tenant=tenant, obj=obj2, idx=0)
    seg = segment_of(node.tmp, obj1)
    check(seg is not None and seg == segment_of(node.tmp, obj2), what + " share a segment")
    return seg


def wait_gone(node, *paths):
    """Waits (5 s at most) until every one of paths is deleted."""
    end = time.monotonic() + 5
    while any(os.path.exists(p) for p in paths):
        check(time.monotonic() < end, "empty segments kept: %r" % segments(node.tmp))
        time.sleep(0.05)


def test_tomb_lifetime(node):
    # A tombstone lives in a later segment than the chunk it kills. When
    # every chunk of that later segment is deleted too, the segment must
    # stay while the older one does (A2 keeps it): deleting it would bring
    # A back at the next restart. Once the older segment goes, both go.
    c = Conn(node.addr)
    a, a2, x = payload(300, 61), payload(350, 63), payload(400, 62)
    old = put_pair(node, c, 2, 0x6161, a, 0x6163, a2, "A and A2")
    check(c.call(OP_DEL, tenant=2, obj=0x6161, idx=0)["status"] == 0, "del A")
    check(c.call(OP_PUT, tenant=2, obj=0x6162, idx=0, data=x)["status"] == 0, "put X")
    wait_persisted(c, tenant=2, obj=0x6162, idx=0)
    carrier = segment_of(node.tmp, 0x6162)  # also carries A's tombstone
    check(carrier is not None and carrier != old, "X in a newer segment")
    check(c.call(OP_DEL, tenant=2, obj=0x6162, idx=0)["status"] == 0, "del X")
    # Y's segment carries X's tombstone (a deletion is durable once a later
    # segment is written) and holds the carrier in turn.
    check(c.call(OP_PUT, tenant=2, obj=0x6164, idx=0, data=payload(200, 64))["status"] == 0,
          "put Y")
    wait_persisted(c, tenant=2, obj=0x6164, idx=0)
    time.sleep(0.3)  # a segment delete would have run by now
    check(os.path.exists(carrier), "segment holding a live tombstone was deleted")
    wait_metric(node.maddr, "shoal_fnstore_cos_segments_held", 1, timeout=5)  # the carrier
    c.close()
    node.kill9()
    node.start()
    c = Conn(node.addr)
    r = c.call(OP_GET, tenant=2, obj=0x6161, idx=0)
    check(r["status"] == E_NOTFOUND, "deleted chunk A back after restart: %r" % r["status"])
    r = c.call(OP_GET, tenant=2, obj=0x6163, idx=0)
    check(r["status"] == 0 and r["data"] == a2, "A2 after restart")
    check(c.call(OP_DEL, tenant=2, obj=0x6163, idx=0)["status"] == 0, "del A2")
    wait_gone(node, old, carrier)
    wait_metric(node.maddr, "shoal_fnstore_cos_segments_held", 0)
    c.close()


def test_tomb_alone(node):
    # With no chunk write after it, a deletion's tombstone gets a segment of
    # its own within about a second, so a kill -9 then does not bring the
    # chunk back. Both segments go once the older one empties.
    c = Conn(node.addr)
    old = put_pair(node, c, 2, 0x7171, payload(300, 71), 0x7172, payload(310, 72), "P1 and P2")
    check(c.call(OP_DEL, tenant=2, obj=0x7171, idx=0)["status"] == 0, "del P1")
    end = time.monotonic() + 5
    while True:
        tomb = [p for p, (ents, tombs) in segment_contents(node.tmp).items()
                if not ents and (2, 0, 0x7171) in tombs]
        if tomb:
            break
        check(time.monotonic() < end, "no tombstone segment after 5 s: %r" % segments(node.tmp))
        time.sleep(0.05)
    tomb = tomb[0]
    c.close()
    node.kill9()
    node.start()
    c = Conn(node.addr)
    r = c.call(OP_GET, tenant=2, obj=0x7171, idx=0)
    check(r["status"] == E_NOTFOUND, "deleted chunk P1 back after restart: %r" % r["status"])
    check(os.path.exists(tomb), "tombstone segment dropped while P2 keeps its target")
    check(c.call(OP_DEL, tenant=2, obj=0x7172, idx=0)["status"] == 0, "del P2")
    wait_gone(node, old, tomb)
    c.close()


def test_cos_outage(node):
    """A chunk whose COS writes fail is kept and retried until COS takes it."""
    blocker = os.path.join(node.tmp, "cos", "t77")
    with open(blocker, "w") as f:  # the tenant's COS folder can't be created
        f.write("not a folder")
    seg = os.path.join(node.tmp, "cos", "seg")  # nor the node's segment folder
    if os.path.isdir(seg):
        os.rename(seg, seg + ".away")
    with open(seg, "w") as f:
        f.write("not a folder")
    c = Conn(node.addr)
    data = payload(5000, 77)
    check(c.call(OP_PUT, tenant=77, obj=1, ver=1, data=data)["status"] == 0, "put in outage")
    time.sleep(1.5)  # longer than one round of write tries
    r = c.call(OP_STAT, tenant=77, obj=1, ver=1)
    check(r["status"] == 0 and not r["flags"] & WF_PERSISTED, "persisted during outage %r" % r)
    os.unlink(blocker)
    os.unlink(seg)
    if os.path.isdir(seg + ".away"):
        os.rename(seg + ".away", seg)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        r = c.call(OP_STAT, tenant=77, obj=1, ver=1)
        if r["flags"] & WF_PERSISTED:
            break
        time.sleep(0.1)
    check(r["flags"] & WF_PERSISTED, "chunk not persisted after the COS outage ended")
    r = c.call(OP_GET, tenant=77, obj=1, ver=1)
    check(r["status"] == 0 and r["data"] == data, "get after outage")
    c.close()


def test_caps_and_queue_limit(binary, tmp):
    """--cap-ops paces the scheduler; --queue-limit answers CM_E_BUSY."""
    # A node of its own: the first node's instances would be recovered at
    # start and fill every slot, and a PUT before its tenant's instance is
    # back finds none (ENOSPC; a gateway moves such a chunk elsewhere).
    node = Node(binary, tempfile.mkdtemp(dir=tmp), ["--cap-ops", "100", "--queue-limit", "8"])
    node.start()
    try:
        c = Conn(node.addr)
        check(c.call(OP_PUT, tenant=1, obj=1, ver=1, data=b"abc")["status"] == 0, "put")
        time.sleep(0.2)
        # flood: one tenant pipelines 60 requests, at most ~8 may wait
        c.s.sendall(b"".join(frame(OP_STAT, 100 + i, tenant=1, obj=1, ver=1) for i in range(60)))
        res = [read_resp(c.s) for _ in range(60)]
        busy = sum(1 for r in res if r["status"] == E_BUSY)
        okc = sum(1 for r in res if r["status"] == 0)
        check(busy >= 30 and okc >= 8 and busy + okc == 60, "busy=%d ok=%d" % (busy, okc))
        # another tenant is not refused because tenant 1 was full
        check(c.call(OP_STAT, tenant=2, obj=1, ver=1)["status"] == E_NOTFOUND, "tenant 2")
        time.sleep(0.2)
        t0 = time.monotonic()
        for b in range(6):
            c.s.sendall(b"".join(frame(OP_GET, 500 + b * 8 + i, tenant=1, obj=1, ver=1)
                                 for i in range(8)))
            for _ in range(8):
                r = read_resp(c.s)
                check(r["status"] == 0 and r["data"] == b"abc", "paced get")
        el = time.monotonic() - t0
        check(el >= 0.35, "48 requests at 100/s took only %.3f s" % el)
        c.close()
    finally:
        node.proc.kill()
        node.proc.wait()


def list_all(c, per_page):
    """Every (tenant, object, index) a LIST walk returns, and its pages' sizes."""
    got, sizes, cur = [], [], 0
    while cur != LIST_END:
        r = c.call(OP_LIST, obj=cur, idx=per_page)
        check(r["status"] == 0 and len(r["data"]) % NOTE.size == 0, "LIST answer %r" % r["status"])
        recs = [NOTE.unpack_from(r["data"], i) for i in range(0, len(r["data"]), NOTE.size)]
        got += [(t, o, i) for t, i, o in recs]
        sizes.append(len(recs))
        check(len(sizes) < 10000, "LIST never ends")
        cur = r["obj"]
    return got, sizes


def test_list(node, blobs):
    # After the restarts every chunk is listed (from memory, and again from
    # the insertion log once persisted), a deleted one is not, and a small
    # page size pages: the same set, a few records at a time.
    c = Conn(node.addr)
    want = {(1 + i % 3, 77, i) for i in range(len(blobs))} | {(1, 0x5152, 0), (1, 0x5153, 0)}
    whole, sizes = list_all(c, 0)
    check(want <= set(whole), "LIST misses %r" % sorted(want - set(whole))[:5])
    check(len(whole) >= 2 * len(want), "persisted chunks come again from the insertion log")
    check((1, 0x5151, 0) not in whole and (3, 0xABCDEF, 0) not in whole, "deleted chunk listed")
    paged, psizes = list_all(c, 2)
    check(set(paged) == set(whole), "paged LIST differs from a whole one")
    check(len(psizes) > 10 and max(psizes) <= 8, "pages of about 2 records: %r" % psizes[:20])
    check(c.call(OP_DEL, tenant=1, obj=0x5152, idx=0)["status"] == 0, "del B")
    check((1, 0x5152, 0) not in list_all(c, 0)[0], "a deleted chunk leaves the list")
    c.close()


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--attached":
        addr = os.environ["FNS_ADDR"]
        test_roundtrip(addr)
        test_pipelined(addr)
        test_dribbled(addr)
        test_persisted(addr)
        test_bad_crc_and_too_big(addr)
        test_bad_frames(addr)
        print("ok (attached)")
        return 0
    binary = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="integ-fnstore-")
    # Each record in a segment of its own (--cos-segment-max 1), as a COS
    # that cannot append has them: the segment lifetimes below (tombstones
    # in newer segments, held ones) and the COS outage, which refuses the
    # opening of a new segment, need that. Appends: unit.fnstore.cos,
    # integ.roundtrip and integ.fault_node.
    node = Node(binary, tmp, ["--cos-segment-max", "1"])
    ok = False
    try:
        node.start()
        inc = test_roundtrip(node.addr)
        blobs, tags = test_pipelined(node.addr)
        test_dribbled(node.addr)
        test_persisted(node.addr)
        test_notify(node)
        test_bad_crc_and_too_big(node.addr)
        test_bad_frames(node.addr)
        test_backpressure_and_del_during_send(node.addr)
        test_metrics(node.maddr)
        test_cos_outage(node)
        test_restart(node, inc, blobs, tags)
        test_tomb_lifetime(node)
        test_tomb_alone(node)
        test_list(node, blobs)
        rc = node.term()
        check(rc == 0, "clean exit on SIGTERM, got %r" % rc)
        test_caps_and_queue_limit(binary, tmp)
        test_arena_accounting(binary, tmp)
        ok = True
        print("ok")
        return 0
    finally:
        if node.proc is not None and node.proc.poll() is None:
            node.proc.kill()
            node.proc.wait()
        if not ok or os.environ.get("FNS_SHOW_LOG"):
            for d, _, files in sorted(os.walk(tmp)):
                if "node.log" in files:
                    sys.stderr.write(open(os.path.join(d, "node.log")).read()[-6000:])
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
