#!/usr/bin/env python3
"""integ.wa - weight allocation on the controller gives a tenant whose demand
sits on a few nodes its system-wide fair share.

Six nodes, each capped at CAP_OPS requests/s (--cap-ops), drfq on every node,
RS fast on the gateway. Tenant "hot" reads one small object: its three copies
are on three nodes. Tenant "wide" reads many small objects spread over every
node. Both have weight 1 and read in a closed loop with enough requests out to
keep every node busy. Max-min fair is half the cluster each: hot all of its
three nodes, wide the other three.

- With --wa even every node splits its capacity 1:1 between the tenants that
  queue there, so wide also takes half of hot's nodes: min-max ratio well
  below 1.
- With --wa pisces the controller moves hot's weight onto its nodes and
  wide's onto the others (RS fast then sends wide's reads to the copies where
  it has weight): min-max ratio >= 0.9, measured by shoal-bench (throughput
  per weight) and cross-checked with the controller's figure.
- With pisces running, a `shoalctl tenant set-weight` is in force on every
  node within 3 s: each node's column of applied local weights sums to the
  new total of the global weights (the invariant WA keeps), the changed
  tenant's row to NODES times its new weight.
"""
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoaltest as st  # noqa: E402

NODES = 6
CAP_OPS = 300
WIDE_KEYS = 300
CONC = 48          # per tenant: each node sees a queue of both
WARMUP_S = 8       # pisces converges in a few steps of 1 s
DURATION_S = 12
MMR_PISCES = 0.9
WEIGHT_DEADLINE_S = 3.0


def restart_controller(t, c, wa):
    c.stop(only=["controller"])
    c.cluster_cmd("start", "--only", "controller", "--controller-args", "--wa " + wa)
    c.wait_nodes_up()
    r = c.admin("GET", "/v1/fairness")
    t.status(r, 200, "GET /v1/fairness")
    t.eq(r.json().get("wa"), wa, "/v1/fairness wa")


