/*
 * gw_s3_xml.c - S3 XML responses and request-body parsing (see gw_s3_xml.h).
 *
 * The parser builds a small tree (elements with their leaf text decoded
 * into one arena) in one pass over the body, then reads the operation's
 * schema from it. Invariants: the tree never holds more than the caller's
 * element budget nor goes deeper than GW_S3_XML_DEPTH_MAX; the arena never
 * grows past the body's length plus one NUL per element; offsets, not
 * pointers, are kept until the arena is final.
 */
#include "gw_s3_xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- writer ---- */

void
gw_s3_xml_escape(struct cm_buf *b, const char *s, size_t len)
{
    size_t i, start = 0;

    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *rep = NULL;
        char num[8];

        switch (c) {
        case '&':
            rep = "&amp;";
            break;
        case '<':
            rep = "&lt;";
            break;
        case '>':
            rep = "&gt;";
            break;
        case '"':
            rep = "&quot;";
            break;
        case '\'':
            rep = "&apos;";
            break;
        default:
            /* \t and \n survive parsing; \r and the rest must be references */
            if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
                snprintf(num, sizeof(num), "&#x%X;", c);
                rep = num;
            }
        }
        if (rep != NULL) {
            cm_buf_append(b, s + start, i - start);
            cm_buf_append(b, rep, strlen(rep));
            start = i + 1;
        }
    }
    cm_buf_append(b, s + start, len - start);
}

void
gw_s3_xml_begin(struct cm_buf *b, const char *root, int ns)
{
    cm_buf_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<%s%s>", root,
                  ns ? " xmlns=\"" GW_S3_XML_NS "\"" : "");
}

void
gw_s3_xml_open(struct cm_buf *b, const char *name)
{
    cm_buf_printf(b, "<%s>", name);
}

void
gw_s3_xml_close(struct cm_buf *b, const char *name)
{
    cm_buf_printf(b, "</%s>", name);
}

void
gw_s3_xml_text(struct cm_buf *b, const char *name, const char *value)
{
    if (value == NULL) {
        return;
    }
    gw_s3_xml_open(b, name);
    gw_s3_xml_escape(b, value, strlen(value));
    gw_s3_xml_close(b, name);
}

static int
unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

void
gw_s3_xml_key(struct cm_buf *b, const char *name, const char *value, int url_encode)
{
    static const char hex[] = "0123456789ABCDEF";

    if (value == NULL || !url_encode) {
        gw_s3_xml_text(b, name, value);
        return;
    }
    gw_s3_xml_open(b, name);
    for (const unsigned char *p = (const unsigned char *)value; *p != '\0'; p++) {
        if (unreserved(*p) || *p == '/') {
            cm_buf_append(b, p, 1);
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            cm_buf_append(b, e, 3);
        }
    }
    gw_s3_xml_close(b, name);
}

void
gw_s3_xml_u64(struct cm_buf *b, const char *name, uint64_t v)
{
    cm_buf_printf(b, "<%s>%llu</%s>", name, (unsigned long long)v, name);
}

void
gw_s3_xml_bool(struct cm_buf *b, const char *name, int v)
{
    cm_buf_printf(b, "<%s>%s</%s>", name, v ? "true" : "false", name);
}

void
gw_s3_xml_time(struct cm_buf *b, const char *name, int64_t unix_ms)
{
    time_t t;
    struct tm tm;

    unix_ms = unix_ms < 0 ? 0 : unix_ms;
    t = (time_t)(unix_ms / 1000);
    gmtime_r(&t, &tm);
    cm_buf_printf(b, "<%s>%04d-%02d-%02dT%02d:%02d:%02d.%03dZ</%s>", name, tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  (int)(unix_ms % 1000), name);
}

void
gw_s3_xml_error(struct cm_buf *b, enum gw_s3_err code, const char *message, const char *resource,
                const char *request_id, const struct gw_s3_xml_field *extra, size_t nextra)
{
    gw_s3_xml_begin(b, "Error", 0);
    gw_s3_xml_text(b, "Code", gw_s3_err_code(code));
    gw_s3_xml_text(b, "Message", message != NULL ? message : gw_s3_err_message(code));
    for (size_t i = 0; i < nextra; i++) {
        gw_s3_xml_text(b, extra[i].name, extra[i].value);
    }
    gw_s3_xml_text(b, "Resource", resource);
    gw_s3_xml_text(b, "RequestId", request_id);
    gw_s3_xml_close(b, "Error");
}

