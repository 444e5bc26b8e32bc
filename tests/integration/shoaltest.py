"""shoaltest - shared helpers of the Shoal integration tests (Python stdlib only).

Every test script does

    import shoaltest as st
    def main(t):            # t: st.Test
        c = t.cluster()     # a fresh cluster via deploy/local/shoal-cluster in a tempdir
        ten = c.create_tenant("alpha")
        r = c.gw(ten).put("k", b"bytes")
        t.eq(r.status, 201, "PUT status")
    st.run(main)

and is started by CTest as `python3 script.py --build BUILD --src SRC`.

Clusters run on loopback on a randomly chosen port offset whose ports are all free.
Every cluster is stopped when the test ends, however it ends (exception, assertion,
SIGTERM, internal deadline); on failure the tail of every log is printed.

Environment:
  SHOAL_TEST_KEEP=1      keep the cluster directory (and print where it is); by default
                         it is removed, also on failure (the log tails are printed)
  SHOAL_TEST_VERBOSE=1   log every HTTP request
  SHOAL_TEST_GATEWAY_ARGS="..."  more flags for every gateway (after the test's own),
                         e.g. "--scrub-interval-ms 300" to run the fault tests under
                         a busy orphan scrub
"""

import argparse
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
import threading
import time
import traceback
import urllib.parse

VERBOSE = os.environ.get("SHOAL_TEST_VERBOSE") == "1"
GATEWAY_ARGS = os.environ.get("SHOAL_TEST_GATEWAY_ARGS", "")


class TestFailure(Exception):
    pass


class Deadline(Exception):
    pass


def log(*a):
    print("[%s]" % time.strftime("%H:%M:%S"), *a, flush=True)


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def qkey(key):
    """Percent-encodes an object key for the URL path (keeps '/')."""
    if isinstance(key, str):
        key = key.encode("utf-8")
    return urllib.parse.quote(key, safe="/")


