/* cables_bench: libcables microbenchmarks for bench/run.sh.
 *
 *   cables-run -n 2 -t T -- cables_bench fault lock barrier
 *   cables-run -n 4 -t T -- cables_bench barrier
 *
 * fault    remote read-fault latency: node 0 writes pages homed on node 0
 *          (CABLES_POLICY_FIXED), a thread on node 1 reads one word of each
 *          page, timing each first read.  Median per fault.  Cold: the
 *          pages are new to node 1; refetch: node 0 rewrites them and node
 *          1 reads them again after the invalidation.  Every timed read
 *          must fault: run it with what brings pages ahead turned off
 *          (CABLES_PAGE_GROUP=1 CABLES_FETCH_RUNS=1 CABLES_REFRESH=0, as
 *          bench/run.sh does), else it is an error.
 * lock     local lock acquire+release (the token stays on node 0), median
 *          over batches of 100; remote acquire: a thread on node 0 and one
 *          on node 1 take one lock in alternation (a barrier between
 *          turns), each timing its cables_lock call; median per acquire.
 * barrier  one thread per node, rounds of barriers; median per barrier.
 *
 * Results are "KEY value" lines on stdout (times in microseconds), then
 * "DONE <errors>"; anything wrong is reported as "ERROR ..." and the exit
 * status is 1. */
#include <cables.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

#define FAULT_ROUNDS 5
#define FAULT_PAGES 300      /* per round */
#define LLOCK_BATCHES 200
#define LLOCK_BATCH 100
#define RLOCK_ITERS 500      /* timed acquires per node */
#define RLOCK_WARMUP 20
#define BAR_ROUNDS 25
#define BAR_PER_ROUND 40
#define BAR_WARMUP 20
#define MAXN 64

static int errors;

/* ---------------- (a) remote read faults ---------------- */

struct fault_arg {
    volatile uint64_t *pages;
    size_t npages, words_per_page;
    uint64_t tag;
    /* results, written by the reader */
    double median_us, p10_us, p90_us;
    uint64_t bad, read_faults, pages_fetched, fetch_ns, home_node1;
};

static void *fault_reader(void *a)
{
    struct fault_arg *f = a;
    double *t = malloc(f->npages * sizeof *t); /* private memory: no faults */
    uint64_t bad = 0, sum = 0;
    cables_stats_t s0, s1;
    cables_stats_get(&s0);
    for (size_t i = 0; i < f->npages; i++) {
        volatile uint64_t *w = f->pages + i * f->words_per_page;
        double t0 = now_us();
        uint64_t v = *w;
        double t1 = now_us();
        t[i] = t1 - t0;
        sum += v;
        if (v != f->tag + i)
            bad++;
    }
    cables_stats_get(&s1);
    (void)sum;
    f->bad = bad;
    f->read_faults = s1.read_faults - s0.read_faults;
    f->pages_fetched = s1.pages_fetched - s0.pages_fetched;
    f->fetch_ns = s1.fetch_ns - s0.fetch_ns;
    f->median_us = median(t, (int)f->npages);
    f->p10_us = pct(t, (int)f->npages, 0.10);
    f->p90_us = pct(t, (int)f->npages, 0.90);
    free(t);
    return NULL;
}

