#!/usr/bin/python3
"""integ.controller.sms - the controller's window loop, reclaim orders, pool
figures and tenant cost against a real shoal-controller, driven by a scripted
node that heartbeats the contract's fields and applies the answers as a node
must (Python stdlib only).

    python3 test_controller_sms.py BUILD/controller/shoal-controller BUILD/controller/shoalctl

With --gc-interval 1 --active-intervals 2 --degraded-intervals 2 (and
--compact-age 2, which every answer's sms block carries to the nodes): an
instance written during one interval is carried into the next, then ages
active -> degraded -> released, within ~4-5 s after the writes stop; the
node's memory_bytes in `node list` drops with it; `tenant show` reports the
pool while it lives; `node reclaim` reaches the node once; `tenant cost`
grows with time and requests, at the prices of a --prices file, and survives
a restart without counting a node's counters twice. Bad reports are refused
with 400 and bad flags with exit 2. Starts the controller with the admin
test's Controller class. SHOAL_TEST_KEEP=1 keeps the temp dir.
"""

import json
import os
import subprocess
import tempfile
import time

import test_controller_admin as ca
from test_controller_admin import check, log, run_main

CTL, CLI = ca.CTL, ca.CLI
MIB = 1 << 20
ISZ = MIB  # the scripted node's --instance-size
BEAT = 0.25  # its heartbeat interval, seconds
PRICES = {"lambda_gb_second": 0.5, "lambda_request": 0.01, "s3_put_per_1000": 10.0,
          "s3_get_per_1000": 1.0, "s3_delete_per_1000": 0.0}


def tag(slot, inc):
    return (slot << 20) | (inc & 0xFFFFF)


class FakeNode:
    """A node of instance slots that reports and obeys as the contract says."""

    def __init__(self, c, nid, incarnation=1):
        self.c, self.nid, self.incarnation = c, nid, incarnation
        self.inst = {}  # slot -> instance fields
        self.warm = {}  # slot -> time of its last invocation
        self.inc = incarnation << 8
        self.pool_gen = {}  # tenant -> generation as last heard
        self.cost = {"warmups": 0, "recoveries": 0, "cos_puts": 0, "cos_gets": 0,
                     "cos_deletes": 0, "cos_put_bytes": 0, "cos_get_bytes": 0}
        self.tenant = None
        self.answers = []  # every answer, newest last
        self.reclaims = []  # reclaim orders received

    def open(self, tenant):
        slot = next(s for s in range(64) if s not in self.inst)
        self.inc += 1
        self.inst[slot] = {"slot": slot, "tag": tag(slot, self.inc), "tenant": tenant,
                           "gen": self.pool_gen.get(tenant, 0), "state": "warm", "lost": 0,
                           "used": 0, "put_bytes": 0, "read_bytes": 0, "read_chunks": 0}
        self.warm[slot] = time.monotonic()
        return slot

    def write(self, tenant, nbytes):
        """A chunk goes to an instance of the pool's current generation with room."""
        gen = self.pool_gen.get(tenant, 0)
        cur = [i for i in self.inst.values() if i["tenant"] == tenant and i["gen"] == gen and
               i["state"] in ("warm", "active") and i["used"] + nbytes <= ISZ]
        slot = cur[0]["slot"] if cur else self.open(tenant)
        i = self.inst[slot]
        i["used"] += nbytes
        i["put_bytes"] += nbytes
        i["state"] = "active"
        self.cost["cos_puts"] += 1
        self.cost["cos_put_bytes"] += nbytes
        self.warm[slot] = time.monotonic()
        self.last_write = time.monotonic()

    def read(self, nbytes):
        """A late read served from COS (its instance is gone)."""
        self.cost["cos_gets"] += 1
        self.cost["cos_get_bytes"] += nbytes

    def report(self):
        now = time.monotonic()
        insts = []
        for s, i in sorted(self.inst.items()):
            d = dict(i)
            d["warm_age_ms"] = int((now - self.warm[s]) * 1000)
            insts.append(d)
        held = sum(1 for i in self.inst.values() if i["state"] != "released")
        costs = [dict(self.cost, tenant=self.tenant)] if self.tenant else []
        return {"node": {"id": self.nid, "addr": "127.0.0.1:%d" % (9500 + self.nid),
                         "capacity_bytes": 64 * MIB, "used_bytes": sum(
                             i["used"] for i in self.inst.values()),
                         "instances": 64, "incarnation": self.incarnation},
                "tenants": {}, "instance_bytes": ISZ, "memory_bytes": held * ISZ,
                "cache_bytes": 12345, "instances": insts, "sms_cost": costs,
                "recovery": {"chunks": 0, "bytes": 0, "running": 0, "helpers": 4}}

    def beat(self):
        self.sent = dict(self.cost)  # the counters the controller has seen
        st, _, a = self.c.req("POST", "/v1/internal/heartbeat", self.report())
        check(st == 200, "heartbeat: %d %r" % (st, a))
        if st != 200:
            return None
        self.answers.append(a)
        for p in a.get("pools", []):
            self.pool_gen[p["tenant"]] = p["gen"]
        for d in a.get("decisions", []):
            i = self.inst.get(d["slot"])
            if i is None or i["tag"] != d["tag"]:
                continue  # replaced since: not for this instance
            if d["warm_up"]:
                self.warm[d["slot"]] = time.monotonic()
                self.cost["warmups"] += 1
            if d["gen"] != i["gen"]:
                i["put_bytes"] = 0
            i["gen"] = d["gen"]
            i["state"] = d["state"]
            if d["state"] == "released":
                del self.inst[d["slot"]]
        rec = a.get("reclaim")
        if rec is not None:
            self.reclaims.append(rec)
            slots = list(self.inst) if rec.get("all") else rec.get("slots", [])
            for s in slots:
                if s in self.inst:  # memory gone: a new incarnation, recovered from COS
                    self.inc += 1
                    self.inst[s]["tag"] = tag(s, self.inc)
                    self.inst[s]["lost"] = 1
                    self.cost["recoveries"] += 1
        return a


