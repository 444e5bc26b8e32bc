#!/usr/bin/python3
"""Shoal's S3 modules against botocore, the library under boto3 and aws-cli.

botocore signs requests of every kind (no network: a before-send hook
captures each one); test_gw_s3_botocore verifies them, decodes or checks
their bodies, and must reach the expected outcome, including refusals of
tampered copies. Then botocore's own response parser reads the XML that
gw_s3_xml writes.

  s3_botocore.py BINARY              run both checks (exit 77: no botocore)
  s3_botocore.py --record FILE       write the requests to FILE instead
                                     (a recording: `BINARY verify FILE`)
"""
import base64
import hashlib
import io
import random
import sys
import time
import urllib.parse
from xml.etree import ElementTree

try:
    import botocore
    import botocore.exceptions
    import botocore.session
    from botocore import httpchecksum
    from botocore.config import Config
    from botocore.parsers import create_parser
except ImportError:
    print("skipped: botocore is not installed (apt-get install python3-boto3)")
    sys.exit(77)

import subprocess

AKID = "AKIDSHOALTEST0000001"
SECRET = "shoal/secret+key/0123456789abcdefghijklmn"
RNG = random.Random(20130524)
# Small aws-chunked chunks, so that a few KiB make several (the framing is
# the same as with botocore's 1 MiB).
httpchecksum.AwsChunkedWrapper._DEFAULT_CHUNK_SIZE = 1000


class Captured(Exception):
    def __init__(self, request):
        super().__init__("captured")
        self.request = request


def capture(request, **kwargs):
    raise Captured(request)


def client(endpoint, style="path", **extra):
    cfg = {"s3": {"addressing_style": style}, "retries": {"max_attempts": 1}}
    cfg.update(extra)
    try:
        config = Config(**cfg)
    except TypeError:
        return None  # an option this botocore does not know
    c = botocore.session.Session().create_client(
        "s3", region_name="us-east-1", endpoint_url=endpoint,
        aws_access_key_id=AKID, aws_secret_access_key=SECRET, config=config)
    c.meta.events.register("before-send.s3", capture)
    return c


def body_bytes(body):
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    if isinstance(body, str):
        return body.encode()
    body.seek(0)  # a stream may be recorded more than once
    return body.read()


def record(name, request, expect="OK", payload=None, xml=None, now=None,
           secret=SECRET, mutate=None):
    parts = urllib.parse.urlsplit(request.url)
    headers = {}
    for k, v in request.headers.items():
        headers[k] = v.decode() if isinstance(v, bytes) else v
    host = parts.netloc
    if (parts.scheme, parts.port) in (("http", 80), ("https", 443)):
        host = parts.hostname
    if not any(k.lower() == "host" for k in headers):
        headers["Host"] = host
    body = body_bytes(request.body)
    r = {"name": name, "expect": expect, "method": request.method,
         "path": parts.path, "query": parts.query,
         "now": int(time.time()) if now is None else now,
         "secret": secret, "headers": headers, "body": body,
         "payload": body if payload is None else payload, "xml": xml}
    if mutate:
        mutate(r)
    return r


def hdr(r, name):
    for k, v in r["headers"].items():
        if k.lower() == name:
            return v
    return None


def grab(fn, **params):
    try:
        fn(**params)
    except Captured as e:
        return e.request
    except botocore.exceptions.MissingDependencyException:
        return None  # CRC32C and CRC64NVME need awscrt in recent botocore
    raise AssertionError("botocore sent nothing")


def encode(records):
    out = io.BytesIO()
    for r in records:
        w = lambda s: out.write(s.encode() + b"\n")
        w("REQ " + r["name"])
        w("EXPECT " + r["expect"])
        w("METHOD " + r["method"])
        w("PATH " + r["path"])
        w("QUERY " + r["query"])
        w("NOW %d" % r["now"])
        w("AKID " + AKID)
        w("SECRET " + r["secret"])
        for k, v in r["headers"].items():
            w("HDR %s: %s" % (k, v))
        if r["xml"]:
            w("XML %s %d" % r["xml"])
        w("BODY %d" % len(r["body"]))
        out.write(r["body"] + b"\n")
        if r["payload"] == r["body"]:
            w("PAYLOAD same")
        else:
            w("PAYLOAD %d" % len(r["payload"]))
            out.write(r["payload"] + b"\n")
        w("END")
    return out.getvalue()


def flip_body(at):
    def m(r):
        b = bytearray(r["body"])
        b[at] ^= 1
        r["body"] = bytes(b)
    return m


