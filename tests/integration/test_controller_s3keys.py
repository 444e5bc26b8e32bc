#!/usr/bin/python3
"""integ.controller.s3keys - tenants' S3 access keys against a real shoal-controller
(Python stdlib only).

    python3 test_controller_s3keys.py BUILD/controller/shoal-controller BUILD/controller/shoalctl

Creates, lists and deletes keys over the admin API and through shoalctl; checks
that a secret is shown once and nowhere else (listings, the internal state, the
log, every byte of the data dir), that /v1/internal/state carries for each key
kDate = HMAC-SHA256("AWS4" + secret, date) for the UTC dates from 7 days ago to
tomorrow, the per-tenant cap, that keys survive a restart and leave with their
tenant, and that the controller refuses to start on a secrets key file others
may read, or on another key; that a master key rotation re-seals every secret
(refused while a controller runs) and changes no date key. Starts the
controller with the admin test's Controller class.
SHOAL_TEST_KEEP=1 keeps the temp dir.
"""

import datetime
import hashlib
import hmac
import json
import os
import re
import subprocess
import tempfile

import test_controller_admin as ca
from test_controller_admin import check, expect_error, log, run_main

CTL, CLI = ca.CTL, ca.CLI
ID_RE = re.compile(r"AK[A-Z2-7]{18}")
SECRET_RE = re.compile(r"[A-Za-z0-9+/]{40}")
CREATED_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def kdate(secret, ymd):
    return hmac.new(("AWS4" + secret).encode(), ymd.encode(), hashlib.sha256).hexdigest()


def window(today=None):
    """The UTC dates a gateway must be able to verify now, oldest first."""
    today = today or datetime.datetime.now(datetime.timezone.utc).date()
    return [(today + datetime.timedelta(days=d)).strftime("%Y%m%d") for d in range(-7, 2)]


def state(c):
    st, _, j = c.req("GET", "/v1/internal/state")
    check(st == 200, "internal state: %d" % st)
    return j


def state_keys(c):
    return {k["access_key_id"]: k for k in state(c).get("s3_keys", [])}


def tenant_id(c, name):
    return c.req("GET", "/v1/tenants/" + name)[2]["id"]


def files_holding(root, needle):
    """Files under root whose bytes contain needle."""
    hits = []
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                if needle.encode() in fh.read():
                    hits.append(p)
    return hits


def check_state_key(c, kid, secret, tenant):
    """The state's entry for kid: right tenant, the date window, each kDate."""
    for attempt in range(2):  # a poll that straddles UTC midnight sees the next window
        dates = window()
        k = state_keys(c).get(kid)
        if k is not None and sorted(k["date_keys"]) == dates:
            break
    if not check(k is not None, "key %s in the state" % kid):
        return
    check(set(k) == {"access_key_id", "tenant_id", "date_keys"}, "state key fields %r" % k)
    check(k["tenant_id"] == tenant, "state key tenant %r" % k)
    check(sorted(k["date_keys"]) == dates, "date window %r, want %r" % (sorted(k["date_keys"]),
                                                                         dates))
    for ymd, hexkey in k["date_keys"].items():
        check(hexkey == kdate(secret, ymd), "kDate of %s for %s" % (kid, ymd))


