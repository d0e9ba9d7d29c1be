/* table4.c: the CableS paper's Table 4 operations, as a plain pthreads
 * program (no cables header), for bench/run.sh.
 *
 * Built twice by the Makefile: natively (build/native/bench/pthreads/table4)
 * and relinked with cables-cc (build/bench/pthreads/table4), run as
 *
 *   CABLES_THREADS_PER_NODE=1 cables-run -n 1 -m 2 -- table4
 *
 * so that the first pthread_create finds node 0 full (main) and attaches
 * node 1 on demand.  Sequence:
 *   1. T1 = first thread (node attach + remote create), stays alive;
 *   2. create+join of short threads (least loaded node: node 0, local);
 *   3. main and T1: mutex first lock (a never-used mutex each), lock again
 *      on the same node, lock with the token on the other node (main and
 *      T1 alternate, a barrier between turns, not timed), unlock;
 *      condition variables: T1 waits on the other node, main signals (or
 *      broadcasts): the call, and the time until T1 returns from its wait
 *      (mutex reacquired; one host, so CLOCK_MONOTONIC is common); a
 *      ping-pong through a shared flag (one way = round trip / 2, the
 *      flag's page moving included); a 2-thread barrier, per round;
 *   4. T2 = second long-lived thread (node 0), then create+join of short
 *      threads (now node 1: remote).
 * Every created thread reports cables_node_id(); creates are classed local
 * or remote by the node observed, and an empty class is an ERROR.  Natively
 * cables_node_id is NULL (weak): everything is node 0 and the figures are
 * the same operations on glibc's pthreads (no classification).
 *
 * Output: "KEY value" lines (microseconds, medians), NODE lines, then
 * "DONE <errors>"; exit status 1 on errors. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench_util.h"

extern int cables_node_id(void) __attribute__((weak));

#define NCREATE 30      /* creates per phase */
#define NFIRST 30       /* fresh mutexes per node */
#define NAGAIN 2000     /* local re-locks */
#define NREMOTE 100     /* remote token transfers per side */
#define NPING 300       /* cond ping-pong round trips */
#define NWAKE 100       /* signal wake-ups, and broadcast wake-ups */
#define NBAR 400        /* barrier rounds */
#define BAR_BATCH 20

static int errors;
static int native;

static int node(void) { return cables_node_id ? cables_node_id() : 0; }

/* shared between main and T1 */
static pthread_barrier_t step;               /* turns; its cost is not measured */
static pthread_barrier_t bar2;               /* the measured barrier */
static pthread_mutex_t first_main[NFIRST];   /* never used before main's lock */
static pthread_mutex_t first_t1[NFIRST];     /* never used before T1's lock */
static pthread_mutex_t alt = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ccv = PTHREAD_COND_INITIALIZER;
static volatile int turn __attribute__((aligned(4096))); /* a page of its own */
static pthread_mutex_t bm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bcv = PTHREAD_COND_INITIALIZER;
static volatile int bgen __attribute__((aligned(4096)));
static pthread_mutex_t hold_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static volatile int hold_release;

/* T1's results, copied out of its stack before a barrier */
static double t1_first[NFIRST], t1_alt[NREMOTE], t1_unlock_alt[NREMOTE], t1_wake[2 * NWAKE];
static int t1_node;

static void barrier(pthread_barrier_t *b)
{
    int rc = pthread_barrier_wait(b);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) {
        printf("ERROR barrier_wait %d\n", rc);
        errors++;
    }
}

static void *nop(void *a)
{
    (void)a;
    return (void *)(long)node();
}

