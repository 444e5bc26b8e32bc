#!/usr/bin/python3
"""perf.gateway.move: what moving a tenant between gateways costs, by the
tenant's size.

    move_cost.py --build BUILD [--sizes 1000,10000,50000] [--runs 3]

A 4-node cluster with two gateways. For each size, a tenant of that many
1 KiB objects (loaded with shoal-bench) is moved from one gateway to the
other and back, --runs times in all, while a client GETs one of its keys
through the gateway that owned it first, every 5 ms. Per move: how long
`shoalctl tenant move --wait` took, how long the client got 503s (first to
last), the bundle's size, and the old owner's time from the freeze to the
commit that took the records out. Prints every run, then the medians per
size as a JSON object.
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
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab  # noqa: E402

OFFSET = 18500  # every port below the ephemeral range (32768-)
CTL = 9400 + OFFSET
GW = (9300 + OFFSET, 9320 + OFFSET)


def ctl(build, d, *args):
    out = subprocess.run([os.path.join(build, "controller", "shoalctl"), "--controller",
                          "http://127.0.0.1:%d" % CTL, "--token-file",
                          os.path.join(d, "admin.token")] + list(args),
                         check=True, capture_output=True, text=True).stdout
    return out


def owner(build, d, name):
    return json.loads(ctl(build, d, "--json", "tenant", "show", name))["gateway"]


class Prober:
    """GETs key through port every 5 ms; remembers when it got 503s."""

    def __init__(self, port, key, obj):
        self.url = "http://127.0.0.1:%d/v1/objects/%s" % (port, obj)
        self.key = key
        self.t503 = []
        self.other = 0
        self.stop = threading.Event()
        self.th = threading.Thread(target=self.run, daemon=True)
        self.th.start()

    def run(self):
        while not self.stop.is_set():
            req = urllib.request.Request(self.url, headers={"Authorization": "Bearer " + self.key})
            t = time.monotonic()
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    r.read()
            except urllib.error.HTTPError as e:
                if e.code == 503:
                    self.t503.append(t)
                else:
                    self.other += 1
            time.sleep(0.005)

    def window(self):
        self.stop.set()
        self.th.join()
        return self.t503[-1] - self.t503[0] if self.t503 else 0.0


def last_match(path, pattern):
    with open(path, errors="replace") as f:
        hits = re.findall(pattern, f.read())
    return hits[-1] if hits else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--runs", type=int, default=3)
    o = ap.parse_args()
    build = os.path.abspath(o.build)
    d = tempfile.mkdtemp(prefix="shoal-move-")
    ids = ["127.0.0.1:%d" % p for p in GW]
    got = {}
    try:
        subprocess.run([ab.CLUSTER, "start", "--dir", d, "--build", build, "--nodes", "4",
                        "--gateways", "2", "--port-offset", str(OFFSET)], check=True,
                       capture_output=True)
        for n in [int(x) for x in o.sizes.split(",")]:
            name = "m%d" % n
            key = json.loads(ctl(build, d, "--json", "tenant", "create", name))["key"]
            time.sleep(1.5)  # both gateways learn the tenant
            first = ids.index(owner(build, d, name))
            subprocess.run([os.path.join(build, "bench", "shoal-bench"), "--gateway",
                            "http://127.0.0.1:%d" % GW[first], "--tenant",
                            "name=%s,key=%s,size=1KiB,read=0,conc=32,keys=%d" % (name, key, n),
                            "--threads", "2", "--json", "--load", "--warmup", "0", "--duration",
                            "1"], check=True, capture_output=True)
            obj = "bench/0"  # shoal-bench's first key (--prefix bench/)
            for i in range(o.runs):
                frm = ids.index(owner(build, d, name))
                to = 1 - frm
                probe = Prober(GW[first], key, obj)
                time.sleep(0.3)
                t0 = time.monotonic()
                ctl(build, d, "tenant", "move", name, ids[to], "--wait", "300")
                took = time.monotonic() - t0
                time.sleep(0.3)
                window = probe.window()
                log = os.path.join(d, "logs", "gateway.log" if frm == 0 else "gateway-1.log")
                out_ms = last_match(log, r"metadata out of the store tenant=\d+ to=\S+ "
                                         r"groups=\d+ ms=(\d+)")
                size = last_match(log, r"hand-over sent tenant=\d+ to=\S+ bytes=(\d+)")
                run = {"objects": n, "move_s": round(took, 3), "unavailable_s": round(window, 3),
                       "bundle_bytes": int(size or 0), "freeze_to_out_ms": int(out_ms or 0),
                       "probe_errors": probe.other}
                got.setdefault(n, []).append(run)
                print("size %d run %d: %s" % (n, i + 1, json.dumps(run)), file=sys.stderr,
                      flush=True)
    finally:
        subprocess.run([ab.CLUSTER, "stop", "--dir", d], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)
    res = {}
    for n, runs in got.items():
        res[n] = {k: statistics.median(r[k] for r in runs)
                  for k in ("move_s", "unavailable_s", "bundle_bytes", "freeze_to_out_ms")}
        res[n]["bytes_per_object"] = round(res[n]["bundle_bytes"] / n, 1)
        res[n]["probe_errors"] = sum(r["probe_errors"] for r in runs)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