def set_host(value):
    def m(r):
        for k in list(r["headers"]):
            if k.lower() == "host":
                del r["headers"][k]
        r["headers"]["Host"] = value
    return m


def requests():
    recs = []
    http = client("http://127.0.0.1:9310")
    https = client("https://127.0.0.1:9310")
    vhost = client("http://s3.shoal.test:9310", style="virtual")
    odd = "dir/a b+c~d$e&f=g?h#i%j;k,l'm(n)o*p!q@r:s\u00fc\u20ac.txt"
    # three aws-chunked chunks; repetitive, so that recordings pack small
    data = bytes(RNG.getrandbits(8) for _ in range(300)) * 7

    # PUT over http: a signed payload (and a CRC32 header from botocore >= 1.36)
    req = grab(http.put_object, Bucket="bk", Key=odd, Body=data, Metadata={"a": "x  y\tz"})
    recs.append(record("put-http", req))
    recs.append(record("put-http-wrong-secret", req, "SignatureDoesNotMatch",
                       secret=SECRET[:-1] + "x"))
    recs.append(record("put-http-body-flipped", req, "XAmzContentSHA256Mismatch",
                       mutate=flip_body(100)))
    recs.append(record("put-http-skewed", req, "RequestTimeTooSkewed",
                       now=int(time.time()) + 1000))
    recs.append(record("put-http-other-key", req, "SignatureDoesNotMatch",
                       mutate=lambda r: r.update(path=r["path"] + "x")))
    for alg in ("CRC32", "CRC32C", "SHA1", "SHA256"):
        req = grab(http.put_object, Bucket="bk", Key="k", Body=data, ChecksumAlgorithm=alg)
        if req is None:
            continue
        recs.append(record("put-http-" + alg, req))
        # the checksum header is checked too: a wrong value in a re-signed
        # request is BadDigest (the payload hash still matches)
        h = "x-amz-checksum-" + alg.lower()
        if any(k.lower() == h for k in req.headers.keys()):
            req = grab(http.put_object, Bucket="bk", Key="k", Body=data,
                       **{"Checksum" + alg: base64.b64encode(
                           hashlib.sha256(b"x").digest()[:{"CRC32": 4, "CRC32C": 4,
                                                            "SHA1": 20, "SHA256": 32}[alg]]
                       ).decode()})
            recs.append(record("put-http-wrong-" + alg, req, "BadDigest"))
    md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
    req = grab(http.put_object, Bucket="bk", Key="k", Body=data, ContentMD5=md5)
    recs.append(record("put-http-content-md5", req))
    bad_md5 = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    req = grab(http.put_object, Bucket="bk", Key="k", Body=data, ContentMD5=bad_md5)
    recs.append(record("put-http-wrong-content-md5", req, "BadDigest"))

    # PUT over https: aws-chunked with an unsigned trailer
    for alg in ("CRC32", "CRC32C", "SHA1", "SHA256"):
        req = grab(https.put_object, Bucket="bk", Key=odd, Body=data, ChecksumAlgorithm=alg)
        if req is None:
            continue
        r = record("put-https-trailer-" + alg, req)
        if hdr(r, "x-amz-content-sha256") != "STREAMING-UNSIGNED-PAYLOAD-TRAILER":
            raise AssertionError("botocore did not use an unsigned trailer over https")
        r["payload"] = data
        recs.append(r)
        recs.append(record("put-https-trailer-flipped-" + alg, req, "BadDigest",
                           payload=data, mutate=flip_body(1500)))  # chunk 2's data
        recs.append(record("put-https-trailer-cut-" + alg, req, "IncompleteBody",
                           payload=data, mutate=lambda r: r.update(body=r["body"][:-3])))
    req = grab(https.put_object, Bucket="bk", Key="empty", Body=b"", ChecksumAlgorithm="CRC32")
    recs.append(record("put-https-trailer-empty", req, payload=b""))
    req = grab(https.upload_part, Bucket="bk", Key="k", UploadId="u+1/=", PartNumber=3,
               Body=data, ChecksumAlgorithm="SHA256")
    recs.append(record("upload-part-https", req, payload=data))
    # https without a checksum: UNSIGNED-PAYLOAD
    plain = client("https://127.0.0.1:9310", request_checksum_calculation="when_required")
    if plain is not None:
        req = grab(plain.put_object, Bucket="bk", Key="k", Body=data)
        recs.append(record("put-https-unsigned", req))

    # reads, lists, deletes
    recs.append(record("get-range", grab(http.get_object, Bucket="bk", Key=odd,
                                         Range="bytes=0-9")))
    recs.append(record("head", grab(http.head_object, Bucket="bk", Key="k",
                                    IfNoneMatch='"abc"')))
    recs.append(record("delete", grab(http.delete_object, Bucket="bk", Key=odd)))
    recs.append(record("list-v2", grab(http.list_objects_v2, Bucket="bk", Prefix="a b/\u00fc+",
                                       Delimiter="/", StartAfter="x~y", MaxKeys=7,
                                       ContinuationToken="tok/+=&")))
    recs.append(record("list-v1", grab(http.list_objects, Bucket="bk", Marker="m a",
                                       Prefix="p", EncodingType="url")))
    recs.append(record("list-buckets", grab(http.list_buckets)))
    recs.append(record("location", grab(http.get_bucket_location, Bucket="bk")))
    recs.append(record("create-bucket", grab(http.create_bucket, Bucket="newbk")))
    keys = [{"Key": k} for k in ("a", odd, "<&>")]
    req = grab(http.delete_objects, Bucket="bk", Delete={"Objects": keys, "Quiet": True})
    recs.append(record("delete-objects", req, xml=("delete", 3)))

    # multipart
    recs.append(record("mpu-create", grab(http.create_multipart_upload, Bucket="bk", Key=odd)))
    req = grab(http.upload_part, Bucket="bk", Key=odd, UploadId="u+1/=", PartNumber=1,
               Body=data)
    recs.append(record("mpu-part", req))
    parts = [{"PartNumber": i, "ETag": '"%032x"' % i} for i in (1, 2, 5)]
    req = grab(http.complete_multipart_upload, Bucket="bk", Key=odd, UploadId="u+1/=",
               MultipartUpload={"Parts": parts})
    recs.append(record("mpu-complete", req, xml=("complete", 3)))
    recs.append(record("mpu-list-parts", grab(http.list_parts, Bucket="bk", Key=odd,
                                              UploadId="u+1/=", PartNumberMarker=2)))
    recs.append(record("mpu-list", grab(http.list_multipart_uploads, Bucket="bk",
                                        Prefix="p")))
    recs.append(record("mpu-abort", grab(http.abort_multipart_upload, Bucket="bk", Key=odd,
                                         UploadId="u+1/=")))
    recs.append(record("copy", grab(http.copy_object, Bucket="bk", Key="dst",
                                    CopySource={"Bucket": "src", "Key": odd})))
    recs.append(record("copy-part", grab(http.upload_part_copy, Bucket="bk", Key="dst",
                                         UploadId="u", PartNumber=1,
                                         CopySource={"Bucket": "src", "Key": odd},
                                         CopySourceRange="bytes=0-99")))

    # virtual-hosted bucket
    # (botocore < 1.3x keeps a custom endpoint path-style whatever it is told)
    req = grab(vhost.put_object, Bucket="bk", Key=odd, Body=b"hello")
    vh = urllib.parse.urlsplit(req.url).netloc.startswith("bk.")
    recs.append(record("vhost-put" if vh else "vhost-put-as-path", req))
    recs.append(record("vhost-wrong-host", req, "SignatureDoesNotMatch",
                       mutate=set_host("other.s3.shoal.test:9310")))

    # presigned URLs: no body hash, an expiry. botocore presigns with
    # Signature Version 2 unless told s3v4; V2 is refused.
    v4 = client("http://127.0.0.1:9310", signature_version="s3v4")
    for op, params in (("get_object", {"Bucket": "bk", "Key": odd}),
                       ("put_object", {"Bucket": "bk", "Key": "k"})):
        method = "GET" if op == "get_object" else "PUT"
        for signer, name in ((v4, "presigned-"), (http, "presigned-v2-")):
            url = signer.generate_presigned_url(op, Params=params, ExpiresIn=3600)
            now = int(time.time())
            req = type("R", (), {"url": url, "method": method,
                                 "headers": {"Host": urllib.parse.urlsplit(url).netloc},
                                 "body": b"anything"})
            if signer is http:
                recs.append(record(name + op, req, "InvalidRequest", now=now))
                continue
            recs.append(record(name + op, req, now=now))
            recs.append(record(name + "expired-" + op, req, "AccessDenied", now=now + 3601))
            recs.append(record(name + "tampered-" + op, req, "SignatureDoesNotMatch", now=now,
                               mutate=lambda r: r.update(query=r["query"] + "&x-id=1")))
    return recs


