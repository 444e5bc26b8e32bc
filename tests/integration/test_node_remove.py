#!/usr/bin/python3
"""integ.node_remove: `shoalctl node remove` takes a node out of the cluster,
alive (a drain) or dead (a repair), under PUTs and GETs, and loses nothing.

Five nodes, tenants of RS(2+1) (the controller's --ec-k 2 --ec-m 1): small
objects are two whole copies, larger ones stripes of three chunks.

0. A removal canceled: node 2 asked to leave, then kept (`node remove 2
   --cancel`) while it drains: a member again, up, and the controller does
   not remove it.
1. A live node drained: asked while PUTs wait for it (stopped for 2 s), then
   `node remove 3 --wait` returns once it is removed;
   placement names it nowhere, it holds no chunk in memory, and once it is
   killed every acknowledged object (and those PUT during the drain) reads
   back by SHA-256 without one stripe decoded from parity: nothing was left
   on it. Its heartbeats are refused (it logs that it was removed), and it
   stays removed.
2. A dead node repaired: node 4 killed -9, then removed. Its chunks are
   rebuilt on the nodes left from the other copy or parity. Then one more
   node is killed (m = 1): every object still reads back, which it could
   not had the dead node's chunks been left where they were (two of a
   stripe's three chunks gone).
3. Refusals: a third removal would leave fewer nodes than a tenant's width
   (409, nothing changes); an unknown node is 404, a bad id 400, GET 405; a
   removed node's removal is not canceled (409).
4. The gateway's store lost: --rebuild-meta finds every moved version at
   its new holders (the migration logged its record again, MOVED), so with
   node 0 still down everything reads back; from the records as first
   logged, the versions moved off nodes 3 and 4 would name them, and a
   stripe would have one chunk left of three.
"""
import os
import random
import shutil
import signal
import threading
import time

import shoaltest as st

NODES = 5
SIZES = [700, 5000, 60 << 10, 300 << 10, 1 << 20, 3 << 20]
GW_ARGS = "--migrate-rate 256MiB"
REMOVED = (3, 4)  # the nodes removed, in order
GW_SUSPECT_S = 2.5  # a reconnected node is used after 2 s (operations.md, "Faults")


def node_entry(c, nid):
    r = c.admin("GET", "/v1/nodes")
    if r.status != 200:
        raise st.TestFailure("GET /v1/nodes: %r" % r)
    for n in r.json()["nodes"]:
        if n["id"] == nid:
            return n
    return None


def rows_naming(c, nid):
    """(tenant, partition) of every placement row that names node nid."""
    r = c.admin("GET", "/v1/placement")
    if r.status != 200:
        raise st.TestFailure("GET /v1/placement: %r" % r)
    out = []
    for t in r.json()["tenants"]:
        for p, row in enumerate(t["placement"]):
            if nid in row:
                out.append((t["id"], p))
    return out


def ctl_metrics(c):
    r = st.http_request(c.ctl_port, "GET", "/metrics", timeout=10)
    if r.status != 200:
        raise st.TestFailure("controller /metrics: %r" % r)
    return st.parse_metrics(r.body.decode())


def restart(c, x):
    """Starts node x again and waits until the gateway uses it (up, and its
    reconnect past the suspect time)."""
    c.start(only=["fnstore-%d" % x])
    st.wait_until(lambda: node_entry(c, x)["state"] == "up", 20, "node %d up again" % x)
    time.sleep(GW_SUSPECT_S)


def read_all(t, c, tens, acked, what):
    bad = []
    for name, objs in acked.items():
        g = c.gw(tens[name])
        for k, digest in sorted(objs.items()):
            r = g.get(k, timeout=30)
            if r.status != 200 or st.sha256(r.body) != digest:
                bad.append("%s/%s: %d" % (name, k, r.status))
    t.check(not bad, "%s: %d objects did not read back: %s" % (what, len(bad), bad[:5]))
    st.log("%s: %d objects read back" % (what, sum(len(o) for o in acked.values())))


class Load:
    """PUTs (new keys and overwrites) and GETs of acknowledged keys; every
    request must succeed."""

    def __init__(self, c, tens, acked, seed):
        self.c = c
        self.tens = tens
        self.acked = acked
        self.rng = random.Random(seed)
        self.errors = []
        self.ops = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.th = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        n = 0
        while not self.stop.is_set():
            name = self.rng.choice(sorted(self.tens))
            g = self.c.gw(self.tens[name])
            n += 1
            try:
                if n % 2:
                    k = "load/%d" % self.rng.randrange(40)
                    body = self.rng.randbytes(self.rng.choice(SIZES[:5]))
                    r = g.put(k, body, timeout=30)
                    if r.status != 201:
                        self.errors.append("PUT %s: %d %r" % (k, r.status, r.body[:120]))
                        continue
                    with self.lock:
                        self.acked[name][k] = st.sha256(body)
                else:
                    with self.lock:
                        k, digest = self.rng.choice(sorted(self.acked[name].items()))
                    r = g.get(k, timeout=30)
                    # An overwrite may have landed after the pick: either version is right.
                    with self.lock:
                        now = self.acked[name].get(k)
                    if r.status != 200 or st.sha256(r.body) not in (digest, now):
                        self.errors.append("GET %s: %d" % (k, r.status))
            except OSError as e:
                self.errors.append("%s" % e)
            self.ops += 1

    def __enter__(self):
        self.th.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.th.join(60)


