#!/usr/bin/python3
"""integ.controller.admin - the admin API, the internal API and shoalctl
against a real shoal-controller (Python stdlib only).

    python3 test_controller_admin.py BUILD/controller/shoal-controller BUILD/controller/shoalctl

Starts the controller on a free loopback port in 14000-14999 with a temp
data dir, drives it over HTTP and through shoalctl, restarts it, and checks
that state survived. SHOAL_TEST_KEEP=1 keeps the temp dir.
"""

import hashlib
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

CTL, CLI = sys.argv[1], sys.argv[2]
FAILS = []


def log(*a):
    print("[%s]" % time.strftime("%H:%M:%S"), *a, flush=True)


def check(cond, what):
    if not cond:
        FAILS.append(what)
        log("FAIL:", what)
    return cond


def free_port():
    for _ in range(200):
        port = random.randint(14000, 14999)
        s = socket.socket()
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free port in 14000-14999")


class Controller:
    def __init__(self, tmp, port, timeout_ms=2500, args=()):
        self.tmp, self.port, self.timeout_ms = tmp, port, timeout_ms
        self.args = list(args)
        self.data = os.path.join(tmp, "data")
        self.token_file = os.path.join(self.data, "admin.token")
        self.url = "http://127.0.0.1:%d" % port
        self.proc = None
        self.logf = None

    def start(self):
        self.logf = open(os.path.join(self.tmp, "controller.log"), "ab")
        self.proc = subprocess.Popen(
            [CTL, "--listen", "127.0.0.1:%d" % self.port, "--data-dir", self.data,
             "--node-timeout-ms", str(self.timeout_ms), "--partitions", "16"] + self.args,
            stdout=self.logf, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("controller exited with %d" % self.proc.returncode)
            try:
                st, _, _ = self.req("GET", "/healthz", token=None)
                if st == 200:
                    break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError("controller did not come up")
        with open(self.token_file) as f:
            self.token = f.read().strip()

    def stop(self):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        self.proc = None
        self.logf.close()
        return rc

    def req(self, method, path, body=None, token="default", headers=None):
        """Returns (status, headers dict, parsed JSON or text)."""
        h = dict(headers or {})
        if token == "default":
            token = self.token
        if token is not None:
            h["Authorization"] = "Bearer " + token
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            hdrs = {k.lower(): v for k, v in r.getheaders()}
        finally:
            c.close()
        ctype = hdrs.get("content-type", "")
        if data and ctype.startswith("application/json"):
            return r.status, hdrs, json.loads(data)
        return r.status, hdrs, data.decode()

    def cli(self, *args, token_file="default", url=None):
        cmd = [CLI, "--controller", url or self.url]
        if token_file == "default":
            token_file = self.token_file
        if token_file is not None:
            cmd += ["--token-file", token_file]
        env = {k: v for k, v in os.environ.items()
               if k not in ("SHOAL_CONTROLLER", "SHOAL_ADMIN_TOKEN_FILE")}
        p = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=30, env=env)
        return p.returncode, p.stdout, p.stderr