static void
owner(struct cm_buf *b, const char *tag, const struct gw_s3_xml_owner *o)
{
    if (o == NULL) {
        return;
    }
    gw_s3_xml_open(b, tag);
    gw_s3_xml_text(b, "ID", o->id);
    gw_s3_xml_text(b, "DisplayName", o->display_name);
    gw_s3_xml_close(b, tag);
}

void
gw_s3_xml_list_buckets(struct cm_buf *b, const struct gw_s3_xml_owner *o,
                       const struct gw_s3_xml_bucket *v, size_t n)
{
    gw_s3_xml_begin(b, "ListAllMyBucketsResult", 1);
    owner(b, "Owner", o);
    gw_s3_xml_open(b, "Buckets");
    for (size_t i = 0; i < n; i++) {
        gw_s3_xml_open(b, "Bucket");
        gw_s3_xml_text(b, "Name", v[i].name);
        gw_s3_xml_time(b, "CreationDate", v[i].created_ms);
        gw_s3_xml_close(b, "Bucket");
    }
    gw_s3_xml_close(b, "Buckets");
    gw_s3_xml_close(b, "ListAllMyBucketsResult");
}

static void
common_prefixes(struct cm_buf *b, const char *const *v, size_t n, int url_encode)
{
    for (size_t i = 0; i < n; i++) {
        gw_s3_xml_open(b, "CommonPrefixes");
        gw_s3_xml_key(b, "Prefix", v[i], url_encode);
        gw_s3_xml_close(b, "CommonPrefixes");
    }
}

void
gw_s3_xml_list_objects(struct cm_buf *b, const struct gw_s3_xml_list *l)
{
    int enc = l->url_encode;

    gw_s3_xml_begin(b, "ListBucketResult", 1);
    gw_s3_xml_text(b, "Name", l->bucket);
    gw_s3_xml_key(b, "Prefix", l->prefix != NULL ? l->prefix : "", enc);
    if (l->v2) {
        gw_s3_xml_text(b, "ContinuationToken", l->continuation_token);
        gw_s3_xml_text(b, "NextContinuationToken", l->next_continuation_token);
        gw_s3_xml_key(b, "StartAfter", l->start_after, enc);
        gw_s3_xml_u64(b, "KeyCount", l->nobjects + l->nprefixes);
    } else {
        gw_s3_xml_key(b, "Marker", l->marker != NULL ? l->marker : "", enc);
        gw_s3_xml_key(b, "NextMarker", l->next_marker, enc);
    }
    gw_s3_xml_u64(b, "MaxKeys", l->max_keys);
    gw_s3_xml_key(b, "Delimiter", l->delimiter, enc);
    gw_s3_xml_bool(b, "IsTruncated", l->truncated);
    if (enc) {
        gw_s3_xml_text(b, "EncodingType", "url");
    }
    for (size_t i = 0; i < l->nobjects; i++) {
        const struct gw_s3_xml_object *o = &l->objects[i];

        gw_s3_xml_open(b, "Contents");
        gw_s3_xml_key(b, "Key", o->key, enc);
        gw_s3_xml_time(b, "LastModified", o->mtime_ms);
        gw_s3_xml_text(b, "ETag", o->etag);
        gw_s3_xml_u64(b, "Size", o->size);
        owner(b, "Owner", l->owner);
        gw_s3_xml_text(b, "StorageClass", o->storage_class != NULL ? o->storage_class : "STANDARD");
        gw_s3_xml_close(b, "Contents");
    }
    common_prefixes(b, l->prefixes, l->nprefixes, enc);
    gw_s3_xml_close(b, "ListBucketResult");
}

void
gw_s3_xml_initiate_mpu(struct cm_buf *b, const char *bucket, const char *key, const char *upload_id)
{
    gw_s3_xml_begin(b, "InitiateMultipartUploadResult", 1);
    gw_s3_xml_text(b, "Bucket", bucket);
    gw_s3_xml_text(b, "Key", key);
    gw_s3_xml_text(b, "UploadId", upload_id);
    gw_s3_xml_close(b, "InitiateMultipartUploadResult");
}

