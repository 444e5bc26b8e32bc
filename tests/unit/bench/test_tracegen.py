#!/usr/bin/python3
"""unit.bench.tracegen: bench/tracegen writes a trace whose working set, measured
here from the CSV alone (distinct bytes per tenant in a sliding window), follows
the diurnal curve it asked for: realised swing within 20 % of --swing, every
second within 10 % of the peak from the target, and the side file's numbers the
same as ours. Also: the read mix, every GET after its key's PUT, sizes per key
fixed and in range, mostly large bytes, the same seed giving the same trace,
and bad flags refused.

Usage: test_tracegen.py PATH/TO/tracegen
"""
import bisect
import csv
import os
import subprocess
import sys
import tempfile

TRACEGEN = sys.argv[1]
KiB, MiB = 1 << 10, 1 << 20


def gen(tmp, *args, name="t"):
    out, wss = os.path.join(tmp, name + ".csv"), os.path.join(tmp, name + ".wss")
    p = subprocess.run([TRACEGEN, "--out", out, "--wss", wss, *args], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return out, wss, p.stderr


def measured(rows, window, times):
    """{tenant: [distinct bytes touched in (t - window, t] for t in times]}."""
    out = {}
    for ten in sorted({r["tenant"] for r in rows}):
        reqs = [(float(r["t"]), r["key"], int(r["size"])) for r in rows if r["tenant"] == ten]
        ts = [r[0] for r in reqs]
        curve = []
        for t in times:
            lo, hi = bisect.bisect_right(ts, t - window), bisect.bisect_right(ts, t)
            curve.append(sum({k: s for _, k, s in reqs[lo:hi]}.values()))
        out[ten] = curve
    return out


def check_trace(path, wss_path, swing, window, read, small, large, names):
    rows = list(csv.DictReader(open(path)))
    assert rows and list(rows[0].keys()) == ["t", "tenant", "op", "key", "size"], rows[:1]
    assert {r["tenant"] for r in rows} == set(names), {r["tenant"] for r in rows}
    last = 0.0
    written, sizes = {}, {}
    for r in rows:
        t = float(r["t"])
        assert t >= last, "trace not sorted at %r" % r
        last = t
        k = (r["tenant"], r["key"])
        size = int(r["size"])
        assert sizes.setdefault(k, size) == size, "size of %r changed" % (k,)
        assert small[0] <= size <= large[1], r
        if r["op"] == "PUT":
            written.setdefault(k, t)
        else:
            assert r["op"] == "GET", r
            assert k in written and written[k] < t, "GET before its PUT: %r" % r
    gets = sum(r["op"] == "GET" for r in rows)
    assert abs(gets / len(rows) - read) < 0.01, (gets, len(rows))
    big = sum(s for s in sizes.values() if s >= large[0])
    assert big > 0.6 * sum(sizes.values()), (big, sum(sizes.values()))

    side = list(csv.DictReader(open(wss_path)))
    times = sorted({float(r["t"]) for r in side})
    ours = measured(rows, window, times)
    for ten in names:
        mine = [r for r in side if r["tenant"] == ten]
        target = [int(r["wss_target"]) for r in mine]
        assert [int(r["wss_trace"]) for r in mine] == ours[ten], "side file disagrees (%s)" % ten
        peak = max(target)
        assert abs(peak / min(target) - swing) < 0.01 * swing, (peak, min(target))
        full = [(t, w, g) for t, w, g in zip(times, target, ours[ten]) if t >= window]
        realised = max(g for _, _, g in full) / min(g for _, _, g in full)
        # The curve, not only its ends: every second within 10 % of the peak's scale.
        worst = max(abs(g - w) for _, w, g in full) / peak
        print("%s: swing asked %g realised %.1f, peak %d, trough %d, worst stray %.3f of peak" % (
            ten, swing, realised, max(g for _, _, g in full), min(g for _, _, g in full), worst))
        assert abs(realised - swing) <= 0.2 * swing, (realised, swing)
        assert worst < 0.10, "measured working set strays %.2f of the peak" % worst
    if len(names) > 1:
        total = [r for r in side if r["tenant"] == "*"]
        assert len(total) == len(times)
        assert all(int(r["wss_trace"]) == sum(ours[n][i] for n in names)
                   for i, r in enumerate(total))
    return rows


def main():
    tmp = tempfile.mkdtemp(prefix="tracegen-test.")
    try:
        # Two tenants half a day apart (spread evenly over a whole period), a 50x swing.
        args = ["--names", "a,b-2", "--duration", "120", "--window", "4", "--peak-wss", "64MiB",
                "--swing", "50", "--large", "256KiB-2MiB", "--small", "1KiB-32KiB",
                "--read", "0.8", "--phase-spread", "1", "--seed", "11"]
        path, wss, err = gen(tmp, *args)
        rows = check_trace(path, wss, 50, 4, 0.8, (KiB, 32 * KiB), (256 * KiB, 2 * MiB),
                           ["a", "b-2"])
        assert "swing=" in err and "tenant=a" in err and "tenant=b-2" in err, err
        # Out of phase: when a peaks, b-2 is near its trough.
        side = list(csv.DictReader(open(wss)))
        at = {(r["t"], r["tenant"]): int(r["wss_target"]) for r in side}
        assert at[("60", "a")] > 40 * at[("60", "b-2")], (at[("60", "a")], at[("60", "b-2")])

        # The paper's swing, with the defaults' object sizes scaled down, two days.
        path2, wss2, _ = gen(tmp, "--duration", "200", "--period", "100", "--window", "2",
                             "--peak-wss", "96MiB", "--large", "512KiB-4MiB", "--seed", "5",
                             name="u")
        check_trace(path2, wss2, 200, 2, 0.9, (KiB, 64 * KiB), (512 * KiB, 4 * MiB), ["reg1"])

        # Same seed, same trace; another seed, another trace.
        again, _, _ = gen(tmp, *args, name="again")
        assert open(again).read() == open(path).read()
        other, _, _ = gen(tmp, *args[:-1], "12", name="other")
        assert open(other).read() != open(path).read()
        assert len(rows) > 1000, len(rows)

        for bad in (["--swing", "0.5"], ["--large", "2MiB-1MiB"], ["--names", "A"],
                    ["--read", "1"], ["--duration", "10", "--window", "20"], ["--bogus"]):
            p = subprocess.run([TRACEGEN, *bad], capture_output=True, text=True, timeout=60)
            assert p.returncode == 2 and "error" in p.stderr, (bad, p.returncode, p.stderr)
    finally:
        subprocess.run(["rm", "-rf", tmp])
    print("unit.bench.tracegen: ok")


if __name__ == "__main__":
    main()
