/* The pure parts of libcables' private API (page.c, diff.c, config.c), for
 * the unit tests.  internal.h cannot be included from C++17: it uses C11
 * `_Atomic T` (cb_futex_wait, cb_waiter_t, cb_ctx_t) and the inline helpers
 * call atomic_load/atomic_store on it, which g++ does not accept.  So these
 * declarations are copied from internal.h and must be kept in step with it. */
#ifndef CB_UNIT_H
#define CB_UNIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cables.h"

extern "C" {

#define CB_MAX_NODES 64

/* page.c */
enum {
    PG_NONE = 0, PG_RO = 1, PG_RW = 2, PG_ACC = 3,
    PG_BUSY = 1u << 2, PG_WAITERS = 1u << 3, PG_LISTED = 1u << 4,
};
enum cb_page_event { EV_READ_FAULT, EV_WRITE_FAULT, EV_RELEASE, EV_INVALIDATE };
enum {
    ACT_FETCH = 1, ACT_TWIN = 2, ACT_LIST = 4, ACT_DIFF = 8, ACT_PROTECT = 16,
};
typedef struct { uint32_t next; unsigned act; } cb_page_step_t;
cb_page_step_t cb_page_next(uint32_t state, bool is_home, enum cb_page_event ev);
int cb_page_prot(uint32_t state);

/* diff.c: [u32 offset][u32 length][bytes], repeated */
size_t cb_diff_encode(const uint8_t *page, const uint8_t *twin, size_t size, uint8_t *out);
size_t cb_diff_max(size_t size);
int cb_diff_apply(uint8_t *page, size_t size, const uint8_t *diff, size_t len);

/* config.c */
typedef struct {
    size_t gas_size, page_size;
    cables_policy_t policy;
    int policy_node;
    bool stats;
    double dead_timeout;
} cb_config_t;
int cb_parse_size(const char *s, size_t *out);
int cb_parse_policy(const char *s, cables_policy_t *p, int *node);
void cb_config_load(cb_config_t *c);

} /* extern "C" */

#endif
