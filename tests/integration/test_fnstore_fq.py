#!/usr/bin/env python3
"""integ.fnstore.fq - the fair queue on a real shoal-fnstore (stdlib only).

usage: test_fnstore_fq.py PATH/TO/shoal-fnstore

- --sched: drfq by default, each registered policy starts and names itself on
  /metrics (shoal_fnstore_info), an unknown name exits 2 with one line.
- The dispatch bound: a reader that does not read holds at most the bound in
  dispatched answers; the rest waits in the fair queue (per-tenant queue
  length), and everything is answered, whole, once it reads.
- Where the wait is decides who goes first: on one connection, big GETs of
  tenant 1 sent before small GETs of tenant 2. With the bound and drfq the
  small ones overtake the waiting big ones; with fifo, or without the bound
  (the big ones already sit in the socket's output), they do not.
- Per-tenant figures: arrivals count refused requests (BUSY), served bytes
  are the bytes moved, queue waits are observed.
- META records are not scheduled: on a node capped at 20 requests/s, a
  tenant's records sent behind 40 of its own GETs are logged and answered
  while most of the GETs still wait, and they take none of its turns (its
  served and arrived figures count the PUT and the GETs only).
"""
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

from shoaltest import (crc32c, free_port, http_request, parse_metrics, stop_process, wire_frame,
                       wire_parse_hdr)

OP_PUT, OP_GET, OP_META, OP_RESP = 2, 3, 7, 0x80
WF_PERSISTED = 1
E_BUSY = -1007
MiB = 1 << 20


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        b = s.recv(min(n - len(buf), 1 << 20))
        if not b:
            raise EOFError("closed after %d of %d bytes" % (len(buf), n))
        buf += b
    return bytes(buf)


def read_resp(s):
    h = wire_parse_hdr(recv_exact(s, 64))
    h["data"] = recv_exact(s, h["data_len"]) if h["data_len"] else b""
    check(crc32c(h["data"]) == h["data_crc"], "payload crc of %r" % h["req_id"])
    return h


class Node:
    def __init__(self, binary, tmp, *extra):
        self.addr = ("127.0.0.1", free_port())
        self.mport = free_port()
        self.dir = tempfile.mkdtemp(dir=tmp)
        args = [binary, "--listen", "127.0.0.1:%d" % self.addr[1],
                "--metrics-listen", "127.0.0.1:%d" % self.mport, "--controller", "",
                "--cos", os.path.join(self.dir, "cos"), "--data-dir", self.dir,
                "--capacity", "256MiB", "--instance-size", "128MiB", "--max-chunk", "4MiB"] + list(extra)
        self.log = open(os.path.join(self.dir, "node.log"), "a")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log)
        end = time.monotonic() + 15
        while True:
            check(self.proc.poll() is None, "shoal-fnstore %s exited %s" % (extra,
                                                                          self.proc.returncode))
            try:
                socket.create_connection(self.addr, timeout=1).close()
                if http_request(self.mport, "GET", "/healthz", timeout=2).status == 200:
                    break
            except OSError:
                pass
            check(time.monotonic() < end, "shoal-fnstore %s did not start" % (extra,))
            time.sleep(0.05)

    def metrics(self):
        r = http_request(self.mport, "GET", "/metrics", timeout=10)
        check(r.status == 200, "metrics %r" % r)
        return r.body.decode(), parse_metrics(r.body.decode())

    def connect(self, rcvbuf=None):
        s = socket.socket()
        if rcvbuf is not None:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(30)
        s.connect(self.addr)
        return s

    def put(self, s, tenant, obj, data):
        s.sendall(wire_frame(OP_PUT, tenant=tenant, req_id=obj, obj=obj, data=data))
        r = read_resp(s)
        check(r["status"] == 0, "PUT %d: %r" % (obj, r))

    def stop(self):
        stop_process(self.proc)
        self.log.close()


def test_sched_flag(binary, tmp):
    p = subprocess.run([binary, "--cos", tmp, "--sched", "nope"], capture_output=True,
                       text=True, timeout=30)
    err = p.stderr.strip().splitlines()
    check(p.returncode == 2 and len(err) == 1 and "nope" in err[0] and "drfq" in err[0] and
          "fifo" in err[0], "unknown scheduler: rc %d %r" % (p.returncode, p.stderr))
    for sched in (None, "drfq", "drr", "fifo"):
        n = Node(binary, tmp, *(["--sched", sched] if sched else []))
        try:
            text, _ = n.metrics()
            want = 'sched="%s"} 1' % (sched or "drfq")
            check(want in text, "%s: no %s in shoal_fnstore_info" % (sched, want))
        finally:
            n.stop()


