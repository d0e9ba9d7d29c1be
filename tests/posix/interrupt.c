/* interrupt: a thread blocked in a read of main's pipe (on libcables, on
 * another node: the read is made at the master) is interrupted as a
 * process's thread is.  One thread at a time (each on a node of its own):
 *   - a handler without SA_RESTART (pthread_kill): its read returns EINTR,
 *     and the byte written after is read next, none lost;
 *   - a handler with SA_RESTART: its read goes on and returns the byte
 *     written after;
 *   - a handler with SA_RESTART on a thread in poll: EINTR all the same,
 *     as the kernel ends a poll after any handler;
 *   - pthread_cancel: the thread ends, its cleanup handler run, and its
 *     join (bounded) gives PTHREAD_CANCELED; so does a thread blocked in
 *     fgets of a stream main opened on a second pipe;
 *   - on a stream main opened on a third pipe, kept full: a handler
 *     without SA_RESTART makes the thread's fflush fail with EINTR (the
 *     stream's error set), and pthread_cancel ends a thread in fflush;
 *   - an open of a FIFO, which waits for a writer: a handler without
 *     SA_RESTART makes it EINTR, one with SA_RESTART lets it go on, and it
 *     returns when main opens the writing end (before, it was not
 *     interrupted: it waited for a writer for ever);
 *   - a storm: STORM bytes written one at a time, each after a SIGUSR2
 *     (SA_RESTART) sent to the thread reading them: each read is made
 *     again after each interruption, and every byte is read once, in
 *     order;
 *   - a pclose of a command that runs 1 s (made whole at the master, not
 *     interrupted): a handler sent 0.2 s in runs while it waits, as
 *     natively (a watchdog's handler must not wait for the call's end);
 *   - an fopen of a FIFO, as its open above: NULL and EINTR after a handler
 *     without SA_RESTART, a stream once main opens the writing end after
 *     one with SA_RESTART (before, it was made whole at the master: it
 *     waited for a writer through both handlers).
 * Before, on libcables, none of the three reads ended until data came, and
 * the cancelled thread's join waited for ever.  RESULT ok=1 checks=N
 * (check.h). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static int fds[2], sfds[2];
static FILE *stream;
static __thread volatile sig_atomic_t handled;
static struct gate g = GATE_INITIALIZER;
static int cleaned, stream_cleaned;

static __thread double handled_at;

static void on_sig(int sig)
{
    (void)sig;
    handled++;
    handled_at = check_now_ms(CLOCK_MONOTONIC);
}

static void *no_restart(void *arg)
{
    (void)arg;
    char c = 0;
    gate_set(&g, 1);
    errno = 0;
    CHECK_EQ("eintr_read", read(fds[0], &c, 1), -1);
    CHECK_ERR("eintr_errno", errno, EINTR);
    CHECK_EQ("eintr_handled", handled, 1);
    gate_set(&g, 2);
    CHECK_EQ("after_read", read(fds[0], &c, 1), 1);
    CHECK_EQ("after_byte", c, 'a');
    return NULL;
}

static void *restart(void *arg)
{
    (void)arg;
    char c = 0;
    gate_set(&g, 3);
    CHECK_EQ("restart_read", read(fds[0], &c, 1), 1);
    CHECK_EQ("restart_byte", c, 'b');
    CHECK_EQ("restart_handled", handled, 1);
    return NULL;
}

static void *polling(void *arg)
{
    (void)arg;
    struct pollfd p = { .fd = fds[0], .events = POLLIN };
    gate_set(&g, 4);
    errno = 0;
    CHECK_EQ("poll_eintr", poll(&p, 1, -1), -1);
    CHECK_ERR("poll_errno", errno, EINTR);
    CHECK_EQ("poll_handled", handled, 1);
    return NULL;
}

static void cleanup(void *arg) { *(int *)arg = 1; }

static void *cancelled(void *arg)
{
    (void)arg;
    char c;
    pthread_cleanup_push(cleanup, &cleaned);
    gate_set(&g, 5);
    if (read(fds[0], &c, 1) == 1)
        CHECK("cancel_read_ended", 0);
    pthread_cleanup_pop(0);
    return NULL;
}

static void *cancelled_fgets(void *arg)
{
    (void)arg;
    char line[64];
    pthread_cleanup_push(cleanup, &stream_cleaned);
    gate_set(&g, 6);
    if (fgets(line, sizeof line, stream))
        CHECK("cancel_fgets_ended", 0);
    pthread_cleanup_pop(0);
    return NULL;
}

static FILE *wstream;
static int wstream_cleaned;

static void *interrupted_fflush(void *arg)
{
    (void)arg;
    CHECK_EQ("fputs", fputs("x", wstream), 1);
    gate_set(&g, 7);
    errno = 0;
    CHECK_EQ("fflush_eintr", fflush(wstream), EOF);
    CHECK_ERR("fflush_errno", errno, EINTR);
    CHECK("fflush_ferror", ferror(wstream));
    CHECK_EQ("fflush_handled", handled, 1);
    return NULL;
}

static void *cancelled_fflush(void *arg)
{
    (void)arg;
    pthread_cleanup_push(cleanup, &wstream_cleaned);
    clearerr(wstream);
    CHECK_EQ("fputs_cancel", fputs("y", wstream), 1);
    gate_set(&g, 8);
    if (fflush(wstream) == 0)
        CHECK("cancel_fflush_ended", 0);
    pthread_cleanup_pop(0);
    return NULL;
}

static char fifo[64];

static void *fifo_eintr(void *arg)
{
    (void)arg;
    gate_set(&g, 9);
    errno = 0;
    CHECK_EQ("fifo_eintr", open(fifo, O_RDONLY), -1);
    CHECK_ERR("fifo_errno", errno, EINTR);
    CHECK_EQ("fifo_handled", handled, 1);
    return NULL;
}

static void *fifo_restart(void *arg)
{
    (void)arg;
    gate_set(&g, 10);
    int fd = open(fifo, O_RDONLY);
    CHECK_GE("fifo_restart_open", fd, 0);
    CHECK_EQ("fifo_restart_handled", handled, 1);
    char c = 0;
    CHECK_EQ("fifo_read", read(fd, &c, 1), 1);
    CHECK_EQ("fifo_byte", c, 'f');
    close(fd);
    return NULL;
}

/* the FIFO phases of open() again, through fopen (gates 13 and 14) */
static void *fopen_eintr(void *arg)
{
    (void)arg;
    gate_set(&g, 13);
    errno = 0;
    FILE *f = fopen(fifo, "r");
    CHECK("fopen_eintr", f == NULL);
    CHECK_ERR("fopen_errno", errno, EINTR);
    CHECK_EQ("fopen_handled", handled, 1);
    if (f)
        fclose(f);
    return NULL;
}

