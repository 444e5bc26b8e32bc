#!/usr/bin/python3
"""perf.fq_node: the nodes' fair queue under uncapped load, loopback only.

    fq_node.py --build BUILD [--nodes 4] [--runs 4] [--duration 5] [--warmup 2]
               [--only bound,sched] [--requests 4,16,64,256,0]
               [--bytes 1MiB,2MiB,4MiB,8MiB,16MiB,0] [--out FILE.json]

bound  GET 1 KiB (conc 64) with --max-dispatched at each of --requests (bytes
       unbounded), and GET 1 MiB (conc 16) with --max-dispatched-bytes at each
       of --bytes (requests unbounded); 0 is no bound.
sched  GET 1 KiB (conc 64) with --sched drfq and --sched fifo, the default
       bounds: the cost of fairness to a lone tenant.

Two figures per run: throughput (shoal-bench, one thread, through the
gateway), and the nodes' CPU time per request served (utime + stime of every
node over the run, from /proc, divided by the requests their /metrics
counted). On a shared machine the first swings with whatever else runs; the
second is the work a node does per request, which is what a bound too small
costs (fewer answers per loop turn and per writev), so the knee is read from
it: the smallest bound whose CPU per request is that of no bound, with the
throughputs as a check.

Every configuration restarts the nodes of one deploy/local/shoal-cluster
(ports shifted into 14900-20300) with its flags; the warm-up reloads their
chunks from COS. Runs of all configurations are interleaved (A B C .. then
.. C B A) so a drift of the machine spreads over all; the table has medians.
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
from run import KiB, MiB, ROOT, port_free  # noqa: E402  (shared with perf.baseline)

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
        self.key = None

    def start(self):
        a = self.a
        ctl = os.path.join(a.build, "controller", "shoalctl")
        self.cmd("start", "--nodes", str(a.nodes), "--port-offset", str(self.off),
                 "--build", a.build, "--fnstore-args", "", "--timeout", "120")
        out = subprocess.run([ctl, "--controller", "http://127.0.0.1:%d" % (9400 + self.off),
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

    def get(self, size, conc, keys, load=False):
        """Starts shoal-bench (GETs, or the load of the keys); returns the process."""
        spec = "name=perf,key=%s,conc=%d,keys=%d,size=%d,read=1,zipf=0" % (
            self.key, conc, keys, size)
        args = [self.bench, "--gateway", "http://127.0.0.1:%d" % (9300 + self.off),
                "--tenant", spec, "--prefix", "p%d/" % size, "--threads", "1", "--json",
                "--log-level", "warn"]
        if load:
            args += ["--load", "--warmup", "0", "--duration", "1"]
        else:
            args += ["--warmup", str(self.a.warmup), "--duration", str(self.a.duration)]
        return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def sample(self):
        """(CPU seconds of every node so far, requests they served so far)."""
        cpu, served = 0.0, 0.0
        tick = os.sysconf("SC_CLK_TCK")
        for i, name in enumerate(self.nodes):
            with open(os.path.join(self.dir, "pids", name + ".pid")) as f:
                pid = int(f.read())
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / tick
            port = 9600 + i + self.off
            text = subprocess.run(["curl", "-s", "http://127.0.0.1:%d/metrics" % port],
                                  capture_output=True, check=True, timeout=30).stdout.decode()
            for line in text.splitlines():
                if line.startswith("shoal_fnstore_tenant_served_requests_total{"):
                    served += float(line.rsplit(" ", 1)[1])
        return cpu, served

    def stop(self):
        self.cmd("stop")
        shutil.rmtree(self.dir, ignore_errors=True)


def result(p):
    out, err = p.communicate(timeout=600)
    if p.returncode != 0:
        raise RuntimeError("shoal-bench exit %d: %s" % (p.returncode, err.decode()[-500:]))
    t = json.loads(out)["tenants"][0]
    if t["errors"]:
        raise RuntimeError("shoal-bench errors %r" % t["status"])
    return t


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
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--warmup", type=float, default=2)
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
    results = {c[0]: [] for c in configs}
    c = Cluster(a)
    try:
        c.start()
        for size, keys in sorted({(x[2], x[4]) for x in configs}):
            result(c.get(size, 8, keys, load=True))
        for run in range(a.runs):
            for label, flags, size, conc, keys in (configs if run % 2 == 0 else configs[::-1]):
                c.nodes_with(flags)
                time.sleep(3.5)  # the gateway uses a node again 2 s after it answers a reconnect
                cpu0, n0 = c.sample()
                t = result(c.get(size, conc, keys))
                cpu1, n1 = c.sample()
                us = 1e6 * (cpu1 - cpu0) / max(n1 - n0, 1)
                results[label].append((t["ops_per_s"], t["mb_per_s"], us))
                log("%-36s run %d: %8.0f ops/s %8.1f MB/s, nodes %6.2f us CPU per request" % (
                    label, run + 1, t["ops_per_s"], t["mb_per_s"], us))
    finally:
        c.stop()
    print("%-36s %9s %9s %13s   runs (us CPU per request)" % ("configuration", "ops/s", "MB/s",
                                                              "us CPU/req"))
    table = []
    for label, *_ in configs:
        rs = results[label]
        row = {"config": label, "ops_per_s": statistics.median(r[0] for r in rs),
               "mb_per_s": statistics.median(r[1] for r in rs),
               "cpu_us_per_request": statistics.median(r[2] for r in rs),
               "runs_cpu_us": [r[2] for r in rs], "runs_ops_per_s": [r[0] for r in rs]}
        table.append(row)
        print("%-36s %9.0f %9.1f %13.2f   %s" % (label, row["ops_per_s"], row["mb_per_s"],
                                                row["cpu_us_per_request"],
                                                " ".join("%.2f" % r[2] for r in rs)))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"nodes": a.nodes, "duration_s": a.duration, "runs": a.runs,
                       "results": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
