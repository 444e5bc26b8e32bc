#!/usr/bin/python3
"""integ.chaos: a mixed load under random faults; nothing acknowledged is lost.

The cluster: 6 nodes on an S3 COS (s3rver, SigV4), the SMS window on with a 2 s
generation, M = 2 and N = 2 (instances age, degrade and are released during the
run), 4 MiB instances, and every node reclaiming instances at random
(`--reclaim-rate`). s3rver runs without s3rver.py's signature proxy: the proxy
would run in this process, under the same interpreter lock as the load
(integ.cos_outage_* check the signatures).

The load, about a minute: client threads of three tenants, each on its own
keep-alive connection, PUT small objects (1-64 KiB, stored as copies) and large
ones (300 KiB - 4 MiB, erasure-coded), overwrite and DELETE their keys, and GET
them, whole or a range, checking every body against what the thread last had
acknowledged. A thread owns its keys, so each key's expected state is exact: the
acknowledged (version, sha256) or the acknowledged delete, plus what a request
that got no answer may have done (a timeout or a reset: either outcome is right).

The faults, at moments drawn from a seed (printed; SHOAL_TEST_SEED replays one;
SHOAL_TEST_GW_ARGS adds gateway flags, e.g. --log-level debug):
`shoalctl node reclaim NODE --all` twice, a kill -9 of one node (started again a
few seconds later with `shoal-cluster start`) and a kill -9 of s3rver (started
again 6-8 s later, longer than the gateway's I/O timeout, on the same port and
data, its torn writes removed by s3rver.py). During a fault and for a grace
period after it, a 503 or 429 PUT and a failed GET are allowed and counted; a
failed GET is retried, and one that never succeeds once the faults are over is a
failure, as is any failed GET outside the fault windows. Wrong bytes, a wrong
version, a lost object or a deleted one that comes back always fail.

Afterwards: every process still runs with the pid it had (but the killed node, which
runs again), s3rver too; the gateway's persistent buffer empties (every chunk and
META record in COS), and so do the DELs it kept for the killed node, none given up;
every key reads back as acknowledged (newest version by sha256 and version, deleted
keys 404) and LIST agrees; then every node is stopped (each on
SIGTERM) and started again (memory empty: every chunk now comes from COS or a
recovery) and everything is read again. The cluster stops before s3rver does. The counts are printed: objects,
bytes, reclaims, STALE answers, recoveries, COS retries, the chunks a node gave up
persisting because they left its memory (reclaimed while COS was down: the
gateway's persistent buffer writes them again), the gateway's connection timeouts.
"""
import hashlib
import http.client
import json
import os
import random
import re
import sys
import threading
import time

import shoaltest as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s3rver  # noqa: E402

NODES = 6
TENANTS = 3
THREADS_PER_TENANT = 2
LOAD_S = 55.0
OPS_PER_THREAD_S = 10.0  # each thread's pace: the whole load, ~60 requests/s
# s3rver stays down longer than the gateway's I/O timeout (5 s): the nodes' META
# records wait for COS that long.
S3_DOWN_S = (6.0, 8.0)
GRACE_S = 8.0  # after a fault ends, how long failures still count as its own
GET_RETRY_S = 30.0  # how long a failed GET is retried past the end of the faults
CLIENT_TIMEOUT_S = 30.0
SMALL = (1 << 10, 64 << 10)
LARGE = (300 << 10, 4 << 20)
DELETED = "deleted"


def body_of(dseed, size):
    """An object's bytes, made again from its seed (so ranges can be checked)."""
    return random.Random(dseed).randbytes(size)


class Faults:
    """The fault windows: while one is open (or within GRACE_S of its end), a
    failed request is the fault's doing."""

    def __init__(self):
        self.lock = threading.Lock()
        self.open = 0
        self.last_end = 0.0
        self.done = threading.Event()  # every fault over
        self.log = []

    def begin(self, what):
        with self.lock:
            self.open += 1
            self.log.append((time.time(), "begin " + what))

    def end(self, what):
        with self.lock:
            self.open -= 1
            self.last_end = time.monotonic()
            self.log.append((time.time(), "end " + what))

    def active(self):
        with self.lock:
            return self.open > 0 or time.monotonic() - self.last_end < GRACE_S