def cli(c, *args):
    rc, out, err = c.cli(*args)
    return rc, out, err


def cli_json(c, *args):
    rc, out, err = c.cli("--json", *args)
    check(rc == 0, "shoalctl %s: exit %d %s" % (" ".join(args), rc, err))
    return json.loads(out) if rc == 0 else {}


def node_memory(c, nid):
    nodes = cli_json(c, "node", "list").get("nodes", [])
    return next((n["memory_bytes"] for n in nodes if n["id"] == nid), None)


def beat_for(node, seconds, writes=0):
    """Heartbeats every BEAT seconds for a while, writing `writes` chunks each beat."""
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        for _ in range(writes):
            node.write(node.tenant, 64 * 1024)
        node.beat()
        time.sleep(BEAT)


def test_window(c, node):
    log("window: write for 1.5 s, then watch the instance age")
    beat_for(node, 1.5, writes=2)
    check(len(node.inst) >= 1, "the node opened an instance")
    slot = min(node.inst)
    show = cli_json(c, "tenant", "show", "alpha")
    pool = show.get("pool", {})
    check(pool.get("policy") == "sms" and pool.get("interval_ms") == 1000, "pool: %r" % pool)
    check(pool.get("instances", 0) >= 1 and pool.get("memory_bytes") == ISZ * pool["instances"],
          "pool instances and memory while written: %r" % pool)
    check((pool.get("working_set_bytes") or 0) > 0, "working set reported: %r" % pool)
    check(pool.get("nodes") == 1, "pool on one node")
    rc, out, err = cli(c, "tenant", "show", "alpha")
    check(rc == 0 and "pool instances" in out and "working set" in out,
          "tenant show table has the pool: %s" % out)
    check(node_memory(c, 0) == ISZ * len(node.inst), "node list memory_bytes while held")
    rc, out, err = cli(c, "node", "list")
    check(rc == 0 and "MEMORY" in out, "node list has a MEMORY column")

    t_stop = node.last_write
    seen = {}
    while time.monotonic() - t_stop < 10:
        node.beat()
        i = node.inst.get(slot)
        state = i["state"] if i is not None else "released"
        if state not in seen:
            seen[state] = time.monotonic() - t_stop
            log("instance %d %s %.2f s after the last write (pool gen %s)" % (slot, state, seen[state],
                                                               node.pool_gen.get(node.tenant)))
        if state == "released":
            break
        time.sleep(BEAT)
    check("degraded" in seen, "the instance went degraded: %r" % seen)
    check("released" in seen, "the instance was released: %r" % seen)
    if "degraded" in seen and "released" in seen:
        check(seen["degraded"] < seen["released"], "degraded before released")
        # Carried into the interval after its last write, then M + N = 4
        # intervals: released 4-5 s after the last write, plus the tick
        # (100 ms) and the heartbeat that carries the decision (250 ms); a
        # write the node makes before it hears of a new interval counts in
        # the old one (up to one heartbeat, 250 ms, earlier).
        check(3.7 <= seen["released"] <= 6.0, "released %.2f s after the last write" %
              seen["released"])
        log("window measured: degraded %.2f s, released %.2f s after the last write" % (
            seen["degraded"], seen["released"]))
    node.beat()
    check(node_memory(c, 0) == 0, "memory_bytes drops to 0 once released")
    pool = cli_json(c, "tenant", "show", "alpha").get("pool", {})
    check(pool.get("instances") == 0 and pool.get("memory_bytes") == 0,
          "pool empty after release: %r" % pool)
    check(pool.get("generation", 0) >= 5, "the window moved on: %r" % pool)
    # Reads of old data go to COS; the node counts them for the tenant.
    for _ in range(5):
        node.read(64 * 1024)
    node.beat()