static void *fopen_restart(void *arg)
{
    (void)arg;
    gate_set(&g, 14);
    FILE *f = fopen(fifo, "r");
    CHECK("fopen_restart_open", f != NULL);
    CHECK_EQ("fopen_restart_handled", handled, 1);
    if (f) {
        CHECK_EQ("fopen_read", fgetc(f), 'f');
        fclose(f);
    }
    return NULL;
}

enum { STORM = 1000 };
static int storm_fds[2];

static void *storm_reader(void *arg)
{
    (void)arg;
    gate_set(&g, 11);
    int next = 0, bad = 0;
    for (unsigned char c; next < STORM; next++) {
        if (read(storm_fds[0], &c, 1) != 1)
            break;
        bad += c != (unsigned char)next;
    }
    CHECK_EQ("storm_read", next, STORM);
    CHECK_EQ("storm_order", bad, 0);
    CHECK_GT("storm_handled", handled, 0);
    return NULL;
}

static void *watched_pclose(void *arg)
{
    (void)arg;
    FILE *p = popen("sleep 1", "r");
    CHECK("popen", p != NULL);
    double start = check_now_ms(CLOCK_MONOTONIC);
    gate_set(&g, 12);
    CHECK_EQ("pclose", p ? pclose(p) : -1, 0);
    double end = check_now_ms(CLOCK_MONOTONIC);
    CHECK_EQ("pclose_handled", handled, 1);
    /* (ran well before the call ended: not after it) */
    CHECK("pclose_handled_meanwhile", handled && handled_at < end - 300 && handled_at >= start);
    return NULL;
}

static int joined(pthread_t t, void **ret)
{
    struct timespec ts = check_deadline(CLOCK_REALTIME, WAIT_MS);
    return pthread_timedjoin_np(t, ret, &ts);
}

/* main's side of one FIFO phase: the reader thread, started by create
 * (its gate at stage), gets signal sig while it waits in its open; with
 * a writer (SA_RESTART), main then opens the writing end and writes 'f' */
