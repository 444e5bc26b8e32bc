#!/usr/bin/python3
"""integ.scrub: the gateway's scrub deletes orphan chunks and nothing else.

1. Objects are PUT and overwritten, the gateway is killed -9 while a stopped
   node holds back the PUTs in flight (their chunks on the other nodes are
   named by no version) and restarted, and chunks no version names are
   written straight to every node's data port.
2. The scrub (a pass every 700 ms) deletes every one of them: each node
   answers NOTFOUND for them, and a later pass finds nothing unreferenced.
   Meanwhile GETs run against keys being overwritten: every GET returns an
   acknowledged version whole.
3. The valve: the gateway restarted on an empty metadata store finds most of
   every node's chunks unreferenced and deletes none; back on its own store,
   every acknowledged object reads back with its checksum.
"""
import os
import random
import shutil
import signal
import threading
import time

import shoaltest as st
import test_fnstore_wire as wire

INTERVAL_MS = 700


def put_all(t, g, acked, keys, rng, sizes):
    for key in keys:
        data = rng.randbytes(rng.choice(sizes))
        t.status(g.put(key, data), 201, "PUT %s" % key)
        acked[key] = st.sha256(data)


def check_all(t, g, acked, what):
    for key, want in sorted(acked.items()):
        r = g.get(key)
        t.status(r, 200, "GET %s %s" % (key, what))
        t.eq(st.sha256(r.body), want, "GET %s %s: content" % (key, what))


def inject(c, tenant, rng, per_node):
    """Chunks no version names, PUT on every node: [(node, tenant, object, index)]."""
    out = []
    for i in range(c.nodes):
        conn = wire.Conn("127.0.0.1:%d" % c.data_port(i))
        for _ in range(per_node):
            obj, idx = rng.getrandbits(64), rng.randrange(0, 6)
            r = conn.call(wire.OP_PUT, tenant=tenant, obj=obj, idx=idx, data=rng.randbytes(1000))
            if r["status"] != 0:
                raise st.TestFailure("orphan PUT on node %d: %r" % (i, r["status"]))
            out.append((i, tenant, obj, idx))
        conn.close()
    return out


def still_there(c, orphans):
    left = []
    for i in range(c.nodes):
        conn = wire.Conn("127.0.0.1:%d" % c.data_port(i))
        for node, tenant, obj, idx in orphans:
            if node == i:
                r = conn.call(wire.OP_STAT, tenant=tenant, obj=obj, idx=idx)
                if r["status"] != wire.E_NOTFOUND:
                    left.append((node, obj, idx, r["status"]))
        conn.close()
    return left


def metric(c, name):
    return c.gw_metrics().get("shoal_gateway_scrub_" + name, 0)


def wait_passes(c, n):
    base = metric(c, "passes_total")
    st.wait_until(lambda: metric(c, "passes_total") >= base + n, 30, "%d scrub passes" % n)


def readers_during_overwrites(t, g, acked, rng, seconds):
    """GETs of keys being overwritten: each must be an acknowledged version."""
    keys = sorted(k for k in acked if k.startswith("hot/"))
    seen = {k: {acked[k]} for k in keys}  # every version acknowledged so far, or in flight
    lock = threading.Lock()
    errors, reads = [], [0]
    end = time.monotonic() + seconds

    def reader(seed):
        r_rng = random.Random(seed)
        while time.monotonic() < end and not errors:
            key = r_rng.choice(keys)
            r = g.get(key)
            with lock:
                ok = r.status == 200 and st.sha256(r.body) in seen[key]
                reads[0] += 1
                if not ok:
                    errors.append("GET %s: %d %s" % (key, r.status, r.body[:100]))

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(3)]
    for th in threads:
        th.start()
    n = 0
    while time.monotonic() < end and not errors:
        key = keys[n % len(keys)]
        data = rng.randbytes(rng.choice([3000, 300 << 10, 2 << 20]))
        with lock:
            seen[key].add(st.sha256(data))
        t.status(g.put(key, data), 201, "overwrite %s" % key)
        acked[key] = st.sha256(data)
        n += 1
    for th in threads:
        th.join()
    t.check(not errors, "GETs during overwrites and scrub passes: %s" % errors[:3])
    st.log("%d GETs of %d keys during %d overwrites" % (reads[0], len(keys), n))


def main(t):
    c = t.cluster(nodes=4, gateway_args="--scrub-interval-ms %d" % INTERVAL_MS)
    ten = c.create_tenant("scrub")
    g = c.gw(ten)
    rng = random.Random(7)
    acked = {}
    sizes = [1, 100, 5000, 200 << 10, 1 << 20, 3 << 20]

    # --- 1: objects, overwrites, a gateway killed mid-PUT, injected orphans --
    put_all(t, g, acked, ["obj/%02d" % i for i in range(24)] + ["hot/%d" % i for i in range(4)],
            rng, sizes)
    put_all(t, g, acked, ["obj/%02d" % i for i in range(6)], rng, sizes)
    stop = threading.Event()

    def writer():
        w_rng, n = random.Random(8), 0
        while not stop.is_set():
            key, data, n = "cut/%d" % n, w_rng.randbytes(2 << 20), n + 1
            try:
                if g.put(key, data, timeout=10).status == 201:
                    acked[key] = st.sha256(data)
            except OSError:
                return

    # A node that stops answering holds every PUT in flight with its chunks
    # on the other nodes: the gateway killed then leaves them as orphans.
    th = threading.Thread(target=writer)
    th.start()
    time.sleep(1)
    c.kill("fnstore-3", signal.SIGSTOP, wait=False)
    time.sleep(1)
    c.kill("gateway")
    c.kill("fnstore-3", signal.SIGCONT, wait=False)
    stop.set()
    th.join()
    c.start()
    c.wait_tenant_known(ten["key"])
    orphans = inject(c, ten["id"], rng, 4) + inject(c, 4000000, rng, 1)

    # --- 2: the scrub deletes them, never what a GET may read ---------------
    readers_during_overwrites(t, g, acked, rng, 4)
    st.wait_until(lambda: not still_there(c, orphans), 30, "the injected orphans deleted")
    # Those of the PUT cut off too (at least one chunk on a node that answered).
    t.check(metric(c, "deleted_chunks_total") > len(orphans),
            "deleted_chunks_total %r > %d" % (metric(c, "deleted_chunks_total"), len(orphans)))
    st.wait_until(lambda: metric(c, "unreferenced_chunks") == 0, 30,
                  "a pass that finds nothing unreferenced")
    t.eq(metric(c, "refused_total"), 0, "no node list refused")
    t.check(metric(c, "listed_chunks") > 0, "the last pass listed chunks")
    check_all(t, g, acked, "after the scrub")

    # --- 3: a store that does not name the nodes' chunks deletes nothing ------
    c.stop(only=["gateway"])
    meta = os.path.join(c.dir, "gateway", "meta")
    shutil.move(meta, meta + ".saved")
    c.start(only=["gateway"])
    wait_passes(c, 2)
    t.check(metric(c, "refused_total") >= 2 * c.nodes,
            "every node refused twice: %r" % metric(c, "refused_total"))
    t.eq(metric(c, "deleted_chunks_total"), 0, "nothing deleted from an empty store")
    c.stop(only=["gateway"])
    shutil.rmtree(meta)
    shutil.move(meta + ".saved", meta)
    c.start(only=["gateway"])
    c.wait_tenant_known(ten["key"])
    check_all(t, g, acked, "after the gateway ran on an empty store")
    st.log("ok: %d orphans deleted, %d objects intact" % (len(orphans), len(acked)))


if __name__ == "__main__":
    st.run(main)
