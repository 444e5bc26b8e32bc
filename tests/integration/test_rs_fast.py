#!/usr/bin/python3
"""integ.rs_fast: replica selection "fast" moves reads off a slow node.

Three nodes, small objects stored as 1+2 whole copies, so every node holds a copy
of every object and any copy serves a read. Node 2 is slowed down for good: it
runs with --cap-ops (it admits that many requests per second), restarted so
before any object is written. One tenant reads small objects with shoal-bench in
a closed loop (many readers, each with one GET out). The gateway runs
--rs uniform, fast, uniform, fast (restarted in between, same objects); each
run's share of chunk GETs the slow node served comes from the nodes' /metrics
(shoal_fnstore_requests_total, op="get", before and after the run), its p99
from shoal-bench.

Asserted on the medians of the two runs of each policy:
  share  uniform asks the slow node for a third of the reads; every reader soon
         waits there, and what it cannot serve within --slow-ms (200 ms) is asked
         again elsewhere, so it serves its cap, about a fifth of the GETs (>= 0.15
         asserted); fast: its RTT grows, its window closes, reads go to the
         copies with room, and its share falls below a quarter of uniform's
  p99    fast at least 2x better than uniform (uniform's is about --slow-ms)
"""
import json
import os
import re
import statistics
import subprocess

import shoaltest as st

NODES = 3         # = 1 + m: every node holds a copy of every small object
SLOW = 2          # the slowed node
CAP_OPS = 100     # its requests per second
KEYS = 200
CONC = 24         # readers
WARMUP_S = 1
DURATION_S = 6


def restart_gateway(t, c, rs):
    c.stop(only=["gateway"])
    c.cluster_cmd("start", "--only", "gateway", "--gateway-args", "--rs " + rs)
    log = open(os.path.join(c.dir, "logs", "gateway.log"), errors="replace").read()
    starts = re.findall(r"listening addr=\S+ .* rs=(\S+)", log)
    t.check(starts and starts[-1] == rs, "gateway started with rs=%r, want %r" % (starts[-1:], rs))


def node_gets(c, tenant_id):
    """Chunk GETs each node has answered for the tenant (any status)."""
    out = []
    for i in range(NODES):
        m = c.metrics(i)
        out.append(sum(v for k, v in m.items()
                       if k.startswith("shoal_fnstore_requests_total{")
                       and 'tenant="%d"' % tenant_id in k and 'op="get"' in k))
    return out


def bench(t, c, ten, *extra, timeout=120):
    args = [t.binary("shoal-bench"), "--log-level", "warn", "--threads", "1",
            "--gateway", "http://127.0.0.1:%d" % c.gw_port, "--prefix", "rs/", *extra, "--json"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise st.TestFailure("shoal-bench: exit %d\n%s" % (p.returncode, p.stderr))
    return json.loads(p.stdout)["tenants"][0]


def one_run(t, c, ten, rs):
    restart_gateway(t, c, rs)
    c.wait_tenant_known(ten["key"])
    before = node_gets(c, ten["id"])
    r = bench(t, c, ten, "--tenant", "name=r,key=%s,conc=%d,read=1,keys=%d,zipf=0"
              % (ten["key"], CONC, KEYS), "--warmup", str(WARMUP_S), "--duration", str(DURATION_S))
    after = node_gets(c, ten["id"])
    gets = [a - b for a, b in zip(after, before)]
    share = gets[SLOW] / max(1, sum(gets))
    p99 = r["latency_us"]["p99"] / 1000.0
    st.log("rs=%-7s ops/s %7.1f  p50 %6.2f ms  p99 %7.2f ms  errors %d  node GETs %s  "
           "slow node share %.3f" % (rs, r["ops_per_s"], r["latency_us"]["p50"] / 1000.0, p99,
                                     r["errors"], [int(g) for g in gets], share))
    t.eq(r["errors"], 0, "%s: bench errors %r" % (rs, r["status"]))
    t.check(r["ops"] > 0, "%s: no reads completed" % rs)
    return share, p99


def main(t):
    c = t.cluster(nodes=NODES, gateway_args="--rs uniform")
    # The slow node, before any object exists (a restarted node's memory is
    # empty), and then the gateway, which connects to it afresh. FNSTORE_ARGS
    # is remembered for later starts: only this node starts with it.
    c.stop(only=["gateway", "fnstore-%d" % SLOW])
    c.cluster_cmd("start", "--only", "fnstore-%d" % SLOW, "--fnstore-args",
                  "--cap-ops %d" % CAP_OPS)
    c.wait_nodes_up()
    c.start(only=["gateway"])
    ten = c.create_tenant("reader")
    load = bench(t, c, ten, "--load", "--tenant", "name=r,key=%s,conc=8,read=1,keys=%d,size=1KiB"
                 % (ten["key"], KEYS), "--warmup", "0", "--duration", "0.1")
    st.log("loaded %d keys of 1 KiB" % KEYS)
    t.check(load["errors"] == 0, "load errors %r" % load["status"])
    res = {"uniform": [], "fast": []}
    for rs in ("uniform", "fast", "uniform", "fast"):
        res[rs].append(one_run(t, c, ten, rs))
    share = {rs: statistics.median(s for s, _ in v) for rs, v in res.items()}
    p99 = {rs: statistics.median(p for _, p in v) for rs, v in res.items()}
    st.log("medians: slow node share uniform %.3f fast %.3f; p99 uniform %.2f ms fast %.2f ms "
           "(%.1fx)" % (share["uniform"], share["fast"], p99["uniform"], p99["fast"],
                        p99["uniform"] / max(p99["fast"], 1e-3)))
    t.check(share["uniform"] >= 0.15,
            "uniform: the slow node served %.3f of the chunk GETs, want at least 0.15"
            % share["uniform"])
    t.check(share["fast"] < share["uniform"] / 4,
            "fast: the slow node served %.3f of the chunk GETs, want below a quarter of "
            "uniform's %.3f" % (share["fast"], share["uniform"]))
    t.check(p99["uniform"] >= 2 * p99["fast"],
            "p99: uniform %.2f ms, fast %.2f ms: want fast at least 2x better"
            % (p99["uniform"], p99["fast"]))


st.run(main, timeout=130)
