/*
 * test_s3_route.c - unit.gateway.s3_route: which operation an S3 request
 * is and what it names (path-style and virtual-hosted), bucket names, the
 * key mapping to the native API, HTTP dates, entity-tag lists, the order
 * of the conditional headers, x-amz-copy-source and the stored headers.
 */
#include "t_check.h"

#include "cm_buf.h"
#include "gw_s3_route.h"

static enum gw_s3_err
route(const char *method, const char *host, const char *path, const char *query, int copy,
      struct gw_s3_route *r)
{
    struct gw_s3_target t = {
        .method = method,
        .host = host,
        .domain = "s3.localhost",
        .path = path,
        .path_len = strlen(path),
        .query = query,
        .query_len = query != NULL ? strlen(query) : 0,
        .copy_source = copy,
    };
    const char *why = NULL;
    enum gw_s3_err e = gw_s3_route(&t, r, &why);

    CHECK(e == GW_S3_OK ? why == NULL : why != NULL);
    return e;
}

static void
want_op(const char *method, const char *path, const char *query, int copy, enum gw_s3_op op)
{
    struct gw_s3_route r;

    CHECK_EQ_INT(route(method, "127.0.0.1:9310", path, query, copy, &r), GW_S3_OK);
    if (r.op != op) {
        fprintf(stderr, "%s %s ?%s: op %d, want %d\n", method, path, query ? query : "", r.op, op);
    }
    CHECK_EQ_INT(r.op, op);
}

static void
test_ops(void)
{
    want_op("GET", "/", NULL, 0, GW_S3_OP_LIST_BUCKETS);
    want_op("PUT", "/bkt", NULL, 0, GW_S3_OP_CREATE_BUCKET);
    want_op("PUT", "/bkt/", NULL, 0, GW_S3_OP_CREATE_BUCKET);
    want_op("DELETE", "/bkt", NULL, 0, GW_S3_OP_DELETE_BUCKET);
    want_op("HEAD", "/bkt", NULL, 0, GW_S3_OP_HEAD_BUCKET);
    want_op("GET", "/bkt", "location", 0, GW_S3_OP_GET_BUCKET_LOCATION);
    want_op("GET", "/bkt", "location=", 0, GW_S3_OP_GET_BUCKET_LOCATION);
    want_op("GET", "/bkt", "uploads&prefix=a", 0, GW_S3_OP_LIST_UPLOADS);
    want_op("GET", "/bkt", "list-type=2&prefix=a%2Fb", 0, GW_S3_OP_LIST_OBJECTS);
    want_op("GET", "/bkt/", NULL, 0, GW_S3_OP_LIST_OBJECTS);
    want_op("POST", "/bkt", "delete", 0, GW_S3_OP_DELETE_OBJECTS);
    want_op("PUT", "/bkt/k", NULL, 0, GW_S3_OP_PUT_OBJECT);
    want_op("PUT", "/bkt/k", NULL, 1, GW_S3_OP_COPY_OBJECT);
    want_op("PUT", "/bkt/k", "partNumber=2&uploadId=u", 0, GW_S3_OP_UPLOAD_PART);
    want_op("PUT", "/bkt/k", "partNumber=2&uploadId=u", 1, GW_S3_OP_UPLOAD_PART_COPY);
    want_op("GET", "/bkt/k", NULL, 0, GW_S3_OP_GET_OBJECT);
    want_op("GET", "/bkt/k", "response-content-type=a", 0, GW_S3_OP_GET_OBJECT);
    want_op("GET", "/bkt/k", "uploadId=u", 0, GW_S3_OP_LIST_PARTS);
    want_op("HEAD", "/bkt/k", NULL, 0, GW_S3_OP_HEAD_OBJECT);
    want_op("DELETE", "/bkt/k", NULL, 0, GW_S3_OP_DELETE_OBJECT);
    want_op("DELETE", "/bkt/k", "uploadId=u", 0, GW_S3_OP_ABORT_MPU);
    want_op("POST", "/bkt/k", "uploads", 0, GW_S3_OP_CREATE_MPU);
    want_op("POST", "/bkt/k", "uploadId=u", 0, GW_S3_OP_COMPLETE_MPU);
    CHECK_EQ_STR(gw_s3_op_names[GW_S3_OP_COMPLETE_MPU], "complete_multipart_upload");
}