class Client:
    """One keep-alive connection to the gateway with one tenant's key."""

    def __init__(self, port, key):
        self.port = port
        self.key = key
        self.conn = None

    def request(self, method, key, body=None, headers=None):
        """Returns (status, headers dict, body); raises OSError/HTTPException on a
        transport failure (the connection is dropped)."""
        h = {"Authorization": "Bearer " + self.key}
        h.update(headers or {})
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                                   timeout=CLIENT_TIMEOUT_S)
        try:
            self.conn.request(method, "/v1/objects/" + st.qkey(key), body=body, headers=h)
            r = self.conn.getresponse()
            data = r.read()
            hdrs = {k.lower(): v for k, v in r.getheaders()}
            if hdrs.get("connection", "").lower() == "close":
                self.close()
            return r.status, hdrs, data
        except (OSError, http.client.HTTPException):
            self.close()
            raise

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class Key:
    """What one key must read as: `acked` is ("obj", version, sha, dseed, size) or
    (DELETED,) or None (never acknowledged); `maybe` holds the outcomes of the
    requests since then that got no answer."""

    __slots__ = ("tenant", "acked", "maybe")

    def __init__(self, tenant):
        self.tenant = tenant
        self.acked = None
        self.maybe = []

    def exists(self):
        return self.acked is not None and self.acked[0] != DELETED

    def check(self, status, hdrs, body, rng_off=None):
        """None if a GET answer fits what was acknowledged, else why not."""
        outcomes = [self.acked] + self.maybe
        if status == 404:
            if any(o is None or o[0] == DELETED for o in outcomes):
                return None
            return "404, but version %d was acknowledged" % self.acked[1]
        sha = hashlib.sha256(body).hexdigest() if rng_off is None else None
        for o in outcomes:
            if o is None or o[0] == DELETED:
                continue
            if rng_off is not None:
                a, b = rng_off
                if body == body_of(o[3], o[4])[a:b + 1]:
                    return None
            elif sha == o[2] and (o[1] is None or hdrs.get("x-shoal-version") == str(o[1])):
                return None
        return "got %d bytes (sha %s, version %s), want %s" % (
            len(body), hashlib.sha256(body).hexdigest()[:12], hdrs.get("x-shoal-version"),
            " or ".join("deleted" if o is None or o[0] == DELETED else
                        "v%s sha %s" % (o[1], o[2][:12]) for o in outcomes))