/* T1: the partner on node 1 */
static void *t1_main(void *a)
{
    (void)a;
    double v[2 * NWAKE + NREMOTE + NFIRST];
    double u[NREMOTE];
    t1_node = node();
    barrier(&step); /* started */
    barrier(&step); /* A: main's local creates and first locks are done */
    /* first lock of fresh mutexes, here (node 1); their page read first */
    for (int i = 0; i < NFIRST; i++)
        (void)*(volatile char *)&first_t1[i];
    for (int i = 0; i < NFIRST; i++) {
        double t0 = now_us();
        pthread_mutex_lock(&first_t1[i]);
        v[i] = now_us() - t0;
        pthread_mutex_unlock(&first_t1[i]);
    }
    memcpy(t1_first, v, sizeof t1_first);
    barrier(&step); /* B */
    /* the token of `alt` alternates between main and T1 */
    for (int i = 0; i < NREMOTE; i++) {
        barrier(&step); /* main's turn */
        barrier(&step); /* ours */
        double t0 = now_us();
        pthread_mutex_lock(&alt);
        double t1 = now_us();
        pthread_mutex_unlock(&alt);
        v[i] = t1 - t0;
        u[i] = now_us() - t1;
    }
    memcpy(t1_alt, v, sizeof t1_alt);
    memcpy(t1_unlock_alt, u, sizeof t1_unlock_alt);
    barrier(&step); /* C */
    /* condition variable ping-pong: main sets turn 1, we answer with 0 */
    pthread_mutex_lock(&cm);
    for (int i = 0; i < NPING; i++) {
        while (turn != 1)
            pthread_cond_wait(&ccv, &cm);
        turn = 0;
        pthread_cond_signal(&ccv);
    }
    pthread_mutex_unlock(&cm);
    barrier(&step); /* D */
    /* wake-ups: we wait holding no predicate check before the timestamp;
     * main signals (first NWAKE rounds), then broadcasts (next NWAKE) */
    for (int i = 0; i < 2 * NWAKE; i++) {
        pthread_mutex_lock(&bm);
        int g = bgen;           /* read before the timed part */
        barrier(&step);         /* main then locks bm: only once we wait */
        double w;
        do {
            pthread_cond_wait(&bcv, &bm);
            w = now_us();
        } while (bgen == g);    /* spurious wake-ups: wait again */
        pthread_mutex_unlock(&bm);
        v[i] = w;
    }
    memcpy(t1_wake, v, sizeof t1_wake);
    barrier(&step); /* E */
    for (int i = 0; i < NBAR; i++)
        barrier(&bar2);
    barrier(&step); /* F */
    /* stay alive (node 1 stays attached) until main is done */
    pthread_mutex_lock(&hold_m);
    while (!hold_release)
        pthread_cond_wait(&hold_cv, &hold_m);
    pthread_mutex_unlock(&hold_m);
    return (void *)(long)t1_node;
}

static void *t2_main(void *a)
{
    (void)a;
    pthread_mutex_lock(&hold_m);
    while (!hold_release)
        pthread_cond_wait(&hold_cv, &hold_m);
    pthread_mutex_unlock(&hold_m);
    return (void *)(long)node();
}

/* median of n values, printed as KEY; -1 if none */
static double put(const char *key, double *v, int n)
{
    if (n <= 0) {
        printf("ERROR %s: no samples\n", key);
        errors++;
        return -1;
    }
    double m = median(v, n);
    printf("%s %.3f\n", key, m);
    return m;
}

static double loc_c[2 * NCREATE], rem_c[2 * NCREATE];
static int nloc, nrem;

/* NCREATE create+join; each create timed and classed by its thread's node */
static void creates(const char *phase)
{
    int nodes[2] = {0, 0};
    for (int i = 0; i < NCREATE; i++) {
        pthread_t t;
        void *r;
        double t0 = now_us();
        int rc = pthread_create(&t, NULL, nop, NULL);
        double dt = now_us() - t0;
        if (rc != 0) {
            printf("ERROR pthread_create %d\n", rc);
            errors++;
            continue;
        }
        pthread_join(t, &r);
        int n = (int)(long)r;
        nodes[n != 0]++;
        if (n == 0 || native)
            loc_c[nloc++] = dt;
        else
            rem_c[nrem++] = dt;
    }
    printf("NODE %s_creates on_node0=%d elsewhere=%d\n", phase, nodes[0], nodes[1]);
}