void
gw_s3_xml_complete_mpu(struct cm_buf *b, const char *location, const char *bucket, const char *key,
                       const char *etag)
{
    gw_s3_xml_begin(b, "CompleteMultipartUploadResult", 1);
    gw_s3_xml_text(b, "Location", location);
    gw_s3_xml_text(b, "Bucket", bucket);
    gw_s3_xml_text(b, "Key", key);
    gw_s3_xml_text(b, "ETag", etag);
    gw_s3_xml_close(b, "CompleteMultipartUploadResult");
}

void
gw_s3_xml_list_parts(struct cm_buf *b, const struct gw_s3_xml_parts *p)
{
    gw_s3_xml_begin(b, "ListPartsResult", 1);
    gw_s3_xml_text(b, "Bucket", p->bucket);
    gw_s3_xml_text(b, "Key", p->key);
    gw_s3_xml_text(b, "UploadId", p->upload_id);
    owner(b, "Initiator", p->owner);
    owner(b, "Owner", p->owner);
    gw_s3_xml_text(b, "StorageClass", "STANDARD");
    gw_s3_xml_u64(b, "PartNumberMarker", p->part_marker);
    gw_s3_xml_u64(b, "NextPartNumberMarker", p->next_part_marker);
    gw_s3_xml_u64(b, "MaxParts", p->max_parts);
    gw_s3_xml_bool(b, "IsTruncated", p->truncated);
    for (size_t i = 0; i < p->nparts; i++) {
        gw_s3_xml_open(b, "Part");
        gw_s3_xml_u64(b, "PartNumber", p->parts[i].number);
        gw_s3_xml_time(b, "LastModified", p->parts[i].mtime_ms);
        gw_s3_xml_text(b, "ETag", p->parts[i].etag);
        gw_s3_xml_u64(b, "Size", p->parts[i].size);
        gw_s3_xml_close(b, "Part");
    }
    gw_s3_xml_close(b, "ListPartsResult");
}

void
gw_s3_xml_list_uploads(struct cm_buf *b, const struct gw_s3_xml_uploads *u)
{
    int enc = u->url_encode;

    gw_s3_xml_begin(b, "ListMultipartUploadsResult", 1);
    gw_s3_xml_text(b, "Bucket", u->bucket);
    gw_s3_xml_key(b, "KeyMarker", u->key_marker != NULL ? u->key_marker : "", enc);
    gw_s3_xml_text(b, "UploadIdMarker", u->upload_id_marker != NULL ? u->upload_id_marker : "");
    gw_s3_xml_key(b, "NextKeyMarker", u->next_key_marker, enc);
    gw_s3_xml_text(b, "NextUploadIdMarker", u->next_upload_id_marker);
    gw_s3_xml_key(b, "Delimiter", u->delimiter, enc);
    gw_s3_xml_key(b, "Prefix", u->prefix != NULL ? u->prefix : "", enc);
    gw_s3_xml_u64(b, "MaxUploads", u->max_uploads);
    gw_s3_xml_bool(b, "IsTruncated", u->truncated);
    if (enc) {
        gw_s3_xml_text(b, "EncodingType", "url");
    }
    for (size_t i = 0; i < u->nuploads; i++) {
        gw_s3_xml_open(b, "Upload");
        gw_s3_xml_key(b, "Key", u->uploads[i].key, enc);
        gw_s3_xml_text(b, "UploadId", u->uploads[i].upload_id);
        owner(b, "Initiator", u->owner);
        owner(b, "Owner", u->owner);
        gw_s3_xml_text(b, "StorageClass", "STANDARD");
        gw_s3_xml_time(b, "Initiated", u->uploads[i].initiated_ms);
        gw_s3_xml_close(b, "Upload");
    }
    common_prefixes(b, u->prefixes, u->nprefixes, enc);
    gw_s3_xml_close(b, "ListMultipartUploadsResult");
}

