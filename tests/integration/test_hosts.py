#!/usr/bin/python3
"""integ.hosts: the cluster spread over hosts, every process in a network
namespace of its own cabled to one switch (shoal-cluster --netns), and the
network between them failing in ways a killed process does not show: a
host cut off while its process runs (silence, no reset), a slow link.

1. Addresses: the controller lists every node and both gateways at their
   hosts' addresses, and objects written through either gateway read back
   through both (the requests for the other gateway's tenant cross hosts).
2. A node cut off (its cable down, its process alive): PUTs go on (the
   first with a chunk for it waits out --io-timeout-ms, once), no other
   node's connection is failed for it, every acknowledged object reads
   back by SHA-256 without waiting for the timeout, and the controller
   says the node is down. Cabled again, it is up, serves reads, and every
   object still reads back.
3. A node behind a slow link (20 Mbit/s each way): reads ask it a few
   times until its RTT estimate says slow (its GETs hedged and canceled
   count), then once a second (a probe), so the reads stay fast, also for
   a tenant that had never read from it; the link at full speed again, a
   probe finds it fast and it serves its share of reads again within 4 s.
4. A gateway cut off: the requests for its tenants through the other
   gateway get 503 with Retry-After within seconds (the forward gives up
   on a host that acknowledges nothing), not after the forward's two
   minutes; the other gateway's own tenants are served; cabled again, the
   owner serves its tenants through the other gateway again.
5. The controller cut off for 8 s under PUTs and GETs: no request fails or
   takes over 2 s, during the cut nor once it is heard again; the
   controller says it hears no node and calls none down (it would have
   called every one down, and the gateways would have written around
   them for half a second when it came back).
"""
import os
import random
import sys
import threading
import time

import shoaltest as st

IO_TIMEOUT_MS = 2000
RECOVER_S = 4.0  # a node fast again serves its share within this (a probe a second)
OBJ = 3 << 20  # an RS(4+2) stripe: a 768 KiB chunk on every node


def nodes(c):
    r = c.admin("GET", "/v1/nodes")
    if r.status != 200:
        raise st.TestFailure("GET /v1/nodes: %r" % r)
    j = r.json()
    return {n["id"]: n for n in (j.get("nodes", j) if isinstance(j, dict) else j)}


def wait_node(c, node, state, timeout):
    st.wait_until(lambda: str(nodes(c)[node].get("state")).lower() == state, timeout,
                  "node %d %s at the controller" % (node, state))


def node_gets(c, node, tenant):
    """Chunk GETs node has served for tenant."""
    m = c.metrics(node)
    return sum(v for k, v in m.items()
               if k.startswith('shoal_fnstore_requests_total{tenant="%d",op="get"' % tenant))


def read_all(t, g, acked, what, limit_s):
    """GETs every acknowledged object; each whole, and none slower than limit_s."""
    slowest = 0.0
    for key, sha in sorted(acked.items()):
        t0 = time.monotonic()
        r = g.get(key)
        took = time.monotonic() - t0
        slowest = max(slowest, took)
        t.status(r, 200, "%s: GET %s" % (what, key))
        t.eq(st.sha256(r.body), sha, "%s: SHA-256 of %s" % (what, key))
        t.check(took < limit_s, "%s: GET %s took %.2f s (limit %.1f s)" % (what, key, took, limit_s))
    return slowest


def put(t, g, key, data, acked, what, limit_s=None):
    t0 = time.monotonic()
    r = g.put(key, data)
    took = time.monotonic() - t0
    t.status(r, 201, "%s: PUT %s" % (what, key))
    if limit_s is not None:
        t.check(took < limit_s, "%s: PUT %s took %.2f s (limit %.1f s)" % (what, key, took,
                                                                         limit_s))
    acked[key] = st.sha256(data)
    return took


def addresses(t, c, rng):
    ns = nodes(c)
    t.eq(len(ns), 6, "nodes listed")
    for i in range(6):
        t.eq(ns[i]["addr"].split(":")[0], c.host("fnstore-%d" % i), "node %d's address" % i)
    r = c.admin("GET", "/v1/internal/state")
    t.status(r, 200, "internal state")
    urls = sorted(g["url"] for g in r.json()["gateways"])
    t.eq(urls, ["http://%s:%d" % (c.gw_host(g), c.gw_port_of(g)) for g in range(2)],
         "the gateways' URLs")
    for n in range(4):  # tenants spread over both gateways
        ten = c.create_tenant()
        ga = st.Gateway(c.gw_port_of(0), ten["key"], c.gw_host(0))
        gb = st.Gateway(c.gw_port_of(1), ten["key"], c.gw_host(1))
        acked = {}
        for i, size in enumerate((1000, OBJ)):
            put(t, (ga, gb)[i], "k%d" % i, rng.randbytes(size), acked, "tenant %d" % n)
        read_all(t, ga, acked, "tenant %d through gateway 0" % n, 30)
        read_all(t, gb, acked, "tenant %d through gateway 1" % n, 30)
    fwd = sum(st.parse_metrics(st.http_request(c.gw_port_of(g), "GET", "/metrics",
                                               host=c.gw_host(g)).body.decode())
              .get("shoal_gateway_forwarded_requests_total", 0) for g in range(2))
    t.check(fwd >= 4, "requests forwarded between the gateways' hosts: %d" % fwd)


