#!/usr/bin/python3
"""elastic.py - the elasticity experiment: writes docs/elasticity.md's
generated sections and docs/img/elastic_*.png.

    /usr/bin/python3 tests/experiments/elastic.py --build build [--only day,recovery,reclaim]

  day       one bench/tracegen day (two tenants, the working set swinging
            100x, half a day apart) replayed at once on two 6-node
            clusters, one under --pool sms, one under --pool static sized so
            the day's data fits: pool memory against the working set, cost,
            GET latency
  recovery  integ.fnstore.sms's rate measurement (test_rates) on a bigger
            instance: recovery with 1, 4 and 16 helpers against a sequential
            read of the same COS objects
  reclaim   a shorter day under --reclaim-rate, with objects of unique
            content written and checked beside it, then every key read back
            and compared byte for byte

A few minutes in all. Exits 1 when a target is missed or a read is wrong
(the page is written either way); --no-doc leaves docs/ alone. The clusters,
tenants, shoal-bench runs, samples, plots and page sections are shoalexp's.
"""
import argparse
import bisect
import contextlib
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoalexp as sx  # noqa: E402  (puts tests/integration on the path too)
import test_fnstore_sms  # noqa: E402  (the recovery rate measurement, reused)
from shoalexp import MiB, log, md_table  # noqa: E402

GiB = 1 << 30
DOC = os.path.join(sx.SRC, "docs", "elasticity.md")
IMG = os.path.join(sx.SRC, "docs", "img")
TRACEGEN = os.path.join(sx.SRC, "bench", "tracegen")
COMMAND = "/usr/bin/python3 tests/experiments/elastic.py --build build"

NODES, K, M = 6, 4, 2                  # the controller's default EC profile
SMALL, MAX_CHUNK = 256 << 10, 1 << 20  # the gateway's --small-threshold and --max-chunk
REAL_DAY = 86400.0
PUT_SUFFIX = "-put"
TARGETS = {"ratio": 1.2, "ratio_moon": 1.1, "cost": 0.75, "cost_moon": 0.7, "p90": 1.10,
           "recovery": 0.5}

# InfiniStore's window is 3 h of a 24 h day (10 min x (6 + 12)); here
# 5 s x (2 + 4) = 30 s of a 240 s day, and the working set is measured
# over the same 30 s (WS_WINDOW), so the pool and the curve speak of the
# same window. tracegen touches every active object once per tick (half its
# --window) at least: 5 s here, the span in which the pool compacts a
# re-read chunk (G - A = 1 interval), so that a chunk in use stays in memory.
WINDOW = {"gc-interval": 5, "active-intervals": 2, "degraded-intervals": 4}
WS_WINDOW = 30
DAY = {"duration": 240, "window": 10, "peak-wss": "128MiB", "swing": 100,
       "large": "256KiB-2MiB", "phase-spread": 0.5, "names": "reg1,reg2", "seed": 7}
# The instance is the gateway's largest chunk (MAX_CHUNK), the smallest that
# holds any chunk: this day's chunks are 64-512 KiB and its configs under
# 64 KiB, and an instance's room that no chunk fills (the newest
# generation's, and the holes re-PUTs and compactions leave in older ones
# until a merge or their release) grows with the instance (2 MiB: pool
# memory 1.26-1.33x the working set).
INST = MAX_CHUNK
NODE = {"instance-size": "%dKiB" % (INST >> 10), "capacity": "1GiB", "cache-bytes": "16MiB"}
WARM = 30  # seconds: the first window, before which no pool holds a window's data

RECLAIM_DAY = dict(DAY, duration=90, seed=11, **{"peak-wss": "128MiB"})
RECLAIM_RATE = 30  # per node and minute
RECOVERY_MIB = 256

# ----------------------------------------------------------------------------- the trace


def stored_bytes(size):
    """Bytes an object of `size` takes in instance memory: 1 + m copies under
    --small-threshold, else k + m chunks per stripe (gw_stripe_geometry)."""
    if size < SMALL:
        return (1 + M) * size
    ns = (size + K * MAX_CHUNK - 1) // (K * MAX_CHUNK)
    cs = (size + ns * K - 1) // (ns * K)
    aligned = (cs + 63) & ~63
    if aligned <= MAX_CHUNK and (ns - 1) * K * aligned < size:
        cs = aligned
    return ns * (K + M) * cs