void
gw_s3_xml_copy_result(struct cm_buf *b, int part, const char *etag, int64_t mtime_ms)
{
    const char *root = part ? "CopyPartResult" : "CopyObjectResult";

    gw_s3_xml_begin(b, root, 1);
    gw_s3_xml_time(b, "LastModified", mtime_ms);
    gw_s3_xml_text(b, "ETag", etag);
    gw_s3_xml_close(b, root);
}

void
gw_s3_xml_delete_result(struct cm_buf *b, const struct gw_s3_xml_deleted *v, size_t n, int quiet)
{
    gw_s3_xml_begin(b, "DeleteResult", 1);
    for (size_t i = 0; i < n; i++) {
        if (v[i].err == GW_S3_OK) {
            if (!quiet) {
                gw_s3_xml_open(b, "Deleted");
                gw_s3_xml_text(b, "Key", v[i].key);
                gw_s3_xml_close(b, "Deleted");
            }
            continue;
        }
        gw_s3_xml_open(b, "Error");
        gw_s3_xml_text(b, "Key", v[i].key);
        gw_s3_xml_text(b, "Code", gw_s3_err_code(v[i].err));
        gw_s3_xml_text(b, "Message",
                       v[i].message != NULL ? v[i].message : gw_s3_err_message(v[i].err));
        gw_s3_xml_close(b, "Error");
    }
    gw_s3_xml_close(b, "DeleteResult");
}

void
gw_s3_xml_location(struct cm_buf *b, const char *region)
{
    gw_s3_xml_begin(b, "LocationConstraint", 1);
    if (region != NULL && strcmp(region, "us-east-1") != 0) {
        gw_s3_xml_escape(b, region, strlen(region));
    }
    gw_s3_xml_close(b, "LocationConstraint");
}

/* ---- parser: the tree ---- */

struct xnode {
    size_t name_off, name_len; /* the local name, in the body */
    size_t qname_off, qname_len;
    int first_child, last_child, next;
    int has_child;
    size_t text_off, text_len; /* in the arena; leaves only */
};

struct xdoc {
    const char *s;
    size_t n;
    struct xnode *nodes;
    size_t nnodes, cap, max_nodes;
    struct cm_buf text;
    const char *why;
};

static int
xfail(struct xdoc *d, const char *why)
{
    d->why = why;
    return -1;
}

static int
is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int
name_char(unsigned char c)
{
    return c > 0x20 && c != 0x7f && strchr("/>=<\"'&", c) == NULL;
}

static void
put_utf8(struct cm_buf *b, uint32_t cp)
{
    char u[4];
    size_t n;

    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | cp >> 12);
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (char)(0xf0 | cp >> 18);
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    cm_buf_append(b, u, n);
}

/* XML 1.0's Char production. */
static int
xml_char(uint32_t cp)
{
    return cp == 0x9 || cp == 0xa || cp == 0xd || (cp >= 0x20 && cp <= 0xd7ff) ||
           (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
}

/* "&...;" at p[0..len): appends its character, returns the bytes used. */
static size_t
entity(struct xdoc *d, const char *p, size_t len)
{
    static const struct {
        const char *name;
        char c;
    } named[] = {{"lt", '<'}, {"gt", '>'}, {"amp", '&'}, {"quot", '"'}, {"apos", '\''}};
    const char *semi = memchr(p, ';', len < 12 ? len : 12);
    size_t n;

    if (semi == NULL) {
        return 0;
    }
    n = (size_t)(semi - p) - 1; /* between '&' and ';' */
    if (n >= 2 && p[1] == '#') {
        uint32_t cp = 0;
        int hex = p[2] == 'x', base = hex ? 16 : 10;
        size_t i = hex ? 3 : 2;

        if (i > n) {
            return 0;
        }
        for (; i <= n; i++) {
            int v = p[i] >= '0' && p[i] <= '9'          ? p[i] - '0'
                    : hex && p[i] >= 'a' && p[i] <= 'f' ? p[i] - 'a' + 10
                    : hex && p[i] >= 'A' && p[i] <= 'F' ? p[i] - 'A' + 10
                                                        : -1;
            if (v < 0 || cp > 0x10ffff) {
                return 0;
            }
            cp = cp * (uint32_t)base + (uint32_t)v;
        }
        if (!xml_char(cp)) {
            return 0;
        }
        put_utf8(&d->text, cp);
        return n + 2;
    }
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        if (strlen(named[i].name) == n && memcmp(p + 1, named[i].name, n) == 0) {
            cm_buf_append(&d->text, &named[i].c, 1);
            return n + 2;
        }
    }
    return 0;
}

