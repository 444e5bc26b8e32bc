#!/usr/bin/env python3
"""integ.prometheus - every /metrics endpoint, the shipped Prometheus files,
and a real Prometheus server scraping a cluster under multi-tenant load.

- `promtool check metrics` finds nothing to say about the gateway's, the
  controller's and every node's /metrics, scraped while three tenants load
  the cluster (so every per-tenant family has series).
- deploy/prometheus: `promtool check config` / `check rules` pass,
  `promtool test rules` passes (hand-computed answers for the recording rules
  and the alert), and the shipped prometheus.yml is what gen-config writes
  for the default cluster.
- A Prometheus server (127.0.0.1, a free port, a temporary storage directory,
  1 s scrape and evaluation) configured by gen-config --cluster-dir scrapes
  every target, and the per-tenant share (the recording rule over the nodes'
  served cost, and the controller's own gauge) has a value for every tenant.

Every process started here is stopped by its pid.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoaltest as st  # noqa: E402

NODES = 3
PROMTOOL = "/usr/bin/promtool"
PROMETHEUS = "/usr/bin/prometheus"


def promtool(t, *args, stdin=None):
    p = subprocess.run([PROMTOOL] + list(args), input=stdin, capture_output=True, timeout=60)
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace")


def start_bench(t, c, tenants, seconds):
    spec = []
    for ten in tenants:
        spec += ["--tenant", "name=%s,key=%s,conc=4,size=1KiB,read=0.9,keys=100" % (
            ten["name"], ten["key"])]
    return subprocess.Popen(
        [t.binary("shoal-bench"), "--gateway", "http://127.0.0.1:%d" % c.gw_port, "--load",
         "--warmup", "1", "--duration", str(seconds), "--threads", "1", "--log-level", "warn"] +
        spec, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def check_lint(t, c, tenants):
    ends = [("gateway", c.gw_port), ("controller", c.ctl_port)] + [
        ("node %d" % i, c.metrics_port(i)) for i in range(NODES)]
    for name, port in ends:
        r = st.http_request(port, "GET", "/metrics", timeout=10)
        t.status(r, 200, "%s /metrics" % name)
        for ten in tenants:  # the per-tenant families have series to lint
            t.check(('tenant="%d"' % ten["id"]).encode() in r.body,
                    "%s /metrics has no series of tenant %d" % (name, ten["id"]))
        rc, out = promtool(t, "check", "metrics", stdin=r.body)
        t.check(rc == 0 and out.strip() == "", "promtool check metrics on %s (exit %d):\n%s" % (
            name, rc, out))


def check_shipped_files(t, c):
    d = os.path.join(t.src, "deploy", "prometheus")
    rc, out = promtool(t, "check", "config", os.path.join(d, "prometheus.yml"))
    t.check(rc == 0, "promtool check config prometheus.yml:\n" + out)
    rc, out = promtool(t, "check", "rules", os.path.join(d, "shoal.rules.yml"),
                       os.path.join(d, "shoal.alerts.yml"))
    t.check(rc == 0, "promtool check rules:\n" + out)
    p = subprocess.run([PROMTOOL, "test", "rules", "shoal.rules.test.yml"], cwd=d,
                       capture_output=True, timeout=60)
    t.check(p.returncode == 0, "promtool test rules:\n" + (p.stdout + p.stderr).decode())
    p = subprocess.run([os.path.join(d, "gen-config"), "--rules-dir", "."], capture_output=True,
                       timeout=30)
    with open(os.path.join(d, "prometheus.yml"), "rb") as f:
        t.eq(p.stdout, f.read(), "shipped prometheus.yml vs gen-config --rules-dir .")


def query(port, q):
    r = st.http_request(port, "GET", "/api/v1/query?" + urllib.parse.urlencode({"query": q}),
                        timeout=10)
    if r.status != 200:
        return None
    j = r.json()
    return j["data"]["result"] if j.get("status") == "success" else None


def check_server(t, c, tenants):
    work = tempfile.mkdtemp(prefix="shoal-prom-", dir=t.tmp)
    cfg = os.path.join(work, "prometheus.yml")
    p = subprocess.run([os.path.join(t.src, "deploy", "prometheus", "gen-config"),
                        "--cluster-dir", c.dir, "--scrape-interval", "1s",
                        "--evaluation-interval", "1s"], capture_output=True, timeout=30)
    t.eq(p.returncode, 0, "gen-config --cluster-dir (%r)" % p.stderr)
    with open(cfg, "wb") as f:
        f.write(p.stdout)
    rc, out = promtool(t, "check", "config", cfg)
    t.check(rc == 0, "promtool check config (generated):\n" + out)
    port = st.free_port()
    log = open(os.path.join(work, "prometheus.log"), "wb")
    prom = subprocess.Popen([PROMETHEUS, "--config.file", cfg,
                             "--storage.tsdb.path", os.path.join(work, "data"),
                             "--web.listen-address", "127.0.0.1:%d" % port,
                             "--log.level", "warn"], stdout=log, stderr=log)
    try:
        want = {str(x["id"]) for x in tenants}

        def up():
            res = query(port, "up")
            return res is not None and len(res) == NODES + 2 and all(
                r["value"][1] == "1" for r in res)
        st.wait_until(up, 40, "Prometheus to scrape every target")

        def per_tenant(q):
            def f():
                res = query(port, q)
                got = {r["metric"].get("tenant"): float(r["value"][1]) for r in res or []}
                return got if want <= set(got) and all(got[k] > 0 for k in want) else None
            return f
        shares = st.wait_until(per_tenant("tenant:shoal_fnstore_tenant_served_cost_seconds:rate1m"),
                               40, "the recorded per-tenant share of every tenant")
        st.log("Prometheus: recorded dominant share per tenant %r" % shares)
        ctl = st.wait_until(per_tenant("shoal_tenant_dominant_share"), 20,
                            "the controller's dominant share of every tenant")
        st.log("Prometheus: controller's dominant share per tenant %r" % ctl)
        res = query(port, "tenant:shoal_dominant_share_per_weight:rate1m")
        t.check({r["metric"].get("tenant") for r in res or []} >= want, "share per weight")
        r = st.http_request(port, "GET", "/api/v1/rules", timeout=10)
        names = [x.get("name") for g in r.json()["data"]["groups"] for x in g["rules"]]
        t.check("ShoalFairnessLow" in names and "cluster:shoal_min_max_ratio:rate1m" in names,
                "rules loaded: %r" % names)
        ops = {x["name"]: x.get("state") for g in r.json()["data"]["groups"]
               if g["name"] == "shoal-operations-alerts" for x in g["rules"]}
        t.check(len(ops) == 7 and set(ops.values()) == {"inactive"},
                "a healthy cluster raises no operations alert: %r" % ops)
    finally:
        st.stop_process(prom)
        log.close()
        if t.failures:
            with open(os.path.join(work, "prometheus.log"), errors="replace") as f:
                print("prometheus log:\n" + f.read()[-3000:])
        shutil.rmtree(work, ignore_errors=True)


def main(t):
    for b in (PROMTOOL, PROMETHEUS):
        t.check(os.access(b, os.X_OK), "%s missing (deploy/install-deps.sh installs it)" % b)
    c = t.cluster(nodes=NODES)
    tenants = [c.create_tenant("p%d" % i, weight=w) for i, w in enumerate((1, 2, 1))]
    t.section(check_shipped_files, c)
    bench = start_bench(t, c, tenants, 40)
    try:
        time.sleep(4)  # load and warm-up: every tenant has series everywhere
        t.section(check_lint, c, tenants)
        t.section(check_server, c, tenants)
    finally:
        bench.send_signal(signal.SIGINT)
        try:
            _, err = bench.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            bench.kill()
            _, err = bench.communicate()
    t.check(bench.returncode == 0, "shoal-bench exit %d: %r" % (bench.returncode, err[-500:]))


if __name__ == "__main__":
    st.run(main, timeout=280)