class Day:
    """One tracegen day: the trace with each tenant's PUTs under
    "<tenant>-put" (so that shoal-bench reports GETs apart), the stored
    working set per tenant and second, and the size of every key PUT."""

    def __init__(self, work, day, name):
        self.day, self.seconds = day, int(day["duration"])
        self.tenants = day["names"].split(",")
        raw = os.path.join(work, name + ".csv")
        cmd = [sys.executable, TRACEGEN, "--out", raw]
        for k, v in day.items():
            cmd += ["--" + k, str(v)]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
        self.summary = p.stderr.decode().strip().replace("\n", "; ")
        rows = []
        with open(raw) as f:
            next(f)
            for line in f:
                t, ten, op, key, size = line.rstrip("\n").split(",")
                rows.append((float(t), ten, op, key, int(size or 0)))
        self.path = os.path.join(work, name + "-split.csv")
        with open(self.path, "w") as f:
            f.write("t,tenant,op,key,size\n")
            for t, ten, op, key, size in rows:
                f.write("%.6f,%s,%s,%s,%d\n" % (t, ten + PUT_SUFFIX if op == "PUT" else ten,
                                                op, key, size))
        self.puts = {(ten, key): size for _, ten, op, key, size in rows if op == "PUT"}
        self.ws = {t: self.working_set(rows, t) for t in self.tenants}

    def working_set(self, rows, tenant):
        """Per second s in 1..seconds: stored bytes of the distinct keys touched
        in (s - WS_WINDOW, s] (tracegen's wss_trace over the pool's window, in
        stored bytes)."""
        reqs = [(t, key, size) for t, ten, op, key, size in rows if ten == tenant]
        ts = [r[0] for r in reqs]
        count, cur, lo, hi, out = {}, 0, 0, 0, []
        for s in range(1, self.seconds + 1):
            end = bisect.bisect_right(ts, s)
            while hi < end:
                key = reqs[hi][1]
                count[key] = count.get(key, 0) + 1
                cur += stored_bytes(reqs[hi][2]) if count[key] == 1 else 0
                hi += 1
            start = bisect.bisect_right(ts, s - WS_WINDOW)
            while lo < start:
                key = reqs[lo][1]
                count[key] -= 1
                cur -= stored_bytes(reqs[lo][2]) if count[key] == 0 else 0
                lo += 1
            out.append(cur)
        return out

    def stored(self, tenant):
        return sum(stored_bytes(s) for (t, _), s in self.puts.items() if t == tenant)


def replay(c, day, tenants, sample):
    """The day replayed on c (tenants: {name: sx.Tenant}): the BenchResult."""
    loads = []
    for t in tenants.values():
        loads.append(sx.Load(t, conns=32))
        loads.append(sx.Load(sx.Tenant(t.name + PUT_SUFFIX, t.id, t.key, t.weight), conns=32))
    return sx.bench(c, loads, warmup=0, duration=day.seconds + 60, threads=2, prefix="day/",
                    sample=sample, trace=day.path, allow_errors=True,
                    extra=["--seed", "1", "--timeout", "30"])


def pool_of(c, name):
    return c.admin_json("GET", "/v1/tenants/" + name)["pool"]


def cost_of(c, name):
    return c.admin_json("GET", "/v1/tenants/%s/cost" % name)


NODE_COUNTERS = ["shoal_fnstore_cos_reloads_total", "shoal_fnstore_readmissions_total",
                 "shoal_fnstore_cache_hits_total", "shoal_fnstore_compactions_total",
                 "shoal_fnstore_merges_total", "shoal_fnstore_merge_chunks_total",
                 "shoal_fnstore_stale_total", "shoal_fnstore_instances_reclaimed_total",
                 "shoal_fnstore_recoveries_total"]
GW_COUNTERS = ["shoal_gateway_stale_chunks_total", "shoal_gateway_late_reads_total"]


def counters(c):
    ms = [c.metrics_of(i) for i in range(c.nodes)]
    out = {n: sum(sx.metric(m, n) for m in ms) for n in NODE_COUNTERS}
    g = c.metrics_of("gateway")
    out.update({n: sx.metric(g, n) for n in GW_COUNTERS})
    return out


# ----------------------------------------------------------------------------- day


def run_day(work):
    day = Day(work, DAY, "day")
    log("day: " + day.summary)
    prices = os.path.join(work, "prices.conf")
    scale = REAL_DAY / DAY["duration"]
    with open(prices, "w") as f:
        # The day runs `scale` times faster than a real one; requests and bytes
        # do not: memory is priced per real second it stands for.
        f.write("lambda_gb_second = %.10g\n" % (0.0000166667 * scale))
    need = max(day.stored(t) for t in day.tenants)
    nstatic = int(math.ceil(need * 1.2 / NODES / INST)) + 2
    specs = {"sms": dict(WINDOW, pool="sms", prices=prices),
             "static": dict(WINDOW, pool="static", prices=prices,
                            **{"static-instances": nstatic})}
    runs, errors = {}, []

    def one(c, name):
        try:
            tenants = {t: c.tenant(t) for t in day.tenants}

            def sample():
                return {"pool": {t: pool_of(c, t) for t in tenants},
                        "usd": {t: cost_of(c, t)["usd"] for t in tenants},
                        "cache": sum(n.get("cache_bytes", 0)
                                     for n in c.admin_json("GET", "/v1/nodes")["nodes"])}
            t0 = time.monotonic()
            r = replay(c, day, tenants, sample)
            runs[name] = {"bench": r.json, "series": r.series, "samples": r.samples,
                          "cost": {t: cost_of(c, t) for t in tenants}, "counters": counters(c)}
            log("%s: replay done in %.0f s" % (name, time.monotonic() - t0))
        except Exception as e:  # noqa: BLE001 - reported once both ran
            errors.append("%s: %s" % (name, e))
            traceback.print_exc()

    with contextlib.ExitStack() as stack:
        clusters = {n: stack.enter_context(sx.Cluster(ARGS.build, nodes=NODES, controller=spec,
                                                      fnstore=NODE, name="elastic-" + n))
                    for n, spec in specs.items()}
        # Both replay at once, so that both see whatever else the machine does.
        ths = [threading.Thread(target=one, args=(c, n)) for n, c in clusters.items()]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
    if errors:
        raise RuntimeError("; ".join(errors))
    return analyze_day(day, runs, nstatic, scale)


