"""shoalexp - what the experiments share (Debian's /usr/bin/python3 and matplotlib).

    import shoalexp as sx
    with sx.Cluster(build, nodes=6, fnstore={"sched": "drfq", "cap-ops": 300},
                    gateway={"rs": "uniform"}) as c:
        a = c.tenant("a", weight=2, ec=(1, 5))
        loads = [sx.Load(a, conc=16, size="1KiB", read=1, keys=100, zipf=0)]
        sx.load_keys(c, loads)
        r = sx.bench(c, loads, warmup=5, duration=25, sample=sx.fairness_sampler(c))
        r.ops("a"), r.series, r.samples

Cluster: the integration tests' cluster (tests/integration/shoaltest.py: a
deploy/local/shoal-cluster on loopback ports shifted by a free offset) with
flags per process kind (`controller`, `gateway`, `fnstore`: a dict of flag
name -> value, True for a bare flag) and per node (`node_args`: {i: dict}
on top of `fnstore`); `restart()` brings processes back with changed flags.
Tenants are created through the admin API (weight and an optional EC
profile (k, m) each: (1, nodes - 1) puts a copy of every small object on
every node). Everything started is stopped when the `with` block ends,
however it ends (catch_signals() turns SIGTERM and SIGINT into an
exception); a failed block prints the processes' log tails, and
SHOAL_TEST_KEEP=1 keeps the cluster's directory.

bench(): one shoal-bench run over Loads (each a tenant with its loop,
object size, read fraction and key set), with its JSON result, its
per-second series and, optionally, samples taken by a background thread
every second while it runs (the controller's fairness figures, the nodes'
queues, the processes' CPU).

The rest: statistics (min-max ratio, Jain's index, medians), machine facts
for the write-up, PNG plots, and sections of a Markdown page between
generated markers, so that a re-run replaces its own section only.
"""
import csv
import datetime
import functools
import http.client
import json
import math
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import types

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import shoaltest as st  # noqa: E402  (the integration tests' cluster, reused)
KiB, MiB = 1024, 1024 * 1024
GATEWAY_UNUSABLE_S = 3.5  # the gateway uses a node again 2 s after it answers a reconnect


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


class Interrupted(Exception):
    pass


def _on_signal(sig, frame):
    raise Interrupted("signal %d" % sig)


def catch_signals():
    """SIGTERM (ctest's timeout) and SIGINT raise, so `with Cluster` stops the cluster."""
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)


def parse_size(s):
    s = str(s).strip()
    for suf, mul in (("KiB", KiB), ("MiB", MiB), ("GiB", 1 << 30), ("K", 1000), ("M", 10**6)):
        if s.endswith(suf):
            return int(float(s[:-len(suf)]) * mul)
    return int(s)


def series(ms, name):
    """[(labels dict, value)] of the series of name in shoaltest.parse_metrics's
    result ({"name{labels}": value, "name": sum})."""
    out = []
    for k, v in ms.items():
        if k.startswith(name + "{"):
            out.append((dict(re.findall(r'(\w+)="([^"]*)"', k[len(name):])), v))
    # The bare name is the sum parse_metrics adds, or a series without labels.
    return out if out or name not in ms else [({}, ms[name])]


def metric(ms, name, **labels):
    """Sum of the series of name whose labels include `labels`."""
    want = {k: str(v) for k, v in labels.items()}
    return sum(v for ls, v in series(ms, name) if all(ls.get(k) == x for k, x in want.items()))


def by_label(ms, name, label):
    """{label value: sum of the series of name with that label}."""
    out = {}
    for ls, v in series(ms, name):
        if label in ls:
            out[ls[label]] = out.get(ls[label], 0.0) + v
    return out


def flags(d):
    """{"sched": "drfq", "cap-ops": 300, "x": True} -> "--sched drfq --cap-ops 300 --x"."""
    out = []
    for k, v in (d or {}).items():
        if v is None or v is False:
            continue
        out.append("--" + k if v is True else "--%s %s" % (k, v))
    return " ".join(out)


# ----------------------------------------------------------------------------- cluster


