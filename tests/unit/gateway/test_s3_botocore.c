/*
 * test_s3_botocore.c - the S3 modules against requests a real client signed.
 *
 *   test_gw_s3_botocore verify [FILE]   requests from s3_botocore.py (stdin,
 *                                       or a recording): verify each, decode
 *                                       or check its body, parse its XML,
 *                                       and compare with the expected outcome
 *   test_gw_s3_botocore xml             prints responses from gw_s3_xml for
 *                                       s3_botocore.py to parse with botocore
 *
 * A request record (text lines, blobs length-prefixed):
 *   REQ name / EXPECT OK|<S3 code> / METHOD m / PATH p / QUERY q / NOW t /
 *   AKID a / SECRET s / HDR name: value ... / [XML complete|delete n] /
 *   BODY len \n bytes \n / PAYLOAD len \n bytes \n (or PAYLOAD same: the body) / END
 */
#include <strings.h>

#include "t_check.h"

#include "cm_err.h"
#include "gw_s3_chunked.h"
#include "gw_s3_cksum.h"
#include "gw_s3_sig.h"
#include "gw_s3_xml.h"

#define MAX_HDRS 64

struct rec {
    char name[256], expect[64], method[16], akid[GW_S3_AKID_MAX + 1], secret[GW_S3_SECRET_MAX + 1],
        xml[16];
    char *path, *query;
    long long now;
    long xml_n;
    char *hname[MAX_HDRS], *hval[MAX_HDRS];
    int nh;
    char *body, *payload;
    size_t body_len, payload_len;
};

static const char *
hdr_get(void *arg, const char *lname)
{
    struct rec *r = arg;

    for (int i = 0; i < r->nh; i++) {
        if (strcasecmp(r->hname[i], lname) == 0) {
            return r->hval[i];
        }
    }
    return NULL;
}

static int
secret_of(void *arg, const char *akid, char *secret, size_t cap)
{
    struct rec *r = arg;

    if (strcmp(akid, r->akid) != 0) {
        return CM_E_NOTFOUND;
    }
    snprintf(secret, cap, "%s", r->secret);
    return 0;
}

static void
rec_free(struct rec *r)
{
    for (int i = 0; i < r->nh; i++) {
        free(r->hname[i]);
        free(r->hval[i]);
    }
    free(r->path);
    free(r->query);
    free(r->body);
    free(r->payload);
    memset(r, 0, sizeof(*r));
}

/* The rest of the line after "KEY " (newline dropped), malloc'd. */
static char *
rest(const char *line, size_t klen)
{
    char *s = strdup(line + klen);
    size_t n = strlen(s);

    if (n > 0 && s[n - 1] == '\n') {
        s[n - 1] = '\0';
    }
    return s;
}

static char *
blob(FILE *f, const char *line, size_t klen, size_t *len)
{
    char *p;
    int nl;

    *len = strtoull(line + klen, NULL, 10);
    p = malloc(*len + 1);
    CHECK(p != NULL && fread(p, 1, *len, f) == *len);
    p[*len] = '\0';
    nl = fgetc(f);
    CHECK(nl == '\n');
    return p;
}

static void
copy_rest(char *dst, size_t cap, const char *line, size_t klen)
{
    char *s = rest(line, klen);

    snprintf(dst, cap, "%s", s);
    free(s);
}