static void bench_fault(void)
{
    size_t ps = cables_page_size(), wpp = ps / sizeof(uint64_t);
    double med[FAULT_ROUNDS], warm[FAULT_ROUNDS], all_p10 = 0, all_p90 = 0;
    uint64_t faults = 0, fetched = 0, fetch_ns = 0, bad = 0, warm_fetched = 0, warm_faults = 0;
    struct fault_arg *f = cables_alloc(sizeof *f);
    for (int r = 0; r < FAULT_ROUNDS; r++) {
        volatile uint64_t *pg = cables_alloc_placed(FAULT_PAGES * ps, CABLES_POLICY_FIXED, 0);
        if (!pg) {
            printf("ERROR fault: cables_alloc_placed failed\n");
            errors++;
            return;
        }
        uint64_t tag = (uint64_t)(r + 1) << 32;
        for (size_t i = 0; i < FAULT_PAGES; i++)
            pg[i * wpp] = tag + i;
        for (size_t i = 0; i < FAULT_PAGES; i++)
            if (cables_home_of((const void *)(pg + i * wpp)) != 0) {
                printf("ERROR fault: page %zu homed on node %d, not 0\n", i,
                       cables_home_of((const void *)(pg + i * wpp)));
                errors++;
                break;
            }
        memset(f, 0, sizeof *f);
        f->pages = pg;
        f->npages = FAULT_PAGES;
        f->words_per_page = wpp;
        f->tag = tag;
        cables_thread_t t;
        if (cables_thread_create(&t, 1, fault_reader, f)) {
            printf("ERROR fault: cannot create a thread on node 1\n");
            errors++;
            return;
        }
        cables_thread_join(t, NULL);
        med[r] = f->median_us;
        all_p10 += f->p10_us / FAULT_ROUNDS;
        all_p90 += f->p90_us / FAULT_ROUNDS;
        faults += f->read_faults;
        fetched += f->pages_fetched;
        fetch_ns += f->fetch_ns;
        bad += f->bad;
        /* warm: node 0 writes the pages again; the next reader's start (an
         * acquire) invalidates node 1's copies, whose memory the kernel
         * already gave: a refetch costs the protocol, not page allocation */
        f->tag = tag + (1u << 20);
        for (size_t i = 0; i < FAULT_PAGES; i++)
            pg[i * wpp] = f->tag + i;
        if (cables_thread_create(&t, 1, fault_reader, f)) {
            printf("ERROR fault: cannot create a thread on node 1\n");
            errors++;
            return;
        }
        cables_thread_join(t, NULL);
        warm[r] = f->median_us;
        warm_fetched += f->pages_fetched;
        warm_faults += f->read_faults;
        bad += f->bad;
        cables_free((void *)pg);
    }
    if (bad) {
        printf("ERROR fault: node 1 read %llu wrong values\n", (unsigned long long)bad);
        errors++;
    }
    if (faults < (uint64_t)FAULT_ROUNDS * FAULT_PAGES ||
        warm_faults < (uint64_t)FAULT_ROUNDS * FAULT_PAGES) {
        printf("ERROR fault: %llu cold and %llu warm reads of %d each faulted: pages came "
               "ahead of the reads, and the medians are not of faults (run with "
               "CABLES_PAGE_GROUP=1 CABLES_FETCH_RUNS=1 CABLES_REFRESH=0)\n",
               (unsigned long long)faults, (unsigned long long)warm_faults,
               FAULT_ROUNDS * FAULT_PAGES);
        errors++;
    }
    if (fetched < (uint64_t)FAULT_ROUNDS * FAULT_PAGES) {
        printf("ERROR fault: node 1 fetched %llu pages, expected %d\n",
               (unsigned long long)fetched, FAULT_ROUNDS * FAULT_PAGES);
        errors++;
    }
    if (warm_fetched < (uint64_t)FAULT_ROUNDS * FAULT_PAGES) {
        printf("ERROR fault: node 1 refetched %llu pages, expected %d\n",
               (unsigned long long)warm_fetched, FAULT_ROUNDS * FAULT_PAGES);
        errors++;
    }
    printf("FAULT_US %.3f\n", median(med, FAULT_ROUNDS));
    printf("FAULT_WARM_US %.3f\n", median(warm, FAULT_ROUNDS));
    printf("FAULT_P10_US %.3f\n", all_p10);
    printf("FAULT_P90_US %.3f\n", all_p90);
    printf("FAULT_COUNT %llu\n", (unsigned long long)faults);
    printf("FAULT_FETCHED %llu\n", (unsigned long long)fetched);
    printf("FAULT_FETCH_MEAN_US %.3f\n", fetched ? fetch_ns / 1e3 / fetched : 0.0);
    cables_free(f);
}