class Tenant:
    def __init__(self, name, tid, key, weight):
        self.name, self.id, self.key, self.weight = name, tid, key, weight

    def __repr__(self):
        return "<Tenant %s id=%d w=%g>" % (self.name, self.id, self.weight)


class Cluster(st.Cluster):
    """shoaltest's cluster (ports, shoal-cluster, pids, admin calls, the logs
    of a failed run, SHOAL_TEST_KEEP) with flags as dicts per process kind
    and per node."""

    def __init__(self, build, nodes=6, controller=None, gateway=None, fnstore=None,
                 node_args=None, src=SRC, name="exp"):
        env = types.SimpleNamespace(build=os.path.abspath(build), src=src)
        env.binary = functools.partial(st.Test.binary, env)
        super().__init__(env, nodes=nodes, name=name)
        self.args = {"controller": dict(controller or {}), "gateway": dict(gateway or {}),
                     "fnstore": dict(fnstore or {})}
        self.node_args = {i: dict(a) for i, a in (node_args or {}).items()}
        self.tenants = {}

    def binary(self, name):
        return self.test.binary(name)

    def node_names(self):
        return ["fnstore-%d" % i for i in range(self.nodes)]

    def node_flags(self, i):
        d = dict(self.args["fnstore"])
        d.update(self.node_args.get(i, {}))
        return flags(d)

    def _cmd(self, *args):
        self.cluster_cmd(*(args + ("--timeout", "120")), timeout=600)

    def start(self, only=None):
        """Starts the processes in `only` (default all) that are down, each with its flags."""
        want = only or self.procs()
        if self.offset is None:
            # The first start fixes what cluster.conf remembers for good.
            self.offset = self._pick_offset()
            self.started = True
            self._cmd("start", "--only", "controller", "--nodes", str(self.nodes),
                      "--port-offset", str(self.offset), "--build", self.build,
                      "--controller-args", flags(self.args["controller"]),
                      "--gateway-args", flags(self.args["gateway"]))
        elif "controller" in want:
            self._cmd("start", "--only", "controller", "--controller-args",
                      flags(self.args["controller"]))
        # Nodes with the same flags start in one call (in parallel); each
        # distinct set of flags needs its own call (cluster.conf keeps one).
        groups = {}
        for p in self.node_names():
            if p in want:
                groups.setdefault(self.node_flags(int(p.split("-")[1])), []).append(p)
        for fl, ps in groups.items():
            self._cmd("start", "--only", ",".join(ps), "--fnstore-args", fl)
        if "gateway" in want:
            self._cmd("start", "--only", "gateway", "--gateway-args", flags(self.args["gateway"]))
        self.wait_nodes_up(timeout=60)
        return self

    def restart(self, kind, node=None, **changes):
        """Restarts every process of kind ("gateway", "fnstore", "controller"),
        or one node, with its flags updated by changes ({"cap_ops": 400}; None
        drops one). Restarted nodes come back with empty memory (reads reload
        from COS)."""
        base = self.node_args.setdefault(node, {}) if node is not None else self.args[kind]
        for k, v in changes.items():
            k = k.replace("_", "-")
            if v is None:
                base.pop(k, None)
            else:
                base[k] = v
        procs = ["fnstore-%d" % node] if node is not None else \
            (self.node_names() if kind == "fnstore" else [kind])
        self.stop(procs)
        self.start(procs)
        if kind == "fnstore":
            time.sleep(GATEWAY_UNUSABLE_S)

    def __enter__(self):
        try:
            for attempt in range(3):
                try:
                    return self.start()
                except st.TestFailure as e:
                    # Another process may take a port between our check and
                    # the bind: start afresh on another offset.
                    if attempt == 2 or "EADDRINUSE" not in str(e) and "port taken" not in str(e):
                        raise
                    log("port taken, starting again elsewhere")
                    self.stop()
                    shutil.rmtree(self.dir, ignore_errors=True)
                    os.makedirs(self.dir)
                    self.offset = None
        except BaseException:
            self.cleanup(True)
            raise

    def __exit__(self, exc_type, exc, tb):
        self.cleanup(exc_type is not None)
        return False

    def cpu_seconds(self, procs=None):
        """{proc: utime + stime in seconds} from /proc/<pid>/stat."""
        tick = os.sysconf("SC_CLK_TCK")
        out = {}
        for p in procs or self.procs():
            try:
                with open("/proc/%d/stat" % self.pid(p)) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                out[p] = (int(fields[11]) + int(fields[12])) / tick
            except (OSError, TypeError):
                out[p] = float("nan")
        return out

    def admin_json(self, method, path, body=None):
        r = self.admin(method, path, body)
        if r.status >= 300:
            raise RuntimeError("%s %s: %d %s" % (method, path, r.status, r.body[:300]))
        return r.json() if r.body else None

    def tenant(self, name, weight=1.0, ec=None):
        """Creates a tenant (weight, EC profile (k, m) or the controller's) and
        waits until the gateway accepts its key."""
        body = {"name": name, "weight": weight}
        if ec is not None:
            body["ec_k"], body["ec_m"] = ec
        j = self.admin_json("POST", "/v1/tenants", body)
        t = Tenant(j["name"], j["id"], j["key"], weight)
        self.tenants[name] = t
        self.wait_tenant_known(t.key, timeout=30)
        return t

    def set_weight(self, name, weight):
        """shoalctl tenant set-weight; the shoal-bench figures keep the old weight."""
        self.shoalctl("tenant", "set-weight", name, "%g" % weight)
        self.tenants[name].weight = weight

    def fairness(self):
        return self.admin_json("GET", "/v1/fairness")

    def metrics_of(self, proc):
        """Parsed /metrics (shoaltest.parse_metrics) of "controller", "gateway" or a
        node index: read it with metric() and by_label()."""
        port = {"controller": self.ctl_port, "gateway": self.gw_port}.get(proc)
        r = st.http_request(port if port is not None else self.metrics_port(int(proc)),
                            "GET", "/metrics", timeout=10)
        if r.status != 200:
            raise RuntimeError("/metrics of %s: %d" % (proc, r.status))
        return st.parse_metrics(r.body.decode("utf-8", "replace"))