def remove(t, c, nid, wait_s):
    t0 = time.monotonic()
    p = c.shoalctl("node", "remove", str(nid), "--wait", str(wait_s), check=False,
                   timeout=wait_s + 30)
    took = time.monotonic() - t0
    t.eq(p.returncode, 0, "node remove %d --wait: stderr %r" % (nid, p.stderr))
    t.check(b"node %d removed" % nid in p.stdout, "node remove printed %r" % p.stdout)
    st.log("node %d removed in %.1f s" % (nid, took))
    n = node_entry(c, nid)
    t.eq((n["state"], n["draining"]), ("removed", False), "node %d in the list" % nid)
    t.eq(rows_naming(c, nid), [], "placement rows naming node %d" % nid)
    m = ctl_metrics(c)
    t.eq((m.get("shoal_controller_nodes_draining"), m.get('shoal_controller_nodes{state="removed"}')),
         (0.0, float(REMOVED.index(nid) + 1)), "nodes draining and removed")


def cancel(t, c):
    p = c.shoalctl("node", "remove", "2")
    t.check(b"node 2 draining" in p.stdout, "node remove 2 printed %r" % p.stdout)
    p = c.shoalctl("node", "remove", "2", "--cancel")
    t.check(b"node 2 up (its removal canceled)" in p.stdout, "--cancel printed %r" % p.stdout)
    t.eq(ctl_metrics(c).get("shoal_controller_nodes_draining"), 0.0, "nodes draining")
    time.sleep(1.5)  # the controller looks at draining nodes every 500 ms
    n = node_entry(c, 2)
    t.eq((n["state"], n["draining"]), ("up", False), "node 2 after its removal was canceled")
    r = c.admin("DELETE", "/v1/nodes/2/remove")
    t.status(r, 200, "canceling a removal never asked")
    t.eq(r.json()["state"], "up", "its answer")


def slow_puts(t, c, tens, acked):
    """PUTs that chose their holders before the drain and end after it began:
    node 3 is stopped (SIGSTOP) under them while the removal is asked, for
    less than the gateway's I/O timeout, so they wait for it and then commit
    with chunks on it. The migration waits them out before it scans."""
    name = sorted(tens)[0]
    g = c.gw(tens[name])
    bodies = {"slow/%d" % i: random.Random(i).randbytes(100 << 10) for i in range(12)}
    codes = {}

    def put(k):
        codes[k] = g.put(k, bodies[k], timeout=30).status
    c.kill("fnstore-3", signal.SIGSTOP, wait=False)
    try:
        ths = [threading.Thread(target=put, args=(k,)) for k in bodies]
        for th in ths:
            th.start()
        time.sleep(0.5)
        r = c.admin("POST", "/v1/nodes/3/remove")
        t.status(r, 202, "POST /v1/nodes/3/remove")
        t.eq(r.json()["state"], "draining", "its answer")
        t.eq(ctl_metrics(c).get("shoal_controller_nodes_draining"), 1.0, "nodes draining")
        out = c.shoalctl("node", "list").stdout.decode()
        t.check(any(ln.split()[:1] == ["3"] and "draining" in ln for ln in out.splitlines()),
                "node list shows node 3 draining:\n%s" % out)
        time.sleep(1.5)
    finally:
        c.kill("fnstore-3", signal.SIGCONT, wait=False)
    for th in ths:
        th.join(30)
    t.eq(sorted(set(codes.values())), [201], "the PUTs held up by node 3")
    acked[name].update({k: st.sha256(b) for k, b in bodies.items()})


def drain(t, c, tens, acked):
    held = c.metrics(3).get("shoal_fnstore_chunks", 0)
    t.check(held > 0, "node 3 holds chunks before its drain (%d)" % held)
    with Load(c, tens, acked, 1) as load:
        time.sleep(1)
        slow_puts(t, c, tens, acked)
        remove(t, c, 3, 60)
        time.sleep(1)
    t.eq(load.errors, [], "requests that failed during the drain")
    t.check(load.ops > 20, "the load ran (%d requests)" % load.ops)
    st.wait_until(lambda: c.metrics(3).get("shoal_fnstore_chunks", 0) == 0, 10,
                  "node 3 holding no chunk")
    c.kill("fnstore-3")
    # Nothing left on it: with it gone, any one more node lost (m = 1) is borne.
    for x in (0, 1, 2, 4):
        c.kill("fnstore-%d" % x)
        read_all(t, c, tens, acked, "node 3 removed and killed, node %d killed" % x)
        restart(c, x)

    # Its process started again: refused, and it stays removed.
    c.start(only=["fnstore-3"])
    st.wait_until(lambda: "node removed from the cluster" in c.logs("fnstore-3.")["fnstore-3.log"],
                  15, "node 3 logging that it was removed")
    t.eq(node_entry(c, 3)["state"], "removed", "node 3 after it heartbeats again")
    c.kill("fnstore-3")