static void fifo_phase(void *(*body)(void *), int stage, int sig, int writer)
{
    pthread_t t;
    CHECK_EQ("create_fifo_phase", pthread_create(&t, NULL, body, NULL), 0);
    CHECK("fifo_phase_started", gate_wait(&g, stage));
    usleep(200000); /* in its open */
    CHECK_EQ("kill_fifo_phase", pthread_kill(t, sig), 0);
    int w = -1;
    if (writer) {
        usleep(200000); /* its handler ran, its open goes on */
        for (long long end = check_now_ms(CLOCK_MONOTONIC) + WAIT_MS; /* (no reader yet: ENXIO) */
             (w = open(fifo, O_WRONLY | O_NONBLOCK)) < 0 && check_now_ms(CLOCK_MONOTONIC) < end;)
            usleep(10000);
        CHECK_GE("fifo_phase_writer", w, 0);
        CHECK_EQ("fifo_phase_write", write(w, "f", 1), 1);
    }
    CHECK_EQ("join_fifo_phase", joined(t, NULL), 0);
    if (w >= 0)
        close(w);
}

int main(void)
{
    check_start();
    CHECK_EQ("pipe", pipe(fds), 0);
    struct sigaction sa = { .sa_handler = on_sig };
    sigemptyset(&sa.sa_mask);
    CHECK_EQ("sigaction_usr1", sigaction(SIGUSR1, &sa, NULL), 0);
    sa.sa_flags = SA_RESTART;
    CHECK_EQ("sigaction_usr2", sigaction(SIGUSR2, &sa, NULL), 0);
    pthread_t t;
    void *ret = NULL;

    CHECK_EQ("create_eintr", pthread_create(&t, NULL, no_restart, NULL), 0);
    CHECK("eintr_started", gate_wait(&g, 1));
    usleep(200000); /* in its read */
    CHECK_EQ("kill_usr1", pthread_kill(t, SIGUSR1), 0);
    CHECK("eintr_interrupted", gate_wait(&g, 2));
    CHECK_EQ("write_a", write(fds[1], "a", 1), 1);
    CHECK_EQ("join_eintr", joined(t, NULL), 0);

    CHECK_EQ("create_restart", pthread_create(&t, NULL, restart, NULL), 0);
    CHECK("restart_started", gate_wait(&g, 3));
    usleep(200000);
    CHECK_EQ("kill_usr2", pthread_kill(t, SIGUSR2), 0);
    usleep(200000); /* its handler ran, its read goes on */
    CHECK_EQ("write_b", write(fds[1], "b", 1), 1);
    CHECK_EQ("join_restart", joined(t, NULL), 0);

    CHECK_EQ("create_poll", pthread_create(&t, NULL, polling, NULL), 0);
    CHECK("poll_started", gate_wait(&g, 4));
    usleep(200000);
    CHECK_EQ("kill_poll", pthread_kill(t, SIGUSR2), 0);
    CHECK_EQ("join_poll", joined(t, NULL), 0);

    CHECK_EQ("create_cancel", pthread_create(&t, NULL, cancelled, NULL), 0);
    CHECK("cancel_started", gate_wait(&g, 5));
    usleep(200000);
    CHECK_EQ("cancel", pthread_cancel(t), 0);
    CHECK_EQ("join_cancelled", joined(t, &ret), 0);
    CHECK_PTR("cancel_result", ret, PTHREAD_CANCELED);
    CHECK_EQ("cancel_cleanup", cleaned, 1);

    CHECK_EQ("pipe_stream", pipe(sfds), 0);
    CHECK("fdopen", (stream = fdopen(sfds[0], "r")) != NULL);
    ret = NULL;
    CHECK_EQ("create_fgets", pthread_create(&t, NULL, cancelled_fgets, NULL), 0);
    CHECK("fgets_started", gate_wait(&g, 6));
    usleep(200000);
    CHECK_EQ("cancel_fgets", pthread_cancel(t), 0);
    CHECK_EQ("join_fgets", joined(t, &ret), 0);
    CHECK_PTR("fgets_result", ret, PTHREAD_CANCELED);
    CHECK_EQ("fgets_cleanup", stream_cleaned, 1);

    /* a pipe kept full: its stream's flush waits */
    int wfds[2];
    CHECK_EQ("pipe_full", pipe(wfds), 0);
    CHECK_EQ("nonblock", fcntl(wfds[1], F_SETFL, O_NONBLOCK), 0);
    char block[4096] = { 0 };
    while (write(wfds[1], block, sizeof block) > 0)
        ;
    while (write(wfds[1], block, 1) > 0)
        ;
    CHECK_ERR("full", errno, EAGAIN);
    CHECK_EQ("blocking", fcntl(wfds[1], F_SETFL, 0), 0);
    CHECK("fdopen_w", (wstream = fdopen(wfds[1], "w")) != NULL);
    CHECK_EQ("create_fflush", pthread_create(&t, NULL, interrupted_fflush, NULL), 0);
    CHECK("fflush_started", gate_wait(&g, 7));
    usleep(200000); /* in its flush */
    CHECK_EQ("kill_fflush", pthread_kill(t, SIGUSR1), 0);
    CHECK_EQ("join_fflush", joined(t, NULL), 0);
    ret = NULL;
    CHECK_EQ("create_cancel_fflush", pthread_create(&t, NULL, cancelled_fflush, NULL), 0);
    CHECK("cancel_fflush_started", gate_wait(&g, 8));
    usleep(200000);
    CHECK_EQ("cancel_fflush", pthread_cancel(t), 0);
    CHECK_EQ("join_cancel_fflush", joined(t, &ret), 0);
    CHECK_PTR("cancel_fflush_result", ret, PTHREAD_CANCELED);
    CHECK_EQ("cancel_fflush_cleanup", wstream_cleaned, 1);
    /* the stream's close does not wait: what it may still hold (a
     * cancelled write's bytes stay in a process's buffer, an interrupted
     * one's are dropped) fails with EPIPE */
    signal(SIGPIPE, SIG_IGN);
    CHECK_EQ("close_full", close(wfds[0]), 0);
    errno = 0;
    int rc = fclose(wstream);
    CHECK("fclose_w", rc == 0 || (rc == EOF && errno == EPIPE));

    snprintf(fifo, sizeof fifo, "/tmp/cables-interrupt-%d", (int)getpid());
    unlink(fifo);
    CHECK_EQ("mkfifo", mkfifo(fifo, 0600), 0);
    CHECK_EQ("create_fifo_eintr", pthread_create(&t, NULL, fifo_eintr, NULL), 0);
    CHECK("fifo_eintr_started", gate_wait(&g, 9));
    usleep(200000); /* in its open */
    CHECK_EQ("kill_fifo", pthread_kill(t, SIGUSR1), 0);
    CHECK_EQ("join_fifo_eintr", joined(t, NULL), 0);
    CHECK_EQ("create_fifo_restart", pthread_create(&t, NULL, fifo_restart, NULL), 0);
    CHECK("fifo_restart_started", gate_wait(&g, 10));
    usleep(200000);
    CHECK_EQ("kill_fifo_restart", pthread_kill(t, SIGUSR2), 0);
    usleep(200000); /* its handler ran, its open goes on */
    int w = -1; /* (no reader yet: ENXIO) */
    for (long long end = check_now_ms(CLOCK_MONOTONIC) + WAIT_MS;
         (w = open(fifo, O_WRONLY | O_NONBLOCK)) < 0 && check_now_ms(CLOCK_MONOTONIC) < end;)
        usleep(10000);
    CHECK_GE("fifo_writer", w, 0);
    CHECK_EQ("fifo_write", write(w, "f", 1), 1);
    CHECK_EQ("join_fifo_restart", joined(t, NULL), 0);
    close(w);
    unlink(fifo);

    CHECK_EQ("pipe_storm", pipe(storm_fds), 0);
    CHECK_EQ("create_storm", pthread_create(&t, NULL, storm_reader, NULL), 0);
    CHECK("storm_started", gate_wait(&g, 11));
    int sent = 0;
    for (unsigned seed = 1; sent < STORM; sent++) {
        unsigned char c = (unsigned char)sent;
        pthread_kill(t, SIGUSR2);
        usleep(50 + rand_r(&seed) % 200);
        if (write(storm_fds[1], &c, 1) != 1)
            break;
    }
    CHECK_EQ("storm_sent", sent, STORM);
    CHECK_EQ("join_storm", joined(t, NULL), 0);

    CHECK_EQ("create_pclose", pthread_create(&t, NULL, watched_pclose, NULL), 0);
    CHECK("pclose_started", gate_wait(&g, 12));
    usleep(200000); /* in its pclose */
    CHECK_EQ("kill_pclose", pthread_kill(t, SIGUSR1), 0);
    CHECK_EQ("join_pclose", joined(t, NULL), 0);

    CHECK_EQ("mkfifo_fopen", mkfifo(fifo, 0600), 0);
    fifo_phase(fopen_eintr, 13, SIGUSR1, 0);
    fifo_phase(fopen_restart, 14, SIGUSR2, 1);
    unlink(fifo);
    return check_finish();
}