# ----------------------------------------------------------------------------- load


class Load:
    """One tenant's part of a shoal-bench run: conc= (closed loop) or rate=
    (open loop), each a number or a shoal-bench schedule ("step:0s=4/20s=32")."""

    def __init__(self, tenant, conc=None, rate=None, size="1KiB", read=1.0, keys=100, zipf=0.0,
                 weight=None, conns=None):
        self.tenant = tenant
        self.conc, self.rate = conc, rate
        self.size, self.read, self.keys, self.zipf = size, read, keys, zipf
        self.weight = weight if weight is not None else tenant.weight
        self.conns = conns

    def spec(self, load_conc=None, trace=False):
        s = "name=%s,key=%s,weight=%g" % (self.tenant.name, self.tenant.key, self.weight)
        if trace:
            # A trace sends the requests: conc= and rate= are refused.
            return s + (",conns=%d" % self.conns if self.conns else "")
        if load_conc is not None:
            s += ",conc=%d" % load_conc
        elif self.rate is not None:
            s += ",rate=%s" % self.rate
            if self.conns:
                s += ",conns=%d" % self.conns
        else:
            s += ",conc=%s" % (self.conc if self.conc is not None else 16)
        return s + ",size=%s,read=%g,keys=%d,zipf=%g" % (self.size, self.read, self.keys,
                                                         self.zipf)


class BenchResult:
    def __init__(self, res, series, samples, window):
        self.json = res
        self.series = series    # [{second, phase, tenant, ops_per_s, ...}] (numbers as floats)
        self.samples = samples  # [(seconds since the bench started, {...})]
        self.window = window    # (start, end) of the measured window, same clock as samples
        self.tenants = {t["name"]: t for t in res["tenants"]}

    def ops(self, name):
        return self.tenants[name]["ops_per_s"]

    def mbps(self, name):
        return self.tenants[name]["mb_per_s"]

    def measured_samples(self, skip=0.0):
        """Samples taken inside the measured window (after `skip` seconds of it)."""
        a, b = self.window
        return [d for t, d in self.samples if a + skip <= t <= b]