int main(void)
{
    native = cables_node_id == NULL;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("NATIVE %d\n", native);
    pthread_barrier_init(&step, NULL, 2);
    pthread_barrier_init(&bar2, NULL, 2);
    for (int i = 0; i < NFIRST; i++) {
        pthread_mutex_init(&first_main[i], NULL);
        pthread_mutex_init(&first_t1[i], NULL);
    }
    double v[NAGAIN], u[NAGAIN];

    /* 1. T1: node attach + remote create */
    pthread_t t1, t2;
    double t0 = now_us();
    int rc = pthread_create(&t1, NULL, t1_main, NULL);
    double attach = now_us() - t0;
    if (rc != 0) {
        printf("ERROR pthread_create T1 %d\n", rc);
        printf("DONE %d\n", errors + 1);
        return 1;
    }
    printf("ATTACH_CREATE_US %.3f\n", attach);
    barrier(&step); /* T1 has started: t1_node is visible after this */
    printf("NODE main %d T1 %d\n", node(), t1_node);
    if (!native && t1_node == 0) {
        printf("ERROR T1 runs on node 0: no remote partner\n");
        errors++;
    }

    /* 2. local creates (least loaded node is node 0 on a tie) */
    creates("phase1");

    /* 3. mutexes: first lock here (node 0, the lock manager) */
    for (int i = 0; i < NFIRST; i++)
        (void)*(volatile char *)&first_main[i];
    for (int i = 0; i < NFIRST; i++) {
        double a = now_us();
        pthread_mutex_lock(&first_main[i]);
        v[i] = now_us() - a;
        pthread_mutex_unlock(&first_main[i]);
    }
    put("LOCK_FIRST_LOCAL_US", v, NFIRST);
    /* lock again on the same node (token cached), and its unlock */
    pthread_mutex_lock(&first_main[0]);
    pthread_mutex_unlock(&first_main[0]);
    for (int i = 0; i < NAGAIN; i++) {
        double a = now_us();
        pthread_mutex_lock(&first_main[0]);
        double b = now_us();
        pthread_mutex_unlock(&first_main[0]);
        v[i] = b - a;
        u[i] = now_us() - b;
    }
    put("LOCK_AGAIN_LOCAL_US", v, NAGAIN);
    put("UNLOCK_US", u, NAGAIN);
    barrier(&step); /* A: now T1 takes its first locks */
    barrier(&step); /* B */
    put("LOCK_FIRST_REMOTE_US", t1_first, NFIRST);
    /* the token alternates */
    for (int i = 0; i < NREMOTE; i++) {
        barrier(&step);
        double a = now_us();
        pthread_mutex_lock(&alt);
        double b = now_us();
        pthread_mutex_unlock(&alt);
        v[i] = b - a;
        u[i] = now_us() - b;
        barrier(&step);
    }
    barrier(&step); /* C */
    /* the first acquire of each side may find no token elsewhere: drop it */
    memmove(v, v + 1, sizeof(double) * (NREMOTE - 1));
    memcpy(v + NREMOTE - 1, t1_alt + 1, sizeof(double) * (NREMOTE - 1));
    put("LOCK_AGAIN_REMOTE_US", v, 2 * (NREMOTE - 1));
    memcpy(u + NREMOTE, t1_unlock_alt, sizeof t1_unlock_alt);
    put("UNLOCK_AFTER_REMOTE_US", u, 2 * NREMOTE);
    put("LOCK_AGAIN_REMOTE_NODE1_US", t1_alt + 1, NREMOTE - 1);

    /* condition variable ping-pong */
    pthread_mutex_lock(&cm);
    for (int i = 0; i < NPING; i++) {
        double a = now_us();
        turn = 1;
        pthread_cond_signal(&ccv);
        while (turn != 0)
            pthread_cond_wait(&ccv, &cm);
        v[i] = (now_us() - a) / 2;
    }
    pthread_mutex_unlock(&cm);
    barrier(&step); /* D */
    /* one way, warm-up dropped: the wake-up plus the flag's page moving */
    put("COND_PINGPONG_US", v + NPING / 10, NPING - NPING / 10);

    /* wake-ups of T1 waiting on the other node: signal, then broadcast */
    double wstart[2 * NWAKE];
    for (int i = 0; i < 2 * NWAKE; i++) {
        barrier(&step);
        pthread_mutex_lock(&bm); /* T1 released it in pthread_cond_wait */
        bgen++;                  /* the page's write fault is not timed */
        double a = now_us();
        if (i < NWAKE)
            pthread_cond_signal(&bcv);
        else
            pthread_cond_broadcast(&bcv);
        double b = now_us();
        pthread_mutex_unlock(&bm);
        v[i] = b - a;
        wstart[i] = a;
    }
    barrier(&step); /* E */
    for (int i = 0; i < 2 * NWAKE; i++)
        u[i] = t1_wake[i] - wstart[i]; /* one host: CLOCK_MONOTONIC is common */
    put("COND_SIGNAL_US", v, NWAKE);
    put("COND_WAKE_US", u, NWAKE);
    put("COND_BCAST_US", v + NWAKE, NWAKE);
    put("COND_BCAST_WAKE_US", u + NWAKE, NWAKE);

    /* pthread barrier, 2 threads on 2 nodes */
    int nb = 0;
    for (int i = 0; i < NBAR / BAR_BATCH; i++) {
        double a = now_us();
        for (int j = 0; j < BAR_BATCH; j++)
            barrier(&bar2);
        v[nb++] = (now_us() - a) / BAR_BATCH;
    }
    barrier(&step); /* F */
    put("BARRIER2_US", v + 1, nb - 1);

    /* 4. T2 on node 0; then main's creates go to node 1 */
    rc = pthread_create(&t2, NULL, t2_main, NULL);
    if (rc != 0) {
        printf("ERROR pthread_create T2 %d\n", rc);
        errors++;
    } else {
        creates("phase2");
    }

    put("CREATE_LOCAL_US", loc_c, nloc);
    double rem = native ? put("CREATE_REMOTE_US", loc_c, nloc) : put("CREATE_REMOTE_US", rem_c, nrem);
    if (rem > 0 && !native)
        printf("NODE_ATTACH_US %.3f\n", attach - rem); /* first create minus a remote create */
    printf("NODE creates local=%d remote=%d\n", nloc, nrem);

    pthread_mutex_lock(&hold_m);
    hold_release = 1;
    pthread_cond_broadcast(&hold_cv);
    pthread_mutex_unlock(&hold_m);
    void *r1 = NULL, *r2 = NULL;
    pthread_join(t1, &r1);
    if (rc == 0)
        pthread_join(t2, &r2);
    printf("NODE T1 %ld T2 %ld\n", (long)r1, rc == 0 ? (long)r2 : -1L);
    printf("DONE %d\n", errors);
    return errors != 0;
}
