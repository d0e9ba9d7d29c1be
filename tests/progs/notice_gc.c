/* notice_gc [parked|locks]: one thread a node writes its own PAGES pages
 * every round and reads everybody's after a barrier, ROUNDS rounds (a
 * write notice per page per round).  Every word read must be the round's
 * value: collecting the notice logs (CABLES_LOG_GC) must never lose one
 * that a node still needs.  Each thread records its node's statistics at
 * the end.
 * With "parked", node 0 runs no worker: main reads every worker's first
 * values (copies of all their pages) and then only waits in the joins, as
 * in most pthreads programs, while the barriers' notices reach node 0.
 * The workers write their pages only in the first half of the rounds (a
 * scratch copy after), so the notices that make main's copies stale are
 * long collected when main reads every worker's last values after the
 * joins.
 * "locks" is "parked" with a lock instead of the barriers: a worker's
 * round writes its pages and its round number under the lock, and checks
 * everybody's pages against their round numbers.  No notice reaches node 0
 * before the joins but through the collection.
 * RESULT ok=1 bad=0 rounds=R kept_max=K total_min=T main_peak=P
 *   kept_max: the most notices any worker's node's log held at once;
 *   total_min: the fewest notices (made + received) any worker's node had;
 *   main_peak: the most notices node 0's log held at once. */
#include <cables.h>
#include <stdio.h>
#include <string.h>

#define ROUNDS 3000
#define PAGES 8

struct shared {
    cables_barrier_t b, all; /* the workers; all threads (parked) */
    cables_lock_t lk;        /* locks: the rounds' */
    long locks, ctl[64];     /* locks: the round each worker wrote last */
    long nodes, first; /* workers first..nodes-1, one on each node */
    long last; /* rounds after it write a scratch copy of the data instead */
    size_t words; /* per thread */
    long bad[64];
    unsigned long long kept[64], total[64];
    long *data;
    struct arg { struct shared *s; long me; } args[64];
};

static void *run(void *a)
{
    struct shared *s = ((struct arg *)a)->s;
    long me = ((struct arg *)a)->me;
    long *mine = s->data + me * s->words, bad = 0;
    if (s->first) { /* parked: main reads round 0, data and scratch */
        for (size_t w = 0; w < s->words; w += 512)
            mine[w] = mine[s->nodes * s->words + w] = me;
        cables_barrier_wait(&s->all);
        cables_barrier_wait(&s->all); /* main has read them */
    }
    for (long r = 1; s->locks && r <= ROUNDS; r++) {
        cables_lock(&s->lk);
        for (size_t w = 0; w < s->words; w += 512)
            (r <= s->last ? mine : mine + s->nodes * s->words)[w] = r * 100 + me;
        s->ctl[me] = r;
        for (long k = s->first; k < s->nodes; k++) {
            long last = s->ctl[k] < s->last ? s->ctl[k] : s->last;
            for (size_t w = 0; w < s->words; w += 512)
                bad += s->data[k * s->words + w] != (last ? last * 100 + k : k);
        }
        cables_unlock(&s->lk);
    }
    for (long r = 1; !s->locks && r <= ROUNDS; r++) {
        long last = r < s->last ? r : s->last; /* the round that wrote mine last */
        for (size_t w = 0; w < s->words; w += 512)
            (r <= s->last ? mine : mine + s->nodes * s->words)[w] = r * 100 + me;
        cables_barrier_wait(&s->b);
        for (long k = s->first; k < s->nodes; k++)
            for (size_t w = 0; w < s->words; w += 512)
                bad += s->data[k * s->words + w] != last * 100 + k;
        cables_barrier_wait(&s->b);
    }
    cables_stats_t st;
    cables_stats_get(&st);
    s->bad[me] = bad;
    s->kept[me] = st.notices_kept_peak;
    s->total[me] = st.write_notices_made + st.write_notices_received;
    return NULL;
}

int main(int argc, char **argv)
{
    int locks = argc > 1 && !strcmp(argv[1], "locks");
    int parked = locks || (argc > 1 && !strcmp(argv[1], "parked"));
    if (argc > 1 && !parked) {
        fprintf(stderr, "usage: notice_gc [parked|locks]\n");
        return 2;
    }
    struct shared *s = cables_alloc(sizeof *s); /* static data is per node here */
    s->nodes = cables_node_count();
    s->first = parked;
    s->locks = locks;
    if (parked && s->nodes < 2) {
        fprintf(stderr, "notice_gc: %s needs 2 nodes or more\n", argv[1]);
        return 2;
    }
    s->words = PAGES * cables_page_size() / sizeof(long);
    s->last = parked ? ROUNDS / 2 : ROUNDS;
    s->data = cables_alloc(2 * (size_t)s->nodes * s->words * sizeof(long));
    cables_barrier_init(&s->b, (unsigned)(s->nodes - parked));
    cables_barrier_init(&s->all, (unsigned)s->nodes);
    cables_thread_t t[64];
    for (long k = 0; k < s->nodes; k++)
        s->args[k] = (struct arg){ s, k };
    for (long k = 1; k < s->nodes; k++)
        if (cables_thread_create(&t[k], (int)k, run, &s->args[k]))
            return 2;
    long bad = 0;
    if (!parked)
        run(&s->args[0]);
    else {
        cables_barrier_wait(&s->all);
        for (long k = 1; k < 2 * s->nodes; k++)
            for (size_t w = 0; w < s->words; w += 512)
                bad += k != s->nodes && s->data[k * s->words + w] != k % s->nodes;
        cables_barrier_wait(&s->all);
    }
    for (long k = 1; k < s->nodes; k++)
        cables_thread_join(t[k], NULL);
    if (parked)
        for (long k = 1; k < s->nodes; k++)
            for (size_t w = 0; w < s->words; w += 512)
                bad += s->data[k * s->words + w] != s->last * 100 + k;
    cables_stats_t st;
    cables_stats_get(&st);
    unsigned long long kept_max = 0, total_min = ~0ull;
    for (long k = parked; k < s->nodes; k++) {
        bad += s->bad[k];
        if (s->kept[k] > kept_max)
            kept_max = s->kept[k];
        if (s->total[k] < total_min)
            total_min = s->total[k];
    }
    printf("RESULT ok=%d bad=%ld rounds=%d kept_max=%llu total_min=%llu main_peak=%llu\n",
           bad == 0, bad, ROUNDS, kept_max, total_min,
           (unsigned long long)st.notices_kept_peak);
    return bad == 0 ? 0 : 1;
}
