#!/usr/bin/python3
"""integ.admit: large GETs are admitted into the engine under a gateway-wide
bound on the bytes in flight (--inflight-bytes), fairly across tenants, and
a request that cannot get in within --admit-wait-ms is answered 503 with
Retry-After instead of hanging.

1. 64 concurrent 10 MiB GETs (two tenants, 32 each) for a few seconds,
   the default --inflight-bytes (64 MiB) and --admit-wait-ms (1.5 s): no error (no 503), none slower than 2 s, the
   two tenants' byte rates within 1.5x of each other, and the gateway's
   peak RSS (VmHWM) under its idle RSS + --buffer-cache + 2 x
   --inflight-bytes (the answer buffers and the chunks being read).
2. A second gateway setting, --inflight-bytes 10MiB --admit-wait-ms 20:
   a burst of 24 concurrent GETs of the same object. Every request is
   answered (none hangs), each either 200 with the whole object or 503
   with Retry-After and error "unavailable"; at least one of each.
3. PUTs wait (once their body is read) before the engine: 8 concurrent
   10 MiB PUTs under a 10 MiB bound all get 201 and read back whole, and
   no bytes stay admitted afterwards.
"""
import json
import os
import subprocess
import threading
import time

import shoaltest as st

SIZE = 10 << 20
BOUND = 64 << 20  # the default --inflight-bytes
CACHE = 64 << 20


