#!/usr/bin/python3
"""integ.admit: large GETs are admitted into the engine under a gateway-wide
bound on the bytes in flight (--inflight-bytes), fairly across tenants, and
a request that cannot get in within --admit-wait-ms is answered 503 with
Retry-After instead of hanging.

1. 64 concurrent 10 MiB GETs (two tenants, 32 each) for a few seconds,
   the default --inflight-bytes (64 MiB) and --admit-wait-ms (1.5 s): no error (no 503), none slower than 2 s, the
   two tenants' byte rates within 1.5x of each other, and the gateway's
   peak RSS (VmHWM) under its idle RSS + --buffer-cache + 2 x
   --inflight-bytes (the answer buffers and the chunks being read).
2. A second gateway setting, --inflight-bytes 10MiB --admit-wait-ms 20:
   a burst of 24 concurrent GETs of the same object. Every request is
   answered (none hangs), each either 200 with the whole object or 503
   with Retry-After and error "unavailable"; at least one of each.
3. PUTs wait before their body is read: 8 concurrent 10 MiB PUTs under a
   10 MiB bound all get 201 and read back whole, and no bytes stay
   admitted afterwards.
4. 64 concurrent 10 MiB PUTs by real curl clients (one process each, curl's
   Expect: 100-continue), default bound and wait: the gateway's RSS
   (VmHWM, and VmRSS sampled every 20 ms) stays under its idle RSS +
   --buffer-cache + 2 x --inflight-bytes (bodies, parity, chunks in the
   nodes' sockets); every PUT is answered 201, or 503 with Retry-After
   within --admit-wait-ms + 1 s; no 201 took longer than the wait + 6 s;
   every 201 object reads back with its SHA-256; the 503s are the
   admission's timed-out count; nothing stays admitted.
5. S3 PutObject and UploadPart (boto3, no retries) wait in the same queues:
   each large one takes a ticket (shoal_gateway_admit_admitted_total), a
   small one none; under a 10 MiB bound and a 300 ms wait some get SlowDown
   (503, Retry-After) with their body unread, the others read back whole,
   and an upload's admitted parts complete. Afterwards no bytes stay in
   flight or buffered (a PUT's bytes count for later PUTs until persisted).
"""
import json
import os
import subprocess
import threading
import time

import shoaltest as st

SIZE = 10 << 20
BOUND = 64 << 20  # the default --inflight-bytes
CACHE = 64 << 20


