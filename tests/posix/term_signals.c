/* term_signals: the signals a terminal or a user sends a program (SIGINT,
 * SIGHUP, SIGQUIT, SIGTERM), sent to cables-run, reach the program once,
 * as they reach a process of its own.
 *
 * "handle": main takes SIGINT and SIGHUP with handlers (every thread lets
 * them in, so any thread on any node may run them); a worker W waits for
 * SIGQUIT and SIGTERM in sigwait, which every other thread blocks.  Main
 * prints "got NAME" as each arrives (the test sends the next one then);
 * SIGTERM ends the workers.  It also says whether SIGHUP and SIGQUIT had
 * their default disposition at the start (as the test starts it).  A
 * handler marks its own thread (thread-local), which then adds to the
 * counts under the mutex: threads on other nodes see shared data through
 * its acquire and release.
 * RESULT ok=1 int=1 hup=1 quit=1 term=1 start_hup_dfl=1 start_quit_dfl=1
 *
 * "default": no handler; main prints "ready" and the threads sleep: the
 * first signal ends the program as it ends a process (the test expects
 * cables-run killed by it, without a word).
 *
 * "terminal": a thread reads lines from stdin (a terminal) and prints
 * "read: LINE" for each, to "end"; another prints "tick N" every 50 ms
 * till then (Ctrl-Z stops them, fg continues them).
 * RESULT ok=1 lines=N */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 3

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int hits[NSIG], stop; /* (mu) */
static __thread volatile sig_atomic_t took[NSIG];

static void on_sig(int sig) { took[sig]++; }

static void count(int sig, int n)
{
    pthread_mutex_lock(&mu);
    hits[sig] += n;
    if (sig == SIGTERM)
        stop = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&mu);
}

/* what this thread's handlers took: to the counts */
static void report(void)
{
    static const int mine[] = { SIGINT, SIGHUP };
    for (int i = 0; i < 2; i++)
        if (took[mine[i]]) {
            int n = took[mine[i]];
            took[mine[i]] = 0;
            count(mine[i], n);
        }
}

static int stopped(void)
{
    pthread_mutex_lock(&mu);
    int s = stop;
    pthread_mutex_unlock(&mu);
    return s;
}

static void *waiter(void *arg)
{
    (void)arg;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGQUIT);
    sigaddset(&s, SIGTERM);
    while (!stopped()) {
        int sig = 0;
        if (sigwait(&s, &sig) == 0)
            count(sig, 1);
        report();
    }
    return NULL;
}

static void *worker(void *arg)
{
    (void)arg;
    while (!stopped()) {
        usleep(10000);
        report();
    }
    return NULL;
}

static int lines;

static void *reader(void *arg)
{
    (void)arg;
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        printf("read: %s\n", line);
        fflush(stdout);
        n++;
        if (!strcmp(line, "end"))
            break;
    }
    pthread_mutex_lock(&mu);
    lines = n;
    stop = 1;
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void *ticker(void *arg)
{
    (void)arg;
    for (int i = 0; !stopped(); i++) {
        printf("tick %d\n", i);
        fflush(stdout);
        usleep(50000);
    }
    return NULL;
}

static int dfl(int sig)
{
    struct sigaction a;
    return sigaction(sig, NULL, &a) == 0 && a.sa_handler == SIG_DFL;
}

int main(int argc, char **argv)
{
    int start_hup_dfl = dfl(SIGHUP), start_quit_dfl = dfl(SIGQUIT);
    pthread_t t[WORKERS];
    if (argc > 1 && !strcmp(argv[1], "default")) {
        for (int i = 0; i < WORKERS; i++)
            pthread_create(&t[i], NULL, worker, NULL);
        printf("ready\n");
        fflush(stdout);
        sleep(60);
        printf("RESULT ok=0 not ended by the signal\n");
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "terminal")) {
        pthread_create(&t[0], NULL, reader, NULL);
        pthread_create(&t[1], NULL, ticker, NULL);
        printf("ready\n");
        fflush(stdout);
        pthread_join(t[0], NULL);
        pthread_join(t[1], NULL);
        printf("RESULT ok=%d lines=%d\n", lines >= 2, lines);
        return lines >= 2 ? 0 : 1;
    }
    struct sigaction sa = { .sa_handler = on_sig };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigset_t w;
    sigemptyset(&w);
    sigaddset(&w, SIGQUIT);
    sigaddset(&w, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &w, NULL);
    pthread_create(&t[0], NULL, waiter, NULL);
    for (int i = 1; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    printf("ready\n");
    fflush(stdout);
    static const int sigs[] = { SIGINT, SIGHUP, SIGQUIT, SIGTERM };
    int seen[4] = { 0 }, timed_out = 0;
    struct timespec end;
    clock_gettime(CLOCK_REALTIME, &end);
    end.tv_sec += 60;
    pthread_mutex_lock(&mu);
    while (!stop && !timed_out) {
        for (int i = 0; i < 4; i++)
            if (!seen[i] && hits[sigs[i]]) {
                seen[i] = 1;
                printf("got %s\n", sigabbrev_np(sigs[i]));
                fflush(stdout);
            }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&changed, &mu, &ts);
        timed_out = ts.tv_sec > end.tv_sec;
        pthread_mutex_unlock(&mu);
        report(); /* main's own handlers' */
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    if (timed_out) { /* W still waits */
        pthread_mutex_lock(&mu);
        stop = 1;
        pthread_mutex_unlock(&mu);
        pthread_kill(t[0], SIGTERM);
    }
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    usleep(200000); /* a second delivery would come by now */
    report();
    pthread_mutex_lock(&mu);
    int ok = !timed_out && hits[SIGINT] == 1 && hits[SIGHUP] == 1 && hits[SIGQUIT] == 1 &&
             hits[SIGTERM] == 1 && start_hup_dfl && start_quit_dfl;
    printf("RESULT ok=%d int=%d hup=%d quit=%d term=%d start_hup_dfl=%d start_quit_dfl=%d\n", ok,
           hits[SIGINT], hits[SIGHUP], hits[SIGQUIT], hits[SIGTERM], start_hup_dfl, start_quit_dfl);
    pthread_mutex_unlock(&mu);
    return ok ? 0 : 1;
}
