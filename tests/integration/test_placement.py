#!/usr/bin/python3
"""integ.placement: re-placement undoes a hash collision of hot partitions.

Six nodes, each capped at CAP_OPS requests/s (--cap-ops), so the cluster serves
6 x CAP_OPS chunk GETs/s. Tenants store small objects as 1+1 copies (--ec-k 1
--ec-m 1 on the controller: a placement row is two nodes). The hash rows are read
from GET /v1/placement, and three tenants with two partitions each whose rows all
lie within the same three nodes are picked (more tenants are created until three
such exist): the collision. Every object is put under keys of those partitions
(the key's partition is XXH64(key, tenant id) % partitions, as the gateway has it).

Closed-loop readers (CONC per tenant, each with one GET out) read the hot keys:
  before  only the three colliding nodes serve: about half the cluster's capacity
          (asserted: at most 65 %)
  then    `shoalctl placement rebalance`: the milp policy is run on the gateway's
          demand reports (the readers' requests wait on saturated nodes, so their
          demand shows as requests in flight), moves partitions, and the gateway
          migrates their objects (`placement status` until moving_partitions is 0)
  after   total chunk GETs/s >= 85 % of the cluster's capacity, and every node holds
          two of the twelve hot copies (every copy is read alike, so three on a node
          would put it over the headroom)
Every object then reads back whole with its checksum, and `placement status
--json` has the fields the API promises.
"""
import http.client
import json
import random
import threading
import time

import shoaltest as st

NODES = 6
CAP_OPS = 100
CONC = 32             # readers per tenant
PARTS_PER_TENANT = 2
KEYS_PER_PART = 30
SIZE = 1024
MEASURE_S = 6.0


class Readers:
    """Closed-loop GETs of random keys, CONC connections per tenant."""

    def __init__(self, port, tenants):
        self.port = port
        self.tenants = tenants  # [(api key, [object keys])]
        self.stop = threading.Event()
        self.ok = 0
        self.err = {}
        self.lock = threading.Lock()
        self.threads = []

    def _run(self, key, keys, seed):
        rng = random.Random(seed)
        conn = None
        while not self.stop.is_set():
            k = rng.choice(keys)
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                conn.request("GET", "/v1/objects/" + st.qkey(k),
                             headers={"Authorization": "Bearer " + key})
                r = conn.getresponse()
                r.read()
                status = r.status
            except (OSError, http.client.HTTPException):
                status = -1
                if conn is not None:
                    conn.close()
                conn = None
            with self.lock:
                if status == 200:
                    self.ok += 1
                else:
                    self.err[status] = self.err.get(status, 0) + 1
        if conn is not None:
            conn.close()

    def start(self):
        n = 0
        for key, keys in self.tenants:
            for _ in range(CONC):
                n += 1
                th = threading.Thread(target=self._run, args=(key, keys, n), daemon=True)
                th.start()
                self.threads.append(th)

    def finish(self):
        self.stop.set()
        for th in self.threads:
            th.join(60)

    def rate(self, seconds):
        with self.lock:
            a = self.ok
        time.sleep(seconds)
        with self.lock:
            b = self.ok
        return (b - a) / seconds


def pick_collision(t, c):
    """Tenants until three have PARTS_PER_TENANT partitions whose rows lie in one
    set of three nodes. Returns (node set, [(tenant json, [partitions])])."""
    tenants = []
    for n in range(12):
        tenants.append(c.create_tenant("hot%d" % n, wait=False))
        if len(tenants) < 3:
            continue
        pl = c.admin("GET", "/v1/placement").json()
        rows = {e["id"]: e["placement"] for e in pl["tenants"]}
        best = None
        for a in range(NODES):
            for b in range(a + 1, NODES):
                for d in range(b + 1, NODES):
                    trio = {a, b, d}
                    fit = []
                    for ten in tenants:
                        parts = [p for p, row in enumerate(rows[ten["id"]])
                                 if len(row) == 2 and set(row) <= trio]
                        if len(parts) >= PARTS_PER_TENANT:
                            fit.append((ten, parts[:PARTS_PER_TENANT]))
                    if len(fit) >= 3 and best is None:
                        best = (sorted(trio), fit[:3], pl["partitions"])
        if best is not None:
            st.log("collision: nodes %s, tenants %s (of %d made)" % (
                best[0], [(f[0]["name"], f[1]) for f in best[1]], len(tenants)))
            return best
    raise st.TestFailure("no three tenants collide on three nodes among %d" % len(tenants))