/* ---------------- (b) locks ---------------- */

struct lock_arg {
    cables_lock_t lk;
    cables_barrier_t bar;
    volatile long counter;      /* under lk */
    double acq_us[2][RLOCK_ITERS];
    uint64_t remote[2];
};

/* Node 0 and node 1 take the lock in strict alternation, a barrier between
 * turns: when a thread calls cables_lock, the token sits free on the other
 * node, so every timed acquire is a remote one.  Only cables_lock is timed
 * (not the unlock, not the barrier). */
static void *lock_pingpong(void *a)
{
    struct lock_arg *s = a;
    int me = cables_node_id() == 0 ? 0 : 1;
    cables_stats_t s0, s1;
    for (int i = -RLOCK_WARMUP; i < RLOCK_ITERS; i++) {
        if (i == 0)
            cables_stats_get(&s0);
        for (int turn = 0; turn < 2; turn++) {
            if (turn == me) {
                double t0 = now_us();
                cables_lock(&s->lk);
                double t1 = now_us();
                s->counter++;
                cables_unlock(&s->lk);
                if (i >= 0)
                    s->acq_us[me][i] = t1 - t0;
            }
            cables_barrier_wait(&s->bar);
        }
    }
    cables_stats_get(&s1);
    s->remote[me] = s1.lock_remote_acquires - s0.lock_remote_acquires;
    return NULL;
}

static void bench_lock(void)
{
    struct lock_arg *s = cables_alloc(sizeof *s);
    /* local: main thread on node 0, the token stays here after the first */
    cables_lock_t *ll = &s->lk;
    for (int i = 0; i < 1000; i++) {
        cables_lock(ll);
        cables_unlock(ll);
    }
    double b[LLOCK_BATCHES];
    for (int k = 0; k < LLOCK_BATCHES; k++) {
        double t0 = now_us();
        for (int i = 0; i < LLOCK_BATCH; i++) {
            cables_lock(ll);
            cables_unlock(ll);
        }
        b[k] = (now_us() - t0) / LLOCK_BATCH;
    }
    printf("LOCK_LOCAL_US %.3f\n", median(b, LLOCK_BATCHES));

    /* remote: node 0 and node 1 take turns */
    s->counter = 0;
    cables_barrier_init(&s->bar, 2);
    cables_thread_t t[2];
    for (int n = 0; n < 2; n++)
        if (cables_thread_create(&t[n], n, lock_pingpong, s)) {
            printf("ERROR lock: cannot create a thread on node %d\n", n);
            errors++;
            return;
        }
    for (int n = 0; n < 2; n++)
        cables_thread_join(t[n], NULL);
    long expect = 2L * (RLOCK_ITERS + RLOCK_WARMUP);
    cables_lock(&s->lk);
    long got = s->counter;
    cables_unlock(&s->lk);
    if (got != expect) {
        printf("ERROR lock: counter %ld under the lock, expected %ld\n", got, expect);
        errors++;
    }
    uint64_t remote = s->remote[0] + s->remote[1];
    if (remote < 2u * RLOCK_ITERS) {
        printf("ERROR lock: %llu remote acquires counted, expected %d\n",
               (unsigned long long)remote, 2 * RLOCK_ITERS);
        errors++;
    }
    static double v[2 * RLOCK_ITERS];
    memcpy(v, s->acq_us[0], sizeof s->acq_us[0]);
    memcpy(v + RLOCK_ITERS, s->acq_us[1], sizeof s->acq_us[1]);
    printf("LOCK_REMOTE_US %.3f\n", median(v, 2 * RLOCK_ITERS));
    printf("LOCK_REMOTE_P10_US %.3f\n", pct(v, 2 * RLOCK_ITERS, 0.10));
    printf("LOCK_REMOTE_P90_US %.3f\n", pct(v, 2 * RLOCK_ITERS, 0.90));
    memcpy(v, s->acq_us[0], sizeof s->acq_us[0]);
    printf("LOCK_REMOTE_NODE0_US %.3f\n", median(v, RLOCK_ITERS));
    memcpy(v, s->acq_us[1], sizeof s->acq_us[1]);
    printf("LOCK_REMOTE_NODE1_US %.3f\n", median(v, RLOCK_ITERS));
    printf("LOCK_REMOTE_COUNT %llu\n", (unsigned long long)remote);
    cables_free(s);
}

