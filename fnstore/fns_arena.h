/*
 * fns_arena.h - log-structured chunk memory of a node: chunk buffers carved
 * back to back out of 2 MiB-aligned, huge-page-advised slabs.
 *
 *   reservation (one mmap, MAP_NORESERVE, MADV_HUGEPAGE)
 *   ┌───────────────┬───────────────┬────────────────┬─────────────────┬ ─ ─
 *   │ slab 0 (full) │ slab 1 (cur)  │ slab 2 (warm)  │ slab 3 (cold)   │ never used
 *   │ c c c c c c   │ c c c ▸bump   │ empty, faulted │ empty, DONTNEED │
 *   └───────────────┴───────────────┴────────────────┴─────────────────┴ ─ ─
 *
 * Why: on our VMs the first write to a never-touched 4 KiB page costs a trap
 * to the hypervisor (0.1-0.3 GB/s), to a 2 MiB huge page or to reused
 * memory several GB/s. Giving each chunk its own huge-page-rounded buffer
 * was fast but held up to 2x the bytes accounted against --capacity;
 * packing chunks into shared huge-page slabs keeps both.
 *
 * Allocation bumps within the current slab (FNS_ARENA_ALIGN aligned, so
 * a buffer is page aligned and usable for O_DIRECT). A slab whose last
 * buffer is freed is reused: up to keep_slabs empty slabs stay faulted in
 * ("warm") for the next allocations; beyond that an empty slab's memory
 * is returned with MADV_DONTNEED ("cold") and the address range is reused
 * later. Requests below min_alloc or above the slab size, and requests
 * when the reservation is exhausted, fall back to cm_malloc_big, so an
 * allocation only fails when memory is exhausted.
 *
 * Accounting: the node accounts chunk lengths against --capacity; the arena
 * reports what it holds (bytes of slabs holding buffers or kept warm) so
 * the difference - fragmentation and the warm pool - is visible. A slab is held while any buffer in
 * it lives, so long-lived chunks among short-lived ones pin slabs (there is no compaction).
 *
 * Threads: fns_arena_alloc from any thread (the node's loop thread in
 * practice); fns_arena_free from any thread (COS workers drop the last
 * reference of a chunk); one mutex per arena. fns_arena_free tells arena
 * memory from malloc'd memory by address, across every live arena of the
 * process (at most FNS_ARENA_MAX).
 */
#ifndef FNS_ARENA_H
#define FNS_ARENA_H

#include <stddef.h>
#include <stdint.h>

#define FNS_ARENA_ALIGN ((size_t)4096)
#define FNS_ARENA_SLAB_UNIT ((size_t)2 << 20) /* slab size is a multiple of this */
#define FNS_ARENA_MAX 16                      /* live arenas per process */

struct fns_arena;

struct fns_arena_cfg {
    size_t slab_bytes;    /* slab size, a multiple of FNS_ARENA_SLAB_UNIT */
    size_t reserve_bytes; /* address space reserved, rounded up to whole slabs */
    uint32_t keep_slabs;  /* empty slabs kept faulted in for reuse */
    size_t min_alloc;     /* smaller requests go to malloc */
};

struct fns_arena_stats {
    uint64_t slab_bytes;         /* slab size */
    uint64_t live_buffers;       /* live arena buffers */
    uint64_t held_bytes;         /* bytes of slabs in use or warm */
    uint64_t slabs_in_use;       /* slabs holding buffers, or the current one */
    uint64_t slabs_warm;         /* empty, faulted in, kept for reuse */
    uint64_t slabs_reused_total; /* slabs taken again from the warm or cold lists */
    uint64_t fallbacks_total;    /* eligible requests served by malloc: reservation full */
};

/* cfg borrowed; *out caller-owned. CM_E_BADARG on a bad cfg, -ENOMEM when
 * the reservation cannot be mapped, -EMFILE with FNS_ARENA_MAX live arenas. */
int fns_arena_create(const struct fns_arena_cfg *cfg, struct fns_arena **out);
/* NULL is a no-op. Buffers still live keep the memory mapped: the last
 * fns_arena_free of them releases it. */
void fns_arena_destroy(struct fns_arena *a);
/*
 * n bytes (TRANSFERRED: release with fns_arena_free), from the arena when
 * a != NULL and min_alloc <= n <= slab_bytes, else from cm_malloc_big.
 * NULL only when memory is exhausted.
 */
void *fns_arena_alloc(struct fns_arena *a, size_t n);
/* Releases p from fns_arena_alloc or from malloc (NULL is a no-op). Any thread. */
void fns_arena_free(void *p);
/* Nonzero when p lies in a live arena's reservation. */
int fns_arena_owns(const void *p);
void fns_arena_stats(struct fns_arena *a, struct fns_arena_stats *out);

#endif