/* 1 with a record, 0 at the end of the input. */
static int
rec_read(FILE *f, struct rec *r)
{
    char line[65536];

    memset(r, 0, sizeof(*r));
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "REQ ", 4) == 0) {
            copy_rest(r->name, sizeof(r->name), line, 4);
        } else if (strncmp(line, "EXPECT ", 7) == 0) {
            copy_rest(r->expect, sizeof(r->expect), line, 7);
        } else if (strncmp(line, "METHOD ", 7) == 0) {
            copy_rest(r->method, sizeof(r->method), line, 7);
        } else if (strncmp(line, "PATH ", 5) == 0) {
            r->path = rest(line, 5);
        } else if (strncmp(line, "QUERY ", 6) == 0) {
            r->query = rest(line, 6);
        } else if (strncmp(line, "NOW ", 4) == 0) {
            r->now = strtoll(line + 4, NULL, 10);
        } else if (strncmp(line, "AKID ", 5) == 0) {
            copy_rest(r->akid, sizeof(r->akid), line, 5);
        } else if (strncmp(line, "SECRET ", 7) == 0) {
            copy_rest(r->secret, sizeof(r->secret), line, 7);
        } else if (strncmp(line, "XML ", 4) == 0) {
            char *s = rest(line, 4), *sp = strchr(s, ' ');
            CHECK(sp != NULL);
            *sp = '\0';
            snprintf(r->xml, sizeof(r->xml), "%s", s);
            r->xml_n = strtol(sp + 1, NULL, 10);
            free(s);
        } else if (strncmp(line, "HDR ", 4) == 0) {
            char *s = rest(line, 4), *colon = strstr(s, ": ");
            CHECK(colon != NULL && r->nh < MAX_HDRS);
            *colon = '\0';
            r->hname[r->nh] = strdup(s);
            r->hval[r->nh] = strdup(colon + 2);
            r->nh++;
            free(s);
        } else if (strncmp(line, "BODY ", 5) == 0) {
            r->body = blob(f, line, 5, &r->body_len);
        } else if (strcmp(line, "PAYLOAD same\n") == 0) {
            CHECK(r->body != NULL);
            r->payload_len = r->body_len;
            r->payload = malloc(r->body_len + 1);
            memcpy(r->payload, r->body, r->body_len + 1);
        } else if (strncmp(line, "PAYLOAD ", 8) == 0) {
            r->payload = blob(f, line, 8, &r->payload_len);
        } else if (strcmp(line, "END\n") == 0) {
            CHECK(r->path != NULL && r->body != NULL && r->payload != NULL);
            return 1;
        } else {
            fprintf(stderr, "bad record line: %s", line);
            exit(1);
        }
    }
    return 0;
}

struct decoded {
    struct gw_s3_body body;
    struct cm_buf out;
};

static enum gw_s3_err
sink(void *arg, const void *data, size_t len)
{
    struct decoded *d = arg;

    gw_s3_body_update(&d->body, data, len);
    cm_buf_append(&d->out, data, len);
    return GW_S3_OK;
}