def conn_downs(c):
    """The gateways' "conn down" log lines (each has its time)."""
    return {ln for text in c.logs("gateway").values() for ln in text.splitlines()
            if "conn down" in ln}


def partition(t, c, rng):
    ten = c.create_tenant()
    g = c.gw(ten)
    acked = {}
    for i in range(8):
        put(t, g, "before/%d" % i, rng.randbytes(rng.choice([1000, OBJ])), acked, "before")
    downs_before = conn_downs(c)

    c.link("fnstore-2", "down")
    t0 = time.monotonic()
    waited = 0
    for i in range(6):
        took = put(t, g, "cut/%d" % i, rng.randbytes(OBJ), acked, "node 2 cut off",
                   IO_TIMEOUT_MS / 1000 + 3)
        waited += took > IO_TIMEOUT_MS / 1000 / 2
    t.check(waited <= 1, "PUTs that waited for node 2's timeout: %d, want at most 1" % waited)
    others = sorted(ln for ln in conn_downs(c) - downs_before if "node=2 " not in ln)
    t.check(not others, "connections failed for node 2's silence: %s" % others)
    read_all(t, g, acked, "node 2 cut off", IO_TIMEOUT_MS / 1000)
    wait_node(c, 2, "down", 15)
    t.check(c.alive("fnstore-2"), "node 2's process runs on")
    read_all(t, g, acked, "node 2 down", IO_TIMEOUT_MS / 1000)
    st.log("node 2 cut off for %.1f s" % (time.monotonic() - t0))

    c.link("fnstore-2", "up")
    wait_node(c, 2, "up", 15)
    for i in range(4):
        put(t, g, "after/%d" % i, rng.randbytes(OBJ), acked, "node 2 back")
    before = node_gets(c, 2, ten["id"])

    def serves():
        read_all(t, g, acked, "node 2 back", IO_TIMEOUT_MS / 1000)
        return node_gets(c, 2, ten["id"]) > before
    st.wait_until(serves, 20, "node 2 serving reads again")