static void
test_targets(void)
{
    struct gw_s3_route r;

    /* path-style: the native key is bucket/key, decoded once */
    CHECK_EQ_INT(route("GET", "127.0.0.1:9310", "/bkt/a%20b/c+d%2Fe", NULL, 0, &r), GW_S3_OK);
    CHECK_EQ_STR(r.bucket, "bkt");
    CHECK_EQ_INT(r.klen, strlen("bkt/a b/c+d/e"));
    CHECK(memcmp(r.key, "bkt/a b/c+d/e", r.klen) == 0);
    CHECK_EQ_INT(r.virtual_host, 0);
    /* an empty segment is part of the key */
    CHECK_EQ_INT(route("GET", NULL, "/bkt//x", NULL, 0, &r), GW_S3_OK);
    CHECK(r.klen == 6 && memcmp(r.key, "bkt//x", 6) == 0);
    /* virtual-hosted, with or without a port, any case in the domain */
    CHECK_EQ_INT(route("GET", "my.bkt.s3.localhost:9310", "/x/y", NULL, 0, &r), GW_S3_OK);
    CHECK_EQ_STR(r.bucket, "my.bkt");
    CHECK(r.klen == 10 && memcmp(r.key, "my.bkt/x/y", 10) == 0);
    CHECK_EQ_INT(r.virtual_host, 1);
    CHECK_EQ_INT(route("GET", "bkt.S3.LocalHost", "/", NULL, 0, &r), GW_S3_OK);
    CHECK_EQ_INT(r.op, GW_S3_OP_LIST_OBJECTS);
    CHECK_EQ_STR(r.bucket, "bkt");
    /* the domain itself, and other hosts, are path-style */
    CHECK_EQ_INT(route("GET", "s3.localhost:9310", "/", NULL, 0, &r), GW_S3_OK);
    CHECK_EQ_INT(r.op, GW_S3_OP_LIST_BUCKETS);
    CHECK_EQ_INT(route("GET", "xs3.localhost", "/bkt", NULL, 0, &r), GW_S3_OK);
    CHECK_EQ_STR(r.bucket, "bkt");
    CHECK_EQ_INT(route("GET", "[::1]:9310", "/bkt", NULL, 0, &r), GW_S3_OK);

    /* refusals */
    CHECK_EQ_INT(route("GET", NULL, "/BKT/k", NULL, 0, &r), GW_S3_E_INVALID_BUCKET_NAME);
    CHECK_EQ_INT(route("GET", "Bad_B.s3.localhost", "/k", NULL, 0, &r),
                 GW_S3_E_INVALID_BUCKET_NAME);
    CHECK_EQ_INT(route("GET", NULL, "//k", NULL, 0, &r), GW_S3_E_INVALID_URI);
    CHECK_EQ_INT(route("GET", NULL, "bkt/k", NULL, 0, &r), GW_S3_E_INVALID_URI);
    CHECK_EQ_INT(route("GET", NULL, "/bkt/a/../b", NULL, 0, &r), GW_S3_E_INVALID_URI);
    CHECK_EQ_INT(route("GET", NULL, "/bkt/a%0ab", NULL, 0, &r), GW_S3_E_INVALID_URI);
    CHECK_EQ_INT(route("GET", NULL, "/bkt/a%zz", NULL, 0, &r), GW_S3_E_INVALID_URI);
    {
        char path[1200];

        memset(path, 'k', sizeof(path));
        memcpy(path, "/bkt/", 5);
        path[5 + 1019] = '\0'; /* bkt/ + 1019 = 1023 bytes: fits */
        CHECK_EQ_INT(route("GET", NULL, path, NULL, 0, &r), GW_S3_OK);
        path[5 + 1019] = 'k';
        path[5 + 1021] = '\0'; /* 1025 bytes */
        CHECK_EQ_INT(route("GET", NULL, path, NULL, 0, &r), GW_S3_E_KEY_TOO_LONG);
    }
    CHECK_EQ_INT(route("PATCH", NULL, "/bkt/k", NULL, 0, &r), GW_S3_E_METHOD_NOT_ALLOWED);
    CHECK_EQ_INT(route("POST", NULL, "/bkt/k", NULL, 0, &r), GW_S3_E_METHOD_NOT_ALLOWED);
    CHECK_EQ_INT(route("PUT", NULL, "/", NULL, 0, &r), GW_S3_E_METHOD_NOT_ALLOWED);
    CHECK_EQ_INT(route("GET", NULL, "/bkt", "acl", 0, &r), GW_S3_E_NOT_IMPLEMENTED);
    CHECK_EQ_INT(route("PUT", NULL, "/bkt/k", "tagging", 0, &r), GW_S3_E_NOT_IMPLEMENTED);
}