/* Character data p[len) decoded into the arena (references resolved, line
 * ends made \n); raw says CDATA (no references). */
static int
text(struct xdoc *d, const char *p, size_t len, int raw)
{
    size_t i = 0, start = 0;

    while (i < len) {
        unsigned char c = (unsigned char)p[i];

        if ((c == '&' && !raw) || c == '\r' || (c < 0x20 && c != '\t' && c != '\n')) {
            cm_buf_append(&d->text, p + start, i - start);
            if (c == '&') {
                size_t used = entity(d, p + i, len - i);
                if (used == 0) {
                    return xfail(d, "an unknown or malformed entity or character reference");
                }
                i += used;
            } else if (c == '\r') {
                cm_buf_append(&d->text, "\n", 1);
                i += (i + 1 < len && p[i + 1] == '\n') ? 2 : 1;
            } else {
                return xfail(d, "a control character XML does not allow");
            }
            start = i;
            continue;
        }
        i++;
    }
    cm_buf_append(&d->text, p + start, len - start);
    return 0;
}

static const char *
find(const char *s, size_t n, size_t from, const char *pat)
{
    size_t pl = strlen(pat);

    for (size_t i = from; i + pl <= n; i++) {
        if (s[i] == pat[0] && memcmp(s + i, pat, pl) == 0) {
            return s + i;
        }
    }
    return NULL;
}

/* A start tag at s[*i] == '<': its node; *self says "<x/>". */
static int
start_tag(struct xdoc *d, size_t *pi, int *self)
{
    const char *s = d->s;
    size_t i = *pi + 1, n = d->n, q;
    struct xnode *x;

    q = i;
    while (i < n && name_char((unsigned char)s[i])) {
        i++;
    }
    if (i == q || (s[q] >= '0' && s[q] <= '9') || s[q] == '-' || s[q] == '.') {
        return xfail(d, "an element without a valid name");
    }
    if (d->nnodes == d->max_nodes) {
        return xfail(d, "too many elements");
    }
    if (d->nnodes == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 64;
        d->nodes = cm_realloc(d->nodes, d->cap * sizeof(*d->nodes));
    }
    x = &d->nodes[d->nnodes];
    memset(x, 0, sizeof(*x));
    x->qname_off = q;
    x->qname_len = i - q;
    x->name_off = q;
    for (size_t k = q; k < i; k++) {
        if (s[k] == ':') {
            x->name_off = k + 1;
        }
    }
    x->name_len = i - x->name_off;
    x->first_child = x->last_child = x->next = -1;
    if (x->name_len == 0) {
        return xfail(d, "an element name ends in ':'");
    }
    for (;;) {
        size_t an;
        char quote;

        while (i < n && is_space(s[i])) {
            i++;
        }
        if (i < n && s[i] == '>') {
            *self = 0;
            break;
        }
        if (i + 1 < n && s[i] == '/' && s[i + 1] == '>') {
            *self = 1;
            i++;
            break;
        }
        an = i;
        while (i < n && name_char((unsigned char)s[i])) {
            i++;
        }
        if (i == an) {
            return xfail(d, "a malformed start tag");
        }
        while (i < n && is_space(s[i])) {
            i++;
        }
        if (i >= n || s[i] != '=') {
            return xfail(d, "an attribute without a value");
        }
        i++;
        while (i < n && is_space(s[i])) {
            i++;
        }
        if (i >= n || (s[i] != '"' && s[i] != '\'')) {
            return xfail(d, "an attribute value without quotes");
        }
        quote = s[i++];
        while (i < n && s[i] != quote) {
            if (s[i] == '<' || ((unsigned char)s[i] < 0x20 && !is_space(s[i]))) {
                return xfail(d, "a character an attribute value cannot hold");
            }
            i++;
        }
        if (i >= n) {
            return xfail(d, "an unterminated attribute value");
        }
        i++;
    }
    if (i >= n) {
        return xfail(d, "an unterminated start tag");
    }
    *pi = i + 1;
    return (int)d->nnodes++;
}