def test_api(c, secrets):
    log("S3 keys over the admin API")
    for name in ("alpha", "beta"):
        st, _, _ = c.req("POST", "/v1/tenants", {"name": name})
        check(st == 201, "create tenant %s" % name)
    ids = {n: tenant_id(c, n) for n in ("alpha", "beta")}
    e0 = state(c)["epoch"]
    check(state(c).get("s3_keys") == [], "no S3 keys yet")
    st, h, j = c.req("POST", "/v1/tenants/alpha/s3-keys")
    check(st == 201, "POST s3-keys: %d %r" % (st, j))
    check("x-request-id" in h, "X-Request-Id on POST s3-keys")
    check(set(j) >= {"access_key_id", "secret_access_key", "created"}, "create fields %r" % j)
    check(ID_RE.fullmatch(j["access_key_id"]) is not None, "access key id form %r" % j)
    check(SECRET_RE.fullmatch(j["secret_access_key"]) is not None, "secret form %r" % j)
    check(CREATED_RE.fullmatch(j["created"]) is not None, "created form %r" % j)
    created = datetime.datetime.strptime(j["created"], "%Y-%m-%dT%H:%M:%SZ")
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    check(abs((now - created).total_seconds()) < 120, "created is now (UTC): %r" % j["created"])
    secrets[j["access_key_id"]] = ("alpha", j["secret_access_key"])
    a1 = j["access_key_id"]
    check(state(c)["epoch"] > e0, "a new key bumps the epoch")
    check_state_key(c, a1, secrets[a1][1], ids["alpha"])

    st, _, j = c.req("POST", "/v1/tenants/beta/s3-keys", "")
    check(st == 201, "POST with an empty body %d" % st)
    b1 = j["access_key_id"]
    secrets[b1] = ("beta", j["secret_access_key"])
    check(b1 != a1 and secrets[b1][1] != secrets[a1][1], "distinct ids and secrets")

    st, _, body = c.req("GET", "/v1/tenants/alpha/s3-keys")
    check(st == 200 and list(body) == ["s3_keys"] and len(body["s3_keys"]) == 1 and
          set(body["s3_keys"][0]) == {"access_key_id", "created"} and
          body["s3_keys"][0]["access_key_id"] == a1 and
          CREATED_RE.fullmatch(body["s3_keys"][0]["created"]), "GET s3-keys %r" % body)
    raw = json.dumps(body)
    check(secrets[a1][1] not in raw and "secret" not in raw, "list never holds the secret")
    s = json.dumps(state(c))
    for kid, (_, secret) in secrets.items():
        check(secret not in s, "state does not hold the secret of %s" % kid)
    st, _, j = c.req("GET", "/v1/tenants/alpha")
    check(secrets[a1][1] not in json.dumps(j), "tenant show does not hold the secret")

    log("S3 key errors and the cap")
    expect_error(c, 404, "not_found", "POST", "/v1/tenants/ghost/s3-keys", what="ghost create")
    expect_error(c, 404, "not_found", "GET", "/v1/tenants/ghost/s3-keys", what="ghost list")
    expect_error(c, 404, "not_found", "DELETE", "/v1/tenants/ghost/s3-keys/" + a1,
                 what="ghost delete")
    expect_error(c, 404, "not_found", "DELETE", "/v1/tenants/beta/s3-keys/" + a1,
                 what="another tenant's key")
    expect_error(c, 404, "not_found", "DELETE", "/v1/tenants/alpha/s3-keys/AKAAAAAAAAAAAAAAAAAA",
                 what="unknown key")
    for bad in ["x", "AK", "akaaaaaaaaaaaaaaaaaa", "AKAAAAAAAAAAAAAAAAA1", a1 + "A", "%41K"]:
        expect_error(c, 400, "bad_request", "DELETE", "/v1/tenants/alpha/s3-keys/" + bad,
                     what="bad id %r" % bad)
    expect_error(c, 400, "bad_request", "GET", "/v1/tenants/Bad/s3-keys", what="bad tenant name")
    expect_error(c, 405, "method_not_allowed", "PUT", "/v1/tenants/alpha/s3-keys", {},
                 "PUT s3-keys")
    expect_error(c, 405, "method_not_allowed", "DELETE", "/v1/tenants/alpha/s3-keys",
                 what="DELETE the collection")
    expect_error(c, 405, "method_not_allowed", "GET", "/v1/tenants/alpha/s3-keys/" + a1,
                 what="GET one key")
    expect_error(c, 404, "not_found", "GET", "/v1/tenants/alpha/s3-keysx", what="s3-keysx")
    expect_error(c, 404, "not_found", "GET", "/v1/tenants/alpha/s3-key", what="s3-key")
    for m in ["GET", "POST"]:
        expect_error(c, 401, "unauthorized", m, "/v1/tenants/alpha/s3-keys", what="no token",
                     token=None)
    expect_error(c, 401, "unauthorized", "DELETE", "/v1/tenants/alpha/s3-keys/" + a1,
                 what="no token", token=None)
    for _ in range(15):
        st, _, j = c.req("POST", "/v1/tenants/alpha/s3-keys")
        check(st == 201, "key up to the cap: %d %r" % (st, j))
        if st == 201:
            secrets[j["access_key_id"]] = ("alpha", j["secret_access_key"])
    e1 = state(c)["epoch"]
    j = expect_error(c, 409, "conflict", "POST", "/v1/tenants/alpha/s3-keys", what="17th key")
    check(j is not None and "16" in j.get("message", ""), "the cap is in the message %r" % j)
    check(state(c)["epoch"] == e1, "a refused key changes nothing")
    st, _, j = c.req("GET", "/v1/tenants/alpha/s3-keys")
    check(len(j["s3_keys"]) == 16, "16 keys listed")
    check([k["access_key_id"] for k in j["s3_keys"]][0] == a1, "oldest first")
    st, _, j = c.req("POST", "/v1/tenants/beta/s3-keys")
    check(st == 201, "another tenant is not capped by alpha's keys")
    secrets[j["access_key_id"]] = ("beta", j["secret_access_key"])

    log("S3 key deletion")
    victim = [k for k, (t, _) in secrets.items() if t == "alpha" and k != a1][0]
    st, _, body = c.req("DELETE", "/v1/tenants/alpha/s3-keys/" + victim)
    check(st == 204 and body == "", "DELETE %d %r" % (st, body))
    del secrets[victim]
    check(victim not in state_keys(c), "deleted key gone from the state")
    check(state(c)["epoch"] > e1, "deletion bumps the epoch")
    expect_error(c, 404, "not_found", "DELETE", "/v1/tenants/alpha/s3-keys/" + victim,
                 what="deleted twice")
    st, _, j = c.req("POST", "/v1/tenants/alpha/s3-keys")
    check(st == 201, "room for one more after a deletion")
    secrets[j["access_key_id"]] = ("alpha", j["secret_access_key"])
    for kid, (t, secret) in secrets.items():
        check_state_key(c, kid, secret, ids[t])
    check(set(state_keys(c)) == set(secrets), "state has exactly the live keys")


