#!/usr/bin/python3
"""exp.hosts: requests through faults of the network between hosts.

    hosts.py --build BUILD [--no-doc] [--out FILE.json]

Six nodes, a gateway and the controller, each on a host of its own
(shoal-cluster --netns, root only), default flags. Four closed-loop clients
on the tools' host PUT and GET objects of 300 KiB (RS(4+2) stripes) over 40
keys, while the network fails in turn, every fault lifted before the next:

    5-15 s   node 2 cut off (its process runs on)
   22-32 s   node 3's link at 20 Mbit/s each way
   38-48 s   the controller cut off
   55 s      end

Every request's start, operation, status and latency is kept. Per phase: the
requests, the failed ones (anything but 200/201), and latency p50, p99 and
max. Writes the section "hosts" of docs/operations.md and
docs/img/hosts.png. Target: no request fails, and none takes longer than
--io-timeout-ms (5 s) plus 1 s; exits 1 when missed.
"""
import argparse
import http.client
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoalexp as sx  # noqa: E402

st = sx.st
CLIENTS = 4
KEYS = 40
SIZE = 300 * sx.KiB
END = 55.0
FAULTS = [  # (start, end, process, link setting, label)
    (5.0, 15.0, "fnstore-2", "down", "node 2 cut off"),
    (22.0, 32.0, "fnstore-3", "20mbit", "node 3 at 20 Mbit/s"),
    (38.0, 48.0, "controller", "down", "controller cut off"),
]
LIMIT_S = 6.0  # --io-timeout-ms + 1 s
DOC = os.path.join(sx.SRC, "docs", "operations.md")
ANCHOR = "### Hosts on one machine (`--netns`)"


class Args:
    def __init__(self, build):
        self.build = build
        self.src = sx.SRC


def load(g, t0, rows, stop, seed, data):
    """A closed loop on one kept-alive connection (a fresh one per request
    would run the tools' host out of ports in a minute). Every client writes
    the same bytes, so a GET checks them whoever wrote the key last."""
    rng = random.Random(seed)
    written = set()
    conn = None
    while not stop.is_set():
        key = "h/%d" % rng.randrange(KEYS)
        op = "GET" if key in written and rng.random() < 0.5 else "PUT"
        ts = time.monotonic()
        try:
            if conn is None:
                conn = http.client.HTTPConnection(g.host, g.port, timeout=60)
            conn.request(op, "/v1/objects/" + key, body=data if op == "PUT" else None,
                         headers=g.auth())
            r = conn.getresponse()
            body = r.read()
            status = r.status
            if op == "GET" and status == 200 and body != data:
                status = "corrupt"
        except (OSError, http.client.HTTPException) as e:
            status = type(e).__name__
            conn.close()
            conn = None
        if op == "PUT" and status == 201:
            written.add(key)
        rows.append((ts - t0, op, status, time.monotonic() - ts))
    if conn is not None:
        conn.close()


def phase_of(t):
    for a, b, _, _, label in FAULTS:
        if a <= t < b:
            return label
    return "no fault"


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.2))
    for a, b, _, _, label in FAULTS:
        ax.axvspan(a, b, color="0.88")
        ax.text((a + b) / 2, 6000, label, ha="center", va="bottom", fontsize=9)
    for op, color in (("PUT", "tab:blue"), ("GET", "tab:green")):
        ok = [(t, lat * 1000) for t, o, s, lat in rows if o == op and s in (200, 201)]
        ax.scatter([x[0] for x in ok], [x[1] for x in ok], s=3, color=color, label=op)
    bad = [(t, lat * 1000) for t, o, s, lat in rows if s not in (200, 201)]
    if bad:
        ax.scatter([x[0] for x in bad], [x[1] for x in bad], s=12, color="red", marker="x",
                   label="failed")
    ax.set_yscale("log")
    ax.set_ylim(0.5, 20000)
    ax.set_xlim(0, END)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("latency (ms)")
    ax.set_title("PUT and GET of 300 KiB through faults between hosts (6 nodes, RS(4+2))")
    ax.legend(loc="upper right", markerscale=3, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--no-doc", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    if not st.netns_usable():
        print("exp.hosts needs root and ip netns")
        return 77
    sx.catch_signals()
    test = st.Test(Args(os.path.abspath(args.build)))
    c = st.Cluster(test, netns=True)
    test.clusters.append(c)
    rows, failed = [], True
    try:
        c.start()
        c.wait_nodes_up()
        ten = c.create_tenant()
        g = c.gw(ten)
        stop = threading.Event()
        t0 = time.monotonic()
        data = random.Random(99).randbytes(SIZE)
        threads = [threading.Thread(target=load, args=(g, t0, rows, stop, i, data))
                   for i in range(CLIENTS)]
        for th in threads:
            th.start()
        for a, b, proc, setting, _ in FAULTS:
            time.sleep(max(0, t0 + a - time.monotonic()))
            c.link(proc, setting)
            time.sleep(max(0, t0 + b - time.monotonic()))
            c.link(proc, "up" if setting == "down" else "unlimited")
        time.sleep(max(0, t0 + END - time.monotonic()))
        stop.set()
        for th in threads:
            th.join()
        failed = False
    finally:
        c.cleanup(failed)
    rows.sort()
    table, worst = [], 0.0
    for label in ["no fault"] + [f[4] for f in FAULTS]:
        mine = [r for r in rows if phase_of(r[0]) == label]
        lat = [r[3] * 1000 for r in mine]
        bad = sum(1 for r in mine if r[2] not in (200, 201))
        worst = max([worst] + lat)
        table.append([label, len(mine), bad, sx.fmt(pct(lat, 0.5), 1), sx.fmt(pct(lat, 0.99), 1),
                      sx.fmt(max(lat) if lat else None, 1)])
    nbad = sum(1 for r in rows if r[2] not in (200, 201))
    ok = nbad == 0 and worst <= LIMIT_S * 1000
    img = sx.img_path("hosts.png", args.no_doc)
    plot(rows, img)
    body = "\n".join([
        "Measured by `tests/experiments/hosts.py --build build` (ctest `exp.hosts`, "
        "about a minute, root): %d clients PUT and GET 300 KiB objects (RS(4+2)) over %d keys "
        "through one gateway, every process on a host of its own, while the network fails "
        "in turn (%s, %s):" % (CLIENTS, KEYS, sx.machine(), time.strftime("%Y-%m-%d")),
        "",
        sx.md_table(["phase", "requests", "failed", "p50 ms", "p99 ms", "max ms"], table),
        "",
        "![latency through faults between hosts](img/hosts.png)",
        "",
        "Target: none failed, none over %.0f s (`--io-timeout-ms` + 1 s): %s." %
        (LIMIT_S, "met" if ok else "missed"),
    ])
    sx.write_section(DOC, "hosts", body, heading_anchor=ANCHOR, no_doc=args.no_doc)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rows": rows, "table": table, "ok": ok}, f)
    sx.log("failed %d, slowest %.0f ms: target %s" % (nbad, worst, "met" if ok else "missed"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