def test_reclaim(c, node):
    log("reclaim orders")
    node.write(node.tenant, 4096)
    node.write(node.tenant, 4096)
    node.beat()
    slot = min(node.inst)
    rc, out, err = cli(c, "node", "reclaim", "0", "--instance", str(slot))
    check(rc == 0 and "reclaims one instance" in out and str(node.inst[slot]["tag"]) in out,
          "node reclaim --instance: %d %s %s" % (rc, out, err))
    node.beat()
    check(node.reclaims[-1:] == [{"slots": [slot]}], "order delivered: %r" % node.reclaims)
    check(node.inst[slot]["lost"] == 1, "the node lost the instance")
    node.beat()
    check(len(node.reclaims) == 1, "delivered once: %r" % node.reclaims)
    j = cli_json(c, "node", "reclaim", "0", "--all")
    check(j.get("all") is True and len(j.get("instances", [])) == len(node.inst),
          "--all lists the node's instances: %r" % j)
    node.beat()
    check(node.reclaims[-1:] == [{"all": True}], "--all delivered: %r" % node.reclaims)
    rc, _, err = cli(c, "node", "reclaim", "9", "--all")
    check(rc == 1 and "404" in err, "unknown node: exit 1 (404): %s" % err)
    rc, _, err = cli(c, "node", "reclaim", "0", "--instance", "63")
    check(rc == 1 and "404" in err, "slot without an instance: exit 1 (404): %s" % err)
    rc, _, _ = cli(c, "node", "reclaim", "0")
    check(rc == 2, "reclaim without --instance or --all: usage error")
    st, _, j = c.req("POST", "/v1/nodes/0/reclaim", {"instance": 1, "all": True})
    check(st == 400, "instance and all together: 400")
    st, _, j = c.req("POST", "/v1/nodes/0/reclaim", {"instance": 4096})
    check(st == 400, "instance out of range: 400")
    st, _, j = c.req("GET", "/v1/nodes/0/reclaim")
    check(st == 405, "GET reclaim: 405")


def expected_usd(cost):
    return (cost["memory_gb_seconds"] * PRICES["lambda_gb_second"] +
            cost["invocations"] * PRICES["lambda_request"] +
            cost["cos_puts"] / 1000.0 * PRICES["s3_put_per_1000"] +
            cost["cos_gets"] / 1000.0 * PRICES["s3_get_per_1000"])


