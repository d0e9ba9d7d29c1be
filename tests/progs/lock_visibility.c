/* lock_visibility: a write made under a lock on the last node is seen,
 * exactly, by readers on other nodes that poll under the same lock.
 * RESULT ok=1 value=V expected=E readers=R max_polls=P */
#include <cables.h>
#include <stdio.h>
#include <unistd.h>

struct shared { cables_lock_t lk; long flag, value; };
struct reader { struct shared *s; long seen, polls, node; };

static void *writer(void *arg)
{
    struct shared *s = arg;
    usleep(100 * 1000); /* let the readers see flag == 0 first */
    cables_lock(&s->lk);
    s->value = 12345 + cables_node_id();
    s->flag = 1;
    cables_unlock(&s->lk);
    return NULL;
}

static void *reader(void *arg)
{
    struct reader *r = arg;
    long flag = 0, value = -1, polls = 0;
    while (!flag && polls < 10000) { /* about 10 s at most */
        cables_lock(&r->s->lk);
        flag = r->s->flag;
        value = r->s->value;
        cables_unlock(&r->s->lk);
        polls++;
        if (!flag)
            usleep(1000);
    }
    r->seen = flag ? value : -1;
    r->polls = polls;
    r->node = cables_node_id();
    return NULL;
}

int main(void)
{
    int nn = cables_node_count(), wnode = nn - 1;
    struct shared *s = cables_alloc(sizeof *s);
    struct reader *rd = cables_alloc(2 * sizeof *rd);
    int nr = nn > 2 ? 2 : 1; /* readers on node 0, and on node 1 if it is not the writer */
    cables_thread_t t[3];
    for (int i = 0; i < nr; i++) {
        rd[i].s = s;
        if (cables_thread_create(&t[i], i, reader, &rd[i])) { printf("RESULT ok=0 create_failed=1\n"); return 1; }
    }
    if (cables_thread_create(&t[nr], wnode, writer, s)) { printf("RESULT ok=0 create_failed=1\n"); return 1; }
    for (int i = 0; i <= nr; i++)
        cables_thread_join(t[i], NULL);
    long expected = 12345 + wnode, maxp = 0;
    int ok = 1;
    for (int i = 0; i < nr; i++) {
        printf("reader on node %ld saw %ld after %ld polls\n", rd[i].node, rd[i].seen, rd[i].polls);
        if (rd[i].seen != expected) ok = 0;
        if (rd[i].polls > maxp) maxp = rd[i].polls;
    }
    printf("RESULT ok=%d value=%ld expected=%ld readers=%d max_polls=%ld\n", ok, rd[0].seen, expected, nr, maxp);
    return ok ? 0 : 1;
}
