#!/usr/bin/python3
"""integ.move: a tenant moved to another gateway (`shoalctl tenant move`)
under load, and a move that both gateways crash through.

1. A tenant owned by gateway a, with objects over the tenant API (small,
   large, overwritten, deleted) and over S3 (a bucket, a multipart
   upload), is moved to gateway b while three clients PUT and GET through
   both gateways. `shoalctl tenant move --wait` returns once b owns it.
   During the move a request is served, or answered 503 with Retry-After
   (a client that retries loses nothing), and never waits over 2 s; the
   503s last under 2 s. After it, every acknowledged object reads back by
   SHA-256 through both gateways and both S3 ports; versions go on from
   where they were (a key deleted before the move gets version 2); b
   serves the tenant itself and a forwards to it.
2. Both gateways run the orphan scrub every 400 ms throughout: neither
   deletes a chunk.
3. The endpoint that takes a tenant's metadata in refuses a missing token
   (401), garbage and another tenant's bundle (400); a move to a gateway
   the controller does not know is refused (shoalctl exit 1).
4. Moved back to a, with a killed -9 once asked, then b killed -9 after
   its records left its store: b restarts with the tenant frozen (503
   with Retry-After) and its scrub passes on while it is (with a tenant of
   its own that holds most chunks, so that the scrub's lost-store valve
   would not hide a wrong verdict); once a is back the hand-over finishes
   by itself: a owns the tenant, every object of both tenants reads back,
   and no scrub deleted a chunk.
5. `shoalctl gateway rebalance`: with every tenant (four more of them,
   idle) moved to a, its dry run plans moves from a to b and makes none;
   the rebalance then makes exactly those moves, one at a time, every
   object reads back, and a second rebalance finds nothing to move.
"""
import json
import os
import random
import struct
import threading
import time
import urllib.request

import shoaltest as st

SCRUB_MS = 400


def state(c):
    r = c.admin("GET", "/v1/internal/state")
    if r.status != 200:
        raise st.TestFailure("internal state: %r" % r)
    return r.json()


def owner(c, tid):
    for t in state(c)["tenants"]:
        if t["id"] == tid:
            return t.get("gateway", ""), t.get("moving_to", "")
    return None, None


def metric(c, g, name):
    return c.gw_metrics(g).get("shoal_gateway_" + name, 0)


class Load:
    """PUTs and GETs of one tenant through both gateways; a 503 (with
    Retry-After) is retried as a client would, anything else is an error."""

    def __init__(self, gws, rng):
        self.gws = gws
        self.acked = {}
        self.errors = []
        self.stats = {"ok": 0, "503": 0}
        self.first_503 = self.last_503 = None
        self.slowest = 0.0
        self.lock = threading.Lock()
        self.stop_ev = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(n, rng.randrange(1 << 30)))
                        for n in range(3)]

    def call(self, g, m, key, data):
        t0 = time.monotonic()
        r = g.put(key, data, timeout=30) if m == "PUT" else g.get(key, timeout=30)
        took = time.monotonic() - t0
        with self.lock:
            self.slowest = max(self.slowest, took)
            if r.status == 503:
                self.stats["503"] += 1
                self.first_503 = self.first_503 or t0
                self.last_503 = t0
                if r.header("Retry-After") is None:
                    self.errors.append("%s %s: 503 without Retry-After" % (m, key))
            elif r.status in (200, 201):
                self.stats["ok"] += 1
            else:
                self.errors.append("%s %s: %r" % (m, key, r))
        return r

    def run(self, n, seed):
        rng = random.Random(seed)
        i = 0
        while not self.stop_ev.is_set():
            g = self.gws[i % 2]
            key = "load/%d/%d" % (n, i % 25)
            data = rng.randbytes(rng.choice([100, 5000, 200 << 10]))
            r = self.call(g, "PUT", key, data)
            if r.status == 201:
                with self.lock:
                    self.acked[key] = st.sha256(data)
            elif r.status == 503:
                with self.lock:
                    self.acked.pop(key, None)  # old or new: not checked
                time.sleep(0.05)
            with self.lock:
                want = self.acked.get(key)
            r = self.call(self.gws[(i + 1) % 2], "GET", key, None)
            if r.status == 200 and want is not None and st.sha256(r.body) != want:
                with self.lock:
                    self.errors.append("GET %s: not the acknowledged content" % key)
            i += 1

    def __enter__(self):
        for th in self.threads:
            th.start()
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        for th in self.threads:
            th.join(timeout=120)