def run_main(c, tmp, body):
    """Runs body() against controller c, then stops it; on failure prints the tail
    of its log. Removes tmp (unless SHOAL_TEST_KEEP=1) and exits 1 if a check
    failed or body raised."""
    try:
        body()
    except Exception as e:  # noqa: BLE001 - report and fail
        FAILS.append("exception: %r" % e)
        log("EXCEPTION", repr(e))
        import traceback
        traceback.print_exc()
    finally:
        c.stop()
        if FAILS:
            try:
                with open(os.path.join(tmp, "controller.log")) as f:
                    print("---- controller.log (tail) ----")
                    print("".join(f.readlines()[-40:]))
            except OSError:
                pass
        if os.environ.get("SHOAL_TEST_KEEP") == "1":
            log("kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        log("%d check(s) failed" % len(FAILS))
        for f in FAILS:
            log("  ", f)
        sys.exit(1)
    log("ok")


def expect_error(c, status, code, method, path, body=None, what="", **kw):
    st, h, j = c.req(method, path, body, **kw)
    ok = check(st == status, "%s %s %s: status %d, want %d (%r)" % (what, method, path, st,
                                                                     status, j))
    if ok:
        check(isinstance(j, dict) and j.get("error") == code and isinstance(j.get("message"), str),
              "%s: JSON error body %r, want error=%s" % (what, j, code))
    check("x-request-id" in h, "%s: X-Request-Id missing" % what)
    return j


def heartbeat(c, nid, tenants=None, incarnation=1, port_base=9500, sched=None):
    body = {"node": {"id": nid, "addr": "127.0.0.1:%d" % (port_base + nid),
                     "metrics_addr": "127.0.0.1:%d" % (9600 + nid),
                     "capacity_bytes": 1 << 30, "used_bytes": 1000 * nid, "instances": 2,
                     "incarnation": incarnation},
            "tenants": tenants or {}}
    if sched is not None:
        body["node"]["sched"] = sched
    return c.req("POST", "/v1/internal/heartbeat", body)


def test_auth_and_basics(c):
    log("auth, health, metrics")
    st, _, body = c.req("GET", "/healthz", token=None)
    check(st == 200 and body.strip() == "ok", "healthz: %d %r" % (st, body))
    st, h, body = c.req("GET", "/metrics", token=None)
    check(st == 200 and "shoal_controller_tenants" in body and "shoal_controller_epoch" in body,
          "metrics without auth")
    check(h.get("content-type", "").startswith("text/plain"), "metrics content type")
    mode = os.stat(c.token_file).st_mode & 0o777
    check(mode == 0o600, "token file mode %o" % mode)
    check(re.fullmatch(r"\S{16,}", c.token) is not None, "token looks random: %r" % c.token)
    for path, method in [("/v1/tenants", "GET"), ("/v1/tenants", "POST"), ("/v1/nodes", "GET"),
                         ("/v1/placement", "GET"), ("/v1/fairness", "GET"),
                         ("/v1/internal/state", "GET"), ("/v1/internal/heartbeat", "POST"),
                         ("/v1/tenants/x", "DELETE")]:
        expect_error(c, 401, "unauthorized", method, path, {"name": "x"}, "no token", token=None)
        expect_error(c, 401, "unauthorized", method, path, {"name": "x"}, "wrong token",
                     token=c.token + "x")
    expect_error(c, 401, "unauthorized", "GET", "/v1/tenants", what="basic auth", token=None,
                 headers={"Authorization": "Basic " + c.token})
    expect_error(c, 404, "not_found", "GET", "/v1/nope", what="unknown path")
    expect_error(c, 405, "method_not_allowed", "PUT", "/v1/tenants", {}, "PUT tenants")
    expect_error(c, 405, "method_not_allowed", "POST", "/v1/nodes", {}, "POST nodes")
    expect_error(c, 405, "method_not_allowed", "GET", "/v1/internal/heartbeat", what="GET hb")


def test_bad_input(c):
    log("bad input")
    names = ["", "Upper", "UPPER", "a" * 64, "-lead", "a_b", "a.b", "a b", "é", "a/b"]
    for n in names:
        expect_error(c, 400, "bad_request", "POST", "/v1/tenants", {"name": n, "weight": 1},
                     "name %r" % n)
    for n in [123, None, True, ["a"], {"a": 1}]:
        expect_error(c, 400, "bad_request", "POST", "/v1/tenants", {"name": n}, "name %r" % n)
    expect_error(c, 400, "bad_request", "POST", "/v1/tenants", {"weight": 1}, "missing name")
    raw_weights = ["0", "-1", "0.0", "-0.0", "NaN", "nan", "Infinity", "-Infinity", "1e309",
                   "-1e309", "10001", "10000.5", "1e300", '"abc"', '"1"', "null", "true", "[1]",
                   "{}"]
    for w in raw_weights:
        expect_error(c, 400, "bad_request", "POST", "/v1/tenants",
                     '{"name":"wtest","weight":%s}' % w, "weight %s" % w)
    for body in [None, "", "not json", "{", '{"name":"x",}', "[]", '"str"', "42",
                 '{"name":"dup","name":"dup"}', '{"name":"a\\u0000b"}']:
        expect_error(c, 400, "bad_request", "POST", "/v1/tenants", body, "body %r" % body)
    # Nothing of the above created a tenant.
    st, _, j = c.req("GET", "/v1/tenants")
    check(st == 200 and j == {"tenants": []}, "no tenant after bad input: %r" % j)
    # PATCH needs a valid weight too.
    st, _, _ = c.req("POST", "/v1/tenants", {"name": "patchme"})
    check(st == 201, "create patchme")
    for w in ["0", "-1", "NaN", "1e309", "10001", '"abc"', "null"]:
        expect_error(c, 400, "bad_request", "PATCH", "/v1/tenants/patchme",
                     '{"weight":%s}' % w, "patch weight %s" % w)
    for body in [None, "xyz", "{}", "[]"]:
        expect_error(c, 400, "bad_request", "PATCH", "/v1/tenants/patchme", body,
                     "patch body %r" % body)
    expect_error(c, 400, "bad_request", "GET", "/v1/tenants/Bad", what="bad name in path")
    expect_error(c, 400, "bad_request", "GET", "/v1/tenants/", what="empty name in path")
    for m in ["GET", "DELETE"]:
        expect_error(c, 404, "not_found", m, "/v1/tenants/ghost", what="ghost")
    expect_error(c, 404, "not_found", "PATCH", "/v1/tenants/ghost", {"weight": 1}, "ghost")
    expect_error(c, 404, "not_found", "POST", "/v1/tenants/ghost/keys", what="ghost keys")
    expect_error(c, 405, "method_not_allowed", "GET", "/v1/tenants/patchme/keys",
                 what="GET keys")
    expect_error(c, 404, "not_found", "GET", "/v1/tenants/patchme/other", what="subpath")
    st, _, _ = c.req("DELETE", "/v1/tenants/patchme")
    check(st == 204, "delete patchme: %d" % st)
    # Heartbeats are checked too.
    for body in [None, "x", {}, {"node": {}}, {"node": {"id": -1, "addr": "127.0.0.1:1"}},
                 {"node": {"id": "1", "addr": "127.0.0.1:1"}},
                 {"node": {"id": 1, "addr": "nocolon"}},
                 {"node": {"id": 1, "addr": "127.0.0.1:1", "capacity_bytes": -5}},
                 {"node": {"id": 1, "addr": "127.0.0.1:1"}, "tenants": {"x": {}}},
                 {"node": {"id": 1, "addr": "127.0.0.1:1"}, "tenants": {"1": {"requests": -1}}},
                 {"node": {"id": 1, "addr": "127.0.0.1:1", "sched": "no such!"}},
                 {"node": {"id": 1, "addr": "127.0.0.1:1", "sched": 3}},
                 {"node": {"id": 1, "addr": "127.0.0.1:1", "cap_ops": -1}},
                 {"node": {"id": 1, "addr": "127.0.0.1:1"},
                  "tenants": {"1": {"served_cost": -0.5}}},
                 {"node": {"id": 1, "addr": "127.0.0.1:1"},
                  "tenants": {"1": {"arrived_cost": "x"}}},
                 {"node": {"id": 1, "addr": "127.0.0.1:1"}, "tenants": {"1": {"weight": 20000}}},
                 {"node": {"id": 1, "addr": "127.0.0.1:1"}, "tenants": []}]:
        expect_error(c, 400, "bad_request", "POST", "/v1/internal/heartbeat", body,
                     "heartbeat %r" % (body,))
    st, _, j = c.req("GET", "/v1/nodes")
    check(st == 200 and j == {"nodes": [], "gateways": []}, "no node after bad heartbeats: %r" % j)
    # A state poll that names its gateway is checked too, and registers nothing.
    for q in ["gateway=", "gateway=a%20b&url=http://x", "gateway=%s&url=http://x" % ("g" * 65),
              "gateway=g1", "gateway=g1&url=", "gateway=g1&url=ftp://x",
              "gateway=g1&url=http://", "gateway=g1&url=http://a%22b",
              "gateway=g1&url=http://%s" % ("u" * 121), "gateway=g1&url=http://x&s3_url=x",
              "gateway=g1&url=http://x&s3_url=http://a%20b"]:
        expect_error(c, 400, "bad_request", "GET", "/v1/internal/state?" + q, what="poll %s" % q)
    st, _, j = c.req("GET", "/v1/internal/state?url=http://x")
    check(st == 200 and j["gateways"] == [], "no gateway after bad polls: %r" % j.get("gateways"))


def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


def internal_tenant(c, name):
    st, _, j = c.req("GET", "/v1/internal/state")
    check(st == 200, "internal state: %d" % st)
    for t in j["tenants"]:
        if t["name"] == name:
            return t
    return None


def test_tenants(c, keys):
    log("tenant life cycle over HTTP and shoalctl")
    rc, out, err = c.cli("tenant", "create", "alpha", "--weight", "2")
    check(rc == 0, "shoalctl create alpha: rc %d %s" % (rc, err))
    m = re.search(r"\b(sk_[0-9a-f]{48})\b", out)
    check(m is not None, "create prints the key: %r" % out)
    keys["alpha"] = m.group(1) if m else ""
    rc, out, err = c.cli("--json", "tenant", "create", "beta")
    check(rc == 0, "shoalctl --json create beta: %d %s" % (rc, err))
    j = json.loads(out)
    check(j["name"] == "beta" and j["weight"] == 1 and re.fullmatch(r"sk_[0-9a-f]{48}", j["key"]),
          "create beta JSON %r" % j)
    keys["beta"] = j["key"]
    st, _, j = c.req("POST", "/v1/tenants", {"name": "gamma", "weight": 0.5})
    check(st == 201 and set(j) >= {"name", "id", "weight", "key"} and j["weight"] == 0.5,
          "POST gamma: %d %r" % (st, j))
    keys["gamma"] = j.get("key", "")
    ids = [t["id"] for t in c.req("GET", "/v1/tenants")[2]["tenants"]]
    check(ids == sorted(ids) and len(set(ids)) == 3, "ids %r" % ids)
    expect_error(c, 409, "conflict", "POST", "/v1/tenants", {"name": "alpha"}, "duplicate")
    rc, _, err = c.cli("tenant", "create", "alpha")
    check(rc == 1 and "exists" in err, "shoalctl duplicate: rc %d %r" % (rc, err))

    rc, out, _ = c.cli("tenant", "list")
    lines = out.strip().splitlines()
    check(rc == 0 and lines[0].split() == ["NAME", "ID", "WEIGHT", "GATEWAY"] and len(lines) == 4,
          "tenant list table %r" % out)
    check(len({ln.index(ln.split()[1]) for ln in lines}) == 1, "list columns aligned %r" % out)
    rc, out, _ = c.cli("--json", "tenant", "list")
    check(rc == 0 and [t["name"] for t in json.loads(out)["tenants"]] == ["alpha", "beta", "gamma"],
          "tenant list --json %r" % out)
    rc, out, _ = c.cli("tenant", "show", "alpha")
    check(rc == 0 and "alpha" in out and "served" in out, "tenant show %r" % out)
    st, _, j = c.req("GET", "/v1/tenants/alpha")
    check(st == 200 and j["weight"] == 2 and "served_requests_per_second" in j and
          "served_bytes_per_second" in j, "GET alpha %r" % j)

    rc, out, err = c.cli("tenant", "set-weight", "beta", "3")
    check(rc == 0, "set-weight: %d %s" % (rc, err))
    st, _, j = c.req("GET", "/v1/tenants/beta")
    check(j["weight"] == 3, "weight after set-weight %r" % j)
    st, _, j = c.req("PATCH", "/v1/tenants/beta", {"weight": 10000})
    check(st == 200 and j["weight"] == 10000, "PATCH max weight %d %r" % (st, j))
    st, _, j = c.req("PATCH", "/v1/tenants/beta", {"weight": 4})
    check(st == 200 and j["weight"] == 4, "PATCH %d %r" % (st, j))

    t = internal_tenant(c, "alpha")
    check(t and t["key_hashes"] == [sha(keys["alpha"])], "alpha key hash in state")
    rc, out, err = c.cli("tenant", "rotate-key", "alpha")
    m = re.search(r"\b(sk_[0-9a-f]{48})\b", out)
    check(rc == 0 and m is not None, "rotate-key: %d %r %s" % (rc, out, err))
    if m:
        check(m.group(1) != keys["alpha"], "rotated key differs")
        keys["alpha"] = m.group(1)
    t = internal_tenant(c, "alpha")
    check(t and t["key_hashes"] == [sha(keys["alpha"])], "only the new key hash after rotation")
    st, _, j = c.req("POST", "/v1/tenants/gamma/keys")
    check(st == 201 and j["key"] != keys["gamma"], "POST keys %d %r" % (st, j))
    keys["gamma"] = j["key"]

    st, _, j = c.req("POST", "/v1/tenants", {"name": "doomed", "weight": 1})
    doomed_id = j["id"]
    e0 = c.req("GET", "/v1/placement")[2]["epoch"]
    rc, out, err = c.cli("tenant", "delete", "doomed")
    check(rc == 0, "delete: %d %s" % (rc, err))
    check(c.req("GET", "/v1/placement")[2]["epoch"] > e0, "delete bumps epoch")
    expect_error(c, 404, "not_found", "GET", "/v1/tenants/doomed", what="deleted")
    st, _, j = c.req("POST", "/v1/tenants", {"name": "doomed"})
    check(st == 201 and j["id"] > doomed_id, "ids never reused: %r" % j)
    c.req("DELETE", "/v1/tenants/doomed")


def test_cli_exit_codes(c):
    log("shoalctl exit codes")
    rc, out, _ = c.cli("--help")
    check(rc == 0 and "tenant create" in out and "fairness" in out, "--help")
    rc, out, _ = c.cli("--version")
    check(rc == 0 and out.startswith("shoalctl "), "--version")
    for args in [(), ("bogus",), ("tenant",), ("tenant", "create"), ("tenant", "frob", "x"),
                 ("tenant", "set-weight", "alpha"), ("tenant", "set-weight", "alpha", "abc"),
                 ("tenant", "set-weight", "alpha", "nan"), ("tenant", "show", "a", "b"),
                 ("--nope", "tenant", "list"), ("node",), ("placement", "frob"),
                 ("tenant", "list", "--weight", "3"), ("tenant", "create", "x", "--weight", "z")]:
        rc, _, err = c.cli(*args)
        check(rc == 2 and err.strip() != "", "usage error %r: rc %d" % (args, rc))
    rc, _, _ = c.cli("tenant", "list", token_file=os.path.join(c.tmp, "missing"))
    check(rc == 2, "missing token file: rc %d" % rc)
    for args in [("tenant", "set-weight", "alpha", "-1"), ("tenant", "set-weight", "alpha", "0"),
                 ("tenant", "set-weight", "alpha", "10001"), ("tenant", "show", "ghost"),
                 ("tenant", "delete", "ghost"), ("tenant", "create", "Bad"),
                 ("tenant", "create", "bad", "--weight", "-3")]:
        rc, _, err = c.cli(*args)
        check(rc == 1 and "refused" in err, "refused %r: rc %d %r" % (args, rc, err))
    rc, _, err = c.cli("tenant", "list", token_file=None)
    check(rc == 1 and "401" in err, "no token: rc %d %r" % (rc, err))
    closed = free_port()
    rc, _, err = c.cli("tenant", "list", url="http://127.0.0.1:%d" % closed)
    check(rc == 3 and "unreachable" in err, "closed port: rc %d %r" % (rc, err))
    env = dict(os.environ, SHOAL_CONTROLLER=c.url, SHOAL_ADMIN_TOKEN_FILE=c.token_file)
    p = subprocess.run([CLI, "tenant", "list"], capture_output=True, text=True, env=env,
                       timeout=30)
    check(p.returncode == 0 and "alpha" in p.stdout, "env vars: %d %r" % (p.returncode, p.stderr))


def test_nodes_and_rates(c, keys):
    log("heartbeats, liveness, placement, rates, fairness")
    e0 = c.req("GET", "/v1/placement")[2]["epoch"]
    for nid in range(7):
        st, _, j = heartbeat(c, nid)
        check(st == 200 and j["epoch"] > e0 and isinstance(j["weights"], dict),
              "heartbeat %d: %d %r" % (nid, st, j))
    ids = {t["name"]: t["id"] for t in c.req("GET", "/v1/tenants")[2]["tenants"]}
    st, _, j = heartbeat(c, 0)
    check(j["weights"].get(str(ids["beta"])) == 4, "heartbeat answer weights %r" % j)
    st, _, j = c.req("GET", "/v1/nodes")
    check(st == 200 and [n["id"] for n in j["nodes"]] == list(range(7)), "nodes %r" % j)
    n0 = j["nodes"][0]
    check(n0["state"] == "up" and n0["addr"] == "127.0.0.1:9500" and
          n0["metrics_addr"] == "127.0.0.1:9600" and n0["capacity_bytes"] == 1 << 30 and
          n0["incarnation"] == 1 and "load" in n0 and "used_bytes" in n0, "node fields %r" % n0)
    rc, out, _ = c.cli("node", "list")
    check(rc == 0 and out.count(" up ") == 7, "node list %r" % out)

    st, _, p = c.req("GET", "/v1/placement")
    check(p["partitions"] == 16 and len(p["tenants"]) == 3, "placement shape")
    for t in p["tenants"]:
        check(len(t["placement"]) == 16, "16 rows")
        for row in t["placement"]:
            check(len(row) == t["ec_k"] + t["ec_m"] == 6 and len(set(row)) == 6
                  and set(row) <= set(range(7)), "row %r" % row)
    st, _, s = c.req("GET", "/v1/internal/state")
    check(s["epoch"] == p["epoch"] and len(s["nodes"]) == 7 and
          all(n["state"] == "up" for n in s["nodes"]), "internal state nodes")
    check([t["placement"] for t in s["tenants"]] == [t["placement"] for t in p["tenants"]],
          "state placement == admin placement")
    rc, out, _ = c.cli("placement", "show")
    check(rc == 0 and "epoch" in out and "alpha" in out, "placement show %r" % out[:200])

    # Node 0 (drfq, no cap) serves alpha (weight 2) 200 req/s and beta
    # (weight 4) 400 req/s; 1.5 times that arrives. A request costs 1 ms of
    # the node (dominant cost), so alpha is served 0.2 of a node and asks for
    # 0.3, beta 0.4 and 0.6. Gamma is idle. Nodes 1..6 heartbeat with nothing.
    a, b = str(ids["alpha"]), str(ids["beta"])
    for i in range(6):
        heartbeat(c, 0, {a: {"requests": 100 * i, "bytes": 10000 * i, "queued": 0,
                             "arrived_requests": 150 * i, "arrived_bytes": 15000 * i,
                             "arrived_cost": 0.15 * i, "served_cost": 0.1 * i,
                             "queue_wait_seconds": 0.001 * i, "queue_waits": 100 * i,
                             "weight": 2},
                         b: {"requests": 200 * i, "bytes": 1000 * i, "queued": 1,
                             "arrived_requests": 300 * i, "arrived_bytes": 1500 * i,
                             "arrived_cost": 0.3 * i, "served_cost": 0.2 * i,
                             "queue_wait_seconds": 0.002 * i, "queue_waits": 200 * i,
                             "weight": 4}},
                  sched="drfq")
        for nid in range(1, 7):
            heartbeat(c, nid)
        time.sleep(0.5)
    st, _, j = c.req("GET", "/v1/tenants/alpha")
    # 100 requests per ~0.5 s loop (slower on a loaded machine); 100 bytes each.
    rr, br = j["served_requests_per_second"], j["served_bytes_per_second"]
    check(80 <= rr <= 250 and abs(br / max(rr, 1e-9) - 100) < 1, "alpha rates %r" % j)
    check(abs(j["demand_requests_per_second"] / rr - 1.5) < 1e-6, "alpha demand %r" % j)
    check(abs(j["queue_wait_seconds"] - 1e-5) < 1e-9, "alpha queue wait %r" % j)
    st, _, f = c.req("GET", "/v1/fairness")
    rows = {t["name"]: t for t in f["tenants"]}
    check(set(rows) == {"alpha", "beta", "gamma"}, "fairness tenants")
    for t in rows.values():
        check(set(t) >= {"name", "id", "weight", "demand", "allocation", "dominant_share",
                         "local_weights", "served_requests_per_second",
                         "served_bytes_per_second"},
              "fairness fields %r" % t)
    # Capacity: node 0 has no cap, so what it served (0.6 of a node); the
    # idle nodes add nothing. Alpha and beta both ask for 0.15 per weight,
    # more than the 0.6 / 6 = 0.1 there is: both are held to 0.1 per weight
    # (0.2 and 0.4), both count, and both got exactly that: MMR 1.
    al, be = rows["alpha"], rows["beta"]
    check(abs(f["capacity"] - al["dominant_share"] - be["dominant_share"]) < 1e-6 and
          abs(al["allocation"] + be["allocation"] - f["capacity"]) < 1e-6, "capacity %r" % f)
    check(abs(be["allocation"] - 2 * al["allocation"]) < 1e-9, "allocations %r %r" % (al, be))
    check(abs(al["demand"] / al["dominant_share"] - 1.5) < 1e-6, "alpha demand %r" % al)
    check(al["counted"] and be["counted"] and not rows["gamma"]["counted"], "counted")
    check(rows["gamma"]["demand"] == 0 and rows["gamma"]["allocation"] == 0, "gamma")
    check(al["local_weights"] == {"0": 2} and be["local_weights"] == {"0": 4} and
          rows["gamma"]["local_weights"] == {}, "local weights %r %r" % (al, be))
    # Weight allocation: both tenants ask only at node 0 and are served
    # alike per weight, so pisces has nothing to move: every node is
    # allocated the global weights.
    check(f["wa"] == "pisces" and f["wa_step"]["steps"] >= 1 and
          f["wa_step"]["fallbacks"] == 0, "wa %r %r" % (f["wa"], f["wa_step"]))
    check(be["wa_weights"] == {str(i): 4 for i in range(7)} and
          rows["gamma"]["wa_weights"] == {str(i): 0.5 for i in range(7)},
          "wa weights %r" % be["wa_weights"])
    st, _, j = c.req("GET", "/v1/tenants/beta")
    check(j["wa_weights"] == be["wa_weights"] and j["local_weights"] == {"0": 4},
          "tenant show weights %r" % j)
    check(f["min_max_ratio"] is not None and abs(f["min_max_ratio"] - 1.0) < 1e-6,
          "MMR %r" % f["min_max_ratio"])
    check(f["jain"] is not None and abs(f["jain"] - 1.0) < 1e-6, "Jain %r" % f)
    check(f["active_tenants"] == 2, "counted tenants %r" % f)
    rc, out, _ = c.cli("fairness")
    check(rc == 0 and "min-max ratio" in out and "SHARE" in out and "alpha" in out and
          "LOCAL WEIGHT" in out and re.search(r"\n0\s+beta\s+4\s+4\n", out) is not None,
          "fairness table %r" % out)
    st, _, m = c.req("GET", "/metrics", token=None)
    check('shoal_tenant_served_requests_per_second{tenant="%s"}' % a in m and
          'shoal_tenant_fair_share{tenant="%s"}' % b in m and
          'shoal_tenant_local_weight{tenant="%s",node="0"} 4' % b in m and
          'shoal_tenant_wa_weight{tenant="%s",node="6"} 4' % b in m and
          'shoal_controller_wa_info{wa="pisces"} 1' in m and
          'shoal_node_info{node="0",sched="drfq"} 1' in m and
          'shoal_controller_nodes{state="up"} 7' in m, "per-tenant metrics")
    mmr = re.search(r"^shoal_controller_min_max_ratio (\S+)$", m, re.M)
    check(mmr is not None and abs(float(mmr.group(1)) - 1.0) < 1e-6, "MMR metric %r" % mmr)
    st, _, j = c.req("GET", "/v1/nodes")
    check(j["nodes"][0]["sched"] == "drfq" and j["nodes"][1]["sched"] is None,
          "node sched %r" % j["nodes"][:2])
    rc, out, _ = c.cli("node", "list")
    check(rc == 0 and "SCHED" in out and re.search(r"\bup\s+drfq\b", out) is not None,
          "node list sched %r" % out)
    st, _, j = c.req("GET", "/v1/nodes")
    check(j["nodes"][0]["load"] > 400, "node 0 load %r" % j["nodes"][0])

    # Liveness: node 6 falls silent and goes down; the others stay up.
    # Generous timings: under ASan on a loaded machine a request can take long.
    e1 = c.req("GET", "/v1/internal/state")[2]["epoch"]
    t0 = time.monotonic()
    t_end = t0 + c.timeout_ms / 1000.0 + 6
    while time.monotonic() < t_end:
        for nid in range(6):
            heartbeat(c, nid)
        st, _, s = c.req("GET", "/v1/internal/state")
        if {n["id"]: n["state"] for n in s["nodes"]}[6] == "down":
            break
        time.sleep(0.2)
    check(time.monotonic() - t0 >= c.timeout_ms / 1000.0 - 1.5, "node 6 not down too early")
    for nid in range(6):
        heartbeat(c, nid)
    st, _, s = c.req("GET", "/v1/internal/state")
    states = {n["id"]: n["state"] for n in s["nodes"]}
    check(states[6] == "down" and all(states[i] == "up" for i in range(6)),
          "node 6 down: %r" % states)
    check(s["epoch"] > e1, "down bumps epoch")
    check(all(len(r) == 6 for t in s["tenants"] for r in t["placement"]) and
          [t["placement"] for t in s["tenants"]] == [t["placement"] for t in p["tenants"]],
          "a down node keeps its partitions")
    st, _, j = c.req("GET", "/v1/nodes")
    check(j["nodes"][6]["state"] == "down", "nodes shows down")
    st, _, j = heartbeat(c, 6)
    check(c.req("GET", "/v1/nodes")[2]["nodes"][6]["state"] == "up", "back up")
    return p


GW = "127.0.0.1:9300"
GW_POLL = ("/v1/internal/state?gateway=127.0.0.1%3A9300&url=http%3A%2F%2F127.0.0.1%3A9300"
           "&s3_url=http%3A%2F%2F127.0.0.1%3A9310")


def test_gateways(c):
    log("gateways: registration, tenant ownership")
    t0 = internal_tenant(c, "alpha")
    check(t0 and t0["gateway"] == "", "unassigned before any gateway polled: %r" % t0)
    e0 = c.req("GET", "/v1/internal/state")[2]["epoch"]
    st, _, s = c.req("GET", GW_POLL)
    check(st == 200 and s["epoch"] > e0, "a gateway's poll bumps the epoch: %d" % st)
    check(s["gateways"] == [{"id": GW, "url": "http://127.0.0.1:9300",
                             "s3_url": "http://127.0.0.1:9310", "up": True}],
          "gateways %r" % s["gateways"])
    check(s["tenants"] and all(t["gateway"] == GW for t in s["tenants"]),
          "the poll's own answer shows the owners: %r" % [t["gateway"] for t in s["tenants"]])
    st, _, s2 = c.req("GET", GW_POLL)
    check(s2["epoch"] == s["epoch"], "a repeated poll changes nothing")
    # A second gateway without S3; a tenant created now goes to it (it owns
    # fewer), and the first keeps its own.
    st, _, s = c.req("GET", "/v1/internal/state?gateway=gw-b&url=https://gw-b.example:9443")
    check(st == 200 and [g["id"] for g in s["gateways"]] == [GW, "gw-b"] and
          s["gateways"][1]["s3_url"] == "", "second gateway %r" % s["gateways"])
    st, _, j = c.req("POST", "/v1/tenants", {"name": "owned"})
    check(st == 201 and j["gateway"] == "gw-b", "owner at creation %r" % j)
    st, _, j = c.req("GET", "/v1/tenants/owned")
    check(j["gateway"] == "gw-b", "tenant show gateway %r" % j)
    check([t["gateway"] for t in c.req("GET", "/v1/tenants")[2]["tenants"]] ==
          [GW, GW, GW, "gw-b"], "tenant list gateways")
    rc, out, _ = c.cli("tenant", "show", "owned")
    check(rc == 0 and re.search(r"^gateway\s+gw-b$", out, re.M), "shoalctl show %r" % out)
    st, _, j = c.req("GET", "/v1/nodes")
    gws = {g["id"]: g for g in j["gateways"]}
    check(gws[GW]["tenants"] == 3 and gws["gw-b"]["tenants"] == 1 and gws[GW]["up"] and
          0 <= gws[GW]["seen_ms_ago"] < 5000, "nodes' gateways %r" % j["gateways"])
    rc, out, _ = c.cli("node", "list")
    check(rc == 0 and re.search(r"^gw-b\s+https://gw-b.example:9443\s+-\s+up\s+1\s", out, re.M),
          "node list gateways %r" % out)
    st, _, m = c.req("GET", "/metrics", token=None)
    check('shoal_controller_gateways{state="up"} 2' in m and
          'shoal_controller_gateways{state="down"} 0' in m, "gateway metrics")
    c.req("DELETE", "/v1/tenants/owned")


def main():
    tmp = tempfile.mkdtemp(prefix="shoal-ctl-")
    c = Controller(tmp, free_port())
    keys = {}

    def body():
        p = subprocess.run([CTL, "--bogus"], capture_output=True, timeout=10)
        check(p.returncode == 2, "unknown flag exits 2")
        p = subprocess.run([CTL], capture_output=True, timeout=10)
        check(p.returncode == 2, "missing --data-dir exits 2")
        p = subprocess.run([CTL, "--wa", "nope", "--data-dir", tmp], capture_output=True,
                           text=True, timeout=10)
        check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and
              "--wa" in p.stderr, "unknown --wa exits 2 with one line: %r" % p.stderr)
        p = subprocess.run([CTL, "--help"], capture_output=True, text=True, timeout=10)
        check(p.returncode == 0 and "--admin-token-file" in p.stdout, "controller --help")

        c.start()
        test_auth_and_basics(c)
        test_bad_input(c)
        test_tenants(c, keys)
        test_cli_exit_codes(c)
        placement = test_nodes_and_rates(c, keys)
        test_gateways(c)
        before = c.req("GET", "/v1/internal/state")[2]
        tenants_before = c.req("GET", "/v1/tenants")[2]

        log("restart")
        rc = c.stop()
        check(rc == 0, "clean exit on SIGTERM: %r" % rc)
        c.start()
        check(c.req("GET", "/v1/tenants")[2] == tenants_before, "tenants persisted")
        after = c.req("GET", "/v1/internal/state")[2]
        check(after["epoch"] > before["epoch"], "epoch grows across restart")
        check([(t["name"], t["id"], t["key_hashes"], t["weight"]) for t in after["tenants"]] ==
              [(t["name"], t["id"], t["key_hashes"], t["weight"]) for t in before["tenants"]],
              "tenants and key hashes persisted")
        for name, key in keys.items():
            t = next(t for t in after["tenants"] if t["name"] == name)
            check(t["key_hashes"] == [sha(key)], "key of %s still valid" % name)
        check([t["placement"] for t in after["tenants"]] ==
              [t["placement"] for t in placement["tenants"]], "placement stable across restart")
        check(after["gateways"] == [] and all(t["gateway"] == GW for t in after["tenants"]),
              "owners persisted, the gateway registry not: %r" % after["gateways"])
        check([n["id"] for n in after["nodes"]] == list(range(7)) and
              all(n["state"] == "up" for n in after["nodes"]),
              "nodes remembered, presumed up after a controller restart")
        st, _, j = heartbeat(c, 3)
        check(st == 200, "heartbeat after restart")
        # The silent ones go down once the node timeout has passed; node 3 stays up.
        t0 = time.monotonic()
        while time.monotonic() - t0 < c.timeout_ms / 1000.0 + 5:
            heartbeat(c, 3)
            states = {n["id"]: n["state"] for n in c.req("GET", "/v1/internal/state")[2]["nodes"]}
            if states[0] == "down":
                break
            time.sleep(0.2)
        check(time.monotonic() - t0 >= c.timeout_ms / 1000.0 - 1.5, "silent nodes not down too early")
        check(states[3] == "up" and all(states[i] == "down" for i in range(7) if i != 3),
              "silent nodes down after the timeout, node 3 up: %r" % states)
        check(c.req("GET", "/v1/internal/state")[2]["epoch"] > after["epoch"],
              "nodes going down bump the epoch")
        rc = c.stop()
        check(rc == 0, "second clean exit: %r" % rc)

    run_main(c, tmp, body)


if __name__ == "__main__":
    main()
