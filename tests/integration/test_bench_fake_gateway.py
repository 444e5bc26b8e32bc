#!/usr/bin/python3
"""integ.bench.fake_gateway: shoal-bench's tenant mode against a tiny in-process
fake of the gateway's object API (PUT/GET /v1/objects/{key}, Bearer keys,
per-tenant namespaces). Checks --load, mixed reads/writes, 401s counted by
status, open loop, --json, --series, --tenants-file, --config and flag errors.
"""
import csv
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BENCH = sys.argv[1]
KEYS = {"ka": "alpha", "kb": "beta", "kc": "gamma"}
STORE = {}
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else delayed ACKs cap each connection at ~25 req/s

    def log_message(self, *args):
        pass

    def reply(self, code, body=b""):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def tenant(self):
        auth = self.headers.get("Authorization", "")
        return KEYS.get(auth[7:]) if auth.startswith("Bearer ") else None

    def do_PUT(self):
        n = int(self.headers.get("Content-Length", "-1"))
        body = self.rfile.read(n) if n > 0 else b""
        t = self.tenant()
        if t is None:
            return self.reply(401, b'{"error":"unauthorized"}')
        if not self.path.startswith("/v1/objects/"):
            return self.reply(404)
        with LOCK:
            STORE[(t, self.path)] = body
        self.reply(201)

    def do_GET(self):
        t = self.tenant()
        if t is None:
            return self.reply(401, b'{"error":"unauthorized"}')
        with LOCK:
            body = STORE.get((t, self.path))
        if body is None:
            return self.reply(404, b'{"error":"not_found"}')
        self.reply(200, body)


def free_port():
    ports = list(range(15000, 16000))
    random.shuffle(ports)
    for p in ports:
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
            return p
        except OSError:
            continue
        finally:
            s.close()
    raise SystemExit("no free port")


def bench(*args, expect=0):
    p = subprocess.run([BENCH, *args], capture_output=True, text=True, timeout=60)
    if p.returncode != expect:
        print(p.stdout, p.stderr, sep="\n")
        raise SystemExit("shoal-bench %s: exit %d, want %d" % (" ".join(args), p.returncode, expect))
    return p


def main():
    port = free_port()
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    srv.handle_error = lambda request, addr: None  # bench closing mid-response at the end
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    gw = "http://127.0.0.1:%d" % port
    tmp = tempfile.mkdtemp(prefix="shoal-bench-fake.")
    try:
        # Usage errors and help.
        assert "--tenant" in bench("--help").stdout
        assert bench("--version").stdout.startswith("shoal-bench ")
        assert "unknown flag" in bench("--bogus", expect=2).stderr
        assert "conc and rate" in bench("--tenant", "name=a,key=k,conc=1,rate=2", expect=2).stderr
        bench("--workload", "z", "--tenant", "name=a,key=k", expect=2)
        bench(expect=2)

        # Two closed-loop tenants, loaded first, YCSB B mix, sizes drawn from a range.
        series = os.path.join(tmp, "series.csv")
        out = json.loads(bench(
            "--gateway", gw, "--threads", "2", "--load", "--workload", "b",
            "--tenant", "name=alpha,key=ka,conc=3,keys=40,size=100-3000",
            "--tenant", "name=beta,key=kb,weight=2,conc=3,keys=30,zipf=0,read=0.5",
            "--warmup", "0.3", "--duration", "1.5", "--json", "--series", series).stdout)
        lt = {t["name"]: t for t in out["load"]["tenants"]}
        assert lt["alpha"]["writes"] == 40 and lt["alpha"]["errors"] == 0, lt
        assert lt["beta"]["writes"] == 30 and lt["beta"]["errors"] == 0, lt
        assert 40 * 100 <= lt["alpha"]["bytes"] <= 40 * 3000, lt
        with LOCK:
            assert sum(1 for k in STORE if k[0] == "alpha") == 40
            sizes = [len(v) for k, v in STORE.items() if k[0] == "alpha"]
        assert min(sizes) >= 100 and max(sizes) <= 3000 and len(set(sizes)) > 1, sizes
        rt = {t["name"]: t for t in out["tenants"]}
        for name in ("alpha", "beta"):
            t = rt[name]
            print("%s: ops/s=%.0f reads=%d writes=%d p99=%.0fus errors=%d" % (
                name, t["ops_per_s"], t["reads"], t["writes"], t["latency_us"]["p99"], t["errors"]))
            assert t["ops"] > 0 and t["errors"] == 0 and t["reads"] > 0 and t["writes"] > 0, t
        assert rt["alpha"]["read"] == 0.95 and rt["beta"]["read"] == 0.5
        assert rt["alpha"]["reads"] > 5 * rt["alpha"]["writes"], rt["alpha"]
        assert 0 < out["fairness"]["min_max_ratio"] <= 1 and 0 < out["fairness"]["jain"] <= 1
        rows = list(csv.DictReader(open(series)))
        assert {r["tenant"] for r in rows} == {"alpha", "beta"}, rows[:4]
        assert any(r["phase"] == "warmup" for r in rows) and any(r["phase"] == "run" for r in rows)

        # Wrong key: every request is a 401, reported by status; open loop at 100/s.
        cfg = os.path.join(tmp, "bench.conf")
        tfile = os.path.join(tmp, "tenants")
        with open(tfile, "w") as f:
            f.write("# comment\n\nname=gamma,key=kc,rate=100,conns=4,read=0,size=1KiB\n"
                    "name=intruder,key=nope,conc=2\n")
        with open(cfg, "w") as f:
            f.write("gateway = %s\ntenants-file = %s\nwarmup = 0\nduration = 1\njson = true\n"
                    % (gw, tfile))
        out = json.loads(bench("--config", cfg, "--threads", "1").stdout)
        rt = {t["name"]: t for t in out["tenants"]}
        g, x = rt["gamma"], rt["intruder"]
        assert g["loop"] == "open" and g["errors"] == 0 and 60 <= g["ops"] <= 140, g
        assert g["writes"] == g["ops"] and g["bytes"] == 1024 * g["ops"], g
        assert x["ops"] == 0 and x["errors"] > 0 and x["status"].get("401") == x["errors"], x
        assert out["fairness"]["min_max_ratio"] == 0

        # Nothing listening: connection errors, not a hang.
        dead = "http://127.0.0.1:%d" % free_port()
        out = json.loads(bench("--gateway", dead, "--tenant", "name=a,key=ka,conc=2",
                               "--warmup", "0", "--duration", "0.5", "--json").stdout)
        t = out["tenants"][0]
        assert t["ops"] == 0 and t["status"].get("conn", 0) > 0, t
        out = json.loads(bench("--gateway", dead, "--tenant", "name=a,key=ka,conc=2,keys=5",
                               "--load", "--warmup", "0", "--duration", "0.2", "--json").stdout)
        assert out["load"]["tenants"][0]["status"].get("conn") == 5, out["load"]
    finally:
        srv.shutdown()
        subprocess.run(["rm", "-rf", tmp])
    print("integ.bench.fake_gateway: ok")


if __name__ == "__main__":
    main()
