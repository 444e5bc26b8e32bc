#!/usr/bin/env python3
"""integ.sms_gw - the gateway's side of the elastic memory tier on a real cluster.

(a) Instances gone. PUT objects (4+2 stripes and 1+2 copies) and wait until
    every version left the gateway's persistent buffer (its META record
    logged). Reclaim every instance of one node (`shoalctl node reclaim
    NODE --all`; with a shoalctl without it, restart that node: every
    incarnation changes) and GET everything at once: every body right, no
    5xx. Then let the tenant's instances age out (active -> degraded ->
    released, a window of a few seconds) and GET everything again: every
    body right, no 5xx, served around STALE chunks (the gateway's
    shoal_gateway_stale_chunks_total and _late_reads_total grow: every
    instance is gone, so k chunks per stripe are read late, from COS).
(b) --rebuild-meta. PUTs, overwrites, deletes, a delete then a new PUT;
    wait until every META record is logged; stop the gateway. Over its
    store, --rebuild-meta is refused (exit 2) without --force. Delete the
    store and start the gateway with --rebuild-meta --cos DIR/cos: every
    committed object reads back with its checksum and version, deleted
    ones are 404, LIST agrees, a deleted key's next PUT gets a version
    above its delete.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoaltest as st  # noqa: E402

NODES = 6
ISZ = 4 << 20


def gw_metrics(c):
    r = st.http_request(c.gw_port, "GET", "/metrics", timeout=10)
    if r.status != 200:
        raise st.TestFailure("gateway /metrics: %r" % r)
    return st.parse_metrics(r.body.decode("utf-8", "replace"))


def drained(c):
    """Every version out of the persistent buffer, every META record logged."""
    m = gw_metrics(c)
    ok = m.get("shoal_gateway_buffered_objects", -1) == 0 and \
        m.get("shoal_gateway_meta_waiting", -1) == 0
    return m if ok else None


def get_all(t, g, objs, what):
    """GETs every object at once (8 threads): every body right, no error."""
    bad = []
    keys = sorted(objs)
    lock = threading.Lock()

    def worker(part):
        for k in part:
            r = g.get(k)
            with lock:
                if r.status != 200:
                    bad.append("%s -> %d %r" % (k, r.status, r.body[:120]))
                elif hashlib.sha256(r.body).hexdigest() != objs[k]:
                    bad.append("%s: wrong body (%d bytes)" % (k, len(r.body)))

    ths = [threading.Thread(target=worker, args=(keys[i::8],)) for i in range(8)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    t.check(not bad, "%s: %d of %d GETs wrong:\n  %s" % (what, len(bad), len(keys),
                                                       "\n  ".join(bad[:10])))


def memory(c):
    j = json.loads(c.shoalctl("--json", "node", "list").stdout.decode())
    return sum(n.get("memory_bytes", 0) for n in j["nodes"])


def reclaim(t, c, node):
    """Every instance of node gone: reclaimed, or the node restarted."""
    helptext = subprocess.run([c.shoalctl_path(), "--help"], capture_output=True, text=True,
                              timeout=10).stdout
    if "node reclaim" in helptext:
        before = c.metrics(node).get("shoal_fnstore_instances_reclaimed_total", 0)
        c.shoalctl("node", "reclaim", str(node), "--all")
        st.wait_until(lambda: c.metrics(node).get("shoal_fnstore_instances_reclaimed_total", 0)
                      > before, 10, "node %d reclaims its instances" % node)
        return "reclaimed"
    c.kill("fnstore-%d" % node)
    c.start(only=["fnstore-%d" % node])
    return "restarted"


def part_a(t, c, g):
    objs = {}
    sizes = [10 << 10, 100 << 10, 300 << 10, 1 << 20, 2 << 20 | 77]
    for i in range(30):
        body = os.urandom(sizes[i % len(sizes)])
        t.status(g.put("a/%02d" % i, body), 201, "PUT a/%02d" % i)
        objs["a/%02d" % i] = hashlib.sha256(body).hexdigest()
    m0 = st.wait_until(lambda: drained(c), 20, "every version out of the buffer")
    st.log("(a) %d objects persisted; META records logged=%d unlogged=%d" % (
        len(objs), m0.get("shoal_gateway_meta_records_total", 0),
        m0.get("shoal_gateway_meta_unlogged_total", 0)))
    t.check(m0.get("shoal_gateway_meta_records_total", 0) >= 3 * len(objs),
            "every version's META record logged by m+1 nodes: %r" % {
                k: v for k, v in m0.items() if "meta" in k})

    how = reclaim(t, c, 1)
    get_all(t, g, objs, "GET after node 1 %s its instances" % how)
    m1 = gw_metrics(c)
    st.log("(a) node 1 %s: stale=%d late=%d parity=%d" % (
        how, m1.get("shoal_gateway_stale_chunks_total", 0),
        m1.get("shoal_gateway_late_reads_total", 0),
        m1.get("shoal_gateway_parity_reads_total", 0)))

    # Idle: the window releases every instance; the chunks are in COS only.
    st.wait_until(lambda: memory(c) == 0, 30, "every instance released")
    get_all(t, g, objs, "GET after every instance was released")
    m2 = gw_metrics(c)
    st.log("(a) all released: stale=%d late=%d parity=%d" % (
        m2.get("shoal_gateway_stale_chunks_total", 0),
        m2.get("shoal_gateway_late_reads_total", 0),
        m2.get("shoal_gateway_parity_reads_total", 0)))
    t.check(m2.get("shoal_gateway_stale_chunks_total", 0) >
            m1.get("shoal_gateway_stale_chunks_total", 0),
            "GETs of released instances' chunks were answered STALE")
    t.check(m2.get("shoal_gateway_late_reads_total", 0) >
            m1.get("shoal_gateway_late_reads_total", 0),
            "and asked again with CM_WF_COS_OK when too few were left")
    fivexx = sum(v for k, v in m2.items()
                 if k.startswith("shoal_gateway_requests_total{") and 'code="5' in k)
    t.eq(fivexx, 0, "5xx answers of the gateway")
    return objs


def part_b(t, c, g, objs):
    want = {k: (v, 1) for k, v in objs.items()}  # key -> (sha256, version)
    for i in range(20):
        body = os.urandom(50000 + 37000 * i)
        r = g.put("b/%02d" % i, body)
        t.status(r, 201, "PUT b/%02d" % i)
        want["b/%02d" % i] = (hashlib.sha256(body).hexdigest(), int(r.header("X-Shoal-Version")))
    for i in range(5):  # overwrites
        body = os.urandom(20000 + i)
        r = g.put("b/%02d" % i, body)
        t.status(r, 201, "overwrite b/%02d" % i)
        want["b/%02d" % i] = (hashlib.sha256(body).hexdigest(), int(r.header("X-Shoal-Version")))
    deleted = {}
    for i in range(5, 11):
        t.status(g.delete("b/%02d" % i), 204, "DELETE b/%02d" % i)
        deleted["b/%02d" % i] = want.pop("b/%02d" % i)[1]
    body = os.urandom(3000)  # deleted, then stored again
    r = g.put("b/10", body)
    t.status(r, 201, "PUT b/10 again")
    t.eq(int(r.header("X-Shoal-Version")), deleted.pop("b/10") + 1, "version after a delete")
    want["b/10"] = (hashlib.sha256(body).hexdigest(), int(r.header("X-Shoal-Version")))
    st.wait_until(lambda: drained(c), 20, "every META record logged")
    c.stop(only=["gateway"])

    metadir = os.path.join(c.dir, "gateway", "meta")
    cos = os.path.join(c.dir, "cos")
    p = subprocess.run([t.binary("shoal-gateway"), "--data-dir", os.path.join(c.dir, "gateway"),
                        "--rebuild-meta", "--cos", cos, "--listen",
                        "127.0.0.1:%d" % st.free_port()],
                       capture_output=True, text=True, timeout=30)
    t.eq(p.returncode, 2, "--rebuild-meta over a store that is not empty (stderr %r)" % p.stderr)
    t.check("--force" in p.stderr, "the refusal names --force: %r" % p.stderr)

    shutil.rmtree(metadir)
    t0 = time.monotonic()
    c.cluster_cmd("start", "--only", "gateway", "--gateway-args",
                  "--rebuild-meta --cos %s" % cos)
    took = time.monotonic() - t0
    with open(os.path.join(c.dir, "logs", "gateway.log"), errors="replace") as f:
        line = [ln for ln in f if "rebuild-meta done" in ln]
    t.check(line, "the gateway logged its rebuild")
    st.log("(b) rebuilt and serving in %.1fs: %s" % (took, line[-1].strip()))

    bad = []
    for k, (sha, ver) in sorted(want.items()):
        r = g.get(k)
        if r.status != 200 or hashlib.sha256(r.body).hexdigest() != sha:
            bad.append("%s -> %d (%d bytes)" % (k, r.status, len(r.body or b"")))
        elif int(r.header("X-Shoal-Version")) != ver:
            bad.append("%s: version %s, want %d" % (k, r.header("X-Shoal-Version"), ver))
    for k in deleted:
        r = g.get(k)
        if r.status != 404:
            bad.append("deleted %s -> %d" % (k, r.status))
    t.check(not bad, "after --rebuild-meta:\n  " + "\n  ".join(bad[:10]))
    listed = {o["key"] for o in g.list_all()}
    t.eq(listed, set(want), "LIST after --rebuild-meta")
    r = g.put("b/05", b"back")
    t.status(r, 201, "PUT of a deleted key after the rebuild")
    t.eq(int(r.header("X-Shoal-Version")), deleted["b/05"] + 1,
         "a deleted key's next version is above its delete")
    st.log("(b) %d objects back, %d deleted stay deleted" % (len(want), len(deleted)))


def main(t):
    c = t.cluster(nodes=NODES,
                  controller_args="--gc-interval 1 --active-intervals 2 --degraded-intervals 2",
                  fnstore_args="--capacity 64MiB --instance-size 4MiB --heartbeat-ms 250")
    ten = c.create_tenant("smsgw")
    g = c.gw(ten)
    objs = part_a(t, c, g)
    part_b(t, c, g, objs)


if __name__ == "__main__":
    st.run(main, timeout=110)
