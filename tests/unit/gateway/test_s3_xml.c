/*
 * test_s3_xml.c - S3 XML: the responses written byte for byte, escaping and
 * url encoding, then the two request bodies parsed in the shapes clients
 * send them (botocore's, namespaced, pretty-printed, with comments, CDATA
 * and references) and every way they are refused; finally any key written
 * by the escaper parses back to itself.
 */
#include "t_check.h"

#include "gw_s3_xml.h"

#define DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define NS " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""

static struct cm_buf b;

static const char *
out(void)
{
    cm_buf_append(&b, "", 0);
    return b.p;
}

static void
test_writer(void)
{
    struct gw_s3_xml_field extra[] = {{"Key", "a/b"}, {"BucketName", "bk"}};
    struct gw_s3_xml_owner own = {"tid", "tenant"};

    cm_buf_init(&b);
    gw_s3_xml_error(&b, GW_S3_E_NO_SUCH_KEY, NULL, "/bk/a/b", "req1", extra, 2);
    CHECK_EQ_STR(out(), DECL "<Error><Code>NoSuchKey</Code><Message>The specified key does not "
                             "exist.</Message><Key>a/b</Key><BucketName>bk</BucketName>"
                             "<Resource>/bk/a/b</Resource><RequestId>req1</RequestId></Error>");
    b.len = 0;
    gw_s3_xml_error(&b, GW_S3_E_SLOW_DOWN, "x < y", NULL, NULL, NULL, 0);
    CHECK_EQ_STR(out(), DECL "<Error><Code>SlowDown</Code><Message>x &lt; y</Message></Error>");

    b.len = 0;
    gw_s3_xml_escape(&b, "a&b<c>\"d'e\r\t\n\x01\x7f\xc3\xa9", 17);
    CHECK_EQ_STR(out(), "a&amp;b&lt;c&gt;&quot;d&apos;e&#xD;\t\n&#x1;&#x7F;\xc3\xa9");
    b.len = 0;
    gw_s3_xml_key(&b, "Key", "a b+c/\xc3\xa9~%&", 1);
    CHECK_EQ_STR(out(), "<Key>a%20b%2Bc/%C3%A9~%25%26</Key>");
    b.len = 0;
    gw_s3_xml_key(&b, "Key", "a b&", 0);
    gw_s3_xml_key(&b, "Key", NULL, 1);
    gw_s3_xml_text(&b, "X", NULL);
    CHECK_EQ_STR(out(), "<Key>a b&amp;</Key>");
    b.len = 0;
    gw_s3_xml_time(&b, "T", 1255369830123);
    gw_s3_xml_time(&b, "T", 0);
    gw_s3_xml_time(&b, "T", 4107542400000 + 86399999);
    CHECK_EQ_STR(out(), "<T>2009-10-12T17:50:30.123Z</T><T>1970-01-01T00:00:00.000Z</T>"
                        "<T>2100-03-01T23:59:59.999Z</T>");

    b.len = 0;
    {
        struct gw_s3_xml_bucket bk[] = {{"a", 1369353600000}, {"b&c", 1369353600001}};
        gw_s3_xml_list_buckets(&b, &own, bk, 2);
    }
    CHECK_EQ_STR(out(), DECL "<ListAllMyBucketsResult" NS "><Owner><ID>tid</ID><DisplayName>"
                             "tenant</DisplayName></Owner><Buckets><Bucket><Name>a</Name>"
                             "<CreationDate>2013-05-24T00:00:00.000Z</CreationDate></Bucket>"
                             "<Bucket><Name>b&amp;c</Name><CreationDate>2013-05-24T00:00:00.001Z"
                             "</CreationDate></Bucket></Buckets></ListAllMyBucketsResult>");

    {
        struct gw_s3_xml_object objs[] = {
            {"dir/a b", 1369353600000, "\"5d41402abc4b2a76b9719d911017c592\"", 5, NULL},
            {"dir/c", 1369353600000, "\"065947336a2f2a95ba8899f3675c3be6-2\"", 10485760,
             "REDUCED_REDUNDANCY"},
        };
        const char *pfx[] = {"dir/sub/"};
        struct gw_s3_xml_list l = {
            .v2 = 0,
            .bucket = "bk",
            .prefix = "dir/",
            .delimiter = "/",
            .marker = "",
            .next_marker = "dir/c",
            .max_keys = 2,
            .truncated = 1,
            .owner = &own,
            .objects = objs,
            .nobjects = 2,
            .prefixes = pfx,
            .nprefixes = 1,
        };

        b.len = 0;
        gw_s3_xml_list_objects(&b, &l);
        CHECK_EQ_STR(out(),
                     DECL "<ListBucketResult" NS "><Name>bk</Name><Prefix>dir/</Prefix><Marker>"
                          "</Marker><NextMarker>dir/c</NextMarker><MaxKeys>2</MaxKeys><Delimiter>"
                          "/</Delimiter><IsTruncated>true</IsTruncated><Contents><Key>dir/a b"
                          "</Key><LastModified>2013-05-24T00:00:00.000Z</LastModified><ETag>&quot;"
                          "5d41402abc4b2a76b9719d911017c592&quot;</ETag><Size>5</Size><Owner><ID>"
                          "tid</ID><DisplayName>tenant</DisplayName></Owner><StorageClass>"
                          "STANDARD</StorageClass></Contents><Contents><Key>dir/c</Key>"
                          "<LastModified>2013-05-24T00:00:00.000Z</LastModified><ETag>&quot;"
                          "065947336a2f2a95ba8899f3675c3be6-2&quot;</ETag><Size>10485760</Size>"
                          "<Owner><ID>tid</ID><DisplayName>tenant</DisplayName></Owner>"
                          "<StorageClass>REDUCED_REDUNDANCY</StorageClass></Contents>"
                          "<CommonPrefixes><Prefix>dir/sub/</Prefix></CommonPrefixes>"
                          "</ListBucketResult>");
        l.v2 = 1;
        l.owner = NULL;
        l.url_encode = 1;
        l.continuation_token = "tok";
        l.next_continuation_token = "tok2";
        l.start_after = "dir/0 0";
        l.nobjects = 1;
        b.len = 0;
        gw_s3_xml_list_objects(&b, &l);
        CHECK_EQ_STR(out(),
                     DECL "<ListBucketResult" NS "><Name>bk</Name><Prefix>dir/</Prefix>"
                          "<ContinuationToken>tok</ContinuationToken><NextContinuationToken>tok2"
                          "</NextContinuationToken><StartAfter>dir/0%200</StartAfter><KeyCount>2"
                          "</KeyCount><MaxKeys>2</MaxKeys><Delimiter>/</Delimiter><IsTruncated>"
                          "true</IsTruncated><EncodingType>url</EncodingType><Contents><Key>"
                          "dir/a%20b</Key><LastModified>2013-05-24T00:00:00.000Z</LastModified>"
                          "<ETag>&quot;5d41402abc4b2a76b9719d911017c592&quot;</ETag><Size>5"
                          "</Size><StorageClass>STANDARD</StorageClass></Contents>"
                          "<CommonPrefixes><Prefix>dir/sub/</Prefix></CommonPrefixes>"
                          "</ListBucketResult>");
    }

    b.len = 0;
    gw_s3_xml_initiate_mpu(&b, "bk", "k&", "up1");
    CHECK_EQ_STR(out(), DECL "<InitiateMultipartUploadResult" NS "><Bucket>bk</Bucket><Key>k&amp;"
                             "</Key><UploadId>up1</UploadId></InitiateMultipartUploadResult>");
    b.len = 0;
    gw_s3_xml_complete_mpu(&b, "http://h/bk/k", "bk", "k", "\"e-2\"");
    CHECK_EQ_STR(out(), DECL "<CompleteMultipartUploadResult" NS "><Location>http://h/bk/k"
                             "</Location><Bucket>bk</Bucket><Key>k</Key><ETag>&quot;e-2&quot;"
                             "</ETag></CompleteMultipartUploadResult>");
    b.len = 0;
    {
        struct gw_s3_xml_part parts[] = {{1, 0, "\"a\"", 5}, {3, 1000, "\"b\"", 6}};
        struct gw_s3_xml_parts p = {"bk", "k", "up1", NULL, 0, 3, 1000, 0, parts, 2};
        gw_s3_xml_list_parts(&b, &p);
    }
    CHECK_EQ_STR(out(), DECL "<ListPartsResult" NS "><Bucket>bk</Bucket><Key>k</Key><UploadId>"
                             "up1</UploadId><StorageClass>STANDARD</StorageClass>"
                             "<PartNumberMarker>0</PartNumberMarker><NextPartNumberMarker>3"
                             "</NextPartNumberMarker><MaxParts>1000</MaxParts><IsTruncated>false"
                             "</IsTruncated><Part><PartNumber>1</PartNumber><LastModified>"
                             "1970-01-01T00:00:00.000Z</LastModified><ETag>&quot;a&quot;</ETag>"
                             "<Size>5</Size></Part><Part><PartNumber>3</PartNumber><LastModified>"
                             "1970-01-01T00:00:01.000Z</LastModified><ETag>&quot;b&quot;</ETag>"
                             "<Size>6</Size></Part></ListPartsResult>");
    b.len = 0;
    {
        struct gw_s3_xml_upload up[] = {{"a b", "u1", 0}};
        struct gw_s3_xml_uploads u = {.bucket = "bk",
                                      .prefix = "a",
                                      .max_uploads = 1000,
                                      .url_encode = 1,
                                      .owner = &own,
                                      .uploads = up,
                                      .nuploads = 1};
        gw_s3_xml_list_uploads(&b, &u);
    }
    CHECK_EQ_STR(out(), DECL "<ListMultipartUploadsResult" NS "><Bucket>bk</Bucket><KeyMarker>"
                             "</KeyMarker><UploadIdMarker></UploadIdMarker><Prefix>a</Prefix>"
                             "<MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>"
                             "<EncodingType>url</EncodingType><Upload><Key>a%20b</Key><UploadId>"
                             "u1</UploadId><Initiator><ID>tid</ID><DisplayName>tenant"
                             "</DisplayName></Initiator><Owner><ID>tid</ID><DisplayName>tenant"
                             "</DisplayName></Owner><StorageClass>STANDARD</StorageClass>"
                             "<Initiated>1970-01-01T00:00:00.000Z</Initiated></Upload>"
                             "</ListMultipartUploadsResult>");
    b.len = 0;
    gw_s3_xml_copy_result(&b, 0, "\"e\"", 0);
    gw_s3_xml_copy_result(&b, 1, "\"e\"", 0);
    CHECK_EQ_STR(out(), DECL "<CopyObjectResult" NS "><LastModified>1970-01-01T00:00:00.000Z"
                             "</LastModified><ETag>&quot;e&quot;</ETag></CopyObjectResult>" DECL
                             "<CopyPartResult" NS "><LastModified>1970-01-01T00:00:00.000Z"
                             "</LastModified><ETag>&quot;e&quot;</ETag></CopyPartResult>");
    {
        struct gw_s3_xml_deleted v[] = {{"a", GW_S3_OK, NULL},
                                        {"b", GW_S3_E_ACCESS_DENIED, NULL},
                                        {"c", GW_S3_E_INTERNAL, "boom"}};
        b.len = 0;
        gw_s3_xml_delete_result(&b, v, 3, 0);
        CHECK_EQ_STR(out(), DECL "<DeleteResult" NS "><Deleted><Key>a</Key></Deleted><Error><Key>"
                                 "b</Key><Code>AccessDenied</Code><Message>Access Denied"
                                 "</Message></Error><Error><Key>c</Key><Code>InternalError"
                                 "</Code><Message>boom</Message></Error></DeleteResult>");
        b.len = 0;
        gw_s3_xml_delete_result(&b, v, 1, 1);
        CHECK_EQ_STR(out(), DECL "<DeleteResult" NS "></DeleteResult>");
    }
    b.len = 0;
    gw_s3_xml_location(&b, "us-east-1");
    gw_s3_xml_location(&b, "eu-west-1");
    CHECK_EQ_STR(out(), DECL "<LocationConstraint" NS "></LocationConstraint>" DECL
                             "<LocationConstraint" NS ">eu-west-1</LocationConstraint>");
}

