/* fuzz_s3_xml.c - the S3 XML body parser and escaper (gateway/gw_s3_xml_parse.c, gw_s3_xml.c).
 *
 * Input: any bytes, parsed as a CompleteMultipartUpload and as a Delete
 * body; what is accepted must meet the documented bounds. Then the input
 * as a key: written with the escaper into a Delete body (and url-encoded
 * into a listing), it must parse back to itself whenever XML can carry it
 * (no NUL nor other C0 control but tab, newline and carriage return). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm_buf.h"
#include "gw_s3_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    struct gw_s3_xml_complete c;
    struct gw_s3_xml_delete d;
    enum gw_s3_err e;
    const char *why;
    struct cm_buf b;
    int carriable = size > 0;

    e = gw_s3_xml_parse_complete(body, size, &c, &why);
    if (e == GW_S3_OK) {
        if (c.nparts < 1 || c.nparts > GW_S3_MAX_PARTS || why != NULL) {
            abort();
        }
        for (size_t i = 0; i < c.nparts; i++) {
            if (c.parts[i].number < 1 || c.parts[i].number > GW_S3_MAX_PARTS ||
                (i > 0 && c.parts[i].number <= c.parts[i - 1].number) || c.parts[i].etag == NULL ||
                c.parts[i].etag[0] == '\0') {
                abort();
            }
        }
    } else if (c.parts != NULL || c.nparts != 0 ||
               (why == NULL && e != GW_S3_E_INVALID_PART_ORDER)) {
        abort();
    }
    gw_s3_xml_complete_free(&c);

    e = gw_s3_xml_parse_delete(body, size, &d, &why);
    if (e == GW_S3_OK) {
        if (d.nobjects < 1 || d.nobjects > GW_S3_MAX_DELETE || (d.quiet != 0 && d.quiet != 1)) {
            abort();
        }
        for (size_t i = 0; i < d.nobjects; i++) {
            if (d.objects[i].key_len == 0 || strlen(d.objects[i].key) != d.objects[i].key_len) {
                abort();
            }
        }
    } else if (d.objects != NULL || why == NULL) {
        abort();
    }
    gw_s3_xml_delete_free(&d);

    for (size_t i = 0; i < size; i++) {
        if (data[i] < 0x20 && data[i] != '\t' && data[i] != '\n' && data[i] != '\r') {
            carriable = 0;
        }
    }
    cm_buf_init(&b);
    if (carriable) {
        cm_buf_printf(&b, "<Delete><Object><Key>");
        gw_s3_xml_escape(&b, body, size);
        cm_buf_printf(&b, "</Key></Object></Delete>");
        if (gw_s3_xml_parse_delete(b.p, b.len, &d, NULL) != GW_S3_OK || d.nobjects != 1 ||
            d.objects[0].key_len != size || memcmp(d.objects[0].key, body, size) != 0) {
            abort();
        }
        gw_s3_xml_delete_free(&d);
    }
    /* a url-encoded key holds only unreserved bytes, '/' and %XX */
    if (size > 0 && memchr(body, '\0', size) == NULL) {
        char *key = strndup(body, size);

        b.len = 0;
        gw_s3_xml_key(&b, "Key", key, 1);
        for (size_t i = 5; i + 6 < b.len; i++) {
            if (strchr("&<>\"' ", b.p[i]) != NULL || (unsigned char)b.p[i] >= 0x80) {
                abort();
            }
        }
        free(key);
    }
    cm_buf_fini(&b);
    return 0;
}
