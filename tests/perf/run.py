#!/usr/bin/python3
"""perf.baseline: Shoal against plain baselines on this machine, loopback only.

    run.py --build BUILD [--runs 3] [--duration 5] [--conc 16] [--big-conc 4]
           [--only NAME[,NAME...]] [--out FILE.json] [--strict] [--tmp-root DIR]
    run.py --build BUILD --sweep [--sweep-conc 1,4,16,64,256] [--out FILE.json]
    run.py --build BUILD --check [--figures docs/benchmarks.json]

Pairs (A = Shoal side, B = baseline), each run A B A B ... --runs times, medians:
  get-1k/1m/10m/100m  GET through the gateway          vs nginx serving the same bytes
  get-1k tail         GET 1 KiB at half of its peak     vs nginx at half of its own peak:
                      open loop, p50, p99 and p99/p50 (the target: gateway <= 3x),
                      after cyclictest's timer wake-up latency on the idle machine
  put-1k              PUT 1 KiB through the gateway    vs redis-benchmark SET 1 KiB (-P 1),
                      in memory (the target) and with appendfsync always (context)
  put-10m/100m        PUT through the gateway          vs the gateway's GET of the same size (when get runs too)
  ec-4+2/10+2         shoal-ecbench encode, decode     vs memcpy of the same bytes
  client              shoal-bench --url                vs wrk, both on nginx 1 KiB
--sweep: concurrency sweeps instead, GET and PUT at 1 KiB and 10 MiB, each
point gateway vs nginx (GET) or vs Redis with appendfsync always (PUT), the
sides alternated --runs times, with the gateway's peak RSS and its 503s per
point. tests/perf/plot.py turns the JSON into docs/img/*.png and the tables
of docs/benchmarks.md.
--check: the regression guard (`make perf`). Runs the rows recorded in
docs/benchmarks.json ("check" rows) and fails when a row's A/B ratio falls
below its recorded ratio by more than the noise recorded with it (the
spread of that row's alternated pairs when it was recorded or now, at
least --check-floor, 35%: only gross regressions show on a shared VM).
Every run's result is logged (stderr) as it finishes, the table has medians.
Every client is shoal-bench at the same concurrency unless named. The
cluster is deploy/local/shoal-cluster on ports shifted into 15000-15999.
Exit 1 when a step fails; with --strict also when shoal-bench < 0.9x wrk.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KiB, MiB = 1024, 1024 * 1024
SIZES = {"1k": KiB, "1m": MiB, "10m": 10 * MiB, "100m": 100 * MiB}
NODE_CAPACITY = "2GiB"  # per node, unless --cluster-arg=--fnstore-args is given
OPEN_CONNS = 64  # connection pool of the open-loop (tail) runs


def log(msg):
    print("perf: " + msg, file=sys.stderr, flush=True)


def port_free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_port(taken=()):
    ports = list(range(15000, 16000))
    random.shuffle(ports)
    for p in ports:
        if p not in taken and port_free(p):
            return p
    raise RuntimeError("no free port in 15000-15999")


def wait_port(port, proc, what, secs=15):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("%s exited with %s" % (what, proc.returncode))
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("%s did not listen on %d" % (what, port))


def find_bin(build, name):
    for dirpath, _, files in os.walk(build):
        if name in files and os.access(os.path.join(dirpath, name), os.X_OK):
            return os.path.join(dirpath, name)
    raise RuntimeError("%s not found under %s" % (name, build))


def run(cmd, timeout=900, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout[-2000:],
                                                  p.stderr[-2000:]))
    return p.stdout


def http_status(port, path, key):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        c.request("GET", path, headers={"Authorization": "Bearer " + key})
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


class Env:
    """Everything this run started; stop() ends only those processes."""

    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="shoal-perf.", dir=args.tmp_root)
        os.chmod(self.tmp, 0o755)
        self.procs = []
        self.cluster_dir = None
        self.bench = find_bin(args.build, "shoal-bench")

    def start_nginx(self):
        d = os.path.join(self.tmp, "nginx")
        www = os.path.join(d, "www")
        os.makedirs(os.path.join(d, "tmp"))
        os.makedirs(www)
        os.chmod(d, 0o755)
        os.chmod(www, 0o755)
        self.payload = {}
        for name, size in SIZES.items():
            data = os.urandom(size)
            self.payload[name] = data
            with open(os.path.join(www, name), "wb") as f:
                f.write(data)
            os.chmod(os.path.join(www, name), 0o644)
        self.nginx_port = free_port()
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write("""daemon off;
worker_processes %d;
pid %s/nginx.pid;
error_log %s/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000000;
    client_body_temp_path %s/tmp/body;
    proxy_temp_path %s/tmp/proxy;
    fastcgi_temp_path %s/tmp/fastcgi;
    uwsgi_temp_path %s/tmp/uwsgi;
    scgi_temp_path %s/tmp/scgi;
    server { listen 127.0.0.1:%d; root %s; }
}
""" % ((self.args.nginx_workers, d, d) + (d,) * 5 + (self.nginx_port, www)))
        p = subprocess.Popen(["/usr/sbin/nginx", "-p", d, "-c", conf, "-e",
                              os.path.join(d, "error.log")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(p)
        wait_port(self.nginx_port, p, "nginx")
        log("nginx on 127.0.0.1:%d" % self.nginx_port)

    def start_redis(self, durable=False):
        """A Redis on a free port: in memory only (the target's baseline), or
        with every write fsync'd to its append-only file before the reply."""
        port = free_port()
        persist = ["--appendonly", "yes", "--appendfsync", "always"] if durable else \
            ["--appendonly", "no"]
        name = "redis-aof" if durable else "redis"
        p = subprocess.Popen(["/usr/bin/redis-server", "--port", str(port),
                              "--bind", "127.0.0.1", "--save", ""] + persist +
                             ["--dir", os.path.join(self.tmp), "--appendfilename", name + ".aof",
                              "--logfile", os.path.join(self.tmp, name + ".log")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(p)
        wait_port(port, p, "redis-server")
        log("%s on 127.0.0.1:%d" % (name, port))
        return port

    def start_cluster(self):
        # Default ports + K must stay in 15000-15999: gateway 9300+K .. metrics 9600+N+K.
        for _ in range(50):
            k = 5700 + 10 * random.randrange(0, 60)
            ports = [9300 + k, 9400 + k] + [9500 + i + k for i in range(8)] + \
                    [9600 + i + k for i in range(8)]
            if all(port_free(p) for p in ports):
                break
        else:
            raise RuntimeError("no free port offset for the cluster")
        self.cluster_dir = os.path.join(self.tmp, "cluster")
        script = os.path.join(ROOT, "deploy", "local", "shoal-cluster")
        extra = list(self.args.cluster_args)
        if "--fnstore-args" not in extra:
            # PUT 10/100 MiB writes several GB a run: the default 1 GiB per
            # node can fill up (503).
            extra += ["--fnstore-args", "--capacity %s" % NODE_CAPACITY]
        run([script, "start", "--dir", self.cluster_dir, "--port-offset", str(k),
             "--build", self.args.build, "--timeout", "60"] + extra, timeout=180)
        self.gateway = "http://127.0.0.1:%d" % (9300 + k)
        ctl = find_bin(self.args.build, "shoalctl")
        out = run([ctl, "--controller", "http://127.0.0.1:%d" % (9400 + k), "--token-file",
                   os.path.join(self.cluster_dir, "admin.token"), "--json", "tenant", "create",
                   "perf"])
        self.key = json.loads(out)["key"]
        # The gateway learns new tenants from the controller asynchronously.
        end = time.monotonic() + 60
        while True:
            code = http_status(9300 + k, "/v1/objects/perf-probe", self.key)
            if code != 401:
                break
            if time.monotonic() > end:
                raise RuntimeError("gateway still refuses the new tenant key (401)")
            time.sleep(0.25)
        log("cluster up: gateway %s" % self.gateway)

    def stop(self):
        if self.cluster_dir is not None:
            script = os.path.join(ROOT, "deploy", "local", "shoal-cluster")
            subprocess.run([script, "stop", "--dir", self.cluster_dir], capture_output=True,
                           timeout=120)
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- clients ----
    def sb(self, *args, duration=None, errors_ok=False):
        a = self.args
        duration = duration or a.duration
        out = run([self.bench, "--threads", str(a.threads), "--warmup", str(a.warmup),
                   "--duration", str(duration), "--json", "--log-level", "warn", *args],
                  timeout=duration * 4 + 600)
        res = json.loads(out)
        if "load" in res:
            lt = res["load"]["tenants"][0]
            if lt["errors"]:
                raise RuntimeError("shoal-bench load errors %s: %s" % (lt["status"], " ".join(args)))
        t = res["tenants"][0]
        if t["errors"] and not (a.allow_errors or errors_ok):
            raise RuntimeError("shoal-bench errors %s: %s" % (t["status"], " ".join(args)))
        if t["ops"] == 0:
            raise RuntimeError("no request finished within %gs: %s" % (duration, " ".join(args)))
        return t

    def sb_gateway(self, size, read, conc, keys, prefix, load, rate=0, errors_ok=False):
        """Closed loop with conc outstanding, or with rate > 0 open loop
        (Poisson arrivals, latency from the intended send time)."""
        # Big objects need more time for several requests to finish in the window.
        duration = max(self.args.duration, self.args.big_duration) \
            if size >= 10 * MiB and not load else None
        loop = "rate=%d,conns=%d" % (rate, OPEN_CONNS) if rate else "conc=%d" % conc
        spec = "name=perf,key=%s,%s,keys=%d,size=%d,read=%g,zipf=0" % (
            self.key, loop, keys, size, read)
        args = ["--gateway", self.gateway, "--tenant", spec, "--prefix", prefix]
        if load:
            args.append("--load")
        return self.sb(*args, duration=duration, errors_ok=errors_ok)

    def sb_url(self, name, conc, rate=0):
        duration = max(self.args.duration, self.args.big_duration) \
            if SIZES[name] >= 10 * MiB else None
        loop = ["--rate", str(rate), "--conns", str(OPEN_CONNS)] if rate else ["--conc", str(conc)]
        return self.sb("--url", "http://127.0.0.1:%d/%s" % (self.nginx_port, name), *loop,
                       duration=duration)

    def gw_pid(self):
        with open(os.path.join(self.cluster_dir, "pids", "gateway.pid")) as f:
            return int(f.read().strip())

    def gw_rss_reset(self):
        """Resets the gateway's peak RSS (VmHWM) to its current RSS."""
        with open("/proc/%d/clear_refs" % self.gw_pid(), "w") as f:
            f.write("5")

    def gw_rss_peak(self):
        with open("/proc/%d/status" % self.gw_pid()) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return 0

    def redis_set(self, port, conc, n, size=1024):
        out = run(["/usr/bin/redis-benchmark", "-h", "127.0.0.1", "-p", str(port),
                   "-t", "set", "-d", str(size), "-c", str(conc), "-n", str(n), "-P", "1",
                   "--threads", str(self.args.threads), "--csv"])
        for line in out.splitlines():
            cells = [c.strip('"') for c in line.split(",")]
            if cells and cells[0] == "SET":
                return float(cells[1])
        raise RuntimeError("cannot parse redis-benchmark output:\n" + out)

    def wrk(self, conc):
        out = run(["/usr/bin/wrk", "-t", str(self.args.threads), "-c", str(conc), "-d",
                   "%ds" % max(1, round(self.args.duration)),
                   "http://127.0.0.1:%d/1k" % self.nginx_port])
        m = re.search(r"Requests/sec:\s*([0-9.]+)", out)
        if not m:
            raise RuntimeError("cannot parse wrk output:\n" + out)
        return float(m.group(1))


def _median(xs):
    """Median of numbers, or the median-throughput run of shoal-bench results."""
    if xs and isinstance(xs[0], dict):
        return sorted(xs, key=lambda t: t["mb_per_s"])[len(xs) // 2]
    return statistics.median(xs)


def _value(x):
    return x["mb_per_s"] if isinstance(x, dict) else x


def pair_ratios(a, b):
    """A/B of each alternated pair, for the noise of a row."""
    return [_value(x) / _value(y) for x, y in zip(a, b) if _value(y)]


def spread(ratios):
    """Largest relative distance of a pair's ratio from their median."""
    if len(ratios) < 2:
        return None
    m = statistics.median(ratios)
    return max(abs(r - m) for r in ratios) / m if m else None


def alternate(runs, fa, fb):
    """Runs A B A B ...; logs every run, so the spread behind each median shows."""
    a, b = [], []
    for i in range(runs):
        a.append(fa())
        if fb is not None:
            b.append(fb())
        log("  run %d/%d: A %.1f%s" % (i + 1, runs, _value(a[-1]),
                                      ", B %.1f" % _value(b[-1]) if fb is not None else ""))
    return _median(a), (_median(b) if b else None), a, b


def wakeup_rows(seconds):
    """The machine's floor under the latency target: how late a sleeping
    thread wakes on a timer (cyclictest, one SCHED_OTHER thread, 1 ms period)
    while nothing else runs. Every hop of a request waits for such a wake-up."""
    n = max(1000, int(seconds * 1000))
    out = run(["/usr/bin/cyclictest", "-q", "-t", "1", "-i", "1000", "-l", str(n),
               "-h", "20000"])
    hist = []
    for line in out.splitlines():
        cells = line.split()
        if len(cells) == 2 and cells[0].isdigit():
            hist.append((int(cells[0]), int(cells[1])))
        elif line.startswith("# Histogram Overflows:"):
            hist.append((20000, int(cells[3])))

    def pct(q):
        seen, total = 0, sum(c for _, c in hist)
        for us, c in hist:
            seen += c
            if seen >= q * total:
                return us
        raise RuntimeError("cannot parse cyclictest output:\n" + out[-2000:])

    p50, p99 = pct(0.5), pct(0.99)
    log("timer wake-up latency, idle: p50 %d us, p99 %d us (cyclictest, %d wake-ups)" % (
        p50, p99, n))
    return [("timer wake-up p50, idle", "cyclictest", p50, "-", None, "us"),
            ("timer wake-up p99, idle", "cyclictest", p99, "-", None, "us"),
            ("timer wake-up p99/p50", "cyclictest", p99 / max(p50, 1), "-", None, "x")]


def tail_rows(env, peak_a, peak_b):
    """The latency target: each side at half of its own closed-loop peak,
    open loop, p50 and p99 (medians over the runs) and p99/p50."""
    rows = wakeup_rows(env.args.duration)
    ra, rb = int(peak_a / 2), int(peak_b / 2)
    log("get 1k tail: gateway at %d req/s vs nginx at %d req/s (half of each peak), "
        "open loop, %d connections" % (ra, rb, OPEN_CONNS))
    a, b = [], []
    for i in range(env.args.runs):
        a.append(env.sb_gateway(KiB, 1.0, 0, 1, "perf/get-1k-", False, rate=ra)["latency_us"])
        b.append(env.sb_url("1k", 0, rate=rb)["latency_us"])
        log("  run %d/%d: A p50 %.0f p99 %.0f us, B p50 %.0f p99 %.0f us" % (
            i + 1, env.args.runs, a[-1]["p50"], a[-1]["p99"], b[-1]["p50"], b[-1]["p99"]))

    def med(xs, f):
        return statistics.median(f(x) for x in xs)

    rows += [("GET 1k %s at half peak" % q, "gateway", med(a, lambda x: x[q]), "nginx",
              med(b, lambda x: x[q]), "us") for q in ("p50", "p99")]
    rows.append(("GET 1k p99/p50 at half peak", "gateway", med(a, lambda x: x["p99"] / x["p50"]),
                 "nginx", med(b, lambda x: x["p99"] / x["p50"]), "x"))
    return rows


SWEEP_CASES = (("get", "1k"), ("get", "10m"), ("put", "1k"), ("put", "10m"))
# Points the regression guard re-measures: (op, size, conc).
# PUT 10 MiB is not one: durable Redis's 10 MiB SETs wait on the disk and
# moved 70-170 MB/s between runs.
CHECK_POINTS = (("get", "1k", 16), ("get", "10m", 16), ("get", "10m", 64), ("put", "1k", 16),
                ("put", "1k", 64))
# Redis with appendfsync always appends every 10 MiB SET to its AOF: above
# this the file grows by GBs a point, so PUT 10 MiB has no baseline there.
REDIS_BIG_MAX_CONC = 64


def sweep_point(env, redis_aof, op, name, conc):
    """One point: gateway vs its baseline, alternated --runs times."""
    size = SIZES[name]
    big = size >= 10 * MiB
    gw, base, rss = [], [], []
    for i in range(env.args.runs):
        env.gw_rss_reset()
        if op == "get":
            a = env.sb_gateway(size, 1.0, conc, 1, "perf/get-%s-" % name, False, errors_ok=True)
        else:
            a = env.sb_gateway(size, 0.0, conc, 8 if big else 1000, "perf/put-%s-" % name,
                               False, errors_ok=True)
        rss.append(env.gw_rss_peak())
        gw.append(a)
        if op == "get":
            b = env.sb_url(name, conc)["mb_per_s"]
        elif big and conc > REDIS_BIG_MAX_CONC:
            b = None
        else:
            n = max(2 * conc, 32) if big else max(4000, int(4000 * env.args.duration))
            b = env.redis_set(redis_aof, conc, n, size) * size / 1e6
        base.append(b)
        log("  %s %s conc %d run %d/%d: gateway %.1f MB/s (p99 %.0f ms, max %.0f ms, 503 %d, "
            "peak RSS %d MiB), baseline %s MB/s" % (
                op, name, conc, i + 1, env.args.runs, a["mb_per_s"],
                a["latency_us"]["p99"] / 1e3, a["latency_us"]["max"] / 1e3,
                a["status"].get("503", 0), rss[-1] >> 20, "-" if b is None else "%.1f" % b))
    a = _median(gw)
    bs = [x for x in base if x is not None]
    b = statistics.median(bs) if bs else None
    ratios = [x["mb_per_s"] / y for x, y in zip(gw, base) if y]
    return {"op": op, "size": name, "conc": conc, "runs": env.args.runs,
            "gateway_mb_s": a["mb_per_s"], "gateway_ops_s": a["ops_per_s"],
            "gateway_p50_ms": a["latency_us"]["p50"] / 1e3,
            "gateway_p99_ms": a["latency_us"]["p99"] / 1e3,
            "gateway_max_ms": max(x["latency_us"]["max"] for x in gw) / 1e3,
            "gateway_503": sum(x["status"].get("503", 0) for x in gw),
            "gateway_errors": sum(x["errors"] for x in gw),
            "gateway_peak_rss_mib": max(rss) >> 20,
            "baseline": "nginx" if op == "get" else "redis appendfsync always",
            "baseline_mb_s": b,
            "ratio": statistics.median(ratios) if ratios else None,
            "noise": spread(ratios),
            "check": (op, name, conc) in CHECK_POINTS}


def sweep(env, points):
    """points: [(op, size name, conc)], in this order; loads each GET object once."""
    redis_aof = env.start_redis(durable=True)
    loaded, out = set(), []
    for op, name, conc in points:
        if op == "get" and name not in loaded:
            env.sb_gateway(SIZES[name], 1.0, 1, 1, "perf/get-%s-" % name, True)
            loaded.add(name)
        log("%s %s at conc %d: gateway vs %s" % (op, name, conc,
                                                 "nginx" if op == "get" else "redis fsync"))
        try:
            out.append(sweep_point(env, redis_aof, op, name, conc))
        except RuntimeError as e:  # a point that fails is recorded as failed, the rest run
            log("  %s %s conc %d FAILED: %s" % (op, name, conc, str(e)[:300]))
            out.append({"op": op, "size": name, "conc": conc, "failed": str(e)[:300]})
    return out


def check(points, recorded, floor):
    """Rows whose ratio fell by more than their recorded noise; printed."""
    bad = []
    rec = {(p["op"], p["size"], p["conc"]): p for p in recorded}
    print("\n%-22s %10s %10s %8s %8s  %s" % ("point", "recorded", "now", "noise", "floor",
                                             "verdict"))
    for p in points:
        r = rec.get((p["op"], p["size"], p["conc"]))
        if "failed" in p:
            print("%-22s %s" % ("%s %s conc %d" % (p["op"], p["size"], p["conc"]), "FAILED"))
            bad.append(p)
            continue
        if r is None or r.get("ratio") is None or p["ratio"] is None:
            continue
        # The noise of either measurement: the recorded pairs' spread or
        # this run's, never less than the floor.
        noise = max(r["noise"] or 0.0, p["noise"] or 0.0, floor)
        low = r["ratio"] * (1 - noise)
        ok = p["ratio"] >= low
        print("%-22s %10.2f %10.2f %7.0f%% %8.2f  %s" % (
            "%s %s conc %d" % (p["op"], p["size"], p["conc"]), r["ratio"], p["ratio"],
            100 * noise, low, "ok" if ok else "REGRESSED"))
        if not ok:
            bad.append(p)
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--conc", type=int, default=16)
    ap.add_argument("--big-conc", type=int, default=4, help="concurrency for 10/100 MiB objects")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--nginx-workers", type=int, default=1)
    ap.add_argument("--only", default="", help="comma list: get,put,ec,client")
    ap.add_argument("--out", default="")
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--allow-errors", action="store_true")
    ap.add_argument("--cluster-arg", dest="cluster_args", action="append", default=[])
    ap.add_argument("--big-duration", type=float, default=10,
                    help="seconds measured for 10/100 MiB objects (at least --duration)")
    ap.add_argument("--sweep", action="store_true", help="concurrency sweeps (see above)")
    ap.add_argument("--sweep-conc", default="1,4,16,64,256")
    ap.add_argument("--sweep-only", default="",
                    help="comma list of OP-SIZE (get-1k,get-10m,put-1k,put-10m)")
    ap.add_argument("--check", action="store_true", help="the regression guard (see above)")
    ap.add_argument("--figures", default=os.path.join(ROOT, "docs", "benchmarks.json"))
    ap.add_argument("--check-floor", type=float, default=0.35,
                    help="smallest noise allowed for a check row (relative); 0.35: the same "
                         "build's ratios moved by up to 34%% between runs on the shared VM")
    ap.add_argument("--tmp-root",
                    help="where the run keeps cluster state, COS, nginx files and the AOF "
                         "(default $TMPDIR); /dev/shm takes the disk out of every side, "
                         "for measurement only")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(","))) or {"get", "put", "ec", "client"}

    if args.sweep or args.check:
        return main_sweep(args)
    env = Env(args)
    rows = []  # (test, a_name, a, b_name, b, unit)
    failed = False
    try:
        env.start_nginx()
        if "client" in only:
            log("client: shoal-bench vs wrk on nginx 1 KiB")
            ma, mb, ra, rb = alternate(args.runs, lambda: env.sb_url("1k", args.conc)["ops_per_s"],
                                       lambda: env.wrk(args.conc))
            rows.append(("client nginx 1k", "shoal-bench", ma, "wrk", mb, "req/s"))
        if "ec" in only:
            ecb = find_bin(args.build, "shoal-ecbench")
            for k, m in ((4, 2), (10, 2)):
                enc, dec, cpy = [], [], []
                for _ in range(args.runs):
                    r = json.loads(run([ecb, "--k", str(k), "--m", str(m), "--size", str(MiB),
                                        "--seconds", "1", "--json"]))
                    enc.append(r["encode_mb_s"])
                    dec.append(r["decode_mb_s"])
                    cpy.append(r["memcpy_mb_s"])
                c = statistics.median(cpy)
                rows.append(("ec RS(%d+%d) encode" % (k, m), "cm_ec", statistics.median(enc),
                             "memcpy", c, "MB/s"))
                rows.append(("ec RS(%d+%d) decode" % (k, m), "cm_ec", statistics.median(dec),
                             "memcpy", c, "MB/s"))
        get_mb = {}  # Shoal's GET MB/s by size, for the PUT rows
        if "get" in only or "put" in only:
            env.start_cluster()
        if "get" in only:
            for name, size in SIZES.items():
                conc = args.conc if size <= MiB else args.big_conc
                log("get %s: gateway vs nginx, conc %d" % (name, conc))
                # One PUT loads the object; later runs reuse it.
                env.sb_gateway(size, 1.0, 1, 1, "perf/get-%s-" % name, True)
                ma, mb, _, _ = alternate(
                    args.runs,
                    lambda: env.sb_gateway(size, 1.0, conc, 1, "perf/get-%s-" % name, False),
                    lambda: env.sb_url(name, conc))
                rows.append(("GET %s (conc %d)" % (name, conc), "gateway", ma["mb_per_s"],
                             "nginx", mb["mb_per_s"], "MB/s"))
                get_mb[name] = ma["mb_per_s"]
                rows.append(("GET %s p99 (conc %d)" % (name, conc), "gateway",
                             ma["latency_us"]["p99"] / 1000, "nginx",
                             mb["latency_us"]["p99"] / 1000, "ms"))
                if name == "1k":
                    rows += tail_rows(env, ma["ops_per_s"], mb["ops_per_s"])
        if "put" in only:
            redis = env.start_redis()
            redis_aof = env.start_redis(durable=True)
            log("put 1k: gateway vs redis SET, conc %d" % args.conc)
            n = max(10000, int(20000 * args.duration))
            ma, mb, _, _ = alternate(
                args.runs,
                lambda: env.sb_gateway(KiB, 0.0, args.conc, 1000, "perf/put-1k-", False)["ops_per_s"],
                lambda: env.redis_set(redis, args.conc, n))
            rows.append(("PUT 1k (conc %d)" % args.conc, "gateway", ma, "redis SET", mb, "ops/s"))
            # Context, not the target: Redis made as durable as a PUT (fsync per write).
            log("put 1k: gateway vs redis SET appendfsync always, conc %d" % args.conc)
            ma, mb, _, _ = alternate(
                args.runs,
                lambda: env.sb_gateway(KiB, 0.0, args.conc, 1000, "perf/put-1k-", False)["ops_per_s"],
                lambda: env.redis_set(redis_aof, args.conc, max(2000, n // 10)))
            rows.append(("PUT 1k (conc %d)" % args.conc, "gateway", ma, "redis fsync", mb, "ops/s"))
            for name in ("10m", "100m"):
                size = SIZES[name]
                log("put %s: gateway, conc %d" % (name, args.big_conc))
                ma, _, _, _ = alternate(
                    args.runs,
                    lambda: env.sb_gateway(size, 0.0, args.big_conc, 8, "perf/put-%s-" % name,
                                           False)["mb_per_s"], None)
                # The target compares PUT with Shoal's own GET of the same size.
                rows.append(("PUT %s (conc %d)" % (name, args.big_conc), "gateway", ma,
                             "gateway GET", get_mb.get(name), "MB/s"))
    except Exception as e:  # noqa: BLE001 - report and fail the test
        log("FAILED: %s" % e)
        failed = True
    finally:
        env.stop()

    print("\n%-28s %-12s %12s %-12s %12s %8s  %s" % ("test", "A", "median", "B", "median",
                                                   "A/B", "unit"))
    out = []
    for test, an, a, bn, b, unit in rows:
        ratio = (a / b) if (b not in (None, 0)) else None
        print("%-28s %-12s %12.1f %-12s %12s %8s  %s" % (
            test, an, a, bn, "-" if b is None else "%.1f" % b,
            "-" if ratio is None else "%.2f" % ratio, unit))
        out.append({"test": test, "a": an, "a_median": a, "b": bn, "b_median": b,
                    "ratio": ratio, "unit": unit})
    client = [r for r in out if r["test"].startswith("client")]
    if client and client[0]["ratio"] is not None:
        ok = client[0]["ratio"] >= 0.9
        print("\nshoal-bench / wrk = %.2f (%s: want >= 0.90)" % (client[0]["ratio"],
                                                                "ok" if ok else "BELOW"))
        if args.strict and not ok:
            failed = True
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"runs": args.runs, "duration_s": args.duration, "conc": args.conc,
                       "big_conc": args.big_conc, "results": out}, f, indent=2)
    print("perf.baseline: %s" % ("FAILED" if failed else "ok"))
    return 1 if failed else 0


def main_sweep(args):
    concs = [int(c) for c in args.sweep_conc.split(",") if c]
    if args.check:
        with open(args.figures) as f:
            recorded = json.load(f)["points"]
        points = [(p["op"], p["size"], p["conc"]) for p in recorded if p.get("check")]
    else:
        cases = [c for c in SWEEP_CASES if not args.sweep_only or
                 "%s-%s" % c in args.sweep_only.split(",")]
        points = [(op, name, conc) for op, name in cases for conc in concs]
    env = Env(args)
    failed, res = False, []
    try:
        env.start_nginx()
        env.start_cluster()
        res = sweep(env, points)
        failed = any("failed" in p for p in res) and args.check
    except Exception as e:  # noqa: BLE001 - report and fail
        log("FAILED: %s" % e)
        failed = True
    finally:
        env.stop()
    print("\n%-5s %-5s %5s %10s %10s %10s %8s %8s %6s %6s" % (
        "op", "size", "conc", "gw MB/s", "base MB/s", "ratio", "p99 ms", "max ms", "503",
        "RSS MiB"))
    for p in res:
        if "failed" in p:
            print("%-5s %-5s %5d FAILED" % (p["op"], p["size"], p["conc"]))
            continue
        print("%-5s %-5s %5d %10.1f %10s %10s %8.1f %8.0f %6d %6d" % (
            p["op"], p["size"], p["conc"], p["gateway_mb_s"],
            "-" if p["baseline_mb_s"] is None else "%.1f" % p["baseline_mb_s"],
            "-" if p["ratio"] is None else "%.2f" % p["ratio"], p["gateway_p99_ms"],
            p["gateway_max_ms"], p["gateway_503"], p["gateway_peak_rss_mib"]))
    if args.out:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        with open(args.out, "w") as f:
            json.dump({"recorded": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       "build": rev, "runs": args.runs, "duration_s": args.duration,
                       "big_duration_s": max(args.duration, args.big_duration),
                       "command": " ".join(["tests/perf/run.py"] + sys.argv[1:]),
                       "points": res}, f, indent=1)
            f.write("\n")
    if args.check and not failed:
        bad = check(res, recorded, args.check_floor)
        failed = bool(bad) or len(res) != len(points)
    print("perf.%s: %s" % ("check" if args.check else "sweep", "FAILED" if failed else "ok"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