/* The request's whole outcome, as the front door will run it. */
static enum gw_s3_err
run(struct rec *r, const char **why)
{
    struct gw_s3_req req = {
        .method = r->method,
        .path = r->path,
        .path_len = strlen(r->path),
        .query = r->query,
        .query_len = r->query != NULL ? strlen(r->query) : 0,
        .hdr = hdr_get,
        .hdr_arg = r,
    };
    struct gw_s3_verify_opts o = {.secret = secret_of, .secret_arg = r, .now = r->now};
    struct gw_s3_sig_detail det;
    struct gw_s3_auth a;
    struct decoded d;
    enum gw_s3_err e;
    char etag[GW_S3_ETAG_MAX];

    gw_s3_sig_detail_init(&det);
    e = gw_s3_verify(&req, &o, &a, &det);
    *why = det.why;
    if (e != GW_S3_OK) {
        if (e == GW_S3_E_SIGNATURE_MISMATCH && strcmp(r->expect, "OK") == 0) {
            fprintf(stderr, "canonical request:\n%s\nstring to sign:\n%s\n", det.canonical.p,
                    det.to_sign.p);
        }
        gw_s3_sig_detail_fini(&det);
        return e;
    }
    gw_s3_sig_detail_fini(&det);
    cm_buf_init(&d.out);
    e = gw_s3_body_init(&d.body, &a, hdr_get, r, why);
    if (e == GW_S3_OK &&
        (a.payload == GW_S3_PAYLOAD_STREAMING || a.payload == GW_S3_PAYLOAD_STREAMING_TRAILER ||
         a.payload == GW_S3_PAYLOAD_UNSIGNED_TRAILER)) {
        struct gw_s3_chunked *c;
        size_t off = 0;

        e = gw_s3_chunked_create(&a, hdr_get, r, 0, sink, &d, &c, why);
        while (e == GW_S3_OK && off < r->body_len) {
            size_t n = (size_t)t_range(1, 777);
            n = n > r->body_len - off ? r->body_len - off : n;
            e = gw_s3_chunked_feed(c, r->body + off, n, why);
            off += n;
        }
        if (e == GW_S3_OK) {
            e = gw_s3_chunked_finish(c, why);
        }
        gw_s3_chunked_destroy(c);
    } else if (e == GW_S3_OK) {
        sink(&d, r->body, r->body_len);
    }
    if (e == GW_S3_OK) {
        e = gw_s3_body_finish(&d.body, NULL, etag, why);
    }
    if (e == GW_S3_OK) {
        CHECK_EQ_INT(d.out.len, r->payload_len);
        CHECK(r->payload_len == 0 || memcmp(d.out.p, r->payload, r->payload_len) == 0);
    }
    if (e == GW_S3_OK && strcmp(r->xml, "complete") == 0) {
        struct gw_s3_xml_complete c;
        e = gw_s3_xml_parse_complete(d.out.p, d.out.len, &c, why);
        CHECK(e != GW_S3_OK || (long)c.nparts == r->xml_n);
        gw_s3_xml_complete_free(&c);
    } else if (e == GW_S3_OK && strcmp(r->xml, "delete") == 0) {
        struct gw_s3_xml_delete dl;
        e = gw_s3_xml_parse_delete(d.out.p, d.out.len, &dl, why);
        CHECK(e != GW_S3_OK || (long)dl.nobjects == r->xml_n);
        gw_s3_xml_delete_free(&dl);
    }
    gw_s3_body_fini(&d.body);
    cm_buf_fini(&d.out);
    return e;
}

static int
verify_all(FILE *f)
{
    struct rec r;
    int n = 0, failed = 0;

    while (rec_read(f, &r)) {
        const char *why = NULL;
        enum gw_s3_err e = run(&r, &why);
        const char *got = e == GW_S3_OK ? "OK" : gw_s3_err_code(e);

        n++;
        if (strcmp(got, r.expect) != 0) {
            fprintf(stderr, "FAIL %s: got %s (%s), want %s\n", r.name, got, why != NULL ? why : "-",
                    r.expect);
            failed++;
        } else {
            printf("ok %s: %s\n", r.name, got);
        }
        rec_free(&r);
    }
    printf("%d requests, %d failed\n", n, failed);
    return n == 0 || failed != 0;
}

static void
doc(const char *op, int status, struct cm_buf *b)
{
    printf("DOC %s %d %zu\n", op, status, b->len);
    fwrite(b->p, 1, b->len, stdout);
    printf("\n");
    b->len = 0;
}

