#!/bin/sh
# integ.bench.nginx: shoal-bench --url against a throwaway nginx serving 1 KiB.
# Asserts ops > 0, no errors, and that --json and --series parse.
set -u
BENCH=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/nginx_util.sh"
if [ ! -x "$NGINX_BIN" ]; then
    echo "nginx missing at $NGINX_BIN: run deploy/install-deps.sh" >&2
    exit 1
fi
tmp=$(mktemp -d /tmp/shoal-bench-integ.XXXXXX)
cleanup() { nginx_stop; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

nginx_start "$tmp" || exit 1
head -c 1024 /dev/urandom > "$tmp/www/1k"
chmod 644 "$tmp/www/1k"

"$BENCH" --url "http://127.0.0.1:$NGINX_PORT/1k" --conc 16 --threads 2 --warmup 0.5 \
    --duration 2 --json --series "$tmp/series.csv" > "$tmp/out.json" || { echo "shoal-bench failed"; exit 1; }
# A missing path: every request is a 404 error, counted by status.
"$BENCH" --url "http://127.0.0.1:$NGINX_PORT/missing" --conc 4 --threads 1 --warmup 0 \
    --duration 0.5 --json > "$tmp/404.json" || { echo "shoal-bench (404) failed"; exit 1; }
# Open loop at a modest rate.
"$BENCH" --url "http://127.0.0.1:$NGINX_PORT/1k" --rate 2000 --conns 8 --threads 2 --warmup 0 \
    --duration 1 --json > "$tmp/open.json" || { echo "shoal-bench (open loop) failed"; exit 1; }

/usr/bin/python3 - "$tmp" <<'PY'
import csv, json, sys
d = sys.argv[1]
out = json.load(open(d + "/out.json"))
t = out["tenants"][0]
print("closed loop: ops/s=%.0f p50=%.0fus p99=%.0fus errors=%d" %
      (t["ops_per_s"], t["latency_us"]["p50"], t["latency_us"]["p99"], t["errors"]))
assert out["mode"] == "url"
assert t["ops"] > 0, t
assert t["errors"] == 0, t
assert t["status"].get("200", 0) == t["ops"], t
assert abs(t["bytes"] - 1024 * t["ops"]) == 0, t
assert 0 < t["latency_us"]["p50"] <= t["latency_us"]["p99"] <= t["latency_us"]["max"], t
rows = list(csv.DictReader(open(d + "/series.csv")))
assert rows and sum(int(r["ops_per_s"]) for r in rows if r["phase"] == "run") >= t["ops"], rows[:3]
e = json.load(open(d + "/404.json"))["tenants"][0]
assert e["ops"] == 0 and e["errors"] > 0 and e["status"].get("404") == e["errors"], e
o = json.load(open(d + "/open.json"))["tenants"][0]
print("open loop 2000/s: ops/s=%.0f p99=%.0fus errors=%d" % (o["ops_per_s"], o["latency_us"]["p99"], o["errors"]))
assert o["loop"] == "open" and o["errors"] == 0, o
assert 1500 < o["ops_per_s"] < 2500, o
PY
rc=$?
[ $rc -eq 0 ] && echo "integ.bench.nginx: ok"
exit $rc
