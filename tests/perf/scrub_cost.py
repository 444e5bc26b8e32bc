#!/usr/bin/python3
"""perf.gateway.scrub: what the orphan scrub costs, on one loaded cluster.

    scrub_cost.py --build BUILD [--keys 50000] [--runs 3] [--duration 5]
                  [--interval-ms 1000] [--out FILE]

A 6-node cluster holds --keys objects of 1 KiB (three copies each). The
gateway is restarted alternately without the scrub and with a pass every
--interval-ms, A B A B ...; each time, once the scrub (if on) has ended a
pass:

  - idle: the CPU time of every process over --duration seconds, no load;
  - loaded: GET 1 KiB over all the keys (shoal-bench, 16 connections) for
    --duration seconds: the rate, and the CPU time of every process per
    request.

Prints every run, then the medians: the scrub's CPU per pass (idle CPU with
it, less without, over the passes ended), its pass time and chunk records
listed (shoal_gateway_scrub_pass_seconds, _listed_chunks), and the GET rate
and CPU per request with / without.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab  # noqa: E402

CLUSTER = ab.CLUSTER
OFFSET = 21300


def cpu(d):
    """utime + stime, in seconds, of every process of the cluster in d."""
    pids = []
    for p in glob.glob(os.path.join(d, "pids", "*.pid")):
        with open(p) as f:
            pids.append(int(f.read()))
    return sum(ab.cpu_seconds({pid: "nodes" for pid in pids}).values())


def scrub_metrics():
    url = "http://127.0.0.1:%d/metrics" % (9300 + OFFSET)
    out = {}
    for line in urllib.request.urlopen(url, timeout=10).read().decode().splitlines():
        if line.startswith("shoal_gateway_scrub_"):
            name, v = line.split()
            out[name[len("shoal_gateway_scrub_"):]] = float(v)
    return out


def restart_gateway(d, interval_ms):
    subprocess.run([CLUSTER, "stop", "--dir", d, "--only", "gateway"], check=True,
                   capture_output=True)
    subprocess.run([CLUSTER, "start", "--dir", d, "--only", "gateway", "--gateway-args",
                    "--scrub-interval-ms %d" % interval_ms], check=True, capture_output=True)
    if interval_ms > 0:
        end = time.monotonic() + 120
        while scrub_metrics().get("passes_total", 0) < 1:
            if time.monotonic() > end:
                raise RuntimeError("no scrub pass in 120 s")
            time.sleep(0.2)
    else:
        time.sleep(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--keys", type=int, default=50000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--interval-ms", type=int, default=1000)
    ap.add_argument("--out")
    o = ap.parse_args()
    build = os.path.abspath(o.build)
    d = tempfile.mkdtemp(prefix="shoal-scrub-")
    got = {"off": [], "on": []}
    try:
        subprocess.run([CLUSTER, "start", "--dir", d, "--build", build, "--port-offset",
                        str(OFFSET), "--fnstore-args", "--capacity 2GiB", "--gateway-args",
                        "--scrub-interval-ms 0"], check=True, capture_output=True)
        out = subprocess.run([os.path.join(build, "controller", "shoalctl"), "--controller",
                              "http://127.0.0.1:%d" % (9400 + OFFSET), "--token-file",
                              os.path.join(d, "admin.token"), "--json", "tenant", "create", "sc"],
                             check=True, capture_output=True, text=True).stdout
        key = json.loads(out)["key"]
        time.sleep(1.5)  # the gateway learns the tenant
        bench = [os.path.join(build, "bench", "shoal-bench"), "--gateway",
                 "http://127.0.0.1:%d" % (9300 + OFFSET), "--tenant",
                 "name=sc,key=%s,size=1KiB,read=1,conc=16,keys=%d" % (key, o.keys),
                 "--threads", "2", "--json"]
        t0 = time.monotonic()
        subprocess.run(bench + ["--load", "--warmup", "0", "--duration", "1"], check=True,
                       capture_output=True)
        print("loaded %d keys in %.1f s" % (o.keys, time.monotonic() - t0), file=sys.stderr)
        for i in range(o.runs):
            for side, interval in (("off", 0), ("on", o.interval_ms)):
                restart_gateway(d, interval)
                m0, c0, w0 = scrub_metrics(), cpu(d), time.monotonic()
                time.sleep(o.duration)
                m1, c1, w1 = scrub_metrics(), cpu(d), time.monotonic()
                idle = (c1 - c0) / (w1 - w0)
                passes = m1.get("passes_total", 0) - m0.get("passes_total", 0)
                c2 = cpu(d)
                r = json.loads(subprocess.run(bench + ["--warmup", "1", "--duration",
                                                       str(o.duration)],
                                              check=True, capture_output=True,
                                              text=True).stdout)["tenants"][0]
                c3 = cpu(d)
                m3 = scrub_metrics()
                run = {"idle_cpu": idle, "passes": passes,
                       "pass_seconds": m3.get("pass_seconds", 0),
                       "listed": m3.get("listed_chunks", 0),
                       "get_rate": r["ops_per_s"],
                       "cpu_us_per_get": 1e6 * (c3 - c2) / max(1, r["ops"])}
                got[side].append(run)
                print("%s run %d: %s" % (side, i + 1, json.dumps(run)), file=sys.stderr,
                      flush=True)
    finally:
        subprocess.run([CLUSTER, "stop", "--dir", d], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)

    def med(side, k):
        return statistics.median(x[k] for x in got[side])

    per_pass = [(on["idle_cpu"] - off["idle_cpu"]) * o.duration / max(on["passes"], 1)
                for on, off in zip(got["on"], got["off"])]
    res = {
        "keys": o.keys,
        "listed_chunks": med("on", "listed"),
        "pass_seconds": med("on", "pass_seconds"),
        "cpu_seconds_per_pass": statistics.median(per_pass),
        "get_rate_off": med("off", "get_rate"),
        "get_rate_on": med("on", "get_rate"),
        "cpu_us_per_get_off": med("off", "cpu_us_per_get"),
        "cpu_us_per_get_on": med("on", "cpu_us_per_get"),
    }
    res["get_ratio"] = res["get_rate_on"] / res["get_rate_off"]
    print(json.dumps(res, indent=1))
    if o.out:
        with open(o.out, "w") as f:
            json.dump({"runs": got, "medians": res}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