/* Fixed responses; s3_botocore.py knows what each must parse to. */
static void
xml_docs(void)
{
    struct cm_buf b;
    struct gw_s3_xml_owner own = {"owner-id", "tenant one"};
    struct gw_s3_xml_object objs[] = {
        {"a b+c/\xc3\xbc&<>.txt", 1700000000123, "\"5d41402abc4b2a76b9719d911017c592\"", 5, NULL},
        {"z", 1700000001000, "\"065947336a2f2a95ba8899f3675c3be6-2\"", 10485760, NULL},
    };
    const char *pfx[] = {"p q/", "r&s/"};
    struct gw_s3_xml_list l = {.v2 = 1,
                               .bucket = "bk",
                               .prefix = "",
                               .delimiter = "/",
                               .continuation_token = "t+/=",
                               .next_continuation_token = "next&tok",
                               .start_after = "a b",
                               .max_keys = 2,
                               .truncated = 1,
                               .url_encode = 1,
                               .objects = objs,
                               .nobjects = 2,
                               .prefixes = pfx,
                               .nprefixes = 2};
    struct gw_s3_xml_bucket bks[] = {{"bk", 1700000000000}, {"other", 1700000000500}};
    struct gw_s3_xml_part parts[] = {{1, 1700000000000, "\"aa\"", 5242880},
                                     {2, 1700000000000, "\"bb\"", 7}};
    struct gw_s3_xml_parts lp = {"bk", "k&", "up+1", &own, 0, 2, 1000, 0, parts, 2};
    struct gw_s3_xml_upload ups[] = {{"a b", "u1", 1700000000000}};
    struct gw_s3_xml_uploads lu = {.bucket = "bk",
                                   .prefix = "",
                                   .max_uploads = 1000,
                                   .url_encode = 0,
                                   .owner = &own,
                                   .uploads = ups,
                                   .nuploads = 1};
    struct gw_s3_xml_deleted dels[] = {{"a&b", GW_S3_OK, NULL}, {"c", GW_S3_E_ACCESS_DENIED, NULL}};
    struct gw_s3_xml_field extra[] = {{"Key", "a/b c"}};

    cm_buf_init(&b);
    gw_s3_xml_list_objects(&b, &l);
    doc("ListObjectsV2", 200, &b);
    l.v2 = 0;
    l.url_encode = 0;
    l.marker = "m&";
    l.next_marker = "z";
    l.owner = &own;
    gw_s3_xml_list_objects(&b, &l);
    doc("ListObjects", 200, &b);
    gw_s3_xml_list_buckets(&b, &own, bks, 2);
    doc("ListBuckets", 200, &b);
    gw_s3_xml_initiate_mpu(&b, "bk", "k&", "up+1");
    doc("CreateMultipartUpload", 200, &b);
    gw_s3_xml_complete_mpu(&b, "http://127.0.0.1:9310/bk/k", "bk", "k&",
                           "\"065947336a2f2a95ba8899f3675c3be6-2\"");
    doc("CompleteMultipartUpload", 200, &b);
    gw_s3_xml_list_parts(&b, &lp);
    doc("ListParts", 200, &b);
    gw_s3_xml_list_uploads(&b, &lu);
    doc("ListMultipartUploads", 200, &b);
    gw_s3_xml_copy_result(&b, 0, "\"5d41402abc4b2a76b9719d911017c592\"", 1700000000000);
    doc("CopyObject", 200, &b);
    gw_s3_xml_copy_result(&b, 1, "\"5d41402abc4b2a76b9719d911017c592\"", 1700000000000);
    doc("UploadPartCopy", 200, &b);
    gw_s3_xml_delete_result(&b, dels, 2, 0);
    doc("DeleteObjects", 200, &b);
    gw_s3_xml_location(&b, "eu-west-1");
    doc("GetBucketLocation", 200, &b);
    gw_s3_xml_error(&b, GW_S3_E_NO_SUCH_KEY, NULL, "/bk/a/b c", "req-1", extra, 1);
    doc("GetObject", 404, &b);
    gw_s3_xml_error(&b, GW_S3_E_SLOW_DOWN, NULL, NULL, "req-2", NULL, 0);
    doc("PutObject", 503, &b);
    cm_buf_fini(&b);
}

int
main(int argc, char **argv)
{
    FILE *f = stdin;
    int ret;

    t_seed();
    if (argc >= 2 && strcmp(argv[1], "xml") == 0) {
        xml_docs();
        return 0;
    }
    if (argc < 2 || strcmp(argv[1], "verify") != 0) {
        fprintf(stderr, "usage: %s verify [FILE] | xml\n", argv[0]);
        return 2;
    }
    if (argc >= 3 && (f = fopen(argv[2], "rb")) == NULL) {
        perror(argv[2]);
        return 1;
    }
    ret = verify_all(f);
    if (f != stdin) {
        fclose(f);
    }
    return ret;
}
