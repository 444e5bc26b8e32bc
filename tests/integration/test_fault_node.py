#!/usr/bin/python3
"""integ.fault_node: kill -9 storage nodes under load.

1. Under a concurrent PUT/GET load (100 KiB - 2 MiB objects, checksummed), kill -9
   one node: every GET of an acknowledged object must still succeed (parity), a PUT
   may fail with 503 but an acknowledged PUT must never be lost. Restart the node
   with `shoal-cluster start`; every acknowledged object reads back exactly.
2. Kill -9 another node and restart it at once (its memory is gone), then take two
   more nodes away (m=2 lost): every object now needs the restarted node's chunks,
   which it must reload from COS. Its COS-reload counter, if exposed, must be > 0.
"""
import random
import time

import shoaltest as st

NODES = 6


def cos_reload_metrics(m):
    """Counters of chunks a node loaded back from COS, by a loose name match."""
    out = {}
    for name, v in m.items():
        if "{" in name:
            continue
        n = name.lower()
        if "cos" in n and any(w in n for w in ("reload", "load", "fetch", "restore", "read",
                                                "get", "miss")) and "error" not in n \
                and "fail" not in n and "second" not in n:
            out[name] = v
    return out


def main(t):
    c = t.cluster(nodes=NODES)
    ten = c.create_tenant("fault")
    g = c.gw(ten)
    rng = random.Random(11)

    # Objects written while every node is up.
    pre = {}
    for i in range(24):
        data = rng.randbytes(rng.randrange(100 << 10, 2 << 20))
        key = "pre/obj-%02d" % i
        t.status(g.put(key, data), 201, "PUT %s" % key)
        pre[key] = st.sha256(data)
    st.log("stored %d objects" % len(pre))

    def read_pre(what, retry_503=0):
        deadline = time.monotonic() + retry_503
        for key, want in sorted(pre.items()):
            r = st.get_retrying_503(g, key, max(0.0, deadline - time.monotonic()), what)
            t.status(r, 200, "%s: GET %s" % (what, key))
            t.eq(st.sha256(r.body), want, "%s: GET %s content" % (what, key))

    # --- phase 1: kill -9 a node under load -------------------------------------
    load = st.Load(t, g, nthreads=3, prefix="load", seed=1234)
    load.start()
    st.wait_until(lambda: load.stats["put_ok"] >= 10, 60, "10 acknowledged PUTs of the load")
    victim = rng.randrange(NODES)
    c.kill("fnstore-%d" % victim)
    t_kill = time.monotonic()
    read_pre("node %d down" % victim)
    # Keep the load running with the node down for a while.
    acked_at_kill = load.stats["put_ok"]
    st.wait_until(lambda: time.monotonic() - t_kill > 8, 30, "load with a node down")
    st.log("with node %d down: %r" % (victim, load.stats))
    c.start()
    c.wait_nodes_up()
    st.wait_until(lambda: load.stats["put_ok"] >= acked_at_kill + 5, 60,
                  "5 more acknowledged PUTs after the restart")
    load.stop()
    st.log("load done: %r, %d keys acknowledged" % (load.stats, len(load.acked)))
    t.check(not load.errors, "errors under load with node %d killed:\n  %s" % (
        victim, "\n  ".join(load.errors[:10])))
    errs = load.verify_all(what="after restarting node %d" % victim)
    t.check(not errs, "\n  ".join(errs[:10]))
    read_pre("after restarting node %d" % victim)
    st.log("phase 1 ok")

    # --- phase 2: a restarted node must serve from COS -----------------------------
    others = [i for i in range(NODES) if i != victim]
    y = rng.choice(others)
    c.kill("fnstore-%d" % y)
    c.start()
    c.wait_nodes_up()
    zs = rng.sample([i for i in others if i != y], 2)
    for z in zs:
        c.kill("fnstore-%d" % z)
    # Objects written before any kill have a chunk (or a copy) on every node of their
    # placement; with m=2 nodes gone, reads need the two restarted nodes, whose memory
    # is empty: their chunks must come back from COS.
    # Right after the restart the gateway may not have reconnected to node y yet;
    # a client retries a 503 meanwhile (15 s at most, then it is a failure).
    read_pre("node %d restarted, nodes %s down" % (y, zs), retry_503=15)
    m = c.metrics(y)
    cos = cos_reload_metrics(m)
    st.log("node %d COS metrics after the reads: %r" % (y, cos))
    if cos:
        t.check(any(v > 0 for v in cos.values()),
                "node %d served reads after a restart with empty memory, but its COS "
                "counters are all 0: %r" % (y, cos))
    else:
        st.log("node %d exposes no COS reload counter; skipped that check" % y)
    c.start()
    c.wait_nodes_up()
    errs = load.verify_all(what="after phase 2", retry_503=15)
    t.check(not errs, "\n  ".join(errs[:10]))
    read_pre("all nodes back", retry_503=15)
    for i in range(NODES):
        t.check(c.alive("fnstore-%d" % i), "fnstore-%d died" % i)
    st.log("phase 2 ok")


if __name__ == "__main__":
    st.run(main, timeout=400)