static void
test_bucket_names(void)
{
    static const char *ok[] = {
        "abc",        "a.b-c", "0bucket",
        "my--bucket", "1.2.3", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    static const char *bad[] = {"ab",
                                "Abc",
                                "a_b",
                                "-abc",
                                "abc-",
                                ".abc",
                                "abc.",
                                "a..b",
                                "a.-b",
                                "a-.b",
                                "1.2.3.4",
                                "xn--abc",
                                "abc-s3alias",
                                "a b c",
                                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        CHECK(gw_s3_bucket_name_ok(ok[i], strlen(ok[i])));
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(!gw_s3_bucket_name_ok(bad[i], strlen(bad[i])));
    }
}

static void
test_dates(void)
{
    int64_t t;
    char buf[32];

    CHECK_EQ_INT(gw_s3_http_date("Sun, 06 Nov 1994 08:49:37 GMT", &t), 0);
    CHECK_EQ_INT(t, 784111777);
    CHECK_EQ_INT(gw_s3_http_date("Sunday, 06-Nov-94 08:49:37 GMT", &t), 0);
    CHECK_EQ_INT(t, 784111777);
    CHECK_EQ_INT(gw_s3_http_date("Sun Nov  6 08:49:37 1994", &t), 0);
    CHECK_EQ_INT(t, 784111777);
    gw_s3_http_date_fmt(784111777, buf);
    CHECK_EQ_STR(buf, "Sun, 06 Nov 1994 08:49:37 GMT");
    CHECK_EQ_INT(gw_s3_http_date("Sun, 06 Nov 1994 08:49:37 UTC", &t), -1);
    CHECK_EQ_INT(gw_s3_http_date("Sun, 31 Feb 1994 08:49:37 GMT", &t), -1);
    CHECK_EQ_INT(gw_s3_http_date("Sun, 06 Foo 1994 08:49:37 GMT", &t), -1);
    CHECK_EQ_INT(gw_s3_http_date("Sun, 06 Nov 1994 24:49:37 GMT", &t), -1);
    CHECK_EQ_INT(gw_s3_http_date("yesterday", &t), -1);
    CHECK_EQ_INT(gw_s3_http_date(NULL, &t), -1);
}

static void
test_conditions(void)
{
    const char *etag = "\"9e107d9d372bb6826bd81d3542a419d6\"";
    const int64_t mtime = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT */
    const char *before = "Sun, 06 Nov 1994 08:49:36 GMT", *at = "Sun, 06 Nov 1994 08:49:37 GMT";
    struct gw_s3_cond_hdrs h;

    CHECK(gw_s3_etag_list_match("\"9e107d9d372bb6826bd81d3542a419d6\"", etag));
    CHECK(gw_s3_etag_list_match("9e107d9d372bb6826bd81d3542a419d6", etag));
    CHECK(gw_s3_etag_list_match("\"x\", W/\"9e107d9d372bb6826bd81d3542a419d6\"", etag));
    CHECK(gw_s3_etag_list_match("*", etag));
    CHECK(!gw_s3_etag_list_match("\"x\",\"y\"", etag));
    CHECK(!gw_s3_etag_list_match("", etag));
    CHECK(!gw_s3_etag_list_match("\"9e107d9d372bb6826bd81d3542a419d\"", etag));

    memset(&h, 0, sizeof(h));
    CHECK_EQ_INT(gw_s3_conditions(&h, etag, mtime, 0), GW_S3_COND_OK);
    h.if_match = "\"other\"";
    CHECK_EQ_INT(gw_s3_conditions(&h, etag, mtime, 0), GW_S3_COND_FAILED);
    /* If-Match true wins over a failing If-Unmodified-Since */
    h.if_match = etag;
    h.if_unmodified_since = before;
    CHECK_EQ_INT(gw_s3_conditions(&h, etag, mtime, 0), GW_S3_COND_OK);
    h.if_match = NULL;
    CHECK_EQ_INT(gw_s3_conditions(&h, etag, mtime, 0), GW_S3_COND_FAILED);
    h.if_unmodified_since = at;
    CHECK_EQ_INT(gw_s3_conditions(&h, etag, mtime, 0), GW_S3_COND_OK);
    h.if_unmodified_since = "garbage"; /* ignored */
    CHECK_EQ_INT(gw_s3_conditions(&h, etag, mtime, 0), GW_S3_COND_OK);
    memset(&h, 0, sizeof(h));
    h.if_none_match = etag;
    CHECK_EQ_INT(gw_s3_conditions(&h, etag, mtime, 0), GW_S3_COND_NOT_MODIFIED);
    CHECK_EQ_INT(gw_s3_conditions(&h, etag, mtime, 1), GW_S3_COND_FAILED);
    /* If-None-Match false wins over a true If-Modified-Since */
    h.if_none_match = "\"other\"";
    h.if_modified_since = at;
    CHECK_EQ_INT(gw_s3_conditions(&h, etag, mtime, 0), GW_S3_COND_OK);
    h.if_none_match = NULL;
    CHECK_EQ_INT(gw_s3_conditions(&h, etag, mtime, 0), GW_S3_COND_NOT_MODIFIED);
    h.if_modified_since = before;
    CHECK_EQ_INT(gw_s3_conditions(&h, etag, mtime, 0), GW_S3_COND_OK);
}

static void
test_copy_source(void)
{
    struct gw_s3_route r;
    const char *why = NULL;

    CHECK_EQ_INT(gw_s3_copy_source("/src/a%20b/c", &r, &why), GW_S3_OK);
    CHECK_EQ_STR(r.bucket, "src");
    CHECK(r.klen == 9 && memcmp(r.key, "src/a b/c", 9) == 0);
    CHECK_EQ_INT(gw_s3_copy_source("src/k?versionId=null", &r, &why), GW_S3_OK);
    CHECK(r.klen == 5 && memcmp(r.key, "src/k", 5) == 0);
    CHECK_EQ_INT(gw_s3_copy_source("src/k?versionId=3", &r, &why), GW_S3_E_INVALID_ARGUMENT);
    CHECK_EQ_INT(gw_s3_copy_source("src", &r, &why), GW_S3_E_INVALID_ARGUMENT);
    CHECK_EQ_INT(gw_s3_copy_source("src/", &r, &why), GW_S3_E_INVALID_ARGUMENT);
    CHECK_EQ_INT(gw_s3_copy_source("S_rc/k", &r, &why), GW_S3_E_INVALID_BUCKET_NAME);
    CHECK_EQ_INT(gw_s3_copy_source("src/a/./b", &r, &why), GW_S3_E_INVALID_ARGUMENT);
    CHECK_EQ_INT(gw_s3_copy_source(NULL, &r, &why), GW_S3_E_INVALID_ARGUMENT);
}

static void
test_native_key(void)
{
    struct gw_s3_route r;
    const char *why = NULL;
    char big[1100];

    CHECK_EQ_INT(gw_s3_native_key("bkt", 3, "a%20b c", 7, &r, &why), GW_S3_OK);
    CHECK(r.klen == 11 && memcmp(r.key, "bkt/a%20b c", 11) == 0);
    CHECK_EQ_STR(r.bucket, "bkt");
    CHECK_EQ_INT(gw_s3_native_key("bkt", 3, "a/../b", 6, &r, &why), GW_S3_E_INVALID_ARGUMENT);
    CHECK_EQ_INT(gw_s3_native_key("bkt", 3, "", 0, &r, &why), GW_S3_E_INVALID_ARGUMENT);
    memset(big, 'x', sizeof(big));
    CHECK_EQ_INT(gw_s3_native_key("bkt", 3, big, 1020, &r, &why), GW_S3_OK);
    CHECK_EQ_INT(gw_s3_native_key("bkt", 3, big, 1021, &r, &why), GW_S3_E_KEY_TOO_LONG);
    CHECK_EQ_INT(gw_s3_native_key("bkt", 3, big, 1100, &r, &why), GW_S3_E_KEY_TOO_LONG);
}

static void
test_hdrs(void)
{
    struct cm_buf b;
    size_t meta = 0;
    char big[1100];

    cm_buf_init(&b);
    CHECK_EQ_INT(gw_s3_hdrs_add(&b, &meta, "Content-Type", "text/plain"), GW_S3_OK);
    CHECK_EQ_INT(gw_s3_hdrs_add(&b, &meta, "Authorization", "secret"), GW_S3_OK);
    CHECK_EQ_INT(gw_s3_hdrs_add(&b, &meta, "X-Amz-Meta-Color", "blue"), GW_S3_OK);
    CHECK_EQ_INT(gw_s3_hdrs_add(&b, &meta, "x-amz-meta-", "nameless"), GW_S3_OK);
    CHECK_EQ_INT(b.len, sizeof("content-type\0text/plain\0x-amz-meta-color\0blue"));
    CHECK(memcmp(b.p, "content-type\0text/plain\0x-amz-meta-color\0blue\0", b.len) == 0);
    CHECK_EQ_INT(meta, 9);
    CHECK_EQ_INT(gw_s3_hdrs_add(&b, &meta, "x-amz-meta-bad", "a\nb"), GW_S3_E_INVALID_ARGUMENT);
    /* aws-chunked is the request's framing, not the object's encoding */
    {
        struct cm_buf e;
        size_t m2 = 0;

        cm_buf_init(&e);
        CHECK_EQ_INT(gw_s3_hdrs_add(&e, &m2, "Content-Encoding", "aws-chunked"), GW_S3_OK);
        CHECK_EQ_INT(e.len, 0);
        CHECK_EQ_INT(gw_s3_hdrs_add(&e, &m2, "Content-Encoding", " gzip ,AWS-Chunked, br"),
                     GW_S3_OK);
        CHECK(e.len == 26 && memcmp(e.p, "content-encoding\0gzip, br\0", 26) == 0);
        cm_buf_fini(&e);
    }
    memset(big, 'v', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK_EQ_INT(gw_s3_hdrs_add(&b, &meta, "x-amz-meta-a", big), GW_S3_OK);
    CHECK_EQ_INT(gw_s3_hdrs_add(&b, &meta, "x-amz-meta-b", big), GW_S3_E_METADATA_TOO_LARGE);
    cm_buf_fini(&b);
}

static void
test_numbers(void)
{
    uint64_t v;

    CHECK_EQ_INT(gw_s3_parse_uint("10000", 10000, &v), 0);
    CHECK_EQ_INT(v, 10000);
    CHECK_EQ_INT(gw_s3_parse_uint("10001", 10000, &v), -1);
    CHECK_EQ_INT(gw_s3_parse_uint("18446744073709551615", UINT64_MAX, &v), 0);
    CHECK_EQ_INT(gw_s3_parse_uint("18446744073709551616", UINT64_MAX, &v), -1);
    CHECK_EQ_INT(gw_s3_parse_uint("-1", 10, &v), -1);
    CHECK_EQ_INT(gw_s3_parse_uint("1 ", 10, &v), -1);
    CHECK_EQ_INT(gw_s3_parse_uint("", 10, &v), -1);
    CHECK_EQ_INT(gw_s3_parse_uint(NULL, 10, &v), -1);
}

int
main(void)
{
    t_seed();
    test_ops();
    test_targets();
    test_bucket_names();
    test_dates();
    test_conditions();
    test_copy_source();
    test_native_key();
    test_hdrs();
    test_numbers();
    printf("ok\n");
    return 0;
}