def test_cost(c, node):
    log("tenant cost")
    a = cli_json(c, "tenant", "cost", "alpha")
    beat_for(node, 1.0, writes=1)
    b = cli_json(c, "tenant", "cost", "alpha")
    for k in ("memory_gb_seconds", "invocations", "cos_requests", "cos_bytes", "usd"):
        check(k in b, "cost has %s" % k)
    check(b.get("memory_gb_seconds", 0) > a.get("memory_gb_seconds", 0),
          "memory GB-s grows while memory is held: %r -> %r" % (a.get("memory_gb_seconds"),
                                                               b.get("memory_gb_seconds")))
    check(b.get("cos_requests", 0) > a.get("cos_requests", 0), "COS requests grow with writes")
    check(b.get("invocations") == node.sent["warmups"] + node.sent["recoveries"],
          "invocations = the node's warm-ups + recoveries: %r vs %r" % (b.get("invocations"),
                                                                         node.sent))
    check(b.get("cos_requests") == node.sent["cos_puts"] + node.sent["cos_gets"],
          "cos_requests = the node's puts + gets")
    check(b.get("cos_bytes") == node.sent["cos_put_bytes"] + node.sent["cos_get_bytes"],
          "cos_bytes = the node's bytes")
    check(abs(b.get("usd", 0) - expected_usd(b)) < 1e-9, "usd at the --prices file's prices")
    check(b.get("prices", {}).get("lambda_gb_second") == 0.5, "prices as configured")
    check(sum(i["usd"] for i in b.get("breakdown", [])) - b.get("usd", 0) < 1e-9,
          "breakdown sums to usd")
    # Memory held by the instances the scripted node holds: at least 1 MiB x
    # the time they lived (every instance lived >= 1 s here).
    check(b.get("memory_gb_seconds", 0) > ISZ / float(1 << 30), "memory GB-s of at least 1 s")
    rc, out, err = cli(c, "tenant", "cost", "alpha")
    check(rc == 0 and "total" in out and "memory" in out and "cos_put" in out,
          "tenant cost table: %s" % out)
    rc, _, err = cli(c, "tenant", "cost", "nope")
    check(rc == 1 and "404" in err, "cost of an unknown tenant: exit 1")
    return b


def test_metrics(c):
    st, _, text = c.req("GET", "/metrics", token=None)
    for m in ('shoal_tenant_pool_instances{tenant="1"}', 'shoal_tenant_pool_memory_bytes',
              'shoal_tenant_working_set_bytes', 'shoal_tenant_cost_usd_total{tenant="1"}',
              'shoal_tenant_cost_memory_byte_seconds_total', 'shoal_node_memory_bytes{node="0"}',
              'shoal_node_cache_bytes{node="0"} 12345', 'shoal_controller_sms_ticks_total'):
        check(m in text, "metric %s" % m)


def test_bad_reports(c, node):
    log("bad reports")
    good = node.report()
    good["instances"] = [{"slot": 1, "tag": tag(1, 5), "tenant": 1, "state": "active"}]
    cases = [
        ("slot out of range", {"slot": 4096, "tag": 4096 << 20, "tenant": 1, "state": "active"}),
        ("tag of another slot", {"slot": 1, "tag": tag(2, 1), "tenant": 1, "state": "active"}),
        ("bad state", {"slot": 1, "tag": tag(1, 1), "tenant": 1, "state": "hot"}),
        ("no tenant", {"slot": 1, "tag": tag(1, 1), "state": "active"}),
        ("negative used", {"slot": 1, "tag": tag(1, 1), "tenant": 1, "state": "warm",
                           "used": -1}),
    ]
    for what, inst in cases:
        body = dict(good, instances=[inst])
        st, _, j = c.req("POST", "/v1/internal/heartbeat", body)
        check(st == 400 and isinstance(j, dict) and j.get("error") == "bad_request",
              "%s: 400, got %d %r" % (what, st, j))
    body = dict(good, instances=good["instances"] * 2)
    st, _, j = c.req("POST", "/v1/internal/heartbeat", body)
    check(st == 400 and "twice" in j.get("message", ""), "duplicate slot: 400 %r" % j)
    body = dict(good, sms_cost=[{"tenant": 1, "warmups": "3"}])
    st, _, j = c.req("POST", "/v1/internal/heartbeat", body)
    check(st == 400, "sms_cost with a string: 400")
    body = dict(good, instances={"slot": 1})
    st, _, j = c.req("POST", "/v1/internal/heartbeat", body)
    check(st == 400, "instances not an array: 400")