def _bench_cmd(c, specs, extra):
    cmd = [c.binary("shoal-bench"), "--gateway", "http://127.0.0.1:%d" % c.gw_port,
           "--json", "--log-level", "warn"]
    for s in specs:
        cmd += ["--tenant", s]
    return cmd + extra


def _run(cmd, timeout):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("shoal-bench exit %d: %s" % (p.returncode,
                                                        p.stderr.decode(errors="replace")[-800:]))
    return json.loads(p.stdout)


def load_keys(c, loads, conc=8, prefix="exp/"):
    """PUTs every key of every load once (sizes from the load's size=)."""
    t0 = time.monotonic()
    res = _run(_bench_cmd(c, [ld.spec(load_conc=conc) for ld in loads],
                          ["--load", "--warmup", "0", "--duration", "0.1", "--threads", "1",
                           "--prefix", prefix]), 3600)
    bad = {t["name"]: t["status"] for t in res["load"]["tenants"] if t["errors"]}
    if bad:
        raise RuntimeError("load errors: %r" % bad)
    log("loaded %d keys in %.1fs" % (sum(ld.keys for ld in loads), time.monotonic() - t0))


def bench(c, loads, warmup=5, duration=25, threads=1, prefix="exp/", sample=None,
          interval=1.0, sample_at=None, extra=(), allow_errors=False, trace=None):
    """Runs shoal-bench over loads (keys already loaded). `sample` (a function
    returning anything, or None) is called every `interval` s while it runs,
    or only at the seconds (since the start) in sample_at. With trace (a
    shoal-bench --trace CSV whose tenant column names the loads' tenants)
    the trace sends the requests; duration should cover it, as the run ends
    once every request is answered."""
    series_path = os.path.join(c.dir, "series-%d.csv" % int(time.time() * 1000))
    cmd = _bench_cmd(c, [ld.spec(trace=trace is not None) for ld in loads],
                     ["--warmup", str(warmup), "--duration", str(duration), "--threads",
                      str(threads), "--prefix", prefix, "--series", series_path] + list(extra)
                     + (["--trace", trace] if trace else []))
    samples = []
    stop = threading.Event()
    t0 = time.monotonic()

    def sampler():
        at = list(sample_at) if sample_at is not None else None
        nxt = t0 + at.pop(0) if at else time.monotonic()
        while not stop.wait(max(0.0, nxt - time.monotonic())):
            try:
                samples.append((time.monotonic() - t0, sample()))
            except (OSError, RuntimeError, ValueError, KeyError, http.client.HTTPException) as e:
                log("sample failed: %s" % e)
            if at is None:
                nxt += interval
            elif at:
                nxt = t0 + at.pop(0)
            else:
                return

    th = threading.Thread(target=sampler, daemon=True) if sample else None
    if th:
        th.start()
    try:
        res = _run(cmd, warmup + duration + 600)
    finally:
        stop.set()
        if th:
            th.join(30)
    errs = {t["name"]: t["status"] for t in res["tenants"] if t["errors"]}
    if errs and not allow_errors:
        raise RuntimeError("shoal-bench errors: %r" % errs)
    with open(series_path) as f:
        series = []
        for row in csv.DictReader(f):
            for k in ("second", "ops_per_s", "mb_per_s", "errors", "p50_us", "p99_us", "target"):
                row[k] = float(row[k]) if row.get(k) not in (None, "") else float("nan")
            series.append(row)
    os.unlink(series_path)
    # Answers of requests abandoned at the end land in a last, partial second.
    end = math.ceil(warmup) + duration
    series = [row for row in series if row["second"] < end]
    # The measured window as the sampler's clock sees it: shoal-bench starts
    # its warm-up right away (the keys are loaded), and ends after duration.
    return BenchResult(res, series, samples, (warmup, warmup + duration))