def test_cli(c, secrets):
    log("S3 keys through shoalctl")
    rc, out, _ = c.cli("--help")
    check(rc == 0 and "s3-key create" in out and "s3-key list" in out and "s3-key delete" in out,
          "--help lists s3-key")
    c.req("POST", "/v1/tenants", {"name": "gamma"})
    rc, out, err = c.cli("tenant", "s3-key", "create", "gamma")
    check(rc == 0, "shoalctl s3-key create: %d %s" % (rc, err))
    m1 = re.search(r"^access key id:\s+(\S+)$", out, re.M)
    m2 = re.search(r"^secret access key:\s+(\S+)$", out, re.M)
    check(m1 and m2 and ID_RE.fullmatch(m1.group(1)) and SECRET_RE.fullmatch(m2.group(1)),
          "create prints id and secret %r" % out)
    lines = [ln for ln in out.splitlines() if ":" in ln and not ln.startswith("save")]
    check(len({ln.index(ln.split(":", 1)[1].strip()) for ln in lines}) == 1,
          "create output aligned %r" % out)
    check("shown only once" in out, "create warns it is shown once")
    gid = tenant_id(c, "gamma")
    if m1 and m2:
        secrets[m1.group(1)] = ("gamma", m2.group(1))
        check_state_key(c, m1.group(1), m2.group(1), gid)
    rc, out, err = c.cli("--json", "tenant", "s3-key", "create", "gamma")
    check(rc == 0, "--json create: %d %s" % (rc, err))
    j = json.loads(out)
    check(ID_RE.fullmatch(j["access_key_id"]) and SECRET_RE.fullmatch(j["secret_access_key"]),
          "--json create %r" % j)
    secrets[j["access_key_id"]] = ("gamma", j["secret_access_key"])
    check_state_key(c, j["access_key_id"], j["secret_access_key"], gid)

    rc, out, _ = c.cli("tenant", "s3-key", "list", "gamma")
    rows = out.strip().splitlines()
    check(rc == 0 and rows[0].split() == ["ACCESS_KEY_ID", "CREATED"] and len(rows) == 3,
          "list table %r" % out)
    check(m1 is not None and m1.group(1) in out and j["access_key_id"] in out, "list ids %r" % out)
    check(all(s not in out for _, s in secrets.values()), "list shows no secret")
    rc, out, _ = c.cli("--json", "tenant", "s3-key", "list", "gamma")
    lj = json.loads(out)
    check(rc == 0 and [k["access_key_id"] for k in lj["s3_keys"]] ==
          [m1.group(1) if m1 else None, j["access_key_id"]], "list --json %r" % lj)

    rc, out, err = c.cli("tenant", "s3-key", "delete", "gamma", j["access_key_id"])
    check(rc == 0 and j["access_key_id"] in out, "shoalctl delete: %d %r %s" % (rc, out, err))
    del secrets[j["access_key_id"]]
    check(j["access_key_id"] not in state_keys(c), "deleted through shoalctl")
    rc, _, err = c.cli("tenant", "s3-key", "delete", "gamma", j["access_key_id"])
    check(rc == 1 and "refused" in err and "404" in err, "delete twice: %d %r" % (rc, err))
    rc, _, err = c.cli("tenant", "s3-key", "delete", "gamma", "not/a/key")
    check(rc == 1 and "400" in err, "bad id refused by the controller: %d %r" % (rc, err))
    rc, _, err = c.cli("tenant", "s3-key", "create", "ghost")
    check(rc == 1 and "refused" in err, "ghost tenant: %d %r" % (rc, err))
    rc, _, err = c.cli("tenant", "s3-key", "create", "alpha")
    check(rc == 1 and "409" in err, "capped tenant: %d %r" % (rc, err))
    for args in [("tenant", "s3-key"), ("tenant", "s3-key", "create"),
                 ("tenant", "s3-key", "list"), ("tenant", "s3-key", "delete", "gamma"),
                 ("tenant", "s3-key", "create", "gamma", "extra"),
                 ("tenant", "s3-key", "frob", "gamma"),
                 ("tenant", "s3-key", "create", "gamma", "--weight", "2")]:
        rc, _, err = c.cli(*args)
        check(rc == 2 and err.strip() != "", "usage error %r: rc %d %r" % (args, rc, err))
    rc, _, err = c.cli("tenant", "s3-key", "list", "gamma",
                       url="http://127.0.0.1:%d" % ca.free_port())
    check(rc == 3 and "unreachable" in err, "unreachable: rc %d %r" % (rc, err))


