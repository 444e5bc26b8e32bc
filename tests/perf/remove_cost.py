#!/usr/bin/python3
"""perf.node.remove: what `shoalctl node remove` costs, by --migrate-rate.

    remove_cost.py --build BUILD --src SRC [--mib 256] [--rates 32MiB,128MiB] [--runs 3]

Seven nodes, RS(4+2), one tenant holding --mib MiB in 1 MiB objects. A
reader GETs random objects in a closed loop (one thread). For each rate,
--runs times, each on a fresh cluster whose gateway runs with that
--migrate-rate: node 3 is removed while it runs (`node remove --wait`).
Per run: what node 3 held (its used_bytes), the chunk bytes the gateway
moved, how long the removal took (the ask to `removed`) and the rate that
makes; the reader's GET latency p50 / p99 over the 5 s before and during
the drain. Prints every run, then the medians per rate.
"""
import argparse
import os
import random
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import shoaltest as st  # noqa: E402

OBJ = 1 << 20
BEFORE_S = 5


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else float("nan")


class Reader(threading.Thread):
    def __init__(self, g, keys):
        super().__init__(daemon=True)
        self.g, self.keys = g, keys
        self.samples = []  # (start, seconds, status)
        self.stop = threading.Event()

    def run(self):
        rng = random.Random(1)
        while not self.stop.is_set():
            t0 = time.monotonic()
            r = self.g.get(rng.choice(self.keys), timeout=30)
            self.samples.append((t0, time.monotonic() - t0, r.status))

    def window(self, a, b):
        return [s for t0, s, _ in self.samples if a <= t0 < b]


def used_bytes(c, nid):
    for n in c.admin("GET", "/v1/nodes").json()["nodes"]:
        if n["id"] == nid:
            return n["used_bytes"]
    return 0


def one(t, rate, mib):
    c = t.cluster(nodes=7, gateway_args="--migrate-rate %s" % rate)
    try:
        ten = c.create_tenant()
        g = c.gw(ten)
        keys = ["o/%d" % i for i in range(mib)]

        def fill(part):
            rng = random.Random(part)
            for k in keys[part::4]:
                r = g.put(k, rng.randbytes(OBJ))
                if r.status != 201:
                    raise st.TestFailure("PUT %s: %d" % (k, r.status))
        ths = [threading.Thread(target=fill, args=(i,)) for i in range(4)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        # Every chunk in COS, the buffer drained: the drain alone is measured.
        st.wait_until(lambda: c.gw_metrics().get("shoal_gateway_buffered_objects", 1) == 0, 120,
                      "the persistent buffer empty")
        held = used_bytes(c, 3)
        moved0 = c.gw_metrics().get("shoal_gateway_migrate_moved_bytes_total", 0)
        rd = Reader(g, keys)
        rd.start()
        time.sleep(BEFORE_S)
        t0 = time.monotonic()
        p = c.shoalctl("node", "remove", "3", "--wait", "600", timeout=660)
        t1 = time.monotonic()
        rd.stop.set()
        rd.join(30)
        t.check(b"node 3 removed" in p.stdout, "node remove printed %r" % p.stdout)
        bad = [s for _, _, s in rd.samples if s != 200]
        t.eq(bad, [], "GETs that failed")
        moved = c.gw_metrics().get("shoal_gateway_migrate_moved_bytes_total", 0) - moved0
        before, during = rd.window(t0 - BEFORE_S, t0), rd.window(t0, t1)
        return {"held_mib": held / 2**20, "moved_mib": moved / 2**20, "seconds": t1 - t0,
                "mib_s": moved / 2**20 / (t1 - t0), "p50_before": pct(before, 0.5),
                "p99_before": pct(before, 0.99), "p50_during": pct(during, 0.5),
                "p99_during": pct(during, 0.99), "gets_during": len(during)}
    finally:
        c.cleanup(False)
        t.clusters.remove(c)


COLS = ["held_mib", "moved_mib", "seconds", "mib_s", "p50_before", "p99_before", "p50_during",
        "p99_during", "gets_during"]


def row(rate, r):
    return "| %s | " % rate + " | ".join("%.1f" % r[k] for k in COLS) + " |"


def main(t):
    print("| --migrate-rate | node 3 held (MiB) | moved (MiB) | removal (s) | MiB/s | "
          "GET p50 before (ms) | p99 before | p50 during | p99 during | GETs during |")
    print("|" + " --- |" * (len(COLS) + 1))
    med = {}
    for rate in OPTS.rates.split(","):
        runs = []
        for _ in range(OPTS.runs):
            runs.append(one(t, rate, OPTS.mib))
            print(row(rate, runs[-1]), flush=True)
        med[rate] = {k: statistics.median(r[k] for r in runs) for k in COLS}
    print("\nmedians of %d:" % OPTS.runs)
    for rate, r in med.items():
        print(row(rate, r))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--rates", default="32MiB,128MiB")
    ap.add_argument("--runs", type=int, default=3)
    OPTS, rest = ap.parse_known_args()
    sys.argv = [sys.argv[0]] + rest
    st.run(main)
