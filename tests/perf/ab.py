#!/usr/bin/python3
"""perf A/B: two builds of Shoal on this machine, alternated, each run on a fresh cluster.

    ab.py BUILD_A BUILD_B [--runs 3] [--cases get-1k,put-1k,put-1k-64,get-10m,put-10m]
          [--duration 5] [--a-fnstore ARGS] [--b-fnstore ARGS] [--a-gateway ARGS]
          [--b-gateway ARGS]

Every run starts a 6-node cluster (deploy/local/shoal-cluster) from one build,
loads the keys, then measures each case with shoal-bench for --duration
seconds: the rate, and the CPU time of every cluster process (utime + stime
from /proc/PID/stat) divided by the requests served, which is steadier than
the rate on a shared machine, in all and per kind (gateway, the nodes, the
controller). The sides alternate A B A B ...; the table gives the medians
and B/A. Used to check that a change costs nothing (docs/benchmarks.md).
Clusters are removed at the end, not between runs: on ext4 without a
journal, files deleted just before a run make the next one's file creation
dearer (docs/benchmarks.md, "Traps").
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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "deploy", "local", "shoal-cluster")
CASES = {
    "get-1k": "size=1KiB,read=1,conc=16,keys=1000",
    "put-1k": "size=1KiB,read=0,conc=16,keys=1000",
    "put-1k-64": "size=1KiB,read=0,conc=64,keys=1000",
    "get-10m": "size=10MiB,read=1,conc=4,keys=16",
    "put-10m": "size=10MiB,read=0,conc=4,keys=16",
}
TICKS = os.sysconf("SC_CLK_TCK")


KINDS = ("gateway", "nodes", "controller")


def cpu_seconds(pids):
    """utime + stime per kind of process (pids: {pid: kind})."""
    total = dict.fromkeys(KINDS, 0)
    for pid, kind in pids.items():
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total[kind] += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return {k: v / TICKS for k, v in total.items()}


def run_once(build, offset, fnstore_args, gateway_args, cases, duration, dirs):
    d = tempfile.mkdtemp(prefix="shoal-ab-")
    dirs.append(d)
    try:
        subprocess.run([CLUSTER, "start", "--dir", d, "--build", build, "--port-offset",
                        str(offset), "--fnstore-args", "--capacity 2GiB " + fnstore_args,
                        "--gateway-args", gateway_args], check=True, capture_output=True)
        pids = {}
        for p in glob.glob(os.path.join(d, "pids", "*.pid")):
            name = os.path.basename(p)[:-4]
            with open(p) as f:
                pids[int(f.read())] = "nodes" if name.startswith("fnstore") else name
        out = subprocess.run([os.path.join(build, "controller", "shoalctl"), "--controller",
                              "http://127.0.0.1:%d" % (9400 + offset), "--token-file",
                              os.path.join(d, "admin.token"), "--json", "tenant", "create", "ab"],
                             check=True, capture_output=True, text=True).stdout
        key = json.loads(out)["key"]
        time.sleep(1.5)  # the gateway learns the tenant
        result = {}
        for name in cases:
            bench = [os.path.join(build, "bench", "shoal-bench"), "--gateway",
                     "http://127.0.0.1:%d" % (9300 + offset), "--tenant",
                     "name=ab,key=%s,%s" % (key, CASES[name]), "--threads", "2", "--json",
                     "--prefix", name + "/"]
            subprocess.run(bench + ["--load", "--warmup", "1", "--duration", "1"], check=True,
                           capture_output=True)
            before = cpu_seconds(pids)
            out = subprocess.run(bench + ["--warmup", "0", "--duration", str(duration)],
                                 check=True, capture_output=True, text=True).stdout
            after = cpu_seconds(pids)
            t = json.loads(out)["tenants"][0]
            rate = t["ops_per_s"] if "-1k" in name else t["mb_per_s"]
            per = {k: 1e6 * (after[k] - before[k]) / max(1, t["ops"]) for k in KINDS}
            result[name] = (rate, sum(per.values()), per)
        return result
    finally:
        subprocess.run([CLUSTER, "stop", "--dir", d], capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build_a")
    ap.add_argument("build_b")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--duration", type=float, default=5)
    for side in "ab":
        ap.add_argument("--%s-fnstore" % side, default="")
        ap.add_argument("--%s-gateway" % side, default="")
    o = ap.parse_args()
    cases = o.cases.split(",")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error("unknown case(s): %s" % ",".join(unknown))
    sides = (("A", o.build_a, o.a_fnstore, o.a_gateway), ("B", o.build_b, o.b_fnstore, o.b_gateway))
    got = {}
    dirs = []
    try:
        for i in range(o.runs):
            for j, (tag, build, fns, gw) in enumerate(sides):
                r = run_once(build, 20000 + 100 * i + 50 * j, fns, gw, cases, o.duration, dirs)
                print("%s run %d (load %s): %s" % (tag, i + 1, os.getloadavg()[0], ", ".join(
                    "%s %.1f (%.0f us CPU/op: %s)" % (k, v[0], v[1], ", ".join(
                        "%s %.0f" % kv for kv in v[2].items())) for k, v in r.items())),
                    file=sys.stderr, flush=True)
                for k, v in r.items():
                    got.setdefault(k, {}).setdefault(tag, []).append(v)
    finally:
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
    print("%-8s %10s %10s %6s %12s %12s %6s" % ("case", "A rate", "B rate", "B/A", "A CPU/op us",
                                              "B CPU/op us", "B/A"))
    for k, v in got.items():
        a = statistics.median(x[0] for x in v["A"])
        b = statistics.median(x[0] for x in v["B"])
        ac = statistics.median(x[1] for x in v["A"])
        bc = statistics.median(x[1] for x in v["B"])
        print("%-8s %10.1f %10.1f %6.2f %12.0f %12.0f %6.2f" % (k, a, b, b / a, ac, bc, bc / ac))
        for kind in KINDS:
            ak = statistics.median(x[2][kind] for x in v["A"])
            bk = statistics.median(x[2][kind] for x in v["B"])
            print("  %-14s %33.0f %12.0f %6.2f" % (kind, ak, bk, bk / ak if ak else 0))


if __name__ == "__main__":
    main()
