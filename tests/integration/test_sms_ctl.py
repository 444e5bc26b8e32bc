#!/usr/bin/env python3
"""integ.sms_ctl - the elastic memory end to end: a real controller, nodes and gateway.

With --gc-interval 1 --active-intervals 2 --degraded-intervals 2 and 4 MiB
instances: after the writes stop, the tenant's instances go active ->
degraded -> released within ~4-5 s and the nodes' memory_bytes drops to 0;
every object still reads back whole (from COS); `node reclaim` reaches the
node (it logs the reclaim and rebuilds the instance, its recovery counters
grow); `tenant cost` grows with time and requests; `tenant show` reports the
pool.
"""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoaltest as st  # noqa: E402

NODES = 3
ISZ = 4 << 20


def ctl_json(c, *args):
    return json.loads(c.shoalctl("--json", *args).stdout.decode())


def pool(c, name):
    return ctl_json(c, "tenant", "show", name)["pool"]


def memory(c):
    """Instance memory held, per node id."""
    return {n["id"]: n["memory_bytes"] for n in ctl_json(c, "node", "list")["nodes"]}


def main(t):
    c = t.cluster(nodes=NODES,
                  controller_args="--gc-interval 1 --active-intervals 2 --degraded-intervals 2",
                  fnstore_args="--capacity 64MiB --instance-size 4MiB --heartbeat-ms 250")
    r = c.admin("POST", "/v1/tenants", {"name": "elastic", "ec_k": 2, "ec_m": 1})
    t.status(r, 201, "create tenant 2+1")
    ten = r.json()
    c.wait_tenant_known(ten["key"])
    g = c.gw(ten)
    st.wait_until(lambda: all(n["instance_bytes"] == ISZ
                              for n in ctl_json(c, "node", "list")["nodes"]), 5,
                  "every node reports its instance size")

    objs = {}
    for i in range(24):
        body = os.urandom(96 * 1024 if i % 4 else 600 * 1024)
        t.status(g.put("obj/%d" % i, body), 201, "PUT obj/%d" % i)
        objs["obj/%d" % i] = body
    last_write = time.monotonic()
    # The nodes report their instances with their next heartbeat.
    p = st.wait_until(lambda: (lambda p: p if p["instances"] > 0 else None)(pool(c, "elastic")),
                      5, "the pool's instances reported")
    t.check(p["instances"] >= 1 and p["memory_bytes"] == p["instances"] * ISZ,
            "the pool holds instances after the writes: %r" % p)
    t.check(p["used_bytes"] > 0, "its instances hold chunks: %r" % p)
    t.check(sum(memory(c).values()) >= ISZ, "node list shows instance memory")
    out = c.shoalctl("tenant", "show", "elastic").stdout.decode()
    t.check("pool instances" in out and "working set" in out, "tenant show: %s" % out)
    cost0 = ctl_json(c, "tenant", "cost", "elastic")

    # Idle: the window ages the instances out.
    seen = {}
    while time.monotonic() - last_write < 12:
        p = pool(c, "elastic")
        mem = sum(memory(c).values())
        if p["degraded"] > 0 and "degraded" not in seen:
            seen["degraded"] = time.monotonic() - last_write
        if p["instances"] == 0 and mem == 0:
            seen["released"] = time.monotonic() - last_write
            break
        time.sleep(0.2)
    st.log("window: %r (seconds after the last write)" % seen)
    t.check("degraded" in seen, "the pool's instances went degraded: %r" % seen)
    t.check("released" in seen, "the pool's instances were all released: %r" % seen)
    # M + N = 4 intervals after the interval of the last write (4-5 s), plus
    # a heartbeat to hear the decision and one to report it applied (0.5 s).
    t.check(seen["degraded"] < seen["released"] <= 7.0,
            "released within ~4-5 s of the last write (+ heartbeats): %r" % seen)

    # Old data still reads, now from COS.
    for k, body in objs.items():
        r = g.get(k)
        t.status(r, 200, "GET %s after release" % k)
        t.check(r.body == body, "GET %s returns the bytes written" % k)

    # Reclaim: write again, then take an instance away.
    for i in range(4):
        t.status(g.put("again/%d" % i, os.urandom(200 * 1024)), 201, "PUT again/%d" % i)
    held = st.wait_until(lambda: {n: m for n, m in memory(c).items() if m > 0}, 5,
                         "new writes open instances again")
    node = min(held)
    j = ctl_json(c, "node", "reclaim", str(node), "--all")
    t.check(j["all"] is True and len(j["instances"]) >= 1, "reclaim --all: %r" % j)
    log = os.path.join(c.dir, "logs", "fnstore-%d.log" % node)
    deadline = time.monotonic() + 5
    found = False
    while time.monotonic() < deadline and not found:
        with open(log, errors="replace") as f:
            found = re.search(r"instance reclaimed", f.read()) is not None
        time.sleep(0.2)
    t.check(found, "node %d logged the reclaim" % node)
    for i in range(4):
        r = g.get("again/%d" % i)
        t.status(r, 200, "GET again/%d after the reclaim" % i)

    cost1 = ctl_json(c, "tenant", "cost", "elastic")
    for k in ("memory_gb_seconds", "cos_requests", "cos_bytes", "usd"):
        t.check(cost1[k] > cost0[k], "tenant cost %s grows: %r -> %r" % (k, cost0[k], cost1[k]))
    t.check(cost1["invocations"] > 0, "warm-ups and recoveries counted: %r" % cost1)
    out = c.shoalctl("tenant", "cost", "elastic").stdout.decode()
    t.check("total" in out and "GB-s" in out, "tenant cost table: %s" % out)


if __name__ == "__main__":
    st.run(main, timeout=110)
