#!/usr/bin/python3
"""integ.migrate_fault: a migration survives kill -9 of the gateway, the controller
and a node, and loses nothing acknowledged.

As in integ.placement, three tenants' hot partitions collide on three of six capped
nodes (objects stored as 1+1 copies), readers build up their demand and a rebalance
moves partitions. Here the objects are larger (OBJ_SIZE) and the gateway moves them
at --migrate-rate RATE, so the migration lasts long enough for three faults, one
after the other, each followed by a restart of what was killed:
  gateway     kill -9 mid-migration; its moves in flight are lost (their chunks are
              orphans) and the next pass finds what is left from metadata and rows
  controller  kill -9; the gateway migrates on from its cached state, and the
              restarted controller serves the same rows and epoch from LMDB
  node        kill -9 of a node that receives moved chunks; moves to it fail or are
              redriven, and a later pass puts them where the row says
A writer PUTs new objects to the hot partitions throughout. Then the migration must
finish (`placement status`: moving_partitions 0, the gateway's done epoch is the
placement epoch) and every acknowledged object reads back with its checksum. The
rate the gateway moved at before the first fault is logged and must stay near
--migrate-rate.
"""
import http.client
import json
import random
import threading
import time

import shoaltest as st
from test_placement import NODES, Readers, keys_for, pick_collision, status

CAP_OPS = 100
OBJ_SIZE = 192 << 10
KEYS_PER_PART = 24
RATE = 2 << 20


class Writer:
    """PUTs new keys of the hot partitions; remembers each acknowledged body's sha256."""

    def __init__(self, c, chosen, partitions):
        self.c = c
        self.jobs = []
        for ten, parts in chosen:
            self.jobs.append((ten, keys_for(ten["id"], parts, partitions)))
        self.acked = {}
        self.failed = 0
        self.stop = threading.Event()
        self.th = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        n = 0
        rng = random.Random(7)
        while not self.stop.is_set():
            ten, keys = self.jobs[n % len(self.jobs)]
            k = "new/%s/%d" % (keys[n % len(keys)], n)
            n += 1
            body = rng.randbytes(OBJ_SIZE)
            try:
                r = self.c.gw(ten).put(k, body, timeout=30)
                ok = r.status == 201
            except (OSError, http.client.HTTPException):
                ok = False
            if ok:
                self.acked[(ten["name"], k)] = (ten, st.sha256(body))
            else:
                self.failed += 1
            time.sleep(0.1)


def gw_metric(c, name):
    r = st.http_request(c.gw_port, "GET", "/metrics", timeout=10)
    return st.parse_metrics(r.body.decode()).get(name, 0)


def wait_moving(t, c, what):
    def moving():
        s = status(c)
        return s if s["moving_partitions"] > 0 or s["bytes_to_move"] > s["bytes_moved"] else None
    return st.wait_until(moving, 20, "a migration under way (%s)" % what, interval=0.2)


def main(t):
    c = t.cluster(nodes=NODES, fnstore_args="--cap-ops %d" % CAP_OPS,
                  gateway_args="--migrate-rate %d" % RATE,
                  controller_args="--ec-k 1 --ec-m 1 --pp milp --pp-interval-ms 1000 "
                                  "--pp-checks 1000")
    import test_placement
    test_placement.KEYS_PER_PART = KEYS_PER_PART
    trio, chosen, partitions = pick_collision(t, c)
    data, readers = {}, []
    for ten, parts in chosen:
        c.wait_tenant_known(ten["key"])
        keys = keys_for(ten["id"], parts, partitions)
        for k in keys:
            body = random.Random(k + ten["name"]).randbytes(OBJ_SIZE)
            t.status(c.gw(ten).put(k, body), 201, "PUT %s/%s" % (ten["name"], k))
            data[(ten["name"], k)] = (ten, st.sha256(body))
        readers.append((ten["key"], keys))
    st.log("stored %d objects of %d KiB" % (len(data), OBJ_SIZE >> 10))

    rd = Readers(c.gw_port, readers)
    rd.start()
    try:
        time.sleep(4)
        pl0 = c.admin("GET", "/v1/placement").json()
        p = c.shoalctl("--json", "placement", "rebalance", timeout=60)
        rb = json.loads(p.stdout.decode())
        st.log("rebalance: %s" % rb)
        t.check(rb["changed"], "rebalance moved nothing: %r" % rb)
    finally:
        rd.finish()
    epoch = rb["epoch"]
    pl1 = c.admin("GET", "/v1/placement").json()
    new_nodes = set()
    for a, b in zip(pl0["tenants"], pl1["tenants"]):
        for r0, r1 in zip(a["placement"], b["placement"]):
            new_nodes |= set(r1) - set(r0)
    t.check(new_nodes, "no row gained a node")
    victim = sorted(new_nodes)[0]

    w = Writer(c, chosen, partitions)
    w.th.start()
    try:
        s = wait_moving(t, c, "start")
        m0, t0 = gw_metric(c, "shoal_gateway_migrate_moved_bytes_total"), time.monotonic()
        time.sleep(3)
        m1, t1 = gw_metric(c, "shoal_gateway_migrate_moved_bytes_total"), time.monotonic()
        rate = (m1 - m0) / (t1 - t0)
        st.log("migration: %d bytes to move; moved at %.2f MiB/s (--migrate-rate %.2f MiB/s)" % (
            s["bytes_to_move"], rate / (1 << 20), RATE / (1 << 20)))
        t.check(0 < rate <= 1.3 * RATE, "moved at %.0f B/s with --migrate-rate %d" % (rate, RATE))

        c.kill("gateway")
        c.start(only=["gateway"])
        wait_moving(t, c, "after the gateway's restart")

        c.kill("controller")
        time.sleep(1)
        c.start(only=["controller"])
        pl2 = c.admin("GET", "/v1/placement").json()
        t.eq(pl2["placement_epoch"], pl1["placement_epoch"], "placement epoch after restart")
        t.eq([e["placement"] for e in pl2["tenants"]], [e["placement"] for e in pl1["tenants"]],
             "rows after the controller's restart")
        wait_moving(t, c, "after the controller's restart")

        c.kill("fnstore-%d" % victim)
        time.sleep(1.5)
        c.start(only=["fnstore-%d" % victim])
        c.wait_nodes_up()
    finally:
        w.stop.set()
        w.th.join(60)
    st.log("writer: %d acknowledged, %d failed" % (len(w.acked), w.failed))
    data.update(w.acked)

    def finished():
        s = status(c)
        done = gw_metric(c, "shoal_gateway_migrate_done_epoch")
        return s if (s["moving_partitions"] == 0 and not s["migrating"] and
                     done >= s["epoch"]) else None
    s = st.wait_until(finished, 120, "the migration to finish", interval=1)
    st.log("migration finished: %s; gateway moved %d bytes, %d moves failed and were retried" % (
        s, gw_metric(c, "shoal_gateway_migrate_moved_bytes_total"),
        gw_metric(c, "shoal_gateway_migrate_failed_total")))
    t.check(s["epoch"] >= epoch, "placement epoch went back: %r" % s)
    bad = 0
    for (name, k), (ten, digest) in sorted(data.items()):
        r = st.get_retrying_503(c.gw(ten), k, what="GET %s/%s" % (name, k))
        if r.status != 200 or st.sha256(r.body) != digest:
            bad += 1
            st.log("LOST %s/%s: %d" % (name, k, r.status))
    t.eq(bad, 0, "acknowledged objects lost or damaged (of %d)" % len(data))
    st.log("all %d acknowledged objects read back" % len(data))


st.run(main, timeout=280)
