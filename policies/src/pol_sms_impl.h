/*
 * pol_sms_impl.h - what every SMS policy shares (private to policies/): the
 * instance record (only the effective config: the policies keep no state
 * between calls, the caller's view carries it), the registered ops tables,
 * and the pieces both policies use.
 */
#ifndef POL_SMS_IMPL_H
#define POL_SMS_IMPL_H

#include "pol_sms.h"

struct pol_sms {
    const struct pol_sms_ops *ops;
    struct pol_sms_cfg cfg; /* defaults filled in, validated */
};

/* The registered policies (one file each). */
extern const struct pol_sms_ops pol_sms_window_ops; /* "sms" */
extern const struct pol_sms_ops pol_sms_static_ops; /* "static" */

/* Allocates p with cfg's defaults filled in. 0, CM_E_BADARG or -ENOMEM. */
int pol_sms_new(const struct pol_sms_ops *ops, const struct pol_sms_cfg *cfg, struct pol_sms **out);
void pol_sms_free(struct pol_sms *p);

/* 0, or CM_E_BADARG for a NULL view or instances missing. */
int pol_sms_check_view(const struct pol_sms_view *v);
/* 0, or CM_E_BADARG: a bad view, an instance in no known state, d or t NULL. */
int pol_sms_check_tick(const struct pol_sms_view *v, const struct pol_sms_decision *d,
                       const struct pol_sms_tick *t);

/*
 * The fullest live instance of v (WARM or ACTIVE, not lost; of generation
 * v->gen when newest_only) with room for bytes: 0 with *idx; else
 * POL_SMS_OPEN_NEW when v->can_open and cfg.max_instances allow, or
 * -ENOSPC. CM_E_TOOBIG for a chunk larger than an instance.
 */
int pol_sms_fit(const struct pol_sms *p, const struct pol_sms_view *v, uint64_t bytes,
                int newest_only, size_t *idx);

/* merge_from and merge_to of a policy that merges (pol_sms.h). */
int pol_sms_merge_from(const struct pol_sms *p, const struct pol_sms_view *v, uint64_t now_ns,
                       size_t *from);
int pol_sms_merge_to(const struct pol_sms *p, const struct pol_sms_view *v, size_t from,
                     uint64_t bytes, size_t *idx);

/*
 * Completes a tick once d[i].state, .gen and .reason are decided: the
 * warm-ups due, the figures and next_ns (no later than next_roll_ns).
 */
void pol_sms_finish(const struct pol_sms *p, const struct pol_sms_view *v, uint64_t now_ns,
                    uint64_t next_roll_ns, struct pol_sms_decision *d, struct pol_sms_tick *t);

#endif
