#!/usr/bin/env python3
"""integ.fnstore.sms - the elastic memory tier of a real shoal-fnstore over the
wire, driven by a fake controller that answers its heartbeats (stdlib only):

- PUT answers carry instance tags; heartbeats list the instances and the cost;
- a reclaimed instance: GETs with its old tag answer STALE at once, with
  COS_OK they return the bytes; the recovery loads the chunk asked for first and
  brings every chunk back into memory;
- META records are answered once durable and are in the insertion log in COS;
- decisions (state, generation, warm-up), a lost degraded instance released,
  late reads kept in the cache space (static) or re-admitted (sms), compaction
  of a chunk read from an old generation, two half-full instances of an old
  generation merged into one;
- kill -9: the restarted node recovers its instances from the log (the merged
  chunks under their new tag), and no acknowledged chunk comes back wrong
  (CRC checked);
- a chunk released with its instance before its COS write landed: no
  PERSISTED notice names it, and a STAT answers NOTFOUND (so that a gateway
  writes it again);
- the recovery rate with 1, 4 and 16 helpers against a sequential read of the
  same COS objects (printed; `--rates-mib N` for a bigger run).

usage: test_fnstore_sms.py PATH/TO/shoal-fnstore [--rates-mib N]
"""
import ctypes
import http.server
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from shoaltest import crc32c as slow_crc32c, free_port, stop_process

MAGIC = 0x4C4F4853
HDR = struct.Struct("<IBBHiIQQQIIIII")
OP_PING, OP_PUT, OP_GET, OP_DEL, OP_STAT, OP_META, OP_RESP = 1, 2, 3, 4, 5, 7, 0x80
WF_PERSISTED, WF_COS_SYNC, WF_FROM_COS, WF_NOTIFY, WF_COS_OK = 1, 2, 4, 8, 16
E_NOTFOUND, E_STALE, E_BADARG = -1003, -1006, -1010
DEADLINE = time.monotonic() + 170
A_CHUNKS, A_SIZE = 8000, 200  # tenant 1: one instance of small chunks, a recovery worth watching


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


try:  # ISA-L's CRC32C: the payloads here are megabytes
    _isal = ctypes.CDLL("libisal.so.2")
    _isal.crc32_iscsi.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint32]
    _isal.crc32_iscsi.restype = ctypes.c_uint32

    def crc32c(data):
        return ~_isal.crc32_iscsi(bytes(data), len(data), 0xFFFFFFFF) & 0xFFFFFFFF
except OSError:
    crc32c = slow_crc32c


def hdr(op, req_id, tenant=1, obj=0, idx=0, data=b"", flags=0, inc=0):
    h = HDR.pack(MAGIC, 1, op, flags, 0, tenant, req_id, obj, 0, idx, inc, len(data), crc32c(data),
                 0)
    return h + struct.pack("<I", crc32c(h))


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        b = s.recv(min(n - len(buf), 1 << 20))
        if not b:
            raise EOFError("closed after %d of %d bytes" % (len(buf), n))
        buf += b
    return bytes(buf)


def read_resp(s):
    raw = recv_exact(s, 64)
    f = HDR.unpack(raw[:60])
    r = dict(op=f[2], flags=f[3], status=f[4], tenant=f[5], req_id=f[6], obj=f[7], idx=f[9],
             inc=f[10], data_len=f[11], data_crc=f[12], t=time.monotonic())
    r["data"] = recv_exact(s, r["data_len"]) if r["data_len"] else b""
    check(crc32c(r["data"]) == r["data_crc"], "payload crc of %r" % r["req_id"])
    return r


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.next = 1

    def send(self, op, **kw):
        rid = self.next
        self.next += 1
        self.s.sendall(hdr(op, rid, **kw) + kw.get("data", b""))
        return rid

    def call(self, op, **kw):
        rid = self.send(op, **kw)
        r = read_resp(self.s)
        check(r["req_id"] == rid and r["op"] == op | OP_RESP, r)
        return r

    def pipeline(self, reqs, window=512):
        """[(op, kw)] sent `window` at a time (under the node's queue limit);
        answers by request, in request order."""
        out = []
        for i in range(0, len(reqs), window):
            ids = [self.send(op, **kw) for op, kw in reqs[i:i + window]]
            got = {}
            while len(got) < len(ids):
                r = read_resp(self.s)
                got[r["req_id"]] = r
            out += [got[x] for x in ids]
        return out

    def close(self):
        self.s.close()


