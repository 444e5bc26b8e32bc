#!/usr/bin/python3
"""perf.gateway.forward: what a request costs when it goes through a gateway
that does not own its tenant, beside what a hop through nginx as a reverse
proxy costs nginx.

    forward_cost.py --build BUILD [--runs 3] [--duration 4] [--cases ...]

A 6-node cluster with two gateways: the cluster's (a) and a second (b), each
owning one tenant. The tenant a owns is loaded, then each case runs with
shoal-bench against a (direct) and against b (forwarded to a), alternated,
--runs times: the rate, and the CPU time of every process per request.
The GET cases run the same way against nginx serving a file of that size
(direct) and against a second nginx that proxies to it over kept-alive
connections (forwarded); each nginx has two workers.
Prints every run, then per case the medians and forwarded / direct.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab  # noqa: E402

CLUSTER = ab.CLUSTER
OFFSET = 21500
B_PORT, B_S3 = 9320 + OFFSET, 9330 + OFFSET
CASES = {
    "get-1k-16": "size=1KiB,read=1,conc=16,keys=1000",
    "get-1k-64": "size=1KiB,read=1,conc=64,keys=1000",
    "put-1k-16": "size=1KiB,read=0,conc=16,keys=1000",
    "get-10m-4": "size=10MiB,read=1,conc=4,keys=16",
}


NGINX_CONF = """daemon off;
worker_processes 2;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    keepalive_requests 100000000;
    client_body_temp_path %(d)s/body;
    proxy_temp_path %(d)s/proxy;
    fastcgi_temp_path %(d)s/fastcgi;
    uwsgi_temp_path %(d)s/uwsgi;
    scgi_temp_path %(d)s/scgi;
    upstream origin { server 127.0.0.1:%(origin)d; keepalive 64; }
    server {
        listen 127.0.0.1:%(port)d;
        %(what)s
    }
}
"""


def nginx(d, port, what, origin=0):
    os.makedirs(d)
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(NGINX_CONF % {"d": d, "port": port, "origin": origin or port, "what": what})
    p = subprocess.Popen(["/usr/sbin/nginx", "-p", d, "-c", os.path.join(d, "nginx.conf"),
                          "-e", os.path.join(d, "error.log")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    return p


def state(build, d):
    out = subprocess.run(["curl", "-sf", "-H", "Authorization: Bearer " + open(
        os.path.join(d, "admin.token")).read().strip(),
        "http://127.0.0.1:%d/v1/internal/state" % (9400 + OFFSET)],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=4)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--gateway-args", default="", help="extra flags for both gateways")
    o = ap.parse_args()
    build = os.path.abspath(o.build)
    d = tempfile.mkdtemp(prefix="shoal-fwd-")
    b = None
    ngx = []
    got = {}
    try:
        subprocess.run([CLUSTER, "start", "--dir", d, "--build", build, "--port-offset",
                        str(OFFSET), "--gateway-args", o.gateway_args], check=True,
                       capture_output=True)
        os.makedirs(os.path.join(d, "gateway-b"))
        b = subprocess.Popen([os.path.join(build, "gateway", "shoal-gateway"), "--listen",
                              "127.0.0.1:%d" % B_PORT, "--s3-listen", "127.0.0.1:%d" % B_S3,
                              "--controller", "127.0.0.1:%d" % (9400 + OFFSET),
                              "--admin-token-file", os.path.join(d, "admin.token"),
                              "--data-dir", os.path.join(d, "gateway-b")] + o.gateway_args.split(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 30
        while len(state(build, d).get("gateways", [])) < 2:
            if time.monotonic() > end:
                raise RuntimeError("the second gateway did not register")
            time.sleep(0.2)
        keys = {}
        for name in ("fa", "fb"):
            out = subprocess.run([os.path.join(build, "controller", "shoalctl"), "--controller",
                                  "http://127.0.0.1:%d" % (9400 + OFFSET), "--token-file",
                                  os.path.join(d, "admin.token"), "--json", "tenant", "create",
                                  name], check=True, capture_output=True, text=True).stdout
            keys[name] = json.loads(out)
        a_id = "127.0.0.1:%d" % (9300 + OFFSET)
        owner = {t["name"]: t["gateway"] for t in state(build, d)["tenants"]}
        ten = [n for n in keys if owner[n] == a_id][0]
        key = keys[ten]["key"]
        time.sleep(1.5)  # both gateways learn the tenants
        pids = {b.pid: "gateway"}
        for p in os.listdir(os.path.join(d, "pids")):
            with open(os.path.join(d, "pids", p)) as f:
                pids[int(f.read())] = "gateway" if p.startswith("gateway") else "nodes"

        def bench(port, spec, load=False):
            cmd = [os.path.join(build, "bench", "shoal-bench"), "--gateway",
                   "http://127.0.0.1:%d" % port, "--tenant", "name=%s,key=%s,%s" % (ten, key, spec),
                   "--threads", "2", "--json"]
            cmd += ["--load", "--warmup", "0", "--duration", "1"] if load else [
                "--warmup", "1", "--duration", str(o.duration)]
            return json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                             text=True).stdout)["tenants"][0]

        www = os.path.join(d, "www")
        os.makedirs(www)
        os.chmod(d, 0o755)  # nginx's workers run as nobody when started by root
        os.chmod(www, 0o755)
        for name, size in (("1k", 1024), ("10m", 10 << 20)):
            with open(os.path.join(www, name), "wb") as f:
                f.write(os.urandom(size))
            os.chmod(os.path.join(www, name), 0o644)
        n_origin, n_proxy = B_PORT + 50, B_PORT + 51
        ngx.append(nginx(os.path.join(d, "ngx-origin"), n_origin, "root %s;" % www))
        ngx.append(nginx(os.path.join(d, "ngx-proxy"), n_proxy,
                         "location / { proxy_pass http://origin; proxy_http_version 1.1; "
                         "proxy_set_header Connection \"\"; proxy_buffering off; }",
                         origin=n_origin))
        npids = {}
        for p in ngx:  # the masters and their workers
            npids[p.pid] = "nodes"
            for line in subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True,
                                       text=True).stdout.split():
                npids[int(line)] = "nodes"

        def measure(case, side, i, cpu_pids, fn):
            c0 = sum(ab.cpu_seconds(cpu_pids).values())
            r = fn()
            c1 = sum(ab.cpu_seconds(cpu_pids).values())
            if r.get("errors", 0) or r["ops"] == 0:
                raise RuntimeError("%s %s: %d errors (%s)" % (case, side, r.get("errors", 0),
                                                              r.get("status")))
            run = {"rate": r["ops_per_s"], "mb_s": r.get("mb_per_s", 0),
                   "cpu_us": 1e6 * (c1 - c0) / max(1, r["ops"]), "errors": r.get("errors", 0)}
            got.setdefault(case, {}).setdefault(side, []).append(run)
            print("%s %s run %d: %s" % (case, side, i + 1, json.dumps(run)), file=sys.stderr,
                  flush=True)

        def url_bench(port, name, conc):
            cmd = [os.path.join(build, "bench", "shoal-bench"), "--url",
                   "http://127.0.0.1:%d/%s" % (port, name), "--conc", str(conc), "--threads", "2",
                   "--json", "--warmup", "1", "--duration", str(o.duration)]
            return json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                             text=True).stdout)["tenants"][0]

        for case in o.cases.split(","):
            spec = CASES[case]
            bench(9300 + OFFSET, spec, load=True)
            for i in range(o.runs):
                for side, port in (("direct", 9300 + OFFSET), ("forwarded", B_PORT)):
                    measure(case, side, i, pids, lambda: bench(port, spec))
                if case.startswith("get"):
                    name, conc = case.split("-")[1], int(case.split("-")[2])
                    for side, port in (("nginx direct", n_origin), ("nginx proxied", n_proxy)):
                        measure(case, side, i, npids, lambda: url_bench(port, name, conc))
    finally:
        for p in ngx:
            p.terminate()
            p.wait(30)
        if b is not None:
            b.terminate()
            b.wait(30)
        subprocess.run([CLUSTER, "stop", "--dir", d], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)

    res = {}
    for case, sides in got.items():
        m = {side: {k: statistics.median(x[k] for x in runs) for k in runs[0]}
             for side, runs in sides.items()}
        m["rate_ratio"] = m["forwarded"]["rate"] / m["direct"]["rate"]
        m["cpu_ratio"] = m["forwarded"]["cpu_us"] / m["direct"]["cpu_us"]
        if "nginx direct" in m:
            m["nginx_rate_ratio"] = m["nginx proxied"]["rate"] / m["nginx direct"]["rate"]
            m["nginx_cpu_ratio"] = m["nginx proxied"]["cpu_us"] / m["nginx direct"]["cpu_us"]
        res[case] = m
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
