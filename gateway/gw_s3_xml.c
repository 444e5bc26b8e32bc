/*
 * gw_s3_xml.c - S3 XML responses (see gw_s3_xml.h): the writer's
 * elements, escaping, and each operation's document and error. Pure.
 * Request bodies are parsed in gw_s3_xml_parse.c.
 */
#include "gw_s3_xml.h"

#include <stdio.h>
#include <string.h>
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