class Chaos:
    def __init__(self, t, c, s3, tenants, seed):
        self.t = t
        self.c = c
        self.s3 = s3
        self.tenants = tenants
        self.seed = seed
        self.faults = Faults()
        self.stop_ev = threading.Event()
        self.lock = threading.Lock()
        self.keys = {}  # (tenant id, key) -> Key; written only by the owning thread
        self.errors = []
        self.killed = set()  # processes killed -9 (and started again)
        self.n = {k: 0 for k in (
            "put_ok", "put_bytes", "put_small", "put_large", "overwrite", "delete_ok",
            "get_ok", "range_ok", "get_404", "put_503", "put_429", "put_lost_answer",
            "delete_503", "delete_lost_answer", "get_retried", "get_fail_in_fault",
            "reclaims_ordered")}

    def count(self, what, by=1):
        with self.lock:
            self.n[what] += by

    def err(self, msg):
        with self.lock:
            self.errors.append("%.1f %s" % (time.monotonic() - self.t0, msg))
        st.log("chaos error: " + msg)

    # ------------------------------------------------------------------ load

    def get_until_ok(self, cl, key, k, rng, what):
        """A GET (whole, or a range of a large object), retried while it fails
        within a fault window and for GET_RETRY_S once the faults are over. Checks
        what finally came."""
        hdrs = None
        rng_off = None
        if k.exists() and k.acked[4] > SMALL[1] and not k.maybe and rng.random() < 0.3:
            size = k.acked[4]
            a = rng.randrange(size)
            rng_off = (a, min(size - 1, a + rng.randrange(1, 1 << 20)))
            hdrs = {"Range": "bytes=%d-%d" % rng_off}
        tries = 0
        after = None
        while True:
            try:
                status, h, body = cl.request("GET", key, headers=hdrs)
            except (OSError, http.client.HTTPException) as e:
                status, h, body = -1, {}, str(e).encode()
            if status in (200, 206, 404):
                break
            tries += 1
            in_fault = self.faults.active()
            if tries == 1:
                if in_fault:
                    self.count("get_fail_in_fault")
                else:
                    self.err("%s %s failed outside any fault window: %d %r" % (
                        what, key, status, body[:160]))
            if not in_fault and self.faults.done.is_set():
                after = after or time.monotonic()
                if time.monotonic() - after > GET_RETRY_S:
                    self.err("%s %s still fails %.0fs after the faults: %d %r" % (
                        what, key, GET_RETRY_S, status, body[:160]))
                    return
            time.sleep(0.3)
        if tries:
            self.count("get_retried")
        why = k.check(status, h, body, rng_off if status == 206 else None)
        if rng_off is not None and status == 200:
            why = "Range %r answered 200" % (rng_off,)
        if why is not None:
            self.err("%s %s (tenant %d): %s" % (what, key, k.tenant, why))
        elif status == 206:
            self.count("range_ok")
        elif status == 404:
            self.count("get_404")
        else:
            self.count("get_ok")

    def worker(self, n, ten):
        rng = random.Random("%d/%d" % (self.seed, n))
        cl = Client(self.c.gw_port, ten["key"])
        mine = []  # keys this thread has written
        i = 0
        pace = time.monotonic()
        while not self.stop_ev.is_set():
            pace = max(pace + 1.0 / OPS_PER_THREAD_S, time.monotonic() - 1.0)
            if self.stop_ev.wait(max(0.0, pace - time.monotonic())):
                break
            p = rng.random()
            present = [x for x in mine if self.keys[(ten["id"], x)].exists()]
            try:
                if p < 0.40 and mine:
                    key = rng.choice(mine)
                    self.get_until_ok(cl, key, self.keys[(ten["id"], key)], rng, "GET")
                elif p < 0.48 and present:
                    self.delete(cl, ten, rng.choice(present))
                else:
                    if p < 0.62 and mine:
                        key = rng.choice(mine)
                        self.count("overwrite")
                    else:
                        key = "chaos/w%d/%05d" % (n, i)
                        i += 1
                        mine.append(key)
                    self.put(cl, ten, key, rng)
            except Exception as e:  # noqa: BLE001 - a load thread reports, never dies
                self.err("thread %d: %s: %s" % (n, type(e).__name__, e))
        cl.close()

    def put(self, cl, ten, key, rng):
        k = self.keys.setdefault((ten["id"], key), Key(ten["id"]))
        large = rng.random() < 0.15
        lo, hi = LARGE if large else SMALL
        size = rng.randrange(lo, hi + 1)
        dseed = rng.getrandbits(63)
        data = body_of(dseed, size)
        sha = hashlib.sha256(data).hexdigest()
        try:
            status, h, body = cl.request("PUT", key, body=data)
        except (OSError, http.client.HTTPException):
            self.count("put_lost_answer")
            k.maybe.append(("obj", None, sha, dseed, size))
            return
        if status == 201:
            k.acked = ("obj", int(h["x-shoal-version"]), sha, dseed, size)
            k.maybe = []
            self.count("put_ok")
            self.count("put_large" if large else "put_small")
            self.count("put_bytes", size)
        elif status in (503, 429):
            # Refused: the old state stays. Allowed only while faults are about.
            self.count("put_%d" % status)
            if self.n["put_%d" % status] <= 3:
                st.log("PUT %s at %.1fs: %d %r" % (key, time.monotonic() - self.t0, status, body[:160]))
            if not self.faults.active():
                self.err("PUT %s: %d outside any fault window: %r" % (key, status, body[:160]))
            time.sleep(0.2)
        else:
            self.err("PUT %s (%d bytes): %d %r" % (key, size, status, body[:200]))

    def delete(self, cl, ten, key):
        k = self.keys[(ten["id"], key)]
        try:
            status, h, body = cl.request("DELETE", key)
        except (OSError, http.client.HTTPException):
            self.count("delete_lost_answer")
            k.maybe.append((DELETED,))
            return
        if status == 204:
            k.acked = (DELETED,)
            k.maybe = []
            self.count("delete_ok")
        elif status in (503, 429):
            self.count("delete_503")
            if not self.faults.active():
                self.err("DELETE %s: %d outside any fault window: %r" % (key, status, body[:160]))
            time.sleep(0.2)
        else:
            self.err("DELETE %s (acknowledged, version %d): %d %r" % (
                key, k.acked[1], status, body[:200]))

    # ------------------------------------------------------------------ faults

    def schedule(self):
        """The faults as (start offset, name, function), drawn from the seed."""
        rng = random.Random(self.seed)
        ev = []
        for _ in range(2):
            node = rng.randrange(NODES)
            ev.append((rng.uniform(4, LOAD_S - 12), "reclaim node %d --all" % node,
                       lambda node=node: self.reclaim_all(node)))
        node = rng.randrange(NODES)
        down = rng.uniform(2, 6)
        ev.append((rng.uniform(6, LOAD_S - 20), "kill -9 fnstore-%d for %.1fs" % (node, down),
                   lambda: self.kill_node(node, down)))
        down_s3 = rng.uniform(S3_DOWN_S[0], S3_DOWN_S[1])
        ev.append((rng.uniform(6, LOAD_S - 20), "kill -9 s3rver for %.1fs" % down_s3,
                   lambda: self.kill_s3(down_s3)))
        return sorted(ev, key=lambda e: e[0])

    def reclaim_all(self, node):
        self.faults.begin("reclaim %d" % node)
        try:
            self.c.shoalctl("node", "reclaim", str(node), "--all")
            self.count("reclaims_ordered")
            # The node takes the order with its next heartbeat.
            time.sleep(1.0)
        finally:
            self.faults.end("reclaim %d" % node)

    def kill_node(self, node, down):
        proc = "fnstore-%d" % node
        self.faults.begin(proc)
        try:
            self.killed.add(proc)
            self.c.kill(proc)
            time.sleep(down)
            self.c.start(only=[proc])
        finally:
            self.faults.end(proc)

    def kill_s3(self, down):
        self.faults.begin("s3rver")
        try:
            st.log("kill -9 s3rver")
            self.s3.kill()
            time.sleep(down)
            self.s3.start()
            st.log("s3rver back")
        finally:
            self.faults.end("s3rver")

    def run_faults(self, events):
        ths = []
        for at, name, fn in events:
            wait = self.t0 + at - time.monotonic()
            if wait > 0 and self.stop_ev.wait(wait):
                break

            def run(name=name, fn=fn):
                st.log("fault at %.1fs: %s" % (time.monotonic() - self.t0, name))
                try:
                    fn()
                except Exception as e:  # noqa: BLE001
                    self.err("fault %s: %s: %s" % (name, type(e).__name__, e))
            th = threading.Thread(target=run, daemon=True)
            th.start()
            ths.append(th)
        for th in ths:
            th.join(timeout=120)
            if th.is_alive():
                self.err("a fault did not finish within 120 s")
        self.faults.done.set()
        st.log("faults over at %.1fs" % (time.monotonic() - self.t0))

    def run(self):
        events = self.schedule()
        for at, name, _ in events:
            st.log("  planned at %5.1fs: %s" % (at, name))
        self.t0 = time.monotonic()
        workers = []
        n = 0
        for ten in self.tenants:
            for _ in range(THREADS_PER_TENANT):
                th = threading.Thread(target=self.worker, args=(n, ten), daemon=True)
                th.start()
                workers.append(th)
                n += 1
        fth = threading.Thread(target=self.run_faults, args=(events,), daemon=True)
        fth.start()
        fth.join(LOAD_S + 150)
        left = self.t0 + LOAD_S - time.monotonic()
        if left > 0:
            time.sleep(left)
        self.stop_ev.set()
        for th in workers:
            th.join(timeout=CLIENT_TIMEOUT_S + GET_RETRY_S + 30)
            if th.is_alive():
                self.err("a load thread hangs")
        st.log("load over after %.1fs: %s" % (time.monotonic() - self.t0, json.dumps(self.n)))

    # ------------------------------------------------------------------ checks

    def verify_all(self, what):
        """Every key reads as acknowledged, by 4 threads; LIST agrees per tenant."""
        keys = sorted(self.keys.items())
        nerr = len(self.errors)
        deadline = time.monotonic() + GET_RETRY_S
        byten = {ten["id"]: ten for ten in self.tenants}
        checked = [0, 0]  # present, deleted

        def part(items):
            cls = {}
            for (tid, key), k in items:
                cl = cls.setdefault(tid, Client(self.c.gw_port, byten[tid]["key"]))
                while True:
                    try:
                        status, h, body = cl.request("GET", key)
                    except (OSError, http.client.HTTPException) as e:
                        status, h, body = -1, {}, str(e).encode()
                    if status in (200, 404) or time.monotonic() > deadline:
                        break
                    self.count("get_retried")
                    time.sleep(0.3)
                if status not in (200, 404):
                    self.err("%s: GET %s (tenant %d): %d %r" % (what, key, tid, status,
                                                                 body[:160]))
                    continue
                why = k.check(status, h, body)
                if why is not None:
                    self.err("%s: GET %s (tenant %d): %s" % (what, key, tid, why))
                with self.lock:
                    checked[0 if status == 200 else 1] += 1
            for cl in cls.values():
                cl.close()

        ths = [threading.Thread(target=part, args=(keys[i::4],)) for i in range(4)]
        t0 = time.monotonic()
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        for ten in self.tenants:
            listed = {o["key"]: o for o in self.c.gw(ten).list_all()}
            for (tid, key), k in keys:
                if tid != ten["id"] or k.maybe:
                    continue
                if k.exists() and key not in listed:
                    self.err("%s: LIST of tenant %d lacks %s" % (what, tid, key))
                elif k.exists() and listed[key]["version"] != k.acked[1]:
                    self.err("%s: LIST of tenant %d has %s at version %r, want %d" % (
                        what, tid, key, listed[key]["version"], k.acked[1]))
                elif not k.exists() and key in listed:
                    self.err("%s: LIST of tenant %d has deleted %s" % (what, tid, key))
        st.log("%s: %d objects right, %d deleted keys 404, in %.1fs" % (
            what, checked[0], checked[1], time.monotonic() - t0))
        self.t.check(len(self.errors) == nerr, "%s: %d errors:\n  %s" % (
            what, len(self.errors) - nerr, "\n  ".join(self.errors[nerr:nerr + 15])))


