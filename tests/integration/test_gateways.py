#!/usr/bin/python3
"""integ.gateways: two gateways share the cluster; each owns some tenants and
sends the requests for the others' tenants on to their owner.

1. Tenants created with both gateways up are spread over them (the
   controller's state names each tenant's owner), and a tenant's objects
   written through either gateway read back, whole and with their checksums,
   through both: PUT, GET (with a Range), HEAD, LIST, DELETE, and over S3
   (boto3: a bucket, a multipart upload, a listing) through the gateway that
   does not own the access key's tenant.
2. Both gateways run the orphan scrub every 400 ms: after several passes
   neither has deleted a chunk nor refused a node (each judges only its own
   tenants' chunks), and every object still reads back.
3. Large answers through the other gateway wait for their share of its
   --inflight-bytes, as its own GETs do: under 32 concurrent GETs of 10 MiB
   forwarded, its peak RSS stays under its idle RSS + --buffer-cache +
   2 x --inflight-bytes, and every GET is answered whole or 503.
4. The owner killed -9: its tenants' requests through the other gateway get
   503 with Retry-After, the other tenants' are served as before; restarted
   on its store, its objects read back through both gateways. A request that
   says it was forwarded already is never sent on again (503).
5. The owner restarted on other ports, without --gateway-id: its id stays
   with its store (DIR/gateway-id), so it still owns its tenants and the
   other gateway sends their requests to its new address.
6. The owner's metadata store lost: --rebuild-meta brings back its
   tenants' objects from the nodes' logs, and leaves the other gateway's
   tenants' records alone.
"""
import json
import os
import random
import re
import shutil
import subprocess
import time

import shoaltest as st

SCRUB_MS = 400
CACHE = 64 << 20
BOUND = 32 << 20  # gateway b's --inflight-bytes in section 3, half of a's (the default)


def owners(c):
    """tenant id -> owner gateway id, and the gateways, from the controller's state."""
    r = c.admin("GET", "/v1/internal/state")
    if r.status != 200:
        raise st.TestFailure("internal state: %r" % r)
    j = r.json()
    return {t["id"]: t.get("gateway", "") for t in j["tenants"]}, j.get("gateways", [])


def metric(m, name):
    return m.get("shoal_gateway_" + name, 0)


def both_ways(t, c, ten, rng, acked):
    """Objects of ten written through both gateways read back through both."""
    ga, gb = st.Gateway(c.gw_port_of(0), ten["key"]), st.Gateway(c.gw_port_of(1), ten["key"])
    for i in range(12):
        key, data = "k/%02d" % i, rng.randbytes(rng.choice([1, 700, 40000, 300 << 10, 2 << 20]))
        w = ga if i % 2 == 0 else gb
        t.status(w.put(key, data), 201, "PUT %s through gateway %s" % (key, "ab"[i % 2]))
        acked[(ten["id"], key)] = (ten["key"], st.sha256(data), len(data))
    for (tid, key), (_, sha, size) in acked.items():
        if tid != ten["id"]:
            continue
        for name, g in (("a", ga), ("b", gb)):
            r = g.get(key)
            t.status(r, 200, "GET %s through gateway %s" % (key, name))
            t.eq(st.sha256(r.body), sha, "SHA-256 of %s through gateway %s" % (key, name))
            h = g.head(key)
            t.eq(h.header("Content-Length"), str(size), "HEAD %s Content-Length via %s" % (key, name))
            t.eq(h.header("ETag"), r.header("ETag"), "HEAD and GET ETags of %s via %s" % (key, name))
            t.check(h.header("X-Request-Id") is not None, "X-Request-Id on HEAD via %s" % name)
    big = [k for (tid, k), v in acked.items() if tid == ten["id"] and v[2] > 1000][0]
    r = gb.get(big, headers={"Range": "bytes=100-199"})
    t.status(r, 206, "ranged GET through gateway b")
    t.eq(len(r.body), 100, "ranged GET length")
    la = sorted(o["key"] for o in ga.list_all())
    lb = sorted(o["key"] for o in gb.list_all())
    t.eq(la, lb, "LIST through both gateways")
    t.eq(len(la), 12, "LIST sees the 12 objects")
    t.status(gb.delete("k/00"), 204, "DELETE through gateway b")
    t.status(ga.get("k/00"), 404, "GET of the deleted key through gateway a")
    t.status(gb.delete("k/00"), 404, "DELETE of the deleted key through gateway b")
    del acked[(ten["id"], "k/00")]


