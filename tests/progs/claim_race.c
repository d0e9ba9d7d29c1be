/* claim_race: first touches homed at once by the toucher, which tells the
 * directory after (CABLES_CLAIM=local, directory.c).  Main runs on node 0,
 * the thread on the last node; each first touches one page of each fresh
 * 64-page allocation (main page 0, the thread page 63), so that both may
 * claim the others.
 *   seen  main first-writes pages 8..39 of allocation 0, then a barrier:
 *         the thread must read main's words, never the zeros a claim of
 *         its own would show (a node notices the pages it homed).
 *   race  main writes the even words and the thread the odd words of
 *         pages 8..39 of allocation 1 at the same time, with no barrier
 *         between: both claim the pages, the directory gives each to one
 *         of them, and the other's writes go to it as diffs.  Each reads
 *         its own words back at once; after a barrier both read all.
 * RESULT ok=1 bad_seen=N bad_race=N claimed=C lost=L (C, L: both nodes) */
#include <cables.h>
#include <stdint.h>
#include <stdio.h>

#define PAGES 64
#define FROM 8
#define TO 40

struct shared {
    cables_barrier_t b;
    uint64_t *mem[2];
    long bad_seen, bad_race[2], claimed[2], lost[2]; /* [0]: main's, [1]: the thread's */
};

static uint64_t word(long q, long w) { return ((uint64_t)q << 20 | (uint64_t)w) + 1; }

/* the words of pages FROM..TO-1 of m whose index % step == first */
static long check(const uint64_t *m, long first, long step)
{
    long words = (long)(cables_page_size() / 8), bad = 0;
    for (long q = FROM; q < TO; q++)
        for (long w = first; w < words; w += step)
            bad += m[q * words + w] != word(q, w);
    return bad;
}

static void race(struct shared *s, long mine)
{
    long words = (long)(cables_page_size() / 8);
    cables_stats_t s0, s1;
    cables_stats_get(&s0);
    uint64_t *m = s->mem[1];
    for (long q = FROM; q < TO; q++)
        for (long w = mine; w < words; w += 2)
            m[q * words + w] = word(q, w);
    long bad = check(m, mine, 2);
    cables_barrier_wait(&s->b); /* its release waits for the claims' answers */
    cables_stats_get(&s1);
    s->claimed[mine] = (long)(s1.homes_claimed - s0.homes_claimed);
    s->lost[mine] = (long)(s1.claims_lost - s0.claims_lost);
    s->bad_race[mine] = bad + check(m, 0, 1);
}

static void *thread(void *p)
{
    struct shared *s = p;
    size_t words = cables_page_size() / 8;
    for (int k = 0; k < 2; k++)
        s->mem[k][(PAGES - 1) * words] = 1;
    cables_barrier_wait(&s->b);
    cables_barrier_wait(&s->b); /* main writes allocation 0 */
    s->bad_seen = check(s->mem[0], 0, 1);
    race(s, 1);
    return NULL;
}

int main(void)
{
    size_t ps = cables_page_size(), words = ps / 8;
    struct shared *s = cables_alloc(sizeof *s);
    cables_barrier_init(&s->b, 2);
    for (int k = 0; k < 2; k++)
        s->mem[k] = cables_alloc(PAGES * ps);
    cables_thread_t t;
    if (cables_thread_create(&t, cables_node_count() - 1, thread, s))
        return 2;
    for (int k = 0; k < 2; k++)
        s->mem[k][0] = 1;
    cables_barrier_wait(&s->b);
    for (long q = FROM; q < TO; q++)
        for (long w = 0; w < (long)words; w++)
            s->mem[0][q * (long)words + w] = word(q, w);
    cables_barrier_wait(&s->b);
    race(s, 0);
    cables_thread_join(t, NULL);
    long bad_race = s->bad_race[0] + s->bad_race[1];
    int ok = s->bad_seen == 0 && bad_race == 0;
    printf("RESULT ok=%d bad_seen=%ld bad_race=%ld claimed=%ld lost=%ld\n", ok, s->bad_seen,
           bad_race, s->claimed[0] + s->claimed[1], s->lost[0] + s->lost[1]);
    return ok ? 0 : 1;
}
