/* notice_gc: one thread a node writes its own PAGES pages every round and
 * reads everybody's after a barrier, ROUNDS rounds (a write notice per
 * page per round).  Every word read must be the round's value: collecting
 * the notice logs (CABLES_LOG_GC) must never lose one that a node still
 * needs.  Each thread records its node's statistics at the end.
 * RESULT ok=1 bad=0 rounds=R kept_max=K total_min=T
 *   kept_max: the most notices any node's log holds at the end;
 *   total_min: the fewest notices (made + received) any node had. */
#include <cables.h>
#include <stdio.h>
#include <string.h>

#define ROUNDS 3000
#define PAGES 8

struct shared {
    cables_barrier_t b;
    long nodes;
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
    for (long r = 1; r <= ROUNDS; r++) {
        for (size_t w = 0; w < s->words; w += 512)
            mine[w] = r * 100 + me;
        cables_barrier_wait(&s->b);
        for (long k = 0; k < s->nodes; k++)
            for (size_t w = 0; w < s->words; w += 512)
                bad += s->data[k * s->words + w] != r * 100 + k;
        cables_barrier_wait(&s->b);
    }
    cables_stats_t st;
    cables_stats_get(&st);
    s->bad[me] = bad;
    s->kept[me] = st.notices_kept;
    s->total[me] = st.write_notices_made + st.write_notices_received;
    return NULL;
}

int main(void)
{
    struct shared *s = cables_alloc(sizeof *s); /* static data is per node here */
    s->nodes = cables_node_count();
    s->words = PAGES * cables_page_size() / sizeof(long);
    s->data = cables_alloc((size_t)s->nodes * s->words * sizeof(long));
    cables_barrier_init(&s->b, (unsigned)s->nodes);
    cables_thread_t t[64];
    for (long k = 0; k < s->nodes; k++)
        s->args[k] = (struct arg){ s, k };
    for (long k = 1; k < s->nodes; k++)
        if (cables_thread_create(&t[k], (int)k, run, &s->args[k]))
            return 2;
    run(&s->args[0]);
    for (long k = 1; k < s->nodes; k++)
        cables_thread_join(t[k], NULL);
    long bad = 0;
    unsigned long long kept_max = 0, total_min = ~0ull;
    for (long k = 0; k < s->nodes; k++) {
        bad += s->bad[k];
        if (s->kept[k] > kept_max)
            kept_max = s->kept[k];
        if (s->total[k] < total_min)
            total_min = s->total[k];
    }
    printf("RESULT ok=%d bad=%ld rounds=%d kept_max=%llu total_min=%llu\n", bad == 0, bad,
           ROUNDS, kept_max, total_min);
    return bad == 0 ? 0 : 1;
}