def bench(t, c, tenants, *extra, timeout=120):
    args = [t.binary("shoal-bench"), "--log-level", "warn", "--threads", "1",
            "--gateway", "http://127.0.0.1:%d" % c.gw_port, "--json", *extra]
    for ten, keys, conc in tenants:
        args += ["--tenant", "name=%s,key=%s,conc=%d,read=1,keys=%d,zipf=0,size=1KiB"
                 % (ten["name"], ten["key"], conc, keys)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(t, p, timeout=120):
    out, err = p.communicate(timeout=timeout)
    if p.returncode != 0:
        raise st.TestFailure("shoal-bench: exit %d\n%s" % (p.returncode, err[-2000:]))
    return json.loads(out)


def served(c, tenant_id):
    """Requests each node has served the tenant so far."""
    out = []
    for i in range(NODES):
        m = c.metrics(i)
        out.append(m.get('shoal_fnstore_tenant_served_requests_total{node="%d",tenant="%d"}'
                         % (i, tenant_id), 0))
    return out


def sample_fairness(c, stop, samples):
    """Every second: the controller's MMR and both tenants' local weights."""
    while not stop.wait(1.0):
        try:
            r = c.admin("GET", "/v1/fairness")
            if r.status == 200:
                samples.append((time.monotonic(), r.json()))
        except OSError:
            pass


def fmt_w(m):
    return "[" + " ".join("%.2f" % m.get(str(i), float("nan")) for i in range(NODES)) + "]"


def one_run(t, c, hot, wide, wa):
    restart_controller(t, c, wa)
    before = {x["name"]: served(c, x["id"]) for x in (hot, wide)}
    samples, stop = [], threading.Event()
    sampler = threading.Thread(target=sample_fairness, args=(c, stop, samples), daemon=True)
    sampler.start()
    t0 = time.monotonic()
    p = bench(t, c, [(hot, 1, CONC), (wide, WIDE_KEYS, CONC)],
              "--warmup", str(WARMUP_S), "--duration", str(DURATION_S))
    try:
        res = finish(t, p)
    finally:
        stop.set()
        sampler.join()
    after = {x["name"]: served(c, x["id"]) for x in (hot, wide)}
    rows = {x["name"]: x for x in res["tenants"]}
    for name in ("hot", "wide"):
        t.eq(rows[name]["errors"], 0, "%s: %s errors %r" % (wa, name, rows[name]["status"]))
    ops = {n: rows[n]["ops_per_s"] for n in ("hot", "wide")}
    mmr = min(ops.values()) / max(max(ops.values()), 1e-9)
    st.log("wa=%-6s hot %.0f ops/s, wide %.0f ops/s: MMR %.3f (shoal-bench's %s)"
           % (wa, ops["hot"], ops["wide"], mmr, res["fairness"]))
    for name in ("hot", "wide"):
        d = [a - b for a, b in zip(after[name], before[name])]
        st.log("  %s served per node: %s" % (name, [int(x) for x in d]))
    measured = [f for ts, f in samples if ts >= t0 + WARMUP_S + 1]
    for ts, f in samples:
        rows_f = {x["name"]: x for x in f["tenants"]}
        st.log("  t=%4.1fs ctl MMR %s  hot wa %s applied %s  wide wa %s  step %s" % (
            ts - t0, "%.3f" % f["min_max_ratio"] if f["min_max_ratio"] is not None else "-",
            fmt_w(rows_f["hot"]["wa_weights"]), fmt_w(rows_f["hot"]["local_weights"]),
            fmt_w(rows_f["wide"]["wa_weights"]),
            {k: f["wa_step"][k] for k in ("steps", "moved", "cycles", "max_mismatch")}))
    ctl = [f["min_max_ratio"] for f in measured if f["min_max_ratio"] is not None]
    ctl_mmr = sorted(ctl)[len(ctl) // 2] if ctl else None
    st.log("wa=%-6s controller MMR over the measured window: median %s of %d samples"
           % (wa, ctl_mmr, len(ctl)))
    return mmr, ctl_mmr


def applied(c, ids):
    """Per node: the local weights its scheduler applies to the tenants ids."""
    out = []
    for i in range(NODES):
        m = c.metrics(i)
        out.append([m.get('shoal_fnstore_tenant_weight{node="%d",tenant="%d"}' % (i, x), 0)
                    for x in ids])
    return out


def check_set_weight(t, c, hot, wide):
    """With pisces running (and load on), set-weight is in force everywhere in < 3 s:
    every node's column (hot + wide) sums to the new total weight, which holds
    only for weights made after the change, and wide's row to NODES times its
    new weight (within 5 %: the nodes' columns may come from successive steps)."""
    p = bench(t, c, [(hot, 1, CONC), (wide, WIDE_KEYS, CONC)], "--warmup", "0",
              "--duration", "14")
    try:
        time.sleep(5)  # weights have moved away from even
        took = []
        for w in (3, 1):
            t0 = time.monotonic()
            c.shoalctl("tenant", "set-weight", "wide", str(w))
            total, row = 1 + w, NODES * w
            ok = False
            while not ok and time.monotonic() - t0 < 10:
                cols = applied(c, [hot["id"], wide["id"]])
                sums = [sum(x) for x in cols]
                wrow = sum(x[1] for x in cols)
                ok = (all(abs(x - total) < 1e-6 * total for x in sums) and
                      abs(wrow - row) < 0.05 * row)
                if not ok:
                    time.sleep(0.05)
            took.append(time.monotonic() - t0)
            t.check(ok, "weight %g of wide: node columns %r (want %g each), wide's row %r "
                    "(want %g)" % (w, sums, total, wrow, row))
        st.log("set-weight in force on every node after %s s"
               % ", ".join("%.2f" % x for x in took))
        t.check(max(took) < WEIGHT_DEADLINE_S, "a set-weight took %.2f s (limit %.1f s)"
                % (max(took), WEIGHT_DEADLINE_S))
    finally:
        finish(t, p)


def check_policies(t, c):
    """The defaults this test is about: RS fast on the gateway, drfq on the nodes."""
    g = st.parse_metrics(st.http_request(c.gw_port, "GET", "/metrics").body.decode())
    t.check(g.get('shoal_gateway_info{rs="fast"}') == 1, "gateway rs fast")
    for i in range(NODES):
        t.check(c.metrics(i).get('shoal_fnstore_info{node="%d",sched="drfq"}' % i) == 1,
                "node %d sched drfq" % i)


def main(t):
    c = t.cluster(nodes=NODES, fnstore_args="--cap-ops %d" % CAP_OPS)
    check_policies(t, c)
    hot = c.create_tenant("hot", weight=1)
    wide = c.create_tenant("wide", weight=1)
    load = finish(t, bench(t, c, [(hot, 1, 1), (wide, WIDE_KEYS, 16)], "--load", "--warmup", "0",
                           "--duration", "0.1"))
    t.check(all(x["errors"] == 0 for x in load["tenants"]), "load errors %r" % load)
    mmr = {}
    for wa in ("even", "pisces"):
        mmr[wa] = one_run(t, c, hot, wide, wa)
    st.log("MMR even %.3f (controller %s), pisces %.3f (controller %s)"
           % (mmr["even"][0], mmr["even"][1], mmr["pisces"][0], mmr["pisces"][1]))
    t.check(mmr["pisces"][0] >= MMR_PISCES, "pisces: shoal-bench MMR %.3f, want >= %.2f"
            % (mmr["pisces"][0], MMR_PISCES))
    t.check(mmr["pisces"][1] is not None and mmr["pisces"][1] >= MMR_PISCES,
            "pisces: the controller's MMR (median over the measured window) %r, want >= %.2f"
            % (mmr["pisces"][1], MMR_PISCES))
    t.check(mmr["even"][0] <= mmr["pisces"][0] - 0.15, "even %.3f not clearly below pisces %.3f"
            % (mmr["even"][0], mmr["pisces"][0]))
    t.section(check_set_weight, c, hot, wide)


st.run(main, timeout=170)
