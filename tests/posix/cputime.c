/* cputime: the process's CPU time is all of its threads'.  N threads
 * (argument 1, 4 by default) each burn 200 ms of their own CPU time
 * (CLOCK_THREAD_CPUTIME_ID, RUSAGE_THREAD); then main's clock(),
 * clock_gettime(CLOCK_PROCESS_CPUTIME_ID), the clock clock_getcpuclockid
 * gives for the process, times() and getrusage(RUSAGE_SELF) must each have
 * grown by at least 90% of the threads' sum.  Then a new thread (on
 * libcables: on another node), then main, read clock() every 50 ms for
 * argument 2's ms (0 by default: once): it never goes back and never falls
 * below that (on libcables the nodes attached for the threads may leave
 * meanwhile), and the reader's clock of main's clock_getcpuclockid neither.  Before, on 4 nodes main saw only its node's
 * share.  The first thread also reads its clock, its use and times() into
 * globals nothing touched before.  "CPUTIME threads_ms=T" (the sum), then RESULT ok=1 checks=N (check.h). */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/times.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define BURN_NS 200000000LL
#define MAX_THREADS 16

static long long burnt[MAX_THREADS]; /* each thread's own CPU time, ns */

/* results stored into globals no thread touched before (on libcables:
 * shared pages not present yet, where the kernel cannot store) */
static struct {
    char pad[8192];
    struct timespec ts;
    char pad2[8192];
    struct rusage ru;
    char pad3[8192];
    struct tms tm;
} untouched;

static long long ts_ns(struct timespec t) { return t.tv_sec * 1000000000LL + t.tv_nsec; }
static long long tv_ns(struct timeval t) { return t.tv_sec * 1000000000LL + t.tv_usec * 1000LL; }

static long long clock_ns(clockid_t c)
{
    struct timespec t;
    CHECK_EQ("clock_gettime", clock_gettime(c, &t), 0);
    return ts_ns(t);
}

static long long rusage_ns(int who)
{
    struct rusage r;
    CHECK_EQ("getrusage", getrusage(who, &r), 0);
    return tv_ns(r.ru_utime) + tv_ns(r.ru_stime);
}

static long long times_ns(void)
{
    struct tms t;
    CHECK("times", times(&t) != (clock_t)-1);
    return (long long)(t.tms_utime + t.tms_stime) * (1000000000LL / sysconf(_SC_CLK_TCK));
}

static void *burn(void *arg)
{
    long i = (long)arg;
    long long t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), r0 = rusage_ns(RUSAGE_THREAD);
    if (i == 0) {
        CHECK_EQ("clock_gettime_global", clock_gettime(CLOCK_THREAD_CPUTIME_ID, &untouched.ts), 0);
        CHECK_EQ("getrusage_global", getrusage(RUSAGE_THREAD, &untouched.ru), 0);
        CHECK("times_global", times(&untouched.tm) != (clock_t)-1);
    }
    volatile double x = 1.0;
    while (clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0 < BURN_NS)
        for (int k = 0; k < 100000; k++)
            x = x * 1.0000001 + 1e-9;
    burnt[i] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
    /* the thread's own by the other measure too (tick-grained: 20 ms slack) */
    CHECK_GE("rusage_thread_ms", (rusage_ns(RUSAGE_THREAD) - r0) / 1000000, BURN_NS / 1000000 - 20);
    return NULL;
}

static long long want; /* 90% of the threads' sum, ns */

/* clock() every 50 ms for ms: never below c0 + want, never going back
 * from last; and the clock of clock_getcpuclockid made by main */
struct poll { long long c0, last; long ms; clockid_t pc; long long q0; };
static void *reader(void *arg)
{
    struct poll *p = arg;
    CHECK_GE("reader_getcpuclockid_ms", (clock_ns(p->pc) - p->q0) / 1000000, want / 1000000);
    for (long waited = 0; waited <= p->ms; waited += 50) {
        long long c = (long long)clock() * (1000000000LL / CLOCKS_PER_SEC);
        CHECK_GE("clock_monotonic", c, p->last);
        CHECK_GE("clock_poll_ms", (c - p->c0) / 1000000, want / 1000000);
        p->last = c;
        if (waited < p->ms)
            usleep(50000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    check_start();
    int n = argc > 1 ? atoi(argv[1]) : 4;
    long poll_ms = argc > 2 ? atol(argv[2]) : 0;
    if (n < 1 || n > MAX_THREADS || poll_ms < 0 || poll_ms > 30000) {
        fprintf(stderr, "usage: cputime [threads 1-%d] [poll ms 0-30000]\n", MAX_THREADS);
        return 2;
    }
    clockid_t pc;
    CHECK_EQ("clock_getcpuclockid", clock_getcpuclockid(getpid(), &pc), 0);
    long long c0 = (long long)clock() * (1000000000LL / CLOCKS_PER_SEC);
    long long p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), q0 = clock_ns(pc);
    long long r0 = rusage_ns(RUSAGE_SELF), t0 = times_ns();

    pthread_t t[MAX_THREADS];
    for (long i = 0; i < n; i++)
        CHECK_EQ("create", pthread_create(&t[i], NULL, burn, (void *)i), 0);
    for (int i = 0; i < n; i++)
        CHECK_EQ("join", pthread_join(t[i], NULL), 0);
    long long sum = 0;
    for (int i = 0; i < n; i++)
        sum += burnt[i];
    long long tick = 1000000000LL / sysconf(_SC_CLK_TCK);

    want = sum / 10 * 9;
    long long c1 = (long long)clock() * (1000000000LL / CLOCKS_PER_SEC);
    CHECK_GE("clock_ms", (c1 - c0) / 1000000, want / 1000000);
    CHECK_GE("process_cputime_ms", (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - p0) / 1000000, want / 1000000);
    CHECK_GE("getcpuclockid_ms", (clock_ns(pc) - q0) / 1000000, want / 1000000);
    CHECK_GE("rusage_self_ms", (rusage_ns(RUSAGE_SELF) - r0) / 1000000, want / 1000000);
    CHECK_GE("times_ms", (times_ns() - t0 + 2 * tick) / 1000000, want / 1000000);

    /* a thread started now (on libcables: on another node) sees the same,
     * and so does main while the attached nodes may leave */
    pthread_t r;
    struct poll rp = { c0, c1, poll_ms, pc, q0 };
    CHECK_EQ("create_reader", pthread_create(&r, NULL, reader, &rp), 0);
    CHECK_EQ("join_reader", pthread_join(r, NULL), 0);
    struct poll mp = { c0, c1, poll_ms, pc, q0 };
    reader(&mp);
    printf("CPUTIME threads_ms=%lld\n", sum / 1000000);
    return check_finish();
}