def at_second(samples, s, f):
    """f(the last sample taken at or before second s), None before any."""
    best = None
    for t, d in samples:
        if t > s:
            break
        best = d
    return f(best) if best is not None else None


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))] if xs else float("nan")


def analyze_day(day, runs, nstatic, scale):
    res = {"day": day.day, "window": WINDOW, "ws_window": WS_WINDOW, "node": NODE,
           "static_instances": nstatic, "scale": scale, "summary": day.summary, "tenants": {},
           "seconds": day.seconds}
    gbs_price = 0.0000166667 * scale
    for t in day.tenants:
        curve = []
        for s in range(1, day.seconds + 1):
            curve.append({
                "t": s, "ws": day.ws[t][s - 1],
                "mem": at_second(runs["sms"]["samples"], s,
                                 lambda d: d["pool"][t]["memory_bytes"]),
                "ws_ctl": at_second(runs["sms"]["samples"], s,
                                    lambda d: d["pool"][t]["working_set_bytes"]),
                "used": at_second(runs["sms"]["samples"], s,
                                  lambda d: d["pool"][t]["used_bytes"]),
                "static": at_second(runs["static"]["samples"], s,
                                    lambda d: d["pool"][t]["memory_bytes"])})
        warm = [p for p in curve if p["t"] >= WARM and p["mem"] is not None and p["ws"] > 0]
        peak = max(p["ws"] for p in curve)
        high = [p for p in warm if p["ws"] >= 0.1 * peak]
        worst = max(warm, key=lambda p: p["mem"] / p["ws"])
        r = {"curve": curve, "peak_ws": peak, "stored": day.stored(t),
             "trough_ws": min(p["ws"] for p in warm),
             # Memory-seconds over working-set-seconds: what the bill sees.
             "ratio": sum(p["mem"] for p in warm) / sum(p["ws"] for p in warm),
             "ratio_high": sum(p["mem"] for p in high) / sum(p["ws"] for p in high),
             # What the instances hold (chunks) over the working set: the rest
             # of the memory is room never filled and room of chunks moved out.
             "used_ratio": sum(p["used"] or 0 for p in warm) / sum(p["ws"] for p in warm),
             "ratio_p90": pct([p["mem"] / p["ws"] for p in warm], 90),
             "ratio_worst": worst["mem"] / worst["ws"], "worst": worst}
        for name, run in runs.items():
            b = {x["name"]: x for x in run["bench"]["tenants"]}
            get, put = b[t], b[t + PUT_SUFFIX]
            r[name] = {"get": get["latency_us"], "put": put["latency_us"], "gets": get["ops"],
                       "puts": put["ops"], "errors": get["errors"] + put["errors"],
                       "status": {**get["status"], **put["status"]},
                       "misses": get.get("misses", 0) + put.get("misses", 0),
                       "cost": run["cost"][t],
                       "p99": [(x["second"], x["p99_us"] / 1000) for x in run["series"]
                               if x["tenant"] == t and x["ops_per_s"] > 0],
                       "usd": [(s, d["usd"][t]) for s, d in run["samples"]]}
        # What a static pool sized for the peak pays: its every instance, all day.
        prov_gbs = nstatic * NODES * INST / GiB * day.seconds
        st_cost = r["static"]["cost"]
        r["static_prov_gbs"] = prov_gbs
        r["static_prov_usd"] = st_cost["usd"] + (prov_gbs - st_cost["memory_gb_seconds"]) \
            * gbs_price
        r["cost_ratio"] = r["sms"]["cost"]["usd"] / r["static_prov_usd"]
        r["cost_ratio_held"] = r["sms"]["cost"]["usd"] / st_cost["usd"]
        r["p90_ratio"] = r["sms"]["get"]["p90"] / r["static"]["get"]["p90"]
        res["tenants"][t] = r
    for name, run in runs.items():
        res[name] = {"counters": run["counters"],
                     "cache": max(d["cache"] for _, d in run["samples"])}
    return res


# ----------------------------------------------------------------------------- recovery