class FakeController:
    """Answers heartbeats; keeps the last one; sends what the test queued
    ("sms" and "pools" every time, "decisions" and "reclaim" once)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.last = None
        self.beats = 0
        self.steady = {}
        self.once = {}
        ctl = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                ans = {"epoch": 1, "weights": {}}
                with ctl.lock:
                    ctl.last = json.loads(body)
                    ctl.beats += 1
                    ans.update(ctl.steady)
                    ans.update(ctl.once)
                    ctl.once = {}
                out = json.dumps(ans).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *a):
                pass

        self.port = free_port()
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), H)
        self.th = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.th.start()

    def send_once(self, **kw):
        with self.lock:
            self.once.update(kw)

    def set(self, **kw):
        with self.lock:
            self.steady.update(kw)

    def beat_after(self, t0, timeout=10):
        """A heartbeat sent after t0 (time.monotonic())."""
        with self.lock:
            n = self.beats
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                if self.beats >= n + 2:  # one that started after t0 has ended
                    return self.last
            time.sleep(0.02)
        raise AssertionError("no heartbeat")

    def stop(self):
        self.srv.shutdown()


class Node:
    def __init__(self, binary, tmp, ctl_port, extra=()):
        self.binary, self.tmp, self.extra = binary, tmp, list(extra)
        self.port, self.mport = free_port(), free_port()
        self.ctl_port = ctl_port
        self.proc = None

    def start(self):
        args = [self.binary, "--listen", "127.0.0.1:%d" % self.port,
                "--metrics-listen", "127.0.0.1:%d" % self.mport,
                "--controller", "127.0.0.1:%d" % self.ctl_port, "--heartbeat-ms", "100",
                "--cos", os.path.join(self.tmp, "cos"), "--data-dir", os.path.join(self.tmp, "data"),
                "--capacity", "32MiB", "--instance-size", "2MiB", "--cache-bytes", "2MiB",
                "--max-chunk", "2MiB", "--cos-linger-ms", "5"] + self.extra
        self.log = open(os.path.join(self.tmp, "node.log"), "a")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log)
        end = time.monotonic() + 20
        while True:
            check(self.proc.poll() is None, "shoal-fnstore exited %s" % self.proc.returncode)
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                self.metrics()
                return
            except OSError:
                check(time.monotonic() < end, "shoal-fnstore did not start")
                time.sleep(0.05)

    def metrics(self):
        body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.mport,
                                      timeout=10).read().decode()
        out = {}
        for line in body.splitlines():
            if line and not line.startswith("#"):
                name, val = line.rsplit(" ", 1)
                out[name.split("{")[0] if "tenant=" not in name and "state=" not in name
                    else name] = float(val)
        return out

    def metric(self, name):
        return self.metrics()[name]

    def wait_metric(self, name, pred, what, timeout=20):
        end = time.monotonic() + timeout
        while True:
            v = self.metric(name)
            if pred(v):
                return v
            check(time.monotonic() < end, "%s: %s stays %r" % (what, name, v))
            time.sleep(0.02)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.log.close()

    def stop(self):
        stop_process(self.proc)
        self.log.close()
        return self.proc.returncode


def payload(n, seed):
    return random.Random(seed).randbytes(n)


def put_many(c, tenant, objs, size, seed=0):
    """PUTs one chunk per object (pipelined); {obj: (bytes, tag)}."""
    data = {o: payload(size, seed * 1000003 + o) for o in objs}
    out = {}
    objs = list(objs)
    for i in range(0, len(objs), 256):
        part = objs[i:i + 256]
        rs = c.pipeline([(OP_PUT, dict(tenant=tenant, obj=o, data=data[o])) for o in part])
        for o, r in zip(part, rs):
            check(r["status"] == 0 and r["inc"] != 0, "put %d: %r" % (o, r))
            out[o] = (data[o], r["inc"])
    return out


def wait_durable(node, c, tenant, objs):
    """Every chunk persisted, and the log records naming them written."""
    end = time.monotonic() + 30
    todo = list(objs)
    while todo:
        rs = c.pipeline([(OP_STAT, dict(tenant=tenant, obj=o)) for o in todo])
        todo = [o for o, r in zip(todo, rs) if not r["flags"] & WF_PERSISTED]
        check(time.monotonic() < end, "%d chunks never persisted" % len(todo))
        if todo:
            time.sleep(0.05)
    node.wait_metric("shoal_fnstore_ilog_pending_records", lambda v: v == 0, "log written")


def instance(beat, tag):
    for i in beat["instances"]:
        if i["tag"] == tag:
            return i
    return None


def test_tags_and_heartbeat(node, ctl, c):
    a = put_many(c, 1, range(1, A_CHUNKS + 1), A_SIZE, seed=1)
    b = put_many(c, 2, range(1, 11), 4096, seed=2)
    ta, tb = {t for _, t in a.values()}, {t for _, t in b.values()}
    check(len(ta) == 1 and len(tb) == 1 and ta != tb, "one instance per pool: %r %r" % (ta, tb))
    ta, tb = ta.pop(), tb.pop()
    check(ta >> 20 < 16 and tb >> 20 < 16, "slots of 16: %x %x" % (ta, tb))
    wait_durable(node, c, 1, a)
    wait_durable(node, c, 2, b)
    beat = ctl.beat_after(time.monotonic())
    ia = instance(beat, ta)
    check(ia is not None and ia["tenant"] == 1 and ia["state"] == "active" and ia["lost"] == 0,
          "instance of tenant 1 in %r" % beat["instances"])
    check(ia["used"] == A_CHUNKS * A_SIZE and ia["put_bytes"] == A_CHUNKS * A_SIZE and ia["slot"] == ta >> 20,
          "used %r" % ia)
    check(beat["instance_bytes"] == 2 << 20 and beat["memory_bytes"] == 2 * (2 << 20),
          "memory %r %r" % (beat["instance_bytes"], beat["memory_bytes"]))
    check(beat["node"]["instances"] == 2, "node.instances %r" % beat["node"]["instances"])
    cost = {x["tenant"]: x for x in beat["sms_cost"]}
    check(cost[1]["cos_puts"] >= 1 and cost[1]["cos_put_bytes"] >= A_CHUNKS * (A_SIZE + 8), "cost %r" % cost)
    check(beat["recovery"]["helpers"] == 1 and beat["recovery"]["running"] == 0, "recovery")
    return a, ta, b, tb


def test_reclaim(node, ctl, c, a, ta):
    """A reclaimed active instance: STALE at once, COS_OK bytes, the chunk
    asked for first, then every chunk back in memory."""
    objs = sorted(a)
    first, rest = objs[0], objs[1:]
    ctl.send_once(reclaim={"slots": [ta >> 20]})
    end = time.monotonic() + 10
    while True:  # until the reclaim lands: the first GET of a lost chunk is STALE
        t0 = time.monotonic()
        r = c.call(OP_GET, tenant=1, obj=first, inc=ta)
        if r["status"] == E_STALE:
            break
        check(r["status"] == 0 and r["data"] == a[first][0], "get before reclaim %r" % r)
        check(time.monotonic() < end, "reclaim never applied")
        time.sleep(0.002)
    stale_ms = (r["t"] - t0) * 1000
    # That GET put its chunk first in line: in memory long before the rest.
    while True:
        r = c.call(OP_GET, tenant=1, obj=first, inc=ta)
        if r["status"] == 0:
            break
        check(r["status"] == E_STALE and time.monotonic() < end, "asked chunk %r" % r)
    loaded = node.metric("shoal_fnstore_recovery_chunks_total")
    check(r["data"] == a[first][0] and not r["flags"] & WF_FROM_COS, "asked chunk in memory")
    check(r["inc"] != ta and r["inc"] >> 20 == ta >> 20, "same slot, new tag %x" % r["inc"])
    # The rest, all at once: STALE answers come without a COS read each.
    t0 = time.monotonic()
    rs = c.pipeline([(OP_GET, dict(tenant=1, obj=o, inc=ta)) for o in rest])
    stale = [o for o, r in zip(rest, rs) if r["status"] == E_STALE]
    check(all(r["status"] in (0, E_STALE) for r in rs), "statuses %r" %
          {r["status"] for r in rs})
    check(all(r["data"] == a[o][0] for o, r in zip(rest, rs) if r["status"] == 0), "bytes")
    batch_ms = (max(r["t"] for r in rs) - t0) * 1000
    check(stale, "no STALE answer: the recovery was done before the GETs")
    # With COS_OK a lost chunk's bytes come back (from its recovery).
    late = stale[len(stale) // 2]
    r = c.call(OP_GET, tenant=1, obj=late, inc=ta, flags=WF_COS_OK)
    check(r["status"] == 0 and r["data"] == a[late][0], "COS_OK %r" % r["status"])
    node.wait_metric("shoal_fnstore_recovery_running", lambda v: v == 0, "recover")
    total = node.metric("shoal_fnstore_recovery_chunks_total")
    check(loaded < total / 4, "asked chunk loaded after %d of %d" % (loaded, total))
    rs = c.pipeline([(OP_GET, dict(tenant=1, obj=o, inc=ta)) for o in objs])
    check(all(r["status"] == 0 and r["data"] == a[o][0] and not r["flags"] & WF_FROM_COS
              for o, r in zip(objs, rs)), "every chunk back in memory")
    check(len({r["inc"] for r in rs}) == 1, "one recovered instance")
    beat = ctl.beat_after(time.monotonic())
    inst = instance(beat, rs[0]["inc"])
    check(inst is not None and inst["lost"] == 0 and inst["used"] == A_CHUNKS * A_SIZE, "beat %r" % inst)
    check(beat["recovery"]["chunks"] >= A_CHUNKS and
          {x["tenant"]: x for x in beat["sms_cost"]}[1]["recoveries"] == 1, "recovery figures")
    print("reclaim: first STALE in %.1f ms; %d GETs (%d STALE) answered in %.1f ms; asked chunk "
          "loaded after %d of %d" % (stale_ms, len(rest), len(stale), batch_ms, loaded, total))
    return rs[0]["inc"]


def log_objects(tmp):
    root = os.path.join(tmp, "cos", "ilog")
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if "#" not in f]


def log_records(tmp):
    """Every record of every batch of every log object (cm_ilog.h: an
    object holds one or more batches back to back): [(kind, body)]."""
    out = []
    for path in log_objects(tmp):
        try:
            raw = open(path, "rb").read()
        except FileNotFoundError:
            continue
        at = 0
        while at < len(raw):
            magic, _v, _node, nrec, _seq, ln, crc = struct.unpack_from("<IIIIQII", raw, at)
            check(magic == 0x4C494853 and 32 <= ln <= len(raw) - at, "log object %s" % path)
            b = raw[at:at + ln]
            check(crc32c(b[:28] + b"\0\0\0\0" + b[32:]) == crc, "log object crc %s" % path)
            off = 32
            for _ in range(nrec):
                kind, blen = struct.unpack_from("<B3xI", b, off)
                out.append((kind, b[off + 8:off + 8 + blen]))
                off += 8 + blen
            check(off == ln, "log batch records %s" % path)
            at += ln
    return out


def meta(kind, tenant, key, version, layout=b""):
    m = struct.pack("<BIH", kind, tenant, len(key)) + key + struct.pack("<Q", version)
    return m + (struct.pack("<I", len(layout)) + layout if kind == 1 else b"")


def test_meta(node, c):
    m1 = meta(1, 1, b"photos/cat.jpg", 3, b"\x02layout-bytes")
    t0 = time.monotonic()
    r = c.call(OP_META, tenant=1, data=m1)
    check(r["status"] == 0 and r["flags"] & WF_PERSISTED, "meta %r" % r)
    check(any(k == 3 and b == m1 for k, b in log_records(node.tmp)), "meta record not in the log")
    check(c.call(OP_META, tenant=1, data=b"junk")["status"] == E_BADARG, "bad meta")
    r = c.call(OP_META, tenant=1, data=meta(2, 1, b"photos/cat.jpg", 4))
    check(r["status"] == 0, "tombstone %r" % r)
    # A gateway's frame: records back to back, one answer once all are in
    # COS; a frame with any bad part is refused whole.
    run = [meta(1, 1, b"photos/dog.jpg", 5, b"\x02lay"), meta(2, 1, b"photos/owl.jpg", 6),
           meta(1, 1, b"photos/elk.jpg", 7, b"\x02lay2")]
    bad = meta(1, 1, b"photos/bad.jpg", 8, b"\x02x")
    check(c.call(OP_META, tenant=1, data=run[0] + bad[:-1])["status"] == E_BADARG, "torn frame")
    r = c.call(OP_META, tenant=1, data=b"".join(run))
    check(r["status"] == 0 and r["flags"] & WF_PERSISTED, "meta frame %r" % r)
    logged = [b for k, b in log_records(node.tmp) if k == 3]
    check(all(m in logged for m in run), "a frame's records not all in the log")
    check(bad not in logged and not any(b.startswith(bad[:20]) for b in logged),
          "a refused frame's record was logged")
    print("meta: a record durable in %.1f ms" % ((time.monotonic() - t0) * 1000))


def test_degraded_and_cache(node, ctl, c, b, tb):
    """Static (no "sms" heard yet): a decision makes tenant 2's instance
    degraded and warms it up; reclaimed, it is released, not recovered; its
    chunks then come from COS into the cache space."""
    check(node.metric("shoal_fnstore_sms_heard") == 0, "static until heard")
    ctl.send_once(decisions=[{"slot": tb >> 20, "tag": tb, "state": "degraded", "gen": 0,
                              "warm_up": 1}])
    end = time.monotonic() + 10
    while True:
        beat = ctl.beat_after(time.monotonic())
        i = instance(beat, tb)
        if i is not None and i["state"] == "degraded":
            break
        check(time.monotonic() < end, "decision not applied: %r" % i)
    check({x["tenant"]: x for x in beat["sms_cost"]}[2]["warmups"] == 1, "warm-up counted")
    # A GET from a degraded instance leaves a hot copy in the cache space.
    o = sorted(b)[0]
    r = c.call(OP_GET, tenant=2, obj=o, inc=tb)
    check(r["status"] == 0 and r["inc"] == tb, "get %r" % r)
    node.wait_metric("shoal_fnstore_cache_chunks", lambda v: v == 1, "hot copy", 5)
    ctl.send_once(reclaim={"slots": [tb >> 20]})
    node.wait_metric("shoal_fnstore_instances_released_total", lambda v: v >= 1, "released")
    check(node.metric("shoal_fnstore_recovery_running") == 0, "a degraded instance is not recovered")
    other = sorted(b)[1]
    r = c.call(OP_GET, tenant=2, obj=other, inc=tb)
    check(r["status"] == E_STALE, "stale after release %r" % r["status"])
    r = c.call(OP_GET, tenant=2, obj=o, inc=tb)
    check(r["status"] == 0 and r["data"] == b[o][0] and r["inc"] == 0, "hot copy serves %r" % r)
    r = c.call(OP_GET, tenant=2, obj=other, inc=tb, flags=WF_COS_OK)
    check(r["status"] == 0 and r["data"] == b[other][0] and r["flags"] & WF_FROM_COS, "late read")
    node.wait_metric("shoal_fnstore_cache_chunks", lambda v: v == 2, "late read cached", 5)
    time.sleep(0.3)  # a tick: the figures are published every 200 ms
    hits = node.metric("shoal_fnstore_cache_hits_total")
    r = c.call(OP_GET, tenant=2, obj=other, inc=tb)
    check(r["status"] == 0 and not r["flags"] & WF_FROM_COS, "cache hit %r" % r)
    node.wait_metric("shoal_fnstore_cache_hits_total", lambda v: v == hits + 1, "cache hit", 5)
    beat = ctl.beat_after(time.monotonic())
    check(instance(beat, tb) is None and beat["cache_bytes"] == 2 * 4096, "beat %r" %
          beat["cache_bytes"])


def test_sms_window(node, ctl, c, a, ta_new):
    """The "sms" block: compaction of a chunk read from an old generation,
    re-admission of a late read."""
    ctl.set(sms={"policy": "sms", "interval_ms": 600000, "active": 2, "degraded": 4,
                 "warm_active_ms": 60000, "warm_degraded_ms": 60000, "compact_age": 1,
                 "max_instances": 0},
            pools=[{"tenant": 1, "gen": 0, "gen_age_ms": 0}, {"tenant": 3, "gen": 0,
                                                                "gen_age_ms": 0}])
    node.wait_metric("shoal_fnstore_sms_heard", lambda v: v == 1, "sms heard")
    ctl.set(pools=[{"tenant": 1, "gen": 2, "gen_age_ms": 0}, {"tenant": 3, "gen": 0,
                                                             "gen_age_ms": 0}])
    o = sorted(a)[5]
    end = time.monotonic() + 10
    while True:  # once generation 2 is heard, a read moves the chunk there
        r = c.call(OP_GET, tenant=1, obj=o, inc=ta_new)
        check(r["status"] == 0 and r["data"] == a[o][0], "get %r" % r)
        if r["inc"] != ta_new:
            break
        check(time.monotonic() < end, "never compacted")
        time.sleep(0.05)
    node.wait_metric("shoal_fnstore_compactions_total", lambda v: v >= 1, "compaction", 5)
    moved = r["inc"]
    r = c.call(OP_GET, tenant=1, obj=o, inc=ta_new)  # the gateway's old tag still finds it
    check(r["status"] == 0 and r["inc"] == moved and r["data"] == a[o][0], "found by key")
    beat = ctl.beat_after(time.monotonic())
    new = instance(beat, moved)
    check(new is not None and new["gen"] == 2 and new["used"] == A_SIZE, "new gen instance %r" % new)
    check(instance(beat, ta_new)["used"] == (A_CHUNKS - 1) * A_SIZE, "moved out of the old one")
    # A released instance's chunk read late is re-admitted (room in gen 2).
    d = put_many(c, 3, [1, 2], 2048, seed=3)
    t3 = d[1][1]
    wait_durable(node, c, 3, d)
    ctl.send_once(decisions=[{"slot": t3 >> 20, "tag": t3, "state": "released", "gen": 0,
                              "warm_up": 0}])
    end = time.monotonic() + 10
    while c.call(OP_GET, tenant=3, obj=2, inc=t3)["status"] != E_STALE:
        check(time.monotonic() < end, "release not applied")
        time.sleep(0.02)
    r = c.call(OP_GET, tenant=3, obj=2, inc=t3, flags=WF_COS_OK)
    check(r["status"] == 0 and r["data"] == d[2][0] and r["inc"] not in (0, t3), "re-admitted %r" % r)
    node.wait_metric("shoal_fnstore_readmissions_total", lambda v: v >= 1, "re-admission", 5)
    return moved


def test_merge(node, ctl, c):
    """Two instances of an old generation left half full by DELs: the node
    merges one into the other (its chunks keep their bytes, under the other's
    tag, and the log says so) and releases it."""
    pools = [{"tenant": 1, "gen": 2, "gen_age_ms": 0}, {"tenant": 3, "gen": 0, "gen_age_ms": 0}]
    # compact_age G: the reads below leave the chunks where the merge put them.
    ctl.set(sms={"policy": "sms", "interval_ms": 600000, "active": 2, "degraded": 4,
                 "warm_active_ms": 60000, "warm_degraded_ms": 60000, "compact_age": 6,
                 "max_instances": 0},
            pools=pools + [{"tenant": 5, "gen": 0, "gen_age_ms": 0}])
    ctl.beat_after(time.monotonic())
    size = 500 << 10  # four to a 2 MiB instance
    e = put_many(c, 5, range(1, 9), size, seed=6)
    tags = sorted({t for _, t in e.values()})
    check(len(tags) == 2, "two instances of four chunks: %r" % tags)
    for t in tags:
        for o in [o for o in sorted(e) if e[o][1] == t][:2]:
            check(c.call(OP_DEL, tenant=5, obj=o)["status"] == 0, "del %d" % o)
            del e[o]
    wait_durable(node, c, 5, e)
    before = node.metric("shoal_fnstore_merges_total")
    ctl.set(pools=pools + [{"tenant": 5, "gen": 1, "gen_age_ms": 0}])
    node.wait_metric("shoal_fnstore_merges_total", lambda v: v == before + 1, "merged", 10)
    beat = ctl.beat_after(time.monotonic())
    mine = [i for i in beat["instances"] if i["tenant"] == 5]
    check(len(mine) == 1 and mine[0]["used"] == 4 * size and mine[0]["gen"] == 0 and
          mine[0]["tag"] in tags, "one of the two left, of generation 0, holding all: %r" % mine)
    objs = sorted(e)  # read with the tags the PUTs answered: one of them is gone
    rs = c.pipeline([(OP_GET, dict(tenant=5, obj=o, inc=e[o][1])) for o in objs])
    check(all(r["status"] == 0 and r["data"] == e[o][0] and not r["flags"] & WF_FROM_COS and
              r["inc"] == mine[0]["tag"] for o, r in zip(objs, rs)), "merged chunks in memory")
    node.wait_metric("shoal_fnstore_ilog_pending_records", lambda v: v == 0, "log written")
    return {o: (e[o][0], rs[i]["inc"]) for i, o in enumerate(objs)}


def test_kill9(node, ctl, c, a, merged):
    """kill -9: the restarted node recovers its instances from the log;
    chunks acknowledged but not yet persisted come back whole or not at all."""
    objs = sorted(a)
    kept = put_many(c, 4, range(1, 101), 3000, seed=4)
    wait_durable(node, c, 4, kept)
    late = put_many(c, 4, range(101, 300), 3000, seed=5)
    c.close()
    node.kill9()
    with ctl.lock:  # a restarted node runs static until the controller says otherwise
        ctl.steady = {}
    t0 = time.monotonic()
    node.start()
    c = Conn(node.port)
    node.wait_metric("shoal_fnstore_recovery_running", lambda v: v == 0, "recovery after restart")
    rebuilt_s = time.monotonic() - t0
    check(node.metric("shoal_fnstore_recoveries_total") >= 1, "recoveries after restart")
    for t, chunks in ((1, a), (4, kept), (5, merged)):
        objs = sorted(chunks)
        rs = c.pipeline([(OP_GET, dict(tenant=t, obj=o)) for o in objs])
        bad = [o for o, r in zip(objs, rs)
               if r["status"] != 0 or r["data"] != chunks[o][0] or r["flags"] & WF_FROM_COS]
        check(not bad, "%d of tenant %d's chunks not recovered in memory: %r" % (len(bad), t,
                                                                               bad[:5]))
    rs = c.pipeline([(OP_GET, dict(tenant=4, obj=o, flags=WF_COS_OK)) for o in sorted(late)])
    whole = sum(1 for o, r in zip(sorted(late), rs) if r["status"] == 0)
    check(all((r["status"] == 0 and r["data"] == late[o][0]) or r["status"] == E_NOTFOUND
              for o, r in zip(sorted(late), rs)), "a chunk came back wrong")
    print("kill -9: %d instance(s) recovered in %.2f s; %d of %d unconfirmed chunks were durable"
          % (node.metric("shoal_fnstore_recoveries_total"), rebuilt_s, whole, len(late)))
    return c


def test_reclaim_rate(binary, tmp):
    """--reclaim-rate: instances vanish at random, as on a FaaS platform;
    every chunk stays readable (from memory once recovered)."""
    d = os.path.join(tmp, "rate")
    os.makedirs(d)
    ctl = FakeController()
    node = Node(binary, d, ctl.port, ["--reclaim-rate", "600"])  # ten a second
    node.start()
    try:
        c = Conn(node.port)
        chunks = {}
        for t in (1, 2, 3):
            got = put_many(c, t, range(1, 301), 2000, seed=10 + t)
            wait_durable(node, c, t, got)
            chunks.update({(t, o): v for o, v in got.items()})
        node.wait_metric("shoal_fnstore_instances_reclaimed_total", lambda v: v >= 5,
                         "random reclaims", 10)
        node.wait_metric("shoal_fnstore_recovery_chunks_total", lambda v: v >= 300, "recoveries")
        keys = sorted(chunks)
        rs = c.pipeline([(OP_GET, dict(tenant=t, obj=o, flags=WF_COS_OK)) for t, o in keys])
        check(all(r["status"] == 0 and r["data"] == chunks[k][0] for k, r in zip(keys, rs)),
              "a chunk lost to random reclaims")
        c.close()
        check(node.stop() == 0, "clean exit")
    finally:
        if node.proc.poll() is None:
            node.proc.kill()
        ctl.stop()
    print("reclaim rate: %d reclaims in the run, every chunk readable"
          % node_reclaims(d))


def test_released_before_persisted(binary, tmp):
    """A chunk whose instance is released while its COS write still waits
    (a degraded instance reclaimed, here inside a long --cos-linger-ms; in
    a cluster, during a COS outage): the write lands after the chunk left
    memory, so the node tombstones it. No PERSISTED notice may name it then
    (the gateway would count bytes nothing finds again as durable); a STAT
    answers NOTFOUND, so the gateway's persistent buffer writes it again."""
    d = os.path.join(tmp, "released")
    os.makedirs(d)
    ctl = FakeController()
    node = Node(binary, d, ctl.port, ["--cos-linger-ms", "3000"])
    node.start()
    try:
        c = Conn(node.port)
        data = payload(4096, 77)
        rid = c.send(OP_PUT, tenant=2, obj=7, data=data, flags=WF_NOTIFY)
        r = read_resp(c.s)
        check(r["req_id"] == rid and r["status"] == 0 and r["inc"] != 0, "put %r" % r)
        tag = r["inc"]
        ctl.send_once(decisions=[{"slot": tag >> 20, "tag": tag, "state": "degraded", "gen": 0}])
        end = time.monotonic() + 2
        while True:
            i = instance(ctl.beat_after(time.monotonic()), tag)
            if i is not None and i["state"] == "degraded":
                break
            check(time.monotonic() < end, "decision not applied: %r" % i)
        ctl.send_once(reclaim={"slots": [tag >> 20]})
        node.wait_metric("shoal_fnstore_instances_released_total", lambda v: v >= 1, "released",
                         2)
        check(node.metric("shoal_fnstore_cos_writes_total") == 0, "the write still lingers")
        node.wait_metric("shoal_fnstore_cos_writes_total", lambda v: v >= 1, "write landed", 10)
        time.sleep(0.3)
        c.s.settimeout(0.5)
        notices = []
        try:
            while True:
                r = read_resp(c.s)
                check(r["op"] == 6 | OP_RESP, "unasked %r" % r)
                notices += [struct.unpack_from("<IIQ", r["data"], x)
                            for x in range(0, len(r["data"]), 16)]
        except socket.timeout:
            pass
        c.s.settimeout(30)
        check((2, 0, 7) not in notices, "PERSISTED notice for a chunk no longer held: %r" % notices)
        r = c.call(OP_STAT, tenant=2, obj=7, inc=tag)
        check(r["status"] == E_NOTFOUND, "stat of the released chunk %r" % r)
        c.close()
        check(node.stop() == 0, "clean exit")
    finally:
        if node.proc.poll() is None:
            node.proc.kill()
        ctl.stop()
    print("released before persisted: no notice, STAT NOTFOUND")