def keys_for(tenant_id, parts, partitions):
    out, i = [], 0
    want = {p: KEYS_PER_PART for p in parts}
    while any(want.values()):
        k = "obj/%d" % i
        i += 1
        p = st.partition_of(k, tenant_id, partitions)
        if want.get(p, 0) > 0:
            want[p] -= 1
            out.append(k)
    return out


def status(c):
    p = c.shoalctl("--json", "placement", "status")
    return json.loads(p.stdout.decode())


def main(t):
    c = t.cluster(nodes=NODES, fnstore_args="--cap-ops %d" % CAP_OPS,
                  controller_args="--ec-k 1 --ec-m 1 --pp milp --pp-interval-ms 1000 "
                                  "--pp-checks 1000")
    capacity = NODES * CAP_OPS
    trio, chosen, partitions = pick_collision(t, c)
    data = {}
    readers = []
    for ten, parts in chosen:
        c.wait_tenant_known(ten["key"])
        gw = c.gw(ten)
        keys = keys_for(ten["id"], parts, partitions)
        for k in keys:
            body = random.Random(k + ten["name"]).randbytes(SIZE)
            r = gw.put(k, body)
            t.status(r, 201, "PUT %s/%s" % (ten["name"], k))
            data[(ten["name"], k)] = (ten, st.sha256(body))
        readers.append((ten["key"], keys))
    st.log("stored %d objects of %d B in %d hot partitions" % (len(data), SIZE, 3 * PARTS_PER_TENANT))

    rd = Readers(c.gw_port, readers)
    rd.start()
    try:
        time.sleep(3)
        before = rd.rate(MEASURE_S)
        st.log("before: %.0f GETs/s = %.0f %% of capacity %d" % (before, 100 * before / capacity,
                                                                 capacity))
        t.check(before <= 0.65 * capacity, "before rebalance: %.0f GETs/s, want at most 65 %% "
                "of %d (three nodes of six)" % (before, capacity))
        s0 = status(c)
        t0 = time.monotonic()
        p = c.shoalctl("--json", "placement", "rebalance", timeout=60)
        rb = json.loads(p.stdout.decode())
        st.log("rebalance: %s" % rb)
        t.check(rb["changed"] and rb["epoch"] > s0["epoch"] and rb["solver"] in ("milp", "greedy"),
                "rebalance moved nothing: %r" % rb)

        def migrated():
            s = status(c)
            return s if s["moving_partitions"] == 0 and not s["migrating"] else None
        s1 = st.wait_until(migrated, 60, "the migration to finish", interval=0.5)
        st.log("migrated in %.1fs: %s" % (time.monotonic() - t0, s1))
        time.sleep(2)
        after = rd.rate(MEASURE_S)
        st.log("after: %.0f GETs/s = %.0f %% of capacity %d (before %.0f %%)" % (
            after, 100 * after / capacity, capacity, 100 * before / capacity))
        t.check(after >= 0.85 * capacity, "after rebalance: %.0f GETs/s, want at least 85 %% of "
                "%d" % (after, capacity))
    finally:
        rd.finish()
    st.log("reader errors: %r" % rd.err)
    pl = c.admin("GET", "/v1/placement").json()
    copies = {}
    for ten, parts in chosen:
        rows = [e for e in pl["tenants"] if e["id"] == ten["id"]][0]["placement"]
        for p_ in parts:
            for n in rows[p_]:
                copies[n] = copies.get(n, 0) + 1
            st.log("  %s partition %d: nodes %s" % (ten["name"], p_, rows[p_]))
    st.log("hot copies per node: %s" % sorted(copies.items()))
    t.check(sorted(copies) == list(range(NODES)) and set(copies.values()) == {2},
            "hot copies per node %s, want two on each of the %d nodes" %
            (sorted(copies.items()), NODES))
    s = status(c)
    for f in ("epoch", "solver", "moving_partitions", "bytes_to_move", "bytes_moved"):
        t.check(f in s, "placement status --json lacks %s: %r" % (f, s))
    t.check(s["bytes_moved"] > 0, "no bytes moved: %r" % s)
    for (name, k), (ten, digest) in sorted(data.items()):
        r = c.gw(ten).get(k)
        t.status(r, 200, "GET %s/%s after migration" % (name, k))
        t.eq(st.sha256(r.body), digest, "checksum of %s/%s" % (name, k))
    st.log("all %d objects read back" % len(data))


if __name__ == "__main__":
    st.run(main, timeout=170)
