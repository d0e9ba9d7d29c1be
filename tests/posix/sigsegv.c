/* sigsegv: a program's own SIGSEGV handler and blocked signals.
 *
 * Main installs a SIGSEGV handler (sa_mask full, as crash handlers do) and
 * blocks every signal before it creates its workers, which inherit the
 * mask (a program that leaves signals to one thread does this).  The
 * workers then share an array across the nodes: each writes its slice,
 * reads all of them, writes its neighbour's, and reads them all again
 * inside a SIGUSR1 handler whose sa_mask is full; then once more inside
 * that handler run during a ppoll whose mask blocks every other signal.  None of that may reach
 * the program's handler.  A real fault (a store to address 64) in a
 * worker, with SIGSEGV unblocked, runs the program's handler there, which
 * jumps back (twice); a handler a worker installs later runs for main's
 * fault; sigaction and signal report the program's handlers; a SIGSEGV
 * that main raises is ignored under SIG_IGN, handled, and kept pending
 * while blocked.  The fault signals start with their default dispositions.
 * With the argument "crash", a thread's store to address 64 ends the
 * process (killed by SIGSEGV; the multi-node test checks how).
 *
 * Before, on libcables: main's sigaction replaced the runtime's fault
 * handler, so the first access to a shared page not mapped yet went to the
 * program's handler; and a thread with SIGSEGV blocked died of the first
 * such access (the kernel's default action for a blocked fault).
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>

#include "check.h"

#define WORKERS 3
#define SLICE (64 * 1024) /* ints: 64 pages a slice */

static int *data;
static pthread_barrier_t bar;
/* each thread's own slot (atomics are not shared across nodes: plain
 * words, published by the joins) */
static int handled[WORKERS + 1], handled2;
static void *fault_addr[WORKERS + 1];
static __thread int slot = WORKERS; /* main's */
static __thread sigjmp_buf probe_jb;
static __thread volatile sig_atomic_t in_probe;
static volatile int *volatile probe_addr = (volatile int *)(uintptr_t)64;

static void stray(const char *who)
{
    /* a fault the program did not make: say so and end (never loop) */
    char msg[96];
    int n = snprintf(msg, sizeof msg, "sigsegv: %s got a fault it did not make\n", who);
    if (write(2, msg, (size_t)n) < 0) {}
    _exit(3);
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    if (!in_probe)
        stray("the program's handler");
    fault_addr[slot] = si->si_addr;
    handled[slot]++;
    siglongjmp(probe_jb, 1);
}

static void on_segv2(int sig)
{
    (void)sig;
    if (!in_probe)
        stray("the second handler");
    handled2++;
    siglongjmp(probe_jb, 1);
}

/* act() under sigsetjmp: 1 if a SIGSEGV handler jumped back */
static int jumps(void (*act)(void))
{
    if (sigsetjmp(probe_jb, 1) == 0) {
        in_probe = 1;
        act();
        in_probe = 0;
        return 0;
    }
    in_probe = 0;
    return 1;
}

static void store_64(void) { *probe_addr = 1; }
static void raise_segv(void) { raise(SIGSEGV); }
static void unblock_segv(void)
{
    sigset_t segv;
    sigemptyset(&segv);
    sigaddset(&segv, SIGSEGV);
    sigprocmask(SIG_UNBLOCK, &segv, NULL);
}

/* a store to address 64: 1 if a handler jumped back */
static int probe(void) { return jumps(store_64); }

static long value(long i, int round) { return (i * 7 + round * 13) % 1000; }

static long sum_all(void)
{
    long s = 0;
    for (long i = 0; i < (long)WORKERS * SLICE; i++)
        s += data[i];
    return s;
}

static __thread long usr1_sum;
static void on_usr1(int sig)
{
    (void)sig;
    usr1_sum = sum_all(); /* faults with every signal blocked */
}