/* ---------------- (c) barriers ---------------- */

struct bar_arg {
    cables_barrier_t bar;
    double round_us[BAR_ROUNDS];
    volatile long check[MAXN];
};

static void *bar_worker(void *a)
{
    struct bar_arg *s = a;
    int me = cables_node_id();
    for (int i = 0; i < BAR_WARMUP; i++)
        cables_barrier_wait(&s->bar);
    for (int r = 0; r < BAR_ROUNDS; r++) {
        double t0 = now_us();
        for (int i = 0; i < BAR_PER_ROUND; i++)
            cables_barrier_wait(&s->bar);
        double t1 = now_us();
        if (me == 0)
            s->round_us[r] = (t1 - t0) / BAR_PER_ROUND;
    }
    /* the barrier orders memory too: every node writes its slot, then
     * every node must see every slot */
    s->check[me] = 1000 + me;
    cables_barrier_wait(&s->bar);
    int n = cables_node_count(), bad = 0;
    for (int i = 0; i < n; i++)
        if (s->check[i] != 1000 + i)
            bad++;
    return (void *)(intptr_t)bad;
}

static void bench_barrier(void)
{
    int n = cables_node_count();
    if (n < 2 || n > MAXN) {
        printf("ERROR barrier: %d nodes\n", n);
        errors++;
        return;
    }
    struct bar_arg *s = cables_alloc(sizeof *s);
    cables_barrier_init(&s->bar, (unsigned)n);
    cables_thread_t t[MAXN];
    for (int i = 0; i < n; i++)
        if (cables_thread_create(&t[i], i, bar_worker, s)) {
            printf("ERROR barrier: cannot create a thread on node %d\n", i);
            errors++;
            return; /* the others would wait forever: let the exit end it */
        }
    long bad = 0;
    for (int i = 0; i < n; i++) {
        void *r;
        cables_thread_join(t[i], &r);
        bad += (intptr_t)r;
    }
    if (bad) {
        printf("ERROR barrier: %ld slots not seen after a barrier\n", bad);
        errors++;
    }
    double v[BAR_ROUNDS];
    memcpy(v, s->round_us, sizeof v);
    printf("BARRIER%d_US %.3f\n", n, median(v, BAR_ROUNDS));
    printf("BARRIER%d_P90_US %.3f\n", n, pct(v, BAR_ROUNDS, 0.90));
    cables_free(s);
}

int main(int argc, char **argv)
{
    int n = cables_node_count();
    printf("NODES %d\n", n);
    printf("PAGE_SIZE %zu\n", cables_page_size());
    if (argc < 2) {
        fprintf(stderr, "usage: cables-run -n N -- cables_bench fault|lock|barrier...\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        if ((!strcmp(w, "fault") || !strcmp(w, "lock")) && n < 2) {
            printf("ERROR %s: needs 2 nodes or more\n", w);
            errors++;
        } else if (!strcmp(w, "fault")) {
            bench_fault();
        } else if (!strcmp(w, "lock")) {
            bench_lock();
        } else if (!strcmp(w, "barrier")) {
            bench_barrier();
        } else {
            fprintf(stderr, "cables_bench: unknown benchmark '%s'\n", w);
            return 2;
        }
        fflush(stdout);
    }
    printf("DONE %d\n", errors); /* run.sh: all results are out */
    fflush(stdout);
    return errors ? 1 : 0;
}