def run_recovery(work):
    """integ.fnstore.sms's measurement, on a RECOVERY_MIB instance."""
    env = types.SimpleNamespace(build=os.path.abspath(ARGS.build))
    binary = sx.st.Test.binary(env, "shoal-fnstore")
    out = test_fnstore_sms.test_rates(binary, work, RECOVERY_MIB)
    return {"mib": RECOVERY_MIB, "rates": [{"helpers": h, "rate": r, "cos": c}
                                           for h, r, c in out]}


# ----------------------------------------------------------------------------- reclaim


class Checker:
    """PUTs objects of unique random content next to the replay and reads
    them back: a GET must return the last acknowledged content (after a
    failed overwrite, the old or the new one)."""

    def __init__(self, gw, rate=6.0, nkeys=48, seed=3):
        self.gw, self.rate, self.rng = gw, rate, random.Random(seed)
        self.keys = ["check/%03d" % i for i in range(nkeys)]
        self.want = {}  # key -> acceptable sha256s
        self.ops, self.errors = {"put": 0, "get": 0}, []
        self.stop_ev = threading.Event()
        self.th = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        nxt = time.monotonic()
        while not self.stop_ev.wait(max(0.0, nxt - time.monotonic())):
            nxt += 1.0 / self.rate
            try:
                self.step()
            except Exception as e:  # noqa: BLE001 - every failure counts
                self.errors.append("%s: %s" % (type(e).__name__, e))

    def step(self):
        key = self.rng.choice(self.keys)
        if key in self.want and self.rng.random() >= 0.3:
            self.check(key)
            return
        body = self.rng.randbytes(self.rng.randrange(64 << 10, 2 << 20))
        r = self.gw.put(key, body)
        self.ops["put"] += 1
        if r.status == 201:
            self.want[key] = {sx.st.sha256(body)}
        else:
            self.errors.append("PUT %s: %d" % (key, r.status))
            self.want.setdefault(key, set()).add(sx.st.sha256(body))

    def check(self, key):
        self.ops["get"] += 1
        r = self.gw.get(key)
        if r.status != 200 or sx.st.sha256(r.body) not in self.want[key]:
            self.errors.append("GET %s: %d, %d bytes, not what was written" % (key, r.status,
                                                                                len(r.body)))

    def finish(self):
        self.stop_ev.set()
        self.th.join(60)
        for key in sorted(self.want):
            self.check(key)