static void
leaf_end(struct xdoc *d, struct xnode *x)
{
    x->text_len = x->has_child ? 0 : d->text.len - x->text_off;
    cm_buf_append(&d->text, "", 1); /* the NUL ending the leaf's text */
    if (x->has_child) {
        x->text_off = d->text.len - 1;
    }
}

static int
xml_parse(struct xdoc *d)
{
    const char *s = d->s;
    size_t i = 0, n = d->n;
    int stack[GW_S3_XML_DEPTH_MAX], depth = 0, rooted = 0;

    if (n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) {
        i = 3;
    }
    while (i < n) {
        const char *e;

        if (s[i] != '<') {
            size_t st = i;
            while (i < n && s[i] != '<') {
                i++;
            }
            if (depth == 0) {
                for (size_t k = st; k < i; k++) {
                    if (!is_space(s[k])) {
                        return xfail(d, "text outside the root element");
                    }
                }
            } else if (text(d, s + st, i - st, 0) != 0) {
                return -1;
            }
            continue;
        }
        if (n - i >= 2 && s[i + 1] == '?') {
            if ((e = find(s, n, i + 2, "?>")) == NULL) {
                return xfail(d, "an unterminated processing instruction");
            }
            i = (size_t)(e - s) + 2;
        } else if (n - i >= 4 && memcmp(s + i, "<!--", 4) == 0) {
            if ((e = find(s, n, i + 4, "-->")) == NULL) {
                return xfail(d, "an unterminated comment");
            }
            i = (size_t)(e - s) + 3;
        } else if (n - i >= 9 && memcmp(s + i, "<![CDATA[", 9) == 0) {
            if (depth == 0) {
                return xfail(d, "CDATA outside the root element");
            }
            if ((e = find(s, n, i + 9, "]]>")) == NULL) {
                return xfail(d, "an unterminated CDATA section");
            }
            if (text(d, s + i + 9, (size_t)(e - s) - i - 9, 1) != 0) {
                return -1;
            }
            i = (size_t)(e - s) + 3;
        } else if (n - i >= 2 && s[i + 1] == '!') {
            return xfail(d, "DTDs and declarations are not accepted");
        } else if (n - i >= 2 && s[i + 1] == '/') {
            struct xnode *x;
            size_t q = i + 2;

            if (depth == 0) {
                return xfail(d, "an end tag without a start tag");
            }
            x = &d->nodes[stack[depth - 1]];
            if (n - q < x->qname_len || memcmp(s + q, s + x->qname_off, x->qname_len) != 0) {
                return xfail(d, "an end tag that does not match its start tag");
            }
            q += x->qname_len;
            while (q < n && is_space(s[q])) {
                q++;
            }
            if (q >= n || s[q] != '>') {
                return xfail(d, "an end tag that does not match its start tag");
            }
            leaf_end(d, x);
            depth--;
            i = q + 1;
        } else {
            int self, id;

            if (rooted && depth == 0) {
                return xfail(d, "a second root element");
            }
            if (depth == GW_S3_XML_DEPTH_MAX) {
                return xfail(d, "elements nested too deep");
            }
            if ((id = start_tag(d, &i, &self)) < 0) {
                return -1;
            }
            if (depth > 0) {
                struct xnode *p = &d->nodes[stack[depth - 1]];
                p->has_child = 1;
                if (p->last_child >= 0) {
                    d->nodes[p->last_child].next = id;
                } else {
                    p->first_child = id;
                }
                p->last_child = id;
            }
            rooted = 1;
            d->nodes[id].text_off = d->text.len;
            if (self) {
                leaf_end(d, &d->nodes[id]);
            } else {
                stack[depth++] = id;
            }
        }
    }
    if (depth != 0 || !rooted) {
        return xfail(d, rooted ? "an element is not closed" : "no root element");
    }
    return 0;
}

static int
local_is(const struct xdoc *d, int id, const char *name)
{
    const struct xnode *x = &d->nodes[id];

    return x->name_len == strlen(name) && memcmp(d->s + x->name_off, name, x->name_len) == 0;
}

