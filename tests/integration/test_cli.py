#!/usr/bin/python3
"""integ.cli: the command-line contract of every binary (API.md).

--help: usage with every flag, exit 0. --version: exit 0, prints the version.
Unknown flag: exit 2 and exactly one line on stderr. Also --config with a file,
shoalctl's exit codes (2 usage, 3 controller unreachable) and its environment.
"""
import json
import os
import re
import subprocess

import shoaltest as st

FLAGS = {
    "shoal-controller": ["--listen", "--data-dir", "--admin-token-file", "--partitions",
                         "--ec-k", "--ec-m", "--node-timeout-ms", "--log-level", "--config",
                         "--help", "--version"],
    "shoal-fnstore": ["--id", "--listen", "--metrics-listen", "--controller",
                      "--admin-token-file", "--cos", "--data-dir", "--capacity", "--log-level",
                      "--config", "--help", "--version"],
    "shoal-gateway": ["--listen", "--s3-listen", "--s3-domain", "--controller",
                      "--admin-token-file", "--data-dir",
                      "--max-object-size", "--small-threshold", "--log-level", "--config",
                      "--help", "--version"],
    "shoal-ecbench": ["--k", "--m", "--size", "--seconds", "--json", "--config", "--help",
                      "--version"],
    "shoalctl": ["--controller", "--token-file", "--json", "--config", "tenant", "node", "placement",
                 "fairness", "create", "list", "show", "set-weight", "rotate-key", "delete"],
}


def run(cmd, timeout=20, env=None):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                          env=env)


