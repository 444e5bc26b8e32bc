#!/usr/bin/python3
"""integ.roundtrip: the tenant data API end to end on a 6-node cluster.

Sizes 0 B .. 100 MiB with SHA-256 (100 MiB streamed with curl), ranges, HEAD,
overwrite versions, DELETE, LIST with prefix and pagination, odd keys,
isolation between two tenants, readers during overwrites, prompt deletes of
replaced versions, and how small objects reach COS (every copy
packed into its node's segments, announced by the nodes rather than polled).
"""
import os
import random
import struct
import time

import shoaltest as st


def version_of(r):
    v = r.header("X-Shoal-Version")
    return int(v) if v is not None and v.isdigit() else v


def check_sizes(t, g):
    rng = random.Random(7)
    for size in (0, 1, 1000, 64 << 10, 1 << 20, 10 << 20):
        key = "size/%d" % size
        data = rng.randbytes(size)
        r = g.put(key, data)
        t.status(r, 201, "PUT %d bytes" % size)
        t.check(r.header("ETag"), "PUT %d: no ETag" % size)
        t.check(r.header("X-Shoal-Version"), "PUT %d: no X-Shoal-Version" % size)
        t.check(r.header("X-Request-Id"), "PUT %d: no X-Request-Id" % size)
        g_ = g.get(key)
        t.status(g_, 200, "GET %d bytes" % size)
        t.eq(len(g_.body), size, "GET %d: length" % size)
        t.eq(st.sha256(g_.body), st.sha256(data), "GET %d: sha256" % size)
        t.eq(g_.header("Content-Length"), str(size), "GET %d: Content-Length" % size)
        t.eq(g_.header("ETag"), r.header("ETag"), "GET %d: ETag equals PUT's" % size)
        t.eq(g_.header("X-Shoal-Version"), r.header("X-Shoal-Version"),
             "GET %d: X-Shoal-Version equals PUT's" % size)
        t.check(g_.header("X-Request-Id"), "GET %d: no X-Request-Id" % size)
        # HEAD: the headers of GET, no body.
        h = g.head(key)
        t.status(h, 200, "HEAD %d" % size)
        t.eq(h.body, b"", "HEAD %d: body" % size)
        for name in ("ETag", "Content-Length", "X-Shoal-Version"):
            t.eq(h.header(name), g_.header(name), "HEAD %d: %s equals GET's" % (size, name))
        t.check(h.header("X-Request-Id"), "HEAD %d: no X-Request-Id" % size)
    st.log("sizes 0..10MiB ok")


def check_big_with_curl(t, c, g):
    size = 100 << 20
    src = os.path.join(t.tmp, "big.in")
    dst = os.path.join(t.tmp, "big.out")
    want = st.write_random_file(src, size, seed=100)
    url = "http://127.0.0.1:%d/v1/objects/big/100MiB.bin" % c.gw_port
    auth = "Authorization: Bearer " + g.key
    p = st.curl("-X", "PUT", "--data-binary", "@" + src, "-H", auth, "-o", "/dev/null",
                "-w", "%{http_code}", url, timeout=600)
    t.eq(p.stdout.decode().strip(), "201", "curl PUT 100MiB status (stderr %r)" % p.stderr)
    p = st.curl("-H", auth, "-o", dst, "-w", "%{http_code}", url, timeout=600)
    t.eq(p.stdout.decode().strip(), "200", "curl GET 100MiB status (stderr %r)" % p.stderr)
    t.eq(os.path.getsize(dst), size, "curl GET 100MiB: size")
    t.eq(st.sha256_file(dst), want, "curl GET 100MiB: sha256")
    # A range near the end of the big object, with curl.
    p = st.curl("-H", auth, "-r", "%d-%d" % (size - 4096, size - 1), "-o", dst, "-w",
                "%{http_code}", url)
    t.eq(p.stdout.decode().strip(), "206", "curl range of 100MiB")
    with open(src, "rb") as f:
        f.seek(size - 4096)
        t.eq(open(dst, "rb").read(), f.read(), "curl range of 100MiB: bytes")
    os.unlink(src)
    os.unlink(dst)
    st.log("100MiB via curl ok")