def test_bound_holds(binary, tmp):
    """A reader that stops reading: what is dispatched stays within the bound
    (bytes), the rest waits in the fair queue; all of it comes out whole."""
    n = Node(binary, tmp, "--max-dispatched-bytes", "4MiB", "--max-dispatched", "0")
    try:
        s = n.connect()
        data = os.urandom(MiB)
        n.put(s, 1, 1, data)
        slow = n.connect(rcvbuf=65536)
        count = 48
        slow.sendall(b"".join(wire_frame(OP_GET, tenant=1, req_id=100 + i, obj=1)
                              for i in range(count)))
        time.sleep(1.0)
        _, m = n.metrics()
        queued = m.get('shoal_fnstore_tenant_queued_requests{node="0",tenant="1"}', -1)
        disp = m.get('shoal_fnstore_dispatched_bytes{node="0"}', -1)
        check(disp <= 4 * MiB + MiB, "dispatched bytes %r above the bound" % disp)
        # What the kernel's socket buffers took left the node; the rest of
        # the 48 MiB must wait in the queue, not in the node's output.
        check(queued >= count - 4 - 16, "queued %r of %d: the node did not hold them" %
              (queued, count))
        check(m['shoal_fnstore_dispatch_pauses_total{node="0"}'] >= 1, "no pause counted")
        for _ in range(count):
            r = read_resp(slow)
            check(r["status"] == 0 and r["data"] == data, "GET %d" % r["req_id"])
        _, m = n.metrics()
        check(m['shoal_fnstore_dispatched_requests{node="0"}'] == 0 and
              m['shoal_fnstore_tenant_queued_requests{node="0",tenant="1"}'] == 0,
              "dispatched/queued after the reader caught up")
        check(m['shoal_fnstore_tenant_served_bytes_total{node="0",tenant="1"}'] ==
              (count + 1) * MiB, "served bytes")
        check(m['shoal_fnstore_tenant_queue_wait_seconds_count{node="0",tenant="1"}'] ==
              count + 1, "queue waits observed")
        check(m['shoal_fnstore_tenant_queue_wait_seconds_sum{node="0",tenant="1"}'] > 0.5,
              "the held GETs waited in the queue")
        slow.close()
        s.close()
    finally:
        n.stop()
    # The same with a bound in requests only.
    n = Node(binary, tmp, "--max-dispatched", "3", "--max-dispatched-bytes", "0")
    try:
        s = n.connect()
        data = os.urandom(512 << 10)
        n.put(s, 2, 7, data)
        slow = n.connect(rcvbuf=65536)
        slow.sendall(b"".join(wire_frame(OP_GET, tenant=2, req_id=i, obj=7) for i in range(40)))
        time.sleep(1.0)
        _, m = n.metrics()
        check(m['shoal_fnstore_dispatched_requests{node="0"}'] <= 3, "request bound")
        check(m['shoal_fnstore_tenant_queued_requests{node="0",tenant="2"}'] >= 20, "queued")
        for _ in range(40):
            check(read_resp(slow)["data"] == data, "GET whole")
        slow.close()
        s.close()
    finally:
        n.stop()


def overtaken(binary, tmp, *flags):
    """Tenant 1's 32 GETs of 1 MiB, then (once they are in) tenant 2's 32
    GETs of 1 KiB, on one connection read only after both are sent. Returns
    how many of tenant 1's answers came before tenant 2's last."""
    n = Node(binary, tmp, *flags)
    try:
        s = n.connect(rcvbuf=65536)
        big, small = os.urandom(MiB), os.urandom(1024)
        n.put(s, 1, 1, big)
        n.put(s, 2, 2, small)
        s.sendall(b"".join(wire_frame(OP_GET, tenant=1, req_id=1000 + i, obj=1)
                           for i in range(32)))
        time.sleep(0.3)
        s.sendall(b"".join(wire_frame(OP_GET, tenant=2, req_id=2000 + i, obj=2)
                           for i in range(32)))
        time.sleep(0.3)
        before, seen_small = 0, 0
        for _ in range(64):
            r = read_resp(s)
            check(r["status"] == 0, "GET %r" % r)
            if r["tenant"] == 1:
                check(r["data"] == big, "big GET whole")
                before += seen_small < 32
            else:
                check(r["data"] == small, "small GET whole")
                seen_small += 1
        s.close()
        return before
    finally:
        n.stop()


def test_queue_where_the_wait_is(binary, tmp):
    bound = ("--max-dispatched-bytes", "4MiB")
    drfq = overtaken(binary, tmp, "--sched", "drfq", *bound)
    fifo = overtaken(binary, tmp, "--sched", "fifo", *bound)
    unbounded = overtaken(binary, tmp, "--sched", "drfq", "--max-dispatched-bytes", "0",
                          "--max-dispatched", "0")
    print("big answers before the last small one: drfq+bound %d, fifo+bound %d, "
          "drfq unbounded %d" % (drfq, fifo, unbounded), flush=True)
    check(drfq <= 12, "drfq with the bound: %d big answers went first" % drfq)
    check(fifo == 32, "fifo keeps arrival order: %d" % fifo)
    check(unbounded == 32, "unbounded, the big answers already sat in the output: %d" % unbounded)