static enum gw_s3_err
complete(const char *body, struct gw_s3_xml_complete *c)
{
    const char *why = "unset";
    enum gw_s3_err e = gw_s3_xml_parse_complete(body, strlen(body), c, &why);

    CHECK(e == GW_S3_OK ? why == NULL : (why != NULL || e == GW_S3_E_INVALID_PART_ORDER));
    if (e != GW_S3_OK) {
        CHECK(c->parts == NULL && c->nparts == 0);
    }
    return e;
}

static void
test_complete(void)
{
    struct gw_s3_xml_complete c;
    static const char *const ok[] = {
        /* botocore */
        "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Part><ETag>"
        "\"5d41402abc4b2a76b9719d911017c592\"</ETag><PartNumber>1</PartNumber></Part><Part>"
        "<ETag>\"7d793037a0760186574b0282f2f435e7\"</ETag><PartNumber>2</PartNumber></Part>"
        "</CompleteMultipartUpload>",
        /* pretty, a prolog, comments, entities, a checksum and unknown elements */
        "\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"UTF-8\"?>\r\n<!-- c -->\n"
        "<CompleteMultipartUpload>\n  <Part>\n    <PartNumber> 1 </PartNumber>\n"
        "    <ETag>&quot;5d41402abc4b2a76b9719d911017c592&quot;</ETag>\n"
        "    <ChecksumCRC32>NSRBwg==</ChecksumCRC32>\n  </Part>\n  <!-- <Part> -->\n"
        "  <Part><Unknown><PartNumber>9</PartNumber></Unknown><PartNumber>2</PartNumber>"
        "<ETag>7d793037a0760186574b0282f2f435e7</ETag></Part>\n</CompleteMultipartUpload>\n",
        /* prefixes, self-closing unknowns, CDATA, references */
        "<s3:CompleteMultipartUpload xmlns:s3='http://s3.amazonaws.com/doc/2006-03-01/'>"
        "<s3:Part a = 'x' b=\"y\"><s3:X/><s3:PartNumber>&#49;</s3:PartNumber><s3:ETag>"
        "<![CDATA[\"5d41402abc4b2a76b9719d911017c592\"]]></s3:ETag></s3:Part ><s3:Part>"
        "<s3:PartNumber>&#x32;</s3:PartNumber><s3:ETag>\"7d793037a0760186574b0282f2f435e7"
        "\"</s3:ETag></s3:Part></s3:CompleteMultipartUpload>",
    };
    static const struct {
        const char *body;
        enum gw_s3_err want;
    } bad[] = {
        {"", GW_S3_E_MALFORMED_XML},
        {"   ", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload/>", GW_S3_E_MALFORMED_XML},
        {"<Complete><Part><PartNumber>1</PartNumber><ETag>e</ETag></Part></Complete>",
         GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part>"
         "</CompleteMultipartUpload>",
         GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload><Part><ETag>e</ETag></Part></CompleteMultipartUpload>",
         GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><PartNumber>1</PartNumber>"
         "<ETag>e</ETag></Part></CompleteMultipartUpload>",
         GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload><Part><PartNumber>x</PartNumber><ETag>e</ETag></Part>"
         "</CompleteMultipartUpload>",
         GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload><Part><PartNumber>-1</PartNumber><ETag>e</ETag></Part>"
         "</CompleteMultipartUpload>",
         GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>e</ETag></Part>"
         "</CompleteMultipartUpload>",
         GW_S3_E_INVALID_ARGUMENT},
        {"<CompleteMultipartUpload><Part><PartNumber>10001</PartNumber><ETag>e</ETag></Part>"
         "</CompleteMultipartUpload>",
         GW_S3_E_INVALID_ARGUMENT},
        {"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"\"</ETag></Part>"
         "</CompleteMultipartUpload>",
         GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload><Part><PartNumber>2</PartNumber><ETag>e</ETag></Part><Part>"
         "<PartNumber>1</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
         GW_S3_E_INVALID_PART_ORDER},
        {"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag></Part><Part>"
         "<PartNumber>1</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
         GW_S3_E_INVALID_PART_ORDER},
        /* not well-formed */
        {"<CompleteMultipartUpload><Part></CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload></Part></CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload></CompleteMultipartUpload><x/>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload></CompleteMultipartUpload>x", GW_S3_E_MALFORMED_XML},
        {"x<CompleteMultipartUpload></CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<!DOCTYPE x [<!ENTITY a \"aaaa\">]><CompleteMultipartUpload>&a;"
         "</CompleteMultipartUpload>",
         GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload>&nbsp;</CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload>&#0;</CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload>&#xD800;</CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload>&#x110000;</CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload>&#x;</CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload>& </CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload>\x01</CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload a></CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload a=b></CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload a='<'></CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload a='x></CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload><!-- x </CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload><![CDATA[ x </CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload><?pi </CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<1CompleteMultipartUpload></1CompleteMultipartUpload>", GW_S3_E_MALFORMED_XML},
        {"<s3:></s3:>", GW_S3_E_MALFORMED_XML},
        {"<>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload></CompleteMultipartUploa>", GW_S3_E_MALFORMED_XML},
        {"<CompleteMultipartUpload></CompleteMultipartUpload", GW_S3_E_MALFORMED_XML},
    };
    char *big;
    size_t n;

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        CHECK_EQ_INT(complete(ok[i], &c), GW_S3_OK);
        CHECK_EQ_INT(c.nparts, 2);
        CHECK_EQ_INT(c.parts[0].number, 1);
        CHECK_EQ_STR(c.parts[0].etag, "5d41402abc4b2a76b9719d911017c592");
        CHECK_EQ_INT(c.parts[1].number, 2);
        CHECK_EQ_STR(c.parts[1].etag, "7d793037a0760186574b0282f2f435e7");
        gw_s3_xml_complete_free(&c);
        gw_s3_xml_complete_free(&c);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        enum gw_s3_err e = complete(bad[i].body, &c);
        if (e != bad[i].want) {
            fprintf(stderr, "case %zu: %d\n", i, e);
        }
        CHECK_EQ_INT(e, bad[i].want);
    }
    /* nesting and the limits */
    big = malloc(GW_S3_XML_BODY_MAX + 2);
    n = 0;
    n += (size_t)sprintf(big + n, "<CompleteMultipartUpload>");
    for (int i = 0; i < GW_S3_XML_DEPTH_MAX; i++) {
        n += (size_t)sprintf(big + n, "<a>");
    }
    CHECK_EQ_INT(complete(big, &c), GW_S3_E_MALFORMED_XML);
    n = (size_t)sprintf(big, "<CompleteMultipartUpload>");
    for (int i = 1; i <= GW_S3_MAX_PARTS + 1; i++) {
        n += (size_t)sprintf(big + n, "<Part><PartNumber>%d</PartNumber><ETag>e%d</ETag></Part>",
                             i > GW_S3_MAX_PARTS ? GW_S3_MAX_PARTS : i, i);
        if (i == GW_S3_MAX_PARTS) {
            sprintf(big + n, "</CompleteMultipartUpload>");
            CHECK_EQ_INT(complete(big, &c), GW_S3_OK);
            CHECK_EQ_INT(c.nparts, GW_S3_MAX_PARTS);
            CHECK_EQ_STR(c.parts[9999].etag, "e10000");
            gw_s3_xml_complete_free(&c);
        }
    }
    sprintf(big + n, "</CompleteMultipartUpload>");
    CHECK_EQ_INT(complete(big, &c), GW_S3_E_MALFORMED_XML);
    memset(big, ' ', GW_S3_XML_BODY_MAX + 1);
    big[GW_S3_XML_BODY_MAX + 1] = '\0';
    CHECK_EQ_INT(complete(big, &c), GW_S3_E_MAX_MESSAGE_LENGTH);
    free(big);
}

static void
test_delete(void)
{
    struct gw_s3_xml_delete d;
    const char *why;
    char *big;
    size_t n;
    const char *body =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Delete xmlns=\"http://s3.amazonaws.com/doc/"
        "2006-03-01/\"><Object><Key>a</Key></Object><Object><Key> spaced key </Key><VersionId>"
        " v1 </VersionId></Object><Object><Key>&lt;&amp;&gt;&#x1F600;&#233;\r\n<![CDATA[<x>]]>"
        "</Key></Object><Quiet> TRUE </Quiet></Delete>";

    CHECK_EQ_INT(gw_s3_xml_parse_delete(body, strlen(body), &d, &why), GW_S3_OK);
    CHECK(why == NULL);
    CHECK_EQ_INT(d.quiet, 1);
    CHECK_EQ_INT(d.nobjects, 3);
    CHECK_EQ_STR(d.objects[0].key, "a");
    CHECK_EQ_INT(d.objects[0].key_len, 1);
    CHECK(d.objects[0].version_id == NULL);
    CHECK_EQ_STR(d.objects[1].key, " spaced key ");
    CHECK_EQ_STR(d.objects[1].version_id, "v1");
    CHECK_EQ_STR(d.objects[2].key, "<&>\xf0\x9f\x98\x80\xc3\xa9\n<x>");
    CHECK_EQ_INT(d.objects[2].key_len, strlen(d.objects[2].key));
    gw_s3_xml_delete_free(&d);

    body = "<Delete><Quiet>false</Quiet><Object><Key>x</Key></Object></Delete>";
    CHECK_EQ_INT(gw_s3_xml_parse_delete(body, strlen(body), &d, NULL), GW_S3_OK);
    CHECK_EQ_INT(d.quiet, 0);
    gw_s3_xml_delete_free(&d);
    {
        static const char *const bad[] = {
            "<Delete></Delete>",
            "<Delete><Quiet>yes</Quiet><Object><Key>x</Key></Object></Delete>",
            "<Delete><Object><Key></Key></Object></Delete>",
            "<Delete><Object><Key/></Object></Delete>",
            "<Delete><Object></Object></Delete>",
            "<Delete><Object><Key>a</Key><Key>b</Key></Object></Delete>",
            ("<Delete><Object><Key>a</Key><VersionId>1</VersionId><VersionId>2</VersionId>"
             "</Object></Delete>"),
            "<Delete><Object><Key><b>a</b></Key></Object></Delete>",
            "<CompleteMultipartUpload><Object><Key>a</Key></Object></CompleteMultipartUpload>",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            CHECK_EQ_INT(gw_s3_xml_parse_delete(bad[i], strlen(bad[i]), &d, &why),
                         GW_S3_E_MALFORMED_XML);
            CHECK(why != NULL && d.objects == NULL);
        }
    }
    big = malloc(64 * (GW_S3_MAX_DELETE + 2));
    n = (size_t)sprintf(big, "<Delete>");
    for (int i = 0; i < GW_S3_MAX_DELETE; i++) {
        n += (size_t)sprintf(big + n, "<Object><Key>k%d</Key></Object>", i);
    }
    sprintf(big + n, "</Delete>");
    CHECK_EQ_INT(gw_s3_xml_parse_delete(big, strlen(big), &d, NULL), GW_S3_OK);
    CHECK_EQ_INT(d.nobjects, GW_S3_MAX_DELETE);
    CHECK_EQ_STR(d.objects[999].key, "k999");
    gw_s3_xml_delete_free(&d);
    sprintf(big + n, "<Object><Key>one more</Key></Object></Delete>");
    CHECK_EQ_INT(gw_s3_xml_parse_delete(big, strlen(big), &d, NULL), GW_S3_E_MALFORMED_XML);
    free(big);
}

/* Whatever the escaper writes reads back the same (for every string XML
 * can carry: no NUL, and \r arrives as a reference). */
static void
test_roundtrip(void)
{
    static const char alphabet[] = "ab /&<>\"';:=?#%+\t\n\r]]>\xc3\xa9\xe2\x82\xac";
    char key[64];

    for (int round = 0; round < 2000; round++) {
        struct gw_s3_xml_delete d;
        size_t n = (size_t)t_range(1, 60);

        for (size_t i = 0; i < n; i++) {
            key[i] = alphabet[t_rand() % (sizeof(alphabet) - 1)];
        }
        b.len = 0;
        cm_buf_printf(&b, "<Delete><Object><Key>");
        gw_s3_xml_escape(&b, key, n);
        cm_buf_printf(&b, "</Key></Object></Delete>");
        CHECK_EQ_INT(gw_s3_xml_parse_delete(b.p, b.len, &d, NULL), GW_S3_OK);
        CHECK_EQ_INT(d.objects[0].key_len, n);
        CHECK(memcmp(d.objects[0].key, key, n) == 0);
        gw_s3_xml_delete_free(&d);
    }
}

int
main(void)
{
    t_seed();
    test_writer();
    test_complete();
    test_delete();
    test_roundtrip();
    cm_buf_fini(&b);
    return 0;
}
