#!/usr/bin/python3
"""The floor under a PUT 1 KiB: what its parts cost on this machine, side by side.

    floor.py --build BUILD [--runs 3] [--duration 5] [--conc 64] [--out FILE.json]

Sides, alternated --runs times, medians, each a closed loop of --conc
connections writing 1 KiB values over 1000 keys:
  http        shoal-httpfloor: the gateway's HTTP layer answering 201 at once
  http+handoff  the same, answered from a second thread (as a PUT is)
  redis-aof   redis-server with appendfsync always, redis-benchmark SET
  shoal       the gateway and six nodes (deploy/local/shoal-cluster)
One warm-up run of each side comes first and is not counted (the keys then
exist, so every PUT measured replaces a version, as in run.py's put-1k).
For each: requests/s, and CPU per request (utime + stime from /proc) of the
server side (every process of it) and of the client, sampled after the
warm-up and at the end of the measured window. Used in docs/benchmarks.md
("What is left of a small PUT, and the bound").
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab  # noqa: E402
import run as perf  # noqa: E402


def cpu(pids):
    """utime + stime of pids, in seconds."""
    return sum(ab.cpu_seconds({pid: "nodes" for pid in pids}).values())


def measure(server_pids, client_cmd, warmup, duration):
    """Runs the client; CPU of both sides over [warmup, warmup + duration]."""
    p = subprocess.Popen(client_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(warmup)
    s0, c0, t0 = cpu(server_pids), cpu([p.pid]), time.monotonic()
    time.sleep(duration)
    s1, c1, t1 = cpu(server_pids), cpu([p.pid]), time.monotonic()
    out, err = p.communicate(timeout=duration * 4 + 120)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s" % (client_cmd[0], p.returncode, err[-2000:]))
    return out, (s1 - s0) / (t1 - t0), (c1 - c0) / (t1 - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--conc", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2, help="client threads")
    ap.add_argument("--out")
    args = ap.parse_args()
    # What run.py's Env expects of its arguments.
    args.tmp_root, args.cluster_args, args.warmup = None, [], 1
    args.nginx_workers, args.allow_errors, args.big_duration = 1, False, args.duration
    env = perf.Env(args)
    bench = env.bench
    floor = perf.find_bin(args.build, "shoal-httpfloor")
    results = {}
    try:
        servers = {}
        for name, extra in (("http", []), ("http+handoff", ["--handoff"])):
            port = perf.free_port()
            p = subprocess.Popen([floor, "--listen", "127.0.0.1:%d" % port] + extra,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            env.procs.append(p)
            perf.wait_port(port, p, "shoal-httpfloor")
            servers[name] = ([p.pid], "http://127.0.0.1:%d" % port, "x")
        redis_port = env.start_redis(durable=True)
        redis_pid = env.procs[-1].pid
        env.start_cluster()
        pids = []
        for f in os.listdir(os.path.join(env.cluster_dir, "pids")):
            with open(os.path.join(env.cluster_dir, "pids", f)) as fh:
                pids.append(int(fh.read().strip()))
        servers["shoal"] = (pids, env.gateway, env.key)

        def shoal_bench(name):
            spids, url, key = servers[name]
            spec = "name=perf,key=%s,conc=%d,keys=1000,size=1024,read=0,zipf=0" % (key, args.conc)
            cmd = [bench, "--threads", str(args.threads), "--warmup", "1", "--duration",
                   str(args.duration), "--json", "--log-level", "warn", "--gateway", url,
                   "--tenant", spec, "--prefix", "floor/"]
            out, s, c = measure(spids, cmd, 1.5, args.duration - 1)
            t = json.loads(out)["tenants"][0]
            if t["errors"]:
                raise RuntimeError("%s: shoal-bench errors %s" % (name, t["status"]))
            return t["ops_per_s"], s, c

        def redis():
            n = 1000000  # more than --duration needs: the client is stopped by then
            cmd = ["/usr/bin/redis-benchmark", "-h", "127.0.0.1", "-p", str(redis_port), "-t",
                   "set", "-d", "1024", "-c", str(args.conc), "-n", str(n), "-r", "1000", "-P",
                   "1", "--threads", str(args.threads), "--csv"]
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            time.sleep(1.5)
            s0, c0, t0 = cpu([redis_pid]), cpu([p.pid]), time.monotonic()
            d0 = redis_count()
            time.sleep(args.duration - 1)
            s1, c1, t1 = cpu([redis_pid]), cpu([p.pid]), time.monotonic()
            d1 = redis_count()
            p.kill()
            p.wait()
            return (d1 - d0) / (t1 - t0), (s1 - s0) / (t1 - t0), (c1 - c0) / (t1 - t0)

        def redis_count():
            out = subprocess.run(["/usr/bin/redis-cli", "-p", str(redis_port), "info", "stats"],
                                 capture_output=True, text=True, timeout=10).stdout
            for line in out.splitlines():
                if line.startswith("total_commands_processed:"):
                    return int(line.split(":")[1])
            raise RuntimeError("no total_commands_processed from redis-cli")

        sides = [("http", lambda: shoal_bench("http")),
                 ("http+handoff", lambda: shoal_bench("http+handoff")),
                 ("redis-aof", redis), ("shoal", lambda: shoal_bench("shoal"))]
        raw = {name: [] for name, _ in sides}
        for name, fn in sides:
            fn()  # warm-up, not counted: a fresh cluster's first PUTs create their keys
        for i in range(args.runs):
            for name, fn in sides:
                rate, s, c = fn()
                raw[name].append((rate, s, c))
                perf.log("run %d %-13s %8.0f req/s  server %5.1f us/req  client %5.1f us/req" %
                         (i + 1, name, rate, s / rate * 1e6, c / rate * 1e6))
        print("| side | requests/s | server CPU per request | client CPU per request |")
        print("| --- | --- | --- | --- |")
        for name, _ in sides:
            rate = statistics.median(r for r, _, _ in raw[name])
            s = statistics.median(s / r * 1e6 for r, s, _ in raw[name])
            c = statistics.median(c / r * 1e6 for r, _, c in raw[name])
            results[name] = {"ops_per_s": rate, "server_us": s, "client_us": c, "runs": raw[name]}
            print("| %s | %.0f | %.1f µs | %.1f µs |" % (name, rate, s, c))
    finally:
        env.stop()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
