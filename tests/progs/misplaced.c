/* misplaced: the "misplaced pages" statistic (pages whose home is not the
 * node writing them most).
 *   misplaced remote: main (node 0) first-touches 2*H pages, so node 0 is
 *     their home; then, over R rounds separated by barriers, a thread on
 *     node 1 writes the first H pages every round and the last H in round 1
 *     only, while main writes the last H every round.  Node 0 must count
 *     the first H as misplaced (node 1 wrote them in R intervals, node 0 in
 *     at most 1), not the last H.  Needs 2 nodes or more.
 *   misplaced own: a thread on each node first-touches its own H pages and
 *     writes them every round; main reads them all at the end.  Nothing is
 *     misplaced.
 * RESULT ok=1 mode=M misplaced=N want=W pages=P bad=B  (misplaced: node 0's) */
#include <cables.h>
#include <stdio.h>
#include <string.h>

#define H 8
#define BLOCK 64 /* own mode: pages between two nodes' pages, whole page groups
                    (CABLES_PAGE_GROUP, at most 64): a first touch homes a group */
#define R 10

struct shared {
    cables_barrier_t b;
    long *data; /* remote: 2*H pages; own: H pages per node */
    int nn, remote;
};
struct arg { struct shared *s; int i; };

static void *writer(void *p)
{
    struct arg *a = p;
    struct shared *s = a->s;
    size_t words = cables_page_size() / sizeof(long);
    long *mine = s->data + (size_t)a->i * BLOCK * words;
    for (long r = 1; r <= R; r++) {
        if (s->remote) {
            for (int k = 0; k < H; k++)
                s->data[k * words] = r;
            if (r == 1)
                for (int k = H; k < 2 * H; k++)
                    s->data[k * words + 1] = r;
        } else {
            for (size_t k = 0; k < H * words; k += 64)
                mine[k] = r + a->i;
        }
        cables_barrier_wait(&s->b);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int remote = argc > 1 && strcmp(argv[1], "remote") == 0;
    int nn = cables_node_count();
    size_t ps = cables_page_size(), words = ps / sizeof(long);
    if (remote && nn < 2) {
        fprintf(stderr, "misplaced remote: needs 2 nodes or more\n");
        return 2;
    }
    struct shared *s = cables_alloc(sizeof *s);
    s->nn = nn;
    s->remote = remote;
    int nthr = remote ? 1 : nn;
    struct arg *args = cables_alloc((size_t)nthr * sizeof *args);
    cables_barrier_init(&s->b, (unsigned)nthr + (remote ? 1 : 0));
    s->data = cables_alloc(remote ? 2 * H * ps : (size_t)nn * BLOCK * ps);
    if (remote)
        memset(s->data, 0, 2 * H * ps); /* first touch: homed on node 0 */
    cables_thread_t t[64];
    for (int i = 0; i < nthr; i++) {
        args[i] = (struct arg){ s, i };
        if (cables_thread_create(&t[i], remote ? 1 : i, writer, &args[i]))
            return 2;
    }
    if (remote)
        for (long r = 1; r <= R; r++) {
            for (int k = H; k < 2 * H; k++)
                s->data[k * words + 2] = r;
            cables_barrier_wait(&s->b);
        }
    for (int i = 0; i < nthr; i++)
        cables_thread_join(t[i], NULL);
    long bad = 0;
    if (remote) {
        for (int k = 0; k < H; k++)
            bad += s->data[k * words] != R;
        for (int k = H; k < 2 * H; k++)
            bad += s->data[k * words + 1] != 1 || s->data[k * words + 2] != R;
    } else {
        for (int i = 0; i < nn; i++)
            for (size_t k = 0; k < H * words; k += 64)
                bad += s->data[(size_t)i * BLOCK * words + k] != R + i;
    }
    cables_stats_t st;
    cables_stats_get(&st);
    int want = remote ? H : 0;
    int ok = bad == 0 && st.misplaced_pages == (uint64_t)want;
    printf("RESULT ok=%d mode=%s misplaced=%llu want=%d pages=%d bad=%ld\n", ok,
           remote ? "remote" : "own", (unsigned long long)st.misplaced_pages, want,
           remote ? 2 * H : nn * H, bad);
    return ok ? 0 : 1;
}
