#!/usr/bin/python3
"""perf.gateway.s3_cost: what the S3 front door costs a GET 1 KiB, against
the tenant API's GET of the same object, on one cluster, loopback only.

    s3_cost.py --build BUILD --src SRC [--runs 3] [--duration 10] [--conc 16]
               [--threads 2] [--strict]

One 1 KiB object, written once; wrk GETs it for --duration seconds through
the tenant API (Authorization: Bearer), then through the S3 API with a
presigned SigV4 URL, then with a SigV4 Authorization header (signed once
and replayed, as a SigV4 signature may be within its 15 minutes): the
gateway verifies the signature on every request either way. The three
alternate, --runs times each. Prints every run, the medians and the ratios
S3 / native; with --strict exits 1 when either S3 form keeps less than 90%
of the native throughput.
"""
import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import shoaltest as st  # noqa: E402


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def wrk(url, seconds, conc, threads, headers=(), gw_pid=None, pids=()):
    """Requests/s, p50, the gateway's CPU time per request in us, and the
    CPU time per request of everything that serves it: the gateway, the
    nodes and wrk itself."""
    cmd = ["wrk", "-t", str(threads), "-c", str(conc), "-d", "%ds" % seconds, "--latency"]
    for h in headers:
        cmd += ["-H", h]
    c0 = cpu_ticks(gw_pid) if gw_pid else 0
    a0 = sum(cpu_ticks(p) for p in pids)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd + [url], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=seconds + 60)
    c1 = cpu_ticks(gw_pid) if gw_pid else 0
    a1 = sum(cpu_ticks(p) for p in pids)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = p.stdout.decode(errors="replace")
    m = re.search(r"Requests/sec:\s+([0-9.]+)", text)
    n = re.search(r"(\d+) requests in", text)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    if p.returncode != 0 or m is None or n is None or bad is not None:
        raise RuntimeError("wrk failed:\n" + text)
    p50 = re.search(r"50%\s+([0-9.]+)(us|ms|s)", text)
    tck = os.sysconf("SC_CLK_TCK")
    us = (c1 - c0) * 1e6 / tck / float(n.group(1))
    wrk_s = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    all_us = ((a1 - a0) / tck + wrk_s) * 1e6 / float(n.group(1))
    return float(m.group(1)), (p50.group(1) + p50.group(2)) if p50 else "?", us, all_us


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
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        s3url = "http://127.0.0.1:%d/cost/obj-1k" % c.s3_port
        req = AWSRequest(method="GET", url=s3url)
        S3SigV4Auth(Credentials(key["access_key_id"], key["secret_access_key"]), "s3",
                    "us-east-1").add_auth(req)
        signed = ["%s: %s" % (k, v) for k, v in req.headers.items()]
        print("wrk -t %d -c %d -d %ds --latency -H '%s' %s" % (a.threads, a.conc, a.duration,
                                                             "Authorization: Bearer <key>",
                                                             native))
        print("wrk -t %d -c %d -d %ds --latency '%s'" % (a.threads, a.conc, a.duration,
                                                        presigned.split("?")[0] + "?X-Amz-..."))
        print("wrk -t %d -c %d -d %ds --latency -H 'Authorization: AWS4-HMAC-SHA256 ...' "
              "-H 'X-Amz-Date: ...' -H 'X-Amz-Content-SHA256: ...' %s" % (
                  a.threads, a.conc, a.duration, s3url))
        modes = (("native", native, [auth]), ("s3-presigned", presigned, []),
                 ("s3-header", s3url, signed))
        gw_pid = c.pid("gateway")
        pids = [gw_pid] + [c.pid("fnstore-%d" % i) for i in range(c.nodes)]
        for name, url, hdrs in modes:  # warm every path
            wrk(url, 2, a.conc, a.threads, hdrs)
        res = dict((m[0], []) for m in modes)
        cpu = dict((m[0], []) for m in modes)
        tot = dict((m[0], []) for m in modes)
        for i in range(a.runs):
            for name, url, hdrs in modes:
                rps, p50, us, all_us = wrk(url, a.duration, a.conc, a.threads, hdrs, gw_pid, pids)
                res[name].append(rps)
                cpu[name].append(us)
                tot[name].append(all_us)
                print("run %d %-12s %9.0f req/s  p50 %-9s CPU per request: gateway %5.1f us, "
                      "with nodes and wrk %5.1f us" % (i + 1, name, rps, p50, us, all_us),
                      flush=True)
        mn, cn = statistics.median(res["native"]), statistics.median(cpu["native"])
        tn = statistics.median(tot["native"])
        worst = 1.0
        for name in ("s3-presigned", "s3-header"):
            ms, cs = statistics.median(res[name]), statistics.median(cpu[name])
            ts = statistics.median(tot[name])
            ratio = ms / mn
            worst = min(worst, ratio)
            print("median native %.0f req/s, %s %.0f req/s: ratio %.3f (the front door costs "
                  "%.1f%% of the throughput); CPU per request: gateway %.1f us vs %.1f us, "
                  "with nodes and wrk %.1f us vs %.1f us: CPU-bound, S3 would keep %.3f of the "
                  "throughput" % (mn, name, ms, ratio, 100 * (1 - ratio), cs, cn, ts, tn,
                                 tn / ts))
        code = 0 if worst >= 0.9 or not a.strict else 1
    finally:
        c.cleanup(code != 0)
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