def node_reclaims(d):
    with open(os.path.join(d, "node.log")) as f:
        return sum(1 for line in f if "instance reclaimed" in line)


def cos_read_rate(paths):
    """MB/s of a plain sequential read of the chunks' COS objects, one
    after another into one buffer (no CRC, no copy into memory)."""
    buf = bytearray(max(os.path.getsize(p) for p in paths))
    n = 0
    t0 = time.monotonic()
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            n += f.readinto(buf)
    return n / (time.monotonic() - t0) / 1e6


def test_rates(binary, tmp, mib):
    """One instance of `mib` MiB in 256 KiB chunks (each its own COS object),
    reclaimed and recovered with 1, 4 and 16 helpers: [(helpers, recovery
    MB/s, sequential COS read MB/s)] (tests/experiments/elastic.py too)."""
    size = 256 << 10
    n = mib * 4 - 1
    out = []
    for helpers in (1, 4, 16):
        d = os.path.join(tmp, "rate%d" % helpers)
        os.makedirs(d)
        ctl = FakeController()
        node = Node(binary, d, ctl.port, ["--recovery-helpers", str(helpers),
                                          "--instance-size", "%dMiB" % mib,
                                          "--capacity", "%dMiB" % (2 * mib)])
        node.start()
        try:
            c = Conn(node.port)
            a = put_many(c, 1, range(1, n + 1), size, seed=helpers)
            wait_durable(node, c, 1, a)
            tag = next(iter(a.values()))[1]
            paths = [os.path.join(d, "cos", "t1", "%016x.0.0" % o) for o in sorted(a)]
            check(all(os.path.exists(p) for p in paths), "chunks are COS objects")
            subprocess.run(["sync"], check=False)
            cos = cos_read_rate(paths)
            before = node.metric("shoal_fnstore_recovery_seconds_total")
            ctl.send_once(reclaim={"slots": [tag >> 20]})
            node.wait_metric("shoal_fnstore_recoveries_total", lambda v: v >= 1, "reclaimed")
            node.wait_metric("shoal_fnstore_recovery_running", lambda v: v == 0, "recovered", 60)
            secs = node.metric("shoal_fnstore_recovery_seconds_total") - before
            nbytes = node.metric("shoal_fnstore_recovery_bytes_total")
            check(nbytes == n * size, "recovered %d of %d bytes" % (nbytes, n * size))
            rs = c.pipeline([(OP_GET, dict(tenant=1, obj=o)) for o in sorted(a)[:8]])
            check(all(r["status"] == 0 and not r["flags"] & WF_FROM_COS for r in rs), "in memory")
            out.append((helpers, nbytes / secs / 1e6, cos))
            c.close()
            check(node.stop() == 0, "clean exit")
        finally:
            if node.proc.poll() is None:
                node.proc.kill()
            ctl.stop()
        shutil.rmtree(d, ignore_errors=True)
    for helpers, rate, cos in out:
        print("recovery of %d MiB with %2d helper(s): %7.1f MB/s; sequential COS read %7.1f MB/s "
              "(%.2fx)" % (mib, helpers, rate, cos, rate / cos))
    return out