def check_no_secret_at_rest(c, secrets):
    log("no secret at rest")
    for kid, (_, secret) in secrets.items():
        hits = files_holding(c.tmp, secret)
        check(hits == [], "secret of %s found in %r" % (kid, hits))
    some = next(iter(secrets))
    check(files_holding(c.data, some) != [], "the scan sees what is there (an access key id)")


def start_fails(c, what, *extra):
    """Runs the controller on c's data dir; it must exit non-zero quickly."""
    p = run_ctl(c, *extra)
    check(p.returncode not in (0, None), "%s: exit code %r" % (what, p.returncode))
    return p.stderr


def test_key_file(c, secrets):
    log("secrets key file: mode, refusals, another key")
    keyfile = os.path.join(c.tmp, "secrets.key")
    check(os.path.exists(keyfile), "default key file beside the data dir")
    check(os.stat(keyfile).st_mode & 0o777 == 0o600, "key file mode 0600")
    with open(keyfile) as f:
        original = f.read()
    check(re.fullmatch(r"[0-9a-f]{64}\n", original) is not None, "64 hex digits")
    for mode in (0o644, 0o640, 0o604):
        os.chmod(keyfile, mode)
        err = start_fails(c, "key file mode %o" % mode)
        check("chmod 600" in err and "secrets.key" in err, "says why (mode %o): %r" % (mode,
                                                                                    err[-300:]))
    os.chmod(keyfile, 0o600)
    with open(keyfile, "w") as f:
        f.write("%064x\n" % 12345)
    err = start_fails(c, "another master key")
    check("another secrets key" in err, "says the key differs: %r" % err[-300:])
    with open(keyfile, "w") as f:
        f.write(original)
    # An explicit file elsewhere, created on first start; this one is refused
    # too (another key for the same data dir).
    other = os.path.join(c.tmp, "elsewhere", "s3.key")
    os.makedirs(os.path.dirname(other))
    start_fails(c, "explicit new key file", "--secrets-key-file", other)
    check(os.stat(other).st_mode & 0o777 == 0o600, "explicit key file created 0600")


def run_ctl(c, *extra):
    return subprocess.run([CTL, "--listen", "127.0.0.1:%d" % c.port, "--data-dir", c.data] +
                          list(extra), capture_output=True, text=True, timeout=60)