# ---------------------------------------------------------------------- the test


def log_counts(c):
    """What the nodes' logs (appended across restarts) say happened."""
    pats = {"reclaimed": r"instance reclaimed ", "recoveries": r"instance recovery ",
            "recovered": r"instance recovered ",
            "cos_retries": r"cos: s3 \w+ failed, retrying",
            "not_persisted_retries": r"chunk not persisted yet, retrying",
            "dropped": r"chunk not persisted tenant", "ilog_unreadable": r"insertion log object "
            r"unreadable", "segment_unreadable": r"segment unreadable"}
    out = {k: 0 for k in pats}
    for text in c.logs().values():
        for k, p in pats.items():
            out[k] += len(re.findall(p, text))
    return out


def main(t):
    seed = int(os.environ.get("SHOAL_TEST_SEED") or random.randrange(1 << 31))
    st.log("seed %d (SHOAL_TEST_SEED=%d replays this run's choices)" % (seed, seed))
    s3 = s3rver.S3rver(t.src, verify=False)
    t.after_clusters.append(s3.stop)  # the nodes write to it until they stop
    s3.start()
    os.environ.update(s3rver.S3rver.env())  # the nodes inherit them
    c = t.cluster(nodes=NODES, cos=s3.url("v4", prefix="chaos"),
                  gateway_args=os.environ.get("SHOAL_TEST_GW_ARGS", ""),
                  controller_args="--pool sms --gc-interval 2 --active-intervals 2 "
                                  "--degraded-intervals 2",
                  fnstore_args="--capacity 256MiB --instance-size 4MiB --reclaim-rate 3 "
                               "--recovery-helpers 4 --heartbeat-ms 250")
    run(t, c, s3, seed)