static void *worker(void *arg)
{
    long w = (long)arg;
    slot = (int)w;
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    CHECK("inherits_blocked", sigismember(&cur, SIGSEGV) && sigismember(&cur, SIGUSR1));
    long want1 = 0, want2 = 0;
    for (long i = 0; i < (long)WORKERS * SLICE; i++)
        want1 += value(i, 1), want2 += value(i, 2);
    for (long i = w * SLICE; i < (w + 1) * SLICE; i++)
        data[i] = (int)value(i, 1);
    pthread_barrier_wait(&bar);
    CHECK_EQ("sum_own_slices", sum_all(), want1);
    pthread_barrier_wait(&bar);
    long next = (w + 1) % WORKERS;
    for (long i = next * SLICE; i < (next + 1) * SLICE; i++)
        data[i] = (int)value(i, 2);
    pthread_barrier_wait(&bar);
    /* SIGUSR1's handler reads them all with every signal blocked */
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    CHECK_EQ("raise_usr1", pthread_kill(pthread_self(), SIGUSR1), 0);
    CHECK_EQ("unblock_usr1", pthread_sigmask(SIG_UNBLOCK, &usr1, NULL), 0);
    CHECK_EQ("sum_in_handler", usr1_sum, want2);
    pthread_barrier_wait(&bar);
    long far = (w + 2) % WORKERS, want4 = 0;
    for (long i = far * SLICE; i < (far + 1) * SLICE; i++)
        data[i] = (int)value(i, 4);
    for (long i = 0; i < (long)WORKERS * SLICE; i++)
        want4 += value(i, 4);
    pthread_barrier_wait(&bar);
    /* and again while ppoll's mask blocks every other signal */
    CHECK_EQ("block_usr1", pthread_sigmask(SIG_BLOCK, &usr1, NULL), 0);
    CHECK_EQ("raise_usr1_again", pthread_kill(pthread_self(), SIGUSR1), 0);
    sigset_t pm;
    sigfillset(&pm);
    sigdelset(&pm, SIGUSR1);
    struct timespec ts = { 5, 0 };
    errno = 0;
    CHECK_EQ("ppoll_interrupted", ppoll(NULL, 0, &ts, &pm), -1);
    CHECK_ERR("ppoll_eintr", errno, EINTR);
    CHECK_EQ("sum_in_ppoll_handler", usr1_sum, want4);
    /* a real fault, SIGSEGV unblocked: the program's handler, here */
    sigset_t segv;
    sigemptyset(&segv);
    sigaddset(&segv, SIGSEGV);
    CHECK_EQ("unblock_segv", pthread_sigmask(SIG_UNBLOCK, &segv, NULL), 0);
    CHECK_EQ("probe_handled", probe(), 1);
    /* the jump left the handler: SIGSEGV is unblocked, and handled again */
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    CHECK("unblocked_after_jump", !sigismember(&cur, SIGSEGV));
    CHECK_EQ("probe_again", probe(), 1);
    return NULL;
}

static void *installer(void *arg)
{
    (void)arg;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv2;
    sigfillset(&sa.sa_mask);
    CHECK_EQ("worker_sigaction", sigaction(SIGSEGV, &sa, NULL), 0);
    return NULL;
}

/* "crash": a thread's store to address 64 under the default disposition */
static void *crash(void *arg)
{
    static volatile uintptr_t bad = 64;
    (void)arg;
    *(volatile int *)bad = 1;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "crash")) {
        pthread_t c;
        pthread_create(&c, NULL, crash, NULL);
        pthread_join(c, NULL);
        printf("RESULT ok=0 the fault did not end the process\n");
        return 1;
    }
    check_start();
    struct sigaction sa, old;