def vm(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise st.TestFailure("no %s for pid %d" % (field, pid))


def bench(t, c, tenants, conc, secs):
    specs = []
    for i, ten in enumerate(tenants):
        specs += ["--tenant", "name=t%d,key=%s,conc=%d,keys=1,size=10MiB,read=1,zipf=0"
                  % (i, ten["key"], conc)]
    out = subprocess.run([t.binary("shoal-bench"), "--gateway",
                          "http://127.0.0.1:%d" % c.gw_port] + specs +
                         ["--duration", str(secs), "--warmup", "1", "--json", "--threads", "2",
                          "--prefix", "admit/", "--log-level", "warn"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    t.eq(out.returncode, 0, "shoal-bench exit (stderr %r)" % out.stderr[-300:])
    return json.loads(out.stdout)["tenants"]


def check_bound(t):
    c = t.cluster(nodes=6, gateway_args="--buffer-cache %d" % CACHE)
    tenants = [c.create_tenant("adm%d" % i) for i in range(2)]
    data = os.urandom(SIZE)
    for ten in tenants:
        t.status(c.gw(ten).put("admit/0", data), 201, "PUT 10 MiB")
    pid = c.pid("gateway")
    idle = vm(pid, "VmRSS")
    res = bench(t, c, tenants, 32, 6)
    peak = vm(pid, "VmHWM")
    limit = idle + CACHE + 2 * BOUND
    rates = [r["mb_per_s"] for r in res]
    st.log("64 x GET 10 MiB: %s MB/s, max %s ms, errors %s; RSS idle %d MiB, peak %d MiB "
           "(limit %d MiB)" % (rates, [round(r["latency_us"]["max"] / 1e3) for r in res],
                               [r["status"] for r in res], idle >> 20, peak >> 20, limit >> 20))
    for r in res:
        t.check(r["ops"] > 0 and r["errors"] == 0,
                "GET 10 MiB: %d ok, errors by status %r" % (r["ops"], r["status"]))
        t.check(r["latency_us"]["max"] < 2e6, "a GET took %.0f ms" % (r["latency_us"]["max"] / 1e3))
    t.check(max(rates) <= 1.5 * min(rates), "tenants' rates %r differ by more than 1.5x" % rates)
    t.check(peak < limit, "gateway peak RSS %d MiB over %d MiB" % (peak >> 20, limit >> 20))
    # The client is gone: the GETs it left behind end, and their bytes are released.
    deadline = time.time() + 15
    while True:
        m = st.parse_metrics(st.http_request(c.gw_port, "GET", "/metrics").body.decode())
        if m.get("shoal_gateway_admit_inflight_bytes") == 0 or time.time() > deadline:
            break
        time.sleep(0.2)
    t.check(m.get("shoal_gateway_admit_waited_total", 0) > 0, "no GET waited for admission")
    t.eq(m.get("shoal_gateway_admit_inflight_bytes"), 0, "bytes in flight after the run")
    t.eq(m.get("shoal_gateway_admit_waiting"), 0, "requests waiting after the run")
    c.stop()


def check_deadline(t):
    c = t.cluster(nodes=6, gateway_args="--inflight-bytes 10MiB --admit-wait-ms 20")
    g = c.gw(c.create_tenant("late"))
    data = os.urandom(SIZE)
    t.status(g.put("admit/late", data), 201, "PUT 10 MiB")
    got = []

    def one():
        try:
            got.append(g.get("admit/late", timeout=30))
        except OSError as e:
            got.append(e)

    ths = [threading.Thread(target=one, daemon=True) for _ in range(24)]
    t0 = time.time()
    for th in ths:
        th.start()
    for th in ths:
        th.join(timeout=60)
    took = time.time() - t0
    t.eq(len(got), 24, "answers to 24 GETs")
    ok = busy = 0
    for r in got:
        t.check(isinstance(r, st.Resp), "GET failed: %r" % r)
        if r.status == 200:
            t.eq(st.sha256(r.body), st.sha256(data), "GET body")
            ok += 1
        else:
            t.api_error(r, 503, "unavailable", "GET past the admission deadline")
            t.eq(r.header("Retry-After"), "1", "Retry-After of the 503")
            busy += 1
    st.log("24 GETs at a 10 MiB bound, 20 ms wait: %d answered 200, %d 503, in %.1f s"
           % (ok, busy, took))
    t.check(ok >= 1 and busy >= 1, "want some 200 and some 503: %d / %d" % (ok, busy))
    m = st.parse_metrics(st.http_request(c.gw_port, "GET", "/metrics").body.decode())
    t.eq(m.get("shoal_gateway_admit_timed_out_total"), busy, "timed-out count")
    c.stop()


def check_put_wait(t):
    """8 concurrent 10 MiB PUTs under a 10 MiB bound all succeed, one at a
    time, and read back whole; nothing stays admitted."""
    c = t.cluster(nodes=6, gateway_args="--inflight-bytes 10MiB --admit-wait-ms 60000")
    g = c.gw(c.create_tenant("puts"))
    datas = [os.urandom(SIZE) for _ in range(8)]
    got = [None] * 8

    def one(i):
        try:
            got[i] = g.put("admit/put%d" % i, datas[i], timeout=120)
        except OSError as e:
            got[i] = e

    ths = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(8)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(timeout=150)
    for i, r in enumerate(got):
        t.check(isinstance(r, st.Resp), "PUT %d failed: %r" % (i, r))
        t.status(r, 201, "PUT %d of 10 MiB after waiting" % i)
    for i in range(8):
        r = g.get("admit/put%d" % i)
        t.status(r, 200, "GET back")
        t.eq(st.sha256(r.body), st.sha256(datas[i]), "object %d read back" % i)
    m = st.parse_metrics(st.http_request(c.gw_port, "GET", "/metrics").body.decode())
    t.check(m.get("shoal_gateway_admit_waited_total", 0) >= 1, "no PUT waited")
    t.eq(m.get("shoal_gateway_admit_inflight_bytes"), 0, "bytes admitted after the PUTs")
    st.log("8 PUTs of 10 MiB under a 10 MiB bound: all 201, %d waited"
           % m.get("shoal_gateway_admit_waited_total", 0))
    c.stop()


def main(t):
    t.section(check_bound)
    t.section(check_deadline)
    t.section(check_put_wait)


if __name__ == "__main__":
    st.run(main, timeout=280)