def bench_payload(seed, size):
    """The bytes shoal-bench PUTs (every PUT is a prefix of them):
    xoshiro256** words, little-endian, seeded by splitmix64 from --seed
    (bench_rand.c, bench_net.c)."""
    mask = (1 << 64) - 1

    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & mask

    s, st = seed & mask, []
    for _ in range(4):
        s = (s + 0x9E3779B97F4A7C15) & mask
        z = ((s ^ (s >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        st.append(z ^ (z >> 31))
    s0, s1, s2, s3 = st
    words = []
    for _ in range((size + 7) // 8):
        words.append((rotl((s1 * 5) & mask, 7) * 9) & mask)
        t = (s1 << 17) & mask
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotl(s3, 45)
    return b"".join(w.to_bytes(8, "little") for w in words)[:size]


def read_back(c, tenants, puts, threads=4):
    """GETs every key the day PUT and compares it with the bench payload."""
    items = sorted(puts.items())
    payload = bench_payload(1, max(puts.values()))
    errs, lock, nbytes = [], threading.Lock(), [0]

    def worker(part):
        for (ten, key), size in part:
            r = c.gw(tenants[ten].key).get("day/" + key)
            ok = r.status == 200 and r.body == payload[:size]
            with lock:
                nbytes[0] += len(r.body)
                if not ok:
                    errs.append("%s: %d, %d of %d bytes%s" % (
                        key, r.status, len(r.body), size,
                        ", content differs" if r.status == 200 else ""))
    ths = [threading.Thread(target=worker, args=(items[i::threads],)) for i in range(threads)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    return len(items), nbytes[0], errs


def run_reclaim(work):
    day = Day(work, RECLAIM_DAY, "reclaim")
    node = dict(NODE, **{"reclaim-rate": RECLAIM_RATE})
    with sx.Cluster(ARGS.build, nodes=NODES, controller=dict(WINDOW, pool="sms"), fnstore=node,
                    name="elastic-reclaim") as c:
        tenants = {t: c.tenant(t) for t in day.tenants}
        checker = Checker(c.gw(tenants[day.tenants[0]].key))

        def sample():
            ms = [c.metrics_of(i) for i in range(c.nodes)]
            return {n: sum(sx.metric(m, "shoal_fnstore_" + n) for m in ms)
                    for n in ("instances_reclaimed_total", "recovery_chunks_total",
                              "stale_total")}
        checker.th.start()
        r = replay(c, day, tenants, sample)
        checker.finish()
        cnt = counters(c)
        t0 = time.monotonic()
        nobj, nbytes, errs = read_back(c, tenants, day.puts)
        log("read back %d objects (%.0f MB) in %.0f s: %d wrong" % (
            nobj, nbytes / 1e6, time.monotonic() - t0, len(errs)))
        b = {x["name"]: x for x in r.json["tenants"]}
        return {"day": day.day, "rate": RECLAIM_RATE, "summary": day.summary,
                "bench_errors": sum(x["errors"] for x in b.values()),
                "bench_status": {n: x["status"] for n, x in b.items() if x["errors"]},
                "gets": sum(b[t]["ops"] for t in tenants),
                "puts": sum(b[t + PUT_SUFFIX]["ops"] for t in tenants),
                "get_lat": {t: b[t]["latency_us"] for t in tenants},
                "checker_ops": checker.ops, "checker_errors": checker.errors[:20],
                "checker_nerrors": len(checker.errors), "checked_keys": len(checker.want),
                "readback_objects": nobj, "readback_bytes": nbytes,
                "readback_errors": errs[:20], "readback_nerrors": len(errs),
                "counters": cnt, "samples": r.samples,
                "p99": {t: [(x["second"], x["p99_us"] / 1000) for x in r.series
                            if x["tenant"] == t and x["ops_per_s"] > 0] for t in tenants}}


# ----------------------------------------------------------------------------- verdicts


def verdicts(res):
    """[(section, target, measured, met)]."""
    out = []
    day = res.get("day")
    for t, r in sorted((day or {}).get("tenants", {}).items()):
        out.append(("memory", "pool memory <= %.1fx the working set (moonshot %.1fx), %s" % (
            TARGETS["ratio"], TARGETS["ratio_moon"], t),
            "%.2fx (memory-seconds over working-set-seconds after the first window)"
            % r["ratio"], r["ratio"] <= TARGETS["ratio"]))
        out.append(("cost", "cost <= %.2fx static sized for the peak (moonshot %.1fx), %s" % (
            TARGETS["cost"], TARGETS["cost_moon"], t), "%.2fx" % r["cost_ratio"],
            r["cost_ratio"] <= TARGETS["cost"]))
        out.append(("cost", "GET p90 within 10 %% of static, %s" % t,
                    "%.3fx (%.1f ms against %.1f ms)" % (
                        r["p90_ratio"], r["sms"]["get"]["p90"] / 1e3,
                        r["static"]["get"]["p90"] / 1e3), r["p90_ratio"] <= TARGETS["p90"]))
    for x in (res.get("recovery") or {}).get("rates", []):
        out.append(("recovery", "recovery >= %.0f %% of the COS read rate, %d helper%s" % (
            100 * TARGETS["recovery"], x["helpers"], "s" if x["helpers"] > 1 else ""),
            "%.0f %% (%.0f against %.0f MB/s)" % (100 * x["rate"] / x["cos"], x["rate"],
                                                  x["cos"]),
            x["rate"] >= TARGETS["recovery"] * x["cos"]))
    rc = res.get("reclaim")
    if rc:
        lost = rc["readback_nerrors"] + rc["checker_nerrors"]
        out.append(("reclaim", "acknowledged objects lost or wrong under reclaims: 0",
                    "%d (read-back %d of %d objects, checker %d of %d GETs)" % (
                        lost, rc["readback_nerrors"], rc["readback_objects"],
                        rc["checker_nerrors"], rc["checker_ops"]["get"]), lost == 0))
    return out


def verdict_list(vs, section):
    return "\n".join("- %s: %s, **%s**" % (v[1], v[2], "met" if v[3] else "not met")
                     for v in vs if v[0] == section)


# ----------------------------------------------------------------------------- plots


def plot_memory(day, path):
    rows = [[], []]
    for t, r in sorted(day["tenants"].items()):
        cv = r["curve"]
        gib = [(p["t"], p) for p in cv]
        rows[0].append(("tenant %s" % t, [
            ("working set (stored bytes, trailing %d s)" % day["ws_window"],
             [(s, p["ws"] / GiB) for s, p in gib], {"color": "k", "lw": 1.5}),
            ("sms pool memory", [(s, p["mem"] / GiB) for s, p in gib if p["mem"] is not None],
             {"color": "tab:blue"}),
            ("controller's working set (last tick)",
             [(s, p["ws_ctl"] / GiB) for s, p in gib if p["ws_ctl"] is not None],
             {"color": "tab:green", "lw": 0.8, "ls": ":"}),
            ("static pool memory held", [(s, p["static"] / GiB) for s, p in gib
                                         if p["static"] is not None],
             {"color": "tab:red", "lw": 1}),
            ("static sized for the peak", [(0, day["static_instances"] * NODES * INST / GiB),
                                           (day["seconds"],
                                            day["static_instances"] * NODES * INST / GiB)],
             {"color": "tab:red", "ls": "--", "lw": 1})], [], [(0, WARM, "first window")]))
        warm = [p for p in cv if p["t"] >= WARM and p["mem"] is not None and p["ws"] > 0]
        rows[1].append(("tenant %s: sms memory / working set" % t, [
            ("ratio", [(p["t"], p["mem"] / p["ws"]) for p in warm], {"color": "tab:blue"}),
            ("target 1.2", [(WARM, 1.2), (day["seconds"], 1.2)], {"color": "k", "ls": "--"})],
            [], [], {"logy": True}))
    sx.plot_grid(path, rows, "Pool memory against the working set (window %d s x (%d + %d))" % (
        WINDOW["gc-interval"], WINDOW["active-intervals"], WINDOW["degraded-intervals"]),
        "GiB / ratio", xlabel="seconds into the day (%d s = 24 h)" % day["seconds"],
        sharey="row", figsize=(12, 7.5))


def plot_cost(day, path):
    rows = [[], []]
    for t, r in sorted(day["tenants"].items()):
        rows[0].append(("tenant %s: cost so far" % t, [
            ("sms", r["sms"]["usd"], {"color": "tab:blue"}),
            ("static, memory held", r["static"]["usd"], {"color": "tab:red"}),
            ("static sized for the peak", [(0, 0), (day["seconds"], r["static_prov_usd"])],
             {"color": "tab:red", "ls": "--"})], [], []))
        rows[1].append(("tenant %s: GET p99 per second (ms)" % t, [
            ("sms", r["sms"]["p99"], {"color": "tab:blue", "lw": 0.8}),
            ("static", r["static"]["p99"], {"color": "tab:red", "lw": 0.8})], [], [],
            {"logy": True}))
    sx.plot_grid(path, rows, "Cost (USD, a real day's prices) and GET latency, sms against static",
                 "USD / ms", xlabel="seconds into the day", sharey="row", figsize=(12, 7.5))


def plot_recovery(rec, path):
    plt = sx.pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.8))
    xs = ["%d helper%s" % (x["helpers"], "s" if x["helpers"] > 1 else "") for x in rec["rates"]]
    ax.bar(xs, [x["rate"] for x in rec["rates"]], color="tab:blue", label="recovery rate")
    ax.plot(xs, [x["cos"] for x in rec["rates"]], "k_", markersize=40, mew=2,
            label="sequential COS read of the same objects")
    ax.plot(xs, [TARGETS["recovery"] * x["cos"] for x in rec["rates"]], "r_", markersize=40,
            mew=1.5, label="target: half of it")
    ax.set_ylabel("MB/s")
    ax.set_title("Recovery of one %d MiB instance (256 KiB chunks, fs COS)" % rec["mib"],
                 fontsize=10)
    ax.grid(True, alpha=0.3, axis="y")
    ax.set_ylim(0, 1.35 * max(max(x["rate"], x["cos"]) for x in rec["rates"]))
    ax.legend(fontsize=8, loc="upper center", ncol=3, markerscale=0.4)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_reclaim(rc, path):
    s0 = rc["samples"][0][1] if rc["samples"] else {}
    rows = [[("GET p99 per second (ms)", [
        (t, pts, {"lw": 0.8}) for t, pts in sorted(rc["p99"].items())], [], [],
        {"logy": True})],
        [("since the start, all nodes (log)", [
            (label, [(t, d[k] - s0[k]) for t, d in rc["samples"]], {"color": color})
            for k, label, color in (
                ("instances_reclaimed_total", "instances reclaimed", "k"),
                ("recovery_chunks_total", "chunks recovered from COS", "tab:green"),
                ("stale_total", "chunk GETs answered STALE", "tab:orange"))], [], [],
            {"logy": True})]]
    sx.plot_grid(path, rows, "Reads while %d instances a minute per node are reclaimed" %
                 rc["rate"], "", xlabel="seconds into the replay", sharey="row",
                 figsize=(9, 6))


# ----------------------------------------------------------------------------- sections


def ms3(lat):
    return " / ".join("%.1f" % (lat[p] / 1e3) for p in ("p50", "p90", "p99"))


def section_day(day, vs, meta):
    d, w = day["day"], day["window"]
    setup = md_table(["what", "setting"], [
        ("trace", "`bench/tracegen %s`: %s" % (" ".join("--%s %s" % kv for kv in d.items()),
                                               day["summary"])),
        ("window", "`--gc-interval %d --active-intervals %d --degraded-intervals %d`: %d s "
         "of a %d s day, as InfiniStore's 3 h are of 24 h" % (
             w["gc-interval"], w["active-intervals"], w["degraded-intervals"],
             w["gc-interval"] * (w["active-intervals"] + w["degraded-intervals"]), d["duration"])),
        ("nodes", "%d, each `%s`; tenants 4+2, objects under 256 KiB as 3 copies" % (
            NODES, " ".join("--%s %s" % kv for kv in day["node"].items()))),
        ("static", "`--pool static --static-instances %d`: %.2f GiB a tenant, the largest "
         "tenant's whole day of data (%.2f GiB stored) plus a fifth: a static pool never "
         "evicts" % (day["static_instances"], day["static_instances"] * NODES * INST / GiB,
                     max(r["stored"] for r in day["tenants"].values()) / GiB)),
        ("prices", "`--prices`: AWS list prices with the GB-second times %.0f (a %d s day "
         "stands for 24 h; requests count as they are)" % (day["scale"], d["duration"])),
    ])
    mem = md_table(
        ["tenant", "working set peak / trough (MiB)", "memory / working set (integral)",
         "the same while >= 10 % of the peak", "chunks held / working set (integral)",
         "p90 of the per-second ratio",
         "worst second (memory for working set, MiB)"],
        [(t, "%.0f / %.1f" % (r["peak_ws"] / MiB, r["trough_ws"] / MiB), "**%.2f**" % r["ratio"],
          "%.2f" % r["ratio_high"], "%.2f" % r["used_ratio"], "%.2f" % r["ratio_p90"],
          "%.1f at %d s (%.1f for %.1f)" % (r["ratio_worst"], r["worst"]["t"],
                                            r["worst"]["mem"] / MiB, r["worst"]["ws"] / MiB))
         for t, r in sorted(day["tenants"].items())])
    rows = []
    for t, r in sorted(day["tenants"].items()):
        for pool in ("sms", "static"):
            c = r[pool]["cost"]
            rows.append((t, pool, "%.1f" % c["memory_gb_seconds"], c["invocations"],
                         "%d / %d" % (c["cos_puts"], c["cos_gets"]), "%.3f" % c["usd"],
                         ms3(r[pool]["get"]), "%d / %d" % (r[pool]["gets"], r[pool]["puts"]),
                         "%d / %d" % (r[pool]["errors"], r[pool]["misses"])))
        rows.append((t, "static sized for the peak", "%.1f" % r["static_prov_gbs"], "", "",
                     "%.3f" % r["static_prov_usd"], "", "", ""))
        rows.append((t, "**sms / static**", "", "", "", "**%.2f** (%.2f against memory held)"
                     % (r["cost_ratio"], r["cost_ratio_held"]), "p90 **%.2f**" % r["p90_ratio"],
                     "", ""))
    cost = md_table(["tenant", "pool", "memory GB-s", "invocations", "COS PUTs / GETs",
                     "USD (a day)", "GET p50 / p90 / p99 (ms)", "GETs / PUTs",
                     "errors / 404 misses"], rows)
    cnt = md_table(["counter (all nodes or the gateway, the whole day)", "sms", "static"],
                   [("`%s`" % k, "%d" % day["sms"]["counters"][k],
                     "%d" % day["static"]["counters"][k]) for k in NODE_COUNTERS + GW_COUNTERS])
    return {
        "day-setup": setup + "\n\nCommand: `%s --only day`. Both clusters replay the day at "
        "the same time on this machine. Run: %s; %.0f s of wall time." % (
            COMMAND, meta["machine"], meta["wall_s"]),
        "memory": "![pool memory against the working set](img/elastic_memory.png)\n\n" + mem
        + "\n\n" + verdict_list(vs, "memory"),
        "cost": "![cost and GET latency, sms against static](img/elastic_cost.png)\n\n" + cost
        + "\n\n" + verdict_list(vs, "cost") + "\n\n" + cnt
        + "\n\nThe cache space held at most %.0f MiB (sms) and %.0f MiB (static) over the "
        "nodes." % (day["sms"]["cache"] / MiB, day["static"]["cache"] / MiB)}


def section_recovery(rec, vs, meta):
    tab = md_table(["helpers", "recovery MB/s", "sequential COS read MB/s", "recovery / read"],
                   [(x["helpers"], "%.0f" % x["rate"], "%.0f" % x["cos"],
                     "%.2f" % (x["rate"] / x["cos"])) for x in rec["rates"]])
    return {"recovery": "![recovery against the COS read rate](img/elastic_recovery.png)\n\n"
            + tab + "\n\n" + verdict_list(vs, "recovery") + "\n\nCommand: `%s --only "
            "recovery` (`test_rates` of `integ.fnstore.sms` with `--rates-mib %d`). Run: %s; "
            "%.0f s of wall time." % (COMMAND, rec["mib"], meta["machine"], meta["wall_s"])}


def section_reclaim(rc, vs, meta):
    c = rc["counters"]
    tab = md_table(["what", "count"], [
        ("GETs / PUTs replayed", "%d / %d" % (rc["gets"], rc["puts"])),
        ("instances reclaimed", "%d" % c["shoal_fnstore_instances_reclaimed_total"]),
        ("recoveries", "%d" % c["shoal_fnstore_recoveries_total"]),
        ("chunk GETs answered STALE (nodes)", "%d" % c["shoal_fnstore_stale_total"]),
        ("late reads (asked again with COS_OK)", "%d" % c["shoal_gateway_late_reads_total"]),
        ("replay: failed requests", "%d %s" % (rc["bench_errors"], json.dumps(
            rc["bench_status"]) if rc["bench_errors"] else "")),
        ("checker: PUTs / GETs of unique content, wrong", "%d / %d, %d" % (
            rc["checker_ops"]["put"], rc["checker_ops"]["get"], rc["checker_nerrors"])),
        ("read-back after the replay: objects (MB), wrong", "%d (%.0f), %d" % (
            rc["readback_objects"], rc["readback_bytes"] / 1e6, rc["readback_nerrors"])),
    ])
    lat = md_table(["tenant", "GET p50 / p90 / p99 (ms)"],
                   [(t, ms3(v)) for t, v in sorted(rc["get_lat"].items())])
    errs = rc["checker_errors"] + rc["readback_errors"]
    bad = ("\n\nFirst errors:\n\n" + "\n".join("- `%s`" % e for e in errs[:10])) if errs else ""
    return {"reclaim": "![reads while instances are reclaimed](img/elastic_reclaim.png)\n\n"
            + tab + "\n\n" + lat + "\n\n" + verdict_list(vs, "reclaim") + bad
            + "\n\nTrace: `bench/tracegen %s`; nodes as above with `--reclaim-rate %d`. "
            "Command: `%s --only reclaim`. Run: %s; %.0f s of wall time." % (
                " ".join("--%s %s" % kv for kv in rc["day"].items()), rc["rate"], COMMAND,
                meta["machine"], meta["wall_s"])}


def write(res, vs):
    os.makedirs(IMG, exist_ok=True)
    parts = {}
    if "day" in res:
        plot_memory(res["day"], os.path.join(IMG, "elastic_memory.png"))
        plot_cost(res["day"], os.path.join(IMG, "elastic_cost.png"))
        parts.update(section_day(res["day"], vs, res["meta"]["day"]))
    if "recovery" in res:
        plot_recovery(res["recovery"], os.path.join(IMG, "elastic_recovery.png"))
        parts.update(section_recovery(res["recovery"], vs, res["meta"]["recovery"]))
    if "reclaim" in res:
        plot_reclaim(res["reclaim"], os.path.join(IMG, "elastic_reclaim.png"))
        parts.update(section_reclaim(res["reclaim"], vs, res["meta"]["reclaim"]))
    if all(k in res for k in ("day", "recovery", "reclaim")):
        parts["summary"] = md_table(["target", "measured", ""],
                                    [(v[1], v[2], "met" if v[3] else "**not met**") for v in vs])
    # The page has each section's markers under its heading: replaced in place.
    for name, body in parts.items():
        sx.replace_section(DOC, name, body)


def main():
    global ARGS, RECOVERY_MIB, INST
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(sx.SRC, "build"))
    ap.add_argument("--only", default="day,recovery,reclaim")
    ap.add_argument("--out", help="also write the results as JSON here")
    ap.add_argument("--from-json", help="write the page from an earlier --out; run nothing")
    ap.add_argument("--no-doc", action="store_true", help="leave docs/ alone")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: short small days, a small instance (implies --no-doc)")
    ap.add_argument("--instance-kib", type=int, default=INST >> 10,
                    help="the nodes' --instance-size in KiB (default %(default)s)")
    ARGS = ap.parse_args()
    INST = ARGS.instance_kib << 10
    NODE["instance-size"] = "%dKiB" % ARGS.instance_kib
    if ARGS.quick:
        ARGS.no_doc = True
        DAY.update({"duration": 60, "peak-wss": "32MiB"})
        RECLAIM_DAY.update({"duration": 40, "peak-wss": "32MiB"})
        RECOVERY_MIB = 16
    sx.catch_signals()
    if ARGS.from_json:
        with open(ARGS.from_json) as f:
            res = json.load(f)
    else:
        res = {"meta": {}}
        work = tempfile.mkdtemp(prefix="shoal-elastic-")
        try:
            for part, fn in (("day", run_day), ("recovery", run_recovery),
                             ("reclaim", run_reclaim)):
                if part in ARGS.only.split(","):
                    t0 = time.monotonic()
                    res[part] = fn(work)
                    res["meta"][part] = {"wall_s": time.monotonic() - t0, "machine": sx.machine()}
                    log("%s done in %.0f s" % (part, time.monotonic() - t0))
        finally:
            subprocess.run(["rm", "-rf", work])
        if ARGS.out:
            with open(ARGS.out, "w") as f:
                json.dump(res, f)
    vs = verdicts(res)
    if not ARGS.no_doc:
        write(res, vs)
    for v in vs:
        print("%-7s %s: %s" % ("ok" if v[3] else "NOT MET", v[1], v[2]))
    return 0 if all(v[3] for v in vs) else 1


ARGS = None

if __name__ == "__main__":
    sys.exit(main())