def check_ranges(t, g):
    rng = random.Random(3)
    for size, key in ((1000, "range/small"), (3 << 20, "range/striped")):
        data = rng.randbytes(size)
        t.status(g.put(key, data), 201, "PUT %s" % key)
        cases = [
            ("bytes=0-0", 0, 0),
            ("bytes=10-19", 10, 19),
            ("bytes=%d-%d" % (size // 2 - 7, size // 2 + 300), size // 2 - 7, size // 2 + 300),
            ("bytes=-10", size - 10, size - 1),
            ("bytes=5-", 5, size - 1),
            ("bytes=%d-%d" % (size - 3, size + 1000), size - 3, size - 1),  # end clamped
            ("bytes=0-%d" % (size - 1), 0, size - 1),
        ]
        if size > (1 << 20):
            # Ranges that cross whatever chunk boundaries the stripe has.
            cases.append(("bytes=%d-%d" % ((1 << 20) - 5, (2 << 20) + 5),
                          (1 << 20) - 5, (2 << 20) + 5))
        for spec, a, b in cases:
            r = g.get(key, {"Range": spec})
            t.status(r, 206, "GET %s Range %s" % (key, spec))
            t.eq(r.body, data[a:b + 1], "GET %s Range %s: bytes" % (key, spec))
            t.eq(r.header("Content-Range"), "bytes %d-%d/%d" % (a, b, size),
                 "GET %s Range %s: Content-Range" % (key, spec))
            t.eq(r.header("Content-Length"), str(b - a + 1),
                 "GET %s Range %s: Content-Length" % (key, spec))
        for spec in ("bytes=%d-" % size, "bytes=%d-%d" % (size + 5, size + 10)):
            r = g.get(key, {"Range": spec})
            t.api_error(r, 416, "range_not_satisfiable", "GET %s Range %s" % (key, spec))
            t.eq(r.header("Content-Range"), "bytes */%d" % size,
                 "416 for %s: Content-Range" % spec)
    st.log("ranges ok")


def check_overwrite_delete(t, g):
    key = "ow/key"
    r1 = g.put(key, b"first version")
    t.status(r1, 201, "PUT v1")
    r2 = g.put(key, b"second, longer version" * 100)
    t.status(r2, 201, "PUT v2")
    v1, v2 = version_of(r1), version_of(r2)
    t.check(isinstance(v1, int) and isinstance(v2, int) and v2 > v1,
            "overwrite: X-Shoal-Version %r then %r, want increasing integers" % (v1, v2))
    t.check(r1.header("ETag") != r2.header("ETag"), "overwrite: ETag unchanged")
    r = g.get(key)
    t.status(r, 200, "GET after overwrite")
    t.eq(r.body, b"second, longer version" * 100, "GET after overwrite: content")
    t.eq(version_of(r), v2, "GET after overwrite: version")
    # Overwrite a big (striped) object with a small one and back.
    big = random.Random(5).randbytes(3 << 20)
    t.status(g.put(key, big), 201, "PUT v3 (big)")
    t.eq(st.sha256(g.get(key).body), st.sha256(big), "GET v3 (big)")
    t.status(g.put(key, b"x"), 201, "PUT v4 (1 byte)")
    t.eq(g.get(key).body, b"x", "GET v4 (1 byte)")

    r = g.delete(key)
    t.status(r, 204, "DELETE")
    t.eq(r.body, b"", "DELETE: 204 has a body")
    t.check(r.header("X-Request-Id"), "DELETE: no X-Request-Id")
    t.api_error(g.get(key), 404, "not_found", "GET after DELETE")
    t.api_error(g.head(key), 404, "not_found", "HEAD after DELETE", head=True)
    t.api_error(g.delete(key), 404, "not_found", "DELETE again")
    # Re-create after delete.
    t.status(g.put(key, b"reborn"), 201, "PUT after DELETE")
    t.eq(g.get(key).body, b"reborn", "GET after re-create")
    st.log("overwrite/delete ok")


def check_list(t, g):
    keys = ["list/e", "list/a", "list/c", "list/b", "list/d"]
    for k in keys:
        t.status(g.put(k, k.encode()), 201, "PUT %s" % k)
    t.status(g.put("lisz", b"other prefix"), 201, "PUT lisz")
    t.status(g.put("list", b"no slash"), 201, "PUT list")
    # Pagination: limit=2 over 5 keys.
    pages = []
    after = None
    for _ in range(10):
        r = g.list("list/", after, 2)
        t.status(r, 200, "LIST page")
        t.check(r.header("X-Request-Id"), "LIST: no X-Request-Id")
        j = r.json()
        t.check(isinstance(j.get("objects"), list) and "next" in j, "LIST JSON shape: %r" % j)
        t.check(len(j["objects"]) <= 2, "LIST limit=2 returned %d" % len(j["objects"]))
        pages.append([o["key"] for o in j["objects"]])
        if j["next"] is None:
            break
        after = j["next"]
    got = [k for p in pages for k in p]
    t.eq(got, sorted(keys), "LIST prefix=list/ limit=2: keys in order over all pages")
    t.eq([len(p) for p in pages], [2, 2, 1], "LIST limit=2 page sizes")
    # Objects carry key, size, etag, version matching HEAD.
    objs = g.list_all("list/")
    for o in objs:
        for f in ("key", "size", "etag", "version"):
            t.check(f in o, "LIST object lacks %r: %r" % (f, o))
        h = g.head(o["key"])
        t.eq(o["size"], int(h.header("Content-Length")), "LIST size of %s" % o["key"])
        t.eq(str(o["etag"]).strip('"'), h.header("ETag").strip('"'), "LIST etag of %s" % o["key"])
        t.eq(str(o["version"]), h.header("X-Shoal-Version"), "LIST version of %s" % o["key"])
    # Prefix "lis" sees all three families, in byte order.
    allk = [o["key"] for o in g.list_all("lis")]
    t.eq(allk, sorted(keys + ["lisz", "list"]), "LIST prefix=lis")
    # No prefix, default limit: everything, sorted.
    r = g.list()
    t.status(r, 200, "LIST without parameters")
    ks = [o["key"] for o in r.json()["objects"]]
    t.eq(ks, sorted(ks), "LIST without parameters is lexicographic")
    t.check(set(keys) <= set(ks), "LIST without parameters lacks keys")
    # after= skips up to and including K.
    r = g.list("list/", "list/b", 1000)
    t.eq([o["key"] for o in r.json()["objects"]], ["list/c", "list/d", "list/e"], "LIST after=b")
    # Deleted keys leave the listing.
    t.status(g.delete("list/c"), 204, "DELETE list/c")
    t.eq([o["key"] for o in g.list_all("list/")], ["list/a", "list/b", "list/d", "list/e"],
         "LIST after DELETE")
    # A prefix with no objects.
    r = g.list("nothing-here/")
    t.status(r, 200, "LIST empty prefix")
    t.eq(r.json(), {"objects": [], "next": None}, "LIST of an empty prefix")
    st.log("list ok")


def check_odd_keys(t, g):
    keys = [
        "dir/sub/dir/file.txt",
        "ünïcødé/日本語/🐟.bin",
        "space and+plus",
        "percent%25literal",  # the key contains the 3 characters "%25"
        "q?mark#hash&amp=;",
        "a" * 1024,  # longest allowed key
        "x/..y/.z./...",  # dots that are not . or .. segments
        "trailing/",
    ]
    for i, k in enumerate(keys):
        data = ("value %d of %r" % (i, k)).encode()
        r = g.put(k, data)
        t.status(r, 201, "PUT odd key %r" % k[:60])
        r = g.get(k)
        t.status(r, 200, "GET odd key %r" % k[:60])
        t.eq(r.body, data, "GET odd key %r content" % k[:60])
    listed = {o["key"] for o in g.list_all()}
    for k in keys:
        t.check(k in listed, "LIST lacks odd key %r" % k[:60])
    # Percent-encoded and raw forms of the same key are the same object.
    r = st.http_request(g.port, "GET", "/v1/objects/dir%2Fsub%2Fdir%2Ffile.txt",
                        headers=g.auth())
    t.status(r, 200, "GET with %2F-encoded slashes")
    t.eq(r.body, b"value 0 of 'dir/sub/dir/file.txt'", "GET %2F-encoded: same object")
    r = st.http_request(g.port, "GET", "/v1/objects/%64ir/sub/dir/file.txt", headers=g.auth())
    t.status(r, 200, "GET with %64 for 'd'")
    # A unicode prefix in LIST.
    r = g.list("ünïcødé/")
    t.eq([o["key"] for o in r.json()["objects"]], ["ünïcødé/日本語/🐟.bin"], "LIST unicode prefix")
    # Real curl with a percent-encoded unicode key.
    url = "http://127.0.0.1:%d/v1/objects/%s" % (g.port, st.qkey("ünïcødé/日本語/🐟.bin"))
    p = st.curl("-H", "Authorization: Bearer " + g.key, url)
    t.eq(p.stdout, b"value 1 of '\xc3\xbcn\xc3\xafc\xc3\xb8d\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac"
         b"\xe8\xaa\x9e/\xf0\x9f\x90\x9f.bin'", "curl GET unicode key")
    st.log("odd keys ok")


def check_isolation(t, c, ga):
    tb = c.create_tenant("iso-b")
    gb = c.gw(tb)
    t.status(ga.put("shared/name", b"tenant A bytes"), 201, "A PUT shared/name")
    t.status(gb.put("shared/name", b"tenant B's different bytes"), 201, "B PUT shared/name")
    t.status(gb.put("shared/only-b", b"b"), 201, "B PUT shared/only-b")
    t.eq(ga.get("shared/name").body, b"tenant A bytes", "A reads its own shared/name")
    t.eq(gb.get("shared/name").body, b"tenant B's different bytes", "B reads its own shared/name")
    t.api_error(ga.get("shared/only-b"), 404, "not_found", "A GET of B's object")
    t.api_error(ga.delete("shared/only-b"), 404, "not_found", "A DELETE of B's object")
    t.eq([o["key"] for o in ga.list_all("shared/")], ["shared/name"], "A LIST shared/")
    t.eq([o["key"] for o in gb.list_all("shared/")], ["shared/name", "shared/only-b"],
         "B LIST shared/")
    bkeys = {o["key"] for o in gb.list_all()}
    t.check("size/0" not in bkeys and "list/a" not in bkeys, "B's LIST shows A's objects")
    t.status(gb.delete("shared/name"), 204, "B DELETE shared/name")
    t.eq(ga.get("shared/name").body, b"tenant A bytes", "A's object survives B's DELETE")
    st.log("isolation ok")


def check_consistency(t, g):
    """A PUT over an existing key: readers see the old or the new version whole."""
    import threading
    rng = random.Random(17)
    versions = [rng.randbytes(rng.choice([2 << 20, 300 << 10, 5000])) for _ in range(40)]
    hashes = {st.sha256(v): i for i, v in enumerate(versions)}
    key = "consistency/hot"
    t.status(g.put(key, versions[0]), 201, "PUT first version")
    stop = threading.Event()
    bad = []
    seen = set()

    def reader():
        last = -1
        while not stop.is_set():
            r = g.get(key)
            if r.status != 200:
                bad.append("GET -> %r" % r)
                return
            i = hashes.get(st.sha256(r.body))
            if i is None:
                bad.append("GET returned a mix: %d bytes matching no version" % len(r.body))
                return
            if i < last:
                bad.append("GET went back from version %d to %d" % (last, i))
                return
            last = i
            seen.add(i)

    ths = [threading.Thread(target=reader, daemon=True) for _ in range(3)]
    for th in ths:
        th.start()
    for i, v in enumerate(versions[1:], 1):
        t.status(g.put(key, v), 201, "PUT version %d" % i)
    stop.set()
    for th in ths:
        th.join(timeout=120)
    t.check(not bad, "concurrent GETs during overwrites: %s" % bad[:3])
    t.eq(st.sha256(g.get(key).body), st.sha256(versions[-1]), "final version")
    st.log("consistency ok (readers saw %d distinct versions)" % len(seen))


def check_prompt_deletes(t, c):
    """A replaced version's chunks are deleted as soon as no GET can still be
    reading them, not after a fixed delay: the nodes hold about one version."""
    g = c.gw(c.create_tenant())
    size = 4 << 20

    def used():
        return sum(c.metrics(i).get("shoal_fnstore_memory_used_bytes", 0) for i in range(c.nodes))

    before = used()
    for i in range(10):
        t.status(g.put("prompt/hot", os.urandom(size)), 201, "PUT version %d" % i)
    limit = before + 2 * size * 3 // 2  # the live version and one on its way out
    deadline = time.monotonic() + 10
    while True:
        now, waiting = used(), gw_metrics(c).get("shoal_gateway_retired_versions_waiting")
        if now <= limit and waiting == 0:
            break
        t.check(time.monotonic() < deadline,
                "10 s after 10 overwrites of %d bytes the nodes hold %d bytes more than before "
                "(want <= %d), %r versions wait" % (size, now - before, limit - before, waiting))
        time.sleep(0.2)
    st.log("prompt deletes ok (%d bytes more than before)" % (now - before))


def gw_metrics(c):
    r = st.http_request(c.gw_port, "GET", "/metrics", timeout=10)
    if r.status != 200:
        raise st.TestFailure("gateway /metrics: %r" % r)
    return st.parse_metrics(r.body.decode("utf-8", "replace"))


def segment_entries(cos):
    """(tenant, index, object) of every chunk packed in the nodes' COS segments
    (fnstore/fns_pack.h: records back to back, each a 32-byte fixed part with
    its length, then 32-byte entries), up to a record not whole yet."""
    out = []
    for d, _, files in os.walk(os.path.join(cos, "seg")):
        for f in files:
            if f.startswith("#"):
                continue
            try:
                with open(os.path.join(d, f), "rb") as fh:
                    raw = fh.read()
            except FileNotFoundError:
                continue  # an emptied segment deleted while we walked
            at = 0
            while at + 32 <= len(raw):
                magic, ver, nent, _nt, hl, _crc, rl, _bcrc = struct.unpack_from("<8I", raw, at)
                if magic != 0x47534853 or ver != 2 or rl < hl:
                    raise st.TestFailure("not a segment: %s" % f)
                if at + rl > len(raw):
                    break  # being appended
                for i in range(nent):
                    tn, idx, obj, _v, _off, _ln = struct.unpack_from("<IIQQII", raw,
                                                                     at + 32 + 32 * i)
                    out.append((tn, idx, obj))
                at += rl
    return out


def check_committer_slice(t, c):
    """The committer asks for a 100 us scheduler slice (EEVDF's latency
    hint); the kernel shows it where it has scheduler debugging."""
    pid = c.pid("gateway")
    slices = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/sched" % (pid, tid)) as f:
                slices += [int(l.split(":")[1]) for l in f if l.startswith("se.slice")]
        except OSError:
            pass
    if not slices:
        st.log("no se.slice in /proc/PID/task/*/sched here: committer slice not checked")
        return
    t.eq(slices.count(100000), 1, "gateway threads with a 100 us slice (slices %r)" % slices)


def check_small_persistence(t, c):
    """Small objects are 1+m copies, each persisted by its node packed into a
    COS segment (not as an object of its own), and the gateway learns they are
    persisted from the nodes' notices, not by polling."""
    tenant = c.create_tenant()
    g = c.gw(tenant)
    n = 40
    before = gw_metrics(c)
    for i in range(n):
        t.status(g.put("small/%d" % i, os.urandom(1000 + i)), 201, "PUT small/%d" % i)
    deadline = time.monotonic() + 30
    while True:
        m = gw_metrics(c)
        if m.get("shoal_gateway_buffered_objects", 1) == 0:
            break
        t.check(time.monotonic() < deadline, "objects still buffered after 30 s: %r" % m)
        time.sleep(0.1)
    # The layout updates that follow (objects now wholly in COS) are queued
    # with no PUT behind them: they wait at most 100 ms, not for the next PUT.
    deadline = time.monotonic() + 3
    while gw_metrics(c).get("shoal_gateway_commit_queued_ops", -1) != 0:
        t.check(time.monotonic() < deadline, "layout updates still queued for the committer after 3 s")
        time.sleep(0.05)
    tdir = os.path.join(c.dir, "cos", "t%d" % tenant["id"])
    t.check(not os.path.isdir(tdir) or not os.listdir(tdir),
            "small chunks stored as objects of their own: %r" % tdir)
    packed = [e for e in segment_entries(os.path.join(c.dir, "cos")) if e[0] == tenant["id"]]
    copies = {}
    for _tn, idx, obj in packed:
        copies.setdefault(obj, []).append(idx)
    t.eq(len(copies), n, "objects with chunks in COS segments")
    for obj, idxs in copies.items():
        t.check(len(idxs) >= 2 and sorted(idxs) == list(range(len(idxs))),
                "object %016x: packed copies %r, want 0..m once each" % (obj, sorted(idxs)))
    deadline = time.monotonic() + 10  # node gauges refresh every 200 ms
    while True:
        gauge = sum(c.metrics(i).get("shoal_fnstore_cos_packed_chunks", 0) for i in range(c.nodes))
        if gauge >= n:
            break
        t.check(time.monotonic() < deadline, "nodes report %d packed chunks, want >= %d" % (gauge, n))
        time.sleep(0.2)
    notes = m["shoal_gateway_persist_notices_total"] - before["shoal_gateway_persist_notices_total"]
    stats = m["shoal_gateway_persist_stats_total"] - before["shoal_gateway_persist_stats_total"]
    st.log("small objects: %d notices, %d STATs" % (notes, stats))
    t.check(notes >= n, "only %d persisted notices for %d objects" % (notes, n))
    t.check(stats < n, "%d STATs for %d objects: persistence was polled" % (stats, n))
    commits = m["shoal_gateway_commit_batches_total"] - before["shoal_gateway_commit_batches_total"]
    timed = (m["shoal_gateway_commit_duration_seconds_count"] -
             before["shoal_gateway_commit_duration_seconds_count"])
    t.check(commits >= 1 and timed == commits,
            "%d commits, %d in the commit-duration histogram" % (commits, timed))
    t.check(m['shoal_gateway_commit_duration_seconds_bucket{le="+Inf"}'] ==
            m["shoal_gateway_commit_duration_seconds_count"], "histogram +Inf bucket = count")
    for i in range(n):
        r = g.get("small/%d" % i)
        t.status(r, 200, "GET small/%d" % i)
        t.eq(len(r.body), 1000 + i, "GET small/%d length" % i)


def main(t):
    c = t.cluster(nodes=6)
    ta = c.create_tenant("iso-a")
    g = c.gw(ta)
    t.section(check_sizes, g)
    t.section(check_ranges, g)
    t.section(check_overwrite_delete, g)
    t.section(check_list, g)
    t.section(check_odd_keys, g)
    t.section(check_isolation, c, g)
    t.section(check_consistency, g)
    t.section(check_prompt_deletes, c)
    t.section(check_small_persistence, c)
    t.section(check_committer_slice, c)
    t.section(check_big_with_curl, c, g)


if __name__ == "__main__":
    st.run(main, timeout=560)