#if !defined(__SANITIZE_ADDRESS__) && !CHECK_TSAN /* (their handlers) */
    /* the fault signals' dispositions at the start: the defaults (before,
     * UCX's backtrace handlers) */
    static const int faults[] = { SIGILL, SIGSEGV, SIGBUS, SIGFPE };
    for (int i = 0; i < 4; i++)
        CHECK("start_dfl", sigaction(faults[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL);
#endif
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigfillset(&sa.sa_mask);
    CHECK_EQ("sigaction", sigaction(SIGSEGV, &sa, NULL), 0);
    memset(&old, 0, sizeof old);
    CHECK_EQ("sigaction_query", sigaction(SIGSEGV, NULL, &old), 0);
    CHECK("query_is_handler", old.sa_sigaction == on_segv && (old.sa_flags & SA_SIGINFO));
    struct sigaction su;
    memset(&su, 0, sizeof su);
    su.sa_handler = on_usr1;
    sigfillset(&su.sa_mask);
    CHECK_EQ("sigaction_usr1", sigaction(SIGUSR1, &su, NULL), 0);

    sigset_t all;
    sigfillset(&all);
    sigdelset(&all, SIGALRM); /* check_start's watchdog */
    CHECK_EQ("block_all", sigprocmask(SIG_BLOCK, &all, NULL), 0);
    data = malloc((size_t)WORKERS * SLICE * sizeof *data); /* a big block: homed by first touch */
    CHECK("malloc", data != NULL);
    pthread_barrier_init(&bar, NULL, WORKERS);
    pthread_t t[WORKERS];
    for (long w = 0; w < WORKERS; w++)
        CHECK_EQ("create", pthread_create(&t[w], NULL, worker, (void *)w), 0);
    for (int w = 0; w < WORKERS; w++)
        CHECK_EQ("join", pthread_join(t[w], NULL), 0);
    for (int w = 0; w < WORKERS; w++) {
        CHECK_EQ("probes_handled", handled[w], 2);
        CHECK_PTR("fault_addr", fault_addr[w], (void *)probe_addr);
    }
    long want4 = 0;
    for (long i = 0; i < (long)WORKERS * SLICE; i++)
        want4 += value(i, 4);
    CHECK_EQ("main_sum", sum_all(), want4);

    /* a handler a worker installs is the process's */
    pthread_t ti;
    CHECK_EQ("create_installer", pthread_create(&ti, NULL, installer, NULL), 0);
    CHECK_EQ("join_installer", pthread_join(ti, NULL), 0);
    sigset_t segv;
    sigemptyset(&segv);
    sigaddset(&segv, SIGSEGV);
    CHECK_EQ("main_unblock_segv", sigprocmask(SIG_UNBLOCK, &segv, NULL), 0);
    CHECK_EQ("main_probe", probe(), 1);
    CHECK_EQ("second_handler_ran", handled2, 1);
    CHECK_EQ("first_handler_not_again", handled[WORKERS], 0);
    CHECK("signal_returns_second", signal(SIGSEGV, SIG_DFL) == on_segv2);
    memset(&old, 0, sizeof old);
    CHECK_EQ("sigaction_query_dfl", sigaction(SIGSEGV, NULL, &old), 0);
    CHECK("query_is_dfl", old.sa_handler == SIG_DFL);
    /* a SIGSEGV sent, not a fault: ignored, handled, kept pending while
     * blocked */
    CHECK("set_ign", signal(SIGSEGV, SIG_IGN) == SIG_DFL);
    CHECK_EQ("raise_ignored", raise(SIGSEGV), 0);
    CHECK("set_second", signal(SIGSEGV, on_segv2) == SIG_IGN);
    CHECK_EQ("raise_handled", jumps(raise_segv), 1);
    CHECK_EQ("block_segv", sigprocmask(SIG_BLOCK, &segv, NULL), 0);
    CHECK_EQ("raise_blocked", raise(SIGSEGV), 0);
    CHECK_EQ("not_yet", handled2, 2);
    CHECK_EQ("pending_handled_at_unblock", jumps(unblock_segv), 1);
    CHECK_EQ("second_handler_count", handled2, 3);
    CHECK("set_dfl_again", signal(SIGSEGV, SIG_DFL) == on_segv2);
    /* still shared memory that works after all that */
    for (long i = 0; i < (long)WORKERS * SLICE; i++)
        data[i] = (int)value(i, 3);
    long want3 = 0;
    for (long i = 0; i < (long)WORKERS * SLICE; i++)
        want3 += value(i, 3);
    CHECK_EQ("main_sum3", sum_all(), want3);
    free(data);
    return check_finish();
}