def read_all(t, c, ten, acked, what):
    for g in (0, 1):
        gw = st.Gateway(c.gw_port_of(g), ten["key"])
        for key, sha in sorted(acked.items()):
            r = st.get_retrying_503(gw, key, 20, what)
            t.status(r, 200, "%s: GET %s through gateway %d" % (what, key, g))
            t.eq(st.sha256(r.body), sha, "%s: SHA-256 of %s through gateway %d" % (what, key, g))


def s3_client(c, g, key):
    import boto3
    return boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % c.s3_port_of(g),
                        aws_access_key_id=key["access_key_id"],
                        aws_secret_access_key=key["secret_access_key"], region_name="us-east-1")


def s3_check(t, c, key, files, what):
    for g in (0, 1):
        s3 = s3_client(c, g, key)
        names = sorted(x["Key"] for x in s3.list_objects_v2(Bucket="moved").get("Contents", []))
        t.eq(names, sorted(files), "%s: S3 listing through gateway %d" % (what, g))
        for name, sha in files.items():
            body = s3.get_object(Bucket="moved", Key=name)["Body"].read()
            t.eq(st.sha256(body), sha, "%s: S3 %s through gateway %d" % (what, name, g))


def move_under_load(t, c, ids, ten, rng, acked, s3key, s3files):
    a_id, b_id = ids
    ga, gb = (st.Gateway(c.gw_port_of(g), ten["key"]) for g in (0, 1))
    t.status(ga.put("del", b"x"), 201, "PUT del")
    t.status(ga.delete("del"), 204, "DELETE del")
    for i in range(20):
        key, data = "obj/%02d" % i, rng.randbytes(rng.choice([10, 3000, 100 << 10, 1 << 20]))
        t.status(ga.put(key, data), 201, "PUT " + key)
        acked[key] = st.sha256(data)
    for i in range(0, 20, 3):  # overwritten: version 2
        key, data = "obj/%02d" % i, rng.randbytes(500)
        t.status(gb.put(key, data), 201, "PUT %s again" % key)
        acked[key] = st.sha256(data)
    base = {g: metric(c, g, "scrub_passes_total") for g in (0, 1)}

    with Load((ga, gb), rng) as load:
        time.sleep(1.5)
        t0 = time.monotonic()
        p = c.shoalctl("tenant", "move", ten["name"], b_id, "--wait", "30", timeout=60)
        took = time.monotonic() - t0
        st.log("shoalctl tenant move: %.1f s: %s" % (took, p.stdout.decode().strip()))
        time.sleep(1.5)
    t.check("moved to" in p.stdout.decode(), "shoalctl says the tenant moved: %r" % p.stdout)
    t.eq(owner(c, ten["id"]), (b_id, ""), "the owner after the move")
    window = (load.last_503 - load.first_503) if load.first_503 else 0.0
    st.log("load: %s, 503s over %.2f s, slowest request %.2f s" % (load.stats, window,
                                                                   load.slowest))
    t.check(not load.errors, "load errors: %d, first %s" % (len(load.errors), load.errors[:3]))
    t.check(load.stats["ok"] > 50, "the load went on: %r" % load.stats)
    t.check(window < 2, "503s over %.2f s" % window)
    t.check(load.slowest < 2, "slowest request %.2f s" % load.slowest)
    t.eq(metric(c, 0, "handover_out_total"), 1, "gateway a handed one tenant out")
    t.eq(metric(c, 1, "handover_in_total"), 1, "gateway b took one tenant in")
    t.eq(metric(c, 0, "handover_frozen_tenants"), 0, "nothing frozen on a after the move")
    acked.update(load.acked)
    read_all(t, c, ten, acked, "after the move")
    s3_check(t, c, s3key, s3files, "after the move")

    r = gb.put("del", b"y")
    t.status(r, 201, "PUT del after the move")
    t.eq(r.header("X-Shoal-Version"), "2", "a deleted key's next version after the move")
    r = gb.put("obj/00", b"z")
    t.eq(r.header("X-Shoal-Version"), "3", "an overwritten key's next version after the move")
    acked["obj/00"] = st.sha256(b"z")
    fb, fa = metric(c, 1, "forwarded_requests_total"), metric(c, 0, "forwarded_requests_total")
    t.status(gb.get("obj/01"), 200, "GET through the new owner")
    t.status(ga.get("obj/01"), 200, "GET through the old owner")
    t.eq(metric(c, 1, "forwarded_requests_total"), fb, "the new owner serves the tenant itself")
    t.check(metric(c, 0, "forwarded_requests_total") > fa, "the old owner forwards to the new")

    st.wait_until(lambda: all(metric(c, g, "scrub_passes_total") >= base[g] + 3 for g in (0, 1)),
                  60, "three more scrub passes on both gateways")
    for g in (0, 1):
        t.eq(metric(c, g, "scrub_deleted_chunks_total"), 0, "gateway %d's scrub deleted nothing" % g)
    read_all(t, c, ten, acked, "after the scrubs")