def slow_link(t, c, rng):
    # Two tenants (RS estimates are per tenant and node): "known" reads at full
    # speed first, "new" reads nothing before the link is slow.
    tens = [c.create_tenant(), c.create_tenant()]
    gws = [c.gw(x) for x in tens]
    acked = [{}, {}]
    for g, a in zip(gws, acked):
        for i in range(12):
            put(t, g, "s/%d" % i, rng.randbytes(OBJ), a, "full speed")

    def asked(who):
        return node_gets(c, 3, tens[who]["id"])
    before = asked(0)
    for _ in range(3):
        read_all(t, gws[0], acked[0], "full speed", 10)
    share = asked(0) - before
    st.log("node 3 at full speed: asked %d times in 36 reads" % share)
    t.check(share >= 3, "node 3 asked %d times in 36 reads at full speed" % share)

    c.link("fnstore-3", "20mbit")
    before = [asked(0), asked(1)]
    t0 = time.monotonic()
    slowest = 0
    for _ in range(6):
        for who in (0, 1):
            slowest = max(slowest, read_all(t, gws[who], acked[who], "node 3 slow", 5))
        time.sleep(0.5)
    secs = time.monotonic() - t0
    for who, name in ((0, "known"), (1, "new")):
        n = asked(who) - before[who]
        st.log("node 3 at 20 Mbit/s: asked %d times in 72 reads of the %s tenant over %.1f s" %
               (n, name, secs))
        # Until its RTT estimate is over the floor (each GET hedged after 5 ms and
        # canceled raises it), then a probe a second. Asked for every read it could
        # serve, it would be about half of them, each a 300 ms answer.
        t.check(n <= 6 + int(secs), "node 3 asked %d times in %.1f s of the %s tenant's reads" %
                (n, secs, name))
    st.log("slowest read with node 3 slow: %.2f s" % slowest)
    t.check(slowest < 0.5, "slowest read with node 3 slow: %.2f s" % slowest)

    c.link("fnstore-3", "unlimited")
    t0 = time.monotonic()
    time.sleep(1.2)  # a probe is due
    # Rounds of 36 reads until one asks node 3 its share again. A probe is
    # hedged like any GET: one answered past the hedge's wait (the first
    # answer after a pause is in TCP slow start, slower still on a busy VM)
    # is canceled and counts slow, and the next probe is a second later
    # (pol_rs_fast.c). Seen once in CI: asked once in the first round.
    rounds = []
    while not rounds or (rounds[-1] < share // 2 and time.monotonic() - t0 < RECOVER_S):
        before = asked(0)
        for _ in range(3):
            read_all(t, gws[0], acked[0], "node 3 fast again", 5)
        rounds.append(asked(0) - before)
    st.log("node 3 at full speed again: asked %s times in rounds of 36 reads, %.1f s after" %
           (rounds, time.monotonic() - t0))
    t.check(rounds[-1] >= share // 2,
            "node 3 asked %s times in rounds of 36 reads within %.0f s of being fast again, %d "
            "before its link was slow" % (rounds, RECOVER_S, share))


def owner_of(c, ten):
    """The index g of the gateway that owns tenant ten (the controller's state)."""
    j = c.admin("GET", "/v1/internal/state").json()
    gid = [x.get("gateway", "") for x in j["tenants"] if x["id"] == ten["id"]][0]
    url = [x["url"] for x in j["gateways"] if x["id"] == gid][0]
    return [g for g in range(2) if url == "http://%s:%d" % (c.gw_host(g), c.gw_port_of(g))][0]


def gateway_cut(t, c, rng):
    tens, own = [], []
    while sorted(set(own)) != [0, 1] and len(tens) < 4:  # each goes to the one owning fewer
        tens.append(c.create_tenant())
        own.append(owner_of(c, tens[-1]))
    t.check(sorted(set(own)) == [0, 1], "new tenants on both gateways: %s" % own)
    cut = tens[own.index(0)]  # owned by the gateway about to be cut off
    other = tens[own.index(1)]
    via = st.Gateway(c.gw_port_of(1), cut["key"], c.gw_host(1))
    acked = {}
    put(t, via, "cut/a", rng.randbytes(OBJ), acked, "owner cabled")  # a kept-alive connection
    read_all(t, via, acked, "owner cabled", 10)
    failed0 = c.gw_metrics(1).get("shoal_gateway_forward_failures_total", 0)

    c.link("gateway", "down")
    for i in range(2):
        t0 = time.monotonic()
        r = via.get("cut/a", timeout=60)
        took = time.monotonic() - t0
        st.log("GET through the other gateway, its owner cut off: %d in %.1f s" % (r.status, took))
        t.status(r, 503, "GET %d of a tenant whose gateway is cut off" % i)
        t.check(r.header("Retry-After"), "503 without Retry-After")
        t.check(took < 10, "GET %d of a tenant whose gateway is cut off took %.1f s" % (i, took))
    g1 = st.Gateway(c.gw_port_of(1), other["key"], c.gw_host(1))
    mine = {}
    put(t, g1, "served", rng.randbytes(1000), mine, "the other gateway's tenant")
    read_all(t, g1, mine, "the other gateway's tenant", 5)
    t.check(c.gw_metrics(1).get("shoal_gateway_forward_failures_total", 0) >= failed0 + 2,
            "forward failures counted")

    c.link("gateway", "up")
    st.wait_until(lambda: via.get("cut/a").status == 200, 20, "the owner served again")
    read_all(t, via, acked, "owner cabled again", 10)


def controller_cut(t, c, rng):
    ten = c.create_tenant()
    g = c.gw(ten)
    data = rng.randbytes(300000)
    acked, bad = {}, []
    stop = threading.Event()

    def load():
        n = 0
        while not stop.is_set():
            key = "c/%d" % (n % 40)
            for m in ("PUT", "GET"):
                t0 = time.monotonic()
                try:
                    r = g.put(key, data, timeout=30) if m == "PUT" else g.get(key, timeout=30)
                    st_ = r.status
                except OSError as e:
                    st_ = str(e)
                took = time.monotonic() - t0
                if st_ not in (200, 201) or took > 2:
                    bad.append((time.strftime("%H:%M:%S"), m, key, st_, round(took, 2)))
                elif m == "PUT":
                    acked[key] = st.sha256(data)
            n += 1

    th = threading.Thread(target=load)
    th.start()
    try:
        time.sleep(2)
        c.link("controller", "down")
        time.sleep(8)  # every node's timeout runs out twice over
        c.link("controller", "up")
        time.sleep(5)
    finally:
        stop.set()
        th.join()
    t.check(not bad, "requests failed or over 2 s around the controller's cut: %d, first %s" %
            (len(bad), bad[:5]))
    log = c.logs("controller")["controller.log"]
    t.check("hears no node" in log, "the controller said it heard no node")
    cut = log[log.rindex("hears no node"):]
    t.check("node down" not in cut, "a node called down by a controller that heard none: %s" %
            [ln for ln in cut.splitlines() if "node down" in ln])
    t.eq(c.nodes_up(), 6, "nodes up after the controller is heard again")
    read_all(t, g, acked, "after the controller's cut", 5)


def main(t):
    rng = random.Random(7)
    c = t.cluster(netns=True, gateways=2,
                  gateway_args="--io-timeout-ms %d" % IO_TIMEOUT_MS)
    t.section(addresses, c, rng)
    t.section(partition, c, rng)
    t.section(slow_link, c, rng)
    t.section(gateway_cut, c, rng)
    t.section(controller_cut, c, rng)


if __name__ == "__main__":
    if not st.netns_usable():
        print("SKIP integ.hosts: network namespaces need root and iproute2 (ip netns)")
        sys.exit(77)
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    st.run(main, timeout=230)