def repair(t, c, tens, acked):
    c.kill("fnstore-4")
    st.wait_until(lambda: node_entry(c, 4)["state"] == "down", 20, "node 4 down")
    with Load(c, tens, acked, 2) as load:
        remove(t, c, 4, 90)
    t.eq(load.errors, [], "requests that failed during the repair")
    # Three nodes left, every stripe on all three: one more lost is what m = 1 bears.
    c.kill("fnstore-0")
    read_all(t, c, tens, acked, "node 4 repaired, node 0 killed")


def refusals(t, c):
    r = c.admin("POST", "/v1/nodes/1/remove")
    t.api_error(r, 409, "conflict", "removing node 1 of three at width 3")
    t.check("leaves 2 nodes" in r.json()["message"], "the 409 says why: %r" % r.body)
    t.eq(node_entry(c, 1)["draining"], False, "node 1 after the refusal")
    t.api_error(c.admin("POST", "/v1/nodes/77/remove"), 404, "not_found", "unknown node")
    t.api_error(c.admin("POST", "/v1/nodes/x1/remove"), 400, "bad_request", "bad node id")
    t.api_error(c.admin("GET", "/v1/nodes/1/remove"), 405, "method_not_allowed", "GET")
    r = c.admin("POST", "/v1/nodes/3/remove")
    t.status(r, 200, "removing a removed node again")
    t.eq(r.json()["state"], "removed", "its answer")
    t.api_error(c.admin("DELETE", "/v1/nodes/3/remove"), 409, "conflict",
                "canceling the removal of a removed node")
    t.api_error(c.admin("DELETE", "/v1/nodes/77/remove"), 404, "not_found", "cancel: unknown node")
    t.api_error(c.admin("DELETE", "/v1/nodes/x1/remove"), 400, "bad_request", "cancel: bad id")
    t.api_error(c.admin("DELETE", "/v1/nodes/1/reclaim"), 405, "method_not_allowed",
                "DELETE of a reclaim")
    p = c.shoalctl("node", "remove", "3", "--cancel", check=False)
    t.eq(p.returncode, 1, "shoalctl node remove --cancel of a removed node: exit code")
    p = c.shoalctl("node", "remove", "1", check=False)
    t.eq(p.returncode, 1, "shoalctl node remove refused: exit code")


def drained(c):
    """Every version out of the persistent buffer, every META record logged."""
    m = c.gw_metrics()
    return m.get("shoal_gateway_buffered_objects", -1) == 0 and \
        m.get("shoal_gateway_meta_waiting", -1) == 0


def rebuild(t, c, tens, acked):
    st.wait_until(lambda: drained(c), 20, "every META record logged")
    c.stop(only=["gateway"])
    shutil.rmtree(os.path.join(c.dir, "gateway", "meta"))
    c.cluster_cmd("start", "--only", "gateway", "--gateway-args",
                  "%s --rebuild-meta --cos %s" % (GW_ARGS, os.path.join(c.dir, "cos")))
    with open(os.path.join(c.dir, "logs", "gateway.log"), errors="replace") as f:
        line = [ln.strip() for ln in f if "rebuild-meta done" in ln]
    t.check(line, "the gateway logged its rebuild")
    st.log(line[-1])
    read_all(t, c, tens, acked, "after --rebuild-meta (node 0 down)")


def main(t):
    c = t.cluster(nodes=NODES, controller_args="--ec-k 2 --ec-m 1 --pp-interval-ms 300",
                  gateway_args=GW_ARGS)
    rng = random.Random(5)
    tens = {}
    acked = {}
    for i in range(2):
        ten = c.create_tenant()
        tens[ten["name"]] = ten
        acked[ten["name"]] = {}
        g = c.gw(ten)
        for j in range(24):
            k = "obj/%d" % j
            body = rng.randbytes(SIZES[j % len(SIZES)])
            t.status(g.put(k, body), 201, "PUT %s" % k)
            acked[ten["name"]][k] = st.sha256(body)

    t.section(cancel, c)
    t.section(drain, c, tens, acked)
    t.section(repair, c, tens, acked)
    t.section(refusals, c)
    read_all(t, c, tens, acked, "at the end (node 0 down)")
    t.section(rebuild, c, tens, acked)


if __name__ == "__main__":
    st.run(main)