def check_xml(binary):
    out = subprocess.run([binary, "xml"], check=True, capture_output=True).stdout
    model = botocore.session.Session().get_service_model("s3")
    parser = create_parser("rest-xml")
    docs = {}
    pos = 0
    while pos < len(out):
        nl = out.index(b"\n", pos)
        _, op, status, n = out[pos:nl].decode().split(" ")
        body = out[nl + 1:nl + 1 + int(n)]
        pos = nl + 1 + int(n) + 1
        shape = model.operation_model(op).output_shape
        if op == "GetBucketLocation":
            docs[op] = body
            continue
        docs[op] = parser.parse({"body": body, "headers": {}, "status_code": int(status)},
                                shape)
    unq = urllib.parse.unquote_plus

    d = docs["ListObjectsV2"]
    assert d["Name"] == "bk" and d["IsTruncated"] is True and d["KeyCount"] == 4, d
    assert d["NextContinuationToken"] == "next&tok" and d["ContinuationToken"] == "t+/=", d
    assert d["EncodingType"] == "url" and unq(d["StartAfter"]) == "a b", d
    assert [unq(c["Key"]) for c in d["Contents"]] == ["a b+c/\u00fc&<>.txt", "z"], d
    assert d["Contents"][0]["ETag"] == '"5d41402abc4b2a76b9719d911017c592"', d
    assert d["Contents"][1]["Size"] == 10485760, d
    assert d["Contents"][0]["LastModified"].timestamp() == 1700000000.123, d
    assert [unq(c["Prefix"]) for c in d["CommonPrefixes"]] == ["p q/", "r&s/"], d
    d = docs["ListObjects"]
    assert d["Marker"] == "m&" and d["NextMarker"] == "z" and d["MaxKeys"] == 2, d
    assert d["Contents"][0]["Key"] == "a b+c/\u00fc&<>.txt", d
    assert d["Contents"][0]["Owner"]["DisplayName"] == "tenant one", d
    d = docs["ListBuckets"]
    assert [b["Name"] for b in d["Buckets"]] == ["bk", "other"], d
    assert d["Owner"]["ID"] == "owner-id", d
    assert docs["CreateMultipartUpload"]["UploadId"] == "up+1", docs
    assert docs["CreateMultipartUpload"]["Key"] == "k&", docs
    d = docs["CompleteMultipartUpload"]
    assert d["ETag"] == '"065947336a2f2a95ba8899f3675c3be6-2"' and d["Key"] == "k&", d
    d = docs["ListParts"]
    assert [p["PartNumber"] for p in d["Parts"]] == [1, 2] and d["NextPartNumberMarker"] == 2, d
    assert d["Parts"][0]["Size"] == 5242880 and d["UploadId"] == "up+1", d
    d = docs["ListMultipartUploads"]
    assert d["Uploads"][0]["Key"] == "a b" and d["Uploads"][0]["UploadId"] == "u1", d
    assert docs["CopyObject"]["CopyObjectResult"]["ETag"] == \
        '"5d41402abc4b2a76b9719d911017c592"', docs
    assert docs["UploadPartCopy"]["CopyPartResult"]["LastModified"].timestamp() == 1700000000
    d = docs["DeleteObjects"]
    assert d["Deleted"] == [{"Key": "a&b"}], d
    assert d["Errors"][0]["Key"] == "c" and d["Errors"][0]["Code"] == "AccessDenied", d
    # (botocore reads this one with a handler of its own, from the raw XML)
    loc = ElementTree.fromstring(docs["GetBucketLocation"])
    assert loc.tag == "{http://s3.amazonaws.com/doc/2006-03-01/}LocationConstraint", loc
    assert loc.text == "eu-west-1", loc.text
    e = docs["GetObject"]["Error"]
    assert e["Code"] == "NoSuchKey" and e["Message"] == "The specified key does not exist.", e
    assert e["Key"] == "a/b c" and e["Resource"] == "/bk/a/b c", e
    assert docs["PutObject"]["Error"]["Code"] == "SlowDown", docs
    print("botocore parsed %d responses" % len(docs))


def main():
    print("botocore", botocore.__version__)
    if len(sys.argv) == 3 and sys.argv[1] == "--record":
        with open(sys.argv[2], "wb") as f:
            f.write(encode(requests()))
        return 0
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    recs = requests()
    res = subprocess.run([binary, "verify"], input=encode(recs))
    if res.returncode != 0:
        return 1
    check_xml(binary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
