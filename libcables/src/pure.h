/* pure.h: the runtime's pure functions, free of node state: the page state
 * machine (page.c), diffs (diff.c), settings (config.c), the master's GAS
 * ranges (ranges.c).  Plain C, so the
 * C++ unit tests include it as it is. */
#ifndef CABLES_PURE_H
#define CABLES_PURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cables.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CB_MAX_NODES 64
#define CB_MAX_PAGE_GROUP 64 /* pages one fault may handle */
#define CB_MAX_FETCH_RUNS 64 /* runs of pages one strided fetch may bring */
#define CB_MAX_FETCH_PAGES 256 /* pages one fetch may bring, all runs together */
#define CB_TWIN_BLOCK 256 /* twins are mapped this many at a time (gas.c) */

/* ---- page state word (page.c): one 32-bit word per page, futex-waitable */
enum {
    PG_NONE = 0,   /* no access: invalid copy, or never touched */
    PG_RO = 1,     /* valid copy or clean home page, read-only */
    PG_RW = 2,     /* written this interval: twinned copy or home page */
    PG_ACC = 3,    /* mask of the access bits above */
    PG_BUSY = 1u << 2,    /* one thread is changing the page; others wait */
    PG_WAITERS = 1u << 3, /* someone sleeps on the word: wake on unbusy */
    PG_LISTED = 1u << 4,  /* in this interval's dirty list: notice pending */
    PG_SHARED = 1u << 5,  /* home page some other node has fetched: its writes
                             need notices; until then none can hold a copy */
    PG_STACK = 1u << 6,   /* home page of a thread stack: always writable (code
                             of the runtime runs on it and must never fault);
                             once shared, noticed at every release */
    PG_TWIN = 1u << 7,    /* shared home page kept writable (written in an interval,
                             served while written, or opened by a neighbour's write
                             fault): its checksum taken (a home page's twin),
                             noticed only if that changes */
};
/* EV_RELEASE: a listed page at a release; EV_IDLE: a listed copy whose
 * release diff was empty (it stops being written) */
/* EV_WRITE_AHEAD: a page after one that took a write fault, opened with it
 * if it is a clean shared home page (act 0 otherwise) */
/* EV_SHARE: a home page about to leave as a copy (served to another node) */
enum cb_page_event { EV_READ_FAULT, EV_WRITE_FAULT, EV_RELEASE, EV_IDLE, EV_INVALIDATE,
                     EV_WRITE_AHEAD, EV_SHARE };
enum {
    ACT_FETCH = 1, ACT_TWIN = 2, ACT_LIST = 4, ACT_DIFF = 8,
    ACT_PROTECT = 16, /* set the application view's protection to next's */
};
typedef struct { uint32_t next; unsigned act; } cb_page_step_t;
/* page.c */
cb_page_step_t cb_page_next(uint32_t state, bool is_home, enum cb_page_event ev);
int cb_page_prot(uint32_t state);

/* diff.c: the bytes where page differs from twin, byte-exact, in records
 * plain ([u32 offset][u32 length][bytes]) or masked (a byte mask per word;
 * the format is in diff.c).  out has room for cb_diff_max(size) bytes. */
size_t cb_diff_encode(const uint8_t *page, const uint8_t *twin, size_t size, uint8_t *out);
/* the same, and the twin becomes the page as the diff saw it */
size_t cb_diff_encode_refresh(const uint8_t *page, uint8_t *twin, size_t size, uint8_t *out);
size_t cb_diff_max(size_t size);
int cb_diff_apply(uint8_t *page, size_t size, const uint8_t *diff, size_t len);

/* config.c */
typedef struct {
    size_t gas_size, page_size, stack_size;
    size_t libs_size; /* the window dlopen's libraries load into (libs.c) */
    cables_policy_t policy;
    int policy_node;
    bool stats;
    double dead_timeout; /* seconds without a message before a peer is dead */
    double attach_timeout; /* seconds an attach's MPI_Comm_spawn may take before it is given up */
    double propagate;      /* seconds within which a write reaches a thread that polls or spins
                              on it without synchronizing (propagate.c; 0: never) */
    bool poll_note;        /* a note, once a node, when that showed a poller writes */
    int test_spawn_stall; /* testing: a node attached on demand sleeps this long (0: for ever)
                             before MPI_Init, as when Open MPI's spawn hangs; -1: off */
    int test_env_drop_us; /* testing: microseconds a node takes for each variable of its
                             environment as it drops the launcher's (start.c); 0: off */
    int threads_per_node; /* a node's capacity: more threads attach a new node */
    int max_nodes;        /* nodes present at once, attached ones included (0: the launched) */
    int page_group;       /* pages one fault handles: a first touch homes the aligned group; a
                             write fault's fetch brings the invalid ones after the faulting one,
                             up to this many; a write fault on a home page opens that many */
    int fetch_pages;      /* a read fault's fetch of copies brings up to this many pages (the
                             page group unless set): runs this long when the stride holds */
    bool fetch_get;       /* fetch by remote reads where the transport does them in place */
    int fetch_runs;       /* a fetch whose faults follow a stride brings up to this many runs */
    int refresh;          /* acquires that refresh in place a copy read again after an
                             invalidation (0: always invalidate) */
    bool bind;            /* node processes sharing a machine get its CPUs in equal shares */
    bool claim_local;     /* a first touch homes the page here at once, telling the directory
                             after (false: it asks first) */
    bool quiet;           /* a noticed home page not served since gets no notices (hlrc.c) */
    bool lazy_acks;       /* a lock's release goes on while its diffs are applied (hlrc.c) */
    int store_ahead;      /* a thread allocates the store's pages ahead of sweeps (store.c):
                           * 0 never, 1 where a CPU is to spare, 2 always */
    int log_gc;           /* the notice logs are collected each time one grew by this
                             many notices (0: never) */
} cb_config_t;
/* ---- the master's GAS ranges (ranges.c): from top up to limit, freed
 * ones (r, in address order, none touching) handed out again if reuse */
typedef struct { uint64_t first, npages; } cb_range_t;
typedef struct { cb_range_t *r; size_t n, cap; uint64_t top, limit; } cb_ranges_t;
/* first page of npages, or ~0 if they do not fit; reused: from a freed range */
uint64_t cb_ranges_take(cb_ranges_t *s, uint64_t npages, bool reuse, bool *reused);
void cb_ranges_put(cb_ranges_t *s, uint64_t first, uint64_t npages);

int cb_parse_size(const char *s, size_t *out);
int cb_parse_policy(const char *s, cables_policy_t *p, int *node);
void cb_config_load(cb_config_t *c); /* exits with a message on bad input */
/* How many of the transports UCX_TLS names are in set (NULL-terminated);
 * *n: how many it names (0: unset or empty, UCX picks), *except: it names
 * those not to use ("^a,b") */
unsigned cb_ucx_tls_in(const char *const *set, unsigned *n, bool *except);
void cb_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

#ifdef __cplusplus
}
#endif
#endif
