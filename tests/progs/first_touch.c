/* first_touch: the thread on node i first writes its own block of pages,
 * between barriers; every page of block i must be homed at node i, and
 * writing the own block must fetch no page from another node.
 * RESULT ok=1 fetched_local=0 bad_homes=0 bad_data=0 pages=P */
#include <cables.h>
#include <stdio.h>
#include <string.h>

#define B 64 /* pages per block: whole page groups (CABLES_PAGE_GROUP, at most 64) */

struct shared {
    cables_barrier_t bar;
    char *data; int nn;
    long fetched[64], bad_homes[64];
};
struct targ { struct shared *s; int id; };

static void *work(void *arg)
{
    struct targ *a = arg;
    struct shared *s = a->s;
    int me = a->id, nn = s->nn;
    char *data = s->data;
    size_t ps = cables_page_size();
    cables_stats_t before, after;
    cables_barrier_wait(&s->bar);
    cables_stats_get(&before);
    for (int p = 0; p < B; p++)
        memset(data + (size_t)(me * B + p) * ps, me + 1, ps);
    cables_stats_get(&after);
    long fetched = (long)(after.pages_fetched - before.pages_fetched);
    cables_barrier_wait(&s->bar);
    long bad = 0;
    for (int q = 0; q < nn * B; q++) {
        int h = cables_home_of(data + (size_t)q * ps);
        if (h != q / B && bad++ < 3)
            printf("node %d: page %d of block %d has home %d\n", me, q, q / B, h);
    }
    printf("node %d: local phase fetched %ld pages\n", me, fetched);
    fflush(stdout);
    s->fetched[me] = fetched;
    s->bad_homes[me] = bad;
    return NULL;
}

int main(void)
{
    int nn = cables_node_count();
    size_t ps = cables_page_size();
    struct shared *s = cables_alloc(sizeof *s);
    struct targ *a = cables_alloc(64 * sizeof *a);
    s->data = cables_alloc((size_t)nn * B * ps);
    s->nn = nn;
    cables_barrier_init(&s->bar, (unsigned)nn);
    cables_thread_t t[64];
    for (int i = 0; i < nn; i++) {
        a[i] = (struct targ){ s, i };
        cables_thread_create(&t[i], i, work, &a[i]);
    }
    long fetched = 0, bad_homes = 0, bad_data = 0;
    for (int i = 0; i < nn; i++) {
        cables_thread_join(t[i], NULL);
        fetched += s->fetched[i];
        bad_homes += s->bad_homes[i];
    }
    for (int q = 0; q < nn * B; q++) {
        if (cables_home_of(s->data + (size_t)q * ps) != q / B)
            bad_homes++;
        for (size_t k = 0; k < ps; k += 512)
            if (s->data[(size_t)q * ps + k] != q / B + 1)
                bad_data++;
    }
    int ok = fetched == 0 && bad_homes == 0 && bad_data == 0;
    printf("RESULT ok=%d fetched_local=%ld bad_homes=%ld bad_data=%ld pages=%d\n", ok, fetched,
           bad_homes, bad_data, nn * B);
    return ok ? 0 : 1;
}
