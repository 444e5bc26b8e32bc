#!/usr/bin/python3
"""What WA does in one ablation configuration, per tenant and node.

    wa_diag.py run --build BUILD [--config NAME] [--spec a|w] [--run R] [--warmup S]
                   [--duration S] --out FILE.json
    wa_diag.py show FILE.json

run: one cluster of ablation.py a's setup under the configuration NAME
(default WA+PP+FQ), both cases (even, 2x-vs-1x), or with --spec w the
tenants of ablation.py w (weights 100/10/1), samples every second of
each node's per-tenant counters (arrivals, served, queued, local weight),
the gateway's RS state and migration, and the controller's /v1/fairness,
all kept in FILE.json (with PP after ablation.py's placement phase).
show: for each case, per tenant and node over the measured window: the
share of the tenant's arrivals that land on the node (d), the local weight
the node applied, the demand-proportional weight (each node's sum split by
d x W_t among the tenants there), the requests queued, and per node its
load; whether a migration ran; per tenant and node the RS window, RTT
and base RTT; how far the weights at the most demanded node swung over the
window; then the max-min rate the nodes' capacities allow when every tenant
keeps its d (max X with X * sum_t W_t d[t][n] <= cap for every node n).
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ablation as ab  # noqa: E402
import shoalexp as sx  # noqa: E402

EXTRA_METRICS = {
    "arrived": "shoal_fnstore_tenant_arrived_requests_total",
}


def run(a):
    sx.NODE_TENANT_METRICS.update(EXTRA_METRICS)
    cfg = ab.CFG[a.config]
    out = {"config": a.config, "cases": {}}
    if a.spec == "w":
        spec, cases = ab.W_SPEC, [("w", None)]
    else:
        spec, cases = [("t%d" % i, 1, {"conc": 16}) for i in range(8)], ab.CASES
    with ab.cluster(a, cfg, ab.partitions(a, a.spec)) as c:
        loads = ab.tenants_and_loads(c, spec)
        sx.load_keys(c, loads, prefix=ab.prefix(a.run))
        ids = {}
        for case, concs in cases:
            for ld, k in zip(loads, concs or [ld.conc for ld in loads]):
                ld.conc = k
            sx.log("diag %s, %s" % (a.config, case))
            info = {}
            if cfg[3] == "milp":
                ab.settle(c, loads, a.run, 6.0, info)
            r = sx.bench(c, loads, warmup=a.warmup, duration=a.duration, prefix=ab.prefix(a.run),
                         extra=["--seed", str(a.run + 1)], sample=sx.fairness_sampler(c, gateway=True),
                         allow_errors=True)
            for x in r.samples[-1][1]["fairness"]["tenants"]:
                ids[str(x.get("id"))] = x["name"]
            out["cases"][case] = {"mmr": r.json["fairness"]["min_max_ratio"],
                                  "ops": {n: r.ops(n) for n in r.tenants},
                                  "window": r.window, "samples": r.samples,
                                  "conc": {ld.tenant.name: ld.conc for ld in loads}}
        out["ids"] = ids
    with open(a.out, "w") as f:
        json.dump(out, f)
    show_file(a.out)


def rs_means(samples, key):
    """{(tenant id, node): mean} of one RS figure over the samples."""
    acc = {}
    for s in samples:
        for tid, m in s.get("rs", {}).get(key, {}).items():
            for n, v in m.items():
                acc.setdefault((tid, int(n)), []).append(v)
    return {k: statistics.mean(v) for k, v in acc.items()}


def rates(s0, s1, key):
    """{(tenant id, node): per second} of a node counter between two samples."""
    dt = s1["t"] - s0["t"]
    out = {}
    for n, m in s1["node"].items():
        for tid, v in m[key].items():
            out[(tid, int(n))] = (v - s0["node"][n][key].get(tid, 0.0)) / dt
    return out


def means(samples, key):
    acc = {}
    for s in samples:
        for n, m in s["node"].items():
            for tid, v in m[key].items():
                acc.setdefault((tid, int(n)), []).append(v)
    return {k: statistics.mean(v) for k, v in acc.items()}


def maxmin_rate(d, tenants, nodes, cap, weight=None):
    """The equal (weighted) rate X every tenant gets when each keeps its
    split d[t][n] and the most loaded node sets the pace."""
    weight = weight or {t: 1.0 for t in tenants}
    worst = 0.0
    for n in nodes:
        worst = max(worst, sum(weight[t] * d[t].get(n, 0.0) for t in tenants) / cap)
    return 1.0 / worst if worst > 0 else float("inf")


def show(out):
    ids = out.get("ids", {})
    for case, cr in out["cases"].items():
        a, b = cr["window"]
        sm = [d for t, d in cr["samples"] if a <= t <= b]
        wu = [d for t, d in cr["samples"] if t < a]
        s0, s1 = sm[0], sm[-1]
        arr, srv = rates(s0, s1, "arrived"), rates(s0, s1, "served")
        wt, q = means(sm, "weight"), means(sm, "queued")
        win, rtt, brtt = rs_means(sm, "window"), rs_means(sm, "rtt"), rs_means(sm, "base")
        tids = sorted({k[0] for k in arr}, key=lambda x: ids.get(x, x))
        tids = [t for t in tids if sum(arr.get((t, n), 0) for n in range(ab.NODES)) > 1]
        nodes = list(range(ab.NODES))
        d = {}
        for t in tids:
            tot = sum(arr.get((t, n), 0.0) for n in nodes)
            d[t] = {n: arr.get((t, n), 0.0) / tot for n in nodes}
        load = {n: sum(srv.get((t, n), 0.0) for t in tids) / ab.CAP for n in nodes}
        qn = {n: statistics.mean(s["queued"][str(n)] if str(n) in s["queued"] else
                                 s["queued"][n] for s in sm) for n in nodes}
        print("== %s, %s: MMR %.3f; GET/s %s" % (
            out["config"], case, cr["mmr"],
            " ".join("%s %.0f" % (k, v) for k, v in sorted(cr["ops"].items()))))
        print("node load (served/cap):  " + " ".join("n%d %.2f" % (n, load[n]) for n in nodes))
        print("node queued (mean):      " + " ".join("n%d %.1f" % (n, qn[n]) for n in nodes))
        colw = {n: sum(wt.get((t, n), 0.0) for t in tids) for n in nodes}
        print("%-4s %s" % ("", "  ".join("      n%d          " % n for n in nodes)))
        print("%-4s %s" % ("", "  ".join("  d   w   w*   q  " for _ in nodes)))
        for t in tids:
            cells = []
            for n in nodes:
                dn = sum(d[u][n] for u in tids)
                ideal = colw[n] * d[t][n] / dn if dn > 0 else 0.0
                cells.append("%.2f %4.2f %4.2f %4.1f" % (d[t][n], wt.get((t, n), 0.0), ideal,
                                                      q.get((t, n), 0.0)))
            print("%-4s %s" % (ids.get(t, t), "  ".join(cells)))
        mig = [smp["migration"] for smp in sm if "migration" in smp]
        if mig:
            print("migration in the window: running in %d of %d samples, %d versions moved" % (
                sum(m["running"] > 0 for m in mig), len(mig),
                mig[-1]["moved_versions"] - mig[0]["moved_versions"]))
        if win:
            print("RS per tenant and node: window / RTT s / base RTT s (means)")
            for t in tids:
                print("%-4s %s" % (ids.get(t, t), "  ".join(
                    "%5.1f/%5.2f/%5.2f" % (win.get((t, n), 0), rtt.get((t, n), 0),
                                           brtt.get((t, n), 0)) for n in nodes)))
        hot = max(nodes, key=lambda n: sum(d[t][n] for t in tids))
        span = {}
        for smp in sm:
            for tid, v in smp["node"][str(hot)]["weight"].items():
                span.setdefault(tid, []).append(v)
        print("weights at n%d (the most demanded) over the window, least-most: %s" % (
            hot, " ".join("%s %.2f-%.2f" % (ids.get(t, t), min(span[t]), max(span[t]))
                          for t in tids if t in span)))
        x = maxmin_rate(d, tids, nodes, ab.CAP)
        print("max-min rate with these splits: %.0f GET/s per tenant; per node sum_t d: %s" % (
            x, " ".join("%.2f" % sum(d[t][n] for t in tids) for n in nodes)))
        # WA's own view over the warm-up: the largest mismatch and moves.
        st = [s["fairness"].get("wa_step", {}) for s in wu + sm]
        if st:
            print("wa_step (last): %s" % json.dumps(st[-1]))
        print()


def show_file(path):
    with open(path) as f:
        show(json.load(f))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["run", "show"])
    ap.add_argument("file", nargs="?")
    ap.add_argument("--build", default="build")
    ap.add_argument("--config", default="WA+PP+FQ", choices=sorted(ab.CFG))
    ap.add_argument("--spec", default="a", choices=["a", "w"], help="the tenants of a or of w")
    ap.add_argument("--warmup", type=float, default=15)
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--partitions", type=int, default=0,
                    help="partitions per tenant [as ablation.py's a or w]")
    ap.add_argument("--run", type=int, default=0,
                    help="the keys and seed of ablation.py's run RUN+1 [0]")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    if a.what == "show":
        show_file(a.file)
        return 0
    a.build = os.path.abspath(a.build)
    sx.catch_signals()
    run(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
