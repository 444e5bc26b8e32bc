#!/usr/bin/python3
"""s3rver - a real S3 server for the COS tests (s3rver from npm, on loopback).

    import s3rver
    s = s3rver.S3rver(src)          # src: the source tree (deploy/s3rver holds it)
    s.start()                       # a free 127.0.0.1 port, a fresh temp directory,
    url = s.url("v2")               # with the bucket "shoal" made at start
    s.kill(); s.start()             # kill -9 and back on the same port and data
    s.stop()                        # by PID; the temp directory goes with it
                                    # (kept with SHOAL_TEST_KEEP=1)

s3rver accepts the credentials S3RVER / S3RVER (S3rver.env() gives them as
AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY). It does not check SigV4
signatures at all, and checks SigV2 ones against a resource that differs
from AWS's for a bucket listing (it drops the "/" of "/bucket/"). So with
verify=True (the default) a proxy in front checks every signature as AWS
computes it, and s3rver behind it takes what the proxy passed: SigV4 with
botocore's signer (canonical URI, sorted and escaped query, signed
headers, the payload hash against the body), SigV2 with the string to
sign of AWS's documentation. A wrong one gets 403 SignatureDoesNotMatch
and is recorded (problems); url() points at the proxy. While s3rver is
down the proxy closes each connection unanswered, and so it does with the
requests a test picks (proxy.refuse).

As a command, runs one program against a fresh server and stops it:

    s3rver.py --src SRC --sig v2|v4 -- PROGRAM ARGS...

with SHOAL_TEST_COS_URL and the credentials in PROGRAM's environment; exits
with PROGRAM's status (1 also if no request went through the checks). A
refused signature fails PROGRAM's request with 403; the refusals are
printed at the end.
"""
import argparse
import hashlib
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from shoaltest import free_port

ACCESS_KEY = "S3RVER"
SECRET_KEY = "S3RVER"
BUCKET = "shoal"


def s3rver_script(src):
    p = os.path.join(src, "deploy", "s3rver", "node_modules", "s3rver", "bin", "s3rver.js")
    if not os.path.isfile(p):
        raise RuntimeError("s3rver is not installed at %s (run deploy/install-deps.sh)" % p)
    return p


