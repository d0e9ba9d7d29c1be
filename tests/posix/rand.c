/* rand: libc's random number generators are the process's.  Main seeds
 * them (srand, srand48); three threads (on as many nodes as there are)
 * draw at once: no two get the same numbers.  Main seeds again, a thread
 * draws, main seeds the same again, another thread draws: both get the
 * same numbers, whichever node they run on.  And main's own first draw
 * after srand(42) is glibc's (71876166); a state main sets with initstate
 * or lcong48 is the one it draws from.
 * RESULT ok=1 checks=N (check.h) */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define DRAWS 8

struct draws { int r[DRAWS]; double d[DRAWS]; };

static void *draw(void *arg)
{
    struct draws *w = arg;
    for (int k = 0; k < DRAWS; k++) {
        w->r[k] = rand();
        w->d[k] = drand48();
    }
    return NULL;
}

static void seed(void)
{
    srand(42);
    srand48(42);
}

static void run(struct draws *w, int n)
{
    pthread_t t[3];
    for (int i = 0; i < n; i++)
        CHECK_EQ("create", pthread_create(&t[i], NULL, draw, &w[i]), 0);
    for (int i = 0; i < n; i++)
        CHECK_EQ("join", pthread_join(t[i], NULL), 0);
}

int main(void)
{
    check_start();
    /* a state the program sets itself is the one drawn from */
    static char st1[128], st2[128];
    initstate(7, st1, sizeof st1);
    long a = random();
    initstate(7, st2, sizeof st2);
    CHECK_EQ("initstate_kept", random(), a);
    unsigned short p[7] = { 1, 2, 3, 5, 7, 11, 13 };
    lcong48(p);
    long b = lrand48();
    lcong48(p);
    CHECK_EQ("lcong48_kept", lrand48(), b);
    struct draws w[3], x, y;
    seed();
    run(w, 3);
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++) {
            CHECK("threads_rand_differ", memcmp(w[i].r, w[j].r, sizeof w[i].r) != 0);
            CHECK("threads_drand48_differ", memcmp(w[i].d, w[j].d, sizeof w[i].d) != 0);
        }
    seed();
    run(&x, 1);
    seed();
    run(&y, 1);
    CHECK("reseeded_rand_same", memcmp(x.r, y.r, sizeof x.r) == 0);
    CHECK("reseeded_drand48_same", memcmp(x.d, y.d, sizeof x.d) == 0);
    srand(42);
    CHECK_EQ("main_first_rand", rand(), 71876166);
    return check_finish();
}
