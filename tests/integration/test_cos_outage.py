#!/usr/bin/python3
"""integ.cos_outage_v2 / _v4: the nodes' COS is S3 (s3rver), and it goes away mid-load.

A cluster started with `shoal-cluster --cos s3://...` (every node the same URL;
sig from SHOAL_TEST_COS_SIG, v2 by default; every signature checked by the proxy of
s3rver.py) takes a PUT/GET load of small objects (chunks packed into COS segments)
and large ones (a COS object per chunk). s3rver is killed -9 mid-load and started
again on the same port and data a few seconds later. Then:

1. nothing acknowledged is lost: the load saw no error, the nodes logged COS write
   retries during the outage (so the outage hit writes) and never dropped a chunk,
   and every chunk reaches COS (the gateway's persistent buffer empties);
2. every node is restarted, so its memory is empty and it rebuilds its segment index
   by listing and reading its segments in S3; every acknowledged object then reads
   back by checksum, through COS (the nodes' reload counters grow). While they start,
   the proxy leaves the reads of their segments and insertion log objects unanswered
   for a few seconds (the listings are answered: S3 went away mid-replay): each node
   waits for them (it logs so) rather than coming up without the chunks they name.
"""
import os
import re
import sys
import threading
import time

import shoaltest as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s3rver  # noqa: E402

NODES = 6
REFUSE_S = 4.0  # how long S3 leaves the nodes' replay reads unanswered


def main(t):
    sig = os.environ.get("SHOAL_TEST_COS_SIG", "v2")
    s3 = s3rver.S3rver(t.src)
    t.after_clusters.append(s3.stop)  # the nodes write to it until they stop
    s3.start()
    os.environ.update(s3rver.S3rver.env())  # the nodes inherit them
    url = s3.url(sig, prefix="cluster")
    st.log("COS %s (s3rver on port %d)" % (url, s3.port))
    c = t.cluster(nodes=NODES, cos=url)
    run(t, c, s3)
    t.check(s3.proxy.checked > 0, "no request reached the S3 server")
    t.check(not s3.proxy.problems, "signatures refused:\n  %s" % "\n  ".join(
        s3.proxy.problems[:5]))
    st.log("%d signed requests checked" % s3.proxy.checked)


def run(t, c, s3):
    ten = c.create_tenant("cos")
    g = c.gw(ten)
    small = st.Load(t, g, nthreads=2, min_size=1 << 10, max_size=16 << 10, prefix="small",
                    seed=41)
    large = st.Load(t, g, nthreads=1, min_size=256 << 10, max_size=2 << 20, prefix="large",
                    seed=42)
    small.start()
    large.start()
    loads = (small, large)

    def acked():
        return sum(ld.stats["put_ok"] for ld in loads)

    st.wait_until(lambda: acked() >= 20, 60, "20 acknowledged PUTs before the outage")
    s3.kill()
    t_kill = time.monotonic()
    before = acked()
    st.log("s3rver killed after %d acknowledged PUTs" % before)
    time.sleep(5)
    st.log("%d PUTs acknowledged while S3 was down" % (acked() - before))
    s3.start()
    st.log("s3rver back after %.1fs" % (time.monotonic() - t_kill))
    after = acked()
    st.wait_until(lambda: acked() >= after + 20, 90, "20 more acknowledged PUTs after it")
    for ld in loads:
        ld.stop()
    for ld in loads:
        st.log("load %s: %r, %d keys" % (ld.prefix, ld.stats, len(ld.acked)))
        t.check(not ld.errors, "errors under load:\n  %s" % "\n  ".join(ld.errors[:10]))

    # Every acknowledged chunk reaches COS: the gateway lets go of it only then.
    st.wait_until(lambda: c.gw_metrics().get("shoal_gateway_buffered_objects") == 0, 120,
                  "the gateway's persistent buffer to empty (every chunk in COS)")
    logs = c.logs()
    retried = sum(log.count("cos: s3 put failed, retrying") for log in logs.values())
    st.log("COS write retries logged by the nodes: %d" % retried)
    t.check(retried > 0, "no node retried a COS write: the outage did not hit a write")
    for name, log in logs.items():
        t.check("chunk not persisted tenant" not in log,
                "%s dropped a chunk it could not persist" % name)

    # Empty memory everywhere: every read must come from S3. And S3 goes away
    # between the nodes' listings and their reads of what they listed.
    c.stop(only=["fnstore-%d" % i for i in range(NODES)])
    s3.proxy.refuse = lambda method, path: method == "GET" and re.search(
        r"/(seg|ilog)/n\d+/[0-9a-f]+$", path.split("?")[0]) is not None
    threading.Timer(REFUSE_S, lambda: setattr(s3.proxy, "refuse", None)).start()
    t0 = time.monotonic()
    c.start()
    c.wait_nodes_up()
    st.log("nodes up %.1fs after their start; %d segment and log reads refused meanwhile" % (
        time.monotonic() - t0, s3.proxy.refused))
    for ld in loads:
        errs = ld.verify_all(what="after restarting every node", retry_503=30)
        t.check(not errs, "\n  ".join(errs[:10]))
    t.check(s3.proxy.refused > 0, "no node read a segment or a log object while refused")
    for name, log in c.logs().items():
        start = log.rsplit("shoal-cluster: starting", 1)[-1]  # this start's lines
        listed = sum(int(x) for x in re.findall(
            r"(?:cos segments replayed segments|insertion log replayed objects)=(\d+)", start))
        t.check(listed == 0 or "not readable yet, waiting" in start,
                "%s did not wait for its %d segments and log objects" % (name, listed))
    # A segment s3rver was writing when it was killed stays half-written (its
    # store is not atomic, S3's is): the node's PUT failed and the chunks went out
    # again, so the replay may skip it. Any other unreadable segment is a bug.
    for name, log in c.logs().items():
        failed = set(re.findall(r"segment write failed name=(\S+)", log))
        for seg in re.findall(r"segment unreadable, kept name=(\S+)", log):
            t.check(seg in failed, "%s: segment %s unreadable, yet its write succeeded" % (
                name, seg))
    reloads = sum(c.metrics(i).get("shoal_fnstore_cos_reloads_total", 0) for i in range(NODES))
    st.log("chunks reloaded from COS after the restart: %d" % reloads)
    t.check(reloads > 0, "the nodes served every read without reading COS")


if __name__ == "__main__":
    st.run(main, timeout=420)
