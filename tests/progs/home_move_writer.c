/* home_move_writer: a thread on the last node keeps writing a counter and
 * reading back its own last write, while another thread there releases in
 * a loop and the master moves the page's home between node 0 and that node
 * 2000 times.  A release's diff still on its way to the old home when the
 * page moves must end up under the writer's newer writes, never over them:
 * the writer always reads its own last write.
 * RESULT ok=1 selfbad=B last=L final=F */
#include <cables.h>
#include <stdio.h>
#include <time.h>

#define MOVES 2000

struct shared {
    cables_lock_t l;
    long stop, bad, last;
    volatile long *p;
};

static void *writer(void *a)
{
    struct shared *s = a;
    long k = 0, bad = 0, stop = 0;
    while (!stop) {
        bad += s->p[0] != k; /* my own last write */
        s->p[0] = ++k;
        if ((k & 1023) == 0) {
            cables_lock(&s->l);
            stop = s->stop;
            cables_unlock(&s->l);
        }
    }
    s->bad = bad;
    s->last = k;
    return NULL;
}

static void *releaser(void *a)
{
    struct shared *s = a;
    long stop = 0;
    while (!stop) {
        cables_lock(&s->l);
        stop = s->stop;
        cables_unlock(&s->l);
    }
    return NULL;
}

int main(void)
{
    size_t ps = cables_page_size();
    int last = cables_node_count() - 1;
    struct shared *s = cables_alloc(sizeof *s);
    s->p = cables_alloc(ps);
    cables_thread_t w, r;
    if (cables_thread_create(&w, last, writer, s) || cables_thread_create(&r, last, releaser, s))
        return 2;
    for (int i = 0; i < MOVES; i++) {
        cables_home_move((void *)s->p, ps, last);
        cables_home_move((void *)s->p, ps, 0);
        struct timespec ts = { 0, (i % 40) * 5000 };
        nanosleep(&ts, NULL);
    }
    cables_lock(&s->l);
    s->stop = 1;
    cables_unlock(&s->l);
    cables_thread_join(w, NULL);
    cables_thread_join(r, NULL);
    cables_lock(&s->l);
    int ok = s->bad == 0 && s->p[0] == s->last;
    printf("RESULT ok=%d selfbad=%ld last=%ld final=%ld\n", ok, s->bad, s->last, s->p[0]);
    cables_unlock(&s->l);
    return ok ? 0 : 1;
}