def bench(t, c, tenants, conc, secs):
    specs = []
    for i, ten in enumerate(tenants):
        specs += ["--tenant", "name=t%d,key=%s,conc=%d,keys=1,size=10MiB,read=1,zipf=0"
                  % (i, ten["key"], conc)]
    out = subprocess.run([t.binary("shoal-bench"), "--gateway",
                          "http://127.0.0.1:%d" % c.gw_port] + specs +
                         ["--duration", str(secs), "--warmup", "1", "--json", "--threads", "2",
                          "--prefix", "admit/", "--log-level", "warn"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    t.eq(out.returncode, 0, "shoal-bench exit (stderr %r)" % out.stderr[-300:])
    return json.loads(out.stdout)["tenants"]


def run_threads(fn, n, timeout):
    """fn(0) .. fn(n - 1) at once, each in a thread; the seconds they took."""
    ths = [threading.Thread(target=fn, args=(i,), daemon=True) for i in range(n)]
    t0 = time.monotonic()
    for th in ths:
        th.start()
    for th in ths:
        th.join(timeout=timeout)
    return time.monotonic() - t0


def check_bound(t):
    c = t.cluster(nodes=6, gateway_args="--buffer-cache %d" % CACHE)
    tenants = [c.create_tenant("adm%d" % i) for i in range(2)]
    data = os.urandom(SIZE)
    for ten in tenants:
        t.status(c.gw(ten).put("admit/0", data), 201, "PUT 10 MiB")
    pid = c.pid("gateway")
    idle = st.vm(pid, "VmRSS")
    res = bench(t, c, tenants, 32, 6)
    peak = st.vm(pid, "VmHWM")
    limit = idle + CACHE + 2 * BOUND
    rates = [r["mb_per_s"] for r in res]
    st.log("64 x GET 10 MiB: %s MB/s, max %s ms, errors %s; RSS idle %d MiB, peak %d MiB "
           "(limit %d MiB)" % (rates, [round(r["latency_us"]["max"] / 1e3) for r in res],
                               [r["status"] for r in res], idle >> 20, peak >> 20, limit >> 20))
    for r in res:
        t.check(r["ops"] > 0 and r["errors"] == 0,
                "GET 10 MiB: %d ok, errors by status %r" % (r["ops"], r["status"]))
        t.check(r["latency_us"]["max"] < 2e6, "a GET took %.0f ms" % (r["latency_us"]["max"] / 1e3))
    t.check(max(rates) <= 1.5 * min(rates), "tenants' rates %r differ by more than 1.5x" % rates)
    t.check(peak < limit, "gateway peak RSS %d MiB over %d MiB" % (peak >> 20, limit >> 20))
    # The client is gone: the GETs it left behind end, and their bytes are released.
    deadline = time.monotonic() + 15
    while True:
        m = st.parse_metrics(st.http_request(c.gw_port, "GET", "/metrics").body.decode())
        if m.get("shoal_gateway_admit_inflight_bytes") == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    t.check(m.get("shoal_gateway_admit_waited_total", 0) > 0, "no GET waited for admission")
    t.eq(m.get("shoal_gateway_admit_inflight_bytes"), 0, "bytes in flight after the run")
    t.eq(m.get("shoal_gateway_admit_waiting"), 0, "requests waiting after the run")
    c.stop()


def check_deadline(t):
    c = t.cluster(nodes=6, gateway_args="--inflight-bytes 10MiB --admit-wait-ms 20")
    g = c.gw(c.create_tenant("late"))
    data = os.urandom(SIZE)
    t.status(g.put("admit/late", data), 201, "PUT 10 MiB")
    got = []

    def one(_):
        try:
            got.append(g.get("admit/late", timeout=30))
        except OSError as e:
            got.append(e)

    took = run_threads(one, 24, 60)
    t.eq(len(got), 24, "answers to 24 GETs")
    ok = busy = 0
    for r in got:
        t.check(isinstance(r, st.Resp), "GET failed: %r" % r)
        if r.status == 200:
            t.eq(st.sha256(r.body), st.sha256(data), "GET body")
            ok += 1
        else:
            t.api_error(r, 503, "unavailable", "GET past the admission deadline")
            t.eq(r.header("Retry-After"), "1", "Retry-After of the 503")
            busy += 1
    st.log("24 GETs at a 10 MiB bound, 20 ms wait: %d answered 200, %d 503, in %.1f s"
           % (ok, busy, took))
    t.check(ok >= 1 and busy >= 1, "want some 200 and some 503: %d / %d" % (ok, busy))
    m = st.parse_metrics(st.http_request(c.gw_port, "GET", "/metrics").body.decode())
    t.eq(m.get("shoal_gateway_admit_timed_out_total"), busy, "timed-out count")
    c.stop()


def check_put_wait(t):
    """8 concurrent 10 MiB PUTs under a 10 MiB bound all succeed, one at a
    time, and read back whole; nothing stays admitted."""
    c = t.cluster(nodes=6, gateway_args="--inflight-bytes 10MiB --admit-wait-ms 60000")
    g = c.gw(c.create_tenant("puts"))
    datas = [os.urandom(SIZE) for _ in range(8)]
    got = [None] * 8

    def one(i):
        try:
            got[i] = g.put("admit/put%d" % i, datas[i], timeout=120)
        except OSError as e:
            got[i] = e

    run_threads(one, 8, 150)
    for i, r in enumerate(got):
        t.check(isinstance(r, st.Resp), "PUT %d failed: %r" % (i, r))
        t.status(r, 201, "PUT %d of 10 MiB after waiting" % i)
    for i in range(8):
        r = g.get("admit/put%d" % i)
        t.status(r, 200, "GET back")
        t.eq(st.sha256(r.body), st.sha256(datas[i]), "object %d read back" % i)
    m = st.parse_metrics(st.http_request(c.gw_port, "GET", "/metrics").body.decode())
    t.check(m.get("shoal_gateway_admit_waited_total", 0) >= 1, "no PUT waited")
    t.eq(m.get("shoal_gateway_admit_inflight_bytes"), 0, "bytes admitted after the PUTs")
    st.log("8 PUTs of 10 MiB under a 10 MiB bound: all 201, %d waited"
           % m.get("shoal_gateway_admit_waited_total", 0))
    c.stop()


class RssSampler:
    """VmRSS of pid every 20 ms, in a thread, until stop(); with port, the
    gateway's persistent buffer and admitted bytes every 100 ms too."""

    def __init__(self, pid, port=None):
        self.pid = pid
        self.port = port
        self.peak = 0
        self.n = 0
        self.buffered = self.admitted = 0
        self._stop = threading.Event()
        self._th = threading.Thread(target=self._run, daemon=True)
        self._th.start()

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, st.vm(self.pid, "VmRSS"))
            self.n += 1
            if self.port is not None and self.n % 5 == 0:
                m = st.parse_metrics(st.http_request(self.port, "GET", "/metrics").body.decode())
                self.buffered = max(self.buffered, int(m.get("shoal_gateway_buffered_bytes", 0)))
                self.admitted = max(self.admitted, int(m.get("shoal_gateway_admit_inflight_bytes", 0)))
            time.sleep(0.02)

    def stop(self):
        self._stop.set()
        self._th.join()
        return self.peak


def reset_hwm(pid):
    with open("/proc/%d/clear_refs" % pid, "w") as f:
        f.write("5")


def wait_released(t, c, what):
    """The admission holds no bytes, buffered or not, and has no waiters
    (within 15 s)."""
    deadline = time.monotonic() + 15
    while True:
        m = st.parse_metrics(st.http_request(c.gw_port, "GET", "/metrics").body.decode())
        if (m.get("shoal_gateway_admit_inflight_bytes") == 0 and
                m.get("shoal_gateway_admit_buffered_bytes") == 0) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    t.eq(m.get("shoal_gateway_admit_inflight_bytes"), 0, "bytes in flight after %s" % what)
    t.eq(m.get("shoal_gateway_admit_buffered_bytes"), 0, "bytes buffered after %s" % what)
    t.eq(m.get("shoal_gateway_admit_waiting"), 0, "requests waiting after %s" % what)
    return m


def wait_persisted(c):
    """No large PUT's bytes are buffered (waiting to be persisted), within 15 s."""
    st.wait_until(lambda: st.parse_metrics(st.http_request(c.gw_port, "GET", "/metrics").body
                                           .decode()).get("shoal_gateway_admit_buffered_bytes")
                  == 0, 15, "the buffered bytes of large PUTs to be persisted")


def check_put_curl(t):
    """64 curl processes PUT 10 MiB at once under the default bound and wait."""
    n, wait_s = 64, 1.5
    c = t.cluster(nodes=6, gateway_args="--buffer-cache %d" % CACHE)
    ten = c.create_tenant("curl")
    files = []
    for i in range(4):  # four contents, so a 201 object must be its own
        path = os.path.join(t.tmp, "put%d.bin" % i)
        files.append((path, st.write_random_file(path, SIZE, seed=100 + i)))
    g = c.gw(ten)
    with open(files[0][0], "rb") as f:
        t.status(g.put("admit/warm", f.read()), 201, "warm-up PUT")
    pid = c.pid("gateway")
    reset_hwm(pid)
    idle = st.vm(pid, "VmRSS")
    m0 = st.parse_metrics(st.http_request(c.gw_port, "GET", "/metrics").body.decode())
    url = "http://127.0.0.1:%d/v1/objects/admit/curl%%d" % c.gw_port
    procs = []
    sampler = RssSampler(pid, c.gw_port)
    t0 = time.monotonic()
    for i in range(n):
        hdr = os.path.join(t.tmp, "hdr%d" % i)
        procs.append((i, hdr, subprocess.Popen(
            ["curl", "-sS", "-o", "/dev/null", "-D", hdr, "-w", "%{http_code} %{time_total}",
             "-T", files[i % 4][0], "-H", "Authorization: Bearer %s" % ten["key"],
             "--max-time", "60", url % i], stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
    answers = []
    for i, hdr, p in procs:
        out, err = p.communicate(timeout=90)
        t.eq(p.returncode, 0, "curl PUT %d exit (stderr %r)" % (i, err[-300:]))
        code, secs = out.decode().split()
        with open(hdr, "rb") as f:
            heads = f.read().decode(errors="replace").lower()
        answers.append((i, int(code), float(secs), "\r\nretry-after: 1\r\n" in heads))
    took = time.monotonic() - t0
    peak_sampled = sampler.stop()
    peak = st.vm(pid, "VmHWM")
    limit = idle + CACHE + 2 * BOUND
    ok = [a for a in answers if a[1] == 201]
    busy = [a for a in answers if a[1] == 503]
    st.log("%d curl PUTs of 10 MiB: %d answered 201 (slowest %.2f s), %d 503 (slowest %.2f s) "
           "in %.1f s; RSS idle %d MiB, peak %d MiB (sampled %d MiB over %d samples), limit %d MiB; "
           "at most %d MiB admitted, %d MiB in the persistent buffer"
           % (n, len(ok), max([a[2] for a in ok] or [0]), len(busy),
              max([a[2] for a in busy] or [0]), took, idle >> 20, peak >> 20,
              peak_sampled >> 20, sampler.n, limit >> 20, sampler.admitted >> 20,
              sampler.buffered >> 20))
    t.eq(len(ok) + len(busy), n, "answers 201 or 503: %r" % [a for a in answers
                                                             if a[1] not in (201, 503)])
    t.check(len(ok) >= 1, "no PUT answered 201")
    for i, code, secs, retry in busy:
        t.check(retry, "PUT %d: 503 without Retry-After: 1" % i)
        t.check(secs < wait_s + 1.0, "PUT %d: 503 after %.2f s (wait %.1f s)" % (i, secs, wait_s))
    for i, code, secs, retry in ok:
        t.check(secs < wait_s + 6.0, "PUT %d: 201 after %.2f s" % (i, secs))
    t.check(peak < limit, "gateway peak RSS %d MiB over %d MiB" % (peak >> 20, limit >> 20))
    t.check(peak_sampled < limit, "gateway sampled RSS %d MiB over %d MiB"
            % (peak_sampled >> 20, limit >> 20))
    m = wait_released(t, c, "the curl PUTs")
    t.eq(m.get("shoal_gateway_admit_timed_out_total", 0) -
         m0.get("shoal_gateway_admit_timed_out_total", 0), len(busy), "timed-out count")
    for i, code, secs, retry in ok:
        r = g.get("admit/curl%d" % i)
        t.status(r, 200, "GET back of PUT %d" % i)
        t.eq(st.sha256(r.body), files[i % 4][1], "object %d read back" % i)
    for i, code, secs, retry in busy:
        t.status(g.get("admit/curl%d" % i), 404, "a PUT answered 503 stored nothing")
    c.stop()


def check_s3(t):
    """S3 PutObject and UploadPart bodies wait for admission before they are read."""
    import boto3
    from botocore.config import Config
    c = t.cluster(nodes=6, gateway_args="--inflight-bytes 10MiB --admit-wait-ms 300")
    c.create_tenant("s3adm")
    key = json.loads(c.shoalctl("--json", "tenant", "s3-key", "create", "s3adm").stdout)
    s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % c.s3_port,
                      aws_access_key_id=key["access_key_id"],
                      aws_secret_access_key=key["secret_access_key"], region_name="us-east-1",
                      config=Config(retries={"total_max_attempts": 1}, max_pool_connections=32))
    s3.create_bucket(Bucket="adm")
    datas = [os.urandom(SIZE) for _ in range(4)]
    m0 = st.parse_metrics(st.http_request(c.gw_port, "GET", "/metrics").body.decode())
    # One at a time, each once the one before is persisted (its bytes count
    # for the next write until then): admitted at once, one ticket each.
    s3.put_object(Bucket="adm", Key="one", Body=datas[0])
    wait_persisted(c)
    up = s3.create_multipart_upload(Bucket="adm", Key="mpu")["UploadId"]
    e1 = s3.upload_part(Bucket="adm", Key="mpu", UploadId=up, PartNumber=1, Body=datas[1])["ETag"]
    wait_persisted(c)
    s3.put_object(Bucket="adm", Key="small", Body=b"x" * 1000)  # under --admit-min-bytes
    m1 = st.parse_metrics(st.http_request(c.gw_port, "GET", "/metrics").body.decode())
    t.eq(m1.get("shoal_gateway_admit_admitted_total", 0) -
         m0.get("shoal_gateway_admit_admitted_total", 0), 2,
         "tickets of one PutObject and one UploadPart of 10 MiB (not of 1000 bytes)")
    # 16 at once (8 PutObject, 8 UploadPart) under a 10 MiB bound and a 300 ms wait.
    got = {}

    def one(i):
        try:
            if i % 2 == 0:
                s3.put_object(Bucket="adm", Key="p%d" % i, Body=datas[i % 4])
            else:
                got[i] = ("part", s3.upload_part(Bucket="adm", Key="mpu", UploadId=up,
                                                 PartNumber=2 + i // 2, Body=datas[i % 4])["ETag"])
                return
            got[i] = ("ok", None)
        except s3.exceptions.ClientError as e:
            got[i] = ("err", e.response)

    took = run_threads(one, 16, 120)
    t.eq(len(got), 16, "answers to 16 S3 writes")
    slow = [i for i, (k, v) in got.items() if k == "err"]
    for i in slow:
        resp = got[i][1]
        t.eq(resp["Error"]["Code"], "SlowDown", "S3 write %d error" % i)
        t.eq(resp["ResponseMetadata"]["HTTPStatusCode"], 503, "S3 write %d status" % i)
        t.eq(resp["ResponseMetadata"]["HTTPHeaders"].get("retry-after"), "1",
             "S3 write %d Retry-After" % i)
    m2 = wait_released(t, c, "the S3 writes")
    st.log("16 S3 writes of 10 MiB at a 10 MiB bound, 300 ms wait: %d stored, %d SlowDown in "
           "%.1f s; admitted %d, waited %d, timed out %d" % (
               16 - len(slow), len(slow), took,
               m2["shoal_gateway_admit_admitted_total"] - m1["shoal_gateway_admit_admitted_total"],
               m2["shoal_gateway_admit_waited_total"] - m1.get("shoal_gateway_admit_waited_total", 0),
               m2["shoal_gateway_admit_timed_out_total"] -
               m1.get("shoal_gateway_admit_timed_out_total", 0)))
    t.check(slow and len(slow) < 16, "want some SlowDown and some stored: %d SlowDown" % len(slow))
    t.eq(m2["shoal_gateway_admit_admitted_total"] - m1["shoal_gateway_admit_admitted_total"],
         16 - len(slow), "one ticket per stored S3 write")
    t.eq(m2["shoal_gateway_admit_timed_out_total"] -
         m1.get("shoal_gateway_admit_timed_out_total", 0), len(slow), "timed out = SlowDown")
    parts = [{"PartNumber": 1, "ETag": e1}]
    for i, (k, v) in sorted(got.items()):
        if k == "ok":
            body = s3.get_object(Bucket="adm", Key="p%d" % i)["Body"].read()
            t.eq(st.sha256(body), st.sha256(datas[i % 4]),
                 "PutObject %d read back" % i)
        elif k == "part":
            parts.append({"PartNumber": 2 + i // 2, "ETag": v})
    s3.complete_multipart_upload(Bucket="adm", Key="mpu", UploadId=up,
                                 MultipartUpload={"Parts": parts})
    body = s3.get_object(Bucket="adm", Key="mpu")["Body"].read()
    want = b"".join([datas[1]] + [datas[(2 * (p["PartNumber"] - 2) + 1) % 4]
                                  for p in parts[1:]])
    t.eq(st.sha256(body), st.sha256(want),
         "the upload of %d admitted parts read back" % len(parts))
    c.stop()


def main(t):
    t.section(check_bound)
    t.section(check_deadline)
    t.section(check_put_wait)
    t.section(check_put_curl)
    t.section(check_s3)


if __name__ == "__main__":
    st.run(main, timeout=280)