/* The one child called name (-1 if none; -2 if several). */
static int
child(const struct xdoc *d, int parent, const char *name)
{
    int found = -1;

    for (int c = d->nodes[parent].first_child; c >= 0; c = d->nodes[c].next) {
        if (local_is(d, c, name)) {
            if (found >= 0) {
                return -2;
            }
            found = c;
        }
    }
    return found;
}

/* A leaf's text, trimmed of XML white space, NUL-terminated in place. */
static char *
trimmed(struct xdoc *d, int id, size_t *len)
{
    char *p = d->text.p + d->nodes[id].text_off;
    size_t n = d->nodes[id].text_len;

    while (n > 0 && is_space(*p)) {
        p++;
        n--;
    }
    while (n > 0 && is_space(p[n - 1])) {
        n--;
    }
    p[n] = '\0';
    *len = n;
    return p;
}

static enum gw_s3_err
doc_parse(struct xdoc *d, const char *body, size_t len, size_t max_nodes, const char *root,
          const char **why)
{
    memset(d, 0, sizeof(*d));
    d->s = body;
    d->n = len;
    d->max_nodes = max_nodes;
    cm_buf_init(&d->text);
    if (len > GW_S3_XML_BODY_MAX) {
        *why = "the XML body is too large";
        return GW_S3_E_MAX_MESSAGE_LENGTH;
    }
    if (xml_parse(d) != 0) {
        *why = d->why;
        return GW_S3_E_MALFORMED_XML;
    }
    if (!local_is(d, 0, root)) {
        *why = "the root element is not the one this operation takes";
        return GW_S3_E_MALFORMED_XML;
    }
    return GW_S3_OK;
}

static void
doc_free(struct xdoc *d)
{
    free(d->nodes);
    cm_buf_fini(&d->text);
}

enum gw_s3_err
gw_s3_xml_parse_complete(const char *body, size_t len, struct gw_s3_xml_complete *out,
                         const char **why)
{
    struct xdoc d;
    enum gw_s3_err e;
    const char *dummy;
    size_t *offs = NULL, k = 0;

    why = why != NULL ? why : &dummy;
    *why = NULL;
    memset(out, 0, sizeof(*out));
    e = doc_parse(&d, body, len, 1 + (size_t)GW_S3_MAX_PARTS * 8, "CompleteMultipartUpload", why);
    if (e != GW_S3_OK) {
        goto out;
    }
    for (int c = d.nodes[0].first_child; c >= 0; c = d.nodes[c].next) {
        int pn, et;
        size_t l, el;
        char *num, *etag;
        unsigned v = 0;

        if (!local_is(&d, c, "Part")) {
            continue;
        }
        pn = child(&d, c, "PartNumber");
        et = child(&d, c, "ETag");
        if (pn < 0 || et < 0) {
            *why = "each Part needs one PartNumber and one ETag";
            e = GW_S3_E_MALFORMED_XML;
            goto out;
        }
        if (out->nparts == GW_S3_MAX_PARTS) {
            *why = "more than 10000 parts";
            e = GW_S3_E_MALFORMED_XML;
            goto out;
        }
        num = trimmed(&d, pn, &l);
        if (l == 0 || l > 5 || strspn(num, "0123456789") != l) {
            *why = "a PartNumber is not a number";
            e = GW_S3_E_MALFORMED_XML;
            goto out;
        }
        v = (unsigned)strtoul(num, NULL, 10);
        if (v < 1 || v > GW_S3_MAX_PARTS) {
            *why = "Part number must be an integer between 1 and 10000, inclusive";
            e = GW_S3_E_INVALID_ARGUMENT;
            goto out;
        }
        if (out->nparts > 0 && v <= out->parts[out->nparts - 1].number) {
            e = GW_S3_E_INVALID_PART_ORDER;
            goto out;
        }
        etag = trimmed(&d, et, &el);
        if (el >= 2 && etag[0] == '"' && etag[el - 1] == '"') {
            etag[el - 1] = '\0';
            etag++;
            el -= 2;
        }
        if (el == 0) {
            *why = "an ETag is empty";
            e = GW_S3_E_MALFORMED_XML;
            goto out;
        }
        if (out->parts == NULL) {
            out->parts = cm_malloc(GW_S3_MAX_PARTS * sizeof(*out->parts));
            offs = cm_malloc(GW_S3_MAX_PARTS * sizeof(*offs));
        }
        out->parts[out->nparts].number = v;
        offs[k++] = (size_t)(etag - d.text.p);
        out->nparts++;
    }
    if (out->nparts == 0) {
        *why = "no Part";
        e = GW_S3_E_MALFORMED_XML;
        goto out;
    }
    out->mem_ = cm_buf_take(&d.text, &len);
    for (size_t i = 0; i < out->nparts; i++) {
        out->parts[i].etag = out->mem_ + offs[i];
    }
out:
    free(offs);
    doc_free(&d);
    if (e != GW_S3_OK) {
        gw_s3_xml_complete_free(out);
    }
    return e;
}