def crc32c(b):
    crc = 0xFFFFFFFF
    for x in b:
        crc ^= x
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def bundle(tenant, key):
    """A bundle of one version of key (a format-1 record, as the store still reads)."""
    k = key.encode()
    rec = struct.pack("<BBBBIIIQQQQQ", 1, 2, 1, 0, tenant, 4, 1, 77, 9, 8, 0, 7) + \
        struct.pack("<III", 0, 1, 2)
    group = struct.pack("<H", len(k)) + k + struct.pack("<H", len(rec)) + rec
    gkey = struct.pack(">I", tenant) + k
    body = b"SHM1" + struct.pack("<II", tenant, 1) + struct.pack("<BH", 0, len(gkey)) + gkey + \
        struct.pack("<I", len(group)) + group
    return body + struct.pack("<I", crc32c(body))


def refusals(t, c, ids, ten):
    url = "http://127.0.0.1:%d/v1/internal/tenants/%d/handover" % (c.gw_port_of(1), ten["id"])

    def post(body, token, path=url):
        req = urllib.request.Request(path, data=body, method="POST")
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    t.eq(post(b"SHM1", None)[0], 401, "a bundle without the admin token")
    t.eq(post(b"SHM1", "not-the-token")[0], 401, "a bundle with a wrong token")
    status, body = post(os.urandom(300), c.token())
    t.eq(status, 400, "garbage as a bundle")
    t.eq(json.loads(body)["error"], "bad_request", "garbage: the error code")
    other = url.replace("/%d/" % ten["id"], "/%d/" % (ten["id"] + 1000))
    t.eq(post(b"SHM1" + bytes(12), c.token(), other)[0], 400, "an empty bundle of no tenant")
    t.eq(post(bundle(ten["id"] + 1000, "k"), c.token(), other)[0], 204,
         "a well-formed bundle of a tenant the gateway does not own")
    t.eq(post(bundle(ten["id"] + 1000, "k"), c.token())[0], 400, "a bundle of another tenant")
    gb = st.Gateway(c.gw_port_of(1), ten["key"])
    before = gb.get("obj/01")
    t.status(before, 200, "GET obj/01 before a bundle sent again")
    status, body = post(bundle(ten["id"], "obj/01"), c.token())
    t.eq(status, 409, "a bundle to the gateway that owns the tenant: %r" % body)
    r = gb.get("obj/01")
    t.eq(st.sha256(r.body), st.sha256(before.body), "obj/01 not overwritten by it")
    p = c.shoalctl("tenant", "move", ten["name"], "no-such-gateway", check=False)
    t.eq(p.returncode, 1, "a move to an unknown gateway: shoalctl exit code")
    t.eq(owner(c, ten["id"]), (ids[1], ""), "the owner after refused moves")


def crash_through(t, c, ids, ten, acked, other, other_acked):
    a_id, b_id = ids
    gb = st.Gateway(c.gw_port_of(1), ten["key"])
    out0 = metric(c, 1, "handover_out_total")
    c.shoalctl("tenant", "move", ten["name"], a_id)
    c.kill("gateway")
    st.wait_until(lambda: metric(c, 1, "handover_out_total") > out0, 20,
                  "gateway b's records of the tenant out of its store")
    c.kill("gateway-1")
    c.start(only=["gateway-1"])
    r = gb.get("obj/01")
    t.status(r, 503, "GET through b, the tenant frozen in its outbox")
    t.check(r.header("Retry-After") is not None, "503 with Retry-After")
    t.eq(metric(c, 1, "handover_frozen_tenants"), 1, "b restarted with the tenant frozen")
    t.eq(owner(c, ten["id"]), (b_id, a_id), "the owner while a is down")
    passes = metric(c, 1, "scrub_passes_total")
    st.wait_until(lambda: metric(c, 1, "scrub_passes_total") >= passes + 4, 20,
                  "b's scrub passes on with the tenant frozen")
    t0 = time.monotonic()
    c.start(only=["gateway"])
    st.wait_until(lambda: owner(c, ten["id"]) == (a_id, ""), 30, "a owns the tenant")
    st.log("hand-over finished %.1f s after a was back" % (time.monotonic() - t0))
    st.wait_until(lambda: metric(c, 1, "handover_frozen_tenants") == 0, 10,
                  "b thaws the tenant")
    read_all(t, c, ten, acked, "after the crashes")
    read_all(t, c, other, other_acked, "b's own tenant after the crashes")
    for g in (0, 1):
        t.eq(metric(c, g, "scrub_deleted_chunks_total"), 0, "gateway %d's scrub deleted nothing" % g)