def main(t):
    bins = list(FLAGS)
    try:
        t.binary("shoal-bench")
        bins.append("shoal-bench")
    except st.TestFailure:
        pass
    for name in bins:
        path = t.binary(name)
        p = run([path, "--help"])
        t.eq(p.returncode, 0, "%s --help exit code (stderr %r)" % (name, p.stderr[-300:]))
        out = p.stdout.decode(errors="replace")
        t.check(re.search(r"usage", out, re.I), "%s --help prints no usage on stdout: %r" % (
            name, out[:300]))
        for f in FLAGS.get(name, []):
            t.check(re.search(r"(^|[\s,\[|])" + re.escape(f) + r"\b", out),
                    "%s --help does not mention %s" % (name, f))
        p = run([path, "--version"])
        t.eq(p.returncode, 0, "%s --version exit code" % name)
        t.check(re.search(r"\d+\.\d+\.\d+", p.stdout.decode(errors="replace")),
                "%s --version prints no version: %r" % (name, p.stdout[:200]))
        for bad in (["--no-such-flag"], ["--no-such-flag=1"], ["-Z"]):
            p = run([path] + bad)
            t.eq(p.returncode, 2, "%s %s exit code (stderr %r)" % (name, bad[0], p.stderr[:300]))
            err = p.stderr.decode(errors="replace")
            lines = [ln for ln in err.split("\n") if ln.strip()]
            t.eq(len(lines), 1, "%s %s: lines on stderr (%r)" % (name, bad[0], err[:500]))
            t.check(err.endswith("\n"), "%s %s: stderr line not terminated" % (name, bad[0]))
        st.log("%s ok" % name)

    daemons = ["shoal-controller", "shoal-fnstore", "shoal-gateway"]
    for name in daemons:
        path = t.binary(name)
        # A flag that needs a value, given without one.
        p = run([path, "--listen"])
        t.eq(p.returncode, 2, "%s --listen without a value: exit code (%r)" % (name,
                                                                                 p.stderr[:300]))
        # A value out of range or malformed.
        p = run([path, "--log-level", "loud"])
        t.eq(p.returncode, 2, "%s --log-level loud: exit code (%r)" % (name, p.stderr[:300]))
        # --config with a missing file.
        p = run([path, "--config", os.path.join(t.tmp, "missing.conf")])
        t.check(p.returncode != 0, "%s --config missing-file: exit 0" % name)
        t.check(p.stderr.strip(), "%s --config missing-file: nothing on stderr" % name)
        # An unknown key in a config file is refused like an unknown flag.
        cfg = os.path.join(t.tmp, name + ".conf")
        with open(cfg, "w") as f:
            f.write("no-such-option = 1\n")
        p = run([path, "--config", cfg])
        t.check(p.returncode != 0, "%s --config with an unknown key: exit 0" % name)

    # shoalctl exit codes and environment.
    ctl = t.binary("shoalctl")
    tok = os.path.join(t.tmp, "token")
    with open(tok, "w") as f:
        f.write("x" * 32 + "\n")
    os.chmod(tok, 0o600)
    dead = "http://127.0.0.1:%d" % st.free_port()
    p = run([ctl, "--controller", dead, "--token-file", tok, "tenant", "list"])
    t.eq(p.returncode, 3, "shoalctl against a dead controller: exit code (%r)" % p.stderr[:300])
    t.check(p.stderr.strip(), "shoalctl unreachable: nothing on stderr")
    env = dict(os.environ, SHOAL_CONTROLLER=dead, SHOAL_ADMIN_TOKEN_FILE=tok)
    p = run([ctl, "tenant", "list"], env=env)
    t.eq(p.returncode, 3, "shoalctl with SHOAL_CONTROLLER of a dead controller: exit code")
    for bad in (["tenant"], ["tenant", "frobnicate"], ["tenant", "create"], ["nothing"],
                ["tenant", "set-weight", "a"], ["node", "remove"], ["node", "remove", "1", "2"],
                ["node", "list", "--wait", "3"], ["node", "remove", "1", "--wait", "soon"],
                ["node", "remove", "1", "--cancel", "--wait", "5"], ["node", "list", "--cancel"],
                ["tenant", "list", "--cancel"], []):
        p = run([ctl, "--controller", dead, "--token-file", tok] + bad)
        t.eq(p.returncode, 2, "shoalctl %s: exit code (%r)" % (" ".join(bad) or "(none)",
                                                               p.stderr[:300]))
    # shoalctl --config: the file overrides the environment, a flag overrides the file.
    cfg = os.path.join(t.tmp, "shoalctl.conf")
    with open(cfg, "w") as f:
        f.write("# admin CLI\ncontroller = %s\ntoken-file = %s\n" % (dead, tok))
    p = run([ctl, "--config", cfg, "tenant", "list"],
            env=dict(os.environ, SHOAL_CONTROLLER="http://127.0.0.1:1"))
    t.eq(p.returncode, 3, "shoalctl --config: exit code (%r)" % p.stderr[:300])
    t.check(dead.encode() in p.stderr, "shoalctl --config: controller from the file not used "
            "(%r)" % p.stderr[:300])
    p = run([ctl, "--config", cfg, "--controller", "http://127.0.0.1:1", "tenant", "list"])
    t.check(b"127.0.0.1:1:" in p.stderr or b"127.0.0.1:1 " in p.stderr,
            "shoalctl: --controller does not override the file (%r)" % p.stderr[:300])
    with open(cfg, "w") as f:
        f.write("no-such-setting = 1\n")
    p = run([ctl, "--config", cfg, "tenant", "list"])
    t.eq(p.returncode, 2, "shoalctl --config with an unknown key: exit code")
    p = run([ctl, "--config", os.path.join(t.tmp, "missing.conf"), "tenant", "list"])
    t.eq(p.returncode, 2, "shoalctl --config missing-file: exit code")
    st.log("shoalctl exit codes ok")

    # shoal-ecbench --config: the file sets the code, size and output; a flag overrides it.
    ecb = t.binary("shoal-ecbench")
    cfg = os.path.join(t.tmp, "ecbench.conf")
    with open(cfg, "w") as f:
        f.write("# one small code\nk = 3\nm = 2\nsize = 64KiB\nseconds = 0.01\njson = true\n")
    for extra, size in (([], 65536), (["--size", "4096"], 4096)):
        p = run([ecb, "--config", cfg] + extra)
        t.eq(p.returncode, 0, "shoal-ecbench --config %s: exit code (%r)" % (extra, p.stderr[:300]))
        rows = [json.loads(ln) for ln in p.stdout.decode().splitlines()]
        t.eq([(r["k"], r["m"], r["size"]) for r in rows], [(3, 2, size)],
             "shoal-ecbench --config %s: rows" % extra)
        t.check(rows[0]["encode_mb_s"] > 0, "shoal-ecbench --config: no encode rate")
    for bad in ("k = 0\nm = 2\n", "k = 99\nm = 2\n", "size = big\n"):
        with open(cfg, "w") as f:
            f.write(bad)
        p = run([ecb, "--config", cfg])
        t.eq(p.returncode, 2, "shoal-ecbench --config with %r: exit code" % bad)
    st.log("shoal-ecbench --config ok")

    # A real process: --config sets the listen address; a flag overrides the file.
    path = t.binary("shoal-controller")
    port1, port2 = st.free_port(), st.free_port()
    d = os.path.join(t.tmp, "ctl")
    os.mkdir(d)
    cfg = os.path.join(t.tmp, "ctl.conf")
    with open(cfg, "w") as f:
        f.write("# a comment\nlisten = 127.0.0.1:%d\ndata_dir = %s\nadmin_token_file = %s\n"
                % (port1, d, os.path.join(d, "token")))
    proc = subprocess.Popen([path, "--config", cfg, "--listen", "127.0.0.1:%d" % port2],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        st.wait_until(lambda: st.http_request(port2, "GET", "/healthz", timeout=2).status == 200,
                      20, "controller on the --listen port (the flag overrides the file)")
        tokpath = os.path.join(d, "token")
        t.check(os.path.exists(tokpath), "controller did not create the admin token file")
        mode = os.stat(tokpath).st_mode & 0o777
        t.eq(mode, 0o600, "admin token file mode")
        t.check(len(open(tokpath).read().strip()) >= 16, "admin token is short")
        proc.terminate()
        rc = proc.wait(timeout=20)
        t.eq(rc, 0, "controller exit code after SIGTERM")
        err = proc.stderr.read().decode(errors="replace")
        lines = [ln for ln in err.split("\n") if ln.strip()]
        t.check(lines, "controller logged nothing on stderr")
        # ts level component msg key=value...
        for ln in lines:
            t.check(re.match(r"^\S+ (debug|info|notice|warn|warning|error|fatal|crit) \S+ ", ln,
                             re.I), "log line not 'ts level component msg ...': %r" % ln)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    st.log("--config and SIGTERM ok")


if __name__ == "__main__":
    st.run(main, timeout=120)
