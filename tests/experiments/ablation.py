#!/usr/bin/python3
"""exp.ablation_*: system-wide fairness, each Pisces mechanism on and off.

    ablation.py a|c|w|d|o|all --build BUILD [--runs N] [--duration S] [--warmup S]
                            [--partitions N] [--configs A,B] [--no-doc] [--out FILE.json]

a  the ablation (the Pisces talk, slide 27): 8 tenants of weight 1 on 6
   nodes with equal --cap-ops, GET 1 KiB, Zipf 0.99 over each tenant's
   keys, 8 partitions per tenant of 1+2 copies (3 of the 6 nodes: hash
   leaves some node over the headroom, so PP has work); even demand (32
   outstanding each) and 2x-vs-1x demand (4 tenants at 64, 4 at 32).
   Configurations: none (fifo / uniform / even / hash), FQ, PP+FQ,
   WA+PP+FQ, RS+PP+FQ and all four. Target: all four MMR >= 0.95 in both
   cases (moonshot 0.99), and each mechanism adds
c  all four (and RS+PP+FQ) as in a at twice the concurrency, 1.5x as long:
   whether a's gap comes from tenants not waiting at every node
w  weights of 100x / 10x / 1x (1, 2 and 5 tenants: the talk's 4/20/40
   scaled), the load shape of a over 16 partitions per tenant (the
   controller's default, as d and o), none against all four;
   target MMR of throughput/weight >= 0.95
d  dynamic: steady, bursty and diurnal tenants (shoal-bench schedules),
   none against all four; MMR per 5 s over the tenants that are asking
   for at least the steady tenants' load
o  overhead: all four against none on uncapped nodes, GET 1 KiB, one
   cluster restarted with each configuration, runs alternated; target < 5 %

The mechanisms: FQ = `shoal-fnstore --sched drfq` (else fifo), RS =
`shoal-gateway --rs fast` (else uniform), WA = `shoal-controller --wa
pisces` (else even), PP = `shoal-controller --pp milp` (else hash). With PP
the script asks for `shoalctl placement rebalance` once the gateways have
reported demand (the automatic trigger is off, so every run re-places at
the same point), in a placement phase under load before the warm-up that
lasts until the migration is over.
Each experiment writes its section of docs/fairness.md and its plot
docs/img/ablation_<x>.png, and exits 1 when its target is missed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoalexp as sx  # noqa: E402

NODES = 6
EC = (1, 2)  # a partition's copies on 3 of the 6 nodes
CAP = 300    # requests/s per node: 1800 in all, well under what the machine serves
KEYS = 100
# Partitions per tenant. a and c: 8, where rows placed by hash leave some
# node over the headroom under its fair-share load (Pisces' strawman), so PP
# has something to do; at 16 every node was within it in most runs and PP
# moved 0-7 partitions. w, d and o: the controller's default.
PARTITIONS = {"a": 8, "c": 8}
CTL_PARTITIONS = 16
ZIPF = 0.99
# Hedged reads off, as in fq.py: a read waiting its turn is not new demand,
# and a hedged copy costs the tenant's own share (with 600000 rather than 0,
# rs fast still hedged after RTT + 4 deviations).
GATEWAY = {"slow-ms": 0, "io-timeout-ms": 60000}
# PP re-places when the script asks (rebalance), never on its own trigger.
PP_FLAGS = {"pp-checks": 1000, "pp-interval-ms": 60000}
DOC = os.path.join(sx.SRC, "docs", "fairness.md")
ANCHOR = "## System-wide fairness experiments"
COLORS = ["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7"]
NO_DOC = False

# name -> (sched, rs, wa, pp)
CONFIGS = [
    ("none", ("fifo", "uniform", "even", "hash")),
    ("FQ", ("drfq", "uniform", "even", "hash")),
    ("PP+FQ", ("drfq", "uniform", "even", "milp")),
    ("WA+PP+FQ", ("drfq", "uniform", "pisces", "milp")),
    ("RS+PP+FQ", ("drfq", "fast", "even", "milp")),
    ("all four", ("drfq", "fast", "pisces", "milp")),
]
CFG = dict(CONFIGS)
PISCES = {"none": (0.57, 0.36), "FQ": (0.59, 0.58), "PP+FQ": (0.64, 0.74),
          "WA+PP+FQ": (0.93, 0.96), "all four": (0.98, 0.97)}


def partitions(a, which):
    """Partitions per tenant of experiment which (a, c, w, d, o)."""
    return a.partitions or PARTITIONS.get(which, CTL_PARTITIONS)


def cluster(a, cfg, parts, cap=CAP):
    sched, rs, wa, pp = cfg
    ctl = {"wa": wa, "pp": pp, "partitions": parts}
    if pp == "milp":
        ctl.update(PP_FLAGS)
    fns = {"sched": sched}
    if cap:
        fns["cap-ops"] = cap
    return sx.Cluster(a.build, nodes=NODES, controller=ctl, gateway=dict(GATEWAY, rs=rs),
                      fnstore=fns, name="exp-abl")


def placement_status(c):
    return json.loads(c.shoalctl("--json", "placement", "status").stdout.decode())


def rebalance(c, out):
    """shoalctl placement rebalance, then waits for the migration to finish;
    what it did goes into out."""
    t0 = time.monotonic()
    p = c.shoalctl("--json", "placement", "rebalance", check=False, timeout=60)
    try:
        rb = json.loads(p.stdout.decode())
    except ValueError:
        rb = {"error": (p.stdout + p.stderr).decode(errors="replace")[-300:]}
    out["rebalance"] = rb
    sx.log("rebalance: %s" % rb)
    end = time.monotonic() + 180
    while time.monotonic() < end:
        s = placement_status(c)
        if s["moving_partitions"] == 0 and not s["migrating"]:
            break
        time.sleep(0.5)
    out["migrated_s"] = time.monotonic() - t0
    out["status"] = s


def per_bin_mmr(series, weights, counted, width):
    """[(start, MMR of mean ops/weight over [start, start + width))] over the
    tenants counted(name, start), bins aligned on 0."""
    by = {}
    for r in series:
        b = int(r["second"] // width) * width
        by.setdefault(b, {}).setdefault(r["tenant"], []).append(r["ops_per_s"])
    out = []
    for b in sorted(by):
        names = [n for n, v in by[b].items() if n in weights and len(v) == width and counted(n, b)]
        if len(names) >= 2:
            out.append((b, sx.mmr(sum(by[b][n]) / width / weights[n] for n in names)))
    return out


def per_second_mmr(series, weights, counted=None):
    """[(second, MMR of ops/weight over the tenants counted that second)]."""
    by = {}
    for r in series:
        by.setdefault(r["second"], {})[r["tenant"]] = r["ops_per_s"]
    out = []
    for s in sorted(by):
        names = [n for n in by[s] if n in weights and (counted is None or counted(n, s))]
        if len(names) >= 2:
            out.append((s, sx.mmr(by[s][n] / weights[n] for n in names)))
    return out


def prefix(run):
    """Keys of run r are named apart (another prefix: other partitions are hot)
    and read in another order (another seed): runs differ in where the hot
    partitions sit, not only in timing."""
    return "r%d/" % run


def settle(c, loads, run, rebalance_at, info):
    """The placement phase before a run with PP: load for rebalance_at s
    (the gateway has reported the partitions' demand by then), shoalctl
    placement rebalance, and load on until the migration is over. A
    migration's reads are charged to the shares of the tenants whose
    partitions move, so one still running in the measured window counts as
    their loss."""
    t0 = time.monotonic()
    done = threading.Event()

    def rb():
        time.sleep(rebalance_at)
        try:
            rebalance(c, info)
        finally:
            done.set()
    th = threading.Thread(target=rb, daemon=True)
    th.start()
    while not done.is_set():
        sx.bench(c, loads, warmup=0, duration=2, prefix=prefix(run),
                 extra=["--seed", str(run + 1)], allow_errors=True)
    th.join()
    info["at"] = time.monotonic() - t0


def run_case(c, a, loads, pp, warmup, duration, run=0, rebalance_at=6.0):
    """One shoal-bench run over loads with samples every second; with PP
    after the placement phase (settle)."""
    info = {}
    if pp == "milp":
        settle(c, loads, run, rebalance_at, info)
    r = sx.bench(c, loads, warmup=warmup, duration=duration, prefix=prefix(run),
                 extra=["--seed", str(run + 1)], sample=sx.fairness_sampler(c),
                 allow_errors=True)
    summ = sx.summarize_samples(c, r.measured_samples(1.0))
    weights = {ld.tenant.name: ld.weight for ld in loads}
    # The MMR a perfectly fair run would show from counting noise alone:
    # each tenant's mean over n seconds has a relative standard error
    # sd/sqrt(n)/mean, and the range of 8 normal samples is about 2.85 sd.
    ses = []
    for n, pts in sx.series_by_tenant([x for x in r.series if x["phase"] == "run"]).items():
        vs = [v for _, v in pts]
        if len(vs) >= 3 and statistics.mean(vs) > 0:
            ses.append(statistics.stdev(vs) / len(vs) ** 0.5 / statistics.mean(vs))
    noise_mmr = 1 - 2.85 * statistics.median(ses) if ses else None
    out = {"ops": {n: r.ops(n) for n in r.tenants}, "weight": weights,
           "mmr": r.json["fairness"]["min_max_ratio"], "jain": r.json["fairness"]["jain"],
           "total": sum(r.ops(n) for n in r.tenants), "summary": summ, "pp": info,
           "noise_mmr": noise_mmr,
           "series": r.series,
           "errors": {n: r.tenants[n]["status"] for n in r.tenants if r.tenants[n]["errors"]}}
    sx.log("ops %s, MMR %.3f, total %.0f/s, node load %.2f-%.2f, CPU %.2f cores%s" % (
        {k: round(v) for k, v in out["ops"].items()}, out["mmr"], out["total"],
        summ.get("node_load_min", 0), summ.get("node_load_max", 0), summ.get("cpu_cores") or 0,
        (", errors %r" % out["errors"]) if out["errors"] else ""))
    return out


def tenants_and_loads(c, spec):
    """spec: [(name, weight, Load kwargs)] -> Loads (tenants created)."""
    ts = [c.tenant(n, weight=w, ec=EC) for n, w, _ in spec]
    return [sx.Load(t, keys=KEYS, zipf=ZIPF, **kw) for t, (_, _, kw) in zip(ts, spec)]


def write(a, name, body):
    sx.write_section(DOC, name, body, ANCHOR, a.no_doc)


def img(name):
    return sx.img_path(name, NO_DOC)


verdict, fmt, pct = sx.verdict, sx.fmt, sx.pct


def strip(x):
    """A result without its series, for the JSON output."""
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k != "series"}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x


def build_note(build):
    """The commit of the source the executables were built from (no paths:
    the page names commits, not someone's directories)."""
    src = ""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    src = line.split("=", 1)[1].strip()
    except OSError:
        pass
    rev = subprocess.run(["git", "-C", src or ".", "rev-parse", "--short", "HEAD"],
                         capture_output=True).stdout.decode().strip() if src else ""
    return "built at %s" % rev if rev else "built from an unknown commit"


def machine_note(a):
    return "Machine: %s. Executables: %s." % (sx.machine(), build_note(a.build))


# ----------------------------------------------------------------------------- a

CASES = [("even", [32] * 8), ("2x-vs-1x", [64] * 4 + [32] * 4)]


def chosen(names):
    """names less those --configs leaves out (for trials)."""
    return [n for n in names if n in dict(CONFIGS)]


def run_matrix(a, tag, configs, cases, duration):
    """Each configuration (names) in a fresh cluster per run, which runs
    the cases [(name, [conc per tenant])] in order; runs interleaved."""
    names = ["t%d" % i for i in range(8)]
    res = {(cf, case): [] for cf in configs for case, _ in cases}
    order = []
    for r in range(a.runs):
        order += [(r, cf) for cf in (configs if r % 2 == 0 else configs[::-1])]
    for r, cf in order:
        cfg = CFG[cf]
        with cluster(a, cfg, partitions(a, tag)) as c:
            loads = tenants_and_loads(c, [(n, 1, {"conc": 16}) for n in names])
            sx.load_keys(c, loads, prefix=prefix(r))
            for case, concs in cases:
                for ld, k in zip(loads, concs):
                    ld.conc = k
                sx.log("%s %s, %s, run %d" % (tag, cf, case, r + 1))
                res[(cf, case)].append(run_case(c, a, loads, cfg[3], a.warmup, duration,
                                                run=r))
    return res


def run_spec(a, tag, spec, configs, duration):
    """Tenants spec [(name, weight, Load kwargs)] under each configuration
    (names), a fresh cluster per run, runs interleaved: {config: [run]}."""
    res = {cf: [] for cf in configs}
    for r in range(a.runs):
        for cf in (configs if r % 2 == 0 else configs[::-1]):
            with cluster(a, CFG[cf], partitions(a, tag)) as c:
                loads = tenants_and_loads(c, spec)
                sx.load_keys(c, loads, prefix=prefix(r))
                sx.log("%s %s run %d" % (tag, cf, r + 1))
                res[cf].append(run_case(c, a, loads, CFG[cf][3], a.warmup, duration, run=r))
    return res


def exp_a(a):
    res = run_matrix(a, "a", [cf for cf, _ in CONFIGS], CASES, a.duration)
    ok, rows = True, []
    med = {}
    for cf, cfg in CONFIGS:
        row = [cf, "/".join(cfg)]
        for case, _ in CASES:
            runs = res[(cf, case)]
            m = sx.median(x["mmr"] for x in runs)
            med[(cf, case)] = m
            if cf == "all four":
                ok = ok and m >= 0.95
            p = PISCES.get(cf)
            row += [fmt(m), " ".join(fmt(x["mmr"]) for x in runs),
                    fmt(p[0 if case == "even" else 1], 2) if p else "-"]
        allr = res[(cf, "even")] + res[(cf, "2x-vs-1x")]
        row += ["%.0f" % sx.median(x["total"] for x in allr),
                "%s-%s" % (fmt(sx.median(x["summary"].get("node_load_min") for x in allr), 2),
                           fmt(sx.median(x["summary"].get("node_load_max") for x in allr), 2)),
                fmt(sx.median(x["summary"].get("cpu_cores") for x in allr), 2),
                pp_note(allr)]
        rows.append(row)
    table = sx.md_table(["configuration", "sched/rs/wa/pp", "MMR even", "runs", "Pisces",
                         "MMR 2x-vs-1x", "runs", "Pisces", "GET/s (all tenants)",
                         "node load least-most", "CPU (cores)", "placement"], rows)
    # The plot: per-second MMR of the median run of each configuration.
    grid = []
    for case, _ in CASES:
        lines = []
        for i, (cf, _) in enumerate(CONFIGS):
            runs = sorted(res[(cf, case)], key=lambda x: x["mmr"])
            run = runs[(len(runs) - 1) // 2]
            pts = per_second_mmr(run["series"], run["weight"])
            lines.append(("%s (%.2f)" % (cf, run["mmr"]), [(s + 0.5, v) for s, v in pts],
                          {"color": COLORS[i]}))
        grid.append([("%s demand" % case, lines, [], [(0, a.warmup, "warm-up")])])
    sx.plot_grid(img("ablation_a.png"), [[g[0] for g in grid]],
                 "a. ablation: per-second min-max ratio of GET/s (median run; warm-up "
                 "shaded, after the placement phase)", "min-max ratio", figsize=(13, 4.2),
                 ylim=(0, 1.05))
    adds = each_adds(med)
    body = """### a. The ablation

`%s` (ctest `exp.ablation_a`, label `experiment`). %d nodes with
`--cap-ops %d` each (%d GET/s in all); 8 tenants of weight 1, each with
%d keys of 1 KiB read by shoal-bench with Zipf %.2f (one thread, GET
only); every partition is 1+2 copies (%d partitions per tenant, each on
3 of the 6 nodes by the placement rows: with 8, hash leaves some node over
the headroom under the fair-share load in most runs, as Pisces' strawman
does; with the controller's 16 it seldom did, and PP had little to move);
hedged reads off (`--slow-ms 0`). Even demand: 32 outstanding per
tenant; 2x-vs-1x: t0-t3 at 64, t4-t7 at 32. One fresh cluster per
configuration and run, which runs both cases one after the other (even
first); %g s warm-up, %g s measured each.
Runs differ in the keys' names and shoal-bench's seed, so each run has
its hot partitions elsewhere.
With PP, a placement phase before each warm-up: the same load, `shoalctl
placement rebalance` after 6 s (the gateway has reported the partitions'
demand by then), and the load on until the migration is over (a migration's
reads are charged to the moving tenants' shares); the automatic trigger is
off. Medians over %d run(s) per
configuration (runs of the configurations interleaved).

%s

Target: all four at MMR >= 0.95 in both cases (moonshot 0.99): %s;
%s

- **MMR** is shoal-bench's: min over max of the tenants' GET/s over the
  measured window (all weight 1; every tenant is closed-loop and asks for
  more than an eighth). **Pisces** is the talk's figure for the same
  configuration (it has no RS+PP+FQ). **Node load** is the controller's
  `shoal_node_dominant_load` of the least and the most loaded node
  (median over the window; 1 = the cap), **CPU** the cluster's processes.
  **Placement**: partitions moved by the re-placements of the run(s)
  (median) and the solver's utilisation before -> after.

![a](img/ablation_a.png)

Per-second min-max ratio of the median run of each configuration (of an even number, the lower; its
window's MMR in the legend).

Per tenant (median run):

%s

%s

%s
""" % (a.cmd("a"), NODES, CAP, NODES * CAP, KEYS, ZIPF, partitions(a, "a"), a.warmup,
       a.duration, a.runs, table, verdict(ok), adds, findings_a(res, med), pp_finding(res),
       machine_note(a))
    write(a, "ablation_a", body)
    return ok, {"%s|%s" % k: strip(v) for k, v in res.items()}


def pp_note(runs):
    moved, ub, ua = [], [], []
    for x in runs:
        rb = x["pp"].get("rebalance")
        if rb and "partitions_moved" in rb:
            moved.append(rb["partitions_moved"])
            if rb.get("util_before") is not None:
                ub.append(rb["util_before"])
                ua.append(rb["util_after"])
    if not moved:
        return "-"
    s = "%g moved" % sx.median(moved)
    if ub:
        s += ", util %.2f -> %.2f" % (sx.median(ub), sx.median(ua))
    return s


def pp_finding(res):
    """What the re-placements did, over every run with PP."""
    rbs = [x["pp"].get("rebalance") or {} for k, runs in res.items()
           for x in runs if CFG[k[0]][3] == "milp"]
    if not rbs:
        return ""
    moved = [rb for rb in rbs if rb.get("changed")]
    txt = ("**Placement** re-placed %d times out of %d rebalances (partitions moved: %s)."
           % (len(moved), len(rbs), " ".join(str(rb.get("partitions_moved", "-")) for rb in rbs)))
    if len(moved) < len(rbs):
        txt += """ A rebalance that moves nothing found every node within
the headroom under the fair-share load (each copy carrying a third of its
partition's reads), or no placement that fits or lowers the utilisation by
5 points (`ctl_pp_accept`)."""
    return txt


def each_adds(med):
    """A sentence on whether each step of the ablation adds to the MMR."""
    steps = [("none", "FQ"), ("FQ", "PP+FQ"), ("PP+FQ", "WA+PP+FQ"), ("PP+FQ", "RS+PP+FQ"),
             ("WA+PP+FQ", "all four"), ("RS+PP+FQ", "all four")]
    parts = []
    for case, _ in CASES:
        xs = ["%s -> %s %+.3f" % (f, t, med[(t, case)] - med[(f, case)]) for f, t in steps
              if (f, case) in med and (t, case) in med]
        parts.append("%s: %s" % (case, ", ".join(xs)))
    return "each mechanism adds (change of the median MMR): " + "; ".join(parts) + "."


def findings_a(res, med):
    """Figures the findings are written from, generated: the per-tenant
    GET/s of the median run of none and all four."""
    out = []
    for cf in ("none", "FQ", "all four"):
        for case, _ in CASES:
            if (cf, case) not in res:
                continue
            runs = sorted(res[(cf, case)], key=lambda x: x["mmr"])
            run = runs[(len(runs) - 1) // 2]
            out.append("- %s, %s: GET/s per tenant %s" % (
                cf, case, ", ".join("%s %.0f" % (n, run["ops"][n]) for n in sorted(run["ops"]))))
    return "\n".join(out)


# ----------------------------------------------------------------------------- c


def exp_c(a):
    cases = [("even", [64] * 8), ("2x-vs-1x", [128] * 4 + [64] * 4)]
    configs = chosen(["RS+PP+FQ", "all four"])
    dur = 1.5 * a.duration
    res = run_matrix(a, "c", configs, cases, dur)
    rows, ok = [], True
    for cf in configs:
        row = [cf]
        for case, _ in cases:
            runs = res[(cf, case)]
            m = sx.median(x["mmr"] for x in runs)
            if cf == "all four":
                ok = ok and m >= 0.95
            row += [fmt(m), " ".join(fmt(x["mmr"]) for x in runs),
                    fmt(sx.median(x["summary"].get("ctl_mmr") for x in runs)),
                    fmt(sx.median(x.get("noise_mmr") for x in runs))]
        allr = res[(cf, "even")] + res[(cf, "2x-vs-1x")]
        row += ["%.0f" % sx.median(x["total"] for x in allr),
                fmt(sx.median(x["summary"].get("node_load_min") for x in allr), 2),
                pct(sx.median(x["summary"].get("queue_empty_frac") for x in allr))]
        rows.append(row)
    table = sx.md_table(["configuration", "MMR even (64 each)", "runs", "controller", "noise",
                         "MMR 2x-vs-1x (128 / 64)", "runs", "controller", "noise", "GET/s (all)",
                         "least node load", "node queues empty"], rows)
    lines = []
    for i, cf in enumerate(configs):
        for j, (case, _) in enumerate(cases):
            runs = sorted(res[(cf, case)], key=lambda x: x["mmr"])
            run = runs[(len(runs) - 1) // 2]
            pts = per_bin_mmr(run["series"], run["weight"], lambda n, s: True, BIN)
            lines.append(("%s, %s (%.3f)" % (cf, case, run["mmr"]),
                          [(s + BIN / 2, v) for s, v in pts],
                          {"color": COLORS[i], "linestyle": "-" if j == 0 else "--",
                           "marker": "o"}))
    sx.plot_lines(img("ablation_c.png"), lines, "c. twice the concurrency: MMR of each %d s "
                  "(median run; warm-up shaded)" % BIN, "min-max ratio",
                  spans=[(0, a.warmup, "warm-up")], ylim=(0.5, 1.02))
    body = """### c. The ablation's best configurations at twice the concurrency

`%s` (ctest `exp.ablation_c`). The setup of a with every tenant's
concurrency doubled (even: 64 outstanding each; 2x-vs-1x: t0-t3 at 128,
t4-t7 at 64), for RS+PP+FQ and all four, %g s warm-up, %g s measured,
%d run(s) each. It asks whether the gap to the target in a comes from the
mechanisms or from tenants that are not waiting at every node.

%s

Target: all four at MMR >= 0.95 in both cases: %s. **Controller** is the
median of `/v1/fairness`'s MMR over the window (served dominant cost per
weight at the nodes, EWMA); **noise** the MMR that counting noise alone
would give a perfectly fair run (1 - 2.85 x the median over tenants of
the relative standard error of its per-second GET/s, as if the seconds
were independent; a rough bound); **node queues empty** how often a node
had nothing queued at a sample.

![c](img/ablation_c.png)

%s
""" % (a.cmd("c"), a.warmup, dur, a.runs, table, verdict(ok), machine_note(a))
    write(a, "ablation_c", body)
    return ok, {"%s|%s" % k: strip(v) for k, v in res.items()}


# ----------------------------------------------------------------------------- w


W_SPEC = [("h0", 100, {"conc": 256})] + [("m%d" % i, 10, {"conc": 64}) for i in range(2)] + \
    [("l%d" % i, 1, {"conc": 16}) for i in range(5)]


def exp_w(a):
    spec = W_SPEC
    configs = chosen(["none", "all four"])
    dur = 2 * a.duration
    res = run_spec(a, "w", spec, configs, dur)
    ok = "all four" in res and sx.median(x["mmr"] for x in res["all four"]) >= 0.95
    rows = []
    for cf in configs:
        runs = res[cf]
        per = []
        for w in (100, 10, 1):
            ns = [n for n, ww, _ in spec if ww == w]
            xs = [sx.median(x["ops"][n] for x in runs) / w for n in ns]
            per.append("%.1f" % statistics.mean(xs) + (" (%s)" % fmt(sx.mmr(xs)) if len(xs) > 1
                                                       else ""))
        rows.append([cf, fmt(sx.median(x["mmr"] for x in runs)),
                     " ".join(fmt(x["mmr"]) for x in runs),
                     fmt(sx.median(x["jain"] for x in runs), 4)] + per +
                    ["%.0f" % sx.median(x["total"] for x in runs),
                     fmt(sx.median(x["summary"].get("node_load_min") for x in runs), 2),
                     pp_note(runs)])
    table = sx.md_table(["configuration", "MMR (GET/s / weight)", "runs", "Jain",
                         "100x: GET/s per weight", "10x (MMR within)", "1x (MMR within)",
                         "GET/s (all)", "least node load", "placement"], rows)
    grid = []
    for cf in configs:
        runs = sorted(res[cf], key=lambda x: x["mmr"])
        run = runs[(len(runs) - 1) // 2]
        by = sx.series_by_tenant(run["series"])
        lines = [(n, [(s + 0.5, v / run["weight"][n]) for s, v in by.get(n, [])],
                  {"color": COLORS[i]}) for i, (n, _, _) in enumerate(spec)]
        grid.append(("%s: MMR %.3f" % (cf, run["mmr"]), lines, [], [(0, a.warmup, "warm-up")],
                     {"logy": True}))
    sx.plot_grid(img("ablation_w.png"), [grid], "w. weights 100x / 10x / 1x, system-wide "
                 "(median run)", "GET/s per unit of weight (log)", figsize=(12, 4.2))
    body = """### w. Weights 100x / 10x / 1x, system-wide

`%s` (ctest `exp.ablation_w`). The setup of a (6 nodes x `--cap-ops
%d`, 1+2 copies, Zipf %.2f over %d keys of 1 KiB), %d partitions per tenant,
with tenants h0 (weight 100, 256 outstanding), m0-m1 (10, 64 each) and
l0-l4 (1, 16 each): the Pisces talk's 4 / 20 / 40 tenants scaled to 1 /
2 / 5. Fair shares are
%.0f, %.0f and %.1f GET/s (u x capacity is not applied: MMR is of
GET/s per weight among tenants that all ask for more). none against all
four (with PP: a placement phase first, as in a), %g s warm-up, %g s
measured, %d run(s) each.

%s

Target: all four at MMR >= 0.95: %s.

![w](img/ablation_w.png)

GET/s per unit of weight per tenant and second (log scale): fair is one
line for all.

%s
""" % (a.cmd("w"), CAP, ZIPF, KEYS, partitions(a, "w"), NODES * CAP * 100 / 125,
       NODES * CAP * 10 / 125, NODES * CAP / 125, a.warmup, dur, a.runs, table, verdict(ok),
       machine_note(a))
    write(a, "ablation_w", body)
    return ok, strip(res)


# ----------------------------------------------------------------------------- d

STEADY = 32
BIN = 5  # seconds per MMR figure in d: one second of ~200 GETs per tenant is too noisy


def exp_d(a):
    burst = "burst:base=4/peak=64/every=30s/for=10s/at=%gs"
    burst, burst_late = burst % (a.warmup + 5), burst % (a.warmup + 15)
    sine = "sine:min=4/max=64/period=40s"
    sine_late = "sine:min=4/max=64/period=40s/phase=0.5"
    spec = [("s%d" % i, 1, {"conc": STEADY}) for i in range(4)] + \
        [("b0", 1, {"conc": burst}), ("b1", 1, {"conc": burst_late}),
         ("d0", 1, {"conc": sine}), ("d1", 1, {"conc": sine_late})]
    configs = chosen(["none", "all four"])
    dur = 3 * a.duration
    res = run_spec(a, "d", spec, configs, dur)

    def conc_at(n, t):
        kw = dict((x[0], x[2]) for x in spec)[n]["conc"]
        return schedule_value(kw, t)

    def counted(n, s):
        # A bin [s, s + BIN) counts a tenant asking for at least the steady
        # load through it and the second before (its closed loop ramps up);
        # s + BIN is the next bin's (a burst ending there still counts).
        return min(conc_at(n, s - 1 + 0.25 * i) for i in range(4 * (BIN + 1))) >= STEADY

    rows, per_cf = [], {}
    for cf in configs:
        runs = res[cf]
        per = []
        for x in runs:
            pts = [(s, v) for s, v in per_bin_mmr(x["series"], x["weight"], counted, BIN)
                   if s >= a.warmup]
            x["mmr_s"] = pts
            per.append(sx.median(v for _, v in pts))
        per_cf[cf] = sx.median(per)
        rows.append([cf, fmt(per_cf[cf]), " ".join(fmt(v) for v in per),
                     fmt(sx.median(min(v for _, v in x["mmr_s"]) for x in runs)),
                     fmt(sx.median(x["mmr"] for x in runs)),
                     fmt(sx.median(x["summary"].get("node_load_min") for x in runs), 2),
                     pp_note(runs)])
    ok = per_cf.get("all four", 0.0) >= 0.95
    table = sx.md_table(["configuration", "MMR per %d s (median)" % BIN, "runs",
                         "MMR per %d s (lowest)" % BIN, "MMR of the whole window",
                         "least node load", "placement"], rows)
    grid = []
    for cf in configs:
        run = res[cf][0]
        by = sx.series_by_tenant(run["series"])
        lines = [(n, [(s + 0.5, v) for s, v in by.get(n, [])], {"color": COLORS[i]})
                 for i, (n, _, _) in enumerate(spec)]
        grid.append(("%s: GET/s per tenant" % cf, lines, [], [(0, a.warmup, "warm-up")]))
    grid2 = [("%s: MMR per %d s of the tenants asking >= %d outstanding" % (cf, BIN, STEADY),
              [("MMR", [(s + BIN / 2, v) for s, v in res[cf][0]["mmr_s"]],
                {"color": "C0", "marker": "o"})], [],
              [(0, a.warmup, "warm-up")]) for cf in configs]
    sx.plot_grid(img("ablation_d.png"), [grid, grid2], "d. dynamic demand: steady s0-s3, bursty "
                 "b0-b1, diurnal d0-d1 (first run)", "", sharey="row", figsize=(13, 7.5))
    body = """### d. Dynamic demand, system-wide

`%s` (ctest `exp.ablation_d`). The setup of a, %d partitions per tenant;
8 tenants of weight 1: s0-s3 steady (%d outstanding), b0-b1 bursty (b0
`conc=%s`, b1 10 s later), d0-d1 diurnal (`conc=%s`, d1 half a period
later). none against all four, %g s warm-up, %g s measured, %d run(s)
each. Over every %d s of the measured window, the MMR of mean GET/s is
taken over the tenants whose concurrency was at least %d through those
seconds and the one before (steady ones always; a bursty one in its
bursts; a diurnal one near its peak): they all ask for more than an
eighth of the cluster.

%s

Target: the median of those MMRs for all four >= 0.95: %s.

![d](img/ablation_d.png)

Top: GET/s per tenant and second; bottom: the MMR of each %d s over the
tenants counted in it.

%s
""" % (a.cmd("d"), partitions(a, "d"), STEADY, burst, sine, a.warmup, dur, a.runs, BIN, STEADY,
       table, verdict(ok), BIN, machine_note(a))
    write(a, "ablation_d", body)
    return ok, strip(res)


def schedule_value(v, t):
    """The value of a shoal-bench schedule (or number) at t seconds."""
    import math
    v = str(v)
    if ":" not in v:
        return float(v)
    kind, rest = v.split(":", 1)
    kv = dict(p.split("=") for p in rest.split("/"))

    def sec(x):
        return float(x.rstrip("s"))
    if kind == "burst":
        at = sec(kv.get("at", "0s"))
        if t < at:
            return float(kv["base"])
        return float(kv["peak"]) if (t - at) % sec(kv["every"]) < sec(kv["for"]) \
            else float(kv["base"])
    if kind == "sine":
        lo, hi, per = float(kv["min"]), float(kv["max"]), sec(kv["period"])
        ph = float(kv.get("phase", 0))
        return lo + (hi - lo) * (1 - math.cos(2 * math.pi * (t / per + ph))) / 2
    raise ValueError("schedule %s" % v)


# ----------------------------------------------------------------------------- o


def exp_o(a):
    configs = ["all four", "none"]  # o compares the two: --configs does not apply
    runs = max(a.runs, 4)
    # Uncapped runs need no settling: the machine, not a mechanism, is the bottleneck.
    warm, dur = min(a.warmup, 3), min(a.duration, 10)
    res = {cf: [] for cf in configs}
    spec = [("t%d" % i, 1, {"conc": 16}) for i in range(4)]
    with cluster(a, CFG["all four"], partitions(a, "o"), cap=0) as c:
        ts = [c.tenant(n, weight=w, ec=EC) for n, w, _ in spec]
        loads = [sx.Load(t, keys=KEYS, zipf=0, **kw) for t, (_, _, kw) in zip(ts, spec)]
        sx.load_keys(c, loads, prefix=prefix(0))
        nodes = c.node_names()

        def snap():
            cpu = c.cpu_seconds()
            gets = sx.metric(c.metrics_of("gateway"), "shoal_gateway_requests_total", op="get")
            return time.monotonic(), cpu, gets

        for r in range(runs):
            for cf in (configs if r % 2 == 0 else configs[::-1]):
                sched, rs, wa, pp = CFG[cf]
                c.args["gateway"]["rs"] = rs
                c.stop(["gateway"])
                c.restart("controller", wa=wa, pp=pp)
                c.restart("fnstore", sched=sched)
                c.start(["gateway"])
                c.wait_tenant_known(ts[0].key, timeout=30)
                br = sx.bench(c, loads, warmup=warm, duration=dur, sample=snap,
                              prefix=prefix(0),
                              sample_at=(warm + 0.5, warm + dur - 0.5))
                (ta, ca, ga), (tb, cb, gb) = [d for _, d in br.samples]
                cpu = sum(cb[p] - ca[p] for p in cb)
                run = {"ops": sum(br.ops(n) for n in br.tenants),
                       "us": 1e6 * cpu / max(gb - ga, 1),
                       "node_us": 1e6 * sum(cb[p] - ca[p] for p in nodes) / max(gb - ga, 1),
                       "mmr": br.json["fairness"]["min_max_ratio"], "load": os.getloadavg()[0]}
                sx.log("o %s run %d: %.0f GET/s, %.1f us CPU/GET (nodes %.1f), MMR %.3f, "
                       "load %.1f" % (cf, r + 1, run["ops"], run["us"], run["node_us"],
                                      run["mmr"], run["load"]))
                res[cf].append(run)
    med = {cf: {k: sx.median(x[k] for x in res[cf]) for k in ("ops", "us", "node_us")}
           for cf in configs}
    d_tp = (med["none"]["ops"] - med["all four"]["ops"]) / med["none"]["ops"]
    d_cpu = (med["all four"]["us"] - med["none"]["us"]) / med["none"]["us"]
    ok = d_tp < 0.05 and d_cpu < 0.05
    rows = [[cf, "/".join(CFG[cf]), "%.0f" % med[cf]["ops"],
             " ".join("%.0f" % x["ops"] for x in res[cf]), "%.1f" % med[cf]["us"],
             " ".join("%.1f" % x["us"] for x in res[cf]), "%.1f" % med[cf]["node_us"]]
            for cf in configs]
    table = sx.md_table(["configuration", "sched/rs/wa/pp", "GET/s (median)", "runs",
                         "CPU us per GET (all processes)", "runs", "of which nodes"], rows)
    plt = sx.pyplot()
    fig, axs = plt.subplots(1, 2, figsize=(9, 3.6))
    for i, cf in enumerate(configs):
        for ax, key in zip(axs, ("ops", "us")):
            xs = [x[key] for x in res[cf]]
            ax.plot([i] * len(xs), xs, "o", color=COLORS[i])
            ax.plot([i - 0.2, i + 0.2], [med[cf][key]] * 2, "-", color=COLORS[i])
    for ax, t in zip(axs, ("GET/s, runs and median", "CPU per GET (us), runs and median")):
        ax.set_xticks(range(len(configs)))
        ax.set_xticklabels(configs)
        ax.set_xlim(-0.6, len(configs) - 0.4)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
        ax.set_title(t, fontsize=9)
        ax.grid(True, alpha=0.3)
    fig.suptitle("o. overhead of all four mechanisms, uncapped GET 1 KiB", fontsize=10)
    fig.tight_layout()
    fig.savefig(img("ablation_o.png"), dpi=100)
    plt.close(fig)
    body = """### o. Overhead of all four mechanisms

`%s` (ctest `exp.ablation_o`). %d nodes, no caps, one cluster; 4
tenants of weight 1, 16 outstanding GET 1 KiB each (uniform over %d
keys, 1+2 copies); before every run the nodes restart with the run's
`--sched` and the controller and gateway with its `--wa`, `--pp`, `--rs`;
runs alternated, %d per configuration, %g s warm-up, %g s measured. CPU
per GET: utime + stime of every process of the cluster (client excluded)
over the measured window / the GETs the gateway answered.

%s

Target: all four cost < 5 %% against none: %s. Throughput %+.1f %%
(positive: all four slower), CPU per GET %+.1f %%. The machine (2 vCPUs,
shared) is the bottleneck here, so throughput swings between runs; CPU
per GET is the steadier figure.

![o](img/ablation_o.png)

%s
""" % (a.cmd("o"), NODES, KEYS, runs, warm, dur, table, verdict(ok), 100 * d_tp,
       100 * d_cpu, machine_note(a))
    write(a, "ablation_o", body)
    return ok, {"res": res, "d_tp": d_tp, "d_cpu": d_cpu}


# ----------------------------------------------------------------------------- main

EXPS = {"a": exp_a, "c": exp_c, "w": exp_w, "d": exp_d, "o": exp_o}  # "all" runs them in this order


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("which", choices=sorted(EXPS) + ["all"])
    ap.add_argument("--build", required=True)
    ap.add_argument("--runs", type=int, default=2, help="runs per configuration [2]")
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--warmup", type=float, default=15,
                    help="seconds of load before the measured window (with PP after the "
                    "placement phase): weight allocation settles in it [15]")
    ap.add_argument("--partitions", type=int, default=0,
                    help="partitions per tenant (shoal-controller --partitions) [a and c "
                    "%d, the others %d]" % (PARTITIONS["a"], CTL_PARTITIONS))
    ap.add_argument("--configs", default="",
                    help="only these configurations (comma-separated names), for trials; "
                    "o always runs none and all four")
    ap.add_argument("--no-doc", action="store_true",
                    help="print the sections, plots to $TMPDIR/shoal-exp-img, docs untouched")
    ap.add_argument("--out", default="", help="raw results as JSON")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    defaults = {"runs": 2, "duration": 20, "warmup": 15, "partitions": 0}

    def cmd(which):
        extra = "".join(" --%s %g" % (k, getattr(a, k))
                        for k in ("runs", "duration", "warmup", "partitions")
                        if getattr(a, k) != defaults[k])
        return "/usr/bin/python3 tests/experiments/ablation.py %s --build build%s" % (which, extra)
    a.cmd = cmd
    global NO_DOC, CONFIGS
    NO_DOC = a.no_doc
    if a.configs:
        CONFIGS = [c for c in CONFIGS if c[0] in a.configs.split(",")]
    sx.catch_signals()
    return sx.run_experiments(EXPS, list(EXPS) if a.which == "all" else [a.which], a, a.out)


if __name__ == "__main__":
    sys.exit(main())