def s3_through(t, c, ten_owner, port, rng):
    import boto3
    from boto3.s3.transfer import TransferConfig
    key = json.loads(c.shoalctl("--json", "tenant", "s3-key", "create", ten_owner).stdout)
    s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % port,
                      aws_access_key_id=key["access_key_id"],
                      aws_secret_access_key=key["secret_access_key"], region_name="us-east-1")
    s3.create_bucket(Bucket="fwd")
    small = rng.randbytes(3000)
    s3.put_object(Bucket="fwd", Key="small.txt", Body=small, ContentType="text/plain")
    o = s3.get_object(Bucket="fwd", Key="small.txt")
    t.eq(o["Body"].read(), small, "S3 GetObject body through the other gateway")
    t.eq(o["ContentType"], "text/plain", "S3 Content-Type kept through the other gateway")
    path = os.path.join(t.tmp, "mpu.bin")
    sha = st.write_random_file(path, 13 << 20, seed=3)
    cfg = TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20)
    s3.upload_file(path, "fwd", "big.bin", Config=cfg)
    out = os.path.join(t.tmp, "mpu.out")
    s3.download_file("fwd", "big.bin", out)
    t.eq(st.sha256_file(out), sha, "S3 multipart upload read back through the other gateway")
    keys = sorted(x["Key"] for x in s3.list_objects_v2(Bucket="fwd").get("Contents", []))
    t.eq(keys, ["big.bin", "small.txt"], "S3 ListObjectsV2 through the other gateway")
    t.eq(s3.head_object(Bucket="fwd", Key="big.bin")["ContentLength"], 13 << 20, "S3 HeadObject")
    s3.delete_object(Bucket="fwd", Key="small.txt")
    try:
        s3.head_object(Bucket="fwd", Key="small.txt")
        t.check(False, "S3 HeadObject of a deleted key answers 404")
    except s3.exceptions.ClientError as e:
        t.eq(e.response["ResponseMetadata"]["HTTPStatusCode"], 404, "S3 HeadObject of a deleted key")