def check_processes(t, c, s3, pids, killed, what):
    """Every process runs, and only the killed ones have another pid."""
    for p, pid in sorted(pids.items()):
        t.check(c.alive(p), "%s: %s is not running" % (what, p))
        t.check(p in killed or c.pid(p) == pid, "%s: %s has pid %s, was %d: it died and came "
                "back" % (what, p, c.pid(p), pid))
    t.check(s3.proc is not None and s3.proc.poll() is None, "%s: s3rver exited" % what)


def run(t, c, s3, seed):
    tenants = [c.create_tenant("chaos%d" % i) for i in range(TENANTS)]
    pids = {p: c.pid(p) for p in c.procs()}
    ch = Chaos(t, c, s3, tenants, seed)
    ch.run()
    t.check(not ch.errors, "%d errors under load (seed %d):\n  %s" % (
        len(ch.errors), seed, "\n  ".join(ch.errors[:20])))
    t.check(ch.n["reclaims_ordered"] == 2, "both reclaim orders went out")
    check_processes(t, c, s3, pids, ch.killed, "after the load")

    # How often the gateway took a node for hung (printed: a node whose dispatch
    # bound is full of requests waiting for COS answers nothing for a while).
    timeouts = len(re.findall(r"gateway conn down node=\d+ \S+ err=timeout",
                              c.logs("gateway")["gateway.log"]))

    # Every chunk and META record reaches COS: the gateway lets go of a version only then.
    t0 = time.monotonic()
    st.wait_until(lambda: (lambda m: m.get("shoal_gateway_buffered_objects", -1) == 0
                           and m.get("shoal_gateway_meta_waiting", -1) == 0)(c.gw_metrics()),
                  60, "the gateway's persistent buffer to empty")
    st.log("persistent buffer empty %.1fs after the load" % (time.monotonic() - t0))
    # The DELs the killed node missed (overwritten and deleted versions) went
    # to it once it was back, none given up.
    st.wait_until(lambda: c.gw_metrics().get("shoal_gateway_deletes_waiting", -1) == 0, 60,
                  "the deletes kept for unreachable nodes to go out")

    ch.verify_all("after the load")
    gm = c.gw_metrics()
    # Empty memory everywhere: every chunk now comes from COS (or a recovery).
    nodes = ["fnstore-%d" % i for i in range(NODES)]
    out = c.stop(only=nodes)
    t.check("SIGKILL" not in out, "a node did not stop on SIGTERM:\n%s" % out)
    c.start()
    c.wait_nodes_up()
    ch.verify_all("after restarting every node")
    check_processes(t, c, s3, pids, ch.killed | set(nodes), "after the restart")

    lc = log_counts(c)
    gm2 = c.gw_metrics()
    st.log("seed %d: PUTs acknowledged %d (%d small, %d large, %d overwrites), %.1f MiB; "
           "DELETEs %d; GETs right %d whole + %d ranges + %d deleted 404" % (
               seed, ch.n["put_ok"], ch.n["put_small"], ch.n["put_large"], ch.n["overwrite"],
               ch.n["put_bytes"] / 1048576.0, ch.n["delete_ok"], ch.n["get_ok"],
               ch.n["range_ok"], ch.n["get_404"]))
    st.log("refused in fault windows: PUT 503 %d, 429 %d, DELETE 503 %d; no answer: PUT %d, "
           "DELETE %d; GETs failed in a fault window %d, retried %d" % (
               ch.n["put_503"], ch.n["put_429"], ch.n["delete_503"], ch.n["put_lost_answer"],
               ch.n["delete_lost_answer"], ch.n["get_fail_in_fault"], ch.n["get_retried"]))
    st.log("nodes: %s; gateway connections timed out: %d" % (json.dumps(lc), timeouts))
    st.log("gateway (load / after the restart): STALE chunks %d / %d, late reads %d / %d, "
           "parity reads %d / %d, redriven chunks %d / %d" % tuple(
               int(m.get(name, 0)) for name in ("shoal_gateway_stale_chunks_total",
                                                "shoal_gateway_late_reads_total",
                                                "shoal_gateway_parity_reads_total",
                                                "shoal_gateway_redriven_chunks_total")
               for m in (gm, gm2)))
    st.log("gateway: chunk DELs sent again once their node was back %d, given up %d" % (
        gm.get("shoal_gateway_deletes_resent_total", 0),
        gm.get("shoal_gateway_deletes_dropped_total", 0)))
    t.check(gm.get("shoal_gateway_deletes_dropped_total", -1) == 0,
            "the gateway gave up chunk DELs (orphans)")
    t.check(lc["reclaimed"] > 0, "no instance was reclaimed")
    t.check(lc["cos_retries"] > 0, "no COS request was retried: the outage hit nothing")


if __name__ == "__main__":
    st.run(main, timeout=240)
