/* fuzz_s3key.c - the store record of a tenant's S3 key (controller/ctl_s3keys.c,
 * ctl_s3key_decode). The first 20 bytes are the LMDB key (the access key id),
 * the rest the record. A record it takes must have a valid id, a tenant id in
 * range and lowercase-hex fields, and must encode back to a record that
 * decodes to the same key. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_s3keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ctl_s3key k, k2;
    size_t idlen = size < CTL_S3_ID_LEN ? size : CTL_S3_ID_LEN;
    char *rec;

    if (ctl_s3key_decode(data, idlen, data + idlen, size - idlen, &k) != 0) {
        return 0;
    }
    if (!ctl_s3_valid_id(k.id, strlen(k.id)) || k.tenant == 0 || k.tenant == UINT32_MAX ||
        strlen(k.kid) != CTL_S3_KID_LEN) {
        abort();
    }
    rec = ctl_s3key_encode(&k);
    if (rec == NULL || ctl_s3key_decode(k.id, CTL_S3_ID_LEN, rec, strlen(rec), &k2) != 0 ||
        memcmp(&k, &k2, sizeof(k)) != 0) {
        abort();
    }
    free(rec);
    return 0;
}
