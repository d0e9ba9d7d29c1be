/* home_move: node 0 writes a page (its home), moves the home to node 1;
 * every node then sees home 1 and the data, and writes made under a lock
 * after the move (on node 0, node 1 and another node) all survive.
 * RESULT ok=1 move_rc=0 home_before=0 home_after=1 bad=0 */
#include <cables.h>
#include <stdint.h>
#include <stdio.h>

#define SLOT 448 /* words before SLOT hold the pattern, words from SLOT the writes */

struct shared { cables_lock_t lk; uint64_t *page; long bad[4]; };
struct targ { struct shared *s; int idx; };

static uint64_t pat(int i) { return 0xabc0000ull + (uint64_t)i * 7; }

static long check(struct shared *s, const char *who)
{
    long bad = 0;
    int h = cables_home_of(s->page);
    if (h != 1) {
        printf("%s on node %d: home is %d, expected 1\n", who, cables_node_id(), h);
        bad++;
    }
    for (int i = 0; i < SLOT; i++)
        if (s->page[i] != pat(i) && bad++ < 3)
            printf("%s on node %d: word %d = %#llx\n", who, cables_node_id(), i,
                   (unsigned long long)s->page[i]);
    fflush(stdout);
    return bad;
}

static void *work(void *arg)
{
    struct targ *a = arg;
    struct shared *s = a->s;
    long bad = check(s, "thread");
    cables_lock(&s->lk);
    if (s->page[SLOT] != 777) bad++;
    s->page[SLOT + 1 + a->idx] = 1000 + (uint64_t)cables_node_id();
    cables_unlock(&s->lk);
    s->bad[a->idx] = bad;
    return NULL;
}

int main(void)
{
    int nn = cables_node_count();
    if (nn < 2) {
        printf("RESULT ok=1 skipped=1 (needs 2 nodes)\n");
        return 0;
    }
    struct shared *s = cables_alloc(sizeof *s);
    struct targ *a = cables_alloc(2 * sizeof *a);
    s->page = cables_alloc(cables_page_size());
    for (int i = 0; i < SLOT; i++)
        s->page[i] = pat(i);
    int before = cables_home_of(s->page);
    int rc = cables_home_move(s->page, cables_page_size(), 1);
    long bad = check(s, "main");
    cables_lock(&s->lk);
    s->page[SLOT] = 777;
    cables_unlock(&s->lk);
    int nodes[2] = { 1, nn > 2 ? nn - 1 : 0 };
    cables_thread_t t[2];
    for (int i = 0; i < 2; i++) {
        a[i] = (struct targ){ s, i };
        cables_thread_create(&t[i], nodes[i], work, &a[i]);
    }
    for (int i = 0; i < 2; i++) {
        cables_thread_join(t[i], NULL);
        bad += s->bad[i];
    }
    cables_lock(&s->lk);
    bad += check(s, "main after join");
    for (int i = 0; i < 2; i++)
        if (s->page[SLOT + 1 + i] != 1000 + (uint64_t)nodes[i]) {
            printf("write of the thread on node %d lost: %llu\n", nodes[i],
                   (unsigned long long)s->page[SLOT + 1 + i]);
            bad++;
        }
    if (s->page[SLOT] != 777) bad++;
    cables_unlock(&s->lk);
    int after = cables_home_of(s->page);
    int ok = rc == 0 && before == 0 && after == 1 && bad == 0;
    printf("RESULT ok=%d move_rc=%d home_before=%d home_after=%d bad=%ld\n", ok, rc, before,
           after, bad);
    return ok ? 0 : 1;
}
