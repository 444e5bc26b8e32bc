#!/usr/bin/python3
"""integ.demo: deploy/local/run-demo (what `make run` starts) works as printed.

Runs run-demo in a tempdir on a free port offset, waits for its banner, runs the
three curl lines it prints, checks `shoal-cluster status`, then sends Ctrl-C
(SIGINT) and checks that every process is gone. A second run on the same
directory keeps the data and prints a fresh key (rotation).
"""
import os
import re
import shlex
import signal
import subprocess
import threading

import shoaltest as st


def run_demo(t, d, offset):
    script = os.path.join(t.src, "deploy", "local", "run-demo")
    p = subprocess.Popen([script, "--build", t.build, "--dir", d, "--port-offset", str(offset)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    out = []
    done = threading.Event()

    def reader():
        for line in p.stdout:
            out.append(line.decode(errors="replace"))
            if "Ctrl-C" in out[-1]:
                done.set()
        done.set()

    threading.Thread(target=reader, daemon=True).start()
    if not done.wait(120) or p.poll() is not None:
        p.kill()
        raise st.TestFailure("run-demo did not come up:\n" + "".join(out))
    return p, "".join(out)


def stop_demo(t, p, d, what):
    os.killpg(p.pid, signal.SIGINT)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        raise st.TestFailure("%s: run-demo did not exit after Ctrl-C" % what)
    pids = os.path.join(d, "pids")
    left = [f for f in os.listdir(pids)] if os.path.isdir(pids) else []
    t.eq(left, [], "%s: pid files left after Ctrl-C" % what)


def main(t):
    c = st.Cluster(t, nodes=6, name="demo")  # only for the port choice and cleanup
    t.clusters.append(c)
    c.offset = c._pick_offset()
    c.started = True
    d = c.dir
    p, out = run_demo(t, d, c.offset)
    try:
        m = re.search(r"key \(shown once\):\s*\n\s*(\S+)", out)
        t.check(m, "run-demo printed no key:\n" + out)
        key = m.group(1)
        curls = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("curl ")]
        t.eq(len(curls), 3, "curl lines printed")
        res = []
        for ln in curls:
            r = subprocess.run(shlex.split(ln), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=60)
            t.eq(r.returncode, 0, "%s: exit code (%r)" % (ln, r.stderr))
            res.append(r.stdout)
        t.eq(res[1], b"hello shoal", "the printed GET returns what the printed PUT stored")
        t.check(b"hello.txt" in res[2], "the printed LIST shows the object: %r" % res[2])
        rc, st_out = c.status()
        t.eq(rc, 0, "shoal-cluster status while run-demo runs:\n%s" % st_out)
        t.check(os.path.isfile(os.path.join(d, "logs", "gateway.log")), "no gateway log")
        t.check(d in out, "run-demo does not say where the logs are")
    finally:
        stop_demo(t, p, d, "first run")
    st.log("first run ok")

    # Second run on the same directory: data kept, the key rotated.
    p, out = run_demo(t, d, c.offset)
    try:
        t.check("rotated" in out, "second run did not rotate the key:\n" + out)
        key2 = re.search(r"key \(shown once\):\s*\n\s*(\S+)", out).group(1)
        t.check(key2 != key, "second run printed the same key")
        g = c.gw(key2)
        c.wait_tenant_known(key2)
        t.eq(g.get("hello.txt").body, b"hello shoal", "data kept across run-demo restarts")
        t.api_error(c.gw(key).get("hello.txt"), 401, "unauthorized", "the old key is dead")
    finally:
        stop_demo(t, p, d, "second run")
    st.log("second run ok")


if __name__ == "__main__":
    st.run(main, timeout=140)