def big_gets_forwarded(t, c, ten):
    """32 concurrent GETs of 10 MiB of ten (owned by gateway a) through gateway b,
    restarted with half a's --inflight-bytes: a then has more answers out at
    once than b admits, so b's bound is the one that holds (with the same bound
    on both, which one holds depends on how fast each side drains)."""
    c.stop(only=["gateway-1"])
    c.cluster_cmd("start", "--only", "gateway-1", "--gateway-args",
                  "%s --inflight-bytes %d" % (c.gateway_args, BOUND))
    t.status(st.Gateway(c.gw_port_of(0), ten["key"]).put("big/0", os.urandom(10 << 20)), 201,
             "PUT 10 MiB")
    pid = c.pid("gateway-1")
    idle = st.vm(pid, "VmRSS")
    out = subprocess.run([t.binary("shoal-bench"), "--gateway",
                          "http://127.0.0.1:%d" % c.gw_port_of(1), "--tenant",
                          "name=big,key=%s,conc=32,keys=1,size=10MiB,read=1,zipf=0" % ten["key"],
                          "--duration", "4", "--warmup", "1", "--json", "--threads", "2",
                          "--prefix", "big/", "--log-level", "warn"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    t.eq(out.returncode, 0, "shoal-bench exit (stderr %r)" % out.stderr[-300:])
    r = json.loads(out.stdout)["tenants"][0]
    peak, limit = st.vm(pid, "VmHWM"), idle + CACHE + 2 * BOUND
    st.log("32 x GET 10 MiB through gateway b: %.0f MB/s, statuses %s; RSS idle %d MiB, peak %d "
           "MiB (limit %d MiB)" % (r["mb_per_s"], r["status"], idle >> 20, peak >> 20,
                                   limit >> 20))
    t.check(r["ops"] > 0, "forwarded GETs of 10 MiB answered")
    t.check(set(r["status"]) <= {"200", "503"}, "only 200 or 503: %r" % r["status"])
    t.check(peak < limit, "gateway b's peak RSS %d MiB over %d MiB" % (peak >> 20, limit >> 20))
    deadline = time.monotonic() + 15
    while True:
        m = c.gw_metrics(1)
        if m.get("shoal_gateway_admit_inflight_bytes") == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    t.check(m.get("shoal_gateway_admit_waited_total", 0) > 0, "forwarded GETs waited for admission")
    t.eq(m.get("shoal_gateway_admit_inflight_bytes"), 0, "bytes in flight at b after the run")


def check_all(t, c, acked, what):
    for (tid, key), (tkey, sha, _) in acked.items():
        for name, port in (("a", c.gw_port_of(0)), ("b", c.gw_port_of(1))):
            r = st.Gateway(port, tkey).get(key)
            t.status(r, 200, "%s: GET %s/%s via %s" % (what, tid, key, name))
            t.eq(st.sha256(r.body), sha, "%s: SHA-256 of %s/%s via %s" % (what, tid, key, name))


def main(t):
    c = t.cluster(nodes=4, gateways=2,
                  gateway_args="--scrub-interval-ms %d --buffer-cache %d" % (SCRUB_MS, CACHE))
    a_id, b_id = ("127.0.0.1:%d" % c.gw_port_of(g) for g in (0, 1))
    st.wait_until(lambda: len(owners(c)[1]) == 2, 20, "the controller knows both gateways")

    # --- 1: tenants spread over the gateways, served through both -----------
    tens = [c.create_tenant("gw%d" % i) for i in range(4)]
    own, gws = owners(c)
    t.eq(sorted(g["id"] for g in gws), sorted([a_id, b_id]), "the controller's gateways")
    t.check(all(g["up"] for g in gws), "both gateways up: %r" % gws)
    by = {tn["id"]: own[tn["id"]] for tn in tens}
    t.eq(sorted(by.values()), sorted([a_id, a_id, b_id, b_id]),
         "two tenants owned by each gateway: %r" % by)
    for tn in tens:
        st.wait_until(lambda: st.Gateway(c.gw_port_of(1), tn["key"]).list(limit=1).status != 401,
                      20, "gateway b knows tenant %s" % tn["name"])
    rng, acked = random.Random(11), {}
    for tn in tens:
        both_ways(t, c, tn, rng, acked)
    t.check(metric(c.gw_metrics(0), "forwarded_requests_total") > 0, "gateway a forwarded requests")
    t.check(metric(c.gw_metrics(1), "forwarded_requests_total") > 0, "gateway b forwarded requests")
    b_ten = [tn for tn in tens if by[tn["id"]] == b_id]
    a_ten = [tn for tn in tens if by[tn["id"]] == a_id]
    s3_through(t, c, b_ten[0]["name"], c.s3_port_of(0), rng)
    s3_through(t, c, a_ten[0]["name"], c.s3_port_of(1), rng)

    # --- 2: the scrubs leave each other's tenants alone ------------------------
    def passes(g):
        return metric(c.gw_metrics(g), "scrub_passes_total")

    base = (passes(0), passes(1))
    st.wait_until(lambda: passes(0) >= base[0] + 3 and passes(1) >= base[1] + 3, 60,
                  "three more scrub passes on both gateways")
    for g, name in ((0, "a"), (1, "b")):
        m = c.gw_metrics(g)
        t.eq(metric(m, "scrub_deleted_chunks_total"), 0, "gateway %s's scrub deleted nothing" % name)
        t.eq(metric(m, "scrub_refused_total"), 0, "gateway %s's scrub refused no node" % name)
        t.check(metric(m, "scrub_listed_chunks") > 0, "gateway %s's scrub listed its chunks" % name)
    check_all(t, c, acked, "after the scrubs")

    # --- 3: large answers through the other gateway stay under its bound -------
    big_gets_forwarded(t, c, a_ten[0])

    # --- 4: the owner down, then back ------------------------------------------
    c.kill("gateway-1")
    r = st.Gateway(c.gw_port_of(0), b_ten[0]["key"]).get("k/01")
    t.status(r, 503, "GET of the dead gateway's tenant through gateway a")
    t.check(r.header("Retry-After") is not None, "503 with Retry-After")
    for (tid, key), (tkey, sha, _) in acked.items():
        if tid == a_ten[0]["id"]:
            t.eq(st.sha256(st.Gateway(c.gw_port_of(0), tkey).get(key).body), sha,
                 "gateway a's own tenant served with gateway b down")
    c.start(only=["gateway-1"])
    check_all(t, c, acked, "after gateway b restarted")
    r = st.Gateway(c.gw_port_of(0), b_ten[0]["key"]).get("k/01",
                                                          headers={"X-Shoal-Forwarded-By": "x"})
    t.status(r, 503, "a request already forwarded is not sent on again")

    # --- 5: the owner moved to other ports keeps its tenants -------------------
    c.stop(only=["gateway-1"])
    port, s3 = st.free_port(), st.free_port()
    log = open(os.path.join(c.dir, "logs", "gateway-1-moved.log"), "ab")
    p = subprocess.Popen([t.binary("shoal-gateway"), "--listen", "127.0.0.1:%d" % port,
                          "--s3-listen", "127.0.0.1:%d" % s3,
                          "--controller", "127.0.0.1:%d" % c.ctl_port,
                          "--admin-token-file", os.path.join(c.dir, "admin.token"),
                          "--data-dir", os.path.join(c.dir, "gateway-1")] + st.GATEWAY_ARGS.split(),
                         stdout=log, stderr=subprocess.STDOUT)
    t.after_clusters.append(lambda: p.poll() is None and st.stop_process(p))
    def healthy():
        try:
            return st.http_request(port, "GET", "/healthz", timeout=2).status == 200
        except OSError:
            return False

    try:
        st.wait_until(healthy, 30, "gateway b healthy at its new port")
        st.wait_until(lambda: any(g["id"] == b_id and g["url"] == "http://127.0.0.1:%d" % port
                                  for g in owners(c)[1]), 20, "gateway b registered at its new URL")
        t.eq(owners(c)[0][b_ten[0]["id"]], b_id, "gateway b still owns its tenant")
        for (tid, key), (tkey, sha, _) in acked.items():
            if tid == b_ten[0]["id"]:
                for name, gport in (("a", c.gw_port_of(0)), ("b at its new port", port)):
                    got = st.get_retrying_503(st.Gateway(gport, tkey), key, within=10)
                    t.eq(st.sha256(got.body), sha, "%s via %s after the move" % (key, name))
    finally:
        st.stop_process(p)

    # --- 6: the owner's store lost and rebuilt from the nodes' logs ------------
    for g in (0, 1):
        if g == 1:
            c.start(only=["gateway-1"])
        st.wait_until(lambda: c.gw_metrics(g).get("shoal_gateway_meta_waiting", -1) == 0 and
                      c.gw_metrics(g).get("shoal_gateway_buffered_objects", -1) == 0, 30,
                      "every META record of gateway %d logged" % g)
    c.stop(only=["gateway-1"])
    shutil.rmtree(os.path.join(c.dir, "gateway-1", "meta"))
    c.cluster_cmd("start", "--only", "gateway-1", "--gateway-args",
                  "--rebuild-meta --cos %s" % os.path.join(c.dir, "cos"))
    with open(os.path.join(c.dir, "logs", "gateway-1.log"), errors="replace") as f:
        done = [ln for ln in f if "rebuild-meta done" in ln]
    t.check(done, "gateway b logged its rebuild")
    m = re.search(r"other_gateways_records=(\d+)", done[-1] if done else "")
    t.check(m and int(m.group(1)) > 0, "the other gateway's records left alone: %r" % done[-1:])
    check_all(t, c, acked, "after gateway b's store was rebuilt")
    st.log("ok: %d objects over %d tenants, served through both gateways" % (len(acked), len(tens)))


if __name__ == "__main__":
    st.run(main)
