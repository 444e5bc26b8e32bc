/*
 * gw_s3_xml_parse.c - S3 request bodies (see gw_s3_xml.h): the
 * CompleteMultipartUpload and Delete bodies. Pure, fuzzed (fuzz_s3_xml).
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