NODE_TENANT_METRICS = {
    "queued": "shoal_fnstore_tenant_queued_requests",
    "share": "shoal_fnstore_tenant_dominant_share",
    "served": "shoal_fnstore_tenant_served_requests_total",
    "served_bytes": "shoal_fnstore_tenant_served_bytes_total",
    "served_cost": "shoal_fnstore_tenant_served_cost_seconds_total",
    "weight": "shoal_fnstore_tenant_weight",
}


GATEWAY_RS_METRICS = {
    "window": "shoal_gateway_rs_window",
    "rtt": "shoal_gateway_rs_rtt_seconds",
    "base": "shoal_gateway_rs_base_rtt_seconds",
}


def fairness_sampler(c, nodes=True, gateway=False):
    """A sample function: the controller's /v1/fairness and each node's
    dominant load; per node (nodes=True) its queue and, per tenant id, the
    figures of NODE_TENANT_METRICS; with gateway=True the RS state
    {"rs": {figure of GATEWAY_RS_METRICS: {tenant id: {node: value}}}} and
    the migration {"migration": {"running", "moved_versions"}}; every
    process's CPU seconds."""
    def sample():
        d = {"t": time.monotonic(), "fairness": c.fairness()}
        cm = c.metrics_of("controller")
        d["node_dominant_load"] = by_label(cm, "shoal_node_dominant_load", "node")
        if nodes:
            d["queued"], d["node"] = {}, {}
            for i in range(c.nodes):
                m = c.metrics_of(i)
                d["queued"][i] = metric(m, "shoal_fnstore_queued_requests")
                d["node"][i] = {k: by_label(m, name, "tenant")
                                for k, name in NODE_TENANT_METRICS.items()}
        if gateway:
            g = c.metrics_of("gateway")
            d["rs"] = {k: {} for k in GATEWAY_RS_METRICS}
            for k, name in GATEWAY_RS_METRICS.items():
                for lab, v in series(g, name):
                    d["rs"][k].setdefault(lab.get("tenant"), {})[lab.get("node")] = v
            d["migration"] = {
                "running": metric(g, "shoal_gateway_migrate_running"),
                "moved_versions": metric(g, "shoal_gateway_migrate_moved_versions_total")}
        d["cpu"] = c.cpu_seconds()
        return d
    return sample


def node_deltas(samples, key="served"):
    """{tenant id: per second over the samples' span} of a node counter, summed
    over the nodes, and {tenant id: [per node]}, from the first and last sample."""
    a, b = samples[0], samples[-1]
    dt = b["t"] - a["t"]
    per = {}
    for i in b["node"]:
        for tid, v in b["node"][i][key].items():
            per.setdefault(tid, {})[i] = (v - a["node"][i][key].get(tid, 0.0)) / dt
    return {tid: sum(v.values()) for tid, v in per.items()}, per


def summarize_samples(c, samples):
    """What the samples of a measured window say: the controller's MMR and
    Jain (medians over the samples, and how often each tenant counted), how
    loaded the nodes were (the least and most median dominant load), how
    often a node's queue was empty, and the cluster's CPU use in cores."""
    out = {}
    if not samples:
        return out
    f = [s["fairness"] for s in samples]
    mm = [x["min_max_ratio"] for x in f if x.get("min_max_ratio") is not None]
    jn = [x["jain"] for x in f if x.get("jain") is not None]
    out["ctl_mmr"] = statistics.median(mm) if mm else None
    out["ctl_jain"] = statistics.median(jn) if jn else None
    shares, counted = {}, {}
    for x in f:
        for t in x["tenants"]:
            shares.setdefault(t["name"], []).append(t["dominant_share"])
            counted.setdefault(t["name"], []).append(1 if t["counted"] else 0)
    out["ctl_share"] = {n: statistics.median(v) for n, v in shares.items()}
    out["ctl_counted"] = {n: sum(v) / len(v) for n, v in counted.items()}
    loads = {}
    for s in samples:
        for n, v in s["node_dominant_load"].items():
            loads.setdefault(n, []).append(v)
    if loads:
        out["node_load_min"] = min(statistics.median(v) for v in loads.values())
        out["node_load_max"] = max(statistics.median(v) for v in loads.values())
    if "queued" in samples[0]:
        out["queue_empty_frac"] = sum(1 for s in samples for i in s["queued"]
                                      if s["queued"][i] == 0) / (len(samples) * c.nodes)
        out["queue_mean"] = statistics.mean(v for s in samples for v in s["queued"].values())
    if len(samples) >= 2:
        a, b = samples[0], samples[-1]
        dt = b["t"] - a["t"]
        out["cpu_cores"] = sum(b["cpu"][p] - a["cpu"][p] for p in b["cpu"]) / dt if dt else None
    return out


