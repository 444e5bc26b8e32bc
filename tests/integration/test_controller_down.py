#!/usr/bin/python3
"""integ.controller_down: the data path keeps serving without the controller.

kill -9 the controller; GET/PUT/DELETE/LIST keep working for an existing tenant;
restart the gateway while the controller is still down (it must serve from the
state it cached); restart a node too; then bring the controller back and check
that it kept its tenants and that new tenants work again.
"""
import random
import time

import shoaltest as st


def main(t):
    c = t.cluster(nodes=6)
    ten = c.create_tenant("ctl-down")
    other = c.create_tenant("ctl-down-2")
    g, g2 = c.gw(ten), c.gw(other)
    rng = random.Random(5)
    objs = {}
    for i in range(10):
        data = rng.randbytes(rng.choice([10, 5000, 300 << 10, 2 << 20]))
        t.status(g.put("before/%d" % i, data), 201, "PUT before/%d" % i)
        objs["before/%d" % i] = st.sha256(data)
    t.status(g2.put("x", b"tenant two"), 201, "tenant 2 PUT")

    def check_all(what):
        for k, want in sorted(objs.items()):
            r = g.get(k)
            t.status(r, 200, "%s: GET %s" % (what, k))
            t.eq(st.sha256(r.body), want, "%s: GET %s content" % (what, k))
        t.eq(g2.get("x").body, b"tenant two", "%s: tenant 2 GET" % what)

    c.kill("controller")
    # Give the gateway and nodes time to notice (their polls/heartbeats fail).
    time.sleep(3)
    check_all("controller down")
    for i in range(10):
        data = rng.randbytes(rng.choice([10, 5000, 300 << 10, 2 << 20]))
        t.status(g.put("during/%d" % i, data), 201, "PUT during/%d with the controller down" % i)
        objs["during/%d" % i] = st.sha256(data)
    t.status(g.delete("during/9"), 204, "DELETE with the controller down")
    del objs["during/9"]
    t.eq([o["key"] for o in g.list_all("during/")], ["during/%d" % i for i in range(9)],
         "LIST with the controller down")
    # Unknown keys stay unknown.
    r = st.http_request(c.gw_port, "GET", "/v1/objects/before/0",
                        headers={"Authorization": "Bearer not-a-key"})
    t.eq(r.status, 401, "a bad key with the controller down")
    st.log("serving with the controller down")

    # Restart the gateway while the controller is down: it serves from its cache.
    c.stop(only=["gateway"])
    c.start(only=["gateway"])
    check_all("gateway restarted, controller down")
    t.status(g.put("during/gw-restarted", b"ok"), 201, "PUT after the gateway restart")
    objs["during/gw-restarted"] = st.sha256(b"ok")
    # Once more, harder: kill -9, so only what the gateway made durable on its own
    # (its cached state and metadata) is there for the restart.
    c.kill("gateway")
    c.start(only=["gateway"])
    check_all("gateway killed -9 and restarted, controller down")
    # And a node restart (kill -9) while the controller is down.
    c.kill("fnstore-3")
    c.start(only=["fnstore-3"])
    check_all("node 3 restarted, controller down")
    st.log("gateway and node restarts without the controller ok")

    # The controller comes back with its state.
    c.start(only=["controller"])
    c.wait_nodes_up()
    p = c.shoalctl("--json", "tenant", "list")
    import json
    names = {x["name"] for x in json.loads(p.stdout.decode())["tenants"]}
    t.check({"ctl-down", "ctl-down-2"} <= names, "controller lost tenants: %r" % names)
    ten3 = c.create_tenant("after-ctl")
    g3 = c.gw(ten3)
    t.status(g3.put("y", b"new tenant"), 201, "new tenant PUT after the controller restart")
    t.eq(g3.get("y").body, b"new tenant", "new tenant GET")
    check_all("controller back")
    st.log("controller back ok")


if __name__ == "__main__":
    st.run(main, timeout=300)