def test_flags(tmp):
    p = subprocess.run([CTL, "--data-dir", os.path.join(tmp, "x"), "--pool", "bogus"],
                       capture_output=True, text=True, timeout=10)
    check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and
          "bogus" in p.stderr, "--pool bogus: exit 2, one line: %r" % p.stderr)
    p = subprocess.run([CTL, "--data-dir", os.path.join(tmp, "x"), "--gc-interval", "0"],
                       capture_output=True, text=True, timeout=10)
    check(p.returncode == 2, "--gc-interval 0: exit 2")
    p = subprocess.run([CTL, "--data-dir", os.path.join(tmp, "x"), "--active-intervals",
                        "100001"], capture_output=True, text=True, timeout=10)
    check(p.returncode == 2, "--active-intervals too big: exit 2")
    for bad_age in ("100001", "-1", "x"):
        p = subprocess.run([CTL, "--data-dir", os.path.join(tmp, "x"), "--compact-age", bad_age],
                           capture_output=True, text=True, timeout=10)
        check(p.returncode == 2, "--compact-age %s: exit 2" % bad_age)
    bad = os.path.join(tmp, "bad.prices")
    with open(bad, "w") as f:
        f.write("lambda_gb_second = 1\nlambda_gb_seconds = 2\n")
    p = subprocess.run([CTL, "--data-dir", os.path.join(tmp, "x"), "--prices", bad],
                       capture_output=True, text=True, timeout=10)
    check(p.returncode == 2 and "bad.prices:2" in p.stderr and "lambda_gb_seconds" in p.stderr,
          "--prices with an unknown name: exit 2 naming the line: %r" % p.stderr)
    cfg = os.path.join(tmp, "ctl.conf")
    with open(cfg, "w") as f:
        f.write("pool = nope\n")
    p = subprocess.run([CTL, "--data-dir", os.path.join(tmp, "x"), "--config", cfg],
                       capture_output=True, text=True, timeout=10)
    check(p.returncode == 2 and "nope" in p.stderr, "pool in a config file is checked too")


def main():
    tmp = tempfile.mkdtemp(prefix="shoal-ctl-sms-")
    prices = os.path.join(tmp, "prices.conf")
    with open(prices, "w") as f:
        f.write("# test prices\n" + "".join("%s = %r\n" % kv for kv in PRICES.items()))
    c = ca.Controller(tmp, ca.free_port(), timeout_ms=3000,
                      args=["--gc-interval", "1", "--active-intervals", "2",
                            "--degraded-intervals", "2", "--compact-age", "2",
                            "--prices", prices])

    def body():
        test_flags(tmp)
        c.start()
        rc, out, err = cli(c, "tenant", "create", "alpha")
        check(rc == 0, "tenant create: %s" % err)
        node = FakeNode(c, 0)
        node.tenant = 1
        node.beat()
        check(node.answers[-1].get("sms", {}).get("policy") == "sms", "answer has the sms block")
        check(node.answers[-1]["sms"].get("interval_ms") == 1000 and
              node.answers[-1]["sms"].get("active") == 2 and
              node.answers[-1]["sms"].get("degraded") == 2 and
              node.answers[-1]["sms"].get("compact_age") == 2, "sms block: %r" %
              node.answers[-1]["sms"])
        check(any(p["tenant"] == 1 for p in node.answers[-1].get("pools", [])),
              "answer lists the pool")
        test_window(c, node)
        test_reclaim(c, node)
        before = test_cost(c, node)
        test_metrics(c)
        test_bad_reports(c, node)

        log("restart: cost totals and windows persist")
        node.beat()
        rc = c.stop()
        check(rc == 0, "clean exit: %r" % rc)
        c.start()
        after = cli_json(c, "tenant", "cost", "alpha")
        check(after.get("memory_gb_seconds", 0) >= before.get("memory_gb_seconds", 1e9),
              "memory GB-s kept: %r -> %r" % (before.get("memory_gb_seconds"),
                                              after.get("memory_gb_seconds")))
        check(after.get("since_ms") == before.get("since_ms") or
              abs(after.get("since_ms", 0) - before.get("since_ms", 0)) < 50,
              "accounting start kept")
        gen_before = node.pool_gen[1]
        node.beat()
        node.beat()
        after = cli_json(c, "tenant", "cost", "alpha")
        check(after.get("invocations") == node.sent["warmups"] + node.sent["recoveries"],
              "a node's counters are not counted twice across a restart: %r vs %r" % (
                  after.get("invocations"), node.sent))
        check(after.get("cos_requests") == node.sent["cos_puts"] + node.sent["cos_gets"],
              "nor its COS requests")
        check(node.pool_gen[1] >= gen_before, "the window did not go back: %d -> %d" % (
            gen_before, node.pool_gen[1]))
        rc = c.stop()
        check(rc == 0, "second clean exit: %r" % rc)

    run_main(c, tmp, body)


if __name__ == "__main__":
    main()