# ----------------------------------------------------------------------------- statistics


def mmr(xs):
    xs = list(xs)
    return min(xs) / max(xs) if xs and max(xs) > 0 else float("nan")


def jain(xs):
    xs = list(xs)
    s2 = sum(x * x for x in xs)
    return sum(xs) ** 2 / (len(xs) * s2) if s2 > 0 else float("nan")


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def series_by_tenant(series, value="ops_per_s"):
    """{tenant: [(second, value)]} in order (second s covers [s, s + 1))."""
    out = {}
    for r in series:
        out.setdefault(r["tenant"], []).append((r["second"], r[value]))
    return out


# ----------------------------------------------------------------------------- write-up


def machine():
    """One line about the machine and the code: CPU, cores, load, kernel, date, commit."""
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    rev = subprocess.run(["git", "-C", SRC, "rev-parse", "--short", "HEAD"],
                         capture_output=True).stdout.decode().strip() or "?"
    dirty = subprocess.run(["git", "-C", SRC, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True).stdout.strip()
    la = os.getloadavg()
    return "%s, %d vCPUs, Linux %s; load average %.1f/%.1f/%.1f at the end; %s UTC; at %s%s" % (
        model, os.cpu_count(), platform.release(), la[0], la[1], la[2],
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), rev, " (+ local changes)"
        if dirty else "")


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for r in rows:
        out.append("| " + " | ".join(str(x) for x in r) + " |")
    return "\n".join(out)


def replace_section(path, name, body, heading_anchor=None):
    """Puts body between the markers of section `name` in the Markdown page at
    path: replaces what is between them, or adds them in name order among
    the page's other sections, or at the end of the section under the
    heading line heading_anchor, or at the end of the page."""
    begin = "<!-- experiment:%s:begin (generated; a re-run replaces it) -->" % name
    end = "<!-- experiment:%s:end -->" % name
    with open(path) as f:
        text = f.read()
    block = begin + "\n\n" + body.strip() + "\n\n" + end
    pat = re.compile(re.escape(begin.split(" (")[0]) + r".*?" + re.escape(end), re.S)
    if pat.search(text):
        text = pat.sub(lambda m: block, text)
    else:
        # Sections of the same page stay in name order after the anchor.
        names = re.findall(r"<!-- experiment:([^:]+):end -->", text)
        later = sorted(n for n in names if n > name)
        if later:
            i = text.index("<!-- experiment:%s:begin" % later[0])
            text = text[:i] + block + "\n\n" + text[i:]
        elif names:
            i = text.index("<!-- experiment:%s:end -->" % sorted(names)[-1])
            i += len("<!-- experiment:%s:end -->" % sorted(names)[-1])
            text = text[:i] + "\n\n" + block + text[i:]
        elif heading_anchor and heading_anchor in text:
            # At the end of the anchor's section: before the next heading of
            # its level or above.
            i = text.index(heading_anchor)
            level = len(heading_anchor) - len(heading_anchor.lstrip("#"))
            m = re.compile(r"^#{1,%d} " % level, re.M).search(text, i + len(heading_anchor))
            j = m.start() if m else len(text)
            text = text[:j].rstrip("\n") + "\n\n" + block + "\n" + ("\n" + text[j:] if m else "")
        else:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_section(path, name, body, heading_anchor=None, no_doc=False):
    """replace_section, or with no_doc the body to stdout (docs untouched)."""
    if no_doc:
        print(body)
        return
    replace_section(path, name, body, heading_anchor=heading_anchor)
    log("wrote section %s of %s" % (name, path))