def test_rotation(c, secrets):
    log("master key rotation")
    keyfile = os.path.join(c.tmp, "secrets.key")
    p = run_ctl(c, "--rotate-secrets-key")
    check(p.returncode == 1 and "another shoal-controller" in p.stderr,
          "no rotation under a live controller: %d %r" % (p.returncode, p.stderr[-300:]))
    p = run_ctl(c)
    check(p.returncode == 1 and "another shoal-controller" in p.stderr,
          "no second controller on one data dir: %d %r" % (p.returncode, p.stderr[-300:]))
    before = state_keys(c)
    check(c.stop() == 0, "clean exit")
    with open(keyfile) as f:
        old = f.read()
    p = run_ctl(c, "--rotate-secrets-key")
    check(p.returncode == 0 and "secrets key rotated" in p.stderr,
          "rotation: %d %r" % (p.returncode, p.stderr[-300:]))
    with open(keyfile) as f:
        new = f.read()
    check(re.fullmatch(r"[0-9a-f]{64}\n", new) is not None and new != old, "a new master key")
    check(os.stat(keyfile).st_mode & 0o777 == 0o600, "rotated key file mode 0600")
    check(not os.path.exists(keyfile + ".new"), "no .new left behind")
    with open(keyfile, "w") as f:
        f.write(old)
    start_fails(c, "the old key after a rotation")
    with open(keyfile, "w") as f:
        f.write(new)
    c.start()
    after = state_keys(c)
    check(set(after) == set(before), "same keys after the rotation")
    same_day = all(sorted(after[k]["date_keys"]) == sorted(before[k]["date_keys"]) for k in after)
    check(not same_day or after == before, "same date keys: the secrets did not change")
    for kid, (t, secret) in secrets.items():
        check_state_key(c, kid, secret, after[kid]["tenant_id"])


def main():
    tmp = tempfile.mkdtemp(prefix="shoal-s3k-")
    c = ca.Controller(tmp, ca.free_port())
    secrets = {}  # access key id -> (tenant, secret)

    def body():
        p = subprocess.run([CTL, "--help"], capture_output=True, text=True, timeout=10)
        check(p.returncode == 0 and "--secrets-key-file" in p.stdout, "controller --help")
        c.start()
        test_api(c, secrets)
        test_cli(c, secrets)
        ids = {n: tenant_id(c, n) for n in ("alpha", "beta", "gamma")}
        before = state_keys(c)
        lists = {n: c.req("GET", "/v1/tenants/%s/s3-keys" % n)[2] for n in ids}

        log("restart")
        check(c.stop() == 0, "clean exit")
        check_no_secret_at_rest(c, secrets)
        test_key_file(c, secrets)
        c.start()
        check({n: c.req("GET", "/v1/tenants/%s/s3-keys" % n)[2] for n in ids} == lists,
              "keys persisted")
        after = state_keys(c)
        check(set(after) == set(before), "state keys persisted")
        for kid, (t, secret) in secrets.items():
            check_state_key(c, kid, secret, ids[t])
        test_rotation(c, secrets)

        log("a tenant's deletion takes its keys")
        beta_keys = [k for k, (t, _) in secrets.items() if t == "beta"]
        e0 = state(c)["epoch"]
        st, _, _ = c.req("DELETE", "/v1/tenants/beta")
        check(st == 204, "delete beta")
        keys_now = state_keys(c)
        check(all(k not in keys_now for k in beta_keys) and len(beta_keys) == 2,
              "beta's keys gone from the state")
        check(state(c)["epoch"] > e0, "epoch grew")
        c.req("POST", "/v1/tenants", {"name": "beta"})
        check(c.req("GET", "/v1/tenants/beta/s3-keys")[2] == {"s3_keys": []},
              "a new tenant of the same name has no keys")
        for k in beta_keys:
            del secrets[k]
        check(c.stop() == 0, "clean exit")
        c.start()
        check(set(state_keys(c)) == set(secrets), "deleted tenant's keys stay gone after restart")
        check(c.stop() == 0, "clean exit")
        check_no_secret_at_rest(c, secrets)

    run_main(c, tmp, body)


if __name__ == "__main__":
    main()
