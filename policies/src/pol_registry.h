/*
 * pol_registry.h - the lookup every policy kind's registry needs (private
 * to policies/).
 *
 * POL_REGISTRY_DEFINE(rs, pol_rs_registry) defines pol_rs_find(name) and
 * pol_rs_list(&n) over a static array of `const struct pol_rs_ops *`,
 * declared in pol_rs.h. Every ops table starts with `const char *name`.
 */
#ifndef POL_REGISTRY_H
#define POL_REGISTRY_H

#include <stddef.h>
#include <string.h>

#define POL_REGISTRY_DEFINE(kind, registry)                                                        \
    const struct pol_##kind##_ops *pol_##kind##_find(const char *name)                             \
    {                                                                                              \
        size_t i;                                                                                  \
                                                                                                   \
        for (i = 0; name != NULL && i < sizeof(registry) / sizeof(registry[0]); i++) {             \
            if (strcmp(registry[i]->name, name) == 0) {                                            \
                return registry[i];                                                                \
            }                                                                                      \
        }                                                                                          \
        return NULL;                                                                               \
    }                                                                                              \
                                                                                                   \
    const struct pol_##kind##_ops *const *pol_##kind##_list(size_t *n)                             \
    {                                                                                              \
        *n = sizeof(registry) / sizeof(registry[0]);                                               \
        return registry;                                                                           \
    }

#endif
