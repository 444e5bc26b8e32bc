#!/usr/bin/python3
"""unit.experiments.ablation: the pure parts of ablation.py against hand
computed answers.

- schedule_value: numbers, burst (before its start, in and out of a burst)
  and sine (min at phase 0, max half a period later, phase shifts it).
- per_second_mmr / per_bin_mmr: MMR of GET/s per weight over the tenants
  counted, bins only when whole.
- each_adds: the changes between configurations, skipping missing ones.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ablation as ab  # noqa: E402
from test_shoalexp import check  # noqa: E402  (counts in test_shoalexp.checks)
import test_shoalexp  # noqa: E402


def near(a, b, tol=1e-9):
    return abs(a - b) <= tol


def test_schedule():
    check(ab.schedule_value(16, 3) == 16, "a number is constant")
    b = "burst:base=4/peak=64/every=30s/for=10s/at=20s"
    check(ab.schedule_value(b, 19.9) == 4, "before at= the base")
    check(ab.schedule_value(b, 20) == 64 and ab.schedule_value(b, 29.9) == 64, "in the burst")
    check(ab.schedule_value(b, 30) == 4 and ab.schedule_value(b, 49.9) == 4, "between bursts")
    check(ab.schedule_value(b, 50) == 64, "the next burst")
    s = "sine:min=4/max=64/period=40s"
    check(near(ab.schedule_value(s, 0), 4), "sine starts at min")
    check(near(ab.schedule_value(s, 20), 64), "sine peaks half a period later")
    check(near(ab.schedule_value(s, 10), 34), "sine is half way a quarter period in")
    check(near(ab.schedule_value(s + "/phase=0.5", 0), 64), "phase 0.5 starts at max")
    try:
        ab.schedule_value("ramp:0s=1/10s=2", 1)
        check(False, "an unknown schedule raises")
    except ValueError:
        check(True, "an unknown schedule raises")


def row(s, t, v):
    return {"second": float(s), "tenant": t, "ops_per_s": float(v)}


def test_mmr():
    series = [row(0, "a", 100), row(0, "b", 50), row(0, "c", 10),
              row(1, "a", 100), row(1, "b", 100), row(1, "c", 10)]
    w = {"a": 1, "b": 1, "c": 0.1}
    pts = ab.per_second_mmr(series, w)
    check(pts == [(0.0, 0.5), (1.0, 1.0)], "per second, by weight: %r" % pts)
    pts = ab.per_second_mmr(series, w, lambda n, s: n != "b")
    check(pts == [(0.0, 1.0), (1.0, 1.0)], "tenants not counted are left out: %r" % pts)
    series += [row(2, "a", 100), row(2, "b", 100)]
    pts = ab.per_bin_mmr(series, w, lambda n, s: True, 2)
    # Bin 0: a 100, b 75, c 100 (10 / 0.1); bin 2 has one second only: left out.
    check(len(pts) == 1 and pts[0][0] == 0 and near(pts[0][1], 0.75), "bins: %r" % pts)


def test_adds():
    med = {("none", "even"): 0.5, ("FQ", "even"): 0.6, ("none", "2x-vs-1x"): 0.4,
           ("FQ", "2x-vs-1x"): 0.3}
    s = ab.each_adds(med)
    check("none -> FQ +0.100" in s and "none -> FQ -0.100" in s, s)
    check("PP+FQ" not in s, "missing configurations are skipped: " + s)


test_schedule()
test_mmr()
test_adds()
print("ok: %d checks" % test_shoalexp.checks)
