#!/usr/bin/python3
"""integ.s3_clients: the S3 front door with the real clients Debian ships,
each with no setting beyond the endpoint and the credentials (a config file
per client, path-style where the client needs it to reach 127.0.0.1), on one
cluster with one S3 key (`shoalctl tenant s3-key create`).

Every client (aws-cli v2 `aws s3` and `aws s3api`, boto3, s3cmd, rclone):
- mb, cp/put/copy of a directory tree with nested prefixes, ls (recursive
  and by delimiter), sync (twice: the second moves only the changed file),
  download compared byte for byte, rm, rb;
- a 50 MiB upload that the client makes multipart (aws 8 MiB parts, boto3
  8 MiB, s3cmd 15 MiB, rclone's streamed rcat 5 MiB), its download checked
  by SHA-256, its ETag "<md5>-<parts>";
- a ranged GET (s3cmd: `get --continue` of a partial file);
- a presigned GET fetched with curl (s3cmd signs URLs with SigV2 only,
  which needs the secret the gateway never holds: refused InvalidRequest);
- a wrong secret (SignatureDoesNotMatch), an unknown key
  (InvalidAccessKeyId), an expired presigned URL (AccessDenied).

Then, with boto3 and hand-signed requests: conditional GETs, copies,
DeleteObjects, multipart edge cases (EntityTooSmall, InvalidPart, abort,
an upload that survives a gateway restart), listings paged v1 and v2, the
mapping to the native API both ways (parts of uploads in progress never
show), virtual-hosted buckets, malformed requests (the gateway stays up),
that S3 traffic is served by the nodes under the tenant's id (its fair
share), and SlowDown (503) where the native API answers 429.

Last, --rebuild-meta: with S3 objects of every kind in place (single
versions and multipart objects with user metadata, a part uploaded twice,
an upload in progress, an aborted one, deleted objects and buckets) and
every META record logged, the gateway's store is deleted and rebuilt from
the nodes' insertion logs: every bucket, object (bytes, ETag,
Last-Modified, Content-Type, user metadata), listing and upload in
progress is as it was, what was deleted stays deleted, the upload in
progress completes, and a plain restart after it serves the same.
"""
import hashlib
import http.client
import json
import os
import shutil
import subprocess
import threading
import time

import shoaltest as st

BIG = 50 << 20


def run(cmd, env, check=True, timeout=180, stdin=None):
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, stdin=stdin)
    st.log("%.2fs exit %d: %s" % (time.monotonic() - t0, p.returncode, " ".join(cmd)[:160]))
    if check and p.returncode != 0:
        raise st.TestFailure("%s: exit %d\nstdout: %s\nstderr: %s" % (
            " ".join(cmd), p.returncode, p.stdout.decode(errors="replace")[-2000:],
            p.stderr.decode(errors="replace")[-2000:]))
    return p


def out(p):
    return p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")


