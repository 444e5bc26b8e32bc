#!/usr/bin/python3
"""integ.bench.cluster: shoal-bench's schedules and trace replay against a real
local cluster (deploy/local/shoal-cluster), plus a closed-loop schedule against a
server that takes a fixed 20 ms per request (so throughput is concurrency / 20 ms).

  open_step     rate=step:0s=60/2s=240: --series shows the new rate in the very
                second of the step, and its target column says what was asked
  closed_step   conc=step:0s=2/2s=8 on the 20 ms server: 4x the requests/s from
                the second of the step on
  trace         a hand-written trace for two tenants at --trace-speed 2: every PUT
                is read back (the --json counts), a GET of a key never written and
                a GET after a DELETE are misses, not errors; the objects are where
                the trace put them (prefix + percent-decoded key), sizes included
  tracegen      a small bench/tracegen day replayed: no errors, no misses, every
                request of the trace answered
"""
import csv
import json
import os
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import shoaltest as st


def bench(t, *args, timeout=60):
    p = subprocess.run([t.binary("shoal-bench"), "--log-level", "warn", *args],
                       capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise st.TestFailure("shoal-bench %s: exit %d\n%s" % (" ".join(args), p.returncode,
                                                              p.stderr))
    return json.loads(p.stdout)


def series(path, tenant):
    """{second: row} of one tenant's --series rows."""
    return {int(r["second"]): r for r in csv.DictReader(open(path)) if r["tenant"] == tenant}


def open_step(t, c, ten):
    out = os.path.join(t.tmp, "step.csv")
    j = bench(t, "--gateway", "http://127.0.0.1:%d" % c.gw_port, "--threads", "1",
              "--tenant", "name=a,key=%s,rate=step:0s=60/2s=240,read=0,size=1KiB,keys=100"
              % ten["key"], "--warmup", "0", "--duration", "4", "--series", out, "--json")
    a = j["tenants"][0]
    t.eq((a["loop"], a["rate"], a["sched"]), ("open", 240, "step:0s=60/2s=240"), "json tenant")
    t.eq(a["errors"], 0, "errors: %r" % a["status"])
    rows = series(out, "a")
    got = [int(rows[s]["ops_per_s"]) for s in range(4)]
    want = [float(rows[s]["target"]) for s in range(4)]
    st.log("open step 60 -> 240 at 2 s: ops per second %s, target %s" % (got, want))
    t.eq(want, [60, 60, 240, 240], "target column")
    t.check(all(30 <= g <= 100 for g in got[:2]), "before the step: %r" % got)
    # Within a second of the step: the second that starts at the step already runs at 240/s.
    t.check(all(170 <= g <= 320 for g in got[2:]), "from the step's second on: %r" % got)


class Slow(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_GET(self):
        time.sleep(0.02)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


def closed_step(t):
    ThreadingHTTPServer.request_queue_size = 128  # every connection dials at once
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    srv.daemon_threads = True
    srv.handle_error = lambda request, addr: None  # requests abandoned at the end of the run
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        out = os.path.join(t.tmp, "closed.csv")
        j = bench(t, "--gateway", "http://127.0.0.1:%d" % srv.server_address[1],
                  "--tenant", "name=c,key=k,conc=step:0s=2/2s=8,read=1,keys=10",
                  "--warmup", "0", "--duration", "4", "--series", out, "--json")
    finally:
        srv.shutdown()
        srv.server_close()
    t.eq((j["tenants"][0]["conc"], j["tenants"][0]["errors"]), (8, 0), "conc (the peak), errors")
    rows = series(out, "c")
    got = [int(rows[s]["ops_per_s"]) for s in range(4)]
    st.log("closed step 2 -> 8 at 2 s on a 20 ms server: ops per second %s" % got)
    t.eq([float(rows[s]["target"]) for s in range(4)], [2, 2, 8, 8], "target column")
    before, after = sum(got[:2]) / 2, min(got[2:])
    t.check(before > 40 and after > 2.5 * before, "2 -> 8 requests outstanding: %r" % got)


def trace(t, c, ten_a, ten_b):
    sizes = [1 + (i * 7919) % 200000 for i in range(50)] + [3 << 20]
    rows = ["t,tenant,op,key,size"]
    for i, s in enumerate(sizes):
        rows.append("%.3f,a,PUT,img/%d,%d" % (i * 0.02, i, s))
    rows.append("1.02,b,PUT,caf\u00e9/x+y?z,1234")
    rows.append("1.03,b,GET,never/written,")
    for i in range(len(sizes)):
        rows.append("%.3f,a,GET,img/%d," % (1.2 + i * 0.02, i))
    rows.append("2.4,b,GET,caf\u00e9/x+y?z,")
    rows.append("2.5,a,DELETE,img/0,")
    rows.append("3.0,a,GET,img/0,")
    path = os.path.join(t.tmp, "trace.csv")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")
    out = os.path.join(t.tmp, "trace-series.csv")
    t0 = time.monotonic()
    j = bench(t, "--gateway", "http://127.0.0.1:%d" % c.gw_port, "--prefix", "replay/",
              "--tenant", "name=a,key=%s" % ten_a["key"],
              "--tenant", "name=b,key=%s,conns=2" % ten_b["key"],
              "--trace", path, "--trace-speed", "2", "--series", out, "--json")
    took = time.monotonic() - t0
    res = {x["name"]: x for x in j["tenants"]}
    a, b = res["a"], res["b"]
    st.log("trace: a %s, b %s, %.1f s" % (
        {k: a[k] for k in ("writes", "reads", "deletes", "misses", "errors")},
        {k: b[k] for k in ("writes", "reads", "deletes", "misses", "errors")}, took))
    n = len(sizes)
    t.eq((a["loop"], a["writes"], a["reads"], a["deletes"], a["misses"], a["errors"]),
         ("trace", n, n, 1, 1, 0), "tenant a: every PUT read back, the GET after the DELETE a miss")
    t.eq(a["bytes"], 2 * sum(sizes), "tenant a: bytes written and read back")
    t.eq((b["writes"], b["reads"], b["misses"], b["errors"], b["status"].get("404")),
         (1, 1, 1, 0, 1), "tenant b: a GET of a key never written is a miss")
    t.check(took < 10, "replay of 1.5 s of trace (speed 2) took %.1f s" % took)
    rows_a = series(out, "a")
    t.eq(sum(float(r["target"]) for r in rows_a.values()), 2 * n + 2, "series target sums a's trace")
    t.check(float(rows_a[0]["target"]) >= n - 1, "a's PUTs are all due in second 0: %r" % rows_a[0])
    # The objects are where the trace said, under --prefix, with the key percent-decoded.
    r = c.gw(ten_b).get("replay/caf\u00e9/x+y?z")
    t.status(r, 200, "GET the trace's encoded key")
    t.eq(len(r.body), 1234, "its size")
    r = c.gw(ten_a).get("replay/img/%d" % (n - 1))
    t.status(r, 200, "GET the trace's 3 MiB object")
    t.eq(len(r.body), 3 << 20, "its size")
    t.status(c.gw(ten_a).get("replay/img/0"), 404, "the deleted object")


def tracegen(t, c, ten):
    path = os.path.join(t.tmp, "day.csv")
    p = subprocess.run([os.path.join(t.src, "bench", "tracegen"), "--names", "reg",
                        "--duration", "8", "--window", "2", "--peak-wss", "6MiB", "--swing", "20",
                        "--large", "64KiB-1MiB", "--small", "1KiB-16KiB", "--seed", "3",
                        "--out", path], capture_output=True, text=True, timeout=60)
    t.eq(p.returncode, 0, "tracegen: %s" % p.stderr)
    ops = [r["op"] for r in csv.DictReader(open(path))]
    j = bench(t, "--gateway", "http://127.0.0.1:%d" % c.gw_port, "--prefix", "day/",
              "--tenant", "name=reg,key=%s" % ten["key"], "--trace", path, "--trace-speed", "2",
              "--json")
    g = j["tenants"][0]
    st.log("tracegen day: %d requests; %s" % (len(ops), {k: g[k] for k in (
        "writes", "reads", "misses", "errors", "ops_per_s")}))
    t.eq((g["writes"], g["reads"], g["misses"], g["errors"]),
         (ops.count("PUT"), ops.count("GET"), 0, 0), "every request of the day answered")


def main(t):
    c = t.cluster()
    ten_a, ten_b = c.create_tenant("alpha"), c.create_tenant("beta")
    t.section(open_step, c, ten_a)
    t.section(closed_step)
    t.section(trace, c, ten_a, ten_b)
    t.section(tracegen, c, ten_b)


if __name__ == "__main__":
    st.run(main, timeout=110)
