#!/usr/bin/python3
"""integ.fault_gateway: kill -9 the gateway.

1. PUT many objects one after another, kill -9 the gateway right after the last
   201, restart it: every acknowledged object reads back with the right checksum.
2. Kill -9 it again in the middle of concurrent PUTs (and overwrites): after the
   restart every acknowledged version is there; a PUT that got no answer left
   either nothing, or the old version, or the new one - whole, never a mix.
"""
import random
import signal
import threading
import time

import shoaltest as st


def main(t):
    c = t.cluster(nodes=6)
    ten = c.create_tenant("gwfault")
    g = c.gw(ten)
    rng = random.Random(21)

    # --- phase 1: sequential PUTs, kill right after the last 201 --------------------
    acked = {}
    sizes = [0, 1, 100, 4096, 65536, 200 << 10, 1 << 20, 3 << 20]
    for i in range(40):
        size = sizes[i % len(sizes)] if i < len(sizes) else rng.randrange(1, 1 << 20)
        data = rng.randbytes(size)
        key = "seq/%03d" % i
        r = g.put(key, data)
        t.status(r, 201, "PUT %s" % key)
        acked[key] = st.sha256(data)
    # Overwrites just before the kill: the newest version must win.
    for i in range(5):
        data = rng.randbytes(rng.randrange(1, 2 << 20))
        key = "seq/%03d" % i
        t.status(g.put(key, data), 201, "overwrite %s" % key)
        acked[key] = st.sha256(data)
    c.kill("gateway")
    c.start()
    for key, want in sorted(acked.items()):
        r = g.get(key)
        t.status(r, 200, "GET %s after the gateway restart" % key)
        t.eq(st.sha256(r.body), want, "GET %s after the gateway restart: content" % key)
    listed = {o["key"] for o in g.list_all("seq/")}
    t.eq(listed, set(acked), "LIST after the gateway restart")
    st.log("phase 1 ok: %d objects survived kill -9 of the gateway" % len(acked))

    # --- phase 2: kill -9 in the middle of concurrent PUTs ------------------------
    lock = threading.Lock()
    versions = {}  # key -> list of sha256 of PUTs sent (any may have landed)
    acked2 = {}  # key -> sha256 of the last acknowledged PUT
    inflight = {}  # key -> sha256 of the PUT in flight when the gateway died
    stop = threading.Event()
    errors = []

    def writer(n):
        wr = random.Random(100 + n)
        i = 0
        while not stop.is_set():
            key = "conc/w%d/%03d" % (n, i if wr.random() < 0.7 or i == 0 else wr.randrange(i))
            i += 1
            data = wr.randbytes(wr.randrange(1, 1500 << 10))
            h = st.sha256(data)
            with lock:
                versions.setdefault(key, []).append(h)
                inflight[(n, key)] = h
            try:
                r = g.put(key, data, timeout=60)
            except Exception:  # noqa: BLE001 - the gateway died under us
                return
            with lock:
                inflight.pop((n, key), None)
                if r.status == 201:
                    acked2[key] = h
                else:
                    errors.append("PUT %s -> %r" % (key, r))
                    return

    ths = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(4)]
    for th in ths:
        th.start()
    st.wait_until(lambda: len(acked2) >= 60, 120, "60 acknowledged concurrent PUTs")
    c.kill("gateway")
    stop.set()
    for th in ths:
        th.join(timeout=90)
    t.check(not errors, "PUTs failed before the kill: %s" % errors[:5])
    c.start()
    st.log("phase 2: %d keys acknowledged, %d PUTs in flight at the kill" % (
        len(acked2), len(inflight)))
    bad = []
    inflight_keys = {k for (_, k) in inflight}
    for key, hs in sorted(versions.items()):
        r = g.get(key)
        if key in acked2:
            # The newest acknowledged version, or the one in flight after it.
            ok = {acked2[key]}
            if key in inflight_keys:
                ok |= {h for (n, k), h in inflight.items() if k == key}
            if r.status != 200:
                bad.append("acknowledged %s -> %r" % (key, r))
            elif st.sha256(r.body) not in ok:
                bad.append("acknowledged %s: content is not the last acknowledged version "
                           "(%d bytes)" % (key, len(r.body)))
        else:
            # Never acknowledged: absent, or some whole version that was sent.
            if r.status == 404:
                continue
            if r.status != 200 or st.sha256(r.body) not in hs:
                bad.append("unacknowledged %s -> %r (not absent, not a whole version)" % (
                    key, r))
    t.check(not bad, "after kill -9 of the gateway mid-PUT:\n  " + "\n  ".join(bad[:10]))
    # The listing agrees with what GET says.
    listed = {o["key"] for o in g.list_all("conc/")}
    t.check(set(acked2) <= listed, "LIST lacks acknowledged keys: %r" % sorted(
        set(acked2) - listed)[:5])
    for key in listed - set(acked2):
        t.status(g.get(key), 200, "listed unacknowledged key %s is readable" % key)
    # And the gateway is fully usable again.
    t.status(g.put("after/restart", b"fine"), 201, "PUT after the restart")
    t.eq(g.get("after/restart").body, b"fine", "GET after the restart")
    st.log("phase 2 ok")

    # --- phase 3: SIGTERM with PUTs in flight: they finish, then it exits ---------
    import socket
    conns = []
    bodies = {}
    for i in range(4):
        data = rng.randbytes(3 << 20)
        key = "term/%d" % i
        bodies[key] = data
        s = socket.create_connection(("127.0.0.1", c.gw_port), timeout=60)
        s.sendall(("PUT /v1/objects/%s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Authorization: Bearer %s\r\nContent-Length: %d\r\n"
                   "Connection: close\r\n\r\n" % (key, g.key, len(data))).encode())
        s.sendall(data[:len(data) // 2])
        conns.append((key, s))
    time.sleep(0.3)  # let the gateway take the headers and the first half in
    c.kill("gateway", signal.SIGTERM, wait=False)
    time.sleep(0.3)
    for key, s in conns:
        data = bodies[key]
        try:
            s.sendall(data[len(data) // 2:])
            resp = b""
            while True:
                b = s.recv(65536)
                if not b:
                    break
                resp += b
        except OSError as e:
            raise st.TestFailure("PUT %s in flight at SIGTERM: %s (in-flight requests must "
                                 "finish)" % (key, e))
        finally:
            s.close()
        # A whole answer: 201, or a clean 503 refusal; never a cut connection.
        t.check(resp.startswith(b"HTTP/1.1 201") or resp.startswith(b"HTTP/1.1 503"),
                "PUT %s in flight at SIGTERM got %r" % (key, resp[:200]))
        if resp.startswith(b"HTTP/1.1 503"):
            st.log("PUT %s in flight at SIGTERM was refused with 503" % key)
            del bodies[key]
    st.wait_until(lambda: not c.alive("gateway"), 30, "the gateway to exit after SIGTERM")
    c.start()
    for key, data in sorted(bodies.items()):
        r = g.get(key)
        t.status(r, 200, "GET %s after the SIGTERM restart" % key)
        t.eq(st.sha256(r.body), st.sha256(data), "GET %s after the SIGTERM restart" % key)
    st.log("phase 3 ok")


if __name__ == "__main__":
    st.run(main, timeout=330)
