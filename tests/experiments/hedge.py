#!/usr/bin/python3
"""exp.hedge: the hedge budget under overload.

    hedge.py --build BUILD [--runs N] [--duration S] [--no-doc] [--out FILE.json]

Three nodes, each capped at 100 requests/s (--cap-ops), 1 KiB objects as
1+2 copies (a copy on every node); 128 closed-loop readers, so reads wait
at the nodes far longer than --slow-ms (200 ms). Every holder then looks
slow, and each read it hedges asks another copy: load that is not demand.
The gateway runs rs uniform and fast, with --hedge-budget 0 (no bound) and
10 (%, the default), alternated --runs times on one cluster (the gateway
restarted for each run). Per run: what shoal-bench received (GET/s, p99)
and what the nodes served (chunk GETs per GET received: the amplification),
with the gateway's hedges_total and hedges_denied_total.

Target: under uniform the budget keeps the amplification within 1.2 and
serves at least as many GETs as without it. Writes the section "hedge" of
docs/fairness.md and docs/img/hedge.png; exits 1 when the target is missed.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoalexp as sx  # noqa: E402

NODES = 3
CAP_OPS = 100
CONC = 128
KEYS = 200
CONFIGS = [("uniform", 0), ("uniform", 10), ("fast", 0), ("fast", 10)]
DOC = os.path.join(sx.SRC, "docs", "fairness.md")
ANCHOR = "## Replica selection (RS)"


def node_gets(c, tenant):
    """Chunk GETs the nodes have answered for tenant (any status)."""
    return sum(sx.metric(c.metrics_of(i), "shoal_fnstore_requests_total", op="get",
                         tenant=tenant.id) for i in range(NODES))


def one_run(c, t, load, rs, budget, args):
    c.restart("gateway", rs=rs, hedge_budget=budget)
    c.wait_tenant_known(t.key, timeout=30)
    # The nodes' count over the measured window only (the sampler's clock).
    r = sx.bench(c, [load], warmup=args.warmup, duration=args.duration,
                 sample=lambda: node_gets(c, t), sample_at=[args.warmup, args.warmup + args.duration])
    gw = c.metrics_of("gateway")
    res = r.json["tenants"][0]
    if len(r.samples) != 2:
        raise RuntimeError("the nodes' counters were not read twice: %r" % r.samples)
    served = r.samples[1][1] - r.samples[0][1]
    row = {"rs": rs, "budget": budget, "ops_per_s": res["ops_per_s"],
           "p99_ms": res["latency_us"]["p99"] / 1000.0,
           "amp": served / max(1, res["ops"]), "node_gets": served, "ops": res["ops"],
           "hedges": sx.metric(gw, "shoal_gateway_hedges_total"),
           "kept": sx.metric(gw, "shoal_gateway_hedges_denied_total")}
    sx.log("rs=%-7s budget=%2d%%  %6.1f GET/s  p99 %7.1f ms  node GETs %d  hedges %s kept %s" %
           (rs, budget, row["ops_per_s"], row["p99_ms"], row["node_gets"], row["hedges"],
            row["kept"]))
    return row


def experiment(args):
    rows = []
    with sx.Cluster(args.build, nodes=NODES, fnstore={"cap-ops": CAP_OPS},
                    gateway={"rs": "uniform", "slow-ms": 200}) as c:
        t = c.tenant("r", ec=(1, NODES - 1))
        load = sx.Load(t, conc=CONC, size="1KiB", read=1, keys=KEYS, zipf=0)
        sx.load_keys(c, [load])
        for _ in range(args.runs):
            for rs, budget in CONFIGS:
                rows.append(one_run(c, t, load, rs, budget, args))
    med = {}
    for rs, budget in CONFIGS:
        mine = [r for r in rows if r["rs"] == rs and r["budget"] == budget]
        med[(rs, budget)] = {k: sx.median([r[k] for r in mine])
                             for k in ("ops_per_s", "p99_ms", "amp", "hedges", "kept")}
    u0, u10 = med[("uniform", 0)], med[("uniform", 10)]
    ok = u10["amp"] <= 1.2 and u10["ops_per_s"] >= u0["ops_per_s"]
    table = sx.md_table(
        ["rs", "--hedge-budget", "GET/s received", "p99 (ms)", "chunk GETs served per GET",
         "hedges (whole run)", "kept waiting (whole run)"],
        [[rs, "%d %%" % b if b else "0 (no bound)", "%.0f" % m["ops_per_s"], "%.0f" % m["p99_ms"],
          sx.fmt(m["amp"], 2), "%.0f" % m["hedges"], "%.0f" % m["kept"]]
         for (rs, b), m in med.items()])
    img = sx.img_path("hedge.png", args.no_doc)
    plt = sx.pyplot()
    fig, axs = plt.subplots(1, 2, figsize=(9, 3.6))
    labels = ["%s\n%s" % (rs, "budget %d%%" % b if b else "no bound") for rs, b in CONFIGS]
    colors = ["C1" if b == 0 else "C0" for _, b in CONFIGS]
    axs[0].bar(labels, [med[k]["ops_per_s"] for k in CONFIGS], color=colors)
    axs[0].set_ylabel("GET/s received (medians)")
    axs[0].axhline(NODES * CAP_OPS, color="0.4", linestyle=":", linewidth=1)
    axs[0].annotate("the nodes' caps", (0, NODES * CAP_OPS), xytext=(0, 3),
                    textcoords="offset points", fontsize=8)
    axs[1].bar(labels, [med[k]["amp"] for k in CONFIGS], color=colors)
    axs[1].set_ylabel("chunk GETs served per GET received")
    axs[1].axhline(1.0, color="0.4", linestyle=":", linewidth=1)
    for ax in axs:
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle("Hedged reads under overload: 3 nodes capped at %d/s, %d readers"
                 % (CAP_OPS, CONC), fontsize=10)
    fig.tight_layout()
    fig.savefig(img, dpi=100)
    plt.close(fig)
    body = """### The hedge budget under overload

`/usr/bin/python3 tests/experiments/hedge.py --build build` (ctest `exp.hedge`).
%d nodes capped at %d requests/s, 1 KiB objects as 1+2 copies, %d closed-loop
readers (reads wait at the nodes far past `--slow-ms` 200), the gateway
restarted per run with `--rs` and `--hedge-budget`; %d runs of each, alternated,
%g s measured after %g s; medians. Target: under uniform the budget keeps the
chunk GETs served per GET within 1.2 and serves at least as many GETs as no
bound: %s.

%s

![hedges under overload](img/hedge.png)

Without a bound uniform asks a second copy of most reads, the nodes spend
their capacity on copies nobody waits for, and fewer reads are answered.
fast keeps each node's backlog at its window, so its reads are rarely
overdue and the budget does not bind.

Machine: %s.
""" % (NODES, CAP_OPS, CONC, args.runs, args.duration, args.warmup,
       sx.verdict(ok), table, sx.machine())
    sx.write_section(DOC, "hedge", body, heading_anchor=ANCHOR, no_doc=args.no_doc)
    return ok, {"rows": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--duration", type=float, default=8)
    ap.add_argument("--warmup", type=float, default=2)
    ap.add_argument("--no-doc", action="store_true")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    sx.catch_signals()
    return sx.run_experiments({"hedge": experiment}, ["hedge"], args, args.out)


if __name__ == "__main__":
    sys.exit(main())
