/*
 * ctl_place.h - the controller's partition placement rows: rendezvous
 * (highest random weight) hashing of (tenant, partition) over every
 * registered node, i.e. the "hash" PP policy (policies/include/pol_pp.h)
 * with cm_hash64 and seed 0.
 *
 * A pure function: no state, no I/O, any thread. Adding a node moves a
 * partition only when the new node outranks one of its current holders,
 * so about width/N of the rows change; removing a node changes only the
 * rows it was in.
 */
#ifndef CTL_PLACE_H
#define CTL_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "pol_pp.h"

#define CTL_PLACE_MAX_WIDTH POL_PP_MAX_WIDTH

/* The score of node for (tenant, partition): cm_hash64 over the three ids
 * as 32-bit little-endian words, seed 0. Higher ranks first; ties by the
 * lower node id. */
uint64_t ctl_place_score(uint32_t tenant, uint32_t partition, uint32_t node);

/*
 * Writes to out the min(width, nnodes) best nodes of (tenant, partition),
 * in preference order, and returns that count. nodes (borrowed, any order,
 * distinct ids) and out must not overlap. width is capped at
 * CTL_PLACE_MAX_WIDTH.
 */
size_t ctl_place_row(uint32_t tenant, uint32_t partition, const uint32_t *nodes, size_t nnodes,
                     size_t width, uint32_t *out);

/*
 * Replaces, in row[len], every node that keep[nkeep] (distinct ids) does
 * not list by the node of keep that the row does not hold already, up
 * ones (up[i] != 0) first, then the best score for (tenant, partition):
 * a node leaving changes only its own positions, and each goes where
 * rendezvous hashing over what is left would rank it. Positions keep their
 * order. Returns how many were replaced; a position with no candidate left
 * keeps its node.
 */
size_t ctl_place_replace(uint32_t tenant, uint32_t partition, uint32_t *row, size_t len,
                         const uint32_t *keep, const uint8_t *up, size_t nkeep);

#endif
