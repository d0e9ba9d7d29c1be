/* own_writes: a node keeps its own writes to copies that another thread
 * of it invalidates.  NP pages each hold A's words and one word of H's.
 * On node 1, A increments every one of its words in all NP pages, ROUNDS
 * times, under lock la (its own: re-taken locally, no notice) while B
 * reads H's words under lock lb; on node 0 (the pages' home), H increments
 * its word in every page under lb.  Each of B's acquires names the pages
 * (H wrote them), so B invalidates A's dirty copies, whose diffs go to the
 * home (NP pages of diffs: several messages); A's next access fetches a
 * page again.  If that fetch can read the home before the diff landed (a
 * remote read: no message queued behind the diffs), A reads words without
 * its last increments and they are lost.
 * usage: own_writes [ROUNDS]
 * RESULT ok=1 bad=0 rounds=ROUNDS min=M max=M h=H */
#include "two_nodes.h"

enum { NP = 64, PAGE = 4096, AW = PAGE / sizeof(long) - 1 };

struct page {
    long a[AW]; /* A's, under la */
    long h;     /* H's, under lb */
};

struct shared {
    cables_lock_t la, lb;
    long rounds, stop; /* stop: under lb */
    struct page *pg;
};

static void *a_body(void *arg)
{
    struct shared *s = arg;
    volatile struct page *pg = s->pg;
    for (long r = 0; r < s->rounds; r++) {
        cables_lock(&s->la);
        for (int p = 0; p < NP; p++)
            for (int w = 0; w < AW; w++)
                pg[p].a[w]++;
        cables_unlock(&s->la);
    }
    return NULL;
}

static int stopped(struct shared *s)
{
    cables_lock(&s->lb);
    long st = s->stop;
    cables_unlock(&s->lb);
    return st != 0;
}

static void *b_body(void *arg) /* reads H's words: each acquire invalidates the pages */
{
    struct shared *s = arg;
    volatile long sink = 0;
    while (!stopped(s)) {
        cables_lock(&s->lb);
        for (int p = 0; p < NP; p++)
            sink += s->pg[p].h;
        cables_unlock(&s->lb);
    }
    (void)sink;
    return NULL;
}

static void *h_body(void *arg) /* writes its word of every page, at their home */
{
    struct shared *s = arg;
    for (;;) {
        cables_lock(&s->lb);
        long st = s->stop;
        for (int p = 0; p < NP; p++)
            s->pg[p].h++;
        cables_unlock(&s->lb);
        if (st)
            return NULL;
    }
}

int main(int argc, char **argv)
{
    long rounds = two_node_rounds(argc, argv, 500);
    struct shared *s = cables_alloc(sizeof *s);
    s->pg = cables_alloc(NP * PAGE); /* page aligned */
    s->rounds = rounds;
    s->stop = 0;
    for (int p = 0; p < NP; p++) /* main's first touches home the pages on node 0 */
        for (int w = 0; w < AW; w++)
            s->pg[p].a[w] = 0;
    cables_thread_t a, b, h;
    if (cables_thread_create(&h, 0, h_body, s) || cables_thread_create(&b, 1, b_body, s) ||
        cables_thread_create(&a, 1, a_body, s)) {
        printf("RESULT ok=0 error=create\n");
        return 1;
    }
    cables_thread_join(a, NULL);
    cables_lock(&s->lb);
    s->stop = 1;
    cables_unlock(&s->lb);
    cables_thread_join(b, NULL);
    cables_thread_join(h, NULL);
    long bad = 0, min = rounds, max = rounds;
    cables_lock(&s->la);
    for (int p = 0; p < NP; p++)
        for (int w = 0; w < AW; w++) {
            long v = s->pg[p].a[w];
            bad += v != rounds;
            min = v < min ? v : min;
            max = v > max ? v : max;
        }
    cables_unlock(&s->la);
    cables_lock(&s->lb);
    long hv = s->pg[0].h;
    cables_unlock(&s->lb);
    printf("RESULT ok=%d bad=%ld rounds=%ld min=%ld max=%ld h=%ld\n", bad == 0, bad, rounds, min,
           max, hv);
    return bad == 0 ? 0 : 1;
}