def port_free(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


_ports_given = set()


def free_port():
    """A free loopback port in 10000-18999: below the clusters' offsets (19300
    and up) and below the kernel's ephemeral range (32768+), so that no outgoing
    connection of a test running beside this one can take it before its server
    binds it (one that the kernel gave out did, and the server exited). Never
    the same port twice in one process."""
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(1000):
        p = rng.randrange(10000, 19000)
        if p not in _ports_given and port_free(p):
            _ports_given.add(p)
            return p
    raise TestFailure("no free port in 10000-18999")


def stop_process(proc, timeout=30):
    """SIGTERM to a process we started (by its pid), SIGKILL if it lingers."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# ----------------------------------------------------------------------------- HTTP


class Resp:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers  # list of (name, value)
        self.body = body

    def header(self, name, default=None):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return default

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def __repr__(self):
        b = self.body[:200] if self.body is not None else b""
        return "<Resp %d %s %r>" % (self.status, self.reason, b)


def http_request(port, method, path, body=None, headers=None, timeout=60, host="127.0.0.1"):
    """One request on a fresh connection. Returns Resp; raises on transport errors."""
    hdrs = dict(headers or {})
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        if body is not None and not isinstance(body, (bytes, bytearray)):
            body = body.encode() if isinstance(body, str) else body
        if method in ("PUT", "POST", "PATCH") and body is None and "Content-Length" not in hdrs \
                and "Transfer-Encoding" not in hdrs:
            hdrs["Content-Length"] = "0"
        conn.request(method, path, body=body, headers=hdrs)
        r = conn.getresponse()
        data = r.read()
        resp = Resp(r.status, r.reason, r.getheaders(), data)
        if VERBOSE:
            log("%s %s -> %d (%d bytes)" % (method, path[:120], r.status, len(data)))
        return resp
    finally:
        conn.close()


class Gateway:
    """Tenant view of a gateway: every call carries the tenant's key."""

    def __init__(self, port, key, host="127.0.0.1"):
        self.port = port
        self.key = key
        self.host = host

    def auth(self, extra=None):
        h = {}
        if self.key is not None:
            h["Authorization"] = "Bearer " + self.key
        h.update(extra or {})
        return h

    def request(self, method, path, body=None, headers=None, timeout=120):
        return http_request(self.port, method, path, body, self.auth(headers), timeout,
                            self.host)

    def put(self, key, data, headers=None, timeout=120):
        return self.request("PUT", "/v1/objects/" + qkey(key), data, headers, timeout)

    def get(self, key, headers=None, timeout=120):
        return self.request("GET", "/v1/objects/" + qkey(key), None, headers, timeout)

    def head(self, key, headers=None):
        return self.request("HEAD", "/v1/objects/" + qkey(key), None, headers)

    def delete(self, key):
        return self.request("DELETE", "/v1/objects/" + qkey(key))

    def list(self, prefix=None, after=None, limit=None):
        q = {}
        if prefix is not None:
            q["prefix"] = prefix
        if after is not None:
            q["after"] = after
        if limit is not None:
            q["limit"] = str(limit)
        path = "/v1/objects"
        if q:
            path += "?" + urllib.parse.urlencode(q, quote_via=urllib.parse.quote)
        return self.request("GET", path)

    def list_all(self, prefix=None, limit=None):
        """Follows `next` until null; returns every listed object."""
        out = []
        after = None
        for _ in range(100000):
            r = self.list(prefix, after, limit)
            if r.status != 200:
                raise TestFailure("LIST prefix=%r after=%r: %r" % (prefix, after, r))
            j = r.json()
            out.extend(j["objects"])
            if j["next"] is None:
                return out
            after = j["next"]
        raise TestFailure("LIST never ended")


# ----------------------------------------------------------------------------- cluster


class Cluster:
    PROCS_FIXED = ("controller", "gateway")

    def __init__(self, test, nodes=6, controller_args="", gateway_args="", fnstore_args="",
                 name="c", cos=None, gateways=1, netns=False):
        self.test = test
        # shoal-cluster --netns: every process on a host (network namespace) of its own;
        # this process then joins the tools' host, NAME-client.
        self.netns = "shoal%d-%d" % (os.getpid(), len(test.clusters)) if netns else None
        self.gateways = gateways  # shoal-cluster --gateways: gateway, gateway-1, ...
        self.cos = cos  # every node's --cos URL (None: shoal-cluster's directory COS)
        self.build = test.build
        self.src = test.src
        self.nodes = nodes
        self.controller_args = controller_args
        self.gateway_args = (gateway_args + " " + GATEWAY_ARGS).strip()
        self.fnstore_args = fnstore_args
        self.dir = tempfile.mkdtemp(prefix="shoal-integ-%s-" % name)
        self.script = os.path.join(self.src, "deploy", "local", "shoal-cluster")
        self.offset = None
        self.started = False
        self._tenant_n = 0

    # ports
    @property
    def gw_port(self):
        return 9300 + self.offset

    @property
    def ctl_port(self):
        return 9400 + self.offset

    @property
    def s3_port(self):
        return 9310 + self.offset

    def gw_port_of(self, g):
        """The tenant API port of gateway g (0: "gateway", g: "gateway-g")."""
        return 9300 + 20 * g + self.offset

    def s3_port_of(self, g):
        return self.gw_port_of(g) + 10

    def data_port(self, i):
        return 9500 + i + self.offset

    def metrics_port(self, i):
        return 9600 + i + self.offset

    def ports(self, offset):
        p = [9300 + 20 * g + offset + s for g in range(self.gateways) for s in (0, 10)]
        p += [9400 + offset]
        p += [9500 + i + offset for i in range(self.nodes)]
        p += [9600 + i + offset for i in range(self.nodes)]
        return p

    def host(self, proc):
        """The address proc listens on (shoal-cluster's host_ip)."""
        if self.netns is None:
            return "127.0.0.1"
        if proc == "controller":
            return "10.88.0.2"
        if proc.startswith("gateway"):
            return "10.88.0.%d" % (10 + int(proc[len("gateway-"):] or 0))
        return "10.88.0.%d" % (100 + int(proc[len("fnstore-"):]))

    def gw_host(self, g=0):
        return self.host("gateway-%d" % g if g else "gateway")

    def link(self, proc, what):
        """--netns: plug proc's host in (up), cut it off (down), or limit its cable
        (a tc rate such as 20mbit; unlimited)."""
        log("link %s %s" % (proc, what))
        self.cluster_cmd("link", proc, what)

    def procs(self):
        return (["controller"] + ["fnstore-%d" % i for i in range(self.nodes)] + ["gateway"] +
                ["gateway-%d" % g for g in range(1, self.gateways)])

    def _pick_offset(self):
        # Ports stay below the kernel's ephemeral range (32768+) so that an outgoing
        # connection cannot take one of them between our check and the bind.
        rng = random.Random(os.getpid() ^ int(time.time() * 1000))
        for _ in range(200):
            off = rng.randrange(10000, 22000, 100)
            if all(port_free(p) for p in self.ports(off)):
                return off
        raise TestFailure("no free port offset found")

    def cluster_cmd(self, *args, check=True, timeout=180):
        cmd = [self.script] + list(args) + ["--dir", self.dir]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        out = p.stdout.decode(errors="replace")
        if check and p.returncode != 0:
            raise TestFailure("%s failed (exit %d):\n%s" % (" ".join(args), p.returncode, out))
        return p.returncode, out

    def start(self, only=None, timeout=60):
        """First call: creates the cluster. Later calls: start what is down."""
        if self.offset is None:
            return self._create(timeout)
        args = ["start", "--timeout", str(timeout)]
        if only:
            args += ["--only", ",".join(only)]
        self.started = True
        t0 = time.monotonic()
        _, out = self.cluster_cmd(*args, timeout=timeout * 3 + 30)
        log("cluster start%s: %.1fs (offset %d)" % (" " + ",".join(only) if only else "",
                                                   time.monotonic() - t0, self.offset))
        return out

    def _create(self, timeout, tries=3):
        """Starts a new cluster. Other clusters on this machine (other tests, other
        checkouts) pick their ports the same way: one may bind a port of ours between
        our check and our bind; then start again on other ports."""
        for n in range(tries):
            self.offset = self._pick_offset()
            args = ["start", "--nodes", str(self.nodes), "--gateways", str(self.gateways),
                    "--port-offset", str(self.offset),
                    "--build", self.build, "--timeout", str(timeout),
                    "--controller-args", self.controller_args,
                    "--gateway-args", self.gateway_args,
                    "--fnstore-args", self.fnstore_args]
            if self.cos:
                args += ["--cos", self.cos]
            if self.netns:
                args += ["--netns", self.netns]
            self.started = True
            t0 = time.monotonic()
            rc, out = self.cluster_cmd(*args, check=False, timeout=timeout * 3 + 30)
            if rc == 0:
                log("cluster start: %.1fs (offset %d)" % (time.monotonic() - t0, self.offset))
                if self.netns:
                    enter_netns(self.netns + "-client")
                return out
            if "port taken" not in out or n == tries - 1:
                raise TestFailure("%s failed (exit %d):\n%s" % (" ".join(args), rc, out))
            log("cluster start on offset %d lost a port to another process; again" %
                self.offset)
            self.stop()
            shutil.rmtree(self.dir, ignore_errors=True)
            os.makedirs(self.dir)

    def stop(self, only=None):
        """Returns what shoal-cluster said (it names a process it had to SIGKILL)."""
        if not self.started:
            return ""
        args = ["stop"]
        if only:
            args += ["--only", ",".join(only)]
        return self.cluster_cmd(*args, check=False)[1]

    def status(self):
        return self.cluster_cmd("status", check=False)

    def pid(self, proc):
        try:
            with open(os.path.join(self.dir, "pids", proc + ".pid")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def alive(self, proc):
        pid = self.pid(proc)
        if pid is None:
            return False
        try:
            with open("/proc/%d/stat" % pid) as f:
                st = f.read().rsplit(")", 1)[1].split()[0]
            return st not in ("Z", "X")
        except OSError:
            return False

    def kill(self, proc, sig=signal.SIGKILL, wait=True):
        pid = self.pid(proc)
        if pid is None:
            raise TestFailure("no pid for %s" % proc)
        log("kill -%d %s (pid %d)" % (sig, proc, pid))
        os.kill(pid, sig)
        if wait:
            deadline = time.monotonic() + 30
            while self.alive(proc):
                if time.monotonic() > deadline:
                    raise TestFailure("%s (pid %d) did not die after signal %d" % (proc, pid, sig))
                time.sleep(0.05)

    # admin
    def token(self):
        with open(os.path.join(self.dir, "admin.token")) as f:
            return f.read().strip()

    def shoalctl_path(self):
        return self.test.binary("shoalctl")

    def shoalctl(self, *args, check=True, timeout=30):
        cmd = [self.shoalctl_path(), "--controller",
               "http://%s:%d" % (self.host("controller"), self.ctl_port),
               "--token-file", os.path.join(self.dir, "admin.token")] + list(args)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        if check and p.returncode != 0:
            raise TestFailure("shoalctl %s: exit %d\nstdout: %s\nstderr: %s" % (
                " ".join(args), p.returncode, p.stdout.decode(errors="replace"),
                p.stderr.decode(errors="replace")))
        return p

    def admin(self, method, path, body=None, token=True, headers=None):
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + self.token()
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            h.setdefault("Content-Type", "application/json")
        return http_request(self.ctl_port, method, path, body, h, timeout=30,
                            host=self.host("controller"))

    def nodes_up(self):
        """Number of nodes the controller reports up (GET /v1/nodes)."""
        r = self.admin("GET", "/v1/nodes")
        if r.status != 200:
            return -1
        j = r.json()
        lst = j.get("nodes", j) if isinstance(j, dict) else j
        n = 0
        for nd in lst:
            st = str(nd.get("state", "")).lower() if isinstance(nd, dict) else ""
            if st in ("up", "active", "alive"):
                n += 1
        return n

    def wait_nodes_up(self, n=None, timeout=30):
        n = self.nodes if n is None else n
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.nodes_up()
                if last >= n:
                    return
            except (OSError, ValueError, http.client.HTTPException):
                pass
            time.sleep(0.2)
        raise TestFailure("controller reports %s nodes up, wanted %d" % (last, n))

    def create_tenant(self, name=None, weight=None, wait=True):
        """Creates a tenant with shoalctl --json; returns its JSON (name,id,weight,key)."""
        if name is None:
            self._tenant_n += 1
            name = "t%d-%d" % (self._tenant_n, random.randrange(1000000))
        args = ["--json", "tenant", "create", name]
        if weight is not None:
            args += ["--weight", str(weight)]
        p = self.shoalctl(*args)
        try:
            j = json.loads(p.stdout.decode())
        except ValueError:
            raise TestFailure("shoalctl --json tenant create printed %r" % p.stdout)
        for f in ("name", "id", "weight", "key"):
            if f not in j:
                raise TestFailure("tenant create JSON lacks %r: %r" % (f, j))
        if wait:
            self.wait_tenant_known(j["key"])
        return j

    def wait_tenant_known(self, key, timeout=20):
        """The gateway learns tenants from the controller: wait until it accepts the key."""
        g = Gateway(self.gw_port, key, self.gw_host())
        deadline = time.monotonic() + timeout
        r = None
        while time.monotonic() < deadline:
            try:
                r = g.list(limit=1)
                if r.status != 401:
                    return
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.1)
        raise TestFailure("gateway still refuses the new tenant key after %ds: %r" % (timeout, r))

    def gw(self, tenant_or_key):
        key = tenant_or_key["key"] if isinstance(tenant_or_key, dict) else tenant_or_key
        return Gateway(self.gw_port, key, self.gw_host())

    def metrics(self, node):
        r = http_request(self.metrics_port(node), "GET", "/metrics", timeout=10,
                         host=self.host("fnstore-%d" % node))
        if r.status != 200:
            raise TestFailure("metrics of node %d: %r" % (node, r))
        return parse_metrics(r.body.decode("utf-8", "replace"))

    def gw_metrics(self, g=0):
        """Gateway g's /metrics, parsed (parse_metrics)."""
        r = http_request(self.gw_port_of(g), "GET", "/metrics", timeout=10, host=self.gw_host(g))
        if r.status != 200:
            raise TestFailure("gateway /metrics: %r" % r)
        return parse_metrics(r.body.decode("utf-8", "replace"))

    def logs(self, prefix="fnstore-"):
        """{file name: text} of the logs of the processes named prefix* (a log is
        appended across restarts)."""
        out = {}
        logdir = os.path.join(self.dir, "logs")
        for n in sorted(os.listdir(logdir)):
            if n.startswith(prefix) and n.endswith(".log"):
                with open(os.path.join(logdir, n), errors="replace") as f:
                    out[n] = f.read()
        return out

    def print_logs(self, lines=40):
        logdir = os.path.join(self.dir, "logs")
        try:
            names = sorted(os.listdir(logdir))
        except OSError:
            print("(no logs in %s)" % logdir)
            return
        for n in names:
            path = os.path.join(logdir, n)
            try:
                with open(path, "rb") as f:
                    f.seek(0, 2)
                    size = f.tell()
                    f.seek(max(0, size - 200000))
                    tail = f.read().decode("utf-8", "replace").splitlines()[-lines:]
            except OSError:
                continue
            print("===== %s (last %d lines) =====" % (path, len(tail)))
            for ln in tail:
                print("  " + ln)
        sys.stdout.flush()

    def cleanup(self, failed):
        if failed and self.started:
            try:
                # Which processes were still alive when the test failed.
                print("cluster status at failure:\n" + self.status()[1])
            except Exception as e:  # noqa: BLE001
                print("status failed: %s" % e)
        try:
            self.stop()
        except Exception as e:  # noqa: BLE001 - cleanup must go on
            print("stop failed: %s" % e)
        # Last resort: anything still alive from our pid files.
        for p in self.procs():
            if self.alive(p):
                try:
                    os.kill(self.pid(p), signal.SIGKILL)
                except OSError:
                    pass
        if failed:
            self.print_logs()
        if os.environ.get("SHOAL_TEST_KEEP") == "1":
            print("cluster dir kept: %s" % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def netns_usable():
    """Can this process make network namespaces (root, `ip netns`)? Tests of
    several hosts need them."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return False
    name = "shoalprobe%d" % os.getpid()
    p = subprocess.run(["ip", "netns", "add", name], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    if p.returncode != 0:
        return False
    subprocess.run(["ip", "netns", "del", name], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return True


def enter_netns(name):
    """Moves this thread, and the threads and processes it starts from now on, into
    network namespace name (/run/netns/name)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/run/netns/" + name, os.O_RDONLY)
    try:
        if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
            e = ctypes.get_errno()
            raise OSError(e, "setns %s: %s" % (name, os.strerror(e)))
    finally:
        os.close(fd)


def parse_metrics(text):
    """Prometheus text -> {name{labels}: value}, plus {name: sum over labels}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
        if not m:
            continue
        try:
            v = float(m.group(3))
        except ValueError:
            continue
        full = m.group(1) + (m.group(2) or "")
        out[full] = v
        if m.group(2):
            out[m.group(1)] = out.get(m.group(1), 0.0) + v
    return out


# ----------------------------------------------------------------------------- test runner


class Test:
    def __init__(self, args):
        self.build = os.path.abspath(args.build)
        self.src = os.path.abspath(args.src)
        self.clusters = []
        self.after_clusters = []  # callables run once the clusters are stopped
        self.failures = []
        self.checks = 0
        self.tmp = tempfile.mkdtemp(prefix="shoal-integ-tmp-")

    def binary(self, name):
        sub = {"shoal-controller": "controller", "shoalctl": "controller",
               "shoal-gateway": "gateway", "shoal-fnstore": "fnstore",
               "shoal-bench": "bench"}.get(name, "")
        for c in (os.path.join(self.build, sub, name), os.path.join(self.build, name),
                  os.path.join(self.build, "bin", name)):
            if os.path.isfile(c) and os.access(c, os.X_OK):
                return c
        for root, dirs, files in os.walk(self.build):
            if name in files and os.access(os.path.join(root, name), os.X_OK):
                return os.path.join(root, name)
            if root.count(os.sep) - self.build.count(os.sep) >= 3:
                dirs[:] = []
        raise TestFailure("binary %s not found under %s" % (name, self.build))

    def cluster(self, **kw):
        c = Cluster(self, **kw)
        self.clusters.append(c)
        c.start()
        c.wait_nodes_up()
        return c

    def section(self, fn, *args):
        """Runs one independent part of a test; a failure is recorded and reported at
        the end, and the next part still runs (one run shows every broken part)."""
        name = fn.__name__
        try:
            fn(self, *args)
        except (TestFailure, OSError, http.client.HTTPException, ValueError, KeyError) as e:
            msg = "%s: %s: %s" % (name, type(e).__name__, e)
            self.failures.append(msg)
            print("FAIL in section " + msg, flush=True)
            traceback.print_exc()
            sys.stdout.flush()

    # assertions: always say what was expected and what came
    def check(self, cond, what):
        self.checks += 1
        if not cond:
            raise TestFailure(what)

    def eq(self, got, want, what):
        self.checks += 1
        if got != want:
            raise TestFailure("%s: got %r, want %r" % (what, got, want))

    def status(self, r, want, what):
        self.checks += 1
        wants = want if isinstance(want, (tuple, list, set)) else (want,)
        if r.status not in wants:
            raise TestFailure("%s: HTTP %d, want %s; headers=%r body=%r" % (
                what, r.status, "/".join(map(str, wants)), r.headers, r.body[:300]))

    def api_error(self, r, status, code, what, head=False):
        """An error response as API.md says: status, JSON {error,message}, X-Request-Id."""
        self.status(r, status, what)
        self.check(r.header("X-Request-Id"), "%s: no X-Request-Id on the %d" % (what, status))
        if head:
            self.eq(r.body, b"", "%s: HEAD error has a body" % what)
            return
        try:
            j = r.json()
        except ValueError:
            raise TestFailure("%s: error body is not JSON: %r" % (what, r.body[:300]))
        self.check(isinstance(j, dict) and isinstance(j.get("error"), str)
                   and isinstance(j.get("message"), str),
                   "%s: error body lacks error/message strings: %r" % (what, j))
        self.eq(j["error"], code, "%s: error code" % what)
        self.check("\n" not in j["message"], "%s: message is not one line" % what)


def run(main, timeout=None):
    """Parses --build/--src, runs main(Test), cleans up, exits 0/1."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", required=True)
    args = ap.parse_args()
    t = Test(args)
    name = os.path.basename(sys.argv[0])

    def on_signal(sig, frame):
        raise Deadline("signal %d" % sig)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if timeout:
        # Fail (and clean up) on our own before CTest's TIMEOUT kills us hard,
        # which would leave the cluster running.
        signal.signal(signal.SIGALRM, lambda s, f: (_ for _ in ()).throw(
            Deadline("internal deadline of %ds passed" % timeout)))
        signal.alarm(timeout)
    failed = True
    t0 = time.monotonic()
    try:
        main(t)
        if t.failures:
            raise TestFailure("%d section(s) failed:\n  %s" % (len(t.failures),
                                                              "\n  ".join(t.failures)))
        failed = False
    except TestFailure as e:
        print("FAIL %s: %s" % (name, e))
        traceback.print_exc()
    except Deadline as e:
        print("FAIL %s: %s" % (name, e))
        traceback.print_exc()
    except Exception as e:  # noqa: BLE001 - any error is a failure with cleanup
        print("ERROR %s: %s: %s" % (name, type(e).__name__, e))
        traceback.print_exc()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for c in t.clusters:
            c.cleanup(failed)
        for fn in t.after_clusters:
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - cleanup must go on
                print("cleanup failed: %s" % e)
        shutil.rmtree(t.tmp, ignore_errors=True)
    print("%s %s: %d checks in %.1fs" % ("FAILED" if failed else "PASSED", name, t.checks,
                                         time.monotonic() - t0))
    sys.exit(1 if failed else 0)


# ----------------------------------------------------------------------------- misc


def curl(*args, timeout=300):
    """Runs the real curl; returns CompletedProcess (stdout bytes, stderr bytes)."""
    return subprocess.run(["curl", "-sS"] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)


def write_random_file(path, size, seed=None):
    rng = random.Random(seed)
    h = hashlib.sha256()
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(left, 1 << 20)
            b = rng.randbytes(n)
            h.update(b)
            f.write(b)
            left -= n
    return h.hexdigest()


def vm(pid, field):
    """A /proc/PID/status memory field ("VmRSS", "VmHWM") in bytes."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise TestFailure("no %s for pid %d" % (field, pid))


def wait_until(fn, timeout, what, interval=0.1):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last:
                return last
        except (OSError, http.client.HTTPException) as e:
            last = e
        time.sleep(interval)
    raise TestFailure("timed out after %ss waiting for %s (last: %r)" % (timeout, what, last))


def get_retrying_503(gw, key, within=15.0, what="GET"):
    """GET as a client that retries 503 (a retryable answer) for `within` seconds.

    Only for the moments right after a node restart, when the gateway has yet to
    reconnect to it; any other status is returned at once. Logs how long it took.
    """
    t0 = time.monotonic()
    n = 0
    while True:
        r = gw.get(key)
        if r.status != 503 or time.monotonic() - t0 > within:
            if n:
                log("%s %s: %d after %d retried 503s over %.1fs" % (what, key, r.status, n,
                                                                   time.monotonic() - t0))
            return r
        n += 1
        time.sleep(0.2)


# XXH64, the gateway's cm_hash64: a key's partition is xxh64(key, tenant id) % partitions.
_P1, _P2, _P3 = 11400714785074694791, 14029467366897019727, 1609587929392839161
_P4, _P5, _M64 = 9650029242287828579, 2870177450012600261, (1 << 64) - 1


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M64


def _xround(acc, v):
    return (_rotl((acc + v * _P2) & _M64, 31) * _P1) & _M64


def xxh64(data, seed=0):
    if isinstance(data, str):
        data = data.encode("utf-8")
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M64, (seed + _P2) & _M64, seed & _M64, (seed - _P1) & _M64]
        while i + 32 <= n:
            for k in range(4):
                v[k] = _xround(v[k], int.from_bytes(data[i + 8 * k:i + 8 * k + 8], "little"))
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M64
        for k in range(4):
            h = (((h ^ _xround(0, v[k])) * _P1) + _P4) & _M64
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while i + 8 <= n:
        h ^= _xround(0, int.from_bytes(data[i:i + 8], "little"))
        h = (_rotl(h, 27) * _P1 + _P4) & _M64
        i += 8
    if i + 4 <= n:
        h ^= (int.from_bytes(data[i:i + 4], "little") * _P1) & _M64
        h = (_rotl(h, 23) * _P2 + _P3) & _M64
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _M64
        h = (_rotl(h, 11) * _P1) & _M64
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _M64
    h ^= h >> 29
    h = (h * _P3) & _M64
    h ^= h >> 32
    return h


def partition_of(key, tenant_id, partitions):
    return xxh64(key, tenant_id) % partitions


# CRC32C (Castagnoli), for hand-made frames of the node protocol (common/include/cm_wire.h).
def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC_T = _crc32c_table()


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = _CRC_T[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def wire_frame(op, tenant=0, req_id=1, obj=0, version=0, index=0, incarnation=0, data=b"",
               data_len=None, flags=0, status=0, bad_hdr_crc=False, bad_data_crc=False):
    """One request frame: 64-byte header (cm_wire.h layout) + payload."""
    import struct
    dl = len(data) if data_len is None else data_len
    dcrc = crc32c(data) if data else 0
    if bad_data_crc:
        dcrc ^= 0xDEADBEEF
    h = struct.pack("<IBBHiIQQQIIIII", 0x4C4F4853, 1, op, flags, status, tenant, req_id, obj,
                    version, index, incarnation, dl, dcrc, 0)
    hcrc = crc32c(h)
    if bad_hdr_crc:
        hcrc ^= 1
    return h + struct.pack("<I", hcrc) + data


def wire_parse_hdr(h):
    import struct
    f = struct.unpack("<IBBHiIQQQIIIIII", h[:64])
    return {"magic": f[0], "version": f[1], "op": f[2], "flags": f[3], "status": f[4],
            "tenant": f[5], "req_id": f[6], "object": f[7], "obj_version": f[8],
            "index": f[9], "incarnation": f[10], "data_len": f[11], "data_crc": f[12],
            "reserved": f[13], "hdr_crc": f[14]}


class Load:
    """Background PUT/GET load with checksums.

    Records every acknowledged (201) PUT: key -> (sha256, size, version). Reads of
    acknowledged keys must return the last acknowledged content (each key is only
    written by one thread, so there is no race on a key).
    """

    def __init__(self, test, gw, nthreads=3, min_size=100 << 10, max_size=2 << 20, prefix="load",
                 put_ok=(201,), put_tolerated=(503,), get_ok=(200,), seed=None):
        self.test = test
        self.gw = gw
        self.nthreads = nthreads
        self.min_size = min_size
        self.max_size = max_size
        self.prefix = prefix
        self.put_tolerated = put_tolerated
        self.acked = {}  # key -> sha256
        self.ambiguous = {}  # key -> {sha256 of old, sha256 of new}: a PUT over it failed
        self.ack_time = {}  # key -> time of the last ack
        self.lock = threading.Lock()
        self.stop_ev = threading.Event()
        self.errors = []
        self.stats = {"put_ok": 0, "put_503": 0, "get_ok": 0, "put_other": 0}
        self.threads = []
        self.seed = seed if seed is not None else random.randrange(1 << 30)

    def _worker(self, n):
        rng = random.Random(self.seed + n)
        i = 0
        my_keys = []
        while not self.stop_ev.is_set():
            try:
                if my_keys and rng.random() < 0.5:
                    key = rng.choice(my_keys)
                    with self.lock:
                        want = self.acked.get(key)
                    r = self.gw.get(key)
                    if r.status != 200:
                        self._err("GET %s (acknowledged) -> %r" % (key, r))
                        continue
                    if sha256(r.body) != want:
                        self._err("GET %s: wrong content (%d bytes, sha %s, want %s)" % (
                            key, len(r.body), sha256(r.body)[:12], want[:12]))
                        continue
                    with self.lock:
                        self.stats["get_ok"] += 1
                else:
                    if my_keys and rng.random() < 0.2:
                        key = rng.choice(my_keys)  # overwrite
                    else:
                        key = "%s/w%d/obj-%05d" % (self.prefix, n, i)
                        i += 1
                    size = rng.randrange(self.min_size, self.max_size + 1)
                    data = rng.randbytes(size)
                    r = self.gw.put(key, data)
                    if r.status == 201:
                        with self.lock:
                            self.acked[key] = sha256(data)
                            self.ack_time[key] = time.monotonic()
                            self.stats["put_ok"] += 1
                        if key not in my_keys:
                            my_keys.append(key)
                    elif r.status in self.put_tolerated:
                        with self.lock:
                            self.stats["put_503"] += 1
                        # The key's content is now unknown (old or new is fine for
                        # a failed PUT, but a GET must return one whole version);
                        # stop reading it in the load to keep the check exact.
                        if key in my_keys:
                            my_keys.remove(key)
                            with self.lock:
                                old = self.acked.pop(key, None)
                                if old is not None:
                                    self.ambiguous[key] = {old, sha256(data)}
                        time.sleep(0.05)
                    else:
                        self._err("PUT %s (%d bytes) -> %r" % (key, size, r))
            except Exception as e:  # noqa: BLE001
                self._err("thread %d: %s: %s" % (n, type(e).__name__, e))

    def _err(self, msg):
        with self.lock:
            self.errors.append("%.3f %s" % (time.time(), msg))
        log("load error: " + msg)

    def start(self):
        for n in range(self.nthreads):
            th = threading.Thread(target=self._worker, args=(n,), daemon=True)
            th.start()
            self.threads.append(th)

    def stop(self):
        self.stop_ev.set()
        for th in self.threads:
            th.join(timeout=180)

    def snapshot(self):
        with self.lock:
            return dict(self.acked)

    def verify_all(self, gw=None, what="verify", retry_503=0.0):
        """Every acknowledged object reads back whole and right. Returns error list.

        retry_503: right after a node restart, retry 503s as a client would, for at
        most that many seconds in total."""
        real = gw or self.gw
        errs = []
        deadline = time.monotonic() + retry_503

        class _G:
            def get(self_, key):
                return get_retrying_503(real, key, max(0.0, deadline - time.monotonic()), what)
        gw = _G()
        with self.lock:
            exact = dict(self.acked)
            amb = dict(self.ambiguous)
        for key, want in sorted(exact.items()):
            r = gw.get(key)
            if r.status != 200:
                errs.append("%s: GET %s -> %r" % (what, key, r))
            elif sha256(r.body) != want:
                errs.append("%s: GET %s wrong content (%d bytes)" % (what, key, len(r.body)))
        for key, wants in sorted(amb.items()):
            r = gw.get(key)
            if r.status != 200:
                errs.append("%s: GET %s (old version acked, overwrite failed) -> %r" % (
                    what, key, r))
            elif sha256(r.body) not in wants:
                errs.append("%s: GET %s is neither the old nor the new version" % (what, key))
        return errs
