#!/usr/bin/python3
"""integ.grace: the chunks of a replaced or deleted version are deleted at
once, yet a GET that began before the overwrite or DELETE reads the old
version whole; a gateway stopped cleanly sends the deletes it still holds.

The nodes are capped at 32 MiB/s each (--cap-bytes) so that reading a 48 MiB
object takes long enough for overwrites to land in the middle of it. A GET of
a version whose chunks were deleted under it would fail (503) or reload them
from COS; both are checked against.
"""
import json
import os
import subprocess
import threading
import time

import shoaltest as st

SIZE = 48 << 20


def node_sum(c, name):
    return sum(c.metrics(i).get(name, 0) for i in range(c.nodes))


def gw_metric(c, name):
    r = st.http_request(c.gw_port, "GET", "/metrics", timeout=10)
    if r.status != 200:
        raise st.TestFailure("gateway /metrics: %r" % r)
    return st.parse_metrics(r.body.decode("utf-8", "replace")).get(name)


def check_overwrites(t, c, g):
    versions = [os.urandom(SIZE), os.urandom(SIZE)]
    hashes = {st.sha256(v) for v in versions}
    key = "grace/big"
    t.status(g.put(key, versions[0]), 201, "PUT first version")
    stop = threading.Event()
    bad, done = [], [0]

    def reader():
        while not stop.is_set():
            r = g.get(key)
            if r.status != 200 or st.sha256(r.body) not in hashes:
                bad.append("GET -> %r" % r)
                return
            done[0] += 1

    ths = [threading.Thread(target=reader, daemon=True) for _ in range(2)]
    for th in ths:
        th.start()
    for i in range(1, 9):
        t.status(g.put(key, versions[i % 2]), 201, "PUT version %d" % i)
    stop.set()
    for th in ths:
        th.join(timeout=120)
    t.check(not bad, "GETs during overwrites: %s" % bad[:3])
    t.check(done[0] >= 4, "only %d GETs finished during the overwrites" % done[0])
    st.log("overwrites: %d GETs, all whole" % done[0])


def check_delete(t, c, g):
    data = os.urandom(SIZE)
    key = "grace/doomed"
    t.status(g.put(key, data), 201, "PUT")
    got = []
    th = threading.Thread(target=lambda: got.append(g.get(key)), daemon=True)
    th.start()
    time.sleep(0.15)  # the GET is in (reading takes >= 0.25 s at the cap)
    t.status(g.delete(key), 204, "DELETE during a GET")
    th.join(timeout=120)
    t.check(got and got[0].status == 200 and st.sha256(got[0].body) == st.sha256(data),
            "the GET that began before the DELETE: %r" % (got[0] if got else None))
    t.status(g.get(key), 404, "GET after the DELETE")
    st.log("delete during a GET ok")


def check_deletes_skip_cos_backlog(t):
    """Overwrites faster than the disk-backed COS drains (one COS worker per
    node): the delete of each old version is answered at once, not behind the
    queued COS writes (which timed out the gateway's node connections and
    failed PUTs with 503), and the queued writes of deleted chunks are
    dropped."""
    c = t.cluster(nodes=6, gateway_args="--io-timeout-ms 1000", fnstore_args="--cos-threads 1")
    ten = c.create_tenant("backlog")
    out = subprocess.run([t.binary("shoal-bench"), "--gateway", "http://127.0.0.1:%d" % c.gw_port,
                          "--tenant", "name=b,key=%s,conc=4,keys=8,size=10MiB,read=0,zipf=0"
                          % ten["key"], "--duration", "15", "--warmup", "0", "--json",
                          "--log-level", "warn"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    t.eq(out.returncode, 0, "shoal-bench exit (stderr %r)" % out.stderr[-300:])
    res = json.loads(out.stdout)["tenants"][0]
    t.check(res["ops"] > 0 and res["errors"] == 0,
            "PUT 10 MiB overwrites: %d ok, errors by status %r" % (res["ops"], res["status"]))
    with open(os.path.join(c.dir, "logs", "gateway.log"), errors="replace") as f:
        down = [line for line in f if "conn down" in line]
    t.check(not down, "gateway lost node connections: %s" % down[:2])
    st.log("%d overwrites of 10 MiB at %.0f MB/s, no node connection lost"
           % (res["ops"], res["mb_per_s"]))


def check_stop_sends_delayed_deletes(t):
    """A gateway stopped cleanly sends the deletes it still holds (here
    delayed by --delete-delay-ms) before it exits, instead of leaving the
    old versions' chunks behind as orphans."""
    c = t.cluster(nodes=6, gateway_args="--delete-delay-ms 600000")
    g = c.gw(c.create_tenant("stopper"))

    def dels():
        return sum(v for i in range(c.nodes) for k, v in c.metrics(i).items()
                   if k.startswith("shoal_fnstore_requests_total{") and 'op="del"' in k)

    keys = ["stop/%d" % i for i in range(4)]
    for key in keys:
        t.status(g.put(key, os.urandom(1024)), 201, "PUT " + key)
    before = dels()
    for key in keys:
        t.status(g.put(key, os.urandom(1024)), 201, "PUT again " + key)
    time.sleep(0.5)
    t.eq(dels(), before, "DELs while the old versions wait for --delete-delay-ms")
    out = c.stop(only=["gateway"])
    t.check("SIGKILL" not in out, "the gateway did not stop on SIGTERM:\n%s" % out)
    sent = dels() - before
    t.eq(sent, 3 * len(keys), "DELs the stopping gateway sent (three copies a version)")
    with open(os.path.join(c.dir, "logs", "gateway.log"), errors="replace") as f:
        left = [line for line in f if "not answered" in line or "not taken" in line]
    t.check(not left, "deletes left at stop: %s" % left[:2])
    st.log("a clean stop sent the %d delayed DELs of %d replaced versions" % (sent, len(keys)))


def main(t):
    # Room for both readers' GETs and a PUT at once (3 x 48 MiB): under the
    # default --inflight-bytes (64 MiB) admission would run them one by one,
    # so no overwrite would land inside a read, and a slow host would turn
    # the queueing into 503s (integ.admit tests admission).
    c = t.cluster(nodes=6, gateway_args="--inflight-bytes 192MiB",
                  fnstore_args="--cap-bytes 32MiB")
    g = c.gw(c.create_tenant("grace"))
    t.section(check_overwrites, c, g)
    t.section(check_delete, c, g)
    t.eq(node_sum(c, "shoal_fnstore_cos_reloads_total"), 0, "chunks reloaded from COS")
    deadline = time.monotonic() + 10
    want = SIZE * 3 // 2  # grace/big's live version, k=4 m=2
    while True:
        used = node_sum(c, "shoal_fnstore_memory_used_bytes")
        waiting = gw_metric(c, "shoal_gateway_retired_versions_waiting")
        if used == want and waiting == 0:
            break
        t.check(time.monotonic() < deadline, "nodes hold %d bytes (want %d), %r versions wait"
                % (used, want, waiting))
        time.sleep(0.2)
    st.log("old versions gone: nodes hold %d bytes" % used)
    t.section(check_deletes_skip_cos_backlog)
    t.section(check_stop_sends_delayed_deletes)


if __name__ == "__main__":
    st.run(main, timeout=200)