def img_path(name, no_doc=False):
    """Where a plot goes: docs/img, or with no_doc $TMPDIR/shoal-exp-img."""
    d = os.path.join(SRC, "docs", "img") if not no_doc else \
        os.path.join(os.environ.get("TMPDIR", "/tmp"), "shoal-exp-img")
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name)


def fmt(x, d=3):
    """x with d decimals; "-" for None and NaN."""
    if x is None or (isinstance(x, float) and x != x):
        return "-"
    return "%.*f" % (d, x)


def pct(x):
    return "-" if x is None or x != x else "%.0f %%" % (100 * x)


def verdict(ok):
    return "**met**" if ok else "**not met**"


def run_experiments(exps, which, args, out=""):
    """Runs exps[w](args) -> (target met, raw results) for each w in which,
    logs each verdict, writes the raw results as JSON to out; 0 when every
    target was met, else 1 (the exit status)."""
    ok, raw = True, {}
    pyplot()  # matplotlib missing fails here, not after the measurements
    for w in which:
        t0 = time.monotonic()
        good, raw[w] = exps[w](args)
        log("experiment %s: target %s (%.0f s)" % (w, "met" if good else "NOT met",
                                                  time.monotonic() - t0))
        ok = ok and good
    if out:
        with open(out, "w") as f:
            json.dump(raw, f, indent=1, default=str)
    return 0 if ok else 1


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_lines(path, lines, title, ylabel, xlabel="time (s)", marks=(), spans=(), ylim=None,
               hlines=(), figsize=(9, 4.2), legend_cols=1):
    """lines: [(label, [(x, y)], style dict)]; marks: [(x, label)] vertical
    lines; spans: [(x0, x1, label[, color])] shaded; hlines: [(y, label)]."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=figsize)
    for sp in spans:
        ax.axvspan(sp[0], sp[1], color=sp[3] if len(sp) > 3 else "0.9", label=sp[2])
    for label, pts, style in lines:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, **(style or {}))
    for y, label in hlines:
        ax.axhline(y, color="0.4", linestyle=":", linewidth=1, label=label)
    for x, label in marks:
        ax.axvline(x, color="k", linestyle="--", linewidth=1)
        ax.annotate(label, (x, 1), xycoords=("data", "axes fraction"), xytext=(3, -12),
                    textcoords="offset points", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, ncol=legend_cols, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_grid(path, rows, title, ylabel, xlabel="time (s)", figsize=None, ylim=None,
              sharey="all"):
    """A grid of line plots: rows = [[(subtitle, lines, marks, spans[, opts])]]
    with lines, marks and spans as in plot_lines; opts {"logy": True}. The y
    axis is shared by all panels (sharey "all") or along each row ("row");
    the first panel of each row has the legend."""
    plt = pyplot()
    nr, nc = len(rows), max(len(r) for r in rows)
    fig, axs = plt.subplots(nr, nc, figsize=figsize or (4.0 * nc, 3.2 * nr + 0.6), sharey=sharey,
                            squeeze=False)
    for r, row in enumerate(rows):
        for col in range(nc):
            ax = axs[r][col]
            if col >= len(row):
                ax.axis("off")
                continue
            sub, lines, marks, spans = row[col][:4]
            opts = row[col][4] if len(row[col]) > 4 else {}
            for sp in spans:
                ax.axvspan(sp[0], sp[1], color=sp[3] if len(sp) > 3 else "0.9")
            for label, pts, style in lines:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, **(style or {}))
            for x, label in marks:
                ax.axvline(x, color="k", linestyle="--", linewidth=1)
            if opts.get("logy"):
                ax.set_yscale("log")
            ax.set_title(sub, fontsize=9)
            ax.grid(True, alpha=0.3)
            if ylim:
                ax.set_ylim(*ylim)
            if r == nr - 1:
                ax.set_xlabel(xlabel)
            if col == 0:
                ax.set_ylabel(ylabel)
                ax.legend(fontsize=7, loc="best")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
