#!/usr/bin/python3
"""perf.fq_node: the nodes' fair queue under uncapped load, loopback only.

    fq_node.py --build BUILD [--nodes 6] [--runs 2] [--duration 8] [--warmup 3]
               [--only bound,sched] [--requests 4,16,64,256,0]
               [--bytes 1MiB,2MiB,4MiB,8MiB,16MiB,0] [--out FILE.json]

bound  GET 1 KiB (conc 64) with --max-dispatched at each of --requests (bytes
       unbounded), and GET 1 MiB (conc 16) with --max-dispatched-bytes at each
       of --bytes (requests unbounded); 0 is no bound. The knee is the
       smallest bound whose throughput is within noise of no bound: past it
       the bound costs nothing, below it the nodes idle while answers drain.
sched  GET 1 KiB (conc 64) with --sched drfq and --sched fifo, the default
       bounds, alternated --runs times: the cost of fairness on one tenant.

Every configuration restarts the nodes of one deploy/local/shoal-cluster
(ports shifted into 14900-20300) with its flags; the warm-up reloads their
chunks from COS before the measured window. Runs of all configurations are
interleaved (A B C .. then .. C B A) so a drift of the machine spreads over
all of them; the table has medians. Client: shoal-bench, one thread.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import KiB, MiB, ROOT, port_free  # noqa: E402  (perf.baseline's helpers)


def log(msg):
    print("fq_node: " + msg, file=sys.stderr, flush=True)


def parse_size(s):
    s = s.strip()
    for suf, mul in (("KiB", KiB), ("MiB", MiB), ("GiB", 1 << 30)):
        if s.endswith(suf):
            return int(s[:-len(suf)]) * mul
    return int(s)


class Cluster:
    def __init__(self, a):
        self.a = a
        self.dir = tempfile.mkdtemp(prefix="shoal-fq-node-")
        self.script = os.path.join(ROOT, "deploy", "local", "shoal-cluster")
        self.bench = os.path.join(a.build, "bench", "shoal-bench")
        self.ctl = os.path.join(a.build, "controller", "shoalctl")
        for _ in range(100):
            off = random.randrange(5600, 10600, 100)
            ports = [9300 + off, 9400 + off] + [9500 + i + off for i in range(a.nodes)] + \
                [9600 + i + off for i in range(a.nodes)]
            if all(port_free(p) for p in ports):
                self.off = off
                break
        else:
            raise RuntimeError("no free port offset")
        self.nodes = ["fnstore-%d" % i for i in range(a.nodes)]
        self.cmd("start", "--nodes", str(a.nodes), "--port-offset", str(self.off),
                 "--build", a.build, "--fnstore-args", "")
        out = subprocess.run([self.ctl, "--controller", "http://127.0.0.1:%d" % (9400 + self.off),
                              "--token-file", os.path.join(self.dir, "admin.token"), "--json",
                              "tenant", "create", "perf"], capture_output=True, check=True)
        self.key = json.loads(out.stdout)["key"]
        time.sleep(2)  # the gateway polls the new tenant

    def cmd(self, *args):
        subprocess.run([self.script] + list(args) + ["--dir", self.dir], check=True,
                       stdout=subprocess.DEVNULL, timeout=300)

    def nodes_with(self, flags):
        self.cmd("stop", "--only", ",".join(self.nodes))
        self.cmd("start", "--fnstore-args", flags)
        # The gateway uses a node again 2 s after it answers a reconnect.
        time.sleep(3.5)

    def get(self, size, conc, keys, load=False):
        spec = "name=perf,key=%s,conc=%d,keys=%d,size=%d,read=1,zipf=0" % (
            self.key, conc, keys, size)
        args = [self.bench, "--gateway", "http://127.0.0.1:%d" % (9300 + self.off),
                "--tenant", spec, "--prefix", "p%d/" % size, "--threads", "1", "--json",
                "--log-level", "warn"]
        if load:
            args += ["--load", "--warmup", "0", "--duration", "1"]
        else:
            args += ["--warmup", str(self.a.warmup), "--duration", str(self.a.duration)]
        res = json.loads(subprocess.run(args, capture_output=True, check=True,
                                        timeout=600).stdout)
        t = res["tenants"][0]
        if t["errors"]:
            raise RuntimeError("shoal-bench errors %r" % t["status"])
        return t

    def stop(self):
        self.cmd("stop")
        shutil.rmtree(self.dir, ignore_errors=True)


def plan(a):
    """[(label, fnstore flags, size, conc, keys)]"""
    p = []
    if "bound" in a.only:
        for r in a.requests:
            p.append(("GET 1KiB max-dispatched=%s" % (r or "none"),
                      "--max-dispatched %d --max-dispatched-bytes 0" % r, KiB, 64, 1000))
        for b in a.bytes:
            p.append(("GET 1MiB max-dispatched-bytes=%s" % ("%dMiB" % (b // MiB) if b else "none"),
                      "--max-dispatched 0 --max-dispatched-bytes %d" % b, MiB, 16, 64))
    if "sched" in a.only:
        for s in ("drfq", "fifo"):
            p.append(("GET 1KiB sched=%s" % s, "--sched %s" % s, KiB, 64, 1000))
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--nodes", type=int, default=6)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--duration", type=float, default=8)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--only", default="bound,sched")
    ap.add_argument("--requests", default="4,16,64,256,0")
    ap.add_argument("--bytes", default="1MiB,2MiB,4MiB,8MiB,16MiB,0")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    a.only = a.only.split(",")
    a.requests = [int(x) for x in a.requests.split(",")]
    a.bytes = [parse_size(x) for x in a.bytes.split(",")]
    configs = plan(a)
    c = Cluster(a)
    results = {label: [] for label, *_ in configs}
    try:
        for size, keys in sorted({(x[2], x[4]) for x in configs}):
            c.get(size, 8, keys, load=True)
        for run in range(a.runs):
            for label, flags, size, conc, keys in (configs if run % 2 == 0 else configs[::-1]):
                c.nodes_with(flags)
                t = c.get(size, conc, keys)
                results[label].append((t["ops_per_s"], t["mb_per_s"], t["latency_us"]["p99"]))
                log("%-36s run %d: %8.0f ops/s %8.1f MB/s p99 %6d us" % (
                    label, run + 1, t["ops_per_s"], t["mb_per_s"], t["latency_us"]["p99"]))
    finally:
        c.stop()
    print("%-36s %10s %10s %10s   runs (ops/s)" % ("configuration", "ops/s", "MB/s", "p99 us"))
    table = []
    for label, *_ in configs:
        rs = results[label]
        row = {"config": label, "ops_per_s": statistics.median(r[0] for r in rs),
               "mb_per_s": statistics.median(r[1] for r in rs),
               "p99_us": statistics.median(r[2] for r in rs), "runs": [r[0] for r in rs]}
        table.append(row)
        print("%-36s %10.0f %10.1f %10.0f   %s" % (label, row["ops_per_s"], row["mb_per_s"],
                                                  row["p99_us"],
                                                  " ".join("%.0f" % r[0] for r in rs)))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"nodes": a.nodes, "duration_s": a.duration, "results": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