class S3rver:
    def __init__(self, src, verify=True):
        self.script = s3rver_script(src)
        self.dir = tempfile.mkdtemp(prefix="shoal-s3rver-")
        self.port = free_port()
        self.proc = None
        self.log = open(os.path.join(self.dir, "s3rver.log"), "ab")
        self.proxy = SigProxy(self.port) if verify else None

    @staticmethod
    def env():
        return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}

    def url(self, sig="v2", prefix=""):
        port = self.proxy.port if self.proxy is not None else self.port
        return "s3://127.0.0.1:%d/%s%s?sig=%s&tls=0" % (port, BUCKET,
                                                      "/" + prefix if prefix else "", sig)

    def start(self, timeout=30):
        """Starts the server (again: on the same port and data) and waits until it
        answers."""
        data = os.path.join(self.dir, "data")
        os.makedirs(data, exist_ok=True)
        self.drop_torn_writes(data)
        self.proc = subprocess.Popen(
            ["node", self.script, "-d", data, "-a", "127.0.0.1", "-p", str(self.port),
             "--configure-bucket", BUCKET, "--silent"]
            + (["--allow-mismatched-signatures"] if self.proxy is not None else []),
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("s3rver exited with %d; see %s" % (
                    self.proc.returncode, os.path.join(self.dir, "s3rver.log")))
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/")
                c.getresponse().read()
                c.close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.kill()
                    raise RuntimeError("s3rver did not answer on port %d" % self.port)
                time.sleep(0.1)
        if self.proxy is not None and not self.proxy.running:
            self.proxy.start()

    @staticmethod
    def drop_torn_writes(data):
        """S3 makes a PUT visible whole or not at all; s3rver writes the object,
        then its .md5, then its metadata.json, and answers 200 after the last. A
        kill -9 can leave a torn object, or a metadata.json cut short (which
        makes s3rver fail every listing of the bucket with InternalError). Such
        a PUT was never acknowledged: remove what it left, as S3 would never
        have shown it."""
        suffix = "._S3rver_object"
        for root, _dirs, files in os.walk(data):
            for f in files:
                if not f.endswith(suffix):
                    continue
                base = os.path.join(root, f[: -len(suffix)])
                meta = base + "._S3rver_metadata.json"
                try:
                    with open(meta, "rb") as fh:
                        json.loads(fh.read())
                    continue
                except (OSError, ValueError):
                    pass
                for p in (base + suffix, base + suffix + ".md5", meta):
                    try:
                        os.unlink(p)
                    except OSError:
                        pass

    def kill(self, sig=signal.SIGKILL):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            self.proc.wait(timeout=30)
        self.proc = None

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None
        if self.proxy is not None:
            self.proxy.stop()
        self.log.close()
        if os.environ.get("SHOAL_TEST_KEEP") == "1":
            print("s3rver directory kept: %s" % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


# ------------------------------------------------------------------- signature checks

# Query parameters that are part of a SigV2 resource (AWS's list).
V2_SUBRESOURCES = {"acl", "cors", "delete", "lifecycle", "location", "logging", "notification",
                   "partNumber", "policy", "requestPayment", "response-cache-control",
                   "response-content-disposition", "response-content-encoding",
                   "response-content-language", "response-content-type", "response-expires",
                   "restore", "tagging", "torrent", "uploadId", "uploads", "versionId",
                   "versioning", "versions", "website"}


def v2_problem(method, path, headers):
    """Why AWS would refuse this SigV2 request (None: it is right, or not ours)."""
    import base64
    import hmac
    import urllib.parse

    m = re.match(r"AWS ([^:]+):(\S+)$", headers.get("authorization", ""))
    if m is None:
        return "malformed Authorization: %r" % headers.get("authorization")
    if m.group(1) != ACCESS_KEY:
        return None
    split = urllib.parse.urlsplit(path)
    subs = sorted(q for q in split.query.split("&") if q and q.split("=")[0] in V2_SUBRESOURCES)
    amz = sorted((k, " ".join(v.split())) for k, v in headers.items() if k.startswith("x-amz-"))
    sts = "\n".join([method, headers.get("content-md5", ""), headers.get("content-type", ""),
                     "" if "x-amz-date" in headers else headers.get("date", "")]) + "\n"
    sts += "".join("%s:%s\n" % kv for kv in amz)
    sts += split.path + ("?" + "&".join(subs) if subs else "")
    want = base64.b64encode(hmac.new(SECRET_KEY.encode(), sts.encode(), "sha1").digest()).decode()
    if want != m.group(2):
        return "signature %s, AWS computes %s over %r" % (m.group(2), want, sts)
    return None


AUTH_RE = re.compile(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request, ?"
                     r"SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$")


def sig_problem(method, path, headers, body):
    """Why AWS would refuse this signed request (None: it is right, or not ours)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    auth = headers.get("authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256"):
        return v2_problem(method, path, headers)
    m = AUTH_RE.match(auth)
    if m is None:
        return "malformed Authorization: %r" % auth
    key, day, region, signed, sig = m.groups()
    if key != ACCESS_KEY:
        return None  # an unknown key: s3rver refuses it
    date = headers.get("x-amz-date", "")
    if not date.startswith(day):
        return "x-amz-date %r is not of the credential's day %s" % (date, day)
    if abs(time.mktime(time.strptime(date, "%Y%m%dT%H%M%SZ")) - time.mktime(time.gmtime())) > 900:
        return "x-amz-date %r is off by more than 15 minutes" % date
    names = signed.split(";")
    for need in ("host", "x-amz-content-sha256", "x-amz-date"):
        if need not in names:
            return "%s is not signed" % need
    payload = headers.get("x-amz-content-sha256")
    if payload != "UNSIGNED-PAYLOAD" and payload != hashlib.sha256(body).hexdigest():
        return "x-amz-content-sha256 %r is not the body's (%d bytes)" % (payload, len(body))
    hdrs = {}
    for n in names:
        if n not in headers:
            return "signed header %s was not sent" % n
        hdrs[n] = headers[n]
    req = AWSRequest(method=method, url="http://%s%s" % (headers["host"], path), headers=hdrs,
                     data=body)
    req.context["timestamp"] = date
    signer = S3SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", region)
    canonical = signer.canonical_request(req)
    want = signer.signature(signer.string_to_sign(req, canonical), req)
    if want != sig:
        return "signature %s, AWS computes %s over:\n%s" % (sig, want, canonical)
    return None


class SigProxy:
    """Checks signatures, then forwards the requests to the server on `upstream`."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.port = free_port()
        self.problems = []
        self.checked = 0
        self.running = False
        # (method, path) -> True: that request gets no answer (its connection is
        # closed), as from a server that is down; the test sets it.
        self.refuse = None
        self.refused = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _any(self):
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n) if n else b""
                refuse = proxy.refuse
                if refuse is not None and refuse(self.command, self.path):
                    proxy.refused += 1
                    self.close_connection = True
                    return
                hdrs = {k.lower(): v for k, v in self.headers.items()}
                why = sig_problem(self.command, self.path, hdrs, body)
                proxy.checked += 1
                if why is not None:
                    proxy.problems.append("%s %s: %s" % (self.command, self.path, why))
                    msg = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>"
                           "SignatureDoesNotMatch</Code><Message>proxy: %s</Message></Error>"
                           % why.split("\n")[0].replace("<", "&lt;")).encode()
                    self._answer(403, [("Content-Type", "application/xml")], msg)
                    return
                try:
                    c = http.client.HTTPConnection("127.0.0.1", proxy.upstream, timeout=60)
                    fwd = {k: v for k, v in self.headers.items() if k.lower() != "expect"}
                    c.request(self.command, self.path, body=body if n else None, headers=fwd)
                    r = c.getresponse()
                    data = r.read()
                    c.close()
                except OSError:
                    self.close_connection = True  # as the server itself would: no answer
                    return
                hs = [(k, v) for k, v in r.getheaders()
                      if k.lower() not in ("content-length", "connection",
                                           "transfer-encoding")]
                self._answer(r.status, hs, data, head=self.command == "HEAD")

            def _answer(self, status, headers, data, head=False):
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if not head:
                    self.wfile.write(data)

            do_GET = do_PUT = do_DELETE = do_HEAD = do_POST = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self):
        self.running = True
        self.thread.start()

    def stop(self):
        if self.running:
            self.server.shutdown()
        self.server.server_close()
        self.running = False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--sig", choices=("v2", "v4"), default="v2")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no program to run")
    s = S3rver(a.src)
    try:
        s.start()
        env = dict(os.environ, SHOAL_TEST_COS_URL=s.url(a.sig), **S3rver.env())
        print("s3rver on port %d: %s" % (s.port, s.url(a.sig)), flush=True)
        t0 = time.monotonic()
        rc = subprocess.call(cmd, env=env)
        print("%s: exit %d in %.1fs" % (os.path.basename(cmd[0]), rc, time.monotonic() - t0))
        if s.proxy is not None:
            print("signatures checked: %d, refused: %d" % (s.proxy.checked,
                                                           len(s.proxy.problems)))
            for p in s.proxy.problems[:5]:
                print("  " + p)
            if s.proxy.checked == 0:
                rc = rc or 1  # nothing went through the checks
        return rc
    finally:
        s.stop()


if __name__ == "__main__":
    sys.exit(main())
