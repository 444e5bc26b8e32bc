#!/usr/bin/python3
"""integ.errors: every reproducible error row of API.md, on the gateway and the
controller. Each error must carry the JSON body {"error","message"} with the
table's code and an X-Request-Id; successes carry X-Request-Id too.
"""
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time

import shoaltest as st

MAX_OBJ = 4 << 20  # the gateway of this test runs with --max-object-size 4 MiB


def raw_http(port, data, timeout=20, shut_wr=False):
    """Sends raw bytes, returns (status, headers dict lowercase, body bytes) of the reply."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        if shut_wr:
            s.shutdown(socket.SHUT_WR)
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                b = s.recv(65536)
                if not b:
                    break
                buf += b
            # Skip interim 1xx answers (100 Continue) to the final one.
            if re.match(rb"HTTP/1\.[01] 1\d\d ", buf) and b"\r\n\r\n" in buf:
                buf = buf.partition(b"\r\n\r\n")[2]
                continue
            break
        head, _, body = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
        if not m:
            raise st.TestFailure("no HTTP status line in reply: %r" % buf[:200])
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        n = int(hdrs.get("content-length", "0"))
        while len(body) < n:
            b = s.recv(65536)
            if not b:
                break
            body += b
        return int(m.group(1)), hdrs, body
    finally:
        s.close()


def as_resp(status, hdrs, body):
    return st.Resp(status, "", list(hdrs.items()), body)


def check_keys(t, g):
    ok = g.put("good/key", b"hello")
    t.status(ok, 201, "PUT good key")
    t.check(ok.header("X-Request-Id"), "201 without X-Request-Id")
    bad = [
        ("empty key", "/v1/objects/"),
        ("'..' segment", "/v1/objects/a/../b"),
        ("'..' alone", "/v1/objects/.."),
        ("'.' segment", "/v1/objects/a/./b"),
        ("'.' alone", "/v1/objects/."),
        ("encoded '..' segment", "/v1/objects/a/%2E%2E/b"),
        ("encoded '.' segment", "/v1/objects/a/%2e"),
        ("leading '..'", "/v1/objects/../x"),
        ("NUL", "/v1/objects/a%00b"),
        ("control char %01", "/v1/objects/a%01b"),
        ("control char %1f", "/v1/objects/a%1Fb"),
        ("DEL %7f", "/v1/objects/a%7Fb"),
        ("newline %0a", "/v1/objects/a%0Ab"),
        ("invalid UTF-8 %ff", "/v1/objects/a%ffb"),
        ("truncated UTF-8", "/v1/objects/a%C3"),
        ("overlong UTF-8", "/v1/objects/%C0%AF"),
        ("bad percent escape", "/v1/objects/a%zzb"),
        ("truncated percent escape", "/v1/objects/ab%4"),
        ("1025-byte key", "/v1/objects/" + "k" * 1025),
        ("1025 bytes after decoding", "/v1/objects/" + "%41" * 1025),
    ]
    for what, path in bad:
        for method in ("PUT", "GET"):
            body = b"data" if method == "PUT" else None
            r = st.http_request(g.port, method, path, body, g.auth())
            t.api_error(r, 400, "bad_request", "%s %s (%s)" % (method, path[:60], what))
        r = st.http_request(g.port, "DELETE", path, None, g.auth())
        t.api_error(r, 400, "bad_request", "DELETE %s (%s)" % (path[:60], what))
    # The boundary: 1024 bytes is fine, also when it is 1024 after decoding.
    t.status(st.http_request(g.port, "PUT", "/v1/objects/" + "%41" * 1024, b"x", g.auth()), 201,
             "PUT 1024-byte key given as 3072 characters of %41")
    t.eq(g.get("A" * 1024).body, b"x", "GET of the %41 key by its decoded name")
    st.log("bad keys ok")


def check_ranges(t, g):
    t.status(g.put("r/obj", b"0123456789" * 10), 201, "PUT r/obj")
    for spec in ("bytes=abc", "bytes=", "bytes=-", "bytes=5-3", "bytes=1-2-3", "bytes=--1",
                 "bytes=x-5", "lines=0-5", "bytes 0-5", "bytes=-abc"):
        r = g.get("r/obj", {"Range": spec})
        t.api_error(r, 400, "bad_request", "GET Range %r" % spec)
    for spec in ("bytes=100-", "bytes=100-200", "bytes=1000-1001"):
        r = g.get("r/obj", {"Range": spec})
        t.api_error(r, 416, "range_not_satisfiable", "GET Range %r on 100 bytes" % spec)
        t.eq(r.header("Content-Range"), "bytes */100", "416 Content-Range for %r" % spec)
    t.status(g.put("r/empty", b""), 201, "PUT empty")
    r = g.get("r/empty", {"Range": "bytes=0-0"})
    t.api_error(r, 416, "range_not_satisfiable", "Range bytes=0-0 of an empty object")
    t.eq(r.header("Content-Range"), "bytes */0", "416 on empty: Content-Range")
    r = g.get("r/obj", {"Range": "bytes=99-"})
    t.status(r, 206, "Range bytes=99- (last byte)")
    t.eq(r.body, b"9", "Range bytes=99-: body")
    st.log("ranges ok")


def check_list_params(t, g):
    for q in ("limit=abc", "limit=-1", "limit=12abc", "limit=1.5", "limit=0x10"):
        r = g.request("GET", "/v1/objects?" + q)
        t.api_error(r, 400, "bad_request", "LIST %s" % q)
    for q in ("limit=1", "limit=1000", "prefix=good/&limit=5", "after=zzz"):
        r = g.request("GET", "/v1/objects?" + q)
        t.status(r, 200, "LIST %s" % q)
        t.check(r.header("X-Request-Id"), "LIST %s: no X-Request-Id" % q)
    st.log("list params ok")


def check_auth(t, c, g):
    port = g.port
    paths = [("GET", "/v1/objects/good/key"), ("PUT", "/v1/objects/good/key"),
             ("DELETE", "/v1/objects/good/key"), ("GET", "/v1/objects"),
             ("HEAD", "/v1/objects/good/key")]
    variants = [("missing", {}), ("wrong key", {"Authorization": "Bearer nope-" + g.key[:8]}),
                ("empty bearer", {"Authorization": "Bearer "}),
                ("basic scheme", {"Authorization": "Basic " + g.key}),
                ("key without scheme", {"Authorization": g.key})]
    for method, path in paths:
        for what, h in variants:
            body = b"overwrite!" if method == "PUT" else None
            r = st.http_request(port, method, path, body, h)
            t.api_error(r, 401, "unauthorized", "%s %s with %s key" % (method, path, what),
                        head=(method == "HEAD"))
    t.eq(g.get("good/key").body, b"hello", "object intact after unauthorized PUT/DELETE")
    # A rotated key stops working; the new one works.
    ten = c.create_tenant("rot")
    old = c.gw(ten)
    t.status(old.put("k", b"v"), 201, "PUT with the first key")
    p = c.shoalctl("--json", "tenant", "rotate-key", "rot")
    newkey = json.loads(p.stdout.decode())["key"]
    c.wait_tenant_known(newkey)
    st.wait_until(lambda: old.get("k").status == 401, 15, "the old key to stop working")
    t.api_error(old.get("k"), 401, "unauthorized", "GET with a rotated-away key")
    t.eq(c.gw(newkey).get("k").body, b"v", "GET with the new key")
    # healthz and metrics need no key.
    r = st.http_request(port, "GET", "/healthz")
    t.status(r, 200, "GET /healthz without a key")
    t.eq(r.body.strip(), b"ok", "/healthz body")
    t.check(r.header("X-Request-Id"), "/healthz: no X-Request-Id")
    r = st.http_request(port, "GET", "/metrics")
    t.status(r, 200, "GET /metrics without a key")
    t.check(b"shoal_" in r.body, "gateway /metrics has no shoal_ metric")
    st.log("auth ok")


def check_not_found_and_method(t, g):
    t.api_error(g.get("no/such/key"), 404, "not_found", "GET missing")
    t.api_error(g.head("no/such/key"), 404, "not_found", "HEAD missing", head=True)
    t.api_error(g.delete("no/such/key"), 404, "not_found", "DELETE missing")
    for method, path in (("POST", "/v1/objects/x"), ("PATCH", "/v1/objects/good/key"),
                         ("POST", "/v1/objects"), ("PUT", "/v1/objects"),
                         ("DELETE", "/v1/objects"), ("OPTIONS", "/v1/objects/good/key")):
        body = b"{}" if method in ("POST", "PATCH", "PUT") else None
        r = st.http_request(g.port, method, path, body, g.auth())
        t.api_error(r, 405, "method_not_allowed", "%s %s" % (method, path))
    t.eq(g.get("good/key").body, b"hello", "object intact after 405s")
    st.log("404/405 ok")


def check_length(t, c, g):
    port = g.port
    auth = "Authorization: Bearer %s\r\n" % g.key
    # Chunked body, no Content-Length.
    req = ("PUT /v1/objects/chunked HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth +
           "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").encode()
    s, h, b = raw_http(port, req + b"5\r\nhello\r\n0\r\n\r\n")
    t.api_error(as_resp(s, h, b), 411, "length_required", "PUT with chunked body")
    # No Content-Length and no body at all.
    req = ("PUT /v1/objects/nolength HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth +
           "Connection: close\r\n\r\n").encode()
    s, h, b = raw_http(port, req, shut_wr=True)
    t.api_error(as_resp(s, h, b), 411, "length_required", "PUT without Content-Length")
    t.api_error(g.get("chunked"), 404, "not_found", "nothing stored by the 411 PUT")
    # Bad Content-Length values.
    for cl in ("abc", "-1", "1.5"):
        req = ("PUT /v1/objects/badlen HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth +
               "Content-Length: %s\r\nConnection: close\r\n\r\n" % cl).encode()
        s, h, b = raw_http(port, req + b"x", shut_wr=True)
        t.check(s == 400, "PUT with Content-Length %r: HTTP %d, want 400" % (cl, s))
    st.log("411 ok")


def check_413_before_body(t, g):
    port = g.port
    auth = "Authorization: Bearer %s\r\n" % g.key
    # 413: announced size over max, no body sent: the answer must come before a body.
    for size in (MAX_OBJ + 1, 2 << 30, 1 << 40):
        req = ("PUT /v1/objects/huge HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth +
               "Content-Length: %d\r\nConnection: close\r\n\r\n" % size).encode()
        t0 = time.monotonic()
        s, h, b = raw_http(port, req, timeout=15)
        t.api_error(as_resp(s, h, b), 413, "too_large", "PUT Content-Length %d (no body)" % size)
        t.check(time.monotonic() - t0 < 10, "413 took %.1fs" % (time.monotonic() - t0))
    st.log("413 before the body ok")


def check_413_expect(t, g):
    port = g.port
    auth = "Authorization: Bearer %s\r\n" % g.key
    # The same with Expect: 100-continue, as curl sends for big bodies: 413, not 100.
    req = ("PUT /v1/objects/huge HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth +
           "Content-Length: %d\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
           % (MAX_OBJ + 1)).encode()
    s, h, b = raw_http(port, req, timeout=15)
    t.api_error(as_resp(s, h, b), 413, "too_large", "PUT over max with Expect: 100-continue")
    st.log("413 on Expect: 100-continue ok")


def check_413_curl(t, g):
    port = g.port
    auth = "Authorization: Bearer %s\r\n" % g.key
    # Real bodies, through real curl: exactly max is fine, max+1 is 413.
    path = os.path.join(t.tmp, "max.bin")
    with open(path, "wb") as f:
        f.write(os.urandom(MAX_OBJ))
    url = "http://127.0.0.1:%d/v1/objects/max" % port
    p = st.curl("-X", "PUT", "--data-binary", "@" + path, "-H", auth.strip(), "-o", "/dev/null",
                "-w", "%{http_code}", url)
    t.eq(p.stdout.strip(), b"201", "curl PUT of exactly max_object_size (%r)" % p.stderr)
    with open(path, "ab") as f:
        f.write(b"!")
    p = st.curl("-X", "PUT", "--data-binary", "@" + path, "-H", auth.strip(), "-w",
                "\n%{http_code}", url)
    body, _, code = p.stdout.rpartition(b"\n")
    t.eq(code, b"413", "curl PUT of max_object_size+1 (%r)" % p.stderr)
    t.eq(json.loads(body.decode()).get("error"), "too_large", "curl 413 body")
    t.eq(g.head("max").header("Content-Length"), str(MAX_OBJ), "the max object is intact")
    st.log("413 with curl ok")


def check_request_ids(t, g):
    ids = set()
    for _ in range(20):
        r = g.get("good/key")
        ids.add(r.header("X-Request-Id"))
    r = g.get("no/such/key")
    ids.add(r.header("X-Request-Id"))
    t.check(None not in ids and len(ids) == 21, "X-Request-Id values are not unique: %d" % len(ids))


def check_admin(t, c):
    url = "http://127.0.0.1:%d/v1/tenants" % c.ctl_port
    auth = "Authorization: Bearer " + c.token()

    def post(body, token=True, path=url, method="POST"):
        args = ["-X", method, "-H", "Content-Type: application/json", "--data-binary", body,
                "-w", "\n%{http_code}", path]
        if token:
            args = ["-H", auth] + args
        p = st.curl(*args)
        body, _, code = p.stdout.rpartition(b"\n")
        return int(code), body

    def want_400(code, body, what):
        t.eq(code, 400, "admin %s: status (body %r)" % (what, body[:200]))
        try:
            j = json.loads(body.decode())
        except ValueError:
            raise st.TestFailure("admin %s: 400 body is not JSON: %r" % (what, body[:200]))
        t.eq(j.get("error"), "bad_request", "admin %s: error code" % what)
        t.check(isinstance(j.get("message"), str), "admin %s: no message" % what)

    bad_weights = ["0", "-1", "NaN", "1e309", "-1e309", "Infinity", "10001", "10000.5",
                   '"abc"', '"1"', "true", "[]", "{}", "0.0", "-0"]
    for w in bad_weights:
        code, body = post('{"name":"wt","weight":%s}' % w)
        want_400(code, body, "weight %s" % w)
    bad_names = ["", "A", "Upper", "-lead", "a_b", "a b", "a.b", "x" * 64, "é", "a/b",
                 "a\x00b", "a\nb"]
    for n in bad_names:
        code, body = post(json.dumps({"name": n, "weight": 1}))
        want_400(code, body, "name %r" % n)
    for body_ in ("not json", "{", '{"name":"x",}', "[]", '"str"', "", '{"weight":1}',
                  '{"name":7,"weight":1}'):
        code, body = post(body_)
        want_400(code, body, "body %r" % body_)
    # The boundaries that are fine.
    for name, w in (("x" * 63, "10000"), ("0", "0.001"), ("a-", "1")):
        code, body = post('{"name":"%s","weight":%s}' % (name, w))
        t.eq(code, 201, "admin create %s weight %s (body %r)" % (name, w, body[:200]))
    code, body = post('{"name":"0","weight":1}')
    t.check(code in (400, 409), "duplicate tenant name: %d, want an error" % code)
    # PATCH with bad weights.
    for w in ("0", "-1", "10001", '"abc"', "1e309"):
        code, body = post('{"weight":%s}' % w, path=url + "/a-", method="PATCH")
        want_400(code, body, "PATCH weight %s" % w)
    code, body = post('{"weight":2.5}', path=url + "/a-", method="PATCH")
    t.eq(code, 200, "PATCH weight 2.5 (body %r)" % body[:200])
    # No or wrong admin token.
    code, body = post('{"name":"noauth","weight":1}', token=False)
    t.eq(code, 401, "admin POST without token")
    p = st.curl("-H", "Authorization: Bearer wrong", "-w", "\n%{http_code}", url)
    t.eq(p.stdout.rpartition(b"\n")[2], b"401", "admin GET with wrong token")
    # Unknown tenant.
    p = st.curl("-H", auth, "-w", "\n%{http_code}", url + "/no-such-tenant")
    t.eq(p.stdout.rpartition(b"\n")[2], b"404", "admin GET unknown tenant")
    # shoalctl: exit 1 with the controller's message when it refuses.
    p = c.shoalctl("tenant", "create", "BAD_NAME", check=False)
    t.eq(p.returncode, 1, "shoalctl tenant create BAD_NAME exit code")
    t.check(p.stderr.strip(), "shoalctl refusal printed nothing on stderr")
    p = c.shoalctl("tenant", "create", "wt2", "--weight", "0", check=False)
    t.eq(p.returncode, 1, "shoalctl tenant create --weight 0 exit code")
    st.log("admin input ok")


def check_unavailable_unnoticed(t, c, g):
    # Nodes that stop answering without closing their connections (SIGSTOP) look
    # usable when the PUT begins; the gateway learns they are gone only from its
    # chunks' timeouts. Moving those chunks onto the 3 nodes left would store the
    # object on fewer than k nodes, so the PUT must still be refused.
    stopped = ("fnstore-1", "fnstore-3", "fnstore-5")
    for p in stopped:
        c.kill(p, signal.SIGSTOP, wait=False)
    try:
        r = g.put("unnoticed/new", os.urandom(3 << 20), timeout=120)
        t.api_error(r, 503, "unavailable", "PUT with 3 of 6 nodes stopped")
        t.api_error(g.get("unnoticed/new"), 404, "not_found", "the refused PUT left nothing")
    finally:
        for p in stopped:
            c.kill(p, signal.SIGCONT, wait=False)
        # The gateway trusts a node again a little after it answers again.
        deadline = time.monotonic() + 30
        while True:
            r = g.put("unnoticed/after", b"y" * (3 << 20), timeout=120)
            if r.status != 503 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        time.sleep(2.5)  # every node past the gateway's 2 s suspicion window
    t.status(r, 201, "PUT once the stopped nodes run again")
    st.log("503 with unnoticed dead nodes ok")


def check_unavailable(t, c, g):
    # Store a striped object while everything is up, then take 3 of 6 nodes away:
    # fewer than k=4 holders remain, so neither a new PUT nor that GET can be served.
    big = os.urandom(3 << 20)
    t.status(g.put("avail/big", big), 201, "PUT before the kill")
    for i in (0, 2, 4):
        c.kill("fnstore-%d" % i)
    t0 = time.monotonic()
    r = g.put("avail/new", os.urandom(3 << 20), timeout=120)
    t.api_error(r, 503, "unavailable", "PUT with 3 of 6 nodes down")
    st.log("503 on PUT after %.1fs" % (time.monotonic() - t0))
    r = g.get("avail/big", timeout=120)
    if r.status == 200:
        # Legitimate only if served whole from the gateway's persistent buffer.
        t.eq(st.sha256(r.body), st.sha256(big), "GET with 3 of 6 nodes down answered 200")
    else:
        t.api_error(r, 503, "unavailable", "GET of a striped object with 3 of 6 nodes down")
    t.api_error(g.get("avail/new"), 404, "not_found", "the refused PUT left nothing")
    c.start()
    c.wait_nodes_up()
    # The gateway reconnects to restarted nodes on its own schedule; a client retries
    # a 503 meanwhile.
    r = st.get_retrying_503(g, "avail/big", 15, "GET after the nodes are back")
    t.status(r, 200, "GET after the nodes are back (503s retried for 15s)")
    t.eq(st.sha256(r.body), st.sha256(big), "GET after the nodes are back: content")
    st.log("503 ok")


def check_429(t, c):
    """Only when the node can be throttled hard enough to fill a tenant's queue."""
    try:
        out = subprocess.run([t.binary("shoal-fnstore"), "--help"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=10).stdout.decode()
    except Exception:  # noqa: BLE001
        return
    if "--queue-limit" not in out or "--cap-ops" not in out:
        st.log("skipping 429: shoal-fnstore has no --queue-limit/--cap-ops")
        return
    c2 = t.cluster(nodes=6, fnstore_args="--queue-limit 4 --cap-ops 20", name="slow")
    ten = c2.create_tenant("flood")
    g = c2.gw(ten)
    results = []
    lock = threading.Lock()

    def worker(n):
        for i in range(15):
            r = g.put("f/%d/%d" % (n, i), b"x" * 1000, timeout=120)
            with lock:
                results.append(r)

    ths = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    slow = [r for r in results if r.status == 429]
    other = [r for r in results if r.status not in (201, 429)]
    t.check(not other, "flood: unexpected statuses %r" % other[:3])
    t.check(slow, "flood of 240 PUTs at 20 ops/s with queue limit 4: no 429")
    t.api_error(slow[0], 429, "slow_down", "flood 429")
    ra = slow[0].header("Retry-After")
    t.check(ra is not None and ra.strip().isdigit(), "429 without a numeric Retry-After: %r" % ra)
    st.log("429 ok (%d of %d)" % (len(slow), len(results)))


def main(t):
    c = t.cluster(nodes=6, gateway_args="--max-object-size %d" % MAX_OBJ)
    ten = c.create_tenant("errs")
    g = c.gw(ten)
    t.section(check_keys, g)
    t.section(check_ranges, g)
    t.section(check_list_params, g)
    t.section(check_auth, c, g)
    t.section(check_not_found_and_method, g)
    t.section(check_length, c, g)
    t.section(check_413_before_body, g)
    t.section(check_413_expect, g)
    t.section(check_413_curl, g)
    t.section(check_request_ids, g)
    t.section(check_admin, c)
    t.section(check_unavailable_unnoticed, c, g)
    t.section(check_unavailable, c, g)
    c.stop()
    t.section(check_429, c)


if __name__ == "__main__":
    st.run(main, timeout=560)
