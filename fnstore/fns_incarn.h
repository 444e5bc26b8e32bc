/*
 * fns_incarn.h - the node's persistent incarnation counter, bumped at
 * every start: in DATA_DIR/incarnation when a data dir is given, else in
 * the COS as "_nodes/<id>/incarnation". Never 0 (0 means "any" on the
 * wire). Main thread, at startup.
 */
#ifndef FNS_INCARN_H
#define FNS_INCARN_H

#include <stdint.h>

struct cm_cos;

/* data_dir may be NULL or "" (then cos is used). 0 and *out, or an error. */
int fns_incarnation_bump(const char *data_dir, struct cm_cos *cos, uint32_t node_id, uint32_t *out);

#endif