def clean_env(home):
    """The process environment without AWS_* (this machine sets AWS_CA_BUNDLE,
    which rclone refuses over http) and with a HOME of our own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["HOME"] = home
    return env


def make_tree(root):
    files = {"top.txt": b"top\n", "a/one.txt": b"one\n", "a/b/two.txt": b"two\n" * 100,
             "a/b/c/three.bin": os.urandom(70000), "d/four.txt": b"four\n"}
    for rel, data in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    return files


def same_tree(t, files, root, what):
    for rel, data in files.items():
        path = os.path.join(root, rel)
        t.check(os.path.exists(path), "%s: %s missing" % (what, rel))
        with open(path, "rb") as f:
            t.eq(f.read(), data, "%s: %s content" % (what, rel))


def curl_get(url, headers=None):
    args = ["-s", "-o", "-", "-w", "\n%{http_code}"]
    for h in headers or []:
        args += ["-H", h]
    p = st.curl(*(args + [url]), timeout=60)
    body, _, code = p.stdout.rpartition(b"\n")
    return int(code), body


def s3_error_code(body):
    b = body.decode(errors="replace")
    if "<Code>" not in b:
        return None
    return b.split("<Code>", 1)[1].split("</Code>", 1)[0]


class Ctx:
    def __init__(self, t, c, key, tmp):
        self.t = t
        self.c = c
        self.akid = key["access_key_id"]
        self.secret = key["secret_access_key"]
        # the secret with its first character changed (one "x" + [1:] would
        # not change when the random secret starts with "x")
        self.wrong_secret = ("y" if self.secret[0] == "x" else "x") + self.secret[1:]
        self.endpoint = "http://127.0.0.1:%d" % c.s3_port
        self.tmp = tmp
        self.tree = os.path.join(tmp, "tree")
        self.files = make_tree(self.tree)
        self.big = os.path.join(tmp, "big.bin")
        self.big_sha = st.write_random_file(self.big, BIG, seed=7)
        with open(self.big, "rb") as f:
            self.big_head = f.read(8192)

    def dir(self, name):
        d = os.path.join(self.tmp, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        return d

    def boto(self, secret=None, akid=None, **kw):
        import boto3
        return boto3.client("s3", endpoint_url=self.endpoint,
                            aws_access_key_id=akid or self.akid,
                            aws_secret_access_key=secret or self.secret,
                            region_name="us-east-1", **kw)

    def check_big(self, path, what):
        self.t.eq(st.sha256_file(path), self.big_sha, "%s: SHA-256 of the 50 MiB download" % what)

    def check_multipart_etag(self, bucket, key, parts, what):
        h = self.boto().head_object(Bucket=bucket, Key=key)
        etag = h["ETag"].strip('"')
        self.t.check(etag.endswith("-%d" % parts),
                     "%s: ETag %s is not that of %d parts" % (what, etag, parts))
        self.t.eq(h["ContentLength"], BIG, "%s: size" % what)


# ----------------------------------------------------------------------------- aws-cli


def aws_cli(t, x):
    home = x.dir("aws-home")
    os.makedirs(os.path.join(home, ".aws"))
    with open(os.path.join(home, ".aws", "config"), "w") as f:
        f.write("[default]\nregion = us-east-1\n")
    with open(os.path.join(home, ".aws", "credentials"), "w") as f:
        f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (
            x.akid, x.secret))
    env = clean_env(home)
    aws = ["/usr/bin/aws", "--endpoint-url", x.endpoint]

    run(aws + ["s3", "mb", "s3://aws-bkt"], env)
    run(aws + ["s3", "cp", "--recursive", x.tree, "s3://aws-bkt/tree/"], env)
    ls = out(run(aws + ["s3", "ls", "--recursive", "s3://aws-bkt/"], env))
    for rel in x.files:
        t.check(("tree/" + rel) in ls, "aws s3 ls --recursive lacks tree/%s:\n%s" % (rel, ls))
    ls = out(run(aws + ["s3", "ls", "s3://aws-bkt/tree/"], env))
    t.check("PRE a/" in ls and "PRE d/" in ls and "top.txt" in ls and "one.txt" not in ls,
            "aws s3 ls by delimiter:\n%s" % ls)
    p = run(aws + ["s3", "sync", x.tree, "s3://aws-bkt/tree/"], env)
    t.eq(out(p).strip(), "", "aws s3 sync of an unchanged tree uploads nothing")
    with open(os.path.join(x.tree, "a", "one.txt"), "ab") as f:
        f.write(b"changed\n")
    x.files["a/one.txt"] += b"changed\n"
    p = run(aws + ["s3", "sync", x.tree, "s3://aws-bkt/tree/"], env)
    t.eq(out(p).count("upload:"), 1, "aws s3 sync after one change: %s" % out(p))
    down = x.dir("aws-down")
    run(aws + ["s3", "sync", "s3://aws-bkt/tree/", down], env)
    same_tree(t, x.files, down, "aws s3 sync down")

    # 50 MiB: 7 parts of 8 MiB
    run(aws + ["s3", "cp", x.big, "s3://aws-bkt/big.bin"], env)
    x.check_multipart_etag("aws-bkt", "big.bin", 7, "aws s3 cp")
    run(aws + ["s3", "cp", "s3://aws-bkt/big.bin", os.path.join(down, "big.bin")], env)
    x.check_big(os.path.join(down, "big.bin"), "aws s3 cp")

    # s3api: a range, a delimiter listing
    rng = os.path.join(down, "range.out")
    p = run(aws + ["s3api", "get-object", "--bucket", "aws-bkt", "--key", "big.bin", "--range",
                   "bytes=100-4099", rng], env)
    t.eq(json.loads(p.stdout)["ContentRange"], "bytes 100-4099/%d" % BIG, "aws ContentRange")
    with open(rng, "rb") as f:
        t.check(f.read() == x.big_head[100:4100], "aws s3api ranged get-object bytes")
    p = run(aws + ["s3api", "list-objects-v2", "--bucket", "aws-bkt", "--prefix", "tree/a/",
                   "--delimiter", "/"], env)
    j = json.loads(p.stdout)
    t.eq([c["Prefix"] for c in j.get("CommonPrefixes", [])], ["tree/a/b/"], "aws CommonPrefixes")
    t.eq([o["Key"] for o in j.get("Contents", [])], ["tree/a/one.txt"], "aws Contents")

    # presigned (aws-cli v2 signs them with SigV4), fetched with curl
    url = run(aws + ["s3", "presign", "s3://aws-bkt/tree/top.txt", "--expires-in", "300"],
              env).stdout.decode().strip()
    code, body = curl_get(url)
    t.eq((code, body), (200, x.files["top.txt"]), "curl of an aws s3 presign URL")
    sig = url.split("X-Amz-Signature=")[1][:64]
    code, body = curl_get(url.replace(sig, ("0" if sig[0] != "0" else "1") + sig[1:]))
    t.eq((code, s3_error_code(body)), (403, "SignatureDoesNotMatch"), "curl of a bad signature")

    # errors
    p = run(aws + ["s3", "rb", "s3://aws-bkt"], env, check=False)
    t.check(p.returncode != 0 and "BucketNotEmpty" in out(p), "aws s3 rb of a full bucket: %s"
            % out(p))
    bad = dict(env, AWS_SECRET_ACCESS_KEY=x.wrong_secret, AWS_ACCESS_KEY_ID=x.akid)
    p = run(aws + ["s3", "ls", "s3://aws-bkt/"], bad, check=False)
    t.check(p.returncode != 0 and "SignatureDoesNotMatch" in out(p), "aws wrong secret: %s"
            % out(p))
    bad = dict(env, AWS_SECRET_ACCESS_KEY=x.secret, AWS_ACCESS_KEY_ID="AKNOTAKEYATALL222222")
    p = run(aws + ["s3", "ls"], bad, check=False)
    t.check(p.returncode != 0 and "InvalidAccessKeyId" in out(p), "aws unknown key: %s" % out(p))

    run(aws + ["s3", "rm", "--recursive", "s3://aws-bkt/"], env)
    t.eq(out(run(aws + ["s3", "ls", "--recursive", "s3://aws-bkt/"], env, check=False)).strip(),
         "", "aws s3 ls after rm --recursive")
    run(aws + ["s3", "rb", "s3://aws-bkt"], env)
    t.check("aws-bkt" not in out(run(aws + ["s3", "ls"], env)), "aws s3 ls after rb")


# ----------------------------------------------------------------------------- boto3


def boto3_client(t, x):
    import boto3
    import botocore
    from boto3.s3.transfer import TransferConfig
    from botocore.config import Config

    s = x.boto()
    s.create_bucket(Bucket="boto-bkt")
    for rel in x.files:
        s.upload_file(os.path.join(x.tree, rel), "boto-bkt", "tree/" + rel)
    keys = sorted(o["Key"] for o in s.list_objects_v2(Bucket="boto-bkt")["Contents"])
    t.eq(keys, sorted("tree/" + r for r in x.files), "boto3 list after upload")
    down = x.dir("boto-down")
    for rel in x.files:
        path = os.path.join(down, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        s.download_file("boto-bkt", "tree/" + rel, path)
    same_tree(t, x.files, down, "boto3 download_file")
    # a delimiter listing
    r = s.list_objects_v2(Bucket="boto-bkt", Prefix="tree/", Delimiter="/")
    t.eq([p["Prefix"] for p in r["CommonPrefixes"]], ["tree/a/", "tree/d/"], "boto3 prefixes")
    t.eq([o["Key"] for o in r["Contents"]], ["tree/top.txt"], "boto3 keys by delimiter")

    # 50 MiB with boto3's defaults: 7 parts of 8 MiB
    s.upload_file(x.big, "boto-bkt", "big.bin", Config=TransferConfig())
    x.check_multipart_etag("boto-bkt", "big.bin", 7, "boto3 upload_file")
    s.download_file("boto-bkt", "big.bin", os.path.join(down, "big.bin"))
    x.check_big(os.path.join(down, "big.bin"), "boto3 download_file")
    g = s.get_object(Bucket="boto-bkt", Key="big.bin", Range="bytes=-100")
    t.eq(g["ResponseMetadata"]["HTTPStatusCode"], 206, "boto3 suffix range status")
    with open(x.big, "rb") as f:
        f.seek(BIG - 100)
        t.check(g["Body"].read() == f.read(), "boto3 suffix range bytes")
    try:
        s.get_object(Bucket="boto-bkt", Key="big.bin", Range="bytes=%d-" % BIG)
        t.check(False, "boto3: a range past the end was served")
    except botocore.exceptions.ClientError as e:
        t.eq((e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]),
             ("InvalidRange", 416), "boto3 range past the end")

    # presigned: SigV4 when asked for; botocore's default (SigV2) is refused
    v4 = x.boto(config=Config(signature_version="s3v4"))
    url = v4.generate_presigned_url("get_object", Params={"Bucket": "boto-bkt",
                                                          "Key": "tree/a/one.txt"}, ExpiresIn=60)
    t.eq(curl_get(url), (200, x.files["a/one.txt"]), "curl of a boto3 presigned URL")
    url = s.generate_presigned_url("get_object", Params={"Bucket": "boto-bkt",
                                                         "Key": "tree/a/one.txt"})
    code, body = curl_get(url)
    t.eq((code, s3_error_code(body)), (400, "InvalidRequest"), "a SigV2 presigned URL")
    url = v4.generate_presigned_url("get_object", Params={"Bucket": "boto-bkt",
                                                          "Key": "tree/a/one.txt"}, ExpiresIn=1)
    time.sleep(2.1)
    code, body = curl_get(url)
    t.eq((code, s3_error_code(body)), (403, "AccessDenied"), "an expired presigned URL")
    t.check(b"Request has expired" in body, "expired URL message: %r" % body)

    for what, cl, code in (("wrong secret", x.boto(secret=x.wrong_secret),
                            "SignatureDoesNotMatch"),
                           ("unknown key", x.boto(akid="AKUNKNOWNKEY22222222"),
                            "InvalidAccessKeyId")):
        try:
            cl.list_objects_v2(Bucket="boto-bkt")
            t.check(False, "boto3 %s was served" % what)
        except botocore.exceptions.ClientError as e:
            t.eq(e.response["Error"]["Code"], code, "boto3 " + what)
    for o in s.list_objects_v2(Bucket="boto-bkt")["Contents"]:
        s.delete_object(Bucket="boto-bkt", Key=o["Key"])
    s.delete_bucket(Bucket="boto-bkt")
    t.check("boto-bkt" not in [b["Name"] for b in s.list_buckets()["Buckets"]],
            "boto3 bucket deleted")
    del boto3


# ----------------------------------------------------------------------------- s3cmd


def s3cmd_client(t, x):
    home = x.dir("s3cmd-home")
    cfg = os.path.join(home, ".s3cfg")
    hostport = "127.0.0.1:%d" % x.c.s3_port

    def write_cfg(path, secret):
        with open(path, "w") as f:
            f.write("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\n"
                    "host_bucket = %s\nuse_https = False\n" % (x.akid, secret, hostport, hostport))
    write_cfg(cfg, x.secret)
    env = clean_env(home)
    s3 = ["/usr/bin/s3cmd", "-c", cfg]

    run(s3 + ["mb", "s3://s3cmd-bkt"], env)
    run(s3 + ["put", "--recursive", x.tree + "/", "s3://s3cmd-bkt/tree/"], env)
    ls = out(run(s3 + ["ls", "--recursive", "s3://s3cmd-bkt"], env))
    for rel in x.files:
        t.check("s3://s3cmd-bkt/tree/" + rel in ls, "s3cmd ls -r lacks %s:\n%s" % (rel, ls))
    ls = out(run(s3 + ["ls", "s3://s3cmd-bkt/tree/"], env))
    t.check("DIR  s3://s3cmd-bkt/tree/a/" in ls and "s3://s3cmd-bkt/tree/top.txt" in ls and
            "one.txt" not in ls, "s3cmd ls by delimiter:\n%s" % ls)
    p = run(s3 + ["sync", x.tree + "/", "s3://s3cmd-bkt/tree/"], env)
    t.eq(out(p).count("upload:"), 0, "s3cmd sync unchanged: %s" % out(p))
    with open(os.path.join(x.tree, "d", "four.txt"), "ab") as f:
        f.write(b"more\n")
    x.files["d/four.txt"] += b"more\n"
    p = run(s3 + ["sync", x.tree + "/", "s3://s3cmd-bkt/tree/"], env)
    t.eq(out(p).count("upload:"), 1, "s3cmd sync after one change: %s" % out(p))
    down = x.dir("s3cmd-down")
    run(s3 + ["sync", "s3://s3cmd-bkt/tree/", down + "/"], env)
    same_tree(t, x.files, down, "s3cmd sync down")

    # 50 MiB: 4 parts of 15 MiB
    run(s3 + ["put", x.big, "s3://s3cmd-bkt/big.bin"], env)
    x.check_multipart_etag("s3cmd-bkt", "big.bin", 4, "s3cmd put")
    run(s3 + ["get", "s3://s3cmd-bkt/big.bin", os.path.join(down, "big.bin")], env)
    x.check_big(os.path.join(down, "big.bin"), "s3cmd get")
    # a ranged GET: --continue asks for the bytes after a partial file
    part = os.path.join(down, "partial.bin")
    with open(x.big, "rb") as src, open(part, "wb") as dst:
        dst.write(src.read(BIG - 1234567))
    run(s3 + ["get", "--continue", "s3://s3cmd-bkt/big.bin", part], env)
    x.check_big(part, "s3cmd get --continue")

    # presigned: s3cmd signs URLs with SigV2 only
    url = out(run(s3 + ["signurl", "s3://s3cmd-bkt/tree/top.txt", "+300"], env)).strip()
    code, body = curl_get(url.replace("https://", "http://"))
    t.eq((code, s3_error_code(body)), (400, "InvalidRequest"), "curl of an s3cmd signurl URL")

    badcfg = os.path.join(home, "bad.s3cfg")
    write_cfg(badcfg, x.wrong_secret)
    p = run(["/usr/bin/s3cmd", "-c", badcfg, "ls", "s3://s3cmd-bkt"], env, check=False)
    t.check(p.returncode != 0 and "SignatureDoesNotMatch" in out(p), "s3cmd wrong secret: %s"
            % out(p))
    run(s3 + ["del", "--recursive", "--force", "s3://s3cmd-bkt/"], env)
    run(s3 + ["rb", "s3://s3cmd-bkt"], env)


# ----------------------------------------------------------------------------- rclone


def rclone_client(t, x):
    home = x.dir("rclone-home")
    cfg = os.path.join(home, "rclone.conf")
    with open(cfg, "w") as f:
        for name, secret in (("shoal", x.secret), ("bad", x.wrong_secret)):
            f.write("[%s]\ntype = s3\nprovider = Other\naccess_key_id = %s\n"
                    "secret_access_key = %s\nendpoint = %s\n\n" % (name, x.akid, secret,
                                                                   x.endpoint))
    env = clean_env(home)
    rc = ["/usr/bin/rclone", "--config", cfg]

    run(rc + ["mkdir", "shoal:rclone-bkt"], env)
    run(rc + ["copy", x.tree, "shoal:rclone-bkt/tree"], env)
    ls = out(run(rc + ["ls", "shoal:rclone-bkt"], env))
    for rel in x.files:
        t.check("tree/" + rel in ls, "rclone ls lacks %s:\n%s" % (rel, ls))
    lsd = out(run(rc + ["lsd", "shoal:rclone-bkt/tree"], env))
    t.check(lsd.split() and lsd.split()[-1] == "d" and " a\n" in lsd, "rclone lsd:\n%s" % lsd)
    with open(os.path.join(x.tree, "a", "b", "two.txt"), "ab") as f:
        f.write(b"rclone\n")
    x.files["a/b/two.txt"] += b"rclone\n"
    p = run(rc + ["sync", "-v", x.tree, "shoal:rclone-bkt/tree"], env)
    t.eq(out(p).count("Copied"), 1, "rclone sync after one change: %s" % out(p))
    run(rc + ["check", x.tree, "shoal:rclone-bkt/tree"], env)
    down = x.dir("rclone-down")
    run(rc + ["copy", "shoal:rclone-bkt/tree", down], env)
    same_tree(t, x.files, down, "rclone copy down")

    # 50 MiB streamed: 10 parts of 5 MiB (S3's smallest)
    with open(x.big, "rb") as f:
        run(rc + ["rcat", "shoal:rclone-bkt/big.bin"], env, stdin=f)
    x.check_multipart_etag("rclone-bkt", "big.bin", 10, "rclone rcat")
    run(rc + ["copyto", "shoal:rclone-bkt/big.bin", os.path.join(down, "big.bin")], env)
    x.check_big(os.path.join(down, "big.bin"), "rclone copyto")
    p = run(rc + ["cat", "--offset", "1000", "--count", "2000", "shoal:rclone-bkt/big.bin"], env)
    t.check(p.stdout == x.big_head[1000:3000], "rclone cat --offset --count (a ranged GET)")

    url = run(rc + ["link", "shoal:rclone-bkt/tree/top.txt"], env).stdout.decode().strip()
    t.eq(curl_get(url), (200, x.files["top.txt"]), "curl of an rclone link")
    p = run(rc + ["ls", "bad:rclone-bkt"], env, check=False)
    t.check(p.returncode != 0 and "SignatureDoesNotMatch" in out(p), "rclone wrong secret: %s"
            % out(p))
    run(rc + ["purge", "shoal:rclone-bkt"], env)
    t.check("rclone-bkt" not in out(run(rc + ["lsd", "shoal:"], env)), "rclone purge")


# ----------------------------------------------------------------------------- semantics


def semantics(t, x):
    import botocore

    s = x.boto()

    def code_of(fn, **kw):
        try:
            fn(**kw)
        except botocore.exceptions.ClientError as e:
            return e.response["Error"]["Code"]
        return "OK"

    s.create_bucket(Bucket="sem")
    t.eq(code_of(s.create_bucket, Bucket="sem"), "BucketAlreadyOwnedByYou", "bucket twice")
    t.eq(code_of(s.create_bucket, Bucket="Bad_Name"), "InvalidBucketName", "bad bucket name")
    t.eq(code_of(s.get_object, Bucket="sem", Key="none"), "NoSuchKey", "missing key")
    t.eq(code_of(s.get_object, Bucket="nobkt", Key="k"), "NoSuchBucket", "missing bucket")
    t.eq(code_of(s.put_object, Bucket="nobkt", Key="k", Body=b"x"), "NoSuchBucket",
         "PUT into a missing bucket")
    t.eq(code_of(s.delete_object, Bucket="sem", Key="none"), "OK", "DELETE of nothing")
    t.eq(code_of(s.head_bucket, Bucket="nobkt"), "404", "HeadBucket of a missing bucket")
    t.eq(code_of(s.list_objects_v2, Bucket="nobkt"), "NoSuchBucket", "listing a missing bucket")

    r = s.put_object(Bucket="sem", Key="doc.txt", Body=b"hello world", ContentType="text/plain",
                     Metadata={"color": "blue"}, CacheControl="max-age=60",
                     ContentEncoding="identity")
    h = s.head_object(Bucket="sem", Key="doc.txt")
    t.eq((h["ContentType"], h["Metadata"], h["CacheControl"], h["ContentEncoding"], h["ETag"]),
         ("text/plain", {"color": "blue"}, "max-age=60", "identity", r["ETag"]), "stored headers")
    t.eq(h["ETag"].strip('"'), hashlib.md5(b"hello world").hexdigest(), "ETag is the MD5")
    t.check(abs(h["LastModified"].timestamp() - time.time()) < 120, "Last-Modified is now")
    for kw, want in ((dict(IfNoneMatch=r["ETag"]), "304"), (dict(IfMatch='"0"'),
                                                           "PreconditionFailed"),
                     (dict(IfModifiedSince=h["LastModified"]), "304"),
                     (dict(IfUnmodifiedSince=h["LastModified"].replace(year=2001)),
                      "PreconditionFailed"),
                     (dict(IfMatch=r["ETag"], IfUnmodifiedSince=h["LastModified"].replace(
                         year=2001)), "OK")):
        t.eq(code_of(s.get_object, Bucket="sem", Key="doc.txt", **kw), want, "GET if %r" % kw)

    # copies: metadata copied or replaced; a copy onto itself must change something
    s.copy_object(Bucket="sem", Key="copy.txt", CopySource="sem/doc.txt")
    h2 = s.head_object(Bucket="sem", Key="copy.txt")
    t.eq((h2["Metadata"], h2["ETag"]), ({"color": "blue"}, r["ETag"]), "CopyObject COPY")
    s.copy_object(Bucket="sem", Key="copy.txt", CopySource="sem/doc.txt",
                  MetadataDirective="REPLACE", Metadata={"k": "v"}, ContentType="a/b")
    h2 = s.head_object(Bucket="sem", Key="copy.txt")
    t.eq((h2["Metadata"], h2["ContentType"]), ({"k": "v"}, "a/b"), "CopyObject REPLACE")
    t.eq(s.get_object(Bucket="sem", Key="copy.txt")["Body"].read(), b"hello world", "copy bytes")
    t.eq(code_of(s.copy_object, Bucket="sem", Key="doc.txt", CopySource="sem/doc.txt"),
         "InvalidRequest", "copy onto itself")
    t.eq(code_of(s.copy_object, Bucket="sem", Key="c2", CopySource="sem/doc.txt",
                 CopySourceIfMatch='"0"'), "PreconditionFailed", "copy-source-if-match")

    # multipart edge cases
    u = s.create_multipart_upload(Bucket="sem", Key="mp")["UploadId"]
    p1 = s.upload_part(Bucket="sem", Key="mp", UploadId=u, PartNumber=1, Body=b"a" * 1000)
    p2 = s.upload_part(Bucket="sem", Key="mp", UploadId=u, PartNumber=2, Body=b"b" * 1000)
    parts = [{"PartNumber": 1, "ETag": p1["ETag"]}, {"PartNumber": 2, "ETag": p2["ETag"]}]
    t.eq(code_of(s.complete_multipart_upload, Bucket="sem", Key="mp", UploadId=u,
                 MultipartUpload={"Parts": parts}), "EntityTooSmall", "a small first part")
    t.eq(code_of(s.complete_multipart_upload, Bucket="sem", Key="mp", UploadId=u,
                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p2["ETag"]}]}),
         "InvalidPart", "a part with the wrong ETag")
    t.eq([x_["Key"] for x_ in s.list_multipart_uploads(Bucket="sem")["Uploads"]], ["mp"],
         "ListMultipartUploads")
    s.abort_multipart_upload(Bucket="sem", Key="mp", UploadId=u)
    t.eq(code_of(s.list_parts, Bucket="sem", Key="mp", UploadId=u), "NoSuchUpload",
         "ListParts after abort")
    t.eq(code_of(s.upload_part, Bucket="sem", Key="mp", UploadId=u, PartNumber=1, Body=b"x"),
         "NoSuchUpload", "UploadPart after abort")

    # an upload in progress survives a gateway restart; its parts never show natively
    u = s.create_multipart_upload(Bucket="sem", Key="restart.bin", ContentType="x/y")["UploadId"]
    a = os.urandom(5 << 20)
    b = os.urandom(12345)
    e1 = s.upload_part(Bucket="sem", Key="restart.bin", UploadId=u, PartNumber=1, Body=a)["ETag"]
    native = x.c.gw(x.tenant)
    t.eq([o["key"] for o in native.list_all(prefix="sem/")], ["sem/copy.txt", "sem/doc.txt"],
         "native LIST during an upload (no parts)")
    t.check(all(not o["key"].startswith("\x00") for o in native.list_all()),
            "native LIST shows a part")
    x.c.stop(only=["gateway"])
    x.c.start(only=["gateway"])
    e2 = s.upload_part(Bucket="sem", Key="restart.bin", UploadId=u, PartNumber=2, Body=b)["ETag"]
    t.eq([p["PartNumber"] for p in s.list_parts(Bucket="sem", Key="restart.bin",
                                                   UploadId=u)["Parts"]], [1, 2], "ListParts")
    r = s.complete_multipart_upload(Bucket="sem", Key="restart.bin", UploadId=u, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    want = hashlib.md5(hashlib.md5(a).digest() + hashlib.md5(b).digest()).hexdigest() + "-2"
    t.eq(r["ETag"].strip('"'), want, "the multipart ETag")
    g = s.get_object(Bucket="sem", Key="restart.bin", Range="bytes=%d-%d" % (len(a) - 10,
                                                                           len(a) + 9))
    t.check(g["Body"].read() == a[-10:] + b[:10], "a range across the parts")
    t.check(native.get("sem/restart.bin").body == a + b, "the native GET of a multipart object")

    # native <-> S3: a native object in a bucket's namespace is an S3 object
    t.status(native.put("sem/native.txt", b"from the native API"), 201, "native PUT")
    r = s.get_object(Bucket="sem", Key="native.txt")
    t.eq(r["Body"].read(), b"from the native API", "S3 GET of a native object")
    t.eq(len(r["ETag"].strip('"')), 16, "a native object's ETag is its CRC-64")

    # listings paged: v2 by token, v1 by marker, with and without a delimiter
    for i in range(7):
        s.put_object(Bucket="sem", Key="p/%d/x" % i, Body=b"x")
        s.put_object(Bucket="sem", Key="p/f%d" % i, Body=b"y")
    got = []
    for page in s.get_paginator("list_objects_v2").paginate(
            Bucket="sem", Prefix="p/", Delimiter="/", PaginationConfig={"PageSize": 3}):
        got += [c["Prefix"] for c in page.get("CommonPrefixes", [])]
        got += [o["Key"] for o in page.get("Contents", [])]
    t.eq(sorted(got), sorted(["p/%d/" % i for i in range(7)] + ["p/f%d" % i for i in range(7)]),
         "ListObjectsV2 paged by 3 with a delimiter")
    got = []
    for page in s.get_paginator("list_objects").paginate(
            Bucket="sem", Prefix="p/", Delimiter="/", PaginationConfig={"PageSize": 4}):
        got += [c["Prefix"] for c in page.get("CommonPrefixes", [])]
        got += [o["Key"] for o in page.get("Contents", [])]
    t.eq(sorted(got), sorted(["p/%d/" % i for i in range(7)] + ["p/f%d" % i for i in range(7)]),
         "ListObjects v1 paged by 4 with a delimiter")
    r = s.list_objects_v2(Bucket="sem", Prefix="p/", StartAfter="p/5/x", MaxKeys=100)
    t.eq([o["Key"] for o in r["Contents"]][:2], ["p/6/x", "p/f0"], "StartAfter")
    t.eq(code_of(s.delete_bucket, Bucket="sem"), "BucketNotEmpty", "DeleteBucket, not empty")
    d = s.delete_objects(Bucket="sem", Delete={"Quiet": True, "Objects": [
        {"Key": "p/%d/x" % i} for i in range(7)] + [{"Key": "p/f%d" % i} for i in range(7)]})
    t.eq(d.get("Deleted", []) + d.get("Errors", []), [], "DeleteObjects Quiet")
    t.eq(s.list_objects_v2(Bucket="sem", Prefix="p/")["KeyCount"], 0, "after DeleteObjects")
    x.sem_done = True


def raw_signed(x, method, path, body=b"", headers=None, host=None, secret=None, query="",
               skew=0, send=None):
    """A request signed by botocore's SigV4 signer (its clock skew seconds
    off), sent as is to the S3 port (the Host header may name another),
    with the body send instead of the one signed when given."""
    import datetime
    import types
    from unittest import mock

    import botocore.auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    class Skewed(datetime.datetime):
        @classmethod
        def utcnow(cls):
            return datetime.datetime.utcnow() + datetime.timedelta(seconds=skew)

    hostport = host or "127.0.0.1:%d" % x.c.s3_port
    url = "http://%s%s%s" % (hostport, path, "?" + query if query else "")
    req = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    with mock.patch.object(botocore.auth, "datetime",
                           types.SimpleNamespace(datetime=Skewed, timedelta=datetime.timedelta)):
        botocore.auth.S3SigV4Auth(Credentials(x.akid, secret or x.secret), "s3",
                                  "us-east-1").add_auth(req)
    conn = http.client.HTTPConnection("127.0.0.1", x.c.s3_port, timeout=30)
    try:
        conn.putrequest(method, path + ("?" + query if query else ""), skip_host=True,
                        skip_accept_encoding=True)
        if "host" not in (k.lower() for k in req.headers.keys()):
            conn.putheader("Host", hostport)
        for k, v in req.headers.items():
            conn.putheader(k, v)
        if "Content-Length" not in req.headers:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body if send is None else send)
        r = conn.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
    finally:
        conn.close()


def chunked_put(x, path, data, chunk=65536, trailer=False, bad_sig=False, bad_crc=False):
    """A PUT with an aws-chunked body signed by hand: chained chunk
    signatures (STREAMING-AWS4-HMAC-SHA256-PAYLOAD) or, with trailer, no
    signatures and a CRC32 trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER)."""
    import base64
    import binascii
    import hmac

    def h(k, m):
        return hmac.new(k, m.encode(), hashlib.sha256).digest()

    amzdate = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    scope = "%s/us-east-1/s3/aws4_request" % amzdate[:8]
    mode = "STREAMING-UNSIGNED-PAYLOAD-TRAILER" if trailer else "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
    chunks = [data[i:i + chunk] for i in range(0, len(data), chunk)] + [b""]
    crc = binascii.crc32(data) ^ (1 if bad_crc else 0)
    b64crc = base64.b64encode(crc.to_bytes(4, "big")).decode()
    hdrs = {"host": "127.0.0.1:%d" % x.c.s3_port, "x-amz-date": amzdate,
            "x-amz-content-sha256": mode, "content-encoding": "aws-chunked",
            "x-amz-decoded-content-length": str(len(data))}
    if trailer:
        hdrs["x-amz-trailer"] = "x-amz-checksum-crc32"
    signed = sorted(hdrs)
    canon = "\n".join(["PUT", path, "", "".join("%s:%s\n" % (k, hdrs[k]) for k in signed),
                       ";".join(signed), mode])
    sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope, hashlib.sha256(canon.encode()).hexdigest()])
    key = h(h(h(h(("AWS4" + x.secret).encode(), amzdate[:8]), "us-east-1"), "s3"), "aws4_request")
    prev = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    hdrs["authorization"] = ("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s"
                             % (x.akid, scope, ";".join(signed), prev))
    body = b""
    for c in chunks:
        if trailer:
            body += b"%x\r\n" % len(c) + (c + b"\r\n" if c else b"")
            continue
        csts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amzdate, scope, prev,
                          hashlib.sha256(b"").hexdigest(), hashlib.sha256(c).hexdigest()])
        prev = hmac.new(key, csts.encode(), hashlib.sha256).hexdigest()
        if bad_sig and c:
            prev = "0" * 64
        body += b"%x;chunk-signature=%s\r\n" % (len(c), prev.encode()) + c + b"\r\n"
    if trailer:
        body += b"x-amz-checksum-crc32:" + b64crc.encode() + b"\r\n\r\n"
    conn = http.client.HTTPConnection("127.0.0.1", x.c.s3_port, timeout=30)
    try:
        conn.putrequest("PUT", path, skip_host=True, skip_accept_encoding=True)
        for k, v in hdrs.items():
            conn.putheader(k, v)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def protocol(t, x):
    s = x.boto()
    s.create_bucket(Bucket="vhost")
    # virtual-hosted: the bucket in the Host header
    st_, h, body = raw_signed(x, "PUT", "/v.txt", b"virtual", host="vhost.s3.localhost:%d"
                              % x.c.s3_port)
    t.eq(st_, 200, "PUT by a virtual-hosted bucket: %r" % body)
    t.eq(s.get_object(Bucket="vhost", Key="v.txt")["Body"].read(), b"virtual", "vhost object")
    st_, h, body = raw_signed(x, "GET", "/", host="vhost.s3.localhost:%d" % x.c.s3_port,
                              query="list-type=2")
    t.check(st_ == 200 and b"<Key>v.txt</Key>" in body, "ListObjectsV2 virtual-hosted: %r"
            % body)
    for k in ("x-amz-request-id", "x-amz-id-2"):
        t.check(h.get(k), "no %s on an answer" % k)
    # conditional writes: If-None-Match: * creates only; If-Match replaces only that version
    st_, h, body = raw_signed(x, "PUT", "/vhost/v.txt", b"again", headers={"If-None-Match": "*"})
    t.eq((st_, s3_error_code(body)), (412, "PreconditionFailed"), "PUT If-None-Match: * on a key")
    st_, h, body = raw_signed(x, "PUT", "/vhost/new.txt", b"new", headers={"If-None-Match": "*"})
    t.eq(st_, 200, "PUT If-None-Match: * on a new key")
    st_, h, body = raw_signed(x, "PUT", "/vhost/new.txt", b"newer", headers={"If-Match": '"0"'})
    t.eq((st_, s3_error_code(body)), (412, "PreconditionFailed"), "PUT If-Match another ETag")
    st_, h, body = raw_signed(x, "PUT", "/vhost/new.txt", b"newer", headers={
        "If-Match": '"%s"' % hashlib.md5(b"new").hexdigest()})
    t.eq(st_, 200, "PUT If-Match its ETag")
    # aws-chunked bodies, decoded in place: signed chunks, and an unsigned CRC32 trailer
    data = os.urandom(200000)
    st_, body = chunked_put(x, "/vhost/chunked.bin", data)
    t.eq(st_, 200, "a signed aws-chunked PUT: %r" % body[:300])
    g = s.get_object(Bucket="vhost", Key="chunked.bin")
    t.check(g["Body"].read() == data, "the aws-chunked object's bytes")
    t.eq((g["ETag"].strip('"'), g.get("ContentEncoding")), (hashlib.md5(data).hexdigest(), None),
         "aws-chunked: MD5 ETag, no Content-Encoding kept")
    st_, body = chunked_put(x, "/vhost/trailer.bin", data[:70001], chunk=8192, trailer=True)
    t.eq(st_, 200, "an unsigned aws-chunked PUT with a CRC32 trailer: %r" % body[:300])
    t.check(s.get_object(Bucket="vhost", Key="trailer.bin")["Body"].read() == data[:70001],
            "the trailer object's bytes")
    st_, body = chunked_put(x, "/vhost/badsig.bin", data, bad_sig=True)
    t.eq((st_, s3_error_code(body)), (403, "SignatureDoesNotMatch"), "a bad chunk signature")
    st_, body = chunked_put(x, "/vhost/badcrc.bin", data, trailer=True, bad_crc=True)
    t.eq((st_, s3_error_code(body)), (400, "BadDigest"), "a bad trailer checksum")
    for k in ("badsig.bin", "badcrc.bin"):
        t.eq(raw_signed(x, "HEAD", "/vhost/" + k)[0], 404, "a refused aws-chunked PUT left %s" % k)
    # a payload that is not what was signed
    st_, h, body = raw_signed(x, "PUT", "/vhost/sha.txt", b"abc", send=b"abd")
    t.eq((st_, s3_error_code(body)), (400, "XAmzContentSHA256Mismatch"), "SHA-256 mismatch")
    st_, h, body = raw_signed(x, "PUT", "/vhost/md5.txt", b"abc",
                              headers={"Content-MD5": "AAAAAAAAAAAAAAAAAAAAAA=="})
    t.eq((st_, s3_error_code(body)), (400, "BadDigest"), "Content-MD5 mismatch")
    # HEAD errors have no body; a clock 20 minutes off is refused
    st_, h, body = raw_signed(x, "HEAD", "/vhost/none")
    t.eq((st_, body), (404, b""), "HEAD of a missing key")
    st_, h, body = raw_signed(x, "GET", "/vhost/v.txt", skew=-1200)
    t.eq((st_, s3_error_code(body)), (403, "RequestTimeTooSkewed"), "skewed clock")
    # malformed bodies and requests: clear errors, the gateway stays up
    st_, h, body = raw_signed(x, "POST", "/vhost", b"<Delete><Object>", query="delete")
    t.eq((st_, s3_error_code(body)), (400, "MalformedXML"), "bad DeleteObjects XML")
    st_, h, body = raw_signed(x, "GET", "/vhost/a/../b")
    t.eq(st_, 400, "a key with a .. segment: %r" % body)
    st_, h, body = raw_signed(x, "GET", "/vhost", query="acl")
    t.eq((st_, s3_error_code(body)), (501, "NotImplemented"), "?acl")
    for raw in (b"GET /%ff%fe HTTP/1.1\r\nHost: x\r\n\r\n",
                b"PUT /vhost/k HTTP/1.1\r\nHost: x\r\nAuthorization: AWS4-HMAC-SHA256 "
                b"Credential=a/b,,,\r\nContent-Length: 1\r\n\r\nx",
                b"GET /?list-type=2&prefix=%00 HTTP/1.1\r\nHost: " + b"a" * 3000 + b"\r\n\r\n"):
        import socket
        so = socket.create_connection(("127.0.0.1", x.c.s3_port), timeout=10)
        so.sendall(raw)
        resp = so.recv(4096)
        so.close()
        t.check(resp.startswith(b"HTTP/1.1 4"), "malformed request answered 4xx: %r" % resp[:80])
    t.eq(s.get_object(Bucket="vhost", Key="v.txt")["Body"].read(), b"virtual", "still serving")
    # S3 traffic is the tenant's at the nodes (the same FQ as its native requests)
    total = 0.0
    for i in range(x.c.nodes):
        m = x.c.metrics(i)
        total += sum(v for k, v in m.items() if k.startswith(
            'shoal_fnstore_requests_total{tenant="%d"' % x.tenant["id"]))
    t.check(total > 100, "the nodes served %d requests for the S3 tenant" % total)
    r = st.http_request(x.c.gw_port, "GET", "/metrics", timeout=10)
    t.check(b'shoal_gateway_s3_requests_total{tenant="%d",op="upload_part"' % x.tenant["id"]
            in r.body, "gateway metrics count S3 requests by operation")


# ----------------------------------------------------------------------------- --rebuild-meta

def gw_drained(c):
    """Every version out of the persistent buffer and every META record logged."""
    r = st.http_request(c.gw_port, "GET", "/metrics", timeout=10)
    m = st.parse_metrics(r.body.decode("utf-8", "replace"))
    return m.get("shoal_gateway_buffered_objects", -1) == 0 and \
        m.get("shoal_gateway_meta_waiting", -1) == 0


def s3_state(s):
    """Everything a client can see: buckets, and per object its HEAD, and the
    uploads in progress with their parts."""
    out = {}
    for b in sorted(x["Name"] for x in s.list_buckets()["Buckets"]):
        objs = {}
        for page in s.get_paginator("list_objects_v2").paginate(Bucket=b):
            for o in page.get("Contents", []):
                h = s.head_object(Bucket=b, Key=o["Key"])
                objs[o["Key"]] = (h["ETag"], h["LastModified"], h["ContentLength"],
                                  h.get("ContentType"), h.get("Metadata"), o["ETag"],
                                  o["Size"])
        ups = {}
        for u in s.list_multipart_uploads(Bucket=b).get("Uploads", []):
            parts = s.list_parts(Bucket=b, Key=u["Key"], UploadId=u["UploadId"]).get("Parts", [])
            ups[u["UploadId"]] = (u["Key"], u["Initiated"],
                                  [(p["PartNumber"], p["ETag"], p["Size"]) for p in parts])
        out[b] = (objs, ups)
    return out


def rebuild_meta(t, x):
    """The S3 front door's metadata rebuilt from the nodes' insertion logs."""
    import botocore.exceptions
    s = x.boto()
    c = x.c

    def code_of(fn, **kw):
        try:
            fn(**kw)
        except botocore.exceptions.ClientError as e:
            return e.response["Error"]["Code"]
        return "OK"

    s.create_bucket(Bucket="rebuilt")
    s.create_bucket(Bucket="rbgone")
    s.put_object(Bucket="rebuilt", Key="single.txt", Body=b"one version\n", ContentType="text/plain",
                 Metadata={"color": "blue"}, CacheControl="max-age=60")
    s.put_object(Bucket="rebuilt", Key="gone.txt", Body=b"deleted")
    s.delete_object(Bucket="rebuilt", Key="gone.txt")
    s.put_object(Bucket="rbgone", Key="k", Body=b"x")
    s.delete_object(Bucket="rbgone", Key="k")
    s.delete_bucket(Bucket="rbgone")
    # a multipart object: part 2 uploaded twice, the second one completed
    parts = [os.urandom(5 << 20), os.urandom(5 << 20), os.urandom(777777)]
    u = s.create_multipart_upload(Bucket="rebuilt", Key="dir/multi.bin", ContentType="application/zip",
                                  Metadata={"kind": "multi"})["UploadId"]
    etags = []
    for i, body in enumerate(parts):
        if i == 1:
            s.upload_part(Bucket="rebuilt", Key="dir/multi.bin", UploadId=u, PartNumber=2,
                          Body=os.urandom(5 << 20))
        etags.append(s.upload_part(Bucket="rebuilt", Key="dir/multi.bin", UploadId=u,
                                   PartNumber=i + 1, Body=body)["ETag"])
    s.complete_multipart_upload(Bucket="rebuilt", Key="dir/multi.bin", UploadId=u, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    multi = b"".join(parts)
    # a multipart object that replaced a single version
    s.put_object(Bucket="rebuilt", Key="replaced.bin", Body=b"small first")
    u2 = s.create_multipart_upload(Bucket="rebuilt", Key="replaced.bin")["UploadId"]
    e = s.upload_part(Bucket="rebuilt", Key="replaced.bin", UploadId=u2, PartNumber=1,
                      Body=b"only part")["ETag"]
    s.complete_multipart_upload(Bucket="rebuilt", Key="replaced.bin", UploadId=u2, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e}]})
    # an upload in progress and an aborted one
    pending = s.create_multipart_upload(Bucket="rebuilt", Key="pending.bin",
                                        Metadata={"state": "open"})["UploadId"]
    p1 = os.urandom(5 << 20)
    e1 = s.upload_part(Bucket="rebuilt", Key="pending.bin", UploadId=pending, PartNumber=1,
                       Body=p1)["ETag"]
    ab = s.create_multipart_upload(Bucket="rebuilt", Key="aborted.bin")["UploadId"]
    s.upload_part(Bucket="rebuilt", Key="aborted.bin", UploadId=ab, PartNumber=1, Body=b"abc")
    s.abort_multipart_upload(Bucket="rebuilt", Key="aborted.bin", UploadId=ab)

    st.wait_until(lambda: gw_drained(c), 60, "every version and tombstone logged")
    before = s3_state(s)
    t.check("rebuilt" in before and "rbgone" not in before, "buckets before: %r" % list(before))
    t.eq(sorted(before["rebuilt"][0]), ["dir/multi.bin", "replaced.bin", "single.txt"],
         "the rebuilt bucket's objects")
    t.eq(list(before["rebuilt"][1]), [pending], "the rebuilt bucket's uploads in progress")
    native_before = sorted(o["key"] for o in c.gw(x.tenant).list_all())

    c.stop(only=["gateway"])
    shutil.rmtree(os.path.join(c.dir, "gateway", "meta"))
    t0 = time.monotonic()
    c.cluster_cmd("start", "--only", "gateway", "--gateway-args",
                  "--rebuild-meta --cos %s" % os.path.join(c.dir, "cos"))
    with open(os.path.join(c.dir, "logs", "gateway.log"), errors="replace") as f:
        done = [ln for ln in f if "rebuild-meta done" in ln]
    t.check(done, "the gateway logged its rebuild")
    st.log("rebuilt and serving in %.1fs: %s" % (time.monotonic() - t0, done[-1].strip()))
    t.check("multipart_left_out=0 " in done[-1],
            "with every record logged, no multipart object is left out: %s" % done[-1].strip())

    after = s3_state(s)
    t.eq(after, before, "buckets, objects (ETag, Last-Modified, type, metadata), uploads and "
         "parts after --rebuild-meta")
    h = s.head_object(Bucket="rebuilt", Key="single.txt")
    t.eq((h["Metadata"], h["ContentType"], h.get("CacheControl")),
         ({"color": "blue"}, "text/plain", "max-age=60"), "a single version's stored headers")
    t.eq(s.get_object(Bucket="rebuilt", Key="single.txt")["Body"].read(), b"one version\n",
         "a single version's bytes")
    h = s.head_object(Bucket="rebuilt", Key="dir/multi.bin")
    want = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest() + "-3"
    t.eq((h["ETag"].strip('"'), h["Metadata"], h["ContentLength"]),
         (want, {"kind": "multi"}, len(multi)), "the multipart object's ETag and metadata")
    t.check(s.get_object(Bucket="rebuilt", Key="dir/multi.bin")["Body"].read() == multi,
            "the multipart object whole (the part uploaded twice: its last)")
    g = s.get_object(Bucket="rebuilt", Key="dir/multi.bin", Range="bytes=%d-%d" % ((5 << 20) - 5,
                                                                                (5 << 20) + 4))
    t.check(g["Body"].read() == multi[(5 << 20) - 5:(5 << 20) + 5], "a range across parts")
    t.eq(s.get_object(Bucket="rebuilt", Key="replaced.bin")["Body"].read(), b"only part",
         "a multipart object that replaced a version")
    t.eq(code_of(s.get_object, Bucket="rebuilt", Key="gone.txt"), "NoSuchKey", "a deleted object")
    t.eq(code_of(s.head_bucket, Bucket="rbgone"), "404", "a deleted bucket")
    t.eq(code_of(s.list_parts, Bucket="rebuilt", Key="aborted.bin", UploadId=ab), "NoSuchUpload",
         "an aborted upload")
    native = c.gw(x.tenant)
    t.eq(sorted(o["key"] for o in native.list_all()), native_before, "the native LIST")
    t.check(native.get("rebuilt/dir/multi.bin").body == multi, "the native GET of the multipart object")
    # the upload in progress goes on
    p2 = os.urandom(1000)
    e2 = s.upload_part(Bucket="rebuilt", Key="pending.bin", UploadId=pending, PartNumber=2,
                       Body=p2)["ETag"]
    s.complete_multipart_upload(Bucket="rebuilt", Key="pending.bin", UploadId=pending, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    r = s.get_object(Bucket="rebuilt", Key="pending.bin")
    t.check(r["Body"].read() == p1 + p2 and r["Metadata"] == {"state": "open"},
            "the upload in progress completed after the rebuild")
    # a bucket deleted before keeps counting: created again, it works
    s.create_bucket(Bucket="rbgone")
    s.put_object(Bucket="rbgone", Key="k", Body=b"again")
    t.eq(s.get_object(Bucket="rbgone", Key="k")["Body"].read(), b"again", "a bucket made again")

    # a plain restart of the rebuilt store serves the same
    st.wait_until(lambda: gw_drained(c), 60, "every version logged again")
    mid = s3_state(s)
    c.stop(only=["gateway"])
    c.cluster_cmd("start", "--only", "gateway", "--gateway-args", c.gateway_args)
    t.eq(s3_state(s), mid, "after a plain restart of the rebuilt store")


def part_number(t, x):
    """GetObject and HeadObject with partNumber: one part of a multipart
    object (206, x-amz-mp-parts-count), the whole of another for part 1."""
    import botocore.exceptions
    s = x.boto()
    s.create_bucket(Bucket="pnum")
    p1, p2 = os.urandom(5 << 20), os.urandom(3000)
    u = s.create_multipart_upload(Bucket="pnum", Key="mp")["UploadId"]
    e1 = s.upload_part(Bucket="pnum", Key="mp", UploadId=u, PartNumber=1, Body=p1)["ETag"]
    e2 = s.upload_part(Bucket="pnum", Key="mp", UploadId=u, PartNumber=7, Body=p2)["ETag"]
    s.complete_multipart_upload(Bucket="pnum", Key="mp", UploadId=u, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 7, "ETag": e2}]})
    s.put_object(Bucket="pnum", Key="one", Body=p2)
    whole = s.head_object(Bucket="pnum", Key="mp")["ETag"]

    r = s.get_object(Bucket="pnum", Key="mp", PartNumber=2)
    t.eq((r["Body"].read() == p2, r["PartsCount"], r["ContentRange"], r["ETag"]),
         (True, 2, "bytes %d-%d/%d" % (len(p1), len(p1) + len(p2) - 1, len(p1) + len(p2)),
          whole), "GetObject partNumber=2 of two parts")
    r = s.get_object(Bucket="pnum", Key="mp", PartNumber=1)
    t.eq((r["Body"].read() == p1, r["ResponseMetadata"]["HTTPStatusCode"]), (True, 206),
         "GetObject partNumber=1")
    h = s.head_object(Bucket="pnum", Key="mp", PartNumber=2)
    t.eq((h["ContentLength"], h["PartsCount"]), (len(p2), 2), "HeadObject partNumber=2")
    r = s.get_object(Bucket="pnum", Key="one", PartNumber=1)
    t.eq((r["Body"].read() == p2, "PartsCount" in r), (True, False),
         "partNumber=1 of an object not uploaded in parts: the whole object")
    for key, n, code in (("mp", 3, "InvalidPartNumber"), ("one", 2, "InvalidPartNumber")):
        try:
            s.get_object(Bucket="pnum", Key=key, PartNumber=n)
            t.check(False, "GetObject %s partNumber=%d succeeded" % (key, n))
        except botocore.exceptions.ClientError as err:
            t.eq((err.response["Error"]["Code"], err.response["ResponseMetadata"]["HTTPStatusCode"]),
                 (code, 416), "GetObject %s partNumber=%d" % (key, n))
    try:
        s.get_object(Bucket="pnum", Key="mp", PartNumber=1, Range="bytes=0-9")
        t.check(False, "GetObject with both Range and partNumber succeeded")
    except botocore.exceptions.ClientError as err:
        t.eq(err.response["Error"]["Code"], "InvalidRequest", "Range and partNumber together")
    for key in ("mp", "one"):
        s.delete_object(Bucket="pnum", Key=key)
    s.delete_bucket(Bucket="pnum")


def upload_expiry(t, x):
    """Uploads begun more than --s3-upload-expiry-ms ago are aborted, their
    parts deleted; an upload completed before then is an object like any."""
    import botocore.exceptions
    c = x.c
    c.stop(only=["gateway"])
    c.cluster_cmd("start", "--only", "gateway", "--gateway-args",
                  (c.gateway_args + " --s3-upload-expiry-ms 1500").strip())
    s = x.boto()
    s.create_bucket(Bucket="exp")
    part = os.urandom(3000)
    old = s.create_multipart_upload(Bucket="exp", Key="left")["UploadId"]
    s.upload_part(Bucket="exp", Key="left", UploadId=old, PartNumber=1, Body=part)
    done = s.create_multipart_upload(Bucket="exp", Key="kept")["UploadId"]
    e = s.upload_part(Bucket="exp", Key="kept", UploadId=done, PartNumber=1, Body=part)["ETag"]
    s.complete_multipart_upload(Bucket="exp", Key="kept", UploadId=done, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e}]})
    ids = [u["UploadId"] for u in s.list_multipart_uploads(Bucket="exp").get("Uploads", [])]
    t.eq(ids, [old], "the upload in progress is listed")
    st.wait_until(lambda: not s.list_multipart_uploads(Bucket="exp").get("Uploads"), 15,
                  "the abandoned upload expired")
    try:
        s.upload_part(Bucket="exp", Key="left", UploadId=old, PartNumber=2, Body=part)
        t.check(False, "UploadPart to an expired upload succeeded")
    except botocore.exceptions.ClientError as err:
        t.eq(err.response["Error"]["Code"], "NoSuchUpload", "UploadPart to an expired upload")
    fresh = s.create_multipart_upload(Bucket="exp", Key="left")["UploadId"]
    s.upload_part(Bucket="exp", Key="left", UploadId=fresh, PartNumber=1, Body=part)
    t.eq([u["UploadId"] for u in s.list_multipart_uploads(Bucket="exp")["Uploads"]], [fresh],
         "an upload younger than the expiry stays")
    t.eq(s.get_object(Bucket="exp", Key="kept")["Body"].read(), part,
         "the object completed before the expiry")
    s.abort_multipart_upload(Bucket="exp", Key="left", UploadId=fresh)
    s.delete_object(Bucket="exp", Key="kept")
    s.delete_bucket(Bucket="exp")
    c.stop(only=["gateway"])
    c.cluster_cmd("start", "--only", "gateway", "--gateway-args", c.gateway_args)


def slow_down(t, x):
    """A tenant's queue full at the nodes: SlowDown (503) on S3, 429 natively."""
    c2 = t.cluster(nodes=2, controller_args="--ec-k 1 --ec-m 1",
                   fnstore_args="--queue-limit 2 --cap-ops 40", name="slow")
    c2.create_tenant("slow")
    key = json.loads(c2.shoalctl("--json", "tenant", "s3-key", "create", "slow").stdout)
    y = Ctx.__new__(Ctx)
    y.c, y.akid, y.secret = c2, key["access_key_id"], key["secret_access_key"]
    y.endpoint = "http://127.0.0.1:%d" % c2.s3_port
    y.boto().create_bucket(Bucket="slow")
    results = []
    lock = threading.Lock()

    def flood(i):
        st_, h, body = raw_signed(y, "PUT", "/slow/k%d" % i, b"x" * 100)
        with lock:
            results.append((st_, s3_error_code(body), h.get("retry-after")))
    ths = [threading.Thread(target=flood, args=(i,)) for i in range(60)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    slow = [r for r in results if r[0] == 503]
    t.check(slow and all(r[1] == "SlowDown" for r in slow),
            "a flood of 60 PUTs at 40 ops/s, queue limit 2: no SlowDown: %r" % results[:5])
    t.check(all(r[0] in (200, 503) for r in results), "flood answers: %r" % results)
    st.log("SlowDown ok (%d of %d)" % (len(slow), len(results)))
    c2.stop()


def main(t):
    c = t.cluster(nodes=4, controller_args="--ec-k 2 --ec-m 1")
    tenant = c.create_tenant("s3ten")
    key = json.loads(c.shoalctl("--json", "tenant", "s3-key", "create", "s3ten").stdout)
    x = Ctx(t, c, key, t.tmp)
    x.tenant = tenant
    for part in (aws_cli, boto3_client, s3cmd_client, rclone_client, semantics, protocol,
                 rebuild_meta, part_number, upload_expiry, slow_down):
        t0 = time.monotonic()
        t.section(part, x)
        st.log("section %s: %.1fs" % (part.__name__, time.monotonic() - t0))


if __name__ == "__main__":
    st.run(main, timeout=270)