def rebalance(t, c, ids, tens, acked_by):
    for i in range(4):  # tenants with one object each and no load
        tn = c.create_tenant("rb%d" % i)
        st.wait_until(lambda: st.Gateway(c.gw_port_of(0), tn["key"]).list(limit=1).status != 401,
                      20, "gateway a knows tenant %s" % tn["name"])
        t.status(st.Gateway(c.gw_port_of(0), tn["key"]).put("one", b"1" * 100), 201, "PUT one")
        acked_by[tn["name"]] = {"one": st.sha256(b"1" * 100)}
        tens.append(tn)
    for tn in tens:
        if owner(c, tn["id"])[0] != ids[0]:
            c.shoalctl("tenant", "move", tn["name"], ids[0], "--wait", "30")
    t.eq([owner(c, tn["id"])[0] for tn in tens], [ids[0]] * len(tens), "every tenant on a")
    plan = json.loads(c.shoalctl("--json", "gateway", "rebalance", "--dry-run").stdout)["moves"]
    t.check(len(plan) >= 1, "the dry run plans moves")
    t.check(all(m["from"] == ids[0] and m["to"] == ids[1] for m in plan),
            "the dry run moves from a to b: %r" % plan)
    t.eq([owner(c, tn["id"])[0] for tn in tens], [ids[0]] * len(tens), "a dry run moves nothing")
    p = c.shoalctl("gateway", "rebalance", "--wait", "30", timeout=120)
    st.log("rebalance: %s" % p.stdout.decode().strip().replace("\n", " | "))
    moved = {m["tenant"] for m in plan}
    t.eq({tn["name"]: owner(c, tn["id"])[0] for tn in tens},
         {tn["name"]: ids[1] if tn["name"] in moved else ids[0] for tn in tens},
         "the owners as the plan said")
    t.check("gateways even" in c.shoalctl("gateway", "rebalance").stdout.decode(),
            "a second rebalance moves nothing")
    for tn in tens:
        read_all(t, c, tn, acked_by.get(tn["name"], {}), "after the rebalance")


def main(t):
    c = t.cluster(nodes=4, gateways=2, gateway_args="--scrub-interval-ms %d" % SCRUB_MS)
    ids = tuple("127.0.0.1:%d" % c.gw_port_of(g) for g in (0, 1))
    st.wait_until(lambda: len(state(c).get("gateways", [])) == 2, 20, "both gateways known")
    ten = other = None
    made = []
    for i in range(8):
        cand = c.create_tenant("mv%d" % i)
        made.append(cand)
        if owner(c, cand["id"])[0] == ids[0]:
            ten = ten or cand
        else:
            other = other or cand
        if ten and other:
            break
    t.check(ten is not None and other is not None, "a tenant owned by each gateway")
    for g in (0, 1):
        for tn in (ten, other):
            st.wait_until(lambda: st.Gateway(c.gw_port_of(g), tn["key"]).list(limit=1).status
                          != 401, 20, "gateway %d knows tenant %s" % (g, tn["name"]))
    rng, acked, other_acked = random.Random(5), {}, {}
    go = st.Gateway(c.gw_port_of(1), other["key"])
    for i in range(150):
        key, data = "own/%03d" % i, rng.randbytes(100 << 10)
        t.status(go.put(key, data), 201, "PUT %s of b's own tenant" % key)
        other_acked[key] = st.sha256(data)
    s3key = json.loads(c.shoalctl("--json", "tenant", "s3-key", "create", ten["name"]).stdout)
    s3 = s3_client(c, 0, s3key)
    s3.create_bucket(Bucket="moved")
    small = rng.randbytes(2000)
    s3.put_object(Bucket="moved", Key="small.txt", Body=small)
    from boto3.s3.transfer import TransferConfig
    path = os.path.join(t.tmp, "mpu.bin")
    s3files = {"small.txt": st.sha256(small),
               "big.bin": st.write_random_file(path, 11 << 20, seed=4)}
    s3.upload_file(path, "moved", "big.bin",
                   Config=TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20))

    t.section(move_under_load, c, ids, ten, rng, acked, s3key, s3files)
    t.section(refusals, c, ids, ten)
    t.section(crash_through, c, ids, ten, acked, other, other_acked)
    t.section(rebalance, c, ids, [tn for tn in made if tn is not None],
              {ten["name"]: acked, other["name"]: other_acked})
    s3_check(t, c, s3key, s3files, "at the end")


if __name__ == "__main__":
    st.run(main)