void
gw_s3_xml_complete_free(struct gw_s3_xml_complete *c)
{
    free(c->parts);
    free(c->mem_);
    memset(c, 0, sizeof(*c));
}

enum gw_s3_err
gw_s3_xml_parse_delete(const char *body, size_t len, struct gw_s3_xml_delete *out, const char **why)
{
    struct xdoc d;
    enum gw_s3_err e;
    const char *dummy;
    size_t(*offs)[2] = NULL;

    why = why != NULL ? why : &dummy;
    *why = NULL;
    memset(out, 0, sizeof(*out));
    e = doc_parse(&d, body, len, 2 + (size_t)GW_S3_MAX_DELETE * 8, "Delete", why);
    if (e != GW_S3_OK) {
        goto out;
    }
    for (int c = d.nodes[0].first_child; c >= 0; c = d.nodes[c].next) {
        int key, ver;
        size_t l;

        if (local_is(&d, c, "Quiet")) {
            char *q = trimmed(&d, c, &l);
            if (strcasecmp(q, "true") != 0 && strcasecmp(q, "false") != 0) {
                *why = "Quiet is neither true nor false";
                e = GW_S3_E_MALFORMED_XML;
                goto out;
            }
            out->quiet = strcasecmp(q, "true") == 0;
            continue;
        }
        if (!local_is(&d, c, "Object")) {
            continue;
        }
        key = child(&d, c, "Key");
        ver = child(&d, c, "VersionId");
        if (key < 0 || ver == -2 || d.nodes[key].text_len == 0) {
            *why = "each Object needs one non-empty Key and at most one VersionId";
            e = GW_S3_E_MALFORMED_XML;
            goto out;
        }
        if (out->nobjects == GW_S3_MAX_DELETE) {
            *why = "more than 1000 keys";
            e = GW_S3_E_MALFORMED_XML;
            goto out;
        }
        if (out->objects == NULL) {
            out->objects = cm_calloc(GW_S3_MAX_DELETE, sizeof(*out->objects));
            offs = cm_malloc(GW_S3_MAX_DELETE * sizeof(*offs));
        }
        offs[out->nobjects][0] = d.nodes[key].text_off;
        out->objects[out->nobjects].key_len = d.nodes[key].text_len;
        offs[out->nobjects][1] = ver >= 0 ? (size_t)(trimmed(&d, ver, &l) - d.text.p) : SIZE_MAX;
        out->nobjects++;
    }
    if (out->nobjects == 0) {
        *why = "no Object";
        e = GW_S3_E_MALFORMED_XML;
        goto out;
    }
    out->mem_ = cm_buf_take(&d.text, &len);
    for (size_t i = 0; i < out->nobjects; i++) {
        out->objects[i].key = out->mem_ + offs[i][0];
        out->objects[i].version_id = offs[i][1] != SIZE_MAX ? out->mem_ + offs[i][1] : NULL;
    }
out:
    free(offs);
    doc_free(&d);
    if (e != GW_S3_OK) {
        gw_s3_xml_delete_free(out);
    }
    return e;
}

void
gw_s3_xml_delete_free(struct gw_s3_xml_delete *d)
{
    free(d->objects);
    free(d->mem_);
    memset(d, 0, sizeof(*d));
}