def test_arrivals_count_refusals(binary, tmp):
    n = Node(binary, tmp, "--queue-limit", "2")
    try:
        s = n.connect()
        n.put(s, 3, 9, b"x" * 1000)
        s.sendall(b"".join(wire_frame(OP_GET, tenant=3, req_id=i, obj=9) for i in range(20)))
        st = [read_resp(s)["status"] for _ in range(20)]
        check(st.count(0) == 2 and st.count(E_BUSY) == 18, "statuses %r" % st)
        time.sleep(0.5)  # the per-tenant figures are refreshed every 200 ms
        _, m = n.metrics()
        lb = '{node="0",tenant="3"}'
        check(m["shoal_fnstore_tenant_arrived_requests_total" + lb] == 21, "arrivals")
        check(m["shoal_fnstore_tenant_served_requests_total" + lb] == 3, "served")
        check(m["shoal_fnstore_tenant_served_bytes_total" + lb] == 3000, "served bytes")
        # 21 arrivals of 1000 bytes, each counted 1000 bytes / 1 GiB/s or
        # 1 / 100k req/s, whichever is larger: 10 us each.
        check(abs(m["shoal_fnstore_tenant_arrived_cost_seconds_total" + lb] - 21e-5) < 1e-9,
              "arrived cost %r" % m["shoal_fnstore_tenant_arrived_cost_seconds_total" + lb])
        check(abs(m["shoal_fnstore_tenant_served_cost_seconds_total" + lb] - 3e-5) < 1e-9,
              "served cost")
        check(m["shoal_fnstore_tenant_weight" + lb] == 1, "default weight")
        s.close()
    finally:
        n.stop()


def meta_record(tenant, key, version):
    """A version's META record (gw_meta.h's gw_mrec, kind 1) with a dummy layout."""
    layout = b"\x02layout"
    return (struct.pack("<BIH", 1, tenant, len(key)) + key + struct.pack("<Q", version) +
            struct.pack("<I", len(layout)) + layout)


def test_meta_not_queued(binary, tmp):
    """A gateway's META records for a tenant are logged at once, not queued
    behind the tenant's GETs nor charged a turn: with drfq a weight-1
    tenant's few turns would otherwise go to records of PUTs answered long
    before, and its reads would wait behind them."""
    n = Node(binary, tmp, "--sched", "drfq", "--cap-ops", "20")
    try:
        s = n.connect()
        n.put(s, 4, 1, os.urandom(1024))
        gets, metas = 40, 5
        s.sendall(b"".join(wire_frame(OP_GET, tenant=4, req_id=100 + i, obj=1)
                           for i in range(gets)))
        time.sleep(0.2)
        s.sendall(b"".join(wire_frame(OP_META, tenant=4, req_id=500 + i, obj=10 + i,
                                      data=meta_record(4, b"k%d" % i, 1))
                           for i in range(metas)))
        got_gets, meta_after = 0, []
        for _ in range(gets + metas):
            r = read_resp(s)
            check(r["status"] == 0, "answer %r" % r)
            if r["op"] == OP_META | OP_RESP:
                check(r["flags"] & WF_PERSISTED, "META answered before durable: %r" % r)
                meta_after.append(got_gets)
            else:
                got_gets += 1
        print("META answers after %r of %d GETs (20 GET/s)" % (meta_after, gets), flush=True)
        check(len(meta_after) == metas and max(meta_after) <= gets // 2,
              "META records waited behind the tenant's GETs: answered after %r of %d" %
              (meta_after, gets))
        time.sleep(0.5)  # the per-tenant figures are refreshed every 200 ms
        _, m = n.metrics()
        lb = '{node="0",tenant="4"}'
        check(m["shoal_fnstore_tenant_served_requests_total" + lb] == gets + 1,
              "served %r: META records took turns" % m["shoal_fnstore_tenant_served_requests_total" + lb])
        check(m["shoal_fnstore_tenant_arrived_requests_total" + lb] == gets + 1, "arrivals")
        s.close()
    finally:
        n.stop()


def main():
    binary = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="shoal-fnstore-fq-")
    t0 = time.monotonic()
    try:
        for t in (test_sched_flag, test_bound_holds, test_queue_where_the_wait_is,
                  test_arrivals_count_refusals, test_meta_not_queued):
            print("--", t.__name__, flush=True)
            t(binary, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASSED test_fnstore_fq.py in %.1fs" % (time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
