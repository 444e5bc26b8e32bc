#!/usr/bin/python3
"""unit.experiments.shoalexp: the pure parts of the experiments' helper.

- replace_section: a section goes between its markers, a re-run replaces
  only its own, new ones land in name order after the others, or at the end
  of the anchor heading's section, and text around them is kept.
- metric / by_label over shoaltest.parse_metrics's result, with and without
  labels; the sampler's RS windows from the gateway's metrics; flags(); a
  trace load's spec; mmr / jain; fq.settle and fq.drf_ideal against hand
  computed answers; elastic.stored_bytes against the layouts
  architecture.md works out.
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import elastic  # noqa: E402
import fq  # noqa: E402
import shoalexp as sx  # noqa: E402

checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)


def test_sections():
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "page.md")
        with open(p, "w") as f:
            f.write("# Page\n\n## Exp\n\nintro\n\n## Later\n\nkept\n")
        sx.replace_section(p, "x_b", "B one", heading_anchor="## Exp")
        text = open(p).read()
        check(text.index("intro") < text.index("B one") < text.index("## Later"),
              "first section at the end of the anchor's section:\n" + text)
        sx.replace_section(p, "x_a", "A one", heading_anchor="## Exp")
        sx.replace_section(p, "x_c", "C one", heading_anchor="## Exp")
        text = open(p).read()
        check(text.index("A one") < text.index("B one") < text.index("C one") <
              text.index("## Later"), "sections in name order:\n" + text)
        sx.replace_section(p, "x_b", "B two\n\nwith $1 and \\1", heading_anchor="## Exp")
        text = open(p).read()
        check("B one" not in text and "B two\n\nwith $1 and \\1" in text,
              "a re-run replaces its section verbatim:\n" + text)
        check(text.count("experiment:x_b:begin") == 1 and text.count("experiment:x_b:end") == 1,
              "one pair of markers per section")
        check(text.startswith("# Page\n\n## Exp\n\nintro\n") and text.endswith("## Later\n\nkept\n"),
              "text around the sections is kept:\n" + text)
        q = os.path.join(d, "bare.md")
        with open(q, "w") as f:
            f.write("# Bare\n")
        sx.replace_section(q, "y", "Y", heading_anchor="## Missing")
        check(open(q).read().rstrip().endswith("<!-- experiment:y:end -->"),
              "no anchor: at the end")


def test_metrics():
    ms = sx.st.parse_metrics('a{node="1",tenant="2"} 3\na{node="2",tenant="3"} 4\n'
                             'b 5\n# HELP c x\nc{op="get",tenant="1"} 7\n')
    check(sx.metric(ms, "a") == 7, "sum over labels")
    check(sx.metric(ms, "a", tenant=2) == 3 and sx.metric(ms, "a", node=2, tenant=3) == 4,
          "labels select")
    check(sx.metric(ms, "b") == 5 and sx.metric(ms, "nothing") == 0, "bare series")
    check(sx.by_label(ms, "a", "tenant") == {"2": 3.0, "3": 4.0}, "by_label")
    check(sx.flags({"sched": "drfq", "cap-ops": 300, "x": True, "y": None, "z": False}) ==
          "--sched drfq --cap-ops 300 --x", "flags")
    t = sx.Tenant("a", 1, "K", 2)
    check(sx.Load(t, conns=8).spec(trace=True) == "name=a,key=K,weight=2,conns=8" and
          sx.Load(t).spec(trace=True) == "name=a,key=K,weight=2", "a trace load: no conc or rate")
    check(sx.Load(t, conc=4).spec() == "name=a,key=K,weight=2,conc=4,size=1KiB,read=1,keys=100,"
          "zipf=0", "a closed loop as before")


def test_sampler():
    class Fake:
        nodes = 0

        def fairness(self):
            return {}

        def metrics_of(self, proc):
            return sx.st.parse_metrics(
                'shoal_node_dominant_load{node="0"} 1\n'
                'shoal_gateway_rs_window{tenant="3",node="1"} 4.5\n'
                'shoal_gateway_rs_window{tenant="3",node="2"} 6\n'
                'shoal_gateway_rs_rtt_seconds{tenant="3",node="1"} 0.25\n'
                'shoal_gateway_migrate_running 1\n'
                'shoal_gateway_migrate_moved_versions_total 12\n')

        def cpu_seconds(self):
            return {}

    d = sx.fairness_sampler(Fake(), nodes=False, gateway=True)()
    check(d["rs"]["window"] == {"3": {"1": 4.5, "2": 6.0}},
          "the gateway's windows by tenant and node: %r" % d.get("rs"))
    check(d["rs"]["rtt"] == {"3": {"1": 0.25}} and d["rs"]["base"] == {},
          "the gateway's RTTs by tenant and node: %r" % d.get("rs"))
    check(d["migration"] == {"running": 1.0, "moved_versions": 12.0},
          "the gateway's migration: %r" % d.get("migration"))
    json.dumps(d)  # kept in the experiments' JSON files as is


def test_stats():
    check(abs(sx.mmr([2, 4, 8]) - 0.25) < 1e-12, "mmr")
    check(abs(sx.jain([1, 1, 1, 1]) - 1) < 1e-12 and abs(sx.jain([1, 0]) - 0.5) < 1e-12, "jain")
    # 1 KiB and 64 KiB GETs on 400 req/s and 8 KiB x 400 B/s: 8/9 each.
    check(abs(fq.drf_ideal(400, 400 * 8192, 1024, 65536) - 8 / 9) < 1e-12, "DRF ideal")
    s, l = fq.drr_point(400, 400 * 8192, 1024, 65536)
    check(abs(s - 400 * 8192 / 66560 / 400) < 1e-12 and abs(l - 400 * 8192 / 66560 * 65536 /
                                                          (400 * 8192)) < 1e-12, "drr point")
    ok = {s: s >= 12 for s in range(30)}
    check(fq.settle(range(30), 10, lambda s: ok[s], hold=5) == 2, "settle")
    check(fq.settle(range(30), 10, lambda s: s != 14, hold=5) == 5, "settle after a miss")
    check(fq.settle(range(30), 10, lambda s: False) is None, "never settles")
    # 10 MiB at 4+2: 3 stripes of 873,856-byte chunks; 1 KiB: three copies.
    check(elastic.stored_bytes(10 << 20) == 3 * 6 * 873856, "stored bytes of 10 MiB")
    check(elastic.stored_bytes(1024) == 3072 and elastic.stored_bytes(4 << 20) == 6 << 20,
          "stored bytes of 1 KiB and 4 MiB")


def main():
    test_sections()
    test_metrics()
    test_sampler()
    test_stats()
    print("ok: %d checks" % checks)


if __name__ == "__main__":
    main()
