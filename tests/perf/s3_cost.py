#!/usr/bin/python3
"""perf.gateway.s3_cost: what the S3 front door costs a GET 1 KiB, against
the tenant API's GET of the same object, on one cluster, loopback only.

    s3_cost.py --build BUILD --src SRC [--runs 3] [--duration 10] [--conc 16]
               [--threads 2] [--strict]

One 1 KiB object, written once; wrk GETs it for --duration seconds through
the tenant API (Authorization: Bearer) and then through the S3 API (a
presigned SigV4 URL: the gateway verifies the signature on every request,
as it does for a signed header), native and S3 alternating, --runs times
each. Prints every run, the medians and the ratio S3 / native; with
--strict exits 1 when S3 keeps less than 90% of the native throughput.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import shoaltest as st  # noqa: E402


def wrk(url, seconds, conc, threads, headers=()):
    cmd = ["wrk", "-t", str(threads), "-c", str(conc), "-d", "%ds" % seconds, "--latency"]
    for h in headers:
        cmd += ["-H", h]
    p = subprocess.run(cmd + [url], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=seconds + 60)
    text = p.stdout.decode(errors="replace")
    m = re.search(r"Requests/sec:\s+([0-9.]+)", text)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    if p.returncode != 0 or m is None or bad is not None:
        raise RuntimeError("wrk failed:\n" + text)
    p50 = re.search(r"50%\s+([0-9.]+)(us|ms|s)", text)
    return float(m.group(1)), (p50.group(1) + p50.group(2)) if p50 else "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--conc", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--strict", action="store_true")
    a = ap.parse_args()

    import boto3
    from botocore.config import Config

    tmp = tempfile.mkdtemp(prefix="shoal-s3cost-")
    t = st.Test(argparse.Namespace(build=a.build, src=a.src))
    c = st.Cluster(t, nodes=4, controller_args="--ec-k 2 --ec-m 1", name="s3cost")
    t.clusters.append(c)
    code = 1
    try:
        c.start()
        c.wait_nodes_up()
        ten = c.create_tenant("cost")
        key = json.loads(c.shoalctl("--json", "tenant", "s3-key", "create", "cost").stdout)
        s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % c.s3_port,
                          aws_access_key_id=key["access_key_id"],
                          aws_secret_access_key=key["secret_access_key"],
                          region_name="us-east-1", config=Config(signature_version="s3v4"))
        s3.create_bucket(Bucket="cost")
        body = os.urandom(1024)
        r = c.gw(ten).put("cost/obj-1k", body)
        if r.status != 201:
            raise RuntimeError("native PUT: %r" % r)
        native = "http://127.0.0.1:%d/v1/objects/cost/obj-1k" % c.gw_port
        auth = "Authorization: Bearer " + ten["key"]
        presigned = s3.generate_presigned_url("get_object", Params={"Bucket": "cost",
                                                                    "Key": "obj-1k"},
                                              ExpiresIn=604800)
        got = urllib.request.urlopen(presigned).read()
        if got != body:
            raise RuntimeError("the presigned GET does not return the object")
        print("wrk -t %d -c %d -d %ds --latency -H '%s' %s" % (a.threads, a.conc, a.duration,
                                                             "Authorization: Bearer <key>",
                                                             native))
        print("wrk -t %d -c %d -d %ds --latency '%s'" % (a.threads, a.conc, a.duration,
                                                        presigned.split("?")[0] + "?X-Amz-..."))
        wrk(native, 2, a.conc, a.threads, [auth])  # warm both paths
        wrk(presigned, 2, a.conc, a.threads)
        res = {"native": [], "s3": []}
        for i in range(a.runs):
            for name, url, hdrs in (("native", native, [auth]), ("s3", presigned, [])):
                rps, p50 = wrk(url, a.duration, a.conc, a.threads, hdrs)
                res[name].append(rps)
                print("run %d %-6s %9.0f req/s  p50 %s" % (i + 1, name, rps, p50), flush=True)
        mn, ms = statistics.median(res["native"]), statistics.median(res["s3"])
        ratio = ms / mn
        print("median native %.0f req/s, S3 %.0f req/s: S3/native %.3f (the front door costs "
              "%.1f%% of the throughput)" % (mn, ms, ratio, 100 * (1 - ratio)))
        code = 0 if ratio >= 0.9 or not a.strict else 1
    finally:
        c.cleanup(code != 0)
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