def main():
    binary = os.path.abspath(sys.argv[1])
    mib = int(sys.argv[sys.argv.index("--rates-mib") + 1]) if "--rates-mib" in sys.argv else 16
    tmp = tempfile.mkdtemp(prefix="integ-fnstore-sms-")
    ctl = FakeController()
    node = Node(binary, tmp, ctl.port, ["--recovery-helpers", "1"])
    ok = False
    try:
        node.start()
        c = Conn(node.port)
        a, ta, b, tb = test_tags_and_heartbeat(node, ctl, c)
        ta_new = test_reclaim(node, ctl, c, a, ta)
        test_meta(node, c)
        test_degraded_and_cache(node, ctl, c, b, tb)
        test_sms_window(node, ctl, c, a, ta_new)
        merged = test_merge(node, ctl, c)
        c = test_kill9(node, ctl, c, a, merged)
        c.close()
        check(node.stop() == 0, "clean exit")
        test_reclaim_rate(binary, tmp)
        test_released_before_persisted(binary, tmp)
        test_rates(binary, tmp, mib)
        check(time.monotonic() < DEADLINE, "took too long")
        ok = True
        print("ok")
        return 0
    finally:
        if node.proc is not None and node.proc.poll() is None:
            node.proc.kill()
            node.proc.wait()
        ctl.stop()
        if not ok:
            sys.stderr.write(open(os.path.join(tmp, "node.log")).read()[-8000:])
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
